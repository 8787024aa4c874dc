/* Conv benchmark jobs through the built-in job handlers (`agent serve` and
 * `agent run`): real oneDNN measurements on the cpu device with a tiny
 * budget, results kept in the journal, resumed from there (also after a
 * restart, and after a crash that tore the last one), and sent again when
 * the aggregator asks for them. */
#include "bench_jobs.h"
#include "device.h"
#include "jobs.h"
#include "journal.h"
#include "tc_error.h"
#include "tc_resultfile.h"
#include "tc_test.h"
#include "tc_test_transport.h"
#include "tc_validate.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char s_dir[256], s_journal_dir[300];

static void s_setup(void)
{
    tc_test_scratch_dir("bench_job", "journal", s_dir, sizeof s_dir);
    snprintf(s_journal_dir, sizeof s_journal_dir, "%s/journal", s_dir);
}

static void s_teardown(void)
{
    (void)tc_test_remove_tree(s_dir);
}

TestSuite(bench_job, .init = s_setup, .fini = s_teardown);

typedef struct {
    tc_job_handlers_t h;
    tc_journal_t *sp;
    tc_jobs_t *jobs;
    const Traincast__V1__Device *dev;
} s_agent_t;

/* per_message 1: the tests that follow each result through the journal;
 * 0: the default batching. */
static void s_agent_with(s_agent_t *a, unsigned per_message)
{
    memset(a, 0, sizeof *a);
    tc_job_settings_t js = {.device = "cpu", .threads = 1, .budget_ms = 5, .max_reps = 3,
                            .keep_results = true, .results_per_message = per_message};
    cr_assert_eq(tc_job_handlers_builtin(&js, &a->h), 0, "%s", tc_errmsg());
    cr_assert_not_null(a->h.bench);
    cr_assert_not_null(a->h.bench_models);
    Traincast__V1__Device *const *devs = NULL;
    size_t n = 0;
    cr_assert_eq(a->h.devices(a->h.ctx, &devs, &n), 0);
    cr_assert_eq(n, 1, "--device cpu: one device");
    a->dev = devs[0];
    cr_assert_eq(a->dev->threads, 1);
    cr_assert(strstr(a->dev->name, "(1 thread)"), "a CPU with one thread: %s", a->dev->name);
    cr_assert_eq(tc_journal_open(s_journal_dir, &a->sp), 0, "%s", tc_errmsg());
    cr_assert_eq(tc_jobs_new(&a->h, a->sp, "agent-b", &a->jobs), 0, "%s", tc_errmsg());
}

static void s_agent(s_agent_t *a)
{
    s_agent_with(a, 1);
}

static void s_agent_free(s_agent_t *a)
{
    tc_jobs_destroy(&a->jobs);
    tc_job_handlers_release(&a->h);
    tc_journal_destroy(&a->sp);
}

static int s_wait(tc_jobs_t *jobs, char *msg, size_t size)
{
    int status = 1;
    for (int i = 0; i < 3000; i++) {
        if (tc_jobs_take_result(jobs, &status, msg, size))
            return status;
        usleep(20000);
    }
    cr_assert_fail("the job did not end");
    return 1;
}

/* The ConvResults message ids waiting in the journal (sorted, as it lists
 * them); every one valid, from agent-b, on `uuid`. Returns the count and
 * acknowledges all messages when `ack`. */
