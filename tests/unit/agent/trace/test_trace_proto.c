/* The trace line protocol as the agent checks it (agent/trace/trace_proto.h):
 * good runs, and runs that must fail with the line number and text. */
#include "tc_error.h"
#include "trace_proto.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const tc_trace_request_t s_req = {
    .model = "resnet18", .batch = 8, .input_size = 64, .device = "cpu", .threads = 2,
    .dtype = "fp32", .amp = "", .optimizer = "sgd", .cudnn_benchmark = false,
    .warmup = 1, .iters = 2,
};

#define HEADER                                                                                    \
    "{\"type\":\"header\",\"protocol\":1,\"framework\":\"pytorch\",\"framework_version\":"      \
    "\"1.13.1\",\"library\":\"onednn\",\"library_version\":\"2.6.3\",\"device\":\"cpu\","        \
    "\"device_name\":\"AMD EPYC\",\"threads\":2,\"model\":\"resnet18\",\"batch\":8,"            \
    "\"input_size\":64,\"dtype\":\"fp32\",\"amp\":\"\",\"optimizer\":\"sgd\","                   \
    "\"cudnn_benchmark\":false,\"warmup\":1,\"iters\":2,\"extra\":{\"ignored\":[1,2]}}\n"
#define IT0 "{\"type\":\"iter\",\"index\":0,\"warmup\":true,\"ms\":120.5,\"at_us\":1700000000000000}\n"
#define IT1 "{\"type\":\"iter\",\"index\":1,\"warmup\":false,\"ms\":100.25,\"at_us\":1700000000100000}\n"
#define IT2 "{\"type\":\"iter\",\"index\":2,\"warmup\":false,\"ms\":99,\"at_us\":1700000000200000}\n"
#define FOOTER                                                                                    \
    "{\"type\":\"footer\",\"peak_memory_bytes\":123456789,\"op_times_ms\":{\"conv\":60.5,"     \
    "\"bn\":10,\"other\":3.25}}\n"
#define GOOD HEADER IT0 IT1 IT2 FOOTER

/* Feed `text` in pieces of `chunk` bytes, then finish. Returns the first
 * failure or 0. */
static int s_run(tc_trace_proto_t *p, const char *text, size_t len, size_t chunk)
{
    for (size_t off = 0; off < len; off += chunk) {
        size_t n = len - off < chunk ? len - off : chunk;
        int rc = tc_trace_proto_feed(p, text + off, n);
        if (rc < 0)
            return rc;
    }
    return tc_trace_proto_finish(p);
}

/* Expect `text` to fail, at line `line`, with `needle` in the message. */
static void s_fails(const char *text, unsigned line, const char *needle)
{
    tc_trace_proto_t *p = tc_trace_proto_new(&s_req);
    int rc = s_run(p, text, strlen(text), 7);
    cr_assert_eq(rc, TC_EPARSE, "accepted: %s", text);
    const char *err = tc_trace_proto_error(p);
    char want[32];
    snprintf(want, sizeof want, "line %u: ", line);
    cr_assert(strncmp(err, want, strlen(want)) == 0, "'%s' should start with '%s'", err, want);
    cr_assert(strstr(err, needle), "'%s' lacks '%s'", err, needle);
    cr_assert_str_eq(tc_errmsg(), err);
    /* Sticky: more input does not revive the run. */
    cr_assert_eq(tc_trace_proto_feed(p, IT0, strlen(IT0)), TC_EPARSE);
    cr_assert_eq(tc_trace_proto_finish(p), TC_EPARSE);
    tc_trace_proto_destroy(&p);
}

