/* Prediction intervals calibrated on held-out predictions.
 *
 * The regression's own variance describes noise around a linear model that
 * fits; the error of predicting a CNN never seen is mostly what the linear
 * model misses about that CNN. So the interval is taken from how far
 * leave-one-CNN-out predictions of the same model spec fell from the truth:
 * the ratios measured / predicted over the held-out points, their
 * (alpha/2, 1 - alpha/2) quantiles with the split-conformal finite-sample
 * correction (ranks floor((n+1) alpha/2) and ceil((n+1)(1 - alpha/2)) of n),
 * as factors on a new prediction. It is as wide as the errors the method
 * actually makes on unseen CNNs of this device, and its coverage is checked
 * by the nested run, where each held-out CNN gets the interval computed
 * without it. */
#include "fit.h"

#include "tc_error.h"

#include <math.h>
#include <stdlib.h>

static int s_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int tc_fit_interval(const double *measured, const double *pred, const bool *rows, size_t n,
                    double alpha, double *lo, double *hi)
{
    *lo = *hi = NAN;
    if (!(alpha > 0 && alpha < 1))
        return tc_fail(TC_EINVAL, "interval level: alpha must be between 0 and 1 (got %g)",
                       alpha);
    double *r = malloc((n ? n : 1) * sizeof *r);
    if (!r)
        return tc_fail(TC_ENOMEM, "out of memory");
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        if ((rows && !rows[i]) || !isfinite(measured[i]) || !isfinite(pred[i]) || pred[i] <= 0 ||
            measured[i] <= 0)
            continue;
        r[m++] = measured[i] / pred[i];
    }
    qsort(r, m, sizeof *r, s_cmp_double);
    /* 1-based ranks; outside 1..m there are too few points for this level. */
    double k_lo = floor((double)(m + 1) * alpha / 2.0);
    double k_hi = ceil((double)(m + 1) * (1.0 - alpha / 2.0));
    if (m > 0 && k_lo >= 1 && k_hi <= (double)m) {
        *lo = fmin(r[(size_t)k_lo - 1], 1.0);
        *hi = fmax(r[(size_t)k_hi - 1], 1.0);
    }
    free(r);
    return 0;
}

size_t tc_fit_interval_min_points(double alpha)
{
    /* The smallest m with floor((m+1) alpha/2) >= 1 and ceil((m+1)(1-alpha/2)) <= m. */
    for (size_t m = 1; m < 100000; m++) {
        if (floor((double)(m + 1) * alpha / 2.0) >= 1 &&
            ceil((double)(m + 1) * (1.0 - alpha / 2.0)) <= (double)m)
            return m;
    }
    return 0;
}