static size_t s_spooled_results(tc_journal_t *sp, const char *uuid, char (*ids)[TC_MSGID_LEN + 1],
                                size_t max, size_t *progress, bool ack)
{
    size_t total = tc_journal_waiting(sp), n = 0;
    char (*all)[TC_MSGID_LEN + 1] = calloc(total + 1, sizeof *all);
    cr_assert_eq(tc_journal_oldest(sp, all, total), total);
    if (progress)
        *progress = 0;
    for (size_t i = 0; i < total; i++) {
        tc_envelope_t *env = tc_test_journal_envelope(sp, all[i]);
        cr_assert_eq(tc_validate_envelope(env), 0, "%s", tc_errmsg());
        cr_assert_str_eq(env->agent_id, "agent-b");
        if (env->body_case == TRAINCAST__V1__ENVELOPE__BODY_CONV_RESULTS) {
            const Traincast__V1__ConvResults *cr = env->conv_results;
            cr_assert_str_eq(cr->device->uuid, uuid);
            cr_assert_eq(cr->n_results ? cr->results[0]->policy : cr->matmul_results[0]->policy,
                         TRAINCAST__V1__POLICY__POLICY_HEURISTIC);
            if (n < max)
                memcpy(ids[n], all[i], sizeof ids[n]);
            n++;
        } else if (env->body_case == TRAINCAST__V1__ENVELOPE__BODY_JOB_PROGRESS && progress) {
            (*progress)++;
        }
        tc_envelope_free(&env);
        if (ack)
            tc_journal_ack(sp, all[i]);
    }
    free(all);
    return n;
}

typedef struct {
    size_t n;
    char ids[64][TC_MSGID_LEN + 1];
} s_file_t;

static int s_file_record(const tc_envelope_t *env, void *arg)
{
    s_file_t *f = arg;
    if (f->n < 64)
        snprintf(f->ids[f->n], sizeof f->ids[f->n], "%s", env->message_id);
    f->n++;
    return 0;
}

/* The results the job kept for the device (delivered or not). */
static void s_read_kept(s_agent_t *a, const char *uuid, s_file_t *f)
{
    char name[600];
    tc_job_results_name(name, sizeof name, "bench-%s-heuristic", uuid);
    memset(f, 0, sizeof *f);
    cr_assert_eq(tc_journal_each(a->sp, name, s_file_record, f), 0, "%s", tc_errmsg());
}

static int s_idcmp(const void *a, const void *b)
{
    return strcmp(a, b);
}

/* A BenchRequest envelope for n_convs (up to 2) small conv configs and
 * n_matmuls (up to 2) small matmul configs (a Linear's), all directions. */
static void s_request_ops(const char *job_id, const char *uuid, size_t n_convs,
                          size_t n_matmuls, uint8_t **buf, size_t *len, tc_envelope_t **env)
{
    Traincast__V1__ConvConfig cfg[2], *cp[2];
    Traincast__V1__MatmulConfig mm[2], *mp[2];
    for (int i = 0; i < 2; i++) {
        traincast__v1__matmul_config__init(&mm[i]);
        mm[i].minibatch = 2;
        mm[i].batch = 1;
        mm[i].m = 4;
        mm[i].n = 16u << i;
        mm[i].k = 8;
        mm[i].minibatch_in = 1;
        mm[i].trans_b = mm[i].weight = mm[i].bias = 1;
        mm[i].dtype = TRAINCAST__V1__DTYPE__DTYPE_FP32;
        mp[i] = &mm[i];
        traincast__v1__conv_config__init(&cfg[i]);
        cfg[i].n = 2;
        cfg[i].c = cfg[i].k = 8u << i;
        cfg[i].h = cfg[i].w = 8;
        cfg[i].r = cfg[i].s = 3;
        cfg[i].pad_h = cfg[i].pad_w = 1;
        cfg[i].stride_h = cfg[i].stride_w = cfg[i].dilation_h = cfg[i].dilation_w = 1;
        cfg[i].groups = 1;
        cfg[i].dtype = TRAINCAST__V1__DTYPE__DTYPE_FP32;
        cfg[i].layout = TRAINCAST__V1__LAYOUT__LAYOUT_NCHW;
        cp[i] = &cfg[i];
    }
    Traincast__V1__BenchRequest r = TRAINCAST__V1__BENCH_REQUEST__INIT;
    r.job_id = (char *)job_id;
    r.device_uuid = (char *)uuid;
    r.configs = cp;
    r.n_configs = n_convs;
    r.matmuls = mp;
    r.n_matmuls = n_matmuls;
    tc_envelope_t e = TRAINCAST__V1__ENVELOPE__INIT;
    e.body_case = TRAINCAST__V1__ENVELOPE__BODY_BENCH_REQUEST;
    e.bench_request = &r;
    char id[TC_MSGID_LEN + 1];
    tc_envelope_stamp(&e, "aggregator", id);
    cr_assert_eq(tc_envelope_pack(&e, buf, len), 0);
    cr_assert_eq(tc_envelope_unpack(*buf, *len, 0, env), 0);
}

