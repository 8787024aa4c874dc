/* Scaling out on the database: two `aggregator serve` processes on one
 * PostgreSQL. Agents given both endpoints spread their messages over the
 * two and switch to the survivor when one is killed mid-stream, and back
 * when it returns and the other stops; every result is stored exactly once
 * whichever process received it or its resend. Jobs are claimed through
 * the database (FOR UPDATE SKIP LOCKED): two connections claiming at once
 * never hand out the same job. */
#include "store.h"
#include "store_server.h"
#include "tc_error.h"
#include "tc_test.h"
#include "tc_test_gen.h"
#include "tc_test_proc.h"
#include "tc_test_transport.h"

#include <criterion/criterion.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define AGENTS 2
#define PER_AGENT 1000
#define RESULTS 2
#define COUNT_CONV "SELECT count(*) FROM conv_results"

/* The second server: the bed's database and keys, its own port and log. */
static void s_second(const tc_bed_t *bed, tc_bed_t *b2)
{
    *b2 = *bed;
    snprintf(b2->endpoint, sizeof b2->endpoint, "tcp://127.0.0.1:%d", tc_test_free_port());
    snprintf(b2->server_log, sizeof b2->server_log, "%s/aggregator-b.log", bed->dir);
    b2->server = 0;
}

Test(multi_serve, agents_switch_between_two_servers_nothing_lost_or_doubled, .timeout = 600)
{
    tc_bed_t a, b;
    tc_bed_init(&a, "multi", NULL);
    s_second(&a, &b);

    char both[160];
    snprintf(both, sizeof both, "%s,%s", a.endpoint, b.endpoint);
    char states[AGENTS][1200], files[AGENTS][1200], logs[AGENTS][1200];
    pid_t push[AGENTS];
    const char *args[] = {"--timeout", "400", NULL};
    /* The agents' keys go to the allowlist before the servers read it. */
    for (int i = 0; i < AGENTS; i++) {
        char name[16];
        snprintf(name, sizeof name, "m%d", i);
        tc_bed_agent(&a, name, true, states[i], sizeof states[i]);
        tc_gen_opts_t o = tc_gen_defaults(name);
        o.device_uuid = i ? "multi-cpu-b" : "multi-cpu-a";
        o.results_per_message = RESULTS;
        snprintf(files[i], sizeof files[i], "%s/results-%s.bin", a.dir, name);
        snprintf(logs[i], sizeof logs[i], "%s/push-%s.log", a.dir, name);
        cr_assert_eq(tc_gen_write(files[i], &o, 0, PER_AGENT), 0, "%s", tc_errmsg());
    }
    tc_bed_start_server(&a, NULL);
    tc_bed_start_server(&b, NULL);
    for (int i = 0; i < AGENTS; i++) {
        /* Both endpoints: `agent push --aggregator A,B`. */
        tc_bed_t both_bed = a;
        snprintf(both_bed.endpoint, sizeof both_bed.endpoint, "%s", both);
        push[i] = tc_bed_push(&both_bed, states[i], files[i], logs[i], args);
    }

    /* 1. Server a is killed mid-stream: its in-flight messages are resent
     * to b. */
    long long want = (long long)AGENTS * PER_AGENT * RESULTS;
    long long n = tc_bed_wait_count(&a, COUNT_CONV, want / 4, 120000);
    cr_assert_geq(n, want / 4, "nothing stored before the kill (logs %s, %s)", a.server_log,
                  b.server_log);
    cr_assert_lt(n, want, "the stream ended before the kill; make it longer");
    cr_assert_eq(tc_bed_stop_server(&a, SIGKILL), 128 + SIGKILL);
    long long after_kill = tc_bed_wait_count(&a, COUNT_CONV, n + 50, 60000);
    cr_assert_geq(after_kill, n + 50, "server b did not take over (log %s)", b.server_log);

    /* 2. a returns and b stops (SIGTERM: it finishes what it holds). */
    tc_bed_start_server(&a, NULL);
    cr_assert_eq(tc_bed_stop_server(&b, SIGTERM), 0);

    for (int i = 0; i < AGENTS; i++)
        cr_assert_eq(tc_test_wait(push[i], 300000), 0, "agent %d did not deliver everything "
                                                      "(log %s)",
                     i, logs[i]);
    cr_assert_eq(tc_bed_count(&a, COUNT_CONV), want, "lost or extra results");
    cr_assert_eq(tc_bed_count(&a, "SELECT count(*) FROM (SELECT DISTINCT message_id, seq FROM "
                                  "conv_results) x"),
                 want, "a result stored twice");
    cr_assert_eq(tc_bed_count(&a, "SELECT count(*) FROM received_messages WHERE kind = "
                                  "'conv_results'"),
                 (long long)AGENTS * PER_AGENT, "a message stored twice or lost");
    tc_bed_stop_server(&a, SIGTERM);
    tc_bed_fini(&a);
}

