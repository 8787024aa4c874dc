/* Non-negative least squares: the Lawson-Hanson active set method on the
 * scaled problem of fit_linear.c. */
#include "fit_internal.h"

#include "tc_error.h"

#include <math.h>
#include <string.h>

/* Unconstrained least squares on a subset of the scaled columns; gamma is
 * written for those columns only (in `cols` order). */
static int s_ols_subset(const tc_fit_problem_t *pr, const size_t *cols, size_t k, double *gamma,
                        double *cov, double *rse, double *dof, size_t *rank)
{
    tc_fit_svd_t sv;
    int rc = tc_fit_svd(pr, cols, k, &sv);
    if (rc < 0)
        return rc;
    tc_fit_svd_solve(&sv, pr->n, 0, gamma, cov, rse, dof, rank);
    tc_fit_svd_free(&sv);
    return 0;
}

/* w = z'(y - z x): the negative gradient of the squared residual / 2. */
static void s_nnls_gradient(const tc_fit_problem_t *pr, const double *x, double *wgrad)
{
    size_t q = pr->q;
    for (size_t j = 0; j < q; j++)
        wgrad[j] = 0;
    for (size_t i = 0; i < pr->n; i++) {
        double r = gsl_vector_get(pr->y, i);
        for (size_t k = 0; k < q; k++)
            r -= gsl_matrix_get(pr->z, i, k) * x[k];
        for (size_t j = 0; j < q; j++)
            wgrad[j] += gsl_matrix_get(pr->z, i, j) * r;
    }
}

/* Lawson-Hanson active set method for min ||z g - y|| subject to g >= 0. */
int tc_fit_nnls_solve(const tc_fit_problem_t *pr, double *gamma, double *cov, tc_fit_solution_t *out)
{
    size_t q = pr->q;
    bool passive[TC_FIT_MAX_FEATURES] = {false}, blocked[TC_FIT_MAX_FEATURES] = {false};
    double x[TC_FIT_MAX_FEATURES] = {0}, wgrad[TC_FIT_MAX_FEATURES];
    double scratch_cov[TC_FIT_MAX_FEATURES * TC_FIT_MAX_FEATURES];
    double rse, dof;
    size_t rank;
    int rc = 0;

    /* Gradient tolerance relative to z'y (the gradient at x = 0). */
    s_nnls_gradient(pr, x, wgrad);
    double tol = 0;
    for (size_t j = 0; j < q; j++)
        tol = fmax(tol, fabs(wgrad[j]));
    tol = tol * 1e-11 + 1e-300;

    for (size_t iter = 0; iter < 10 * q + 10; iter++) {
        if (iter)
            s_nnls_gradient(pr, x, wgrad);
        size_t best = q;
        for (size_t j = 0; j < q; j++) {
            if (!passive[j] && !blocked[j] && wgrad[j] > tol &&
                (best == q || wgrad[j] > wgrad[best]))
                best = j;
        }
        if (best == q)
            break;
        passive[best] = true;
        bool moved = false;
        for (size_t inner = 0; inner < q + 1; inner++) {
            size_t cols[TC_FIT_MAX_FEATURES], k = 0;
            for (size_t j = 0; j < q; j++) {
                if (passive[j])
                    cols[k++] = j;
            }
            if (k == 0)
                break;
            double zp[TC_FIT_MAX_FEATURES];
            rc = s_ols_subset(pr, cols, k, zp, scratch_cov, &rse, &dof, &rank);
            if (rc < 0)
                return rc;
            double z[TC_FIT_MAX_FEATURES] = {0};
            bool feasible = true;
            for (size_t a = 0; a < k; a++) {
                z[cols[a]] = zp[a];
                feasible = feasible && zp[a] > 0;
            }
            if (feasible) {
                memcpy(x, z, sizeof x);
                moved = true;
                break;
            }
            /* Step from x toward z until the first passive coefficient hits
             * zero; it (and any other at zero) leaves the passive set. */
            double alpha = 1.0;
            size_t hit = q;
            for (size_t a = 0; a < k; a++) {
                size_t j = cols[a];
                if (z[j] <= 0) {
                    double den = x[j] - z[j];
                    double t = den > 0 ? x[j] / den : 0;
                    if (t < alpha || hit == q) {
                        alpha = fmin(alpha, t);
                        hit = j;
                    }
                }
            }
            for (size_t j = 0; j < q; j++)
                x[j] += alpha * (z[j] - x[j]);
            if (alpha > 0)
                moved = true;
            x[hit] = 0;
            for (size_t j = 0; j < q; j++) {
                if (passive[j] && x[j] <= 0) {
                    passive[j] = false;
                    x[j] = 0;
                }
            }
        }
        /* A variable that cannot enter without moving nothing would be
         * chosen again forever: skip it until the solution changes. */
        if (!moved)
            blocked[best] = true;
        else
            memset(blocked, 0, sizeof blocked);
    }
    /* Statistics of the final passive set. */
    size_t cols[TC_FIT_MAX_FEATURES], k = 0;
    for (size_t j = 0; j < q; j++) {
        if (passive[j] && x[j] > 0)
            cols[k++] = j;
    }
    memset(gamma, 0, q * sizeof *gamma);
    memset(cov, 0, q * q * sizeof *cov);
    out->lambda = 0;
    if (k == 0) {
        double rss = 0;
        for (size_t i = 0; i < pr->n; i++)
            rss += gsl_vector_get(pr->y, i) * gsl_vector_get(pr->y, i);
        out->rse = sqrt(rss / (double)pr->n);
        out->dof = (double)pr->n;
        out->rank = 0;
        return 0;
    }
    double zp[TC_FIT_MAX_FEATURES];
    rc = s_ols_subset(pr, cols, k, zp, scratch_cov, &out->rse, &out->dof, &out->rank);
    if (rc < 0)
        return rc;
    for (size_t a = 0; a < k; a++) {
        gamma[cols[a]] = fmax(zp[a], 0);
        for (size_t b = 0; b < k; b++)
            cov[cols[a] * q + cols[b]] = scratch_cov[a * k + b];
    }
    return 0;
}