Test(trace_proto, accepts_a_good_run_in_any_chunking, .timeout = 10)
{
    size_t chunks[] = {1, 2, 13, 4096};
    for (size_t c = 0; c < sizeof chunks / sizeof chunks[0]; c++) {
        tc_trace_proto_t *p = tc_trace_proto_new(&s_req);
        cr_assert_eq(s_run(p, GOOD, strlen(GOOD), chunks[c]), 0, "%s", tc_trace_proto_error(p));
        const tc_trace_output_t *o = tc_trace_proto_output(p);
        cr_assert_str_eq(tc_trace_proto_error(p), "");
        cr_assert(o->have_header && o->have_footer && !o->oom && !o->error);
        cr_assert_str_eq(o->framework, "pytorch");
        cr_assert_str_eq(o->framework_version, "1.13.1");
        cr_assert_str_eq(o->library_version, "2.6.3");
        cr_assert_str_eq(o->device_name, "AMD EPYC");
        cr_assert_eq(o->threads, 2);
        cr_assert_eq(o->n_iters, 3);
        cr_assert(o->iters[0].warmup && !o->iters[1].warmup && !o->iters[2].warmup);
        cr_assert_float_eq(o->iters[1].ms, 100.25, 1e-12);
        cr_assert_eq(o->iters[2].at_us, 1700000000200000LL);
        cr_assert_eq(o->peak_memory_bytes, 123456789u);
        cr_assert(o->have_op_times);
        cr_assert(o->op_present[TC_OPC_CONV] && o->op_present[TC_OPC_BN] &&
                  o->op_present[TC_OPC_OTHER] && !o->op_present[TC_OPC_ACT]);
        cr_assert_float_eq(o->op_ms[TC_OPC_CONV], 60.5, 1e-12);
        cr_assert_eq(o->lines, 5);
        tc_trace_proto_destroy(&p);
    }
}

Test(trace_proto, settings_clocks_and_power_are_read, .timeout = 10)
{
    const char *text =
        "{\"type\":\"header\",\"protocol\":1,\"framework\":\"pytorch\",\"device\":\"cpu\","
        "\"model\":\"resnet18\",\"batch\":8,\"input_size\":64,\"warmup\":1,\"iters\":2,"
        "\"settings\":{\"torch.backends.cudnn.allow_tf32\":\"True\","
        "\"env.NVIDIA_TF32_OVERRIDE\":\"\",\"torch.backends.cudnn.benchmark_limit\":\"10\"}}\n"
        IT0 IT1 IT2
        "{\"type\":\"footer\",\"peak_memory_bytes\":1,\"sm_clock_mhz\":1755.4,"
        "\"power_w\":402.5}\n";
    tc_trace_proto_t *p = tc_trace_proto_new(&s_req);
    cr_assert_eq(s_run(p, text, strlen(text), 5), 0, "%s", tc_trace_proto_error(p));
    const tc_trace_output_t *o = tc_trace_proto_output(p);
    cr_assert_eq(o->n_settings, 3);
    /* Sorted by name. */
    cr_expect_str_eq(o->settings[0].name, "env.NVIDIA_TF32_OVERRIDE");
    cr_expect_str_eq(o->settings[0].value, "");
    cr_expect_str_eq(o->settings[1].name, "torch.backends.cudnn.allow_tf32");
    cr_expect_str_eq(o->settings[1].value, "True");
    cr_expect_str_eq(o->settings[2].value, "10");
    cr_expect_eq(o->sm_clock_mhz, 1755);
    cr_expect_float_eq(o->power_w, 402.5, 1e-9);
    tc_trace_proto_destroy(&p);

    /* Settings are strings, each once; clocks and power are numbers. */
    s_fails("{\"type\":\"header\",\"protocol\":1,\"framework\":\"pytorch\",\"device\":\"cpu\","
            "\"model\":\"resnet18\",\"batch\":8,\"input_size\":64,\"warmup\":1,\"iters\":2,"
            "\"settings\":{\"torch.backends.cudnn.allow_tf32\":true}}\n",
            1, "must be a string");
    s_fails("{\"type\":\"header\",\"protocol\":1,\"framework\":\"pytorch\",\"device\":\"cpu\","
            "\"model\":\"resnet18\",\"batch\":8,\"input_size\":64,\"warmup\":1,\"iters\":2,"
            "\"settings\":[\"a\"]}\n",
            1, "settings");
    s_fails(HEADER IT0 IT1 IT2 "{\"type\":\"footer\",\"peak_memory_bytes\":1,\"power_w\":-1}\n", 5,
            "power_w");
    s_fails(HEADER IT0 IT1 IT2 "{\"type\":\"footer\",\"peak_memory_bytes\":1,"
            "\"sm_clock_mhz\":\"fast\"}\n", 5, "sm_clock_mhz");
}

