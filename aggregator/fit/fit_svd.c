/* The thin SVD of a weighted, scaled design, and what the solvers take
 * from it: ridge filter factors at a lambda (0: OLS with tiny singular
 * values truncated), the GCV score, the solution and its covariance. Used
 * by OLS, ridge and robust (fit_linear.c) and NNLS (fit_nnls.c). */
#include "fit.h"
#include "fit_internal.h"

#include "tc_error.h"

#include <gsl/gsl_blas.h>
#include <gsl/gsl_errno.h>
#include <gsl/gsl_linalg.h>

#include <math.h>
#include <string.h>

void tc_fit_svd_free(tc_fit_svd_t *sv)
{
    gsl_matrix_free(sv->u);
    gsl_vector_free(sv->s);
    gsl_matrix_free(sv->v);
    gsl_vector_free(sv->b);
    memset(sv, 0, sizeof *sv);
}

/* SVD of the columns `cols` (q of them) of pr->z. */
int tc_fit_svd(const tc_fit_problem_t *pr, const size_t *cols, size_t q, tc_fit_svd_t *sv)
{
    memset(sv, 0, sizeof *sv);
    sv->u = gsl_matrix_alloc(pr->n, q);
    sv->s = gsl_vector_alloc(q);
    sv->v = gsl_matrix_alloc(q, q);
    sv->b = gsl_vector_alloc(q);
    if (!sv->u || !sv->s || !sv->v || !sv->b) {
        tc_fit_svd_free(sv);
        return tc_fail(TC_ENOMEM, "out of memory for an SVD");
    }
    for (size_t k = 0; k < q; k++) {
        gsl_vector_const_view col = gsl_matrix_const_column(pr->z, cols[k]);
        gsl_matrix_set_col(sv->u, k, &col.vector);
    }
    int st = gsl_linalg_SV_decomp_jacobi(sv->u, sv->v, sv->s);
    if (st) {
        tc_fit_svd_free(sv);
        return tc_fail(TC_ELIB, "gsl_linalg_SV_decomp_jacobi failed: %s", gsl_strerror(st));
    }
    gsl_blas_dgemv(CblasTrans, 1.0, sv->u, pr->y, 0.0, sv->b);
    double r0 = 0;
    for (size_t i = 0; i < pr->n; i++) {
        double fit = 0;
        for (size_t k = 0; k < q; k++)
            fit += gsl_matrix_get(sv->u, i, k) * gsl_vector_get(sv->b, k);
        double r = gsl_vector_get(pr->y, i) - fit;
        r0 += r * r;
    }
    sv->r0 = r0;
    return 0;
}

/* Ridge quantities at lambda (0: OLS with truncation of tiny singular values). */
typedef struct {
    double rss;
    double df; /* trace of the hat matrix */
} ridge_eval_t;

double tc_fit_svd_smax(const tc_fit_svd_t *sv)
{
    double m = 0;
    for (size_t k = 0; k < sv->s->size; k++)
        m = fmax(m, gsl_vector_get(sv->s, k));
    return m;
}

static ridge_eval_t s_ridge_eval(const tc_fit_svd_t *sv, double lambda)
{
    double smax = tc_fit_svd_smax(sv);
    ridge_eval_t e = {sv->r0, 0};
    for (size_t k = 0; k < sv->s->size; k++) {
        double s = gsl_vector_get(sv->s, k), b = gsl_vector_get(sv->b, k);
        double f; /* filter factor s^2 / (s^2 + lambda^2) */
        if (lambda > 0)
            f = s * s / (s * s + lambda * lambda);
        else
            f = s > TC_FIT_RCOND * smax ? 1.0 : 0.0;
        e.df += f;
        e.rss += (1 - f) * (1 - f) * b * b;
    }
    return e;
}

double tc_fit_svd_gcv(const tc_fit_svd_t *sv, size_t n, double lambda)
{
    ridge_eval_t e = s_ridge_eval(sv, lambda);
    double d = (double)n - e.df;
    return d > 0 ? e.rss / (d * d) : INFINITY;
}

/* Solution in scaled coordinates from an SVD with filter factors at lambda:
 * gamma = V diag(f / s) b, cov = sigma^2 V diag(f^2 / s^2) V'. */
void tc_fit_svd_solve(const tc_fit_svd_t *sv, size_t n, double lambda, double *gamma, double *cov,
                        double *rse, double *dof, size_t *rank)
{
    size_t q = sv->s->size;
    double smax = tc_fit_svd_smax(sv);
    double g[TC_FIT_MAX_FEATURES] = {0}; /* per singular value: f / s */
    *rank = 0;
    for (size_t k = 0; k < q; k++) {
        double s = gsl_vector_get(sv->s, k);
        if (s > TC_FIT_RCOND * smax) {
            (*rank)++;
            g[k] = lambda > 0 ? s / (s * s + lambda * lambda) : 1.0 / s;
        }
    }
    ridge_eval_t e = s_ridge_eval(sv, lambda);
    *dof = (double)n - e.df;
    double sigma2 = *dof > 0 ? e.rss / *dof : NAN;
    *rse = sqrt(sigma2);
    for (size_t a = 0; a < q; a++) {
        double acc = 0;
        for (size_t k = 0; k < q; k++)
            acc += gsl_matrix_get(sv->v, a, k) * g[k] * gsl_vector_get(sv->b, k);
        gamma[a] = acc;
        for (size_t c = 0; c < q; c++) {
            double cv = 0;
            for (size_t k = 0; k < q; k++)
                cv += gsl_matrix_get(sv->v, a, k) * g[k] * g[k] * gsl_matrix_get(sv->v, c, k);
            cov[a * q + c] = sigma2 * cv;
        }
    }
}
