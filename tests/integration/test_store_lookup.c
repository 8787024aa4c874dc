/* Predict's conv look-up (tc_store_conv_lookup) against a real server: the
 * statistic of tc_fit_conv_time over the most recent benchmarks, exactly as
 * PostgreSQL's percentile_cont takes it, every batch
 * of a config answered by one group, items asked twice, devices apart. */
#include "store.h"
#include "store_lookup.h"
#include "store_model.h"
#include "tc_error.h"
#include "tc_test.h"
#include "tc_test_synth.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static tc_store_t *s_store;

static void s_sql(const char *sql)
{
    cr_assert_eq(tc_store_exec(s_store, sql, NULL, 0), 0, "%s: %s", sql, tc_errmsg());
}

/* Two CPU devices, one config (c8 8x8 k8 3x3 p1) and results:
 *   "cpu A" fwd batch 4: seven benchmarks, hourly; the five most recent are
 *           3, 5, 9, 4, 8 ms (median 5); the two oldest 100 ms (not counted);
 *   "cpu A" fwd batch 8: 20 ms now and 1 ms ten hours ago (superseded);
 *   "cpu A" bwd_data batch 4: 7 ms;
 *   "cpu B" fwd batch 4: 2 ms.
 * Nothing at batch 16. */
static void s_setup(void)
{
    char dsn[1024];
    tc_test_fresh_db("store_lookup", dsn, sizeof dsn);
    cr_assert_eq(tc_store_open(dsn, &s_store), 0, "%s", tc_errmsg());
    int applied = 0;
    cr_assert_eq(tc_store_migrate(s_store, &applied), 0, "%s", tc_errmsg());
    s_sql("INSERT INTO devices (device_id, uuid, kind, name) VALUES "
          "(1, 'u-a', 'cpu', 'cpu A'), (2, 'u-b', 'cpu', 'cpu B')");
    s_sql("INSERT INTO conv_configs (config_id, c, h, w, k, r, s, pad_h, pad_w, stride_h, "
          "stride_w, dilation_h, dilation_w, groups, dtype, layout, bias) VALUES "
          "(1, 8, 8, 8, 8, 3, 3, 1, 1, 1, 1, 1, 1, 1, 'fp32', 'nchw', false)");
    s_sql("INSERT INTO conv_results (message_id, seq, device_id, config_id, batch, direction, "
          "policy, algo, median_ms, min_ms, max_ms, stddev_ms, repetitions, measured_at) "
          "SELECT 'm', row_number() OVER (), d, 1, b, dir, 'heuristic', 'x', ms, ms, ms, "
          "ms / 10, 5, now() - make_interval(hours => age) FROM (VALUES "
          "(1, 4, 'fwd', 100.0, 6), (1, 4, 'fwd', 100.0, 5), (1, 4, 'fwd', 3.0, 4), "
          "(1, 4, 'fwd', 5.0, 3), (1, 4, 'fwd', 9.0, 2), (1, 4, 'fwd', 4.0, 1), "
          "(1, 4, 'fwd', 8.0, 0), (1, 8, 'fwd', 20.0, 0), (1, 8, 'fwd', 1.0, 10), "
          "(1, 4, 'bwd_data', 7.0, 0), (2, 4, 'fwd', 2.0, 0)) "
          "AS v (d, b, dir, ms, age)");
}

static void s_teardown(void)
{
    tc_store_destroy(&s_store);
}

TestSuite(store_lookup, .init = s_setup, .fini = s_teardown, .timeout = 120);

static tc_conv_lookup_t s_item(unsigned batch, Traincast__V1__Direction dir)
{
    tc_conv_lookup_t it = {0};
    it.config = tc_conv_config_default();
    it.config.n = batch;
    it.config.c = it.config.k = it.config.h = it.config.w = 8;
    it.config.r = it.config.s = 3;
    it.config.pad_h = it.config.pad_w = 1;
    it.direction = dir;
    return it;
}

#define FWD TRAINCAST__V1__DIRECTION__DIRECTION_FWD
#define BWD_DATA TRAINCAST__V1__DIRECTION__DIRECTION_BWD_DATA