Test(trace_proto, energy_per_step_or_why_not, .timeout = 10)
{
    const char *text = HEADER IT0 IT1 IT2
        "{\"type\":\"footer\",\"peak_memory_bytes\":1,\"energy_j\":31.25,"
        "\"energy_source\":\"rapl\"}\n";
    tc_trace_proto_t *p = tc_trace_proto_new(&s_req);
    cr_assert_eq(s_run(p, text, strlen(text), 5), 0, "%s", tc_trace_proto_error(p));
    const tc_trace_output_t *o = tc_trace_proto_output(p);
    cr_expect_float_eq(o->energy_j, 31.25, 1e-12);
    cr_expect_str_eq(o->energy_source, "rapl");
    cr_expect_str_eq(o->energy_absent, "");
    tc_trace_proto_destroy(&p);

    text = HEADER IT0 IT1 IT2 "{\"type\":\"footer\",\"peak_memory_bytes\":1,"
                              "\"energy_absent\":\"no RAPL package domain\"}\n";
    p = tc_trace_proto_new(&s_req);
    cr_assert_eq(s_run(p, text, strlen(text), 5), 0, "%s", tc_trace_proto_error(p));
    o = tc_trace_proto_output(p);
    cr_expect_lt(o->energy_j, 0, "no energy is not 0 J");
    cr_expect_str_eq(o->energy_source, "");
    cr_expect_str_eq(o->energy_absent, "no RAPL package domain");
    tc_trace_proto_destroy(&p);

    /* A number needs its counter; the counter is one of two. */
    s_fails(HEADER IT0 IT1 IT2 "{\"type\":\"footer\",\"peak_memory_bytes\":1,\"energy_j\":3}\n",
            5, "energy_source");
    s_fails(HEADER IT0 IT1 IT2 "{\"type\":\"footer\",\"peak_memory_bytes\":1,\"energy_j\":3,"
                               "\"energy_source\":\"guess\"}\n",
            5, "energy_source");
    s_fails(HEADER IT0 IT1 IT2 "{\"type\":\"footer\",\"peak_memory_bytes\":1,\"energy_j\":-3,"
                               "\"energy_source\":\"nvml\"}\n",
            5, "energy_j");
}

Test(trace_proto, blank_lines_and_crlf_are_fine, .timeout = 10)
{
    const char *text = "\n" HEADER "\r\n  \n" IT0 IT1 IT2 FOOTER "\n";
    tc_trace_proto_t *p = tc_trace_proto_new(&s_req);
    cr_assert_eq(s_run(p, text, strlen(text), 5), 0, "%s", tc_trace_proto_error(p));
    tc_trace_proto_destroy(&p);
}

Test(trace_proto, oom_and_error_lines_end_a_run, .timeout = 10)
{
    const char *oom = HEADER IT0 "{\"type\":\"oom\",\"message\":\"CUDA out of memory\"}\n";
    tc_trace_proto_t *p = tc_trace_proto_new(&s_req);
    cr_assert_eq(s_run(p, oom, strlen(oom), 64), 0, "%s", tc_trace_proto_error(p));
    cr_assert(tc_trace_proto_output(p)->oom);
    cr_assert_str_eq(tc_trace_proto_output(p)->message, "CUDA out of memory");
    tc_trace_proto_destroy(&p);

    /* An error may come before any header (e.g. an unknown model). */
    const char *err = "{\"type\":\"error\",\"message\":\"unknown model x\"}\n";
    p = tc_trace_proto_new(&s_req);
    cr_assert_eq(s_run(p, err, strlen(err), 64), 0, "%s", tc_trace_proto_error(p));
    cr_assert(tc_trace_proto_output(p)->error && !tc_trace_proto_output(p)->have_header);
    cr_assert_str_eq(tc_trace_proto_output(p)->message, "unknown model x");
    tc_trace_proto_destroy(&p);

    s_fails(HEADER "{\"type\":\"oom\",\"message\":\"x\"}\n" IT0, 3, "output after the oom line");
    s_fails(HEADER "{\"type\":\"error\"}\n", 2, "\"message\" is missing");
}

