/* Wire helpers: message ids, packing limits, round trips, golden bytes. */
#include "tc_error.h"
#include "tc_resultfile.h"
#include "tc_test.h"
#include "tc_test_msg.h"
#include "tc_validate.h"
#include "tc_wire.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

Test(wire, msgids_are_valid_unique_and_ordered, .timeout = 10)
{
    char prev[TC_MSGID_LEN + 1] = "";
    for (int i = 0; i < 20000; i++) {
        char id[TC_MSGID_LEN + 1];
        tc_msgid_new(id);
        cr_assert(tc_msgid_valid(id), "%s", id);
        cr_assert(strcmp(prev, id) < 0, "%s !< %s", prev, id);
        memcpy(prev, id, sizeof id);
    }
    cr_assert_not(tc_msgid_valid("01J0000000000000000000000"));   /* 25 chars */
    cr_assert_not(tc_msgid_valid("01J000000000000000000000IL")); /* I, L not Crockford */
    cr_assert_not(tc_msgid_valid("81J0000000000000000000000A")); /* > 48-bit time */
    cr_assert_not(tc_msgid_valid(NULL));
}

Test(wire, msgid_time_prefix_tracks_clock, .timeout = 10)
{
    char a[TC_MSGID_LEN + 1], b[TC_MSGID_LEN + 1];
    tc_msgid_new(a);
    usleep(5000);
    tc_msgid_new(b);
    cr_assert(strncmp(a, b, 10) < 0, "time part must grow: %s %s", a, b);
}

Test(wire, unpack_refuses_oversize_and_garbage, .timeout = 10)
{
    uint8_t junk[64];
    memset(junk, 0xff, sizeof junk);
    tc_envelope_t *env = NULL;
    cr_assert_eq(tc_envelope_unpack(junk, sizeof junk, 16, &env), TC_ELIMIT);
    cr_assert_null(env);
    cr_assert_eq(tc_envelope_unpack(junk, sizeof junk, 0, &env), TC_EPARSE);
    cr_assert_null(env);
}

static tc_envelope_t *s_fixed_envelope(void)
{
    tc_envelope_t *env = tc_test_envelope("agent-golden");
    env->message_id = "01HZZZZZZZ0000000000000001";
    env->sent_at_us = 1700000000123456LL;
    return env;
}

