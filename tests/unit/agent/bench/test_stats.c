/* Timing statistics and the measurement loop, on synthetic samples. */
#include "measure.h"
#include "stats.h"

#include "tc_error.h"

#include <criterion/criterion.h>
#include <math.h>

Test(stats, summary_of_known_samples, .timeout = 10)
{
    const double v[] = {4, 1, 3, 2, 5};
    tc_stats_t s;
    cr_assert_eq(tc_stats_compute(v, 5, &s), 0);
    cr_expect_float_eq(s.median, 3, 1e-12);
    cr_expect_float_eq(s.min, 1, 1e-12);
    cr_expect_float_eq(s.max, 5, 1e-12);
    cr_expect_float_eq(s.mean, 3, 1e-12);
    cr_expect_float_eq(s.stddev, sqrt(2.5), 1e-12);
    cr_expect_not(s.ci_valid, "5 samples cannot bound the median at 95 %%");
    cr_expect(isinf(tc_stats_ci_rel(&s)));

    const double e[] = {10, 2, 8, 4};
    cr_assert_eq(tc_stats_compute(e, 4, &s), 0);
    cr_expect_float_eq(s.median, 6, 1e-12, "even count: mean of the middle two");
    cr_expect_eq(tc_stats_compute(e, 0, &s), TC_EINVAL);
}

Test(stats, median_ci_ranks_match_binomial_tables, .timeout = 10)
{
    size_t lo, hi;
    tc_median_ci_ranks(5, 0.95, &lo, &hi);
    cr_expect_eq(lo, 0);
    tc_median_ci_ranks(6, 0.95, &lo, &hi);
    cr_expect(lo == 1 && hi == 6, "n=6: (%zu, %zu)", lo, hi);
    tc_median_ci_ranks(10, 0.95, &lo, &hi);
    cr_expect(lo == 2 && hi == 9, "n=10: (%zu, %zu)", lo, hi);
    tc_median_ci_ranks(100, 0.95, &lo, &hi);
    cr_expect(lo == 40 && hi == 61, "n=100: (%zu, %zu)", lo, hi);
    tc_median_ci_ranks(1000, 0.95, &lo, &hi);
    cr_expect(lo == 469 && hi == 532, "n=1000: (%zu, %zu)", lo, hi);
}

Test(stats, ci_of_tight_and_wide_samples, .timeout = 10)
{
    double v[20];
    for (int i = 0; i < 20; i++)
        v[i] = 10.0 + 0.01 * (i % 5);
    tc_stats_t s;
    cr_assert_eq(tc_stats_compute(v, 20, &s), 0);
    cr_expect(s.ci_valid);
    cr_expect_lt(tc_stats_ci_rel(&s), 0.02);
    for (int i = 0; i < 20; i++)
        v[i] = i % 2 ? 10.0 : 20.0;
    cr_assert_eq(tc_stats_compute(v, 20, &s), 0);
    cr_expect_gt(tc_stats_ci_rel(&s), 0.02);
}

/* A synthetic operation: returns the next value of a sequence (cycled). */
typedef struct {
    const double *seq;
    size_t len, calls;
    size_t fail_at; /* 0: never */
} seq_t;

static int s_seq(void *arg, double *ms)
{
    seq_t *s = arg;
    s->calls++;
    if (s->fail_at && s->calls == s->fail_at)
        return tc_fail(TC_ELIB, "synthetic failure at call %zu", s->calls);
    *ms = s->seq[(s->calls - 1) % s->len];
    return 0;
}

Test(measure, steady_times_converge_quickly, .timeout = 10)
{
    const double one[] = {1.0};
    seq_t sq = {one, 1, 0, 0};
    tc_measure_opts_t o = tc_measure_defaults();
    tc_samples_t s;
    cr_assert_eq(tc_measure(s_seq, &sq, &o, &s), 0, "%s", tc_errmsg());
    cr_expect_eq(s.warmups, 2);
    cr_expect(s.settled);
    cr_expect_eq(s.stop, TC_STOP_CONVERGED);
    cr_expect_eq(s.n, 6, "the first n with a 95 %% CI of the median is 6 (got %zu)", s.n);
    cr_expect_float_eq(s.stats.median, 1.0, 1e-12);
    for (size_t i = 1; i < s.n; i++)
        cr_expect_geq(s.offset_us[i], s.offset_us[i - 1]);
    cr_expect_gt(s.started_at_us, 1600000000000000LL);
    tc_samples_free(&s);
}