Test(trace_proto, malformed_lines_fail_with_number_and_text, .timeout = 10)
{
    s_fails(HEADER IT0 "epoch 1 loss 6.9\n" IT1 IT2 FOOTER, 3, "not a valid JSON line");
    s_fails(HEADER IT0 "epoch 1 loss 6.9\n" IT1 IT2 FOOTER, 3, ": epoch 1 loss 6.9");
    s_fails(HEADER "{\"type\":\"iter\",\"index\":0,\"warmup\":true,\"ms\":1,\n", 2,
            "not a valid JSON line");
    s_fails(HEADER "[1,2]\n", 2, "must be a JSON object");
    s_fails(HEADER "{\"index\":0}\n", 2, "\"type\" is missing");
    s_fails(HEADER "{\"type\":7}\n", 2, "\"type\" must be a string");
    s_fails(HEADER "{\"type\":\"progress\"}\n", 2, "unknown line type \"progress\"");
    s_fails(HEADER "{\"type\":\"iter\",\"index\":0,\"warmup\":true,\"ms\":\"12\","
                   "\"at_us\":1}\n", 2, "\"ms\" must be a number, not a string");
    s_fails(HEADER "{\"type\":\"iter\",\"index\":0.5,\"warmup\":true,\"ms\":1,\"at_us\":1}\n", 2,
            "\"index\" must be an integer");
    s_fails(HEADER "{\"type\":\"iter\",\"index\":0,\"warmup\":1,\"ms\":1,\"at_us\":1}\n", 2,
            "\"warmup\" must be a bool");
    s_fails(HEADER "{\"type\":\"iter\",\"index\":0,\"warmup\":true,\"ms\":1}\n", 2,
            "\"at_us\" is missing");
    s_fails(HEADER "{\"type\":\"iter\",\"type\":\"iter\"}\n", 2, "duplicate object key");
    s_fails(HEADER "{\"type\":\"iter\",\"index\":0,\"warmup\":true,\"ms\":0,\"at_us\":1}\n", 2,
            "finite time > 0");
    s_fails(HEADER "{\"type\":\"iter\",\"index\":0,\"warmup\":true,\"ms\":-3,\"at_us\":1}\n", 2,
            "finite time > 0");
    s_fails(HEADER "{\"type\":\"iter\",\"index\":0,\"warmup\":true,\"ms\":3,\"at_us\":1,"
                   "\"canary_ms\":0}\n", 2, "\"canary_ms\" must be a finite time > 0");
    s_fails(HEADER "{\"type\":\"iter\",\"index\":0,\"warmup\":true,\"ms\":3,\"at_us\":1,"
                   "\"canary_ms\":\"fast\"}\n", 2, "\"canary_ms\" must be a number");
}

Test(trace_proto, the_canary_of_an_iteration_is_read, .timeout = 10)
{
    static const char run[] =
        HEADER "{\"type\":\"iter\",\"index\":0,\"warmup\":true,\"ms\":120.5,\"at_us\":1,"
               "\"canary_ms\":0.5}\n" IT1 IT2 FOOTER;
    tc_trace_proto_t *p = tc_trace_proto_new(&s_req);
    cr_assert_eq(s_run(p, run, strlen(run), 11), 0, "%s", tc_trace_proto_error(p));
    const tc_trace_output_t *o = tc_trace_proto_output(p);
    cr_expect_float_eq(o->iters[0].canary_ms, 0.5, 1e-12);
    cr_expect_float_eq(o->iters[1].canary_ms, 0, 1e-12, "a line without one: 0");
    tc_trace_proto_destroy(&p);
}

Test(trace_proto, nan_and_infinity_fail, .timeout = 10)
{
    s_fails(HEADER "{\"type\":\"iter\",\"index\":0,\"warmup\":true,\"ms\":NaN,\"at_us\":1}\n", 2,
            "NaN");
    s_fails(HEADER "{\"type\":\"iter\",\"index\":0,\"warmup\":true,\"ms\":Infinity,"
                   "\"at_us\":1}\n", 2, "Infinity");
    s_fails(HEADER "{\"type\":\"iter\",\"index\":0,\"warmup\":true,\"ms\":1e999,\"at_us\":1}\n",
            2, "out of range");
    s_fails(HEADER IT0 IT1 IT2 "{\"type\":\"footer\",\"peak_memory_bytes\":1,"
                                "\"op_times_ms\":{\"conv\":NaN}}\n", 5, "NaN");
}

