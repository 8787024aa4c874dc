/* tc_fit_conv_time: how a conv measurement's benchmarks become its time,
 * the rule fit and predict share. Worked cases, then random sets against a
 * naive reference that follows the rule's words step by step. */
#include "fit.h"

#include "tc_test_rng.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define HOUR (3600 * INT64_C(1000000))

static tc_fit_repeat_t s_rep(double ms, int64_t at, int64_t id)
{
    return (tc_fit_repeat_t){.median_ms = ms, .stddev_ms = ms / 10, .measured_us = at, .id = id};
}

static double s_time(tc_fit_repeat_t *r, size_t n, tc_fit_stat_t stat, double *sd)
{
    double ms, dummy;
    tc_fit_conv_time(r, n, stat, &ms, sd ? sd : &dummy);
    return ms;
}

Test(conv_time, the_five_most_recent_count_and_older_ones_do_not, .timeout = 10)
{
    /* Seven hourly benchmarks, given oldest last: the two oldest are 100 ms. */
    tc_fit_repeat_t r[] = {s_rep(8, 10 * HOUR, 7), s_rep(4, 9 * HOUR, 6), s_rep(100, 4 * HOUR, 1),
                           s_rep(9, 8 * HOUR, 5),  s_rep(5, 7 * HOUR, 4), s_rep(3, 6 * HOUR, 3),
                           s_rep(100, 5 * HOUR, 2)};
    double sd;
    cr_expect_eq(s_time(r, 7, TC_FIT_STAT_MEDIAN, &sd), 5.0); /* of 3 4 5 8 9 */
    cr_expect_eq(sd, 0.5);
    cr_expect_eq(s_time(r, 7, TC_FIT_STAT_MIN, NULL), 3.0);
    /* p10 of 3 4 5 8 9: rank 0.4 between 3 and 4 */
    cr_expect_float_eq(s_time(r, 7, TC_FIT_STAT_P10, NULL), 3.4, 1e-12);
    /* the geometric mean of 3 4 5 8 9: 4320^(1/5) */
    cr_expect_float_eq(s_time(r, 7, TC_FIT_STAT_GEOMEAN, NULL), pow(4320.0, 0.2), 1e-12);
}

Test(conv_time, the_geometric_mean_averages_the_logs_of_the_positive_times, .timeout = 10)
{
    /* 1, 2 and 4 ms: the logs' mean is log 2, where the median is 2 as well
     * and the arithmetic mean 7/3; 0.5 and 8 ms pull it to 2 too. */
    tc_fit_repeat_t r[] = {s_rep(1, 3, 1), s_rep(2, 2, 2), s_rep(4, 1, 3)};
    cr_expect_float_eq(s_time(r, 3, TC_FIT_STAT_GEOMEAN, NULL), 2.0, 1e-12);
    tc_fit_repeat_t q[] = {s_rep(0.5, 2, 1), s_rep(8, 1, 2)};
    cr_expect_float_eq(s_time(q, 2, TC_FIT_STAT_GEOMEAN, NULL), 2.0, 1e-12);
    /* A time of 0 (no log) is left out, as the database's ln() > 0 filter
     * does; all 0 gives the median, 0. */
    tc_fit_repeat_t z[] = {s_rep(0, 2, 1), s_rep(9, 1, 2), s_rep(1, 3, 3)};
    cr_expect_float_eq(s_time(z, 3, TC_FIT_STAT_GEOMEAN, NULL), 3.0, 1e-12);
    tc_fit_repeat_t o[] = {s_rep(0, 2, 1), s_rep(0, 1, 2)};
    cr_expect_eq(s_time(o, 2, TC_FIT_STAT_GEOMEAN, NULL), 0.0);
}