Test(measure, warm_up_runs_until_times_settle, .timeout = 10)
{
    const double seq[] = {50, 20, 8, 3, 1.5, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0,
                          1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0};
    seq_t sq = {seq, sizeof seq / sizeof seq[0], 0, 0};
    tc_measure_opts_t o = tc_measure_defaults();
    o.budget_ms = 1e6;
    tc_samples_t s;
    cr_assert_eq(tc_measure(s_seq, &sq, &o, &s), 0);
    cr_expect_eq(s.warmups, 7, "50 20 8 3 1.5 1.0 1.0: settled at the 7th (got %u)", s.warmups);
    cr_expect(s.settled);
    cr_expect_float_eq(s.stats.max, 1.0, 1e-12, "no warm-up time among the samples");
    tc_samples_free(&s);
}

Test(measure, noisy_times_stop_at_the_budget, .timeout = 10)
{
    const double seq[] = {1.0, 2.0, 1.5, 3.0};
    seq_t sq = {seq, 4, 0, 0};
    tc_measure_opts_t o = tc_measure_defaults();
    o.budget_ms = 100;
    o.max_reps = 1000;
    tc_samples_t s;
    cr_assert_eq(tc_measure(s_seq, &sq, &o, &s), 0);
    cr_expect_eq(s.stop, TC_STOP_BUDGET);
    double sum = 0;
    for (size_t i = 0; i < s.n; i++)
        sum += s.ms[i];
    cr_expect_lt(sum, 100, "samples alone stay within the budget (%g)", sum);
    cr_expect_gt(sum, 100 - 2 * 20 - 3, "the budget is used (%g of 100 ms)", sum);
    cr_expect_lt(s.n, 1000);
    tc_samples_free(&s);
}

Test(measure, repetition_cap_and_min_reps, .timeout = 10)
{
    const double seq[] = {1.0, 2.0};
    seq_t sq = {seq, 2, 0, 0};
    tc_measure_opts_t o = tc_measure_defaults();
    o.budget_ms = 1e9;
    o.max_reps = 40;
    tc_samples_t s;
    cr_assert_eq(tc_measure(s_seq, &sq, &o, &s), 0);
    cr_expect_eq(s.stop, TC_STOP_MAX_REPS);
    cr_expect_eq(s.n, 40);
    tc_samples_free(&s);

    /* A single run longer than the whole budget: min_reps still run. */
    const double slow[] = {500.0};
    seq_t sl = {slow, 1, 0, 0};
    o = tc_measure_defaults();
    o.budget_ms = 100;
    cr_assert_eq(tc_measure(s_seq, &sl, &o, &s), 0);
    cr_expect_eq(s.n, o.min_reps);
    cr_expect_eq(s.warmups, o.warmup_min);
    cr_expect_eq(s.stop, TC_STOP_BUDGET);
    tc_samples_free(&s);
}

Test(measure, errors_propagate_and_options_are_checked, .timeout = 10)
{
    const double one[] = {1.0};
    seq_t sq = {one, 1, 0, 4};
    tc_measure_opts_t o = tc_measure_defaults();
    tc_samples_t s;
    cr_expect_eq(tc_measure(s_seq, &sq, &o, &s), TC_ELIB);
    cr_expect_null(s.ms);
    cr_expect_eq(s.n, 0);
    o.min_reps = 10;
    o.max_reps = 5;
    cr_expect_eq(tc_measure_opts_check(&o), TC_EINVAL);
    o = tc_measure_defaults();
    o.budget_ms = 0;
    cr_expect_eq(tc_measure_opts_check(&o), TC_EINVAL);
    o = tc_measure_defaults();
    o.ci_rel = 0;
    cr_expect_eq(tc_measure_opts_check(&o), TC_EINVAL);
}