Test(trace_proto, truncated_output_fails, .timeout = 10)
{
    s_fails(HEADER IT0 "{\"type\":\"iter\",\"index\":1", 3, "truncated");
    s_fails(HEADER IT0 IT1 IT2 "{\"type\":\"footer\",\"peak_memory_bytes\":1}", 5, "truncated");
    s_fails(HEADER IT0 IT1, 3, "after 2 of 3 iterations without a footer");
    s_fails(HEADER, 1, "after 0 of 3 iterations without a footer");
    s_fails("", 0, "without a header");
    s_fails("\n\n", 2, "without a header");
}

Test(trace_proto, order_and_monotonic_time_are_enforced, .timeout = 10)
{
    /* Timestamps going back, or standing still. */
    s_fails(HEADER IT0 "{\"type\":\"iter\",\"index\":1,\"warmup\":false,\"ms\":5,"
                       "\"at_us\":1699999999999999}\n", 3, "timestamps must increase");
    s_fails(HEADER IT0 "{\"type\":\"iter\",\"index\":1,\"warmup\":false,\"ms\":5,"
                       "\"at_us\":1700000000000000}\n", 3, "timestamps must increase");
    /* Indices skipping or repeating. */
    s_fails(HEADER IT0 IT2, 3, "index 2 out of order (expected 1)");
    s_fails(HEADER IT0 IT0, 3, "index 0 out of order (expected 1)");
    /* A warm-up flag in the wrong place. */
    s_fails(HEADER "{\"type\":\"iter\",\"index\":0,\"warmup\":false,\"ms\":5,\"at_us\":1}\n", 2,
            "must have \"warmup\": true");
    /* Lines before the header, a second header, more iterations than announced, a footer
     * too early, anything after the footer. */
    s_fails(IT0 HEADER, 1, "before the header");
    s_fails(FOOTER, 1, "before the header");
    s_fails(HEADER HEADER, 2, "a second header");
    s_fails(HEADER IT0 IT1 IT2 "{\"type\":\"iter\",\"index\":3,\"warmup\":false,\"ms\":5,"
                               "\"at_us\":1700000000300000}\n", 5, "more iterations than the 3");
    s_fails(HEADER IT0 IT1 FOOTER, 4, "footer after 2 iterations; 3 were announced");
    s_fails(GOOD IT0, 6, "output after the footer");
}