static tc_envelope_t *s_golden(const char *kind)
{
    tc_envelope_t *env = s_fixed_envelope();
    if (!strcmp(kind, "hello")) {
        env->body_case = TRAINCAST__V1__ENVELOPE__BODY_HELLO;
        env->hello = tc_test_hello("box", "uuid-1");
    } else if (!strcmp(kind, "conv_results")) {
        env->body_case = TRAINCAST__V1__ENVELOPE__BODY_CONV_RESULTS;
        env->conv_results = tc_test_conv_results("uuid-1", 2);
    } else if (!strcmp(kind, "model_graph")) {
        env->body_case = TRAINCAST__V1__ENVELOPE__BODY_MODEL_GRAPH;
        env->model_graph = tc_test_model_graph("torchvision:tinynet@32");
    } else if (!strcmp(kind, "train_trace")) {
        env->body_case = TRAINCAST__V1__ENVELOPE__BODY_TRAIN_TRACE;
        env->train_trace = tc_test_trace("uuid-1", "torchvision:tinynet@32", 8, 12.5);
    } else if (!strcmp(kind, "heartbeat")) {
        static Traincast__V1__Heartbeat hb = TRAINCAST__V1__HEARTBEAT__INIT;
        hb.spool_backlog = 42;
        hb.uptime_s = 3600;
        env->body_case = TRAINCAST__V1__ENVELOPE__BODY_HEARTBEAT;
        env->heartbeat = &hb;
    } else if (!strcmp(kind, "ack")) {
        static Traincast__V1__Ack ack = TRAINCAST__V1__ACK__INIT;
        ack.message_id = "01HZZZZZZZ0000000000000002";
        ack.duplicate = 1;
        env->body_case = TRAINCAST__V1__ENVELOPE__BODY_ACK;
        env->ack = &ack;
    } else if (!strcmp(kind, "nack")) {
        static Traincast__V1__Nack nack = TRAINCAST__V1__NACK__INIT;
        nack.message_id = "01HZZZZZZZ0000000000000003";
        nack.reason = "conv_results.results[0].median_ms: must be > 0";
        nack.permanent = 1;
        env->body_case = TRAINCAST__V1__ENVELOPE__BODY_NACK;
        env->nack = &nack;
    } else if (!strcmp(kind, "bench_request")) {
        static Traincast__V1__BenchRequest br = TRAINCAST__V1__BENCH_REQUEST__INIT;
        static Traincast__V1__ConvConfig cfg = TRAINCAST__V1__CONV_CONFIG__INIT;
        static Traincast__V1__ConvConfig *cfgs[] = {&cfg};
        static Traincast__V1__Direction dirs[] = {TRAINCAST__V1__DIRECTION__DIRECTION_FWD};
        cfg.n = 32, cfg.c = 64, cfg.h = cfg.w = 56, cfg.k = 64, cfg.r = cfg.s = 3;
        cfg.pad_h = cfg.pad_w = cfg.stride_h = cfg.stride_w = 1;
        cfg.dilation_h = cfg.dilation_w = cfg.groups = 1;
        br.job_id = "job-1";
        br.device_uuid = "uuid-1";
        br.n_configs = 1;
        br.configs = cfgs;
        br.n_directions = 1;
        br.directions = dirs;
        br.policy = TRAINCAST__V1__POLICY__POLICY_EXHAUSTIVE;
        env->body_case = TRAINCAST__V1__ENVELOPE__BODY_BENCH_REQUEST;
        env->bench_request = &br;
    } else if (!strcmp(kind, "trace_request")) {
        static Traincast__V1__TraceRequest tr = TRAINCAST__V1__TRACE_REQUEST__INIT;
        static char *models[] = {"resnet18", "mobilenet_v2"};
        static uint32_t batches[] = {8, 32};
        tr.job_id = "job-2";
        tr.device_uuid = "uuid-1";
        tr.n_models = 2;
        tr.models = models;
        tr.n_batches = 2;
        tr.batches = batches;
        tr.input_size = 64;
        tr.warmup = 3;
        tr.iters = 10;
        tr.repeats = 5;
        env->body_case = TRAINCAST__V1__ENVELOPE__BODY_TRACE_REQUEST;
        env->trace_request = &tr;
    } else if (!strcmp(kind, "job_progress")) {
        static Traincast__V1__JobProgress jp = TRAINCAST__V1__JOB_PROGRESS__INIT;
        jp.job_id = "job-1";
        jp.state = TRAINCAST__V1__JOB_STATE__JOB_STATE_RUNNING;
        jp.done = 3;
        jp.total = 10;
        jp.message = "benchmarking";
        env->body_case = TRAINCAST__V1__ENVELOPE__BODY_JOB_PROGRESS;
        env->job_progress = &jp;
    }
    return env;
}

static const char *s_kinds[] = {"hello",     "conv_results", "model_graph",   "train_trace",
                                "heartbeat", "ack",          "nack",          "bench_request",
                                "trace_request", "job_progress"};

/* Packing, unpacking and packing again gives the same bytes, and those bytes
 * equal the committed golden file: the wire format of every message is
 * pinned. TRAINCAST_UPDATE_GOLDEN=1 rewrites the files after a deliberate
 * schema change. */
Test(wire, golden_bytes_and_round_trip, .timeout = 20)
{
    for (size_t k = 0; k < sizeof s_kinds / sizeof s_kinds[0]; k++) {
        tc_envelope_t *env = s_golden(s_kinds[k]);
        cr_assert_str_eq(tc_body_name(env), s_kinds[k]);
        uint8_t *buf = NULL;
        size_t len = 0;
        cr_assert_eq(tc_envelope_pack(env, &buf, &len), 0, "%s", tc_errmsg());
        tc_envelope_t *back = NULL;
        cr_assert_eq(tc_envelope_unpack(buf, len, 0, &back), 0, "%s", tc_errmsg());
        cr_assert_str_eq(back->message_id, env->message_id);
        cr_assert_eq(back->body_case, env->body_case);
        uint8_t *buf2 = NULL;
        size_t len2 = 0;
        cr_assert_eq(tc_envelope_pack(back, &buf2, &len2), 0);
        cr_assert_eq(len2, len);
        cr_assert_eq(memcmp(buf, buf2, len), 0, "%s: repacked bytes differ", s_kinds[k]);

        char path[1024], rel[128];
        snprintf(rel, sizeof rel, "tests/data/golden/%s.bin", s_kinds[k]);
        tc_test_source_path(rel, path, sizeof path);
        const char *update = getenv("TRAINCAST_UPDATE_GOLDEN");
        if (update && !strcmp(update, "1")) {
            FILE *f = fopen(path, "wb");
            cr_assert_not_null(f, "cannot write %s", path);
            fwrite(buf, 1, len, f);
            fclose(f);
        }
        FILE *f = fopen(path, "rb");
        cr_assert_not_null(f, "missing golden file %s", path);
        uint8_t *gold = malloc(len + 1);
        size_t glen = fread(gold, 1, len + 1, f);
        fclose(f);
        cr_assert_eq(glen, len, "%s: golden file has %zu bytes, encoder gives %zu", s_kinds[k],
                     glen, len);
        cr_assert_eq(memcmp(gold, buf, len), 0, "%s: bytes differ from the golden file",
                     s_kinds[k]);
        free(gold);
        free(buf);
        free(buf2);
        tc_envelope_free(&back);
    }
}

