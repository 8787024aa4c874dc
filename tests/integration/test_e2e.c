/* The whole loop with the real binaries on this machine's CPU: `aggregator
 * serve` (CURVE keys, ZeroMQ on 127.0.0.1, the test PostgreSQL); `agent
 * run` benchmarks and traces a few tiny CNNs at 32 px on the cpu with one
 * thread; a second `agent run` with the same arguments measures nothing
 * new; `aggregator fit` fits the device; then `aggregator predict` for a
 * CNN never benchmarked queues BenchRequests, a running `agent serve` of
 * that device measures them, and predict prints the device's predictions.
 * Budgets are tiny: this checks the plumbing, not the accuracy. */
#include "tc_test.h"
#include "tc_test_transport.h"

#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define S_MODELS "squeezenet1_1,shufflenet_v2_x0_5,mnasnet0_5,resnet18"
#define S_HELD_OUT "torchvision:mobilenet_v2" /* never benchmarked nor traced */

static void s_slurp(const char *path, char *out, size_t size)
{
    out[0] = '\0';
    FILE *f = fopen(path, "r");
    if (!f)
        return;
    size_t n = fread(out, 1, size - 1, f);
    out[n] = '\0';
    fclose(f);
}

/* `agent run` as a user would type it; returns its exit status. */
static int s_agent_run(tc_bed_t *bed, const char *state, const char *log)
{
    char bin[1024];
    tc_test_binary("agent", bin, sizeof bin);
    const char *argv[] = {bin, "run", "--aggregator", bed->endpoint, "--state", state,
                          "--heartbeat", "1", "--ack-timeout", "3", "--timeout", "120",
                          "--device", "cpu", "--threads", "1", "--budget-ms", "20",
                          "--max-reps", "5", "--models", S_MODELS, "--batches", "2,4",
                          "--input-size", "32", "--warmup", "1", "--iters", "3",
                          "--repeats", "1", NULL};
    pid_t pid = tc_test_spawn(argv, log, NULL);
    return tc_test_wait(pid, 600000);
}

static long long s_counts(tc_bed_t *bed, long long out[3])
{
    out[0] = tc_bed_count(bed, "SELECT count(*) FROM conv_results");
    out[1] = tc_bed_count(bed, "SELECT count(*) FROM traces");
    /* Results only: every connection stores its Hello. */
    out[2] = tc_bed_count(bed, "SELECT count(*) FROM received_messages WHERE kind <> 'hello'");
    return out[0];
}