Test(store_lookup, the_statistic_of_the_recent_benchmarks_for_every_batch_and_device)
{
    /* Out of order, one item asked twice, one never measured. */
    tc_conv_lookup_t a[] = {s_item(16, FWD), s_item(8, FWD), s_item(4, BWD_DATA),
                            s_item(4, FWD), s_item(8, FWD)};
    tc_conv_lookup_t b[] = {s_item(4, FWD), s_item(4, BWD_DATA)};
    tc_conv_lookup_set_t sets[] = {
        {.device = "cpu A", .policy = "heuristic", .stat = TC_FIT_STAT_MEDIAN, .items = a, .n = 5},
        {.device = "cpu B", .policy = "heuristic", .stat = TC_FIT_STAT_MEDIAN, .items = b, .n = 2},
    };
    cr_assert_eq(tc_store_conv_lookup(s_store, sets, 2), 0, "%s", tc_errmsg());
    cr_assert(isnan(a[0].median_ms), "batch 16 was never measured");
    cr_assert_float_eq(a[1].median_ms, 20.0, 1e-9, "the benchmark 10 h older is superseded");
    cr_assert_float_eq(a[4].median_ms, 20.0, 1e-9, "the item asked twice is answered twice");
    cr_assert_float_eq(a[2].median_ms, 7.0, 1e-9);
    cr_assert_float_eq(a[3].median_ms, 5.0, 1e-9, "median of the five most recent");
    cr_assert_float_eq(a[3].stddev_ms, 0.5, 1e-9);
    cr_assert_eq(sets[0].missing, 1);
    cr_assert_float_eq(b[0].median_ms, 2.0, 1e-9, "cpu B's own benchmark");
    cr_assert(isnan(b[1].median_ms));
    cr_assert_eq(sets[1].missing, 1);
}

Test(store_lookup, min_and_p10_follow_the_fit_statistic)
{
    tc_conv_lookup_t lo[] = {s_item(4, FWD)}, p10[] = {s_item(4, FWD)};
    tc_conv_lookup_set_t sets[] = {
        {.device = "cpu A", .policy = "heuristic", .stat = TC_FIT_STAT_MIN, .items = lo, .n = 1},
        {.device = "cpu A", .policy = "heuristic", .stat = TC_FIT_STAT_P10, .items = p10, .n = 1},
    };
    cr_assert_eq(tc_store_conv_lookup(s_store, sets, 2), 0, "%s", tc_errmsg());
    cr_assert_float_eq(lo[0].median_ms, 3.0, 1e-9, "the smallest of the five, not the 100s");
    /* percentile_cont(0.1) of 3, 4, 5, 8, 9: 3 + 0.4 * (4 - 3). */
    cr_assert_float_eq(p10[0].median_ms, 3.4, 1e-9);
}

Test(store_lookup, a_skipped_item_is_neither_looked_up_nor_missing)
{
    tc_conv_lookup_t a[] = {s_item(4, FWD), s_item(8, FWD)};
    a[1].skip = true;
    tc_conv_lookup_set_t set = {
        .device = "cpu A", .policy = "heuristic", .stat = TC_FIT_STAT_MEDIAN, .items = a, .n = 2};
    cr_assert_eq(tc_store_conv_lookup(s_store, &set, 1), 0, "%s", tc_errmsg());
    cr_assert_float_eq(a[0].median_ms, 5.0, 1e-9);
    cr_assert(isnan(a[1].median_ms), "measured, but skipped");
    cr_assert_eq(set.missing, 0);
}

Test(store_lookup, another_policy_finds_nothing)
{
    tc_conv_lookup_t a[] = {s_item(4, FWD)};
    tc_conv_lookup_set_t set = {
        .device = "cpu A", .policy = "exhaustive", .stat = TC_FIT_STAT_MEDIAN, .items = a, .n = 1};
    cr_assert_eq(tc_store_conv_lookup(s_store, &set, 1), 0, "%s", tc_errmsg());
    cr_assert(isnan(a[0].median_ms));
    cr_assert_eq(set.missing, 1);
}

/* The statistic as PostgreSQL computes it (percentile_cont and window
 * functions, the SQL form the look-up once had): the reference the look-up's
 * own (tc_fit_conv_time) must meet exactly, on random benchmarks with ties
 * in time and unknown times, at batches 32..71. */
