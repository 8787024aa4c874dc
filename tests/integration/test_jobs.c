/* Jobs from the aggregator to agents: queued in the database, dispatched by
 * a running `aggregator serve` to a connected agent of the right device,
 * progress recorded, requeued when the agent goes away. The agent runs in
 * this process (the library behind `agent serve`) with test handlers in
 * place of the device backends. */
#include "tc_test.h"
#include "tc_test_transport.h"

#include "session.h"
#include "store_server.h"
#include "tc_error.h"

#include <criterion/criterion.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static Traincast__V1__Device s_dev;
static Traincast__V1__Device *s_devs[1] = {&s_dev};
static atomic_int s_slow; /* bench waits until cancelled */

static int s_devices(void *ctx, Traincast__V1__Device *const **devices, size_t *n)
{
    (void)ctx;
    *devices = s_devs;
    *n = 1;
    return 0;
}

/* One ConvResults of the request's matmuls (matmul_results), made-up
 * times. */
static int s_bench_matmuls(const Traincast__V1__BenchRequest *req, tc_job_t *job)
{
    Traincast__V1__ConvResult r[4], *rp[4];
    size_t n = req->n_matmuls < 4 ? req->n_matmuls : 4;
    for (size_t i = 0; i < n; i++) {
        traincast__v1__conv_result__init(&r[i]);
        r[i].matmul = req->matmuls[i];
        r[i].direction = TRAINCAST__V1__DIRECTION__DIRECTION_FWD;
        r[i].policy = req->policy ? req->policy : TRAINCAST__V1__POLICY__POLICY_HEURISTIC;
        r[i].algo = "addmm";
        r[i].median_ms = r[i].min_ms = r[i].max_ms = 0.5;
        r[i].repetitions = 1;
        rp[i] = &r[i];
    }
    Traincast__V1__ConvResults cr = TRAINCAST__V1__CONV_RESULTS__INIT;
    cr.device = &s_dev;
    cr.backend = "test";
    cr.n_matmul_results = n;
    cr.matmul_results = rp;
    tc_envelope_t env = TRAINCAST__V1__ENVELOPE__INIT;
    env.body_case = TRAINCAST__V1__ENVELOPE__BODY_CONV_RESULTS;
    env.conv_results = &cr;
    return n ? tc_job_emit(job, &env) : 0;
}

/* Emits one ConvResults per requested config with made-up times (the
 * matmuls' first, in one). */
static int s_bench(void *ctx, const Traincast__V1__BenchRequest *req, tc_job_t *job)
{
    (void)ctx;
    while (atomic_load(&s_slow)) {
        if (tc_job_cancelled(job))
            return tc_fail(TC_EINTR, "cancelled");
        tc_test_sleep_ms(50);
    }
    int mrc = s_bench_matmuls(req, job);
    if (mrc < 0)
        return mrc;
    for (size_t i = 0; i < req->n_configs; i++) {
        Traincast__V1__ConvResult r = TRAINCAST__V1__CONV_RESULT__INIT;
        Traincast__V1__ConvResult *rp = &r;
        r.config = req->configs[i];
        r.direction = TRAINCAST__V1__DIRECTION__DIRECTION_FWD;
        r.policy = req->policy ? req->policy : TRAINCAST__V1__POLICY__POLICY_HEURISTIC;
        r.algo = "test";
        r.median_ms = r.min_ms = r.max_ms = 1.0 + (double)i;
        r.repetitions = 1;
        Traincast__V1__ConvResults cr = TRAINCAST__V1__CONV_RESULTS__INIT;
        cr.device = &s_dev;
        cr.backend = "test";
        cr.n_results = 1;
        cr.results = &rp;
        tc_envelope_t env = TRAINCAST__V1__ENVELOPE__INIT;
        env.body_case = TRAINCAST__V1__ENVELOPE__BODY_CONV_RESULTS;
        env.conv_results = &cr;
        int rc = tc_job_emit(job, &env);
        if (rc < 0)
            return rc;
        tc_job_progress(job, (uint32_t)i + 1, (uint32_t)req->n_configs, "config");
    }
    return 0;
}

typedef struct {
    tc_session_t s;
    tc_job_handlers_t h;
    tc_jobs_t *jobs;
    pthread_t thread;
    volatile sig_atomic_t stop;
    int rc;
} s_agent_t;

