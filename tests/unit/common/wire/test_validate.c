/* Validation of every wire field against its documented range
 * (docs/transport.md, "Field ranges"), before anything reaches SQL. */
#include "tc_error.h"
#include "tc_test_msg.h"
#include "tc_validate.h"

#include <criterion/criterion.h>
#include <stdint.h>
#include <string.h>

static void s_refused(const tc_envelope_t *env, const char *field, const char *why)
{
    int rc = tc_validate_envelope(env);
    cr_assert_eq(rc, TC_EINVAL, "expected a refusal naming %s, got %d: %s", field, rc,
                 tc_errmsg());
    cr_assert(strstr(tc_errmsg(), field), "'%s' does not name %s", tc_errmsg(), field);
    if (why)
        cr_assert(strstr(tc_errmsg(), why), "'%s' does not say %s", tc_errmsg(), why);
}

static tc_envelope_t *s_conv(void)
{
    tc_envelope_t *env = tc_test_envelope("agent-1");
    env->body_case = TRAINCAST__V1__ENVELOPE__BODY_CONV_RESULTS;
    env->conv_results = tc_test_conv_results("uuid-v", 3);
    cr_assert_eq(tc_validate_envelope(env), 0, "%s", tc_errmsg());
    return env;
}

static tc_envelope_t *s_trace(void)
{
    tc_envelope_t *env = tc_test_envelope("agent-1");
    env->body_case = TRAINCAST__V1__ENVELOPE__BODY_TRAIN_TRACE;
    env->train_trace = tc_test_trace("uuid-v", "torchvision:tinynet@32", 8, 10.0);
    cr_assert_eq(tc_validate_envelope(env), 0, "%s", tc_errmsg());
    return env;
}

