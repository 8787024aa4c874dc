/* The regression solvers: OLS, ridge with a GCV-chosen lambda and robust on
 * a weighted design scaled to unit RMS columns (NNLS: fit_nnls.c). */
#include "fit.h"
#include "fit_internal.h"

#include "tc_error.h"

#include <gsl/gsl_blas.h>
#include <gsl/gsl_errno.h>
#include <gsl/gsl_linalg.h>
#include <gsl/gsl_multifit.h>

#include <math.h>
#include <string.h>

#define GCV_GRID 80         /* log-spaced lambdas from s_max * 1e-8 to s_max * 10 */
#define GCV_REFINE 40       /* golden-section steps around the best grid point */
#define ROBUST_MAXITER 50

static const char *s_form_names[] = {"ols", "nnls", "ridge", "robust"};
static const char *s_weighting_names[] = {"none", "relative"};

const char *tc_fit_form_name(tc_fit_form_t f)
{
    return (unsigned)f < TC_FIT_FORM_COUNT ? s_form_names[f] : "unknown";
}

const char *tc_fit_weighting_name(tc_fit_weighting_t w)
{
    return (unsigned)w < TC_FIT_WEIGHTING_COUNT ? s_weighting_names[w] : "unknown";
}

int tc_fit_form_parse(const char *s, tc_fit_form_t *out)
{
    for (int i = 0; i < TC_FIT_FORM_COUNT; i++) {
        if (!strcmp(s, s_form_names[i])) {
            *out = (tc_fit_form_t)i;
            return 0;
        }
    }
    return tc_fail(TC_EINVAL, "unknown model form '%s' (ols, nnls, ridge, robust)", s);
}

int tc_fit_weighting_parse(const char *s, tc_fit_weighting_t *out)
{
    for (int i = 0; i < TC_FIT_WEIGHTING_COUNT; i++) {
        if (!strcmp(s, s_weighting_names[i])) {
            *out = (tc_fit_weighting_t)i;
            return 0;
        }
    }
    return tc_fail(TC_EINVAL, "unknown weighting '%s' (none, relative)", s);
}

static void s_problem_free(tc_fit_problem_t *pr)
{
    gsl_matrix_free(pr->z);
    gsl_vector_free(pr->y);
    memset(pr, 0, sizeof *pr);
}

static int s_problem_init(tc_fit_problem_t *pr, const double *x, const double *y, const double *w,
                          size_t n, size_t p)
{
    memset(pr, 0, sizeof *pr);
    gsl_set_error_handler_off();
    if (p > TC_FIT_MAX_FEATURES)
        return tc_fail(TC_EINVAL, "%zu features is more than the %d a fit supports", p,
                       TC_FIT_MAX_FEATURES);
    if (n <= p)
        return tc_fail(TC_EINVAL, "%zu points cannot fit %zu coefficients: need more points "
                                  "than features",
                       n, p);
    double norm2[TC_FIT_MAX_FEATURES] = {0};
    for (size_t i = 0; i < n; i++) {
        double wi = w ? w[i] : 1.0;
        if (!isfinite(y[i]) || !isfinite(wi) || wi < 0)
            return tc_fail(TC_EINVAL, "row %zu: target %g or weight %g is not usable", i, y[i],
                           wi);
        for (size_t j = 0; j < p; j++) {
            double v = x[i * p + j];
            if (!isfinite(v))
                return tc_fail(TC_EINVAL, "row %zu, feature %zu: value %g is not finite", i, j,
                               v);
            norm2[j] += wi * v * v;
        }
    }
    pr->n = n;
    pr->p = p;
    for (size_t j = 0; j < p; j++) {
        if (norm2[j] > 0 && isfinite(norm2[j])) {
            pr->idx[pr->q] = j;
            pr->scale[pr->q] = sqrt(norm2[j] / (double)n);
            pr->q++;
        }
    }
    pr->y = gsl_vector_alloc(n);
    pr->z = pr->q ? gsl_matrix_alloc(n, pr->q) : NULL;
    if (!pr->y || (pr->q && !pr->z)) {
        s_problem_free(pr);
        return tc_fail(TC_ENOMEM, "out of memory for a %zu x %zu regression", n, p);
    }
    for (size_t i = 0; i < n; i++) {
        double sw = sqrt(w ? w[i] : 1.0);
        gsl_vector_set(pr->y, i, sw * y[i]);
        for (size_t k = 0; k < pr->q; k++)
            gsl_matrix_set(pr->z, i, k, sw * x[i * p + pr->idx[k]] / pr->scale[k]);
    }
    return 0;
}

