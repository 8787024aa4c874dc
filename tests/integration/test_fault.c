/* Faults together, as an operator meets them: two agents stream results
 * while the aggregator is SIGKILLed, PostgreSQL is stopped, `serve` is
 * started again while PostgreSQL is still down, and PostgreSQL returns; one
 * agent sends two bad messages meanwhile (one that validation refuses, one
 * that the database refuses for its content). Every good result is stored
 * exactly once, each bad one is refused with its reason and kept by its
 * agent, and both store workers go on storing. Uses its own cluster so that
 * the suite's other tests are not disturbed. */
#include "journal.h"
#include "store.h"
#include "tc_error.h"
#include "tc_hash.h"
#include "tc_test.h"
#include "tc_test_gen.h"
#include "tc_test_transport.h"

#include "tc_zmq.h"

#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <zmq.h>

#define PER_AGENT 1200
#define COUNT_CONV "SELECT count(*) FROM conv_results"

static char s_pg_dir[1200];

static void s_stop_cluster(void)
{
    if (s_pg_dir[0])
        tc_cluster(s_pg_dir, "stop", NULL, 0);
}

/* The store worker an agent id goes to (server_workers.c: FNV-1a % n). */
static unsigned s_worker_of(const char *agent_id, unsigned n)
{
    return tc_fnv1a32_str(agent_id) % n;
}

/* An agent id of the form PREFIX-N that lands on store worker `worker` of 2. */
static void s_id_for_worker(const char *prefix, unsigned worker, char *out, size_t size)
{
    for (int i = 0; i < 1000; i++) {
        snprintf(out, size, "%s-%d", prefix, i);
        if (s_worker_of(out, 2) == worker)
            return;
    }
    cr_assert_fail("no agent id for worker %u", worker);
}

/* Put a bad copy of a generated message straight into the agent's journal
 * (the agent's own checks would refuse to send it). Returns its id. */
static void s_spool_bad(const char *state, const tc_gen_opts_t *o, int kind, char *id,
                        size_t size)
{
    uint8_t *buf = NULL;
    size_t len = 0;
    char gid[TC_MSGID_LEN + 1];
    cr_assert_eq(tc_gen_pack(o, 0, &buf, &len, gid), 0, "%s", tc_errmsg());
    tc_envelope_t *env = NULL;
    cr_assert_eq(tc_envelope_unpack(buf, len, 0, &env), 0, "%s", tc_errmsg());
    free(buf);
    Traincast__V1__ConvResult *r = env->conv_results->results[0];
    char *old = r->candidates[0]->algo;
    /* Invalid UTF-8 (refused by validation), or a name the test database
     * refuses with a CHECK constraint (refused inside its transaction). */
    r->candidates[0]->algo = kind == 0 ? "bad\xff\xfe" : "poison";
    char path[1300];
    snprintf(path, sizeof path, "%s/journal", state);
    tc_journal_t *journal = NULL;
    cr_assert_eq(tc_journal_open(path, &journal), 0, "%s", tc_errmsg());
    cr_assert_eq(tc_journal_put_envelope(journal, env), 0, "%s", tc_errmsg());
    tc_journal_destroy(&journal);
    snprintf(id, size, "%s", env->message_id);
    r->candidates[0]->algo = old;
    tc_envelope_free(&env);
}

static bool s_alive(pid_t pid)
{
    int st;
    return waitpid(pid, &st, WNOHANG) == 0;
}

