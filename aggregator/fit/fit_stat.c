/* The statistic of repeated measurements (tc_fit_stat_t: its names), and
 * how a conv measurement's benchmarks become its time (tc_fit_conv_time):
 * the rule fit sums and predict looks up. */
#include "fit.h"

#include "tc_error.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char *const s_stat_names[TC_FIT_STAT_COUNT] = {"geomean", "median", "p10", "min"};

const char *tc_fit_stat_name(tc_fit_stat_t s)
{
    return (unsigned)s < TC_FIT_STAT_COUNT ? s_stat_names[s] : s_stat_names[0];
}

int tc_fit_stat_parse(const char *s, tc_fit_stat_t *out)
{
    for (int i = 0; i < TC_FIT_STAT_COUNT; i++) {
        if (s && !strcmp(s, s_stat_names[i])) {
            *out = (tc_fit_stat_t)i;
            return 0;
        }
    }
    return tc_fail(TC_EINVAL, "unknown statistic '%s' (use geomean, median, p10 or min)", s ? s : "");
}

/* Most recent first: by measured time (unknown last), then by stored id. */
static int s_recent_first(const void *pa, const void *pb)
{
    const tc_fit_repeat_t *a = pa, *b = pb;
    if (a->measured_us != b->measured_us)
        return a->measured_us < b->measured_us ? 1 : -1; /* TC_FIT_TIME_UNKNOWN is the least */
    return a->id < b->id ? 1 : a->id > b->id ? -1 : 0;
}

/* Ascending, NaN last (as the database orders doubles). */
static int s_ascending(const void *pa, const void *pb)
{
    double a = *(const double *)pa, b = *(const double *)pb;
    if (isnan(a) || isnan(b))
        return isnan(a) - isnan(b);
    return a < b ? -1 : a > b;
}

/* The p-th percentile of v[0..n) sorted, interpolated between the two
 * nearest ranks: lo + (hi - lo) * fraction, as percentile_cont computes it. */
static double s_percentile(const double *v, size_t n, double p)
{
    double at = p * (double)(n - 1);
    size_t lo = (size_t)floor(at), hi = (size_t)ceil(at);
    return lo == hi ? v[lo] : v[lo] + (at - (double)lo) * (v[hi] - v[lo]);
}

/* The geometric mean of v[0..n) sorted, over its positive values (the
 * database's exp(avg(ln(x))) over x > 0); with none, the median. */
static double s_geomean(const double *v, size_t n)
{
    double sum = 0;
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (v[i] > 0) {
            sum += log(v[i]);
            k++;
        }
    }
    return k ? exp(sum / (double)k) : s_percentile(v, n, 0.5);
}

void tc_fit_conv_time(tc_fit_repeat_t *r, size_t n, tc_fit_stat_t stat, double *median_ms,
                      double *stddev_ms)
{
    *median_ms = *stddev_ms = NAN;
    if (n == 0)
        return;
    qsort(r, n, sizeof *r, s_recent_first);
    int64_t newest = r[0].measured_us;
    double medians[TC_FIT_RECENT], stddevs[TC_FIT_RECENT];
    size_t n_med = 0, n_sd = 0;
    for (size_t i = 0; i < n && i < TC_FIT_RECENT; i++) {
        if (newest != TC_FIT_TIME_UNKNOWN && r[i].measured_us != TC_FIT_TIME_UNKNOWN &&
            r[i].measured_us < newest - TC_FIT_SUPERSEDED_US)
            continue;
        medians[n_med++] = r[i].median_ms;
        if (!isnan(r[i].stddev_ms))
            stddevs[n_sd++] = r[i].stddev_ms;
    }
    /* n_med >= 1: the newest itself is always kept. */
    qsort(medians, n_med, sizeof *medians, s_ascending);
    qsort(stddevs, n_sd, sizeof *stddevs, s_ascending);
    switch (stat) {
    case TC_FIT_STAT_MIN:
        *median_ms = medians[0];
        break;
    case TC_FIT_STAT_P10:
        *median_ms = s_percentile(medians, n_med, 0.1);
        break;
    case TC_FIT_STAT_MEDIAN:
        *median_ms = s_percentile(medians, n_med, 0.5);
        break;
    default:
        *median_ms = s_geomean(medians, n_med);
        break;
    }
    if (n_sd > 0)
        *stddev_ms = s_percentile(stddevs, n_sd, 0.5);
}