static void s_on_job(void *arg, const tc_envelope_t *env)
{
    tc_jobs_submit(arg, env);
}

static void *s_serve(void *arg)
{
    s_agent_t *a = arg;
    a->rc = tc_session_serve(&a->s, a->jobs, &a->stop);
    return NULL;
}

static void s_agent_start(s_agent_t *a, tc_bed_t *bed, const char *state)
{
    memset(a, 0, sizeof *a);
    tc_session_flags_t f = {.aggregator = bed->endpoint, .state = state, .heartbeat_s = 1,
                            .ack_timeout_s = 3};
    a->h.devices = s_devices;
    a->h.bench = s_bench;
    cr_assert_eq(tc_session_open(&f, &a->s), 0, "%s", tc_errmsg());
    cr_assert_eq(tc_jobs_new(&a->h, a->s.journal, tc_identity_agent_id(a->s.identity), &a->jobs),
                 0);
    cr_assert_eq(tc_session_connect(&a->s, &f, &a->h, s_on_job, a->jobs), 0, "%s",
                 tc_errmsg());
    pthread_create(&a->thread, NULL, s_serve, a);
}

static void s_agent_stop(s_agent_t *a)
{
    a->stop = 1;
    pthread_join(a->thread, NULL);
    tc_jobs_destroy(&a->jobs);
    tc_session_close(&a->s);
}

static void s_job_field(tc_bed_t *bed, const char *job_id, const char *col, char *out,
                        size_t size)
{
    char sql[512];
    snprintf(sql, sizeof sql, "SELECT %s FROM jobs WHERE job_id = '%s'", col, job_id);
    tc_store_t *s = NULL;
    out[0] = '\0';
    if (tc_store_open(bed->dsn, &s) == 0)
        tc_store_exec(s, sql, out, size);
    tc_store_destroy(&s);
}

/* Wait until the job's state is `want`; returns whether it got there. */
static bool s_wait_state(tc_bed_t *bed, const char *job_id, const char *want, int timeout_ms)
{
    char state[64];
    for (int waited = 0; waited <= timeout_ms; waited += 200) {
        s_job_field(bed, job_id, "state", state, sizeof state);
        if (!strcmp(state, want))
            return true;
        tc_test_sleep_ms(200);
    }
    return false;
}

/* A bench job's configs: enough messages that the job's last progress would
 * often be stored before some of its results if the aggregator did not keep
 * an agent's job progress behind its earlier messages. */
#define S_BENCH_CONFIGS 48
/* And matmul configs beside them (BenchRequest.matmuls). */
#define S_BENCH_MATMULS 2

static void s_enqueue(tc_bed_t *bed, const char *kind, char job_id[TC_MSGID_LEN + 1])
{
    Traincast__V1__ConvConfig cfg[S_BENCH_CONFIGS];
    Traincast__V1__ConvConfig *cp[S_BENCH_CONFIGS];
    for (int i = 0; i < S_BENCH_CONFIGS; i++) {
        traincast__v1__conv_config__init(&cfg[i]);
        cfg[i].n = 8;
        cfg[i].c = cfg[i].k = 16u + 8u * (unsigned)i;
        cfg[i].h = cfg[i].w = 14;
        cfg[i].r = cfg[i].s = 3;
        cfg[i].pad_h = cfg[i].pad_w = 1;
        cfg[i].stride_h = cfg[i].stride_w = cfg[i].dilation_h = cfg[i].dilation_w = 1;
        cfg[i].groups = 1;
        cfg[i].dtype = TRAINCAST__V1__DTYPE__DTYPE_FP32;
        cfg[i].layout = TRAINCAST__V1__LAYOUT__LAYOUT_NCHW;
        cp[i] = &cfg[i];
    }
    Traincast__V1__MatmulConfig mm[S_BENCH_MATMULS], *mp[S_BENCH_MATMULS];
    for (int i = 0; i < S_BENCH_MATMULS; i++) {
        traincast__v1__matmul_config__init(&mm[i]);
        mm[i].minibatch = 8;
        mm[i].batch = 1;
        mm[i].m = 50;
        mm[i].n = 3072u + (unsigned)i;
        mm[i].k = 768;
        mm[i].minibatch_in = 1;
        mm[i].trans_b = mm[i].weight = mm[i].bias = 1;
        mm[i].dtype = TRAINCAST__V1__DTYPE__DTYPE_FP32;
        mp[i] = &mm[i];
    }
    uint8_t buf[16384];
    size_t len;
    if (!strcmp(kind, "bench")) {
        Traincast__V1__BenchRequest r = TRAINCAST__V1__BENCH_REQUEST__INIT;
        r.configs = cp;
        r.n_configs = S_BENCH_CONFIGS;
        r.matmuls = mp;
        r.n_matmuls = S_BENCH_MATMULS;
        r.policy = TRAINCAST__V1__POLICY__POLICY_HEURISTIC;
        len = traincast__v1__bench_request__pack(&r, buf);
    } else {
        Traincast__V1__TraceRequest r = TRAINCAST__V1__TRACE_REQUEST__INIT;
        char *models[] = {"resnet18"};
        uint32_t batches[] = {8};
        r.models = models;
        r.n_models = 1;
        r.batches = batches;
        r.n_batches = 1;
        len = traincast__v1__trace_request__pack(&r, buf);
    }
    tc_store_t *s = NULL;
    cr_assert_eq(tc_store_open(bed->dsn, &s), 0);
    cr_assert_eq(tc_store_job_enqueue(s, kind, "test-cpu", NULL, buf, len, "test job", job_id), 0,
                 "%s", tc_errmsg());
    tc_store_destroy(&s);
}