/* A BenchRequest envelope for two small conv configs, all directions. */
static void s_request(const char *job_id, const char *uuid, uint8_t **buf, size_t *len,
                      tc_envelope_t **env)
{
    s_request_ops(job_id, uuid, 2, 0, buf, len, env);
}

Test(bench_job, a_request_is_measured_once_and_answered_again_from_the_results, .timeout = 180)
{
    s_agent_t a;
    s_agent(&a);
    char uuid[128];
    snprintf(uuid, sizeof uuid, "%s", a.dev->uuid);
    uint8_t *buf = NULL;
    size_t len = 0;
    tc_envelope_t *env = NULL;
    s_request("job-1", uuid, &buf, &len, &env);

    cr_assert_eq(tc_jobs_submit(a.jobs, env), 0, "%s", tc_errmsg());
    char msg[1024];
    cr_assert_eq(s_wait(a.jobs, msg, sizeof msg), 0, "%s", msg);
    /* 2 configs x 3 directions, each once, delivered and kept. */
    char first[8][TC_MSGID_LEN + 1];
    size_t progress = 0;
    cr_assert_eq(s_spooled_results(a.sp, uuid, first, 8, &progress, true), 6);
    cr_assert_geq(progress, 2, "running and done are reported");
    s_file_t f;
    s_read_kept(&a, uuid, &f);
    cr_assert_eq(f.n, 6);
    qsort(f.ids, f.n, sizeof f.ids[0], s_idcmp);
    for (int i = 0; i < 6; i++)
        cr_assert_str_eq(first[i], f.ids[i], "what was sent is what was kept");

    /* Asked again (say the store lost them): nothing is measured, the same
     * messages are sent again. */
    tc_envelope_free(&env);
    free(buf);
    s_request("job-2", uuid, &buf, &len, &env);
    cr_assert_eq(tc_jobs_submit(a.jobs, env), 0);
    cr_assert_eq(s_wait(a.jobs, msg, sizeof msg), 0, "%s", msg);
    char again[8][TC_MSGID_LEN + 1];
    cr_assert_eq(s_spooled_results(a.sp, uuid, again, 8, NULL, true), 6);
    for (int i = 0; i < 6; i++)
        cr_assert_str_eq(again[i], first[i]);
    s_read_kept(&a, uuid, &f);
    cr_assert_eq(f.n, 6, "nothing measured twice");

    /* A request for a device this agent does not have fails. */
    tc_envelope_free(&env);
    free(buf);
    s_request("job-3", "cpu-not-this-one", &buf, &len, &env);
    cr_assert_eq(tc_jobs_submit(a.jobs, env), 0);
    cr_assert_lt(s_wait(a.jobs, msg, sizeof msg), 0);
    cr_assert(strstr(msg, "cpu-not-this-one"), "%s", msg);
    tc_envelope_free(&env);
    free(buf);
    s_agent_free(&a);
}

static int s_models_job(s_agent_t *a, char *msg, size_t size)
{
    char model[512];
    tc_test_source_path("tests/data/squeezenet1_1.onnx", model, sizeof model);
    char *models[] = {model};
    uint32_t batches[] = {1};
    Traincast__V1__TraceRequest req = TRAINCAST__V1__TRACE_REQUEST__INIT;
    req.models = models;
    req.n_models = 1;
    req.batches = batches;
    req.n_batches = 1;
    req.input_size = 32;
    cr_assert_eq(tc_jobs_submit_local(a->jobs, TC_JOB_BENCH_MODELS, &req), 0, "%s",
                 tc_errmsg());
    return s_wait(a->jobs, msg, size);
}

