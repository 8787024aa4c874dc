/* The agent's spool, identity and job runner, without a network. */
#include "tc_test_gen.h"
#include "tc_test_proc.h"

#include "identity.h"
#include "jobs.h"
#include "spool.h"
#include "tc_error.h"

#include <criterion/criterion.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void s_put(tc_spool_t *sp, char id[TC_MSGID_LEN + 1], const char *text)
{
    tc_msgid_new(id);
    bool added = false;
    cr_assert_eq(tc_spool_put(sp, id, (const uint8_t *)text, strlen(text), true, &added), 0,
                 "%s", tc_errmsg());
    cr_assert(added);
}

Test(spool, put_read_remove_in_age_order, .timeout = 30)
{
    char dir[1200], path[1400];
    tc_test_tmpdir("spool-order", dir, sizeof dir);
    strcat(dir, "/spool");
    tc_spool_t *sp = NULL;
    cr_assert_eq(tc_spool_open(dir, &sp), 0, "%s", tc_errmsg());
    char ids[5][TC_MSGID_LEN + 1];
    for (int i = 0; i < 5; i++) {
        char text[32];
        snprintf(text, sizeof text, "message %d", i);
        s_put(sp, ids[i], text);
    }
    cr_expect_eq(tc_spool_count(sp), 5);
    /* The same id again is not a second message. */
    bool added = true;
    cr_expect_eq(tc_spool_put(sp, ids[2], (const uint8_t *)"other", 5, true, &added), 0);
    cr_expect(!added);
    cr_expect_eq(tc_spool_count(sp), 5);

    char oldest[3][TC_MSGID_LEN + 1];
    cr_assert_eq(tc_spool_oldest(sp, oldest, 3), 3);
    for (int i = 0; i < 3; i++)
        cr_expect_str_eq(oldest[i], ids[i]);

    uint8_t *data = NULL;
    size_t len = 0;
    cr_assert_eq(tc_spool_read(sp, ids[3], &data, &len), 0);
    cr_expect_eq(len, 9);
    cr_expect(memcmp(data, "message 3", 9) == 0);
    free(data);

    cr_expect_eq(tc_spool_remove(sp, ids[0]), 0);
    cr_expect_eq(tc_spool_remove(sp, ids[0]), 0, "removing twice is harmless");
    cr_expect_eq(tc_spool_read(sp, ids[0], &data, &len), TC_ENOTFOUND);
    cr_expect_eq(tc_spool_reject(sp, ids[1], "bad median"), 0);
    cr_expect_eq(tc_spool_count(sp), 3);
    cr_expect_eq(tc_spool_rejected_count(sp), 1);
    snprintf(path, sizeof path, "%s/rejected/%s.reason", dir, ids[1]);
    cr_expect(tc_test_file_contains(path, "bad median"));
    snprintf(path, sizeof path, "%s/rejected/%s.msg", dir, ids[1]);
    cr_expect_eq(access(path, F_OK), 0);
    tc_spool_destroy(&sp);
    cr_expect_null(sp);

    /* What is on disk is what a new process finds, oldest first; a write
     * interrupted before its rename is discarded. */
    snprintf(path, sizeof path, "%s/.%s.tmp", dir, ids[0]);
    int fd = open(path, O_WRONLY | O_CREAT, 0600);
    cr_assert(fd >= 0);
    cr_assert_eq(write(fd, "half", 4), 4);
    close(fd);
    cr_assert_eq(tc_spool_open(dir, &sp), 0);
    cr_expect_eq(tc_spool_count(sp), 3);
    cr_expect_eq(tc_spool_rejected_count(sp), 1);
    cr_expect_eq(access(path, F_OK), -1, "the temporary file should be gone");
    cr_assert_eq(tc_spool_oldest(sp, oldest, 3), 3);
    cr_expect_str_eq(oldest[0], ids[2]);
    cr_expect_str_eq(oldest[2], ids[4]);
    cr_expect(tc_spool_contains(sp, ids[3]));
    cr_expect(!tc_spool_contains(sp, ids[1]));
    tc_spool_destroy(&sp);
}

Test(spool, older_ids_go_first_and_bad_ids_are_refused, .timeout = 30)
{
    char dir[1200];
    tc_test_tmpdir("spool-ids", dir, sizeof dir);
    tc_spool_t *sp = NULL;
    cr_assert_eq(tc_spool_open(dir, &sp), 0);
    char late[TC_MSGID_LEN + 1];
    s_put(sp, late, "late");
    /* An id from a file written earlier sorts before. */
    const char *early = "01ARZ3NDEKTSV4RRFFQ69G5FAV";
    cr_assert_eq(tc_spool_put(sp, early, (const uint8_t *)"early", 5, true, NULL), 0);
    char first[1][TC_MSGID_LEN + 1];
    cr_assert_eq(tc_spool_oldest(sp, first, 1), 1);
    cr_expect_str_eq(first[0], early);
    cr_expect_eq(tc_spool_put(sp, "../../etc/passwd", (const uint8_t *)"x", 1, true, NULL),
                 TC_EINVAL);
    cr_expect_eq(tc_spool_put(sp, "", (const uint8_t *)"x", 1, true, NULL), TC_EINVAL);
    tc_spool_destroy(&sp);
}