Test(wire, golden_field_values_decode, .timeout = 10)
{
    char path[1024];
    tc_test_source_path("tests/data/golden/train_trace.bin", path, sizeof path);
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f);
    uint8_t buf[65536];
    size_t len = fread(buf, 1, sizeof buf, f);
    fclose(f);
    tc_envelope_t *env = NULL;
    cr_assert_eq(tc_envelope_unpack(buf, len, 0, &env), 0);
    cr_assert_eq(env->protocol_version, 1);
    cr_assert_eq(env->sent_at_us, 1700000000123456LL);
    cr_assert_eq(env->train_trace->batch, 8);
    cr_assert_float_eq(env->train_trace->median_ms, 12.5, 1e-12);
    cr_assert_eq(env->train_trace->graph->n_layers, 6);
    cr_assert_eq(tc_validate_envelope(env), 0, "%s", tc_errmsg());
    tc_envelope_free(&env);
}

Test(wire, enum_names_parse_back, .timeout = 10)
{
    Traincast__V1__Direction d;
    cr_assert_eq(tc_direction_parse("bwd_filter", &d), 0);
    cr_assert_str_eq(tc_direction_name(d), "bwd_filter");
    Traincast__V1__Policy p;
    cr_assert_eq(tc_policy_parse("exhaustive", &p), 0);
    cr_assert_str_eq(tc_policy_name(p), "exhaustive");
    Traincast__V1__DType t;
    cr_assert_eq(tc_dtype_parse("bf16", &t), 0);
    cr_assert_str_eq(tc_dtype_name(t), "bf16");
    Traincast__V1__Layout l;
    cr_assert_eq(tc_layout_parse("nhwc", &l), 0);
    cr_assert_eq(tc_layout_parse("nchw8c", &l), TC_EINVAL);
    cr_assert(strstr(tc_errmsg(), "nchw, nhwc"), "%s", tc_errmsg());
}

static int s_count_cb(const tc_envelope_t *env, void *arg)
{
    (*(int *)arg)++;
    return env->body_case == TRAINCAST__V1__ENVELOPE__BODY_CONV_RESULTS ? 0 : TC_EINVAL;
}

Test(resultfile, append_read_and_truncated_tail, .timeout = 20)
{
    char path[64];
    tc_test_temp_file("resultfile", "", 0, path, sizeof path);
    tc_resultfile_t *rf = NULL;
    cr_assert_eq(tc_resultfile_open_append(path, &rf), 0, "%s", tc_errmsg());
    for (int i = 0; i < 3; i++) {
        tc_envelope_t *env = tc_test_envelope("a");
        env->body_case = TRAINCAST__V1__ENVELOPE__BODY_CONV_RESULTS;
        env->conv_results = tc_test_conv_results("u", 2);
        cr_assert_eq(tc_resultfile_append(rf, env), 0, "%s", tc_errmsg());
    }
    tc_resultfile_close(&rf);
    cr_assert_null(rf);
    int n = 0;
    bool trunc = true;
    cr_assert_eq(tc_resultfile_read(path, false, s_count_cb, &n, &trunc), 0, "%s", tc_errmsg());
    cr_assert_eq(n, 3);
    cr_assert_not(trunc);

    /* Simulate a crash in the middle of a record. */
    FILE *f = fopen(path, "ab");
    const uint8_t partial[] = {200, 0, 0, 0, 1, 2, 3};
    fwrite(partial, 1, sizeof partial, f);
    fclose(f);
    n = 0;
    cr_assert_eq(tc_resultfile_read(path, false, s_count_cb, &n, &trunc), 0);
    cr_assert_eq(n, 3);
    cr_assert(trunc);
    /* The next writer cuts the tail off and appends cleanly. */
    cr_assert_eq(tc_resultfile_open_append(path, &rf), 0);
    tc_envelope_t *env = tc_test_envelope("a");
    env->body_case = TRAINCAST__V1__ENVELOPE__BODY_CONV_RESULTS;
    env->conv_results = tc_test_conv_results("u", 1);
    cr_assert_eq(tc_resultfile_append(rf, env), 0);
    tc_resultfile_close(&rf);
    n = 0;
    cr_assert_eq(tc_resultfile_read(path, false, s_count_cb, &n, &trunc), 0);
    cr_assert_eq(n, 4);
    cr_assert_not(trunc);
    unlink(path);
}