Test(conv_time, a_benchmark_more_than_six_hours_before_the_newest_is_superseded, .timeout = 10)
{
    tc_fit_repeat_t r[] = {s_rep(1, 0, 1), s_rep(20, 10 * HOUR, 2)};
    cr_expect_eq(s_time(r, 2, TC_FIT_STAT_MEDIAN, NULL), 20.0);
    /* exactly six hours before still counts */
    tc_fit_repeat_t q[] = {s_rep(2, 4 * HOUR, 1), s_rep(4, 10 * HOUR, 2)};
    cr_expect_eq(s_time(q, 2, TC_FIT_STAT_MEDIAN, NULL), 3.0);
}

Test(conv_time, unknown_times_come_last_and_always_count, .timeout = 10)
{
    /* Six benchmarks: five known (the most recent five), one unknown: left out. */
    tc_fit_repeat_t r[] = {s_rep(50, TC_FIT_TIME_UNKNOWN, 9), s_rep(1, 1, 1), s_rep(2, 2, 2),
                           s_rep(3, 3, 3), s_rep(4, 4, 4), s_rep(5, 5, 5)};
    cr_expect_eq(s_time(r, 6, TC_FIT_STAT_MEDIAN, NULL), 3.0);
    /* With fewer than five known the unknown one counts, however old the others. */
    tc_fit_repeat_t q[] = {s_rep(50, TC_FIT_TIME_UNKNOWN, 9), s_rep(1, 100 * HOUR, 1)};
    cr_expect_eq(s_time(q, 2, TC_FIT_STAT_MEDIAN, NULL), 25.5);
    /* All unknown: the five stored last. */
    tc_fit_repeat_t u[6];
    for (int i = 0; i < 6; i++)
        u[i] = s_rep(i == 0 ? 1000 : i, TC_FIT_TIME_UNKNOWN, i);
    cr_expect_eq(s_time(u, 6, TC_FIT_STAT_MEDIAN, NULL), 3.0);
}

Test(conv_time, ties_in_time_go_to_the_later_stored, .timeout = 10)
{
    tc_fit_repeat_t r[6];
    for (int i = 0; i < 6; i++)
        r[i] = s_rep(i == 0 ? 1000 : 1, 7 * HOUR, i); /* id 0 is the sixth: left out */
    cr_expect_eq(s_time(r, 6, TC_FIT_STAT_MEDIAN, NULL), 1.0);
}

Test(conv_time, spreads_not_recorded_are_left_out_and_none_is_nan, .timeout = 10)
{
    tc_fit_repeat_t r[] = {s_rep(1, 1, 1), s_rep(2, 2, 2), s_rep(3, 3, 3)};
    r[0].stddev_ms = NAN;
    double sd;
    cr_expect_eq(s_time(r, 3, TC_FIT_STAT_MEDIAN, &sd), 2.0);
    cr_expect_float_eq(sd, 0.25, 1e-15); /* median of 0.2 and 0.3 */
    for (int i = 0; i < 3; i++)
        r[i].stddev_ms = NAN;
    s_time(r, 3, TC_FIT_STAT_MEDIAN, &sd);
    cr_expect(isnan(sd));
    double ms = s_time(r, 0, TC_FIT_STAT_MEDIAN, &sd);
    cr_expect(isnan(ms) && isnan(sd), "no benchmarks: no time");
}

/* ---- random sets against the rule's words ------------------------------ */

static int s_dbl_cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* The p-th percentile with linear interpolation, spelled out. */
static double s_naive_pct(double *v, size_t n, double p)
{
    qsort(v, n, sizeof *v, s_dbl_cmp);
    double at = p * (double)(n - 1);
    size_t lo = (size_t)at;
    if ((double)lo == at)
        return v[lo];
    return v[lo] + (at - (double)lo) * (v[lo + 1] - v[lo]);
}

/* The rule read literally: rank every benchmark by how many are more recent,
 * keep rank < 5, drop those more than 6 h before the newest known time. */