Test(validate, utf8, .timeout = 10)
{
    static const struct {
        const char *s;
        bool ok;
    } cases[] = {
        {"plain ascii", true},
        {"caf\xc3\xa9", true},                   /* é */
        {"\xe2\x82\xac", true},                  /* € */
        {"\xf0\x9f\x98\x80", true},              /* U+1F600 */
        {"\xf4\x8f\xbf\xbf", true},              /* U+10FFFF */
        {"bad\xff\xfe", false},                  /* never valid bytes */
        {"\xc3", false},                         /* truncated */
        {"\xe2\x82", false},                     /* truncated */
        {"\xc0\xaf", false},                     /* overlong '/' */
        {"\xe0\x80\xaf", false},                 /* overlong '/' */
        {"\xf0\x82\x82\xac", false},             /* overlong € */
        {"\xed\xa0\x80", false},                 /* surrogate U+D800 */
        {"\xf4\x90\x80\x80", false},             /* U+110000 */
        {"\x80", false},                         /* lone continuation */
        {"\xe2\x28\xa1", false},                 /* bad continuation */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        cr_expect_eq(tc_utf8_valid(cases[i].s, strlen(cases[i].s)), cases[i].ok, "case %zu", i);
}

/* Invalid UTF-8 anywhere is refused by validation, naming the field, not
 * left for the database to refuse mid-transaction. */
Test(validate, invalid_utf8_in_text_fields, .timeout = 10)
{
    tc_envelope_t *env = s_conv();
    env->conv_results->results[0]->algo = "bad\xff\xfe";
    s_refused(env, "conv_results.results[0].algo", "UTF-8");
    env = s_conv();
    env->conv_results->results[1]->candidates[1]->message = "\xc0\xaf";
    s_refused(env, "conv_results.results[1].candidates[1].message", "UTF-8");
    env = s_conv();
    env->conv_results->device->name = "GPU \xed\xa0\x80";
    s_refused(env, "conv_results.device.name", "UTF-8");
    env = s_trace();
    env->train_trace->reason = "\xf4\x90\x80\x80";
    s_refused(env, "train_trace.reason", "UTF-8");
    env = s_conv();
    env->agent_id = "agent\x80";
    s_refused(env, "agent_id", "UTF-8");
}

/* Names carry no control characters (a newline in a name would forge log
 * lines); texts may hold tab and newline. */
Test(validate, control_characters, .timeout = 10)
{
    tc_envelope_t *env = s_conv();
    env->agent_id = "agent\nFAKE LOG LINE";
    s_refused(env, "agent_id", "control character 0x0a");
    env = s_conv();
    env->conv_results->device->host = "host\x1b[31m";
    s_refused(env, "conv_results.device.host", "control character 0x1b");
    env = s_trace();
    env->train_trace->reason = "line one\nline two\twith a tab";
    cr_assert_eq(tc_validate_envelope(env), 0, "%s", tc_errmsg());
    env->train_trace->reason = "bell\a";
    s_refused(env, "train_trace.reason", "control character 0x07");
}

Test(validate, integers_that_would_wrap_in_sql, .timeout = 10)
{
    tc_envelope_t *env = s_conv();
    env->conv_results->results[2]->workspace_bytes = UINT64_MAX;
    s_refused(env, "conv_results.results[2].workspace_bytes", "18446744073709551615");
    env = s_conv();
    env->conv_results->results[0]->candidates[0]->workspace_bytes = 1ull << 63;
    s_refused(env, "conv_results.results[0].candidates[0].workspace_bytes", NULL);
    env = s_conv();
    env->conv_results->device->memory_bytes = (1ull << 50) + 1;
    s_refused(env, "conv_results.device.memory_bytes", NULL);
    env = s_conv();
    env->conv_results->device->clock_mhz = UINT32_MAX;
    s_refused(env, "conv_results.device.clock_mhz", NULL);
    env = s_conv();
    env->conv_results->results[1]->repetitions = UINT32_MAX;
    s_refused(env, "conv_results.results[1].repetitions", NULL);
    env = s_conv();
    env->conv_results->results[1]->algo_id = -7;
    s_refused(env, "conv_results.results[1].algo_id", NULL);
    env = s_trace();
    env->train_trace->peak_memory_bytes = UINT64_MAX;
    s_refused(env, "train_trace.peak_memory_bytes", NULL);
    env = s_trace();
    env->train_trace->repeats = UINT32_MAX;
    s_refused(env, "train_trace.repeats", NULL);
    env = s_trace();
    env->train_trace->graph->params = UINT64_MAX;
    s_refused(env, "train_trace.graph.params", NULL);
    env = s_trace();
    env->train_trace->graph->layers[0]->elems_out = UINT64_MAX;
    s_refused(env, "train_trace.graph.layers[0].elems_out", NULL);
    env = s_trace();
    env->train_trace->graph->convs[0]->multiplicity = UINT32_MAX;
    s_refused(env, "train_trace.graph.convs[0].multiplicity", NULL);
}

/* Several results per message, up to a limit the refusal names. */
Test(validate, results_per_message, .timeout = 10)
{
    tc_envelope_t *env = tc_test_envelope("agent-1");
    env->body_case = TRAINCAST__V1__ENVELOPE__BODY_CONV_RESULTS;
    env->conv_results = tc_test_conv_results("uuid-v", TC_MAX_RESULTS_PER_MESSAGE);
    cr_assert_eq(tc_validate_envelope(env), 0, "%s", tc_errmsg());
    env->conv_results = tc_test_conv_results("uuid-v", TC_MAX_RESULTS_PER_MESSAGE + 1);
    s_refused(env, "conv_results.results", "more than the limit of 1024 per message");
}

Test(validate, times_and_doubles, .timeout = 10)
{
    tc_envelope_t *env = s_conv();
    env->sent_at_us = INT64_MAX;
    s_refused(env, "sent_at_us", "2100");
    env = s_conv();
    env->sent_at_us = -1;
    s_refused(env, "sent_at_us", NULL);
    env = s_conv();
    env->sent_at_us = 0; /* unknown is allowed */
    cr_assert_eq(tc_validate_envelope(env), 0, "%s", tc_errmsg());
    env->conv_results->results[0]->measured_at_us = INT64_MIN;
    s_refused(env, "conv_results.results[0].measured_at_us", NULL);
    env = s_conv();
    env->conv_results->results[0]->sample_offsets_us[0] = -5;
    s_refused(env, "conv_results.results[0].sample_offsets_us[0]", NULL);
    env = s_conv();
    env->conv_results->results[0]->max_ms = 1e300;
    s_refused(env, "conv_results.results[0].max_ms", NULL);
    env = s_trace();
    env->train_trace->started_at_us = INT64_MAX;
    s_refused(env, "train_trace.started_at_us", NULL);
    env = s_trace();
    env->train_trace->iterations[0]->at_us = INT64_MAX;
    s_refused(env, "train_trace.iterations[0].at_us", NULL);
    env = s_trace();
    env->train_trace->spread = 1e30;
    s_refused(env, "train_trace.spread", NULL);
    env = s_trace();
    env->train_trace->graph->flops = 1e300;
    s_refused(env, "train_trace.graph.flops", NULL);
}

/* The load of a result: its canary reading, and the earlier result it
 * supersedes, which must be earlier. */
Test(validate, load_canary_and_supersedes, .timeout = 10)
{
    static Traincast__V1__Load load = TRAINCAST__V1__LOAD__INIT;
    tc_envelope_t *env = s_conv();
    Traincast__V1__ConvResult *r = env->conv_results->results[1];
    load.canary_ms = 0.55;
    load.supersedes_us = r->measured_at_us - 1;
    r->load = &load;
    cr_assert_eq(tc_validate_envelope(env), 0, "%s", tc_errmsg());
    load.canary_ms = -1;
    s_refused(env, "conv_results.results[1].load.canary_ms", NULL);
    load.canary_ms = 0.55;
    load.supersedes_us = r->measured_at_us;
    s_refused(env, "conv_results.results[1].load.supersedes_us", "before measured_at_us");
    load.supersedes_us = INT64_MAX;
    s_refused(env, "conv_results.results[1].load.supersedes_us", NULL);
    r->load = NULL;
}

Test(validate, energy, .timeout = 10)
{
    tc_envelope_t *env = s_trace();
    env->train_trace->energy_j = 12.5;
    env->train_trace->energy_source = "rapl";
    cr_assert_eq(tc_validate_envelope(env), 0, "%s", tc_errmsg());
    env->train_trace->energy_source = "wall-meter";
    s_refused(env, "train_trace.energy_source", "nvml");
    env = s_trace();
    env->train_trace->energy_j = 12.5; /* a number from no counter */
    s_refused(env, "train_trace.energy_j", "energy_source");
    env = s_trace();
    env->train_trace->energy_j = -1;
    env->train_trace->energy_source = "nvml";
    s_refused(env, "train_trace.energy_j", NULL);
    env = s_trace();
    env->train_trace->energy_absent = "no RAPL\adomain";
    s_refused(env, "train_trace.energy_absent", "control character 0x07");
}

Test(validate, heartbeat_and_job_progress, .timeout = 10)
{
    Traincast__V1__Heartbeat hb = TRAINCAST__V1__HEARTBEAT__INIT;
    tc_envelope_t *env = tc_test_envelope("agent-1");
    env->body_case = TRAINCAST__V1__ENVELOPE__BODY_HEARTBEAT;
    env->heartbeat = &hb;
    cr_assert_eq(tc_validate_envelope(env), 0, "%s", tc_errmsg());
    hb.spool_backlog = UINT32_MAX;
    s_refused(env, "heartbeat.spool_backlog", NULL);
    hb.spool_backlog = 3;
    hb.running_job_id = "job\xff";
    s_refused(env, "heartbeat.running_job_id", "UTF-8");

    Traincast__V1__JobProgress jp = TRAINCAST__V1__JOB_PROGRESS__INIT;
    jp.job_id = "01JOBJOBJOBJOBJOBJOBJOBJOB";
    jp.state = TRAINCAST__V1__JOB_STATE__JOB_STATE_RUNNING;
    jp.done = 2;
    jp.total = 5;
    env->body_case = TRAINCAST__V1__ENVELOPE__BODY_JOB_PROGRESS;
    env->job_progress = &jp;
    cr_assert_eq(tc_validate_envelope(env), 0, "%s", tc_errmsg());
    jp.total = UINT32_MAX;
    jp.done = UINT32_MAX;
    s_refused(env, "job_progress.done", NULL);
    jp.done = 1;
    jp.total = 0;
    jp.state = TRAINCAST__V1__JOB_STATE__JOB_STATE_QUEUED;
    s_refused(env, "job_progress.state", NULL);
    jp.state = TRAINCAST__V1__JOB_STATE__JOB_STATE_DONE;
    jp.message = "ok \xc3";
    s_refused(env, "job_progress.message", "UTF-8");
}

Test(validate, job_requests, .timeout = 10)
{
    Traincast__V1__TraceRequest tr = TRAINCAST__V1__TRACE_REQUEST__INIT;
    char *models[] = {"torchvision:resnet18"};
    uint32_t batches[] = {8, 0};
    tr.job_id = "job-1";
    tr.device_uuid = "cpu-1";
    tr.models = models;
    tr.n_models = 1;
    tr.batches = batches;
    tr.n_batches = 1;
    cr_assert_eq(tc_validate_trace_request(&tr, "trace_request"), 0, "%s", tc_errmsg());
    tr.n_batches = 2;
    cr_assert_eq(tc_validate_trace_request(&tr, "trace_request"), TC_EINVAL);
    cr_assert(strstr(tc_errmsg(), "trace_request.batches[1]"), "%s", tc_errmsg());

    Traincast__V1__BenchRequest br = TRAINCAST__V1__BENCH_REQUEST__INIT;
    br.job_id = "job-2";
    br.device_uuid = "cpu-1";
    cr_assert_eq(tc_validate_bench_request(&br, "bench_request"), TC_EINVAL);
    cr_assert(strstr(tc_errmsg(), "bench_request.configs"), "%s", tc_errmsg());
}

/* A BenchRequest of matmuls: alone or beside convs, each key checked as a
 * matmul result's (with its mini-batch); neither list is no request. */
Test(validate, bench_request_with_matmuls, .timeout = 10)
{
    Traincast__V1__MatmulConfig mm[2], *mp[2];
    for (int i = 0; i < 2; i++) {
        traincast__v1__matmul_config__init(&mm[i]);
        mm[i].minibatch = 8;
        mm[i].batch = 1;
        mm[i].m = 50;
        mm[i].n = 3072;
        mm[i].k = 768;
        mm[i].minibatch_in = 1;
        mm[i].trans_b = mm[i].weight = mm[i].bias = 1;
        mm[i].dtype = TRAINCAST__V1__DTYPE__DTYPE_FP32;
        mp[i] = &mm[i];
    }
    Traincast__V1__ConvConfig cc = TRAINCAST__V1__CONV_CONFIG__INIT, *cp = &cc;
    cc.n = 8;
    cc.c = cc.k = 16;
    cc.h = cc.w = 8;
    cc.r = cc.s = 3;
    cc.pad_h = cc.pad_w = 1;
    cc.stride_h = cc.stride_w = cc.dilation_h = cc.dilation_w = cc.groups = 1;
    cc.dtype = TRAINCAST__V1__DTYPE__DTYPE_FP32;
    cc.layout = TRAINCAST__V1__LAYOUT__LAYOUT_NCHW;

    tc_envelope_t *env = tc_test_envelope("aggregator");
    Traincast__V1__BenchRequest br = TRAINCAST__V1__BENCH_REQUEST__INIT;
    br.job_id = "job-3";
    br.device_uuid = "cpu-1";
    br.matmuls = mp;
    br.n_matmuls = 2;
    env->body_case = TRAINCAST__V1__ENVELOPE__BODY_BENCH_REQUEST;
    env->bench_request = &br;
    cr_assert_eq(tc_validate_envelope(env), 0, "matmuls alone: %s", tc_errmsg());
    br.configs = &cp;
    br.n_configs = 1;
    cr_assert_eq(tc_validate_envelope(env), 0, "beside a conv: %s", tc_errmsg());
    br.n_configs = 0;
    br.n_matmuls = 0;
    s_refused(env, "bench_request.configs", "must not be empty (nor matmuls)");
    br.n_matmuls = 2;

    /* The key at its mini-batch, as in a result. */
    mm[1].minibatch = 0;
    s_refused(env, "bench_request.matmuls[1].minibatch", "between 1 and");
    mm[1].minibatch = TC_MAX_BATCH + 1;
    s_refused(env, "bench_request.matmuls[1].minibatch", "between 1 and");
    mm[1].minibatch = 8;
    mm[1].n = 0;
    s_refused(env, "bench_request.matmuls[1].n", "between 1 and");
    mm[1].n = 3072;
    mm[1].minibatch_in = 7;
    s_refused(env, "bench_request.matmuls[1].minibatch_in", "got 7");
    mm[1].minibatch_in = 1;
    mm[1].m = mm[1].k = TC_MAX_DIM;
    mm[1].minibatch = TC_MAX_BATCH;
    s_refused(env, "bench_request.matmuls[1].m", "makes A");
    mm[1].m = 50;
    mm[1].k = 768;
    mm[1].minibatch = 8;
    mm[0].dtype = (Traincast__V1__DType)42;
    s_refused(env, "bench_request.matmuls[0].dtype", "got 42");
    mm[0].dtype = TRAINCAST__V1__DTYPE__DTYPE_FP32;
    mp[1] = NULL;
    s_refused(env, "bench_request.matmuls[1]", "is missing");
    mp[1] = &mm[1];
    cr_assert_eq(tc_validate_envelope(env), 0, "%s", tc_errmsg());

    /* Borrowed: not freed with the envelope. */
    env->bench_request = NULL;
    env->body_case = TRAINCAST__V1__ENVELOPE__BODY__NOT_SET;
    tc_envelope_free(&env);
}

/* Matmul results: a list of their own beside the convs, each keyed by a
 * MatmulConfig instead of a ConvConfig; either list alone is a message. */
Test(validate, matmul_results, .timeout = 10)
{
    tc_envelope_t *env = s_conv();
    tc_test_add_matmul_results(env->conv_results, 3);
    cr_assert_eq(tc_validate_envelope(env), 0, "%s", tc_errmsg());

    /* Matmuls alone; neither list is not a message. */
    env->conv_results->n_results = 0;
    cr_assert_eq(tc_validate_envelope(env), 0, "%s", tc_errmsg());
    env->conv_results->n_matmul_results = 0;
    s_refused(env, "conv_results.results", "must not be empty");

    /* The two lists together are capped per message. */
    env = s_conv();
    tc_test_add_matmul_results(env->conv_results, TC_MAX_RESULTS_PER_MESSAGE - 2);
    s_refused(env, "conv_results.results", "more than the limit of 1024 per message");

    /* A key of the other kind, or none. */
    env = s_conv();
    tc_test_add_matmul_results(env->conv_results, 2);
    Traincast__V1__ConvResult *mm = env->conv_results->matmul_results[1];
    mm->config = env->conv_results->results[0]->config;
    s_refused(env, "conv_results.matmul_results[1].config", "absent in a matmul result");
    env->conv_results->results[0]->matmul = mm->matmul;
    mm->config = NULL;
    s_refused(env, "conv_results.results[0].matmul", "absent in a conv result");
    env->conv_results->results[0]->matmul = NULL;
    Traincast__V1__MatmulConfig *c = mm->matmul;
    mm->matmul = NULL;
    s_refused(env, "conv_results.matmul_results[1].matmul", "is missing");
    mm->matmul = c;
    cr_assert_eq(tc_validate_envelope(env), 0, "%s", tc_errmsg());

    /* The key's fields. */
    c->minibatch = 0;
    s_refused(env, "conv_results.matmul_results[1].matmul.minibatch", "between 1 and 65536");
    c->minibatch = 8;
    c->k = 0;
    s_refused(env, "conv_results.matmul_results[1].matmul.k", "between 1 and");
    c->k = TC_MAX_DIM + 1;
    s_refused(env, "conv_results.matmul_results[1].matmul.k", "between 1 and");
    c->k = 768;
    c->batch = 0;
    s_refused(env, "conv_results.matmul_results[1].matmul.batch", "between 1 and");
    c->batch = 1;
    c->minibatch_in = 3;
    s_refused(env, "conv_results.matmul_results[1].matmul.minibatch_in", "got 3");
    c->minibatch_in = 1;
    c->dtype = (Traincast__V1__DType)42;
    s_refused(env, "conv_results.matmul_results[1].matmul.dtype", "got 42");
    c->dtype = TRAINCAST__V1__DTYPE__DTYPE_FP32;
    /* Every dimension in range, the operands not: 2^20 x 2^20 x 2^16. */
    c->m = c->k = TC_MAX_DIM;
    c->minibatch = TC_MAX_BATCH;
    s_refused(env, "conv_results.matmul_results[1].matmul.m", "makes A");
    c->m = 50;
    c->k = 768;
    c->minibatch = 8;
    cr_assert_eq(tc_validate_envelope(env), 0, "%s", tc_errmsg());

    /* The statistics are checked as a conv's. */
    mm->median_ms = 0;
    s_refused(env, "conv_results.matmul_results[1].median_ms", NULL);
}