Test(fault, kill_outage_restart_while_down_and_bad_messages, .timeout = 900,
     .fini = s_stop_cluster)
{
    char admin[1024], out[8192];
    tc_cluster_start("fault-cluster", s_pg_dir, sizeof s_pg_dir, admin, sizeof admin);
    tc_bed_t bed;
    tc_bed_init(&bed, "fault", admin);
    tc_test_sql(bed.dsn, "ALTER TABLE conv_algo_timings ADD CONSTRAINT test_no_poison "
                    "CHECK (algo <> 'poison')");

    /* Two agents, one on each of the two store workers. */
    char ids[2][64], states[2][1200], files[2][1200], logs[2][1200];
    const char *names[2] = {"fa", "fb"};
    tc_gen_opts_t gen[2];
    for (int a = 0; a < 2; a++) {
        s_id_for_worker(names[a], (unsigned)a, ids[a], sizeof ids[a]);
        tc_bed_agent(&bed, names[a], true, states[a], sizeof states[a]);
        gen[a] = tc_gen_defaults(ids[a]);
        gen[a].device_uuid = a ? "fault-cpu-b" : "fault-cpu-a";
        snprintf(files[a], sizeof files[a], "%s/results-%s.bin", bed.dir, names[a]);
        snprintf(logs[a], sizeof logs[a], "%s/push-%s.log", bed.dir, names[a]);
    }
    /* The bad messages are the oldest in agent a's journal: sent first, in
     * the first batch of a fresh worker connection. */
    char bad_utf8[TC_MSGID_LEN + 1], bad_db[TC_MSGID_LEN + 1];
    s_spool_bad(states[0], &gen[0], 0, bad_utf8, sizeof bad_utf8);
    s_spool_bad(states[0], &gen[0], 1, bad_db, sizeof bad_db);
    for (int a = 0; a < 2; a++)
        cr_assert_eq(tc_gen_write(files[a], &gen[a], 1, PER_AGENT), 0, "%s", tc_errmsg());

    const char *serve_args[] = {"--workers", "2", NULL};
    tc_bed_start_server(&bed, serve_args);
    const char *push_args[] = {"--timeout", "600", NULL};
    pid_t push[2];
    for (int a = 0; a < 2; a++)
        push[a] = tc_bed_push(&bed, states[a], files[a], logs[a], push_args);

    /* 1. The aggregator is killed mid-stream. */
    long long before_kill = tc_bed_wait_count(&bed, COUNT_CONV, 300, 120000);
    cr_assert_geq(before_kill, 300, "nothing stored before the kill (log %s)", bed.server_log);
    cr_assert_eq(tc_bed_stop_server(&bed, SIGKILL), 128 + SIGKILL);

    /* 2. PostgreSQL stops; 3. serve starts while it is down, and waits. */
    cr_assert_eq(tc_cluster(s_pg_dir, "stop", out, sizeof out), 0, "pg stop: %s", out);
    int listening = tc_bed_listening_count(&bed);
    tc_bed_spawn_server(&bed, serve_args);
    tc_test_sleep_ms(4000);
    cr_assert(s_alive(bed.server), "serve exited while the database was down (log %s)",
              bed.server_log);
    cr_assert(tc_test_file_contains(bed.server_log, "waiting for the database"),
              "serve should say it waits for the database (log %s)", bed.server_log);
    cr_assert_eq(tc_bed_listening_count(&bed), listening,
                 "serve accepted agents before the schema check (log %s)", bed.server_log);
    for (int a = 0; a < 2; a++)
        cr_assert(s_alive(push[a]), "agent %s gave up during the outage (log %s)", names[a],
                  logs[a]);

    /* 4. PostgreSQL returns; serve starts accepting. */
    cr_assert_eq(tc_cluster(s_pg_dir, "start", out, sizeof out), 0, "pg start: %s", out);
    tc_bed_wait_listening(&bed, listening, 60000);

    /* Agent a says that two of its messages were refused (and exits 2). */
    cr_expect_eq(tc_test_wait(push[0], 600000), 2, "agent push fa (log %s)", logs[0]);
    /* (A message committed just before the kill, whose Ack was lost, counts
     * as "already stored" on its resend.) */
    cr_expect(tc_test_file_contains(logs[0], "2 rejected, 0 still waiting"), "log %s", logs[0]);
    cr_expect_eq(tc_test_wait(push[1], 600000), 0, "agent push fb failed (log %s)", logs[1]);

    /* Every good result exactly once, under its own agent. */
    cr_expect_eq(tc_bed_count(&bed, COUNT_CONV), 2 * PER_AGENT, "log %s", bed.server_log);
    cr_expect_eq(tc_bed_count(&bed, "SELECT count(DISTINCT message_id) FROM conv_results"),
                 2 * PER_AGENT);
    cr_expect_eq(tc_bed_count(&bed, "SELECT count(*) FROM received_messages WHERE kind = "
                                    "'conv_results'"),
                 2 * PER_AGENT);
    char sql[256];
    for (int a = 0; a < 2; a++) {
        snprintf(sql, sizeof sql,
                 "SELECT count(*) FROM received_messages WHERE agent_id = '%s'", ids[a]);
        cr_expect_eq(tc_bed_count(&bed, sql), PER_AGENT, "agent %s (worker %d)", ids[a], a);
    }
    /* The bad ones: refused, never stored, kept by the agent with the
     * reason. */
    snprintf(sql, sizeof sql,
             "SELECT count(*) FROM received_messages WHERE message_id IN ('%s', '%s')",
             bad_utf8, bad_db);
    cr_expect_eq(tc_bed_count(&bed, sql), 0);
    char reason[4096];
    tc_bed_refused_reason(states[0], bad_utf8, reason, sizeof reason);
    cr_expect(strstr(reason, "algo: is not valid UTF-8"), "%s", reason);
    tc_bed_refused_reason(states[0], bad_db, reason, sizeof reason);
    cr_expect(strstr(reason, "test_no_poison"), "%s", reason);
    for (int a = 0; a < 2; a++) {
        cr_expect_eq(tc_bed_waiting(states[a]), 0, "agent %s", names[a]);
        cr_expect_eq(tc_bed_refused(states[a]), a ? 0 : 2, "agent %s", names[a]);
    }
    cr_expect(!tc_test_file_contains(bed.server_log, "does not exist"),
              "a worker lost its staging tables (log %s)", bed.server_log);

    /* Both workers still store: a last round from each agent. */
    for (int a = 0; a < 2; a++) {
        snprintf(files[a], sizeof files[a], "%s/more-%s.bin", bed.dir, names[a]);
        cr_assert_eq(tc_gen_write(files[a], &gen[a], PER_AGENT + 1, 50), 0);
        push[a] = tc_bed_push(&bed, states[a], files[a], logs[a], push_args);
    }
    for (int a = 0; a < 2; a++)
        cr_expect_eq(tc_test_wait(push[a], 120000), 0, "agent push %s failed (log %s)",
                     names[a], logs[a]);
    cr_expect_eq(tc_bed_count(&bed, COUNT_CONV), 2 * (PER_AGENT + 50));

    /* The operator sees the refused messages and why; once the cause is
     * fixed (here: the constraint dropped) they go through again, and the
     * one that can never be stored is refused again. */
    char bin[1024], cmd[3000];
    tc_test_binary("agent", bin, sizeof bin);
    snprintf(cmd, sizeof cmd, "%s status --state '%s'", bin, states[0]);
    cr_assert_eq(tc_test_run(cmd, out, sizeof out), 0, "%s", out);
    cr_expect(strstr(out, "refused   2 messages"), "%s", out);
    cr_expect(strstr(out, bad_utf8) && strstr(out, "not valid UTF-8"), "%s", out);
    cr_expect(strstr(out, bad_db) && strstr(out, "test_no_poison"), "%s", out);
    tc_test_sql(bed.dsn, "ALTER TABLE conv_algo_timings DROP CONSTRAINT test_no_poison");
    const char *requeue[] = {"--requeue-rejected", NULL};
    int st = tc_test_wait(tc_bed_push(&bed, states[0], NULL, logs[0], requeue), 120000);
    cr_expect_eq(st, 2, "one message is still refused (log %s)", logs[0]);
    snprintf(sql, sizeof sql, "SELECT count(*) FROM received_messages WHERE message_id = '%s'",
             bad_db);
    cr_expect_eq(tc_bed_count(&bed, sql), 1, "the requeued message was stored");
    cr_expect_eq(tc_bed_refused(states[0]), 1);
    cr_expect_eq(tc_bed_stop_server(&bed, SIGTERM), 0, "log %s", bed.server_log);
    tc_bed_fini(&bed);
}