static double s_choose_lambda(const tc_fit_svd_t *sv, size_t n)
{
    double smax = tc_fit_svd_smax(sv);
    double lo = log(smax * 1e-8), hi = log(smax * 10.0);
    double best = lo, best_g = INFINITY;
    double step = (hi - lo) / (GCV_GRID - 1);
    for (int i = 0; i < GCV_GRID; i++) {
        double l = lo + step * i;
        double g = tc_fit_svd_gcv(sv, n, exp(l));
        if (g < best_g) {
            best_g = g;
            best = l;
        }
    }
    /* Golden-section refinement on log(lambda) within one grid step. */
    double a = fmax(lo, best - step), b = fmin(hi, best + step);
    const double r = 0.6180339887498949;
    double c = b - r * (b - a), d = a + r * (b - a);
    double gc = tc_fit_svd_gcv(sv, n, exp(c)), gd = tc_fit_svd_gcv(sv, n, exp(d));
    for (int i = 0; i < GCV_REFINE; i++) {
        if (gc < gd) {
            b = d;
            d = c;
            gd = gc;
            c = b - r * (b - a);
            gc = tc_fit_svd_gcv(sv, n, exp(c));
        } else {
            a = c;
            c = d;
            gc = gd;
            d = a + r * (b - a);
            gd = tc_fit_svd_gcv(sv, n, exp(d));
        }
    }
    double mid = 0.5 * (a + b);
    return tc_fit_svd_gcv(sv, n, exp(mid)) <= best_g ? exp(mid) : exp(best);
}

static void s_solve_svd(const tc_fit_problem_t *pr, const tc_fit_svd_t *sv, bool ridge, double *gamma,
                        double *cov, tc_fit_solution_t *out)
{
    out->lambda = ridge ? s_choose_lambda(sv, pr->n) : 0;
    tc_fit_svd_solve(sv, pr->n, out->lambda, gamma, cov, &out->rse, &out->dof, &out->rank);
}

/* Numerical rank of the scaled design: singular values above TC_FIT_RCOND * s_max. */
static size_t s_rank(const tc_fit_svd_t *sv)
{
    double smax = tc_fit_svd_smax(sv);
    size_t r = 0;
    for (size_t k = 0; k < sv->s->size; k++)
        r += gsl_vector_get(sv->s, k) > TC_FIT_RCOND * smax;
    return r;
}

static int s_solve_robust(const tc_fit_problem_t *pr, double *gamma, double *cov, tc_fit_solution_t *out)
{
    gsl_multifit_robust_workspace *w =
        gsl_multifit_robust_alloc(gsl_multifit_robust_bisquare, pr->n, pr->q);
    gsl_vector *c = gsl_vector_alloc(pr->q);
    gsl_matrix *cv = gsl_matrix_alloc(pr->q, pr->q);
    int rc = 0;
    if (!w || !c || !cv) {
        rc = tc_fail(TC_ENOMEM, "out of memory for a robust fit");
        goto done;
    }
    gsl_multifit_robust_maxiter(ROBUST_MAXITER, w);
    int st = gsl_multifit_robust(pr->z, pr->y, c, cv, w);
    /* Not converging within the iteration cap still leaves a usable estimate. */
    if (st && st != GSL_EMAXITER) {
        rc = tc_fail(TC_ELIB, "gsl_multifit_robust failed: %s", gsl_strerror(st));
        goto done;
    }
    gsl_multifit_robust_stats stats = gsl_multifit_robust_statistics(w);
    out->rse = stats.sigma;
    out->dof = stats.dof;
    out->rank = pr->q;
    out->lambda = 0;
    for (size_t a = 0; a < pr->q; a++) {
        gamma[a] = gsl_vector_get(c, a);
        for (size_t b = 0; b < pr->q; b++)
            cov[a * pr->q + b] = gsl_matrix_get(cv, a, b);
    }
done:
    gsl_multifit_robust_free(w);
    gsl_vector_free(c);
    gsl_matrix_free(cv);
    return rc;
}

