/* Summary statistics of timing samples, with a distribution-free 95 %
 * confidence interval for the median (order statistics of the binomial
 * distribution), which needs no assumption about the noise. */
#ifndef TC_STATS_H
#define TC_STATS_H

#include <stdbool.h>
#include <stddef.h>

typedef struct {
    size_t n;
    double median, min, max, mean, stddev; /* stddev: sample (n - 1) */
    double ci_lo, ci_hi;                   /* 95 % CI of the median; = min, max when !ci_valid */
    bool ci_valid;                         /* n >= 6: a 95 % interval exists */
} tc_stats_t;

/* Statistics of samples[0..n). TC_EINVAL for n = 0, TC_ENOMEM. */
int tc_stats_compute(const double *samples, size_t n, tc_stats_t *out);

/* Largest relative distance of the CI's ends from the median (0.02 = the
 * interval lies within +-2 %); infinity when there is no valid CI. */
double tc_stats_ci_rel(const tc_stats_t *s);

/* 1-based ranks (lo, hi) of the order statistics that bound a confidence
 * interval of level `conf` for the median of n samples; both 0 when n is too
 * small for that level. */
void tc_median_ci_ranks(size_t n, double conf, size_t *lo, size_t *hi);

#endif