Test(resultfile, missing_and_corrupt_files, .timeout = 10)
{
    int n = 0;
    cr_assert_eq(tc_resultfile_read("/nonexistent/tc.results", false, s_count_cb, &n, NULL),
                 TC_ENOTFOUND);
    cr_assert_eq(tc_resultfile_read("/nonexistent/tc.results", true, s_count_cb, &n, NULL), 0);
    const uint8_t huge[] = {0xff, 0xff, 0xff, 0x7f, 0};
    char path[64];
    tc_test_temp_file("resultfile", huge, sizeof huge, path, sizeof path);
    cr_assert_eq(tc_resultfile_read(path, false, s_count_cb, &n, NULL), TC_EPARSE);
    cr_assert(strstr(tc_errmsg(), "limit"), "%s", tc_errmsg());
    unlink(path);
}

/* Matmul results are a field of their own: a ConvResults of an older agent
 * (the golden file predates them) reads as convs alone, and matmul keys
 * survive packing and unpacking. */
Test(wire, matmul_results_round_trip_and_older_files, .timeout = 10)
{
    char path[1024];
    tc_test_source_path("tests/data/golden/conv_results.bin", path, sizeof path);
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f);
    uint8_t old[65536];
    size_t old_len = fread(old, 1, sizeof old, f);
    fclose(f);
    tc_envelope_t *env = NULL;
    cr_assert_eq(tc_envelope_unpack(old, old_len, 0, &env), 0);
    cr_assert_eq(env->conv_results->n_results, 2);
    cr_assert_eq(env->conv_results->n_matmul_results, 0);
    cr_assert_null(env->conv_results->results[0]->matmul);
    cr_assert_eq(tc_validate_envelope(env), 0, "%s", tc_errmsg());
    tc_envelope_free(&env);

    tc_envelope_t *mm = s_fixed_envelope();
    mm->body_case = TRAINCAST__V1__ENVELOPE__BODY_CONV_RESULTS;
    mm->conv_results = tc_test_conv_results("uuid-1", 2);
    tc_test_add_matmul_results(mm->conv_results, 2);
    mm->conv_results->matmul_results[1]->matmul->trans_a = 1;
    mm->conv_results->matmul_results[1]->matmul->minibatch_in = 2;
    uint8_t *buf = NULL;
    size_t len = 0;
    cr_assert_eq(tc_envelope_pack(mm, &buf, &len), 0, "%s", tc_errmsg());
    cr_assert_eq(tc_envelope_unpack(buf, len, 0, &env), 0, "%s", tc_errmsg());
    cr_assert_eq(tc_validate_envelope(env), 0, "%s", tc_errmsg());
    const Traincast__V1__ConvResults *r = env->conv_results;
    cr_assert_eq(r->n_results, 2);
    cr_assert_eq(r->n_matmul_results, 2);
    const Traincast__V1__MatmulConfig *c = r->matmul_results[1]->matmul;
    cr_assert_not_null(c);
    cr_assert_null(r->matmul_results[1]->config);
    cr_assert_eq(c->minibatch, 8);
    cr_assert_eq(c->batch, 1);
    cr_assert_eq(c->m, 50);
    cr_assert_eq(c->n, 3073);
    cr_assert_eq(c->k, 768);
    cr_assert_eq(c->minibatch_in, 2);
    cr_assert(c->trans_a && c->trans_b && c->weight && c->bias);
    cr_assert_eq(c->dtype, TRAINCAST__V1__DTYPE__DTYPE_FP32);
    cr_assert_eq(r->matmul_results[1]->direction, TRAINCAST__V1__DIRECTION__DIRECTION_BWD_DATA);
    cr_assert_str_eq(r->matmul_results[1]->route, "blas");
    cr_assert_float_eq(r->matmul_results[1]->median_ms, 3.5, 1e-12);
    free(buf);
    tc_envelope_free(&env);
}