static int s_changes;

static void s_on_change(void *arg, const char *job_id, const tc_store_job_status_t *st)
{
    (void)arg;
    (void)job_id;
    (void)st;
    s_changes++;
}

static void s_init_device(void)
{
    traincast__v1__device__init(&s_dev);
    s_dev.kind = TRAINCAST__V1__DEVICE_KIND__DEVICE_KIND_CPU;
    s_dev.name = "test-cpu";
    s_dev.uuid = "test-cpu-uuid";
    s_dev.threads = 2;
}

Test(jobs, dispatched_run_and_recorded, .timeout = 240)
{
    s_init_device();
    tc_bed_t bed;
    tc_bed_init(&bed, "jobs", NULL);
    char state[1200];
    tc_bed_agent(&bed, "worker", true, state, sizeof state);
    tc_bed_start_server(&bed, NULL);
    /* The job's last result slow to store (1 s) and its progress quick: a
     * last progress taken out of order would be stored well before it. */
    tc_store_t *db = NULL;
    char none[8], sql[512];
    snprintf(sql, sizeof sql,
             "CREATE FUNCTION test_slow_row() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
             "IF NEW.median_ms >= %d THEN PERFORM pg_sleep(1); END IF; RETURN NEW; END $$; "
             "CREATE TRIGGER test_slow BEFORE INSERT ON conv_results FOR EACH ROW EXECUTE "
             "FUNCTION test_slow_row()",
             S_BENCH_CONFIGS);
    cr_assert_eq(tc_store_open(bed.dsn, &db), 0);
    cr_assert_eq(tc_store_exec(db, sql, none, sizeof none), 0, "%s", tc_errmsg());
    tc_store_destroy(&db);

    /* Queued before any agent is there; dispatched once one connects. */
    char bench_id[TC_MSGID_LEN + 1], trace_id[TC_MSGID_LEN + 1];
    s_enqueue(&bed, "bench", bench_id);
    s_agent_t a;
    s_agent_start(&a, &bed, state);
    /* Wait as `aggregator predict` would: LISTENing for progress. */
    tc_store_t *st = NULL;
    cr_assert_eq(tc_store_open(bed.dsn, &st), 0);
    s_changes = 0;
    const char *ids[] = {bench_id};
    cr_expect_eq(tc_store_job_wait(st, ids, 1, 60000, s_on_change, NULL), 0, "%s (log %s)",
                 tc_errmsg(), bed.server_log);
    cr_expect_geq(s_changes, 2, "queued/dispatched/running/done: several changes seen");
    tc_store_job_status_t js;
    cr_expect_eq(tc_store_job_status(st, bench_id, &js), 0);
    cr_expect_str_eq(js.state, "done");
    cr_expect_eq(js.done, S_BENCH_CONFIGS);
    int online = -1;
    cr_expect_eq(tc_store_device_online(st, "test-cpu", 30, &online), 0, "%s", tc_errmsg());
    cr_expect_eq(online, 1);
    cr_expect_eq(tc_store_device_online(st, "other-device", 30, &online), 0);
    cr_expect_eq(online, 0);
    cr_expect_eq(tc_store_job_status(st, "no-such-job", &js), TC_ENOTFOUND);
    tc_store_destroy(&st);
    char v[256];
    s_job_field(&bed, bench_id, "done || '/' || total", v, sizeof v);
    char want[32];
    snprintf(want, sizeof want, "%d/%d", S_BENCH_CONFIGS, S_BENCH_CONFIGS);
    cr_expect_str_eq(v, want);
    s_job_field(&bed, bench_id, "agent_id", v, sizeof v);
    cr_expect_str_eq(v, tc_identity_agent_id(a.s.identity));
    s_job_field(&bed, bench_id, "assigned_uuid", v, sizeof v);
    cr_expect_str_eq(v, "test-cpu-uuid");
    /* Done means its results are stored: the last progress is stored after them. */
    cr_expect_eq(tc_bed_count(&bed, "SELECT count(*) FROM conv_results r JOIN devices d USING "
                                    "(device_id) WHERE d.uuid = 'test-cpu-uuid'"),
                 S_BENCH_CONFIGS, "the job was done before all its results were stored");
    /* The request's matmuls went to the agent with it (the stored request
     * dispatched as it was queued), their results to matmul_results. */
    cr_expect_eq(tc_bed_count(&bed, "SELECT count(*) FROM matmul_results r JOIN devices d USING "
                                    "(device_id) WHERE d.uuid = 'test-cpu-uuid'"),
                 S_BENCH_MATMULS, "the request's matmuls were not measured and stored");
    char q[256];
    snprintf(q, sizeof q,
             "SELECT count(*) FROM job_events WHERE job_id = '%s' AND state = 'running'",
             bench_id);
    cr_expect_geq(tc_bed_count(&bed, q), 1, "the start should be recorded");
    cr_expect_eq(tc_bed_count(&bed, "SELECT count(*) FROM devices_online WHERE uuid = "
                                    "'test-cpu-uuid'"),
                 1, "the serving agent's device should be online");

    /* A job this agent build cannot run fails with the reason. */
    s_enqueue(&bed, "trace", trace_id);
    cr_expect(s_wait_state(&bed, trace_id, "failed", 60000), "trace job did not fail");
    s_job_field(&bed, trace_id, "message", v, sizeof v);
    cr_expect(strstr(v, "trace runner") != NULL, "failure reason: '%s'", v);

    s_agent_stop(&a);
    cr_expect_eq(a.rc, 0);
    cr_expect_eq(tc_bed_stop_server(&bed, SIGTERM), 0);
    tc_bed_fini(&bed);
}