static int64_t s_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Lines of `path` after the first `skip`, leaving out those that contain
 * `except` (may be NULL) or "stored " (the periodic summary of stored
 * messages). */
static long s_lines(const char *path, long skip, const char *except)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    long n = 0, at = 0;
    char line[4096];
    while (fgets(line, sizeof line, f)) {
        if (at++ < skip)
            continue;
        if ((except && strstr(line, except)) || strstr(line, " info: stored "))
            continue;
        n++;
    }
    fclose(f);
    return n;
}

#define COUNT_OF_REVOKED "SELECT count(*) FROM received_messages WHERE agent_id = 'rv-agent'"

/* An agent's key removed from the allowlist while it pushes: once serve has
 * logged the reload, nothing more of it is stored (the open session stays
 * open, but each message, queued or new, is refused); the agent is told
 * why, stops, and keeps what was not stored in its journal. Another agent
 * is served as before. */
Test(fault, a_revoked_key_stores_nothing_after_the_reload, .timeout = 600)
{
    tc_bed_t bed;
    tc_bed_init(&bed, "revoke", NULL);
    char state[1200], keep[1200], file[1200], file2[1200], log[1200], log2[1200];
    tc_bed_agent(&bed, "revoked", true, state, sizeof state);
    tc_bed_agent(&bed, "kept", true, keep, sizeof keep);
    snprintf(file, sizeof file, "%s/revoked.bin", bed.dir);
    snprintf(file2, sizeof file2, "%s/kept.bin", bed.dir);
    snprintf(log, sizeof log, "%s/push-revoked.log", bed.dir);
    snprintf(log2, sizeof log2, "%s/push-kept.log", bed.dir);
    enum { N = 20000 };
    tc_gen_opts_t o = tc_gen_defaults("rv-agent");
    cr_assert_eq(tc_gen_write(file, &o, 0, N), 0, "%s", tc_errmsg());
    tc_gen_opts_t o2 = tc_gen_defaults("rv-kept");
    o2.device_uuid = "rv-kept-cpu";
    cr_assert_eq(tc_gen_write(file2, &o2, 0, 50), 0, "%s", tc_errmsg());
    tc_bed_start_server(&bed, NULL);
    const char *push_args[] = {"--timeout", "500", NULL};
    pid_t push = tc_bed_push(&bed, state, file, log, push_args);
    long long early = tc_bed_wait_count(&bed, COUNT_OF_REVOKED, 1000, 240000);
    cr_assert_geq(early, 1000, "nothing stored before the revocation (log %s)", bed.server_log);

    /* The allowlist without the agent's line, and SIGHUP. */
    tc_bed_allow(&bed, state, false);
    long long at_reload = tc_bed_count(&bed, COUNT_OF_REVOKED);

    int st = tc_test_wait(push, 120000);
    cr_expect_eq(st, 1, "the revoked agent's push should fail (exit 1), got %d (log %s)", st,
                 log);
    cr_expect(tc_test_file_contains(log, "removed this agent's key"), "agent log %s", log);
    tc_test_sleep_ms(1000); /* anything still on its way would commit by now */
    long long after = tc_bed_count(&bed, COUNT_OF_REVOKED);
    cr_expect_eq(after, at_reload, "%lld messages of the revoked key stored after the reload "
                                   "was logged (log %s)",
                 after - at_reload, bed.server_log);
    cr_expect_lt(after, N, "the revocation came too late to test anything");
    /* What was not stored waits in the journal; so may what was stored
     * just before the reload whose ack came after the agent stopped (at
     * most a window of it: it is acknowledged as a duplicate later). */
    long long waiting = (long long)tc_bed_waiting(state);
    cr_expect(waiting >= N - after && waiting <= N - after + 64,
              "the agent's journal should keep what was not stored: %lld waiting, %lld not "
              "stored",
              waiting, N - after);
    cr_expect(tc_test_file_contains(bed.server_log, "was removed from the allowlist"),
              "server log %s", bed.server_log);

    st = tc_test_wait(tc_bed_push(&bed, keep, file2, log2, NULL), 120000);
    cr_expect_eq(st, 0, "the other agent's push failed (log %s)", log2);
    cr_expect_eq(tc_bed_count(&bed, "SELECT count(*) FROM received_messages WHERE agent_id = "
                                    "'rv-kept'"),
                 50);
    cr_expect_eq(tc_bed_stop_server(&bed, SIGTERM), 0, "log %s", bed.server_log);
    tc_bed_fini(&bed);
}

