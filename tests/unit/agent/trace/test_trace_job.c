/* Trace jobs (`agent run`, `agent serve`) through the built-in job
 * handlers: the traces land in the journal as TrainTrace envelopes with the
 * model graph attached. Uses the fake runner, so no training happens. */
#include "jobs.h"
#include "journal.h"
#include "tc_error.h"
#include "tc_test.h"
#include "tc_test_transport.h"
#include "tc_validate.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char s_dir[256];

static void s_setup(void)
{
    tc_test_scratch_dir("trace_job", "journal", s_dir, sizeof s_dir);
}

static void s_teardown(void)
{
    (void)tc_test_remove_tree(s_dir);
}

TestSuite(trace_job, .init = s_setup, .fini = s_teardown);

static int s_wait(tc_jobs_t *jobs, int *status, char *msg, size_t size)
{
    for (int i = 0; i < 3000; i++) {
        if (tc_jobs_take_result(jobs, status, msg, size))
            return 1;
        usleep(50000);
    }
    return 0;
}

static tc_jobs_t *s_jobs(const char *mode, tc_journal_t **sp, tc_job_handlers_t *h)
{
    static char runner[700], journal_dir[300];
    char script[512];
    tc_test_source_path("tests/runners/fake_runner.sh", script, sizeof script);
    snprintf(runner, sizeof runner, "%s %s", script, mode);
    snprintf(journal_dir, sizeof journal_dir, "%s/journal", s_dir);
    tc_job_settings_t js = {.device = "cpu", .runner = runner};
    cr_assert_eq(tc_job_handlers_builtin(&js, h), 0, "%s", tc_errmsg());
    cr_assert_not_null(h->trace, "this build traces");
    cr_assert_eq(tc_journal_open(journal_dir, sp), 0, "%s", tc_errmsg());
    tc_jobs_t *jobs = NULL;
    cr_assert_eq(tc_jobs_new(h, *sp, "agent-t", &jobs), 0, "%s", tc_errmsg());
    return jobs;
}

Test(trace_job, a_local_trace_job_sends_one_trace_per_model_and_batch, .timeout = 300)
{
    tc_journal_t *sp = NULL;
    tc_job_handlers_t h;
    tc_jobs_t *jobs = s_jobs("ok", &sp, &h);
    char *models[] = {"squeezenet1_1"};
    uint32_t batches[] = {2, 4};
    Traincast__V1__TraceRequest req = TRAINCAST__V1__TRACE_REQUEST__INIT;
    req.models = models;
    req.n_models = 1;
    req.batches = batches;
    req.n_batches = 2;
    req.input_size = 32;
    req.warmup = 1;
    req.iters = 2;
    req.repeats = 2;
    cr_assert_eq(tc_jobs_submit_local(jobs, TC_JOB_TRACE, &req), 0, "%s", tc_errmsg());
    int status = 1;
    char msg[1024];
    cr_assert(s_wait(jobs, &status, msg, sizeof msg), "the job did not end");
    cr_assert_eq(status, 0, "%s", msg);
    cr_assert_eq(tc_journal_waiting(sp), 2);

    char ids[2][TC_MSGID_LEN + 1];
    cr_assert_eq(tc_journal_oldest(sp, ids, 2), 2);
    for (int i = 0; i < 2; i++) {
        tc_envelope_t *env = tc_test_journal_envelope(sp, ids[i]);
        cr_assert_eq(tc_validate_envelope(env), 0, "%s", tc_errmsg());
        cr_assert_str_eq(env->agent_id, "agent-t");
        const Traincast__V1__TrainTrace *t = env->train_trace;
        cr_assert_not_null(t);
        cr_assert_eq(t->status, TRAINCAST__V1__TRACE_STATUS__TRACE_STATUS_OK, "%s", t->reason);
        cr_assert_eq(t->batch, batches[i]);
        cr_assert_eq(t->repeats, 2);
        cr_assert_eq(t->n_iterations, 6);
        cr_assert_str_eq(t->model_id, "torchvision:squeezenet1_1@32");
        cr_assert_not_null(t->graph, "a job's traces carry the model graph");
        cr_assert_str_eq(t->graph->model_id, t->model_id);
        cr_assert_gt(t->graph->n_layers, 10);
        tc_envelope_free(&env);
    }
    tc_jobs_destroy(&jobs);
    tc_job_handlers_release(&h);
    tc_journal_destroy(&sp);
}

/* Submit a one-trace job (model at batch 2) on `uuid` (may be NULL) that
 * must fail: returns its status, with the message in msg. Nothing may
 * reach the journal. */
static int s_failing_job(const char *model, const char *uuid, char *msg, size_t size)
{
    tc_journal_t *sp = NULL;
    tc_job_handlers_t h;
    tc_jobs_t *jobs = s_jobs("ok", &sp, &h);
    char *models[] = {(char *)model};
    uint32_t batches[] = {2};
    Traincast__V1__TraceRequest req = TRAINCAST__V1__TRACE_REQUEST__INIT;
    req.models = models;
    req.n_models = 1;
    req.batches = batches;
    req.n_batches = 1;
    if (uuid)
        req.device_uuid = (char *)uuid;
    cr_assert_eq(tc_jobs_submit_local(jobs, TC_JOB_TRACE, &req), 0);
    int status = 0;
    cr_assert(s_wait(jobs, &status, msg, size), "the job did not end");
    cr_assert_eq(tc_journal_waiting(sp), 0, "a failed job sends nothing");
    tc_jobs_destroy(&jobs);
    tc_job_handlers_release(&h);
    tc_journal_destroy(&sp);
    return status;
}