Test(bench_job, models_are_resumed_and_a_result_torn_by_a_crash_is_measured_again,
     .timeout = 240)
{
    s_agent_t a;
    s_agent(&a);
    char uuid[128], msg[1024];
    snprintf(uuid, sizeof uuid, "%s", a.dev->uuid);
    /* squeezenet1_1 at 32 px, batch 1: 53 items (its first conv has no
     * backward-data pass). A local job sends no progress: the journal
     * ends with the last result. */
    cr_assert_eq(s_models_job(&a, msg, sizeof msg), 0, "%s", msg);
    cr_assert_eq(s_spooled_results(a.sp, uuid, NULL, 0, NULL, false), 53);
    s_file_t f;
    s_read_kept(&a, uuid, &f);
    cr_assert_eq(f.n, 53);

    /* The same job again measures and sends nothing. */
    cr_assert_eq(s_models_job(&a, msg, sizeof msg), 0, "%s", msg);
    cr_assert_eq(tc_journal_waiting(a.sp), 53, "nothing new");
    s_read_kept(&a, uuid, &f);
    cr_assert_eq(f.n, 53);
    char last[TC_MSGID_LEN + 1];
    snprintf(last, sizeof last, "%s", f.ids[52]);

    /* A crash in the middle of writing the last result: the next start
     * cuts it off, and the job measures that one item again. */
    s_agent_free(&a);
    char log[400];
    snprintf(log, sizeof log, "%s/log", s_journal_dir);
    struct stat st;
    cr_assert_eq(stat(log, &st), 0);
    cr_assert_eq(truncate(log, st.st_size - 10), 0);
    s_agent(&a);
    s_read_kept(&a, uuid, &f);
    cr_assert_eq(f.n, 52, "the torn result is gone");
    cr_assert_eq(tc_journal_waiting(a.sp), 52);
    cr_assert_eq(s_models_job(&a, msg, sizeof msg), 0, "%s", msg);
    s_read_kept(&a, uuid, &f);
    cr_assert_eq(f.n, 53, "one item measured again");
    cr_assert_str_neq(f.ids[52], last, "a new measurement, a new message id");
    cr_assert_eq(s_spooled_results(a.sp, uuid, NULL, 0, NULL, true), 53);
    s_agent_free(&a);
}

Test(bench_job, bad_settings_are_refused_naming_the_flag, .timeout = 60)
{
    tc_job_handlers_t h;
    tc_job_settings_t js = {.device = "cpu", .policy = "fastest"};
    cr_assert_eq(tc_job_handlers_builtin(&js, &h), TC_EUSAGE);
    cr_assert(strstr(tc_errmsg(), "--policy"), "%s", tc_errmsg());
    js = (tc_job_settings_t){.device = "cpu", .budget_ms = -1};
    cr_assert_eq(tc_job_handlers_builtin(&js, &h), TC_EUSAGE);
    cr_assert(strstr(tc_errmsg(), "--budget-ms"), "%s", tc_errmsg());
    js = (tc_job_settings_t){.device = "cpu", .threads = 100000};
    cr_assert_eq(tc_job_handlers_builtin(&js, &h), TC_EUSAGE);
    cr_assert(strstr(tc_errmsg(), "--threads"), "%s", tc_errmsg());
    js = (tc_job_settings_t){.device = "tpu:0"};
    cr_assert_eq(tc_job_handlers_builtin(&js, &h), TC_EUSAGE);
    cr_assert(strstr(tc_errmsg(), "tpu:0"), "%s", tc_errmsg());
}

/* By default a fast stream of results goes out several per message: the
 * six results of the request in fewer messages, each result once. */