Test(trace_proto, header_must_match_the_request, .timeout = 10)
{
    const struct {
        const char *from, *to, *needle;
    } cases[] = {
        {"\"batch\":8", "\"batch\":16", "\"batch\" is 16 but the runner was asked for 8"},
        {"\"model\":\"resnet18\"", "\"model\":\"resnet50\"", "\"model\" is \"resnet50\""},
        {"\"input_size\":64", "\"input_size\":224", "\"input_size\" is 224"},
        {"\"device\":\"cpu\"", "\"device\":\"cuda:0\"", "\"device\" is \"cuda:0\""},
        {"\"threads\":2", "\"threads\":1", "\"threads\" is 1"},
        {"\"warmup\":1,", "\"warmup\":3,", "\"warmup\" is 3"},
        {"\"iters\":2", "\"iters\":20", "\"iters\" is 20"},
        {"\"dtype\":\"fp32\"", "\"dtype\":\"fp16\"", "\"dtype\" is \"fp16\""},
        {"\"optimizer\":\"sgd\"", "\"optimizer\":\"adam\"", "\"optimizer\" is \"adam\""},
        {"\"cudnn_benchmark\":false", "\"cudnn_benchmark\":true", "\"cudnn_benchmark\" is true"},
        {"\"protocol\":1", "\"protocol\":2", "protocol version 2 is not supported"},
        {"\"framework\":\"pytorch\"", "\"framework\":\"\"", "\"framework\" must not be empty"},
        {"\"batch\":8,", "", "\"batch\" is missing"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char text[4096];
        const char *h = HEADER;
        const char *at = strstr(h, cases[i].from);
        cr_assert_not_null(at, "%s", cases[i].from);
        snprintf(text, sizeof text, "%.*s%s%s" IT0, (int)(at - h), h, cases[i].to,
                 at + strlen(cases[i].from));
        s_fails(text, 1, cases[i].needle);
    }
}

Test(trace_proto, footer_fields_are_checked, .timeout = 10)
{
    s_fails(HEADER IT0 IT1 IT2 "{\"type\":\"footer\"}\n", 5, "\"peak_memory_bytes\" is missing");
    s_fails(HEADER IT0 IT1 IT2 "{\"type\":\"footer\",\"peak_memory_bytes\":-1}\n", 5,
            "between 0 and");
    s_fails(HEADER IT0 IT1 IT2 "{\"type\":\"footer\",\"peak_memory_bytes\":1,"
                               "\"op_times_ms\":{\"attention\":1}}\n", 5,
            "unknown op class \"attention\"");
    s_fails(HEADER IT0 IT1 IT2 "{\"type\":\"footer\",\"peak_memory_bytes\":1,"
                               "\"op_times_ms\":{\"conv\":-1}}\n", 5, "must be a number >= 0");
    s_fails(HEADER IT0 IT1 IT2 "{\"type\":\"footer\",\"peak_memory_bytes\":1,"
                               "\"op_times_ms\":[1]}\n", 5, "must be an object, not an array");
}

Test(trace_proto, huge_lines_fail_without_growing, .timeout = 10)
{
    size_t n = TC_TRACE_MAX_LINE + 10;
    char *big = malloc(n + 2);
    memset(big, 'x', n);
    big[n] = '\n';
    big[n + 1] = '\0';
    tc_trace_proto_t *p = tc_trace_proto_new(&s_req);
    cr_assert_eq(tc_trace_proto_feed(p, HEADER, strlen(HEADER)), 0);
    cr_assert_eq(s_run(p, big, n + 1, 4096), TC_EPARSE);
    const char *err = tc_trace_proto_error(p);
    cr_assert(strstr(err, "line 2: longer than 65536 bytes: xxxx"), "%s", err);
    cr_assert_lt(strlen(err), 400, "the message shows an excerpt, not the line");
    tc_trace_proto_destroy(&p);

    /* A line of exactly the limit is fine as far as length goes. */
    p = tc_trace_proto_new(&s_req);
    char *edge = malloc(TC_TRACE_MAX_LINE + 2);
    memset(edge, ' ', TC_TRACE_MAX_LINE);
    const char *msg = "{\"type\":\"error\",\"message\":\"long\"}";
    memcpy(edge, msg, strlen(msg));
    edge[TC_TRACE_MAX_LINE] = '\n';
    cr_assert_eq(s_run(p, edge, TC_TRACE_MAX_LINE + 1, 65536), 0, "%s", tc_trace_proto_error(p));
    tc_trace_proto_destroy(&p);
    free(edge);
    free(big);
}

Test(trace_proto, binary_garbage_is_shown_escaped, .timeout = 10)
{
    s_fails(HEADER "\x01\x02\xff{\n", 2, "\\x01\\x02\\xff{");
}

/* Random mutations of a good run, fed in random chunks: the parser ends
 * in a clean accept or a clean failure, with a message, every time. */
Test(trace_proto, random_mutations_fail_cleanly, .timeout = 60)
{
    const char *good = GOOD;
    size_t n0 = strlen(good);
    char *buf = malloc(n0);
    unsigned state = 777;
    for (int round = 0; round < 3000; round++) {
        size_t n = n0;
        memcpy(buf, good, n);
        for (int e = 0; e < 1 + round % 3 && n > 0; e++) {
            state = state * 1103515245u + 12345u;
            size_t at = (state >> 8) % n;
            state = state * 1103515245u + 12345u;
            if ((state >> 16) % 2)
                buf[at] = (char)(state >> 3);
            else
                n = at;
        }
        tc_trace_proto_t *p = tc_trace_proto_new(&s_req);
        state = state * 1103515245u + 12345u;
        int rc = s_run(p, buf, n, 1 + (state >> 8) % 200);
        cr_assert(rc == 0 || rc == TC_EPARSE, "round %d: rc %d", round, rc);
        cr_assert_eq(rc == 0, tc_trace_proto_error(p)[0] == '\0', "round %d", round);
        tc_trace_proto_destroy(&p);
    }
    free(buf);
}
