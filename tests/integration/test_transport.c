/* Agents to aggregator over real ZeroMQ (CURVE) on 127.0.0.1 into real
 * PostgreSQL, with the real binaries: concurrency, crashes on either side,
 * and nothing stored twice or lost. */
#include "tc_test.h"
#include "tc_test_gen.h"
#include "tc_test_transport.h"

#include <criterion/criterion.h>
#include <signal.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#define COUNT_CONV "SELECT count(*) FROM conv_results"
#define COUNT_MSGS "SELECT count(*) FROM received_messages WHERE kind = 'conv_results'"

static void s_gen(const char *path, const char *agent, const char *uuid, size_t n)
{
    tc_gen_opts_t o = tc_gen_defaults(agent);
    o.device_uuid = uuid;
    cr_assert_eq(tc_gen_write(path, &o, 0, n), 0, "generating %s", path);
}

Test(transport, three_agents_thousand_messages_each, .timeout = 400)
{
    tc_bed_t bed;
    tc_bed_init(&bed, "three", NULL);
    char state[3][1200], file[3][1200], log[3][1200];
    pid_t pid[3];
    for (int i = 0; i < 3; i++) {
        char name[16], uuid[32];
        snprintf(name, sizeof name, "a%d", i);
        snprintf(uuid, sizeof uuid, "gen-dev-%d", i);
        tc_bed_agent(&bed, name, true, state[i], sizeof state[i]);
        snprintf(file[i], sizeof file[i], "%s/results-%d.bin", bed.dir, i);
        snprintf(log[i], sizeof log[i], "%s/push-%d.log", bed.dir, i);
        s_gen(file[i], name, uuid, 1000);
    }
    tc_bed_start_server(&bed, NULL);
    for (int i = 0; i < 3; i++)
        pid[i] = tc_bed_push(&bed, state[i], file[i], log[i], NULL);
    for (int i = 0; i < 3; i++)
        cr_expect_eq(tc_test_wait(pid[i], 300000), 0, "agent push %d failed (log %s)", i, log[i]);

    cr_expect_eq(tc_bed_count(&bed, COUNT_CONV), 3000);
    cr_expect_eq(tc_bed_count(&bed, COUNT_MSGS), 3000);
    cr_expect_eq(tc_bed_count(&bed, "SELECT count(DISTINCT message_id) FROM conv_results"), 3000);
    for (int i = 0; i < 3; i++) {
        char q[256];
        snprintf(q, sizeof q,
                 "SELECT count(*) FROM conv_results r JOIN devices d USING (device_id) "
                 "WHERE d.uuid = 'gen-dev-%d'",
                 i);
        cr_expect_eq(tc_bed_count(&bed, q), 1000, "device %d", i);
        cr_expect_eq(tc_bed_waiting(state[i]), 0, "agent %d has messages waiting", i);
    }

    /* Pushing the same file again stores nothing new: its ids are kept. */
    char again[1200];
    snprintf(again, sizeof again, "%s/push-again.log", bed.dir);
    cr_expect_eq(tc_test_wait(tc_bed_push(&bed, state[0], file[0], again, NULL), 120000), 0);
    cr_expect(tc_test_file_contains(again, "0 stored, 1000 already stored"),
              "second push should be all duplicates (log %s)", again);
    cr_expect_eq(tc_bed_count(&bed, COUNT_CONV), 3000);

    /* aggregator status reports the agents, devices and counts. */
    char bin[1024], cmd[2400], out[16384];
    tc_test_binary("aggregator", bin, sizeof bin);
    snprintf(cmd, sizeof cmd, "%s status --db '%s'", bin, bed.dsn);
    cr_expect_eq(tc_test_run(cmd, out, sizeof out), 0, "%s", out);
    cr_expect(strstr(out, "gen-dev-2") != NULL, "status lacks a device:\n%s", out);
    const char *row = strstr(out, "conv results  ");
    cr_expect(row && strtol(row + strlen("conv results"), NULL, 10) == 3000,
              "status lacks counts:\n%s", out);

    cr_expect_eq(tc_bed_stop_server(&bed, SIGTERM), 0, "clean shutdown (log %s)", bed.server_log);
    tc_bed_fini(&bed);
}

/* Kill (or stop) the aggregator mid-stream, restart it, and check that every
 * message is stored exactly once. */