Test(bench_job, results_go_out_several_per_message, .timeout = 180)
{
    s_agent_t a;
    s_agent_with(&a, 0);
    char uuid[128], msg[1024];
    snprintf(uuid, sizeof uuid, "%s", a.dev->uuid);
    uint8_t *buf = NULL;
    size_t len = 0;
    tc_envelope_t *env = NULL;
    s_request("job-batch", uuid, &buf, &len, &env);
    cr_assert_eq(tc_jobs_submit(a.jobs, env), 0, "%s", tc_errmsg());
    cr_assert_eq(s_wait(a.jobs, msg, sizeof msg), 0, "%s", msg);
    size_t total = tc_journal_waiting(a.sp), messages = 0, results = 0;
    char (*all)[TC_MSGID_LEN + 1] = calloc(total + 1, sizeof *all);
    cr_assert_eq(tc_journal_oldest(a.sp, all, total), total);
    char seen[8][64];
    for (size_t i = 0; i < total; i++) {
        tc_envelope_t *e = tc_test_journal_envelope(a.sp, all[i]);
        cr_assert_eq(tc_validate_envelope(e), 0, "%s", tc_errmsg());
        if (e->body_case == TRAINCAST__V1__ENVELOPE__BODY_CONV_RESULTS) {
            messages++;
            for (size_t r = 0; r < e->conv_results->n_results; r++) {
                const Traincast__V1__ConvResult *x = e->conv_results->results[r];
                cr_assert_lt(results, 8, "more results than measured");
                snprintf(seen[results], sizeof seen[results], "%u %u %d", x->config->c,
                         x->config->n, (int)x->direction);
                for (size_t k = 0; k < results; k++)
                    cr_assert_str_neq(seen[k], seen[results], "result %s sent twice", seen[k]);
                results++;
            }
        }
        tc_envelope_free(&e);
    }
    free(all);
    cr_assert_eq(results, 6, "2 configs x 3 directions");
    cr_assert_lt(messages, results, "%zu messages for %zu fast results: not batched", messages,
                 results);
    tc_envelope_free(&env);
    free(buf);
    s_agent_free(&a);
}

/* The results of the ConvResults messages waiting in the journal, by list:
 * convs and matmuls (each a matmul key: n and direction, told apart). */
static void s_count_results(tc_journal_t *sp, size_t *convs, size_t *matmuls, char seen[][32],
                            size_t max)
{
    size_t total = tc_journal_waiting(sp);
    char (*all)[TC_MSGID_LEN + 1] = calloc(total + 1, sizeof *all);
    cr_assert_eq(tc_journal_oldest(sp, all, total), total);
    *convs = *matmuls = 0;
    for (size_t i = 0; i < total; i++) {
        tc_envelope_t *e = tc_test_journal_envelope(sp, all[i]);
        cr_assert_eq(tc_validate_envelope(e), 0, "%s", tc_errmsg());
        if (e->body_case == TRAINCAST__V1__ENVELOPE__BODY_CONV_RESULTS) {
            const Traincast__V1__ConvResults *cr = e->conv_results;
            *convs += cr->n_results;
            for (size_t r = 0; r < cr->n_matmul_results; r++) {
                const Traincast__V1__ConvResult *x = cr->matmul_results[r];
                cr_assert_not_null(x->matmul);
                cr_assert_null(x->config);
                cr_assert_eq(x->matmul->minibatch, 2);
                cr_assert_gt(x->median_ms, 0);
                cr_assert_str_eq(x->algo, "addmm", "a Linear with a bias: %s", x->algo);
                cr_assert_lt(*matmuls, max, "more matmul results than asked for");
                snprintf(seen[*matmuls], 32, "%u %d", x->matmul->n, (int)x->direction);
                for (size_t k = 0; k < *matmuls; k++)
                    cr_assert_str_neq(seen[k], seen[*matmuls], "result %s sent twice", seen[k]);
                (*matmuls)++;
            }
        }
        tc_envelope_free(&e);
        tc_journal_ack(sp, all[i]);
    }
    free(all);
}

/* A request with matmuls beside a conv: each measured on the cpu device's
 * matmul path (one GEMM per direction) and sent in matmul_results, as
 * `agent bench --ops matmul` sends them; kept, and sent again, not
 * measured again, when asked a second time. */