Test(store_lookup, the_statistic_is_exactly_the_one_postgresql_computes)
{
    s_sql("SELECT setseed(0.42)");
    s_sql("INSERT INTO conv_results (message_id, seq, device_id, config_id, batch, direction, "
          "policy, algo, median_ms, min_ms, max_ms, stddev_ms, repetitions, measured_at) "
          "SELECT 'rand', row_number() OVER (), 1, 1, b, 'fwd', 'heuristic', 'x', ms, ms, ms, "
          "sd, 5, at FROM (SELECT b, 0.1 + random() * 10 AS ms, "
          "  random() AS sd, "
          "  CASE WHEN random() < 0.15 THEN NULL ELSE timestamptz '2026-01-01 00:00Z' "
          "    + make_interval(hours => floor(random() * 12)::int) END AS at "
          "  FROM generate_series(32, 71) b "
          "  CROSS JOIN LATERAL generate_series(1, 1 + floor(random() * 9)::int + 0 * b) i) v");
    /* Per batch "batch min p10 median stddev geomean" (NaN: no spread),
     * ';'-joined, each double in its shortest exact form. */
    char ref[8192];
    cr_assert_eq(tc_store_exec(s_store,
                               "SELECT string_agg(concat_ws(' ', batch, lo, p10, p50, "
                               "  coalesce(sd::text, 'NaN'), geo), ';' ORDER BY batch) "
                               "FROM (SELECT x.batch, min(x.median_ms) AS lo, "
                               "percentile_cont(0.1) WITHIN GROUP (ORDER BY x.median_ms) AS p10, "
                               "percentile_cont(0.5) WITHIN GROUP (ORDER BY x.median_ms) AS p50, "
                               "percentile_cont(0.5) WITHIN GROUP (ORDER BY x.stddev_ms) AS sd, "
                               "exp(avg(ln(x.median_ms))) AS geo "
                               "FROM (SELECT r.batch, r.median_ms, r.stddev_ms, r.measured_at, "
                               "  row_number() OVER (PARTITION BY r.batch "
                               "  ORDER BY r.measured_at DESC NULLS LAST, r.result_id DESC) "
                               "  AS recent, max(r.measured_at) OVER (PARTITION BY r.batch) "
                               "  AS newest FROM conv_results r WHERE r.device_id = 1 "
                               "  AND r.config_id = 1 AND r.direction = 'fwd' "
                               "  AND r.batch >= 32) x "
                               "WHERE x.recent <= 5 AND (x.newest IS NULL "
                               "  OR x.measured_at IS NULL "
                               "  OR x.measured_at >= x.newest - interval '6 hours') "
                               "GROUP BY x.batch) s",
                               ref, sizeof ref),
                 0, "%s", tc_errmsg());
    enum { N = 40 };
    tc_conv_lookup_t items[TC_FIT_STAT_COUNT][N];
    tc_conv_lookup_set_t sets[TC_FIT_STAT_COUNT];
    for (int k = 0; k < TC_FIT_STAT_COUNT; k++) {
        for (unsigned b = 0; b < N; b++)
            items[k][b] = s_item(32 + b, FWD);
        sets[k] = (tc_conv_lookup_set_t){.device = "cpu A", .policy = "heuristic",
                                         .stat = (tc_fit_stat_t)k, .items = items[k], .n = N};
    }
    cr_assert_eq(tc_store_conv_lookup(s_store, sets, TC_FIT_STAT_COUNT), 0, "%s", tc_errmsg());
    const char *p = ref;
    for (unsigned b = 0; b < N; b++) {
        char *end;
        long batch = strtol(p, &end, 10);
        double lo = strtod(end, &end), p10 = strtod(end, &end), p50 = strtod(end, &end);
        double sd = strtod(end, &end), geo = strtod(end, &end);
        cr_assert_eq(batch, 32 + (long)b, "the reference answers every batch: %s", ref);
        cr_assert_eq(items[TC_FIT_STAT_MIN][b].median_ms, lo, "batch %ld min", batch);
        cr_assert_eq(items[TC_FIT_STAT_P10][b].median_ms, p10, "batch %ld p10: %.17g, %.17g",
                     batch, items[TC_FIT_STAT_P10][b].median_ms, p10);
        cr_assert_eq(items[TC_FIT_STAT_MEDIAN][b].median_ms, p50, "batch %ld median", batch);
        /* The logs summed in another order: equal to within rounding. */
        cr_assert(fabs(items[TC_FIT_STAT_GEOMEAN][b].median_ms - geo) <= 1e-12 * geo,
                  "batch %ld geometric mean: %.17g, %.17g", batch,
                  items[TC_FIT_STAT_GEOMEAN][b].median_ms, geo);
        double got = items[TC_FIT_STAT_MEDIAN][b].stddev_ms;
        cr_assert(got == sd || (isnan(got) && isnan(sd)), "batch %ld spread: %.17g, %.17g",
                  batch, got, sd);
        p = *end == ';' ? end + 1 : end;
    }
}