Test(identity, agent_id_is_stable_and_the_directory_locked, .timeout = 30)
{
    char dir[1200];
    tc_test_tmpdir("identity", dir, sizeof dir);
    strcat(dir, "/state");
    tc_identity_t *a = NULL, *b = NULL;
    cr_assert_eq(tc_identity_open(dir, false, &a), 0, "%s", tc_errmsg());
    char id[TC_AGENT_ID_MAX + 1];
    snprintf(id, sizeof id, "%s", tc_identity_agent_id(a));
    cr_expect(strlen(id) > 7);
    cr_expect_null(tc_identity_keys(a));
    /* A second user of the same directory is refused with the pid. */
    cr_expect_eq(tc_identity_open(dir, false, &b), TC_EINVAL);
    cr_expect(strstr(tc_errmsg(), "another agent process") != NULL, "%s", tc_errmsg());
    char pid[32];
    snprintf(pid, sizeof pid, "pid %d", (int)getpid());
    cr_expect(strstr(tc_errmsg(), pid) != NULL, "%s", tc_errmsg());

    cr_assert_eq(tc_identity_keygen(a, false), 0, "%s", tc_errmsg());
    cr_assert_not_null(tc_identity_keys(a));
    cr_expect_eq(tc_identity_keygen(a, false), TC_EINVAL, "keygen must not replace keys");
    char path[1400];
    struct stat st;
    snprintf(path, sizeof path, "%s/agent.key", dir);
    cr_assert_eq(stat(path, &st), 0);
    cr_expect_eq(st.st_mode & 0777, 0600);
    tc_identity_destroy(&a);

    /* Reopened: same id, same keys; keys required now present. */
    cr_assert_eq(tc_identity_open(dir, true, &b), 0, "%s", tc_errmsg());
    cr_expect_str_eq(tc_identity_agent_id(b), id);
    char rid[TC_AGENT_ID_MAX + 1];
    cr_expect_eq(tc_identity_read_agent_id(dir, rid, sizeof rid), 0);
    cr_expect_str_eq(rid, id);
    char key[TC_KEY_Z85_LEN + 1];
    cr_expect_eq(tc_identity_server_key(b, NULL, key), TC_EINVAL, "no aggregator.pub yet");
    cr_expect(strstr(tc_errmsg(), "aggregator.pub") != NULL);
    tc_identity_destroy(&b);

    /* A secret key readable by others is refused. */
    chmod(path, 0644);
    cr_expect_eq(tc_identity_open(dir, true, &b), TC_EINVAL);
    cr_expect(strstr(tc_errmsg(), "chmod 600") != NULL, "%s", tc_errmsg());
}

Test(identity, missing_keys_say_what_to_run, .timeout = 30)
{
    char dir[1200];
    tc_test_tmpdir("identity-nokeys", dir, sizeof dir);
    tc_identity_t *a = NULL;
    cr_expect_eq(tc_identity_open(dir, true, &a), TC_EINVAL);
    cr_expect(strstr(tc_errmsg(), "agent keygen") != NULL, "%s", tc_errmsg());
}

/* ---- the job runner ---- */

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

static int s_wait_result(tc_jobs_t *jobs, int *status, char *msg, size_t size)
{
    for (int i = 0; i < 500; i++) {
        if (tc_jobs_take_result(jobs, status, msg, size))
            return 1;
        tc_test_sleep_ms(20);
    }
    return 0;
}

Test(jobs_runner, local_job_spools_file_records_keeping_ids, .timeout = 60)
{
    char dir[1200], file[1300];
    tc_test_tmpdir("jobs-runner", dir, sizeof dir);
    snprintf(file, sizeof file, "%s/results.bin", dir);
    tc_gen_opts_t o = tc_gen_defaults("");
    cr_assert_eq(tc_gen_write(file, &o, 0, 7), 0);
    s_file_to_emit = file;
    strcat(dir, "/spool");
    tc_spool_t *sp = NULL;
    cr_assert_eq(tc_spool_open(dir, &sp), 0);
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
    cr_expect_eq(tc_spool_count(sp), 7, "local jobs send no progress, only results");

    /* The records keep the file's ids and get this agent's id. */
    char ids[7][TC_MSGID_LEN + 1];
    cr_assert_eq(tc_spool_oldest(sp, ids, 7), 7);
    uint8_t *data = NULL;
    size_t len = 0;
    tc_envelope_t *env = NULL;
    cr_assert_eq(tc_spool_read(sp, ids[0], &data, &len), 0);
    cr_assert_eq(tc_envelope_unpack(data, len, 0, &env), 0);
    cr_expect_str_eq(env->agent_id, "agent-x");
    cr_expect_eq(env->body_case, TRAINCAST__V1__ENVELOPE__BODY_CONV_RESULTS);
    tc_envelope_free(&env);
    free(data);

    /* A trace job this runner has no handler for fails with the reason. */
    cr_assert_eq(tc_jobs_submit_local(jobs, TC_JOB_TRACE, &req), 0);
    cr_assert(s_wait_result(jobs, &status, msg, sizeof msg));
    cr_expect_eq(status, TC_EUNSUPPORTED);
    cr_expect(strstr(msg, "trace runner") != NULL, "%s", msg);
    tc_jobs_destroy(&jobs);
    tc_spool_destroy(&sp);
}