Test(bench_job, a_request_with_matmuls_is_measured_into_matmul_results, .timeout = 180)
{
    s_agent_t a;
    s_agent(&a);
    char uuid[128], msg[1024];
    snprintf(uuid, sizeof uuid, "%s", a.dev->uuid);
    uint8_t *buf = NULL;
    size_t len = 0;
    tc_envelope_t *env = NULL;
    s_request_ops("job-mm", uuid, 1, 2, &buf, &len, &env);
    cr_assert_eq(tc_jobs_submit(a.jobs, env), 0, "%s", tc_errmsg());
    cr_assert_eq(s_wait(a.jobs, msg, sizeof msg), 0, "%s", msg);
    size_t convs = 0, matmuls = 0;
    char seen[8][32];
    s_count_results(a.sp, &convs, &matmuls, seen, 8);
    cr_assert_eq(convs, 3, "1 conv config x 3 directions");
    cr_assert_eq(matmuls, 6, "2 matmul configs x 3 directions");
    s_file_t f;
    s_read_kept(&a, uuid, &f);
    cr_assert_eq(f.n, 9, "one result per message: %zu kept", f.n);

    /* Matmuls alone, asked again: sent again from what was kept. */
    tc_envelope_free(&env);
    free(buf);
    s_request_ops("job-mm-2", uuid, 0, 2, &buf, &len, &env);
    cr_assert_eq(tc_jobs_submit(a.jobs, env), 0, "%s", tc_errmsg());
    cr_assert_eq(s_wait(a.jobs, msg, sizeof msg), 0, "%s", msg);
    s_count_results(a.sp, &convs, &matmuls, seen, 8);
    cr_assert_eq(convs, 0);
    cr_assert_eq(matmuls, 6, "the matmul results sent again");
    s_read_kept(&a, uuid, &f);
    cr_assert_eq(f.n, 9, "nothing measured twice");
    tc_envelope_free(&env);
    free(buf);
    s_agent_free(&a);
}

/* On a device whose backend benchmarks no matmuls, a request's matmuls are
 * not dropped silently: the job fails naming them and the backend. */
Test(bench_job, matmuls_on_a_backend_without_them_fail_the_job_naming_them, .timeout = 60)
{
    const tc_backend_iface_t *const *b = tc_backends();
    const tc_backend_iface_t *none = NULL;
    for (size_t i = 0; b[i] && !none; i++)
        if (!b[i]->matmul_create)
            none = b[i];
    if (!none)
        cr_skip_test("every backend of this build benchmarks matmuls");
    tc_job_settings_t js = {.device = "cpu", .threads = 1, .budget_ms = 5, .max_reps = 3};
    tc_bench_jobs_t *bj = NULL;
    cr_assert_eq(tc_bench_jobs_new(&js, &bj), 0, "%s", tc_errmsg());
    tc_agent_device_t ad = {.threads = 0};
    snprintf(ad.spec, sizeof ad.spec, "%s:0", none->kind);
    snprintf(ad.why, sizeof ad.why, "not opened by this test");
    uint8_t *buf = NULL;
    size_t len = 0;
    tc_envelope_t *env = NULL;
    s_request_ops("job-mm-none", "gpu-1", 0, 2, &buf, &len, &env);
    cr_assert_eq(tc_bench_jobs_request(bj, &ad, env->bench_request, NULL), TC_EUNSUPPORTED);
    cr_assert(strstr(tc_errmsg(), "6 matmul items (2 configs) of this request cannot be "
                                  "measured"),
              "%s", tc_errmsg());
    cr_assert(strstr(tc_errmsg(), "benchmarks no matmuls"), "%s", tc_errmsg());
    cr_assert(strstr(tc_errmsg(), none->kind), "%s", tc_errmsg());
    tc_envelope_free(&env);
    free(buf);
    tc_bench_jobs_destroy(&bj);
}