/* 200 more configs (k = 101..300), each measured once for "cpu A", fwd at
 * batch 4, in k - 100 ms. */
static void s_many_configs(void)
{
    s_sql("INSERT INTO conv_configs (config_id, c, h, w, k, r, s, pad_h, pad_w, stride_h, "
          "stride_w, dilation_h, dilation_w, groups, dtype, layout, bias) "
          "SELECT i + 1, 8, 8, 8, 100 + i, 3, 3, 1, 1, 1, 1, 1, 1, 1, 'fp32', 'nchw', false "
          "FROM generate_series(1, 200) i");
    s_sql("INSERT INTO conv_results (message_id, seq, device_id, config_id, batch, direction, "
          "policy, algo, median_ms, min_ms, max_ms, stddev_ms, repetitions, measured_at) "
          "SELECT 'many', i, 1, i + 1, 4, 'fwd', 'heuristic', 'x', i, i, i, 0, 5, now() "
          "FROM generate_series(1, 200) i");
}

/* Client connections to the test's database (autovacuum workers aside). */
static long s_connections(void)
{
    return tc_synth_count(s_store, "SELECT count(*) FROM pg_stat_activity "
                                   "WHERE datname = current_database() "
                                   "AND backend_type = 'client backend'");
}

/* Look up the 200 configs of s_many_configs and the first config's two
 * directions (202 groups), checking every answer; returns how many
 * connections of the store's database are open afterwards. */
static long s_look_up_many(void)
{
    tc_conv_lookup_t items[202];
    for (unsigned i = 0; i < 200; i++) {
        items[i] = s_item(4, FWD);
        items[i].config.k = 101 + i;
    }
    items[200] = s_item(4, FWD);
    items[201] = s_item(4, BWD_DATA);
    tc_conv_lookup_set_t set = {.device = "cpu A", .policy = "heuristic",
                                .stat = TC_FIT_STAT_MEDIAN, .items = items, .n = 202};
    cr_assert_eq(tc_store_conv_lookup(s_store, &set, 1), 0, "%s", tc_errmsg());
    for (unsigned i = 0; i < 200; i++)
        cr_assert_float_eq(items[i].median_ms, i + 1.0, 1e-9, "config k%u", 101 + i);
    cr_assert_float_eq(items[200].median_ms, 5.0, 1e-9);
    cr_assert_float_eq(items[201].median_ms, 7.0, 1e-9);
    cr_assert_eq(set.missing, 0);
    return s_connections();
}

Test(store_lookup, a_large_look_up_is_split_over_two_connections_and_answers_every_item)
{
    s_many_configs();
    cr_assert_eq(s_look_up_many(), 2, "the store's connection and its second one");
    cr_assert_eq(s_look_up_many(), 2, "the second connection is kept, not opened again");
}

Test(store_lookup, inside_a_transaction_a_large_look_up_sees_its_own_rows)
{
    s_sql("BEGIN");
    s_many_configs(); /* not committed: a second connection would not see them */
    cr_assert_eq(s_look_up_many(), 1, "one connection inside a transaction");
    s_sql("ROLLBACK");
}

Test(store_lookup, a_second_connection_begun_early_is_used)
{
    s_many_configs();
    tc_store_side_begin(s_store);
    tc_store_side_begin(s_store); /* once */
    cr_assert_eq(s_look_up_many(), 2);
}

