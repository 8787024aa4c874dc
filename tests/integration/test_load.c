/* Measurements taken while the machine was busy (agent/devices/hostload.h,
 * schema/011_load.sql): the agent measures what other processes use of the
 * machine (not its own processes), marks a benchmark taken beside a busy
 * process as disturbed, the store keeps the mark, and the fit leaves
 * disturbed traces out (or keeps them, when asked) and uses a disturbed
 * benchmark only where its measurement has no quiet one. Run alone
 * (RUN_SERIAL): the load figures read the whole machine. */
#include "fit.h"
#include "hostload.h"
#include "store.h"
#include "store_fit.h"

#include "tc_error.h"
#include "tc_test.h"
#include "tc_test_proc.h"
#include "tc_test_synth.h"

#include <criterion/criterion.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* A process that keeps one CPU busy until killed, and is no descendant of
 * this one (forked twice, its parent gone): someone else's work. */
static pid_t s_hog(void)
{
    int fds[2];
    cr_assert_eq(pipe(fds), 0);
    pid_t mid = fork();
    cr_assert(mid >= 0);
    if (mid == 0) {
        pid_t hog = fork();
        if (hog == 0) {
            close(fds[0]);
            close(fds[1]);
            for (volatile unsigned long x = 0;; x++)
                ;
        }
        if (write(fds[1], &hog, sizeof hog) != (ssize_t)sizeof hog)
            _exit(1);
        _exit(0);
    }
    close(fds[1]);
    pid_t hog = -1;
    cr_assert_eq(read(fds[0], &hog, sizeof hog), (ssize_t)sizeof hog);
    close(fds[0]);
    waitpid(mid, NULL, 0);
    return hog;
}

static void s_stop(pid_t pid)
{
    kill(pid, SIGKILL);
}

static void s_spin_ms(int ms)
{
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    do
        clock_gettime(CLOCK_MONOTONIC, &b);
    while ((b.tv_sec - a.tv_sec) * 1000 + (b.tv_nsec - a.tv_nsec) / 1000000 < ms);
}

Test(load, others_are_counted_and_the_agents_own_work_is_not, .timeout = 60)
{
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    /* This process busy on one CPU: its own tree, not others. */
    tc_load_mark_t a;
    tc_load_t own, hog;
    tc_load_mark(&a);
    cr_assert(a.ok, "no /proc/stat here");
    s_spin_ms(1500);
    tc_load_since(&a, TC_LOAD_MIN_S, &own);
    cr_assert(own.known);
    cr_expect_lt(own.others_pct, 0.6 * 100.0 / (double)cpus,
                 "this process's own CPU time counted as others: %.1f %% of %ld CPUs",
                 own.others_pct, cpus);
    /* A busy process of someone else's: about one CPU's share. */
    pid_t pid = s_hog();
    tc_test_sleep_ms(200);
    tc_load_mark(&a);
    tc_test_sleep_ms(1500);
    tc_load_since(&a, TC_LOAD_MIN_S, &hog);
    s_stop(pid);
    cr_expect_gt(hog.others_pct, 0.7 * 100.0 / (double)cpus,
                 "a busy process read %.1f %% of %ld CPUs", hog.others_pct, cpus);
    tc_quiet_t q = tc_quiet_defaults();
    cr_expect(tc_quiet_disturbed(&q, &hog));
    q.threshold_pct = 100;
    cr_expect_not(tc_quiet_disturbed(&q, &hog), "a threshold of 100 %% turns the guard off");
}

/* A block of a few milliseconds, the first of its process (no earlier mark
 * to read back to): read over the tick window all the same, not over the
 * tick or two that land in it by chance. */
Test(load, a_short_first_block_is_read_over_the_tick_window, .timeout = 60)
{
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    pid_t pid = s_hog();
    tc_test_sleep_ms(200);
    tc_load_mark_t a;
    tc_load_t l;
    tc_load_mark(&a);
    cr_assert(a.ok, "no /proc/stat here");
    s_spin_ms(5);
    tc_load_since(&a, TC_LOAD_MIN_S, &l);
    s_stop(pid);
    cr_assert(l.known);
    cr_expect_geq(l.seconds, TC_LOAD_MIN_S, "read over %.3f s", l.seconds);
    cr_expect_gt(l.others_pct, 0.7 * 100.0 / (double)cpus,
                 "a busy process read %.1f %% of %ld CPUs over %.3f s", l.others_pct, cpus,
                 l.seconds);
}