Test(trace_job, a_request_for_another_device_fails, .timeout = 120)
{
    char msg[1024];
    int status = s_failing_job("squeezenet1_1", "GPU-00000000-not-here", msg, sizeof msg);
    cr_assert_eq(status, TC_ENODEV, "%d: %s", status, msg);
    cr_assert(strstr(msg, "GPU-00000000-not-here") && strstr(msg, "this agent traces"), "%s",
              msg);
}

Test(trace_job, a_bad_model_fails_the_job_before_training, .timeout = 120)
{
    char msg[1024];
    int status = s_failing_job("no_such_net", NULL, msg, sizeof msg);
    cr_assert_lt(status, 0);
    cr_assert(strstr(msg, "no_such_net"), "%s", msg);
}

/* The TrainTrace messages waiting in the journal: their ids (sorted) into
 * ids[], all acknowledged afterwards when `ack`. Each is on `uuid` with `threads`. */
static size_t s_spooled_traces(tc_journal_t *sp, const char *uuid, uint32_t threads,
                               char (*ids)[TC_MSGID_LEN + 1], size_t max, bool ack)
{
    size_t total = tc_journal_waiting(sp), n = 0;
    char (*all)[TC_MSGID_LEN + 1] = calloc(total + 1, sizeof *all);
    cr_assert_eq(tc_journal_oldest(sp, all, total), total);
    for (size_t i = 0; i < total; i++) {
        tc_envelope_t *env = tc_test_journal_envelope(sp, all[i]);
        if (env->body_case == TRAINCAST__V1__ENVELOPE__BODY_TRAIN_TRACE) {
            const Traincast__V1__TrainTrace *t = env->train_trace;
            cr_assert_str_eq(t->device->uuid, uuid, "traces and benchmarks share the device");
            cr_assert_eq(t->device->threads, threads);
            cr_assert_eq(t->threads, threads);
            if (n < max)
                memcpy(ids[n], all[i], sizeof ids[n]);
            n++;
        }
        tc_envelope_free(&env);
        if (ack)
            tc_journal_ack(sp, all[i]);
    }
    free(all);
    return n;
}

Test(trace_job, traces_use_the_cpu_thread_count_and_resume_from_the_results, .timeout = 300)
{
    char runner[700], script[512], journal_dir[300];
    tc_test_source_path("tests/runners/fake_runner.sh", script, sizeof script);
    snprintf(runner, sizeof runner, "%s ok", script);
    snprintf(journal_dir, sizeof journal_dir, "%s/journal", s_dir);
    tc_job_settings_t js = {.device = "cpu", .threads = 1, .runner = runner,
                            .keep_results = true};
    tc_job_handlers_t h;
    cr_assert_eq(tc_job_handlers_builtin(&js, &h), 0, "%s", tc_errmsg());
    Traincast__V1__Device *const *devs = NULL;
    size_t n_devs = 0;
    cr_assert_eq(h.devices(h.ctx, &devs, &n_devs), 0);
    cr_assert_eq(n_devs, 1);
    char uuid[128];
    snprintf(uuid, sizeof uuid, "%s", devs[0]->uuid);
    cr_assert_eq(devs[0]->threads, 1);
    tc_journal_t *sp = NULL;
    cr_assert_eq(tc_journal_open(journal_dir, &sp), 0);
    tc_jobs_t *jobs = NULL;
    cr_assert_eq(tc_jobs_new(&h, sp, "agent-t", &jobs), 0);

    char *models[] = {"squeezenet1_1"};
    uint32_t batches[] = {2, 4};
    Traincast__V1__TraceRequest req = TRAINCAST__V1__TRACE_REQUEST__INIT;
    req.models = models;
    req.n_models = 1;
    req.batches = batches;
    req.n_batches = 2;
    req.input_size = 32;
    req.warmup = 1;
    req.iters = 2;
    req.repeats = 1;
    int status = 1;
    char msg[1024];
    cr_assert_eq(tc_jobs_submit_local(jobs, TC_JOB_TRACE, &req), 0);
    cr_assert(s_wait(jobs, &status, msg, sizeof msg));
    cr_assert_eq(status, 0, "%s", msg);
    char first[2][TC_MSGID_LEN + 1];
    cr_assert_eq(s_spooled_traces(sp, uuid, 1, first, 2, true), 2);

    /* Again from the command line: both traces were kept. */
    cr_assert_eq(tc_jobs_submit_local(jobs, TC_JOB_TRACE, &req), 0);
    cr_assert(s_wait(jobs, &status, msg, sizeof msg));
    cr_assert_eq(status, 0, "%s", msg);
    cr_assert_eq(tc_journal_waiting(sp), 0, "nothing traced or sent again");

    /* The aggregator asks for them: the stored traces go out again. */
    req.job_id = "trace-job-1";
    req.device_uuid = uuid;
    tc_envelope_t e = TRAINCAST__V1__ENVELOPE__INIT;
    e.body_case = TRAINCAST__V1__ENVELOPE__BODY_TRACE_REQUEST;
    e.trace_request = &req;
    char id[TC_MSGID_LEN + 1];
    tc_envelope_stamp(&e, "aggregator", id);
    cr_assert_eq(tc_jobs_submit(jobs, &e), 0);
    cr_assert(s_wait(jobs, &status, msg, sizeof msg));
    cr_assert_eq(status, 0, "%s", msg);
    char again[2][TC_MSGID_LEN + 1];
    cr_assert_eq(s_spooled_traces(sp, uuid, 1, again, 2, true), 2);
    for (int i = 0; i < 2; i++)
        cr_assert_str_eq(again[i], first[i], "sent under the same message ids");
    tc_jobs_destroy(&jobs);
    tc_job_handlers_release(&h);
    tc_journal_destroy(&sp);
}
