#include "stats.h"

#include "tc_error.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int s_cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y ? 1 : 0;
}

void tc_median_ci_ranks(size_t n, double conf, size_t *lo, size_t *hi)
{
    *lo = *hi = 0;
    if (n == 0 || conf <= 0 || conf >= 1)
        return;
    double tail = (1 - conf) / 2, cdf = 0, log2n = (double)n * log(2.0);
    size_t j = 0;
    /* j = how many of the smallest order statistics can be cut off while
     * P(Binomial(n, 1/2) < j) stays within the tail. */
    for (size_t i = 0; i < n; i++) {
        double logpmf = lgamma((double)n + 1) - lgamma((double)i + 1) - lgamma((double)(n - i) + 1) -
                        log2n;
        cdf += exp(logpmf);
        if (cdf > tail)
            break;
        j = i + 1;
    }
    if (j == 0)
        return;
    *lo = j;
    *hi = n + 1 - j;
}

int tc_stats_compute(const double *samples, size_t n, tc_stats_t *out)
{
    memset(out, 0, sizeof *out);
    if (n == 0)
        return tc_fail(TC_EINVAL, "statistics of no samples");
    double *v = malloc(n * sizeof *v);
    if (!v)
        return tc_fail(TC_ENOMEM, "out of memory sorting %zu samples", n);
    memcpy(v, samples, n * sizeof *v);
    qsort(v, n, sizeof *v, s_cmp);
    out->n = n;
    out->min = v[0];
    out->max = v[n - 1];
    out->median = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
    double sum = 0;
    for (size_t i = 0; i < n; i++)
        sum += v[i];
    out->mean = sum / (double)n;
    double ss = 0;
    for (size_t i = 0; i < n; i++)
        ss += (v[i] - out->mean) * (v[i] - out->mean);
    out->stddev = n > 1 ? sqrt(ss / (double)(n - 1)) : 0;
    size_t lo, hi;
    tc_median_ci_ranks(n, 0.95, &lo, &hi);
    out->ci_valid = lo > 0;
    out->ci_lo = lo ? v[lo - 1] : out->min;
    out->ci_hi = hi ? v[hi - 1] : out->max;
    free(v);
    return 0;
}

double tc_stats_ci_rel(const tc_stats_t *s)
{
    if (!s->ci_valid || s->median <= 0)
        return INFINITY;
    double a = s->median - s->ci_lo, b = s->ci_hi - s->median;
    return (a > b ? a : b) / s->median;
}