static void s_restart_server_midstream(const char *name, int sig)
{
    tc_bed_t bed;
    tc_bed_init(&bed, name, NULL);
    char state[1200], file[1200], log[1200];
    tc_bed_agent(&bed, "a", true, state, sizeof state);
    tc_bed_start_server(&bed, NULL);
    snprintf(file, sizeof file, "%s/results.bin", bed.dir);
    snprintf(log, sizeof log, "%s/push.log", bed.dir);
    s_gen(file, "a", "gen-dev-a", 1500);
    pid_t push = tc_bed_push(&bed, state, file, log, NULL);

    long long before = tc_bed_wait_count(&bed, COUNT_CONV, 200, 120000);
    cr_assert_geq(before, 200, "nothing stored before the kill (log %s)", bed.server_log);
    int st = tc_bed_stop_server(&bed, sig);
    long long at_kill = tc_bed_count(&bed, COUNT_CONV);
    cr_assert_lt(at_kill, 1500, "the stream ended before the kill; use more messages");
    if (sig == SIGTERM)
        cr_expect_eq(st, 0, "SIGTERM should stop the aggregator cleanly (log %s)",
                     bed.server_log);
    tc_test_sleep_ms(1500);
    tc_bed_start_server(&bed, NULL);

    cr_expect_eq(tc_test_wait(push, 300000), 0, "agent push failed (log %s)", log);
    cr_expect_eq(tc_bed_count(&bed, COUNT_CONV), 1500);
    cr_expect_eq(tc_bed_count(&bed, COUNT_MSGS), 1500);
    cr_expect_eq(tc_bed_count(&bed, "SELECT count(DISTINCT message_id) FROM conv_results"), 1500);
    cr_expect_eq(tc_bed_waiting(state), 0);
    tc_bed_fini(&bed);
}

Test(transport, aggregator_sigkill_midstream, .timeout = 400)
{
    s_restart_server_midstream("srvkill", SIGKILL);
}

Test(transport, aggregator_sigterm_midstream, .timeout = 400)
{
    s_restart_server_midstream("srvterm", SIGTERM);
}

Test(transport, agent_sigkill_journal_survives, .timeout = 400)
{
    tc_bed_t bed;
    tc_bed_init(&bed, "agentkill", NULL);
    char state[1200], file[1200], log[1200], log2[1200];
    tc_bed_agent(&bed, "a", true, state, sizeof state);
    tc_bed_start_server(&bed, NULL);
    snprintf(file, sizeof file, "%s/results.bin", bed.dir);
    snprintf(log, sizeof log, "%s/push.log", bed.dir);
    snprintf(log2, sizeof log2, "%s/push2.log", bed.dir);
    s_gen(file, "a", "gen-dev-a", 1500);
    pid_t push = tc_bed_push(&bed, state, file, log, NULL);
    cr_assert_geq(tc_bed_wait_count(&bed, COUNT_CONV, 200, 120000), 200);
    cr_assert_eq(tc_test_stop(push, SIGKILL), 128 + SIGKILL);
    long long at_kill = tc_bed_count(&bed, COUNT_CONV);
    int spooled = (int)tc_bed_waiting(state);
    cr_assert_lt(at_kill, 1500, "the stream ended before the kill; use more messages");
    cr_expect_gt(spooled, 0, "the journal should hold what was not acknowledged");
    cr_expect_geq(at_kill + spooled, 1500, "stored %lld + waiting %d: messages were lost",
                  at_kill, spooled);

    /* A new process sends what the killed one left, without the file. */
    cr_expect_eq(tc_test_wait(tc_bed_push(&bed, state, NULL, log2, NULL), 300000), 0,
                 "second push failed (log %s)", log2);
    cr_expect_eq(tc_bed_count(&bed, COUNT_CONV), 1500);
    cr_expect_eq(tc_bed_count(&bed, COUNT_MSGS), 1500);
    cr_expect_eq(tc_bed_waiting(state), 0);
    tc_bed_fini(&bed);
}

/* TRAINCAST_ACK_LOG: one line per answered message, with the outcome, the
 * number of sends and a latency that fits between the two timestamps. */