int tc_fit_linear(tc_fit_form_t form, const double *x, const double *y, const double *w, size_t n,
                  size_t p, tc_fit_solution_t *out)
{
    memset(out, 0, sizeof *out);
    out->p = p;
    tc_fit_problem_t pr;
    int rc = s_problem_init(&pr, x, y, w, n, p);
    if (rc < 0)
        return rc;
    double gamma[TC_FIT_MAX_FEATURES] = {0};
    double cov[TC_FIT_MAX_FEATURES * TC_FIT_MAX_FEATURES] = {0};
    if (pr.q == 0) {
        /* Nothing to fit: the model predicts zero. */
        double rss = 0;
        for (size_t i = 0; i < n; i++)
            rss += gsl_vector_get(pr.y, i) * gsl_vector_get(pr.y, i);
        out->rse = sqrt(rss / (double)n);
        out->dof = (double)n;
        s_problem_free(&pr);
        return 0;
    }
    /* Features that are linear combinations of others on these rows cannot
     * be told apart: refuse rather than report arbitrary coefficients. */
    size_t cols[TC_FIT_MAX_FEATURES];
    for (size_t k = 0; k < pr.q; k++)
        cols[k] = k;
    tc_fit_svd_t sv;
    rc = tc_fit_svd(&pr, cols, pr.q, &sv);
    if (rc < 0) {
        s_problem_free(&pr);
        return rc;
    }
    if (s_rank(&sv) < pr.q) {
        rc = tc_fail(TC_EINVAL, "the %zu features are collinear on these %zu points (rank %zu): "
                                "drop one",
                     pr.q, n, s_rank(&sv));
    } else {
        switch (form) {
        case TC_FIT_OLS: s_solve_svd(&pr, &sv, false, gamma, cov, out); break;
        case TC_FIT_RIDGE: s_solve_svd(&pr, &sv, true, gamma, cov, out); break;
        case TC_FIT_ROBUST: rc = s_solve_robust(&pr, gamma, cov, out); break;
        case TC_FIT_NNLS: rc = tc_fit_nnls_solve(&pr, gamma, cov, out); break;
        default: rc = tc_fail(TC_EINVAL, "unknown model form %d", (int)form); break;
        }
    }
    tc_fit_svd_free(&sv);
    if (rc == 0) {
        for (size_t a = 0; a < pr.q; a++) {
            out->coef[pr.idx[a]] = gamma[a] / pr.scale[a];
            for (size_t b = 0; b < pr.q; b++)
                out->cov[pr.idx[a] * p + pr.idx[b]] =
                    cov[a * pr.q + b] / (pr.scale[a] * pr.scale[b]);
        }
        for (size_t j = 0; j < p; j++) {
            if (!isfinite(out->coef[j]))
                rc = tc_fail(TC_ELIB, "the %s fit produced a non-finite coefficient",
                             tc_fit_form_name(form));
        }
    }
    s_problem_free(&pr);
    return rc;
}

int tc_fit_ridge_gcv(const double *x, const double *y, const double *w, size_t n, size_t p,
                     double lambda, double *score)
{
    tc_fit_problem_t pr;
    int rc = s_problem_init(&pr, x, y, w, n, p);
    if (rc < 0)
        return rc;
    if (pr.q == 0) {
        s_problem_free(&pr);
        return tc_fail(TC_EINVAL, "every feature column is zero: nothing to regularize");
    }
    size_t cols[TC_FIT_MAX_FEATURES];
    for (size_t k = 0; k < pr.q; k++)
        cols[k] = k;
    tc_fit_svd_t sv;
    rc = tc_fit_svd(&pr, cols, pr.q, &sv);
    if (rc == 0) {
        *score = tc_fit_svd_gcv(&sv, n, lambda);
        tc_fit_svd_free(&sv);
    }
    s_problem_free(&pr);
    return rc;
}