Test(e2e, run_fit_then_predict_an_unseen_cnn_through_a_serving_agent, .timeout = 900)
{
    tc_bed_t bed;
    tc_bed_init(&bed, "e2e", NULL);
    char state[1200];
    tc_bed_agent(&bed, "cpu1", true, state, sizeof state);
    tc_bed_start_server(&bed, NULL);
    char bin_agg[1024], cmd[8192], out[65536], log[1400], text[65536];
    tc_test_binary("aggregator", bin_agg, sizeof bin_agg);

    /* 1. Benchmark and trace four CNNs. */
    snprintf(log, sizeof log, "%s/run1.log", bed.dir);
    int st = s_agent_run(&bed, state, log);
    s_slurp(log, text, sizeof text);
    cr_assert_eq(st, 0, "agent run failed:\n%s", text);
    cr_assert(strstr(text, "0 rejected, 0 still waiting"), "%s", text);
    /* One device: the cpu with one thread, in benchmarks and traces alike,
     * and every message from the state directory's agent id. */
    cr_assert_eq(tc_bed_count(&bed, "SELECT count(*) FROM devices"), 1);
    cr_assert_eq(tc_bed_count(&bed, "SELECT count(*) FROM device_overview WHERE name LIKE "
                                    "'% (1 thread) [% | % | pytorch %]' AND conv_results > 0 "
                                    "AND traces = 8"),
                 1, "one device '<CPU> (1 thread) [allocator | BLAS | framework]' with the "
                    "benchmarks and the 8 traces");
    cr_assert_eq(tc_bed_count(&bed, "SELECT count(*) FROM traces WHERE status = 'ok'"), 8);
    char id_path[1300], agent_id[256];
    snprintf(id_path, sizeof id_path, "%s/agent_id", state);
    s_slurp(id_path, agent_id, sizeof agent_id);
    agent_id[strcspn(agent_id, "\n")] = '\0';
    char q[1024];
    snprintf(q, sizeof q,
             "SELECT count(*) FROM received_messages WHERE agent_id <> '%s'", agent_id);
    cr_assert_eq(tc_bed_count(&bed, q), 0, "every message carries the agent id %s", agent_id);
    long long before[3];
    s_counts(&bed, before);
    cr_assert_gt(before[0], 100, "conv results stored: %lld", before[0]);

    /* 2. The same run again measures and stores nothing new. */
    snprintf(log, sizeof log, "%s/run2.log", bed.dir);
    st = s_agent_run(&bed, state, log);
    s_slurp(log, text, sizeof text);
    cr_assert_eq(st, 0, "second agent run failed:\n%s", text);
    cr_assert(strstr(text, "results: 0 stored, 0 already stored"), "%s", text);
    long long after[3];
    s_counts(&bed, after);
    for (int i = 0; i < 3; i++)
        cr_assert_eq(after[i], before[i], "count %d went from %lld to %lld", i, before[i],
                     after[i]);

    /* 3. Fit the device. */
    snprintf(cmd, sizeof cmd, "%s fit --db '%s'", bin_agg, bed.dsn);
    cr_assert_eq(tc_test_run(cmd, out, sizeof out), 0, "aggregator fit:\n%s", out);
    cr_assert_eq(tc_bed_count(&bed, "SELECT count(*) FROM latest_fit"), 1, "%s", out);

    /* 4. An agent of that device takes jobs. */
    char bin_agent[1024], serve_log[1400];
    tc_test_binary("agent", bin_agent, sizeof bin_agent);
    snprintf(serve_log, sizeof serve_log, "%s/serve.log", bed.dir);
    const char *serve_argv[] = {bin_agent, "serve", "--aggregator", bed.endpoint, "--state",
                                state, "--heartbeat", "1", "--ack-timeout", "3", "--device",
                                "cpu", "--threads", "1", "--budget-ms", "20", "--max-reps",
                                "5", NULL};
    pid_t serve = tc_test_spawn(serve_argv, serve_log, NULL);
    cr_assert_eq(tc_bed_wait_count(&bed, "SELECT count(*) FROM devices_online", 1, 60000), 1,
                 "the serving agent's device never came online (log %s)", serve_log);

    /* 5. Predict a CNN nothing was measured for: its convs are benchmarked
     * by the serving agent on request, then predicted. */
    snprintf(cmd, sizeof cmd,
             "%s predict --db '%s' --gpu all --model %s --input-size 32 --batch 2,4 "
             "--wait 300 --format csv",
             bin_agg, bed.dsn, S_HELD_OUT);
    st = tc_test_run(cmd, out, sizeof out);
    s_slurp(serve_log, text, sizeof text);
    cr_assert_eq(st, 0, "aggregator predict:\n%s\nagent serve:\n%s", out, text);
    cr_assert(strstr(out, "asking 1 connected agent"), "%s", out);
    for (int b = 2; b <= 4; b += 2) {
        char row[128];
        snprintf(row, sizeof row, "\",ok,%d,", b); /* after the quoted alias */
        cr_assert(strstr(out, row), "no prediction at batch %d:\n%s", b, out);
    }
    cr_assert_eq(tc_bed_count(&bed, "SELECT count(*) FROM jobs WHERE kind = 'bench' AND "
                                    "state <> 'done'"),
                 0, "every bench job done:\n%s", text);
    cr_assert_geq(tc_bed_count(&bed, "SELECT count(*) FROM jobs"), 1);
    snprintf(q, sizeof q, "SELECT count(*) FROM jobs WHERE agent_id <> '%s'", agent_id);
    cr_assert_eq(tc_bed_count(&bed, q), 0);
    cr_assert(strstr(text, "conv benchmark job"), "%s", text);
    long long now[3];
    s_counts(&bed, now);
    cr_assert_gt(now[0], after[0], "the requested benchmarks were stored");
    cr_assert_eq(now[1], after[1], "no traces were asked for");

    /* Everything is there now: a second prediction asks for nothing. */
    long long jobs = tc_bed_count(&bed, "SELECT count(*) FROM jobs");
    snprintf(cmd, sizeof cmd,
             "%s predict --db '%s' --gpu all --model %s --input-size 32 --batch 2,4 --wait 0",
             bin_agg, bed.dsn, S_HELD_OUT);
    cr_assert_eq(tc_test_run(cmd, out, sizeof out), 0, "%s", out);
    cr_assert_eq(tc_bed_count(&bed, "SELECT count(*) FROM jobs"), jobs);

    cr_assert_eq(tc_test_stop(serve, SIGTERM), 0, "agent serve did not stop cleanly");
    cr_assert_eq(tc_bed_stop_server(&bed, SIGTERM), 0);
    tc_bed_fini(&bed);
}