Test(transport, ack_log_records_every_message, .timeout = 300)
{
    tc_bed_t bed;
    tc_bed_init(&bed, "acklog", NULL);
    char state[1200], file[1200], log[1200], log2[1200], acks[1200];
    tc_bed_agent(&bed, "a", true, state, sizeof state);
    snprintf(file, sizeof file, "%s/results.bin", bed.dir);
    snprintf(log, sizeof log, "%s/push.log", bed.dir);
    snprintf(log2, sizeof log2, "%s/push2.log", bed.dir);
    snprintf(acks, sizeof acks, "%s/acks.tsv", bed.dir);
    s_gen(file, "a", "gen-dev-a", 120);
    tc_bed_start_server(&bed, NULL);
    setenv("TRAINCAST_ACK_LOG", acks, 1);
    cr_assert_eq(tc_test_wait(tc_bed_push(&bed, state, file, log, NULL), 120000), 0,
                 "agent push failed (log %s)", log);
    /* The same file again: every message is answered as a duplicate. */
    cr_assert_eq(tc_test_wait(tc_bed_push(&bed, state, file, log2, NULL), 120000), 0,
                 "second push failed (log %s)", log2);
    unsetenv("TRAINCAST_ACK_LOG");

    FILE *f = fopen(acks, "r");
    cr_assert(f != NULL, "no ack log at %s", acks);
    char line[512], id[64], outcome[32], ids[240][64], sql[240 * 32 + 256];
    long long sent, acked, latency;
    unsigned sends;
    int n = 0, stored = 0, dups = 0;
    size_t at = (size_t)snprintf(sql, sizeof sql,
                                 "SELECT count(*) FROM received_messages WHERE message_id IN (");
    while (fgets(line, sizeof line, f)) {
        cr_assert_eq(sscanf(line, "%63s %lld %lld %lld %u %31s", id, &sent, &acked, &latency,
                            &sends, outcome),
                     6, "line %d malformed: %s", n + 1, line);
        cr_assert_lt(n, 240, "more lines than answered messages");
        cr_expect_geq(sends, 1u, "line %d", n + 1);
        cr_expect_geq(latency, 0, "line %d", n + 1);
        /* The two clocks agree to well within a second over a short run. */
        cr_expect_leq(latency, acked - sent + 1000000, "line %d", n + 1);
        cr_expect_geq(latency, acked - sent - 1000000, "line %d", n + 1);
        if (!strcmp(outcome, "stored")) {
            cr_expect_eq(dups, 0, "a stored line after the duplicates");
            at += (size_t)snprintf(sql + at, sizeof sql - at, "%s'%s'", stored ? "," : "", id);
            stored++;
        } else {
            cr_expect_str_eq(outcome, "duplicate", "line %d", n + 1);
            dups++;
        }
        snprintf(ids[n++], sizeof ids[0], "%s", id);
    }
    fclose(f);
    cr_expect_eq(stored, 120);
    cr_expect_eq(dups, 120);
    snprintf(sql + at, sizeof sql - at, ")");
    cr_expect_eq(tc_bed_count(&bed, sql), 120, "the stored lines name the stored messages");
    for (int i = 0; i < stored; i++) { /* each id once per push */
        int seen = 0;
        for (int j = 0; j < stored; j++)
            seen += !strcmp(ids[i], ids[j]);
        cr_expect_eq(seen, 1, "message %s logged %d times in the first push", ids[i], seen);
    }
    cr_expect_eq(tc_bed_stop_server(&bed, SIGTERM), 0);
    tc_bed_fini(&bed);
}

/* A model's matmuls from `agent bench` to the store: measured on this
 * machine's cpu, pushed over ZeroMQ, stored in matmul_results (the convs
 * left out with --ops matmul, to keep it short); pushed again, nothing new. */
Test(transport, matmul_results_from_bench_to_store, .timeout = 400)
{
    tc_bed_t bed;
    tc_bed_init(&bed, "matmul", NULL);
    char state[1200], file[1200], log[1200], cmd[4096], out[16384], bin[1024];
    tc_bed_agent(&bed, "mm", true, state, sizeof state);
    snprintf(file, sizeof file, "%s/results.tcr", bed.dir);
    tc_test_binary("agent", bin, sizeof bin);
    snprintf(cmd, sizeof cmd,
             "%s bench --models %s/tests/data/resnet18.onnx --ops matmul --batches 2,4 "
             "--threads 1 --budget-ms 5 --max-reps 3 --quiet-threshold 100 --state '%s' "
             "--out '%s'",
             bin, TC_SOURCE_DIR, state, file);
    cr_assert_eq(tc_test_run(cmd, out, sizeof out), 0, "%s", out);
    cr_assert(strstr(out, "measured 6 items"), "%s", out);
    tc_bed_start_server(&bed, NULL);
    snprintf(log, sizeof log, "%s/push.log", bed.dir);
    cr_assert_eq(tc_test_wait(tc_bed_push(&bed, state, file, log, NULL), 300000), 0,
                 "agent push failed (log %s)", log);
    /* resnet18's fc: one config, three directions at two mini-batches. */
    cr_expect_eq(tc_bed_count(&bed, "SELECT count(*) FROM matmul_results"), 6);
    cr_expect_eq(tc_bed_count(&bed, "SELECT count(*) FROM matmul_configs WHERE batch = 1 AND "
                                    "m = 1 AND n = 1000 AND k = 512 AND minibatch_in = 1 AND "
                                    "trans_b AND weight AND bias AND dtype = 'fp32'"),
                 1);
    cr_expect_eq(tc_bed_count(&bed, "SELECT count(DISTINCT (batch, direction)) FROM "
                                    "matmul_results WHERE algo = 'addmm' AND median_ms > 0 AND "
                                    "repetitions = array_length(samples_ms, 1)"),
                 6);
    cr_expect_eq(tc_bed_count(&bed, "SELECT count(*) FROM conv_results"), 0);
    cr_expect_eq(tc_bed_waiting(state), 0);
    char again[1200];
    snprintf(again, sizeof again, "%s/push-again.log", bed.dir);
    cr_expect_eq(tc_test_wait(tc_bed_push(&bed, state, file, again, NULL), 120000), 0);
    cr_expect(tc_test_file_contains(again, "0 stored"), "log %s", again);
    cr_expect_eq(tc_bed_count(&bed, "SELECT count(*) FROM matmul_results"), 6);
    tc_bed_fini(&bed);
}