static void s_naive(const tc_fit_repeat_t *r, size_t n, tc_fit_stat_t stat, double *ms, double *sd)
{
    int64_t newest = TC_FIT_TIME_UNKNOWN;
    for (size_t i = 0; i < n; i++)
        if (r[i].measured_us != TC_FIT_TIME_UNKNOWN && r[i].measured_us > newest)
            newest = r[i].measured_us;
    double med[64], sds[64];
    size_t nm = 0, ns = 0;
    for (size_t i = 0; i < n; i++) {
        size_t more_recent = 0;
        for (size_t j = 0; j < n; j++) {
            bool ju = r[j].measured_us == TC_FIT_TIME_UNKNOWN;
            bool iu = r[i].measured_us == TC_FIT_TIME_UNKNOWN;
            if (j == i)
                continue;
            if ((!ju && iu) || (!ju && !iu && r[j].measured_us > r[i].measured_us) ||
                (ju == iu && r[j].measured_us == r[i].measured_us && r[j].id > r[i].id))
                more_recent++;
        }
        if (more_recent >= TC_FIT_RECENT)
            continue;
        if (newest != TC_FIT_TIME_UNKNOWN && r[i].measured_us != TC_FIT_TIME_UNKNOWN &&
            r[i].measured_us < newest - 6 * HOUR)
            continue;
        med[nm++] = r[i].median_ms;
        if (!isnan(r[i].stddev_ms))
            sds[ns++] = r[i].stddev_ms;
    }
    if (stat == TC_FIT_STAT_MIN) {
        *ms = med[0];
        for (size_t i = 1; i < nm; i++)
            *ms = fmin(*ms, med[i]);
    } else if (stat == TC_FIT_STAT_GEOMEAN) {
        double logs = 0;
        for (size_t i = 0; i < nm; i++)
            logs += log(med[i]); /* every time here is above 0 */
        *ms = exp(logs / (double)nm);
    } else {
        *ms = s_naive_pct(med, nm, stat == TC_FIT_STAT_P10 ? 0.1 : 0.5);
    }
    *sd = ns ? s_naive_pct(sds, ns, 0.5) : NAN;
}

Test(conv_time, random_sets_match_the_rule_read_literally, .timeout = 30)
{
    tc_test_seed(12345);
    for (int t = 0; t < 20000; t++) {
        size_t n = 1 + (size_t)(tc_test_uniform() * 12);
        tc_fit_repeat_t r[16], copy[16];
        for (size_t i = 0; i < n; i++) {
            double u = tc_test_uniform();
            /* times on a coarse grid (ties), some unknown, spread over 12 h */
            int64_t at = u < 0.15 ? TC_FIT_TIME_UNKNOWN
                                  : (int64_t)(tc_test_uniform() * 12) * HOUR;
            r[i] = (tc_fit_repeat_t){.median_ms = 0.1 + tc_test_uniform() * 10,
                                     .stddev_ms = tc_test_uniform() < 0.2
                                                      ? NAN
                                                      : tc_test_uniform(),
                                     .measured_us = at,
                                     .id = (int64_t)(tc_test_uniform() * 1e6) * 16 + (int64_t)i};
        }
        for (tc_fit_stat_t stat = 0; stat < TC_FIT_STAT_COUNT; stat++) {
            memcpy(copy, r, n * sizeof *r);
            double ms, sd, want_ms, want_sd;
            tc_fit_conv_time(copy, n, stat, &ms, &sd);
            s_naive(r, n, stat, &want_ms, &want_sd);
            /* The geometric mean sums logs in another order than the rule's. */
            double tol = stat == TC_FIT_STAT_GEOMEAN ? 1e-13 * want_ms : 0.0;
            cr_assert(fabs(ms - want_ms) <= tol, "set %d (n %zu) %s: %.17g, the rule %.17g", t,
                      n, tc_fit_stat_name(stat), ms, want_ms);
            cr_assert(sd == want_sd || (isnan(sd) && isnan(want_sd)),
                      "set %d spread: %.17g, the rule %.17g", t, sd, want_sd);
        }
    }
}