Test(store_lookup, a_lost_second_connection_is_replaced_without_an_error)
{
    s_many_configs();
    cr_assert_eq(s_look_up_many(), 2);
    /* End the second connection's server process, as a restart would. */
    s_sql("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
          "WHERE datname = current_database() AND pid <> pg_backend_pid() "
          "AND backend_type = 'client backend'");
    /* pg_terminate_backend only signals: wait until the process has gone,
     * or the next look-up may still be answered by it. */
    long n = s_connections();
    for (int i = 0; i < 100 && n != 1; i++) {
        usleep(50 * 1000);
        n = s_connections();
    }
    cr_assert_eq(n, 1, "the second connection's process did not end");
    cr_assert_eq(s_look_up_many(), 1, "its share ran on the store's connection");
    cr_assert_eq(s_look_up_many(), 2, "and the next look-up opened a new one");
}

/* Matmul benchmarks are looked up beside the convs, in the same sets, by
 * the same rule: a Linear 64 -> 32 on 10 rows, "cpu A" fwd at mini-batch 4
 * three times (2, 6, 4 ms: median 4), bwd_filter at 4 once (3 ms); "cpu B"
 * fwd at 4 once (1 ms). */
Test(store_lookup, matmuls_beside_convs)
{
    s_sql("INSERT INTO matmul_configs (config_id, batch, m, n, k, minibatch_in, trans_a, "
          "trans_b, weight, bias, dtype) VALUES (1, 1, 10, 32, 64, 1, false, true, true, true, "
          "'fp32')");
    s_sql("INSERT INTO matmul_results (message_id, seq, device_id, config_id, batch, direction, "
          "policy, algo, median_ms, min_ms, max_ms, stddev_ms, repetitions, measured_at) "
          "SELECT 'mm', row_number() OVER (), d, 1, 4, dir, 'heuristic', 'addmm', ms, ms, ms, "
          "ms / 10, 5, now() - make_interval(hours => age) FROM (VALUES "
          "(1, 'fwd', 2.0, 2), (1, 'fwd', 6.0, 1), (1, 'fwd', 4.0, 0), "
          "(1, 'bwd_filter', 3.0, 0), (2, 'fwd', 1.0, 0)) AS v (d, dir, ms, age)");
    tc_conv_lookup_t mm = {.kind = TC_OP_MATMUL};
    mm.matmul = tc_matmul_config_default();
    mm.matmul.m = 10, mm.matmul.n = 32, mm.matmul.k = 64;
    mm.matmul.trans_b = mm.matmul.weight = mm.matmul.bias = true;
    mm.matmul.minibatch = 4;
    mm.direction = FWD;
    tc_conv_lookup_t a[5] = {mm, s_item(4, FWD), mm, mm, mm};
    a[2].direction = TRAINCAST__V1__DIRECTION__DIRECTION_BWD_FILTER;
    a[3].matmul.minibatch = 8; /* never measured */
    a[4].matmul.bias = false;  /* another config */
    tc_conv_lookup_t b[1] = {mm};
    tc_conv_lookup_set_t sets[] = {
        {.device = "cpu A", .policy = "heuristic", .stat = TC_FIT_STAT_MEDIAN, .items = a, .n = 5},
        {.device = "cpu B", .policy = "heuristic", .stat = TC_FIT_STAT_MEDIAN, .items = b, .n = 1},
    };
    cr_assert_eq(tc_store_conv_lookup(s_store, sets, 2), 0, "%s", tc_errmsg());
    cr_expect_float_eq(a[0].median_ms, 4.0, 1e-9, "median of the three");
    cr_expect_float_eq(a[1].median_ms, 5.0, 1e-9, "the conv beside it as before");
    cr_expect_float_eq(a[2].median_ms, 3.0, 1e-9);
    cr_expect(isnan(a[3].median_ms), "mini-batch 8 was never measured");
    cr_expect(isnan(a[4].median_ms), "a config without the bias is another");
    cr_expect_eq(sets[0].missing, 2);
    cr_expect_float_eq(b[0].median_ms, 1.0, 1e-9, "cpu B's own benchmark");
    cr_expect_eq(sets[1].missing, 0);
}