/* Open a TCP connection to the bed's port, write `bytes` and close. */
static void s_raw_connection(const tc_bed_t *bed, const char *bytes)
{
    const char *colon = strrchr(bed->endpoint, ':');
    cr_assert_not_null(colon);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(colon + 1))};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    cr_assert_geq(fd, 0);
    if (connect(fd, (struct sockaddr *)&sa, sizeof sa) == 0 && write(fd, bytes, strlen(bytes)) < 0)
        (void)0; /* the aggregator may close first */
    close(fd);
}

/* Any number of unauthenticated connections (raw TCP with garbage, CURVE
 * with unknown keys) cannot make serve log more than 30 lines a minute,
 * and a closed connection is told as it was (no frame limit blamed for
 * a connection that never sent a message); an allowlisted agent is served
 * meanwhile. Loopback only, bounded in count and time. */
Test(fault, a_connection_flood_cannot_flood_the_log, .timeout = 300)
{
    tc_bed_t bed;
    tc_bed_init(&bed, "connflood", NULL);
    char state[1200], file[1200], log[1200];
    tc_bed_agent(&bed, "steady", true, state, sizeof state);
    snprintf(file, sizeof file, "%s/steady.bin", bed.dir);
    snprintf(log, sizeof log, "%s/push-steady.log", bed.dir);
    tc_gen_opts_t o = tc_gen_defaults("cf-steady");
    cr_assert_eq(tc_gen_write(file, &o, 0, 200), 0, "%s", tc_errmsg());
    tc_bed_start_server(&bed, NULL);
    tc_test_sleep_ms(500);
    long before = s_lines(bed.server_log, 0, NULL);
    int64_t t0 = s_now_ms();
    /* The allowlisted agent's own lines are not the flood's. */
    char steady_key[TC_KEY_Z85_LEN + 1], path[1300];
    snprintf(path, sizeof path, "%s/agent.pub", state);
    cr_assert_eq(tc_pubkey_read(path, steady_key), 0, "%s", tc_errmsg());

    pid_t push = tc_bed_push(&bed, state, file, log, NULL);
    /* 300 raw connections with a few garbage bytes each. */
    for (int i = 0; i < 300; i++)
        s_raw_connection(&bed, i % 2 ? "GET / HTTP/1.0\r\n\r\n" : "\x01\x02garbage");
    /* 100 CURVE handshakes with unknown keys. */
    char server_key[TC_KEY_Z85_LEN + 1];
    snprintf(path, sizeof path, "%s/aggregator.pub", bed.keys);
    cr_assert_eq(tc_pubkey_read(path, server_key), 0, "%s", tc_errmsg());
    void *ctx = zmq_ctx_new();
    for (int i = 0; i < 100; i++) {
        char pub[TC_KEY_Z85_LEN + 1], sec[TC_KEY_Z85_LEN + 1];
        cr_assert_eq(zmq_curve_keypair(pub, sec), 0);
        void *sock = zmq_socket(ctx, ZMQ_DEALER);
        int linger = 0;
        zmq_setsockopt(sock, ZMQ_LINGER, &linger, sizeof linger);
        zmq_setsockopt(sock, ZMQ_CURVE_SERVERKEY, server_key, TC_KEY_Z85_LEN + 1);
        zmq_setsockopt(sock, ZMQ_CURVE_PUBLICKEY, pub, TC_KEY_Z85_LEN + 1);
        zmq_setsockopt(sock, ZMQ_CURVE_SECRETKEY, sec, TC_KEY_Z85_LEN + 1);
        cr_assert_eq(zmq_connect(sock, bed.endpoint), 0);
        tc_test_sleep_ms(5);
        zmq_close(sock);
    }
    zmq_ctx_term(ctx);
    tc_test_sleep_ms(3000); /* the last closings reach the log */
    int64_t elapsed = s_now_ms() - t0;
    long lines = s_lines(bed.server_log, before, steady_key);
    int st = tc_test_wait(push, 120000);
    cr_expect_eq(st, 0, "the allowlisted agent was not served during the flood (log %s)", log);
    cr_expect_eq(tc_bed_count(&bed, "SELECT count(*) FROM received_messages WHERE agent_id = "
                                    "'cf-steady'"),
                 200);
    cr_expect_lt(elapsed, 60000, "the flood took %lld ms: the count is not of one minute",
                 (long long)elapsed);
    cr_expect_leq(lines, 30, "%ld log lines in %lld ms from 400 unauthenticated connections "
                             "(log %s)",
                  lines, (long long)elapsed, bed.server_log);
    cr_expect(tc_test_file_contains(bed.server_log, "without delivering a message"),
              "closed connections should be told as they were (log %s)", bed.server_log);
    cr_expect(!tc_test_file_contains(bed.server_log, "went away, or sent a frame"),
              "a connection that sent no message is not a frame over the limit (log %s)",
              bed.server_log);
    cr_expect_eq(tc_bed_stop_server(&bed, SIGTERM), 0, "log %s", bed.server_log);
    tc_bed_fini(&bed);
}