Test(jobs_runner, remote_job_reports_progress_through_the_spool, .timeout = 60)
{
    char dir[1200], file[1300];
    tc_test_tmpdir("jobs-remote", dir, sizeof dir);
    snprintf(file, sizeof file, "%s/results.bin", dir);
    tc_gen_opts_t o = tc_gen_defaults("agent-y");
    cr_assert_eq(tc_gen_write(file, &o, 0, 3), 0);
    s_file_to_emit = file;
    strcat(dir, "/spool");
    tc_spool_t *sp = NULL;
    cr_assert_eq(tc_spool_open(dir, &sp), 0);
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
    /* running + failed progress, both spooled; until acknowledged the job
     * still counts as this agent's current one. */
    cr_expect_eq(tc_spool_count(sp), 2);
    tc_jobs_current(jobs, current, sizeof current);
    cr_expect_str_eq(current, "job-1");
    char ids[2][TC_MSGID_LEN + 1];
    cr_assert_eq(tc_spool_oldest(sp, ids, 2), 2);
    uint8_t *data = NULL;
    size_t len = 0;
    tc_envelope_t *p = NULL;
    cr_assert_eq(tc_spool_read(sp, ids[1], &data, &len), 0);
    cr_assert_eq(tc_envelope_unpack(data, len, 0, &p), 0);
    cr_expect_eq(p->body_case, TRAINCAST__V1__ENVELOPE__BODY_JOB_PROGRESS);
    cr_expect_eq(p->job_progress->state, TRAINCAST__V1__JOB_STATE__JOB_STATE_FAILED);
    cr_expect(strstr(p->job_progress->message, "no conv benchmark") != NULL, "%s",
              p->job_progress->message);
    tc_envelope_free(&p);
    free(data);
    for (int i = 0; i < 2; i++)
        tc_spool_remove(sp, ids[i]);
    tc_jobs_current(jobs, current, sizeof current);
    cr_expect_str_eq(current, "", "acknowledged: no current job");
    tc_jobs_destroy(&jobs);
    tc_spool_destroy(&sp);
}

Test(spool, import_result_file_in_chunks_keeps_ids, .timeout = 60)
{
    char dir[1200], file[1300];
    tc_test_tmpdir("spool-import", dir, sizeof dir);
    snprintf(file, sizeof file, "%s/results.bin", dir);
    tc_gen_opts_t o = tc_gen_defaults("");
    cr_assert_eq(tc_gen_write(file, &o, 0, 600), 0); /* more than one chunk */
    strcat(dir, "/spool");
    tc_spool_t *sp = NULL;
    cr_assert_eq(tc_spool_open(dir, &sp), 0);
    size_t records = 0, added = 0;
    cr_assert_eq(tc_spool_import(sp, file, "importer", &records, &added), 0, "%s", tc_errmsg());
    cr_expect_eq(records, 600);
    cr_expect_eq(added, 600);
    cr_expect_eq(tc_spool_count(sp), 600);
    cr_expect_eq(tc_test_dir_count_suffix(dir, ".tmp"), 0, "no temporary file is left");
    /* Again: nothing new. */
    cr_assert_eq(tc_spool_import(sp, file, "importer", &records, &added), 0);
    cr_expect_eq(added, 0);
    cr_expect_eq(tc_spool_count(sp), 600);
    tc_spool_destroy(&sp);
    /* On disk for the next process. */
    cr_assert_eq(tc_spool_open(dir, &sp), 0);
    cr_expect_eq(tc_spool_count(sp), 600);
    char first[1][TC_MSGID_LEN + 1];
    cr_assert_eq(tc_spool_oldest(sp, first, 1), 1);
    uint8_t *data = NULL;
    size_t len = 0;
    tc_envelope_t *env = NULL;
    cr_assert_eq(tc_spool_read(sp, first[0], &data, &len), 0);
    cr_assert_eq(tc_envelope_unpack(data, len, 0, &env), 0);
    cr_expect_str_eq(env->message_id, first[0]);
    cr_expect_str_eq(env->agent_id, "importer");
    tc_envelope_free(&env);
    free(data);
    tc_spool_destroy(&sp);
}