Test(load, a_benchmark_beside_a_busy_process_is_marked_and_stored, .timeout = 300)
{
    char agent[1024], cmd[3072], out[65536];
    tc_test_binary("agent", agent, sizeof agent);
    pid_t pid = s_hog();
    tc_test_sleep_ms(200);
    /* The guard on, waiting a second at most: measured under load, marked. */
    char text[65536];
    snprintf(cmd, sizeof cmd,
             "TRAINCAST_QUIET_PCT=10 TRAINCAST_QUIET_WAIT_S=1 %s bench-conv --device cpu "
             "--threads 1 --n 4 --c 32 --h 28 --w 28 --k 32 --r 3 --pad 1 --direction fwd "
             "--budget-ms 300 2>&1",
             agent);
    int st2 = tc_test_run(cmd, text, sizeof text);
    s_stop(pid);
    cr_assert_eq(st2, 0, "%s", text);
    cr_expect(strstr(text, "DISTURBED: over the quiet threshold") != NULL, "%s", text);
    cr_expect(strstr(text, "waiting up to 1 s for it to be quiet") ||
                  strstr(text, "measuring on without waiting"),
              "%s", text);
    /* The threshold is checked and named. */
    snprintf(cmd, sizeof cmd, "%s bench-conv --quiet-threshold 101 --n 1 --c 4 --h 4 --w 4 "
                              "--k 4 --r 1 2>&1",
             agent);
    cr_expect_eq(tc_test_run(cmd, out, sizeof out), 2, "%s", out);
    cr_expect(strstr(out, "--quiet-threshold must be a share of the machine between 0 and 100") !=
                  NULL,
              "%s", out);
}

/* Every conv result `where` selects measured again a second later, its
 * times `scale`d (an SQL operator and operand), with the columns `cols` set
 * to `vals`. */
static void s_measure_again(tc_store_t *st, const char *scale, const char *cols,
                            const char *vals, const char *where)
{
    char sql[2048], v[64];
    snprintf(sql, sizeof sql,
             "INSERT INTO conv_results (message_id, seq, device_id, config_id, batch, "
             "direction, policy, backend, algo, algo_id, median_ms, min_ms, max_ms, stddev_ms, "
             "repetitions, workspace_bytes, measured_at, %s) SELECT message_id, seq + 1000, "
             "device_id, config_id, batch, direction, policy, backend, algo, algo_id, median_ms "
             "%s, min_ms %s, max_ms %s, stddev_ms, repetitions, workspace_bytes, measured_at + "
             "interval '1 second', %s FROM conv_results %s",
             cols, scale, scale, scale, vals, where);
    cr_assert_eq(tc_store_exec(st, sql, v, sizeof v), 0, "%s", tc_errmsg());
}

/* The fit's view of disturbed measurements: traces left out (or kept),
 * benchmarks used only where there is no quiet one. */
Test(load, the_fit_leaves_disturbed_measurements_out, .timeout = 120)
{
    tc_store_t *st = tc_synth_fresh_db("tc_test_load");
    tc_synth_populate(st);
    char id[64], sql[1024], v[64];
    tc_synth_model_id(4, id, sizeof id);
    /* cnn4's traces were taken beside a busy process: slow and marked. */
    snprintf(sql, sizeof sql,
             "UPDATE traces SET disturbed = true, median_ms = median_ms * 5, "
             "load_others_pct = 48 WHERE model_id = '%s'",
             id);
    cr_assert_eq(tc_store_exec(st, sql, v, sizeof v), 0, "%s", tc_errmsg());
    char *dev[] = {"synth-a"};
    tc_fit_group_t *g = NULL;
    size_t n = 0;
    cr_assert_eq(tc_store_fit_groups(st, dev, 1, TC_FIT_STAT_MEDIAN, false, &g, &n), 0, "%s",
                 tc_errmsg());
    cr_assert_eq(n, 1u);
    cr_expect_eq(g[0].disturbed_traces, (size_t)TC_SYNTH_N_BATCHES);
    double conv_quiet[16] = {0};
    for (size_t i = 0; i < g[0].n_points; i++) {
        cr_expect(strcmp(g[0].points[i].model_id, id) != 0, "a disturbed trace was fitted");
        conv_quiet[i] = g[0].points[i].conv_ms;
    }
    size_t kept_points = g[0].n_points;
    tc_fit_groups_free(&g, n);
    cr_assert_eq(tc_store_fit_groups(st, dev, 1, TC_FIT_STAT_MEDIAN, true, &g, &n), 0, "%s",
                 tc_errmsg());
    cr_expect_eq(g[0].n_points, kept_points + TC_SYNTH_N_BATCHES, "--include-disturbed");
    tc_fit_groups_free(&g, n);

    /* A newer benchmark of every measurement, ten times slower, disturbed:
     * the quiet ones still decide. */
    s_measure_again(st, "* 10", "disturbed, load_others_pct", "true, 51",
                    "WHERE measured_at > now() - interval '1 hour'");
    cr_assert_eq(tc_store_fit_groups(st, dev, 1, TC_FIT_STAT_MEDIAN, false, &g, &n), 0, "%s",
                 tc_errmsg());
    cr_expect_gt(g[0].disturbed_benchmarks, 0u);
    for (size_t i = 0; i < g[0].n_points; i++)
        cr_expect(fabs(g[0].points[i].conv_ms - conv_quiet[i]) < 1e-9 * conv_quiet[i],
                  "point %zu: conv sum %g, %g without the disturbed benchmarks", i,
                  g[0].points[i].conv_ms, conv_quiet[i]);
    tc_fit_groups_free(&g, n);
    /* With no quiet one left, a disturbed benchmark is all there is: used. */
    cr_assert_eq(tc_store_exec(st, "UPDATE conv_results SET disturbed = true", v, sizeof v), 0,
                 "%s", tc_errmsg());
    cr_assert_eq(tc_store_fit_groups(st, dev, 1, TC_FIT_STAT_MEDIAN, false, &g, &n), 0, "%s",
                 tc_errmsg());
    for (size_t i = 0; i < g[0].n_points; i++)
        cr_expect_gt(g[0].points[i].conv_ms, 2 * conv_quiet[i], "point %zu", i);
    tc_fit_groups_free(&g, n);
    /* And the SQL of analysts sees it. */
    cr_expect_gt(tc_synth_count(st, "SELECT disturbed FROM measurement_load WHERE device = "
                                    "'synth-a' AND kind = 'trace'"),
                 0);
    tc_store_destroy(&st);
}