typedef struct {
    const char *dsn;
    char agent[16];
    char claimed[64][TC_JOB_ID_MAX + 1];
    int n;
} s_claimer_t;

static void *s_claim_all(void *arg)
{
    s_claimer_t *c = arg;
    tc_store_t *s = NULL;
    if (tc_store_open(c->dsn, &s) < 0)
        return NULL;
    const char *uuids[] = {"claim-uuid"}, *names[] = {"claim-cpu"};
    for (;;) {
        tc_store_job_t job;
        bool found = false;
        if (tc_store_job_claim(s, c->agent, uuids, names, 1, &job, &found) < 0 || !found)
            break;
        if (c->n < 64)
            snprintf(c->claimed[c->n], sizeof c->claimed[c->n], "%s", job.job_id);
        c->n++;
        tc_store_job_clear(&job);
    }
    tc_store_destroy(&s);
    return NULL;
}

Test(multi_serve, two_connections_never_claim_the_same_job, .timeout = 120)
{
    char dsn[1024];
    tc_test_fresh_db("multi_claim", dsn, sizeof dsn);
    tc_store_t *s = NULL;
    int applied = 0;
    cr_assert_eq(tc_store_open(dsn, &s), 0, "%s", tc_errmsg());
    cr_assert_eq(tc_store_migrate(s, &applied), 0, "%s", tc_errmsg());
    enum { JOBS = 60 };
    uint8_t req[1] = {0};
    for (int i = 0; i < JOBS; i++) {
        char id[TC_MSGID_LEN + 1];
        cr_assert_eq(tc_store_job_enqueue(s, "bench", "claim-cpu", NULL, req, 0, "claim", id), 0,
                     "%s", tc_errmsg());
    }
    s_claimer_t c[2] = {{.dsn = dsn, .agent = "claim-a"}, {.dsn = dsn, .agent = "claim-b"}};
    pthread_t t[2];
    for (int i = 0; i < 2; i++)
        cr_assert_eq(pthread_create(&t[i], NULL, s_claim_all, &c[i]), 0);
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    cr_assert_eq(c[0].n + c[1].n, JOBS, "claimed %d + %d of %d jobs", c[0].n, c[1].n, JOBS);
    for (int i = 0; i < c[0].n && i < 64; i++)
        for (int j = 0; j < c[1].n && j < 64; j++)
            cr_assert_str_neq(c[0].claimed[i], c[1].claimed[j], "job %s claimed twice",
                              c[0].claimed[i]);
    char q[256];
    snprintf(q, sizeof q, "SELECT count(*) FROM jobs WHERE state = 'dispatched'");
    char v[32];
    cr_assert_eq(tc_store_exec(s, q, v, sizeof v), 0, "%s", tc_errmsg());
    cr_assert_eq(atoi(v), JOBS);
    tc_store_destroy(&s);
}