Test(jobs, requeued_when_the_agent_goes_away, .timeout = 240)
{
    s_init_device();
    tc_bed_t bed;
    tc_bed_init(&bed, "requeue", NULL);
    char state[1200];
    tc_bed_agent(&bed, "worker", true, state, sizeof state);
    tc_bed_start_server(&bed, NULL);
    char job_id[TC_MSGID_LEN + 1];
    s_enqueue(&bed, "bench", job_id);

    atomic_store(&s_slow, 1);
    s_agent_t a;
    s_agent_start(&a, &bed, state);
    cr_assert(s_wait_state(&bed, job_id, "running", 60000), "job never started (log %s)",
              bed.server_log);
    s_agent_stop(&a); /* mid-job: no verdict is sent */
    cr_expect(s_wait_state(&bed, job_id, "queued", 60000), "job not requeued (log %s)",
              bed.server_log);
    char v[256];
    s_job_field(&bed, job_id, "message", v, sizeof v);
    cr_expect(strstr(v, "silent") != NULL, "requeue reason: '%s'", v);

    atomic_store(&s_slow, 0);
    s_agent_start(&a, &bed, state);
    cr_expect(s_wait_state(&bed, job_id, "done", 60000), "job not done after requeue");
    s_job_field(&bed, job_id, "attempts", v, sizeof v);
    cr_expect_str_eq(v, "2");
    s_agent_stop(&a);
    tc_bed_fini(&bed);
}
