/* The agent's job runner without a network: local jobs keep a result
 * file's records and ids, remote ones report their progress through the
 * journal. */
#include "tc_test_gen.h"
#include "tc_test_proc.h"
#include "tc_test_transport.h"

#include "jobs.h"
#include "journal.h"
#include "tc_error.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *s_file_to_emit;

static int s_bench_models(void *ctx, const Traincast__V1__TraceRequest *req, tc_job_t *job)
{
    (void)ctx;
    cr_expect_eq(req->n_models, 2);
    tc_job_progress(job, 1, 2, "first");
    int rc = tc_job_emit_file(job, s_file_to_emit);
    tc_job_progress(job, 2, 2, "second");
    return rc;
}

/* A fresh directory `name` with a result file of n generated records of
 * `agent` (into `file`, the file jobs emit) and an open journal beside it. */
static tc_journal_t *s_setup(const char *name, const char *agent, size_t n, char *file,
                             size_t size)
{
    char dir[1200];
    tc_test_tmpdir(name, dir, sizeof dir);
    snprintf(file, size, "%s/results.bin", dir);
    tc_gen_opts_t o = tc_gen_defaults(agent);
    cr_assert_eq(tc_gen_write(file, &o, 0, n), 0);
    s_file_to_emit = file;
    strcat(dir, "/journal");
    tc_journal_t *sp = NULL;
    cr_assert_eq(tc_journal_open(dir, &sp), 0);
    return sp;
}

static int s_wait_result(tc_jobs_t *jobs, int *status, char *msg, size_t size)
{
    for (int i = 0; i < 500; i++) {
        if (tc_jobs_take_result(jobs, status, msg, size))
            return 1;
        tc_test_sleep_ms(20);
    }
    return 0;
}

Test(jobs_runner, local_job_keeps_file_records_and_their_ids, .timeout = 60)
{
    char file[1300];
    tc_journal_t *sp = s_setup("jobs-runner", "", 7, file, sizeof file);
    tc_job_handlers_t h = {.bench_models = s_bench_models};
    tc_jobs_t *jobs = NULL;
    cr_assert_eq(tc_jobs_new(&h, sp, "agent-x", &jobs), 0);
    char *models[] = {"resnet18", "vgg11"};
    Traincast__V1__TraceRequest req = TRAINCAST__V1__TRACE_REQUEST__INIT;
    req.models = models;
    req.n_models = 2;
    cr_assert_eq(tc_jobs_submit_local(jobs, TC_JOB_BENCH_MODELS, &req), 0);
    int status = 1;
    char msg[256];
    cr_assert(s_wait_result(jobs, &status, msg, sizeof msg), "the job did not end");
    cr_expect_eq(status, 0, "%s", msg);
    cr_expect_eq(tc_journal_waiting(sp), 7, "local jobs send no progress, only results");

    /* The records keep the file's ids and get this agent's id. */
    char ids[7][TC_MSGID_LEN + 1];
    cr_assert_eq(tc_journal_oldest(sp, ids, 7), 7);
    tc_envelope_t *env = tc_test_journal_envelope(sp, ids[0]);
    cr_expect_str_eq(env->agent_id, "agent-x");
    cr_expect_eq(env->body_case, TRAINCAST__V1__ENVELOPE__BODY_CONV_RESULTS);
    tc_envelope_free(&env);

    /* A trace job this runner has no handler for fails with the reason. */
    cr_assert_eq(tc_jobs_submit_local(jobs, TC_JOB_TRACE, &req), 0);
    cr_assert(s_wait_result(jobs, &status, msg, sizeof msg));
    cr_expect_eq(status, TC_EUNSUPPORTED);
    cr_expect(strstr(msg, "trace runner") != NULL, "%s", msg);
    tc_jobs_destroy(&jobs);
    tc_journal_destroy(&sp);
}

Test(jobs_runner, remote_job_reports_progress_through_the_journal, .timeout = 60)
{
    char file[1300];
    tc_journal_t *sp = s_setup("jobs-remote", "agent-y", 3, file, sizeof file);
    tc_job_handlers_t h = {0}; /* no bench backend: the job fails */
    tc_jobs_t *jobs = NULL;
    cr_assert_eq(tc_jobs_new(&h, sp, "agent-y", &jobs), 0);

    Traincast__V1__BenchRequest br = TRAINCAST__V1__BENCH_REQUEST__INIT;
    br.job_id = "job-1";
    tc_envelope_t env = TRAINCAST__V1__ENVELOPE__INIT;
    env.body_case = TRAINCAST__V1__ENVELOPE__BODY_BENCH_REQUEST;
    env.bench_request = &br;
    cr_assert_eq(tc_jobs_submit(jobs, &env), 0);
    int status = 0;
    char msg[256], current[80];
    cr_assert(s_wait_result(jobs, &status, msg, sizeof msg));
    cr_expect_eq(status, TC_EUNSUPPORTED);
    /* running + failed progress, both waiting; until acknowledged the job
     * still counts as this agent's current one. */
    cr_expect_eq(tc_journal_waiting(sp), 2);
    tc_jobs_current(jobs, current, sizeof current);
    cr_expect_str_eq(current, "job-1");
    char ids[2][TC_MSGID_LEN + 1];
    cr_assert_eq(tc_journal_oldest(sp, ids, 2), 2);
    tc_envelope_t *p = tc_test_journal_envelope(sp, ids[1]);
    cr_expect_eq(p->body_case, TRAINCAST__V1__ENVELOPE__BODY_JOB_PROGRESS);
    cr_expect_eq(p->job_progress->state, TRAINCAST__V1__JOB_STATE__JOB_STATE_FAILED);
    cr_expect(strstr(p->job_progress->message, "no conv benchmark") != NULL, "%s",
              p->job_progress->message);
    tc_envelope_free(&p);
    for (int i = 0; i < 2; i++)
        tc_journal_ack(sp, ids[i]);
    tc_jobs_current(jobs, current, sizeof current);
    cr_expect_str_eq(current, "", "acknowledged: no current job");
    tc_jobs_destroy(&jobs);
    tc_journal_destroy(&sp);
}