/* A result the agent measured again at the end of its plan, because the
 * host's canary read slow around it only against the run's later readings
 * (agent/bench/bench_run.c), went out unmarked; the new result names it
 * (supersedes_at), and the fit counts it as disturbed: the new one alone
 * decides, and the count of disturbed benchmarks includes it. */
Test(load, a_superseded_benchmark_counts_as_disturbed, .timeout = 120)
{
    tc_store_t *st = tc_synth_fresh_db("tc_test_load_superseded");
    tc_synth_populate(st);
    char *dev[] = {"synth-a"};
    tc_fit_group_t *g = NULL;
    size_t n = 0;
    cr_assert_eq(tc_store_fit_groups(st, dev, 1, TC_FIT_STAT_MEDIAN, false, &g, &n), 0, "%s",
                 tc_errmsg());
    double before[16] = {0};
    size_t n_points = g[0].n_points, disturbed = g[0].disturbed_benchmarks;
    cr_assert_leq(n_points, 16u);
    for (size_t i = 0; i < n_points; i++)
        before[i] = g[0].points[i].conv_ms;
    tc_fit_groups_free(&g, n);
    /* Every benchmark measured again a second later at half its time, each
     * naming the one it supersedes. */
    s_measure_again(st, "/ 2", "supersedes_at, canary_ms", "measured_at, 0.5", "");
    /* The SQL of analysts counts them too. */
    cr_expect_eq(tc_synth_count(st, "SELECT superseding FROM measurement_load WHERE device = "
                                    "'synth-a' AND kind = 'conv benchmark'"),
                 tc_synth_count(st, "SELECT count(*) FROM conv_results r JOIN devices d USING "
                                    "(device_id) WHERE d.name = 'synth-a' AND r.supersedes_at "
                                    "IS NOT NULL"));
    cr_expect_eq(tc_synth_count(st, "SELECT disturbed FROM measurement_load WHERE device = "
                                    "'synth-a' AND kind = 'conv benchmark'"),
                 tc_synth_count(st, "SELECT count(*) FROM conv_results r JOIN devices d USING "
                                    "(device_id) WHERE d.name = 'synth-a' AND (r.disturbed OR "
                                    "r.supersedes_at IS NULL)"),
                 "every first result superseded, and the disturbed ones");
    /* And `aggregator status` counts them as the view does. */
    char out[8192], line[256];
    cr_assert_eq(tc_synth_aggregator("status --section stored --format csv", out, sizeof out), 0,
                 "%s", out);
    snprintf(line, sizeof line,
             "\nconv results disturbed or superseded (used only where no quiet one is),%ld\n",
             tc_synth_count(st, "SELECT sum(disturbed) FROM measurement_load WHERE kind = "
                                "'conv benchmark'"));
    cr_expect(strstr(out, line), "no line%s in:\n%s", line, out);
    cr_assert_eq(tc_store_fit_groups(st, dev, 1, TC_FIT_STAT_MEDIAN, false, &g, &n), 0, "%s",
                 tc_errmsg());
    cr_assert_eq(g[0].n_points, n_points);
    cr_expect_gt(g[0].disturbed_benchmarks, disturbed, "the superseded ones are counted");
    for (size_t i = 0; i < n_points; i++)
        cr_expect(fabs(g[0].points[i].conv_ms - before[i] / 2) < 1e-9 * before[i],
                  "point %zu: conv sum %g, the new benchmarks' %g", i, g[0].points[i].conv_ms,
                  before[i] / 2);
    tc_fit_groups_free(&g, n);
    tc_store_destroy(&st);
}
