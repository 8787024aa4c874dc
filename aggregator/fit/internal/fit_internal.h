/* Shared by the fit solvers only (fit_linear.c, fit_nnls.c): the scaled
 * problem and its SVD. GSL types stay inside aggregator/fit*. */
#ifndef TC_FIT_INTERNAL_H
#define TC_FIT_INTERNAL_H

#include "fit.h"

#include <gsl/gsl_matrix.h>
#include <gsl/gsl_vector.h>

#define TC_FIT_RCOND 1e-10 /* singular values below this times the largest are dropped */

/* The weighted, scaled problem: z = diag(sqrt w) x[:, idx] / scale, y = sqrt(w) y. */
typedef struct {
    size_t n, p, q;
    size_t idx[TC_FIT_MAX_FEATURES];
    double scale[TC_FIT_MAX_FEATURES];
    gsl_matrix *z;
    gsl_vector *y;
} tc_fit_problem_t;

/* Thin SVD of a problem's design: z = U S V'. b = U'y; r0 = ||y - U b||^2. */
typedef struct {
    gsl_matrix *u;
    gsl_vector *s;
    gsl_matrix *v;
    gsl_vector *b;
    double r0;
} tc_fit_svd_t;

/* SVD of the columns `cols` (q of them) of pr->z. */
int tc_fit_svd(const tc_fit_problem_t *pr, const size_t *cols, size_t q, tc_fit_svd_t *sv);
void tc_fit_svd_free(tc_fit_svd_t *sv);
double tc_fit_svd_smax(const tc_fit_svd_t *sv);
/* The GCV score of ridge at lambda: rss / (n - df)^2. */
double tc_fit_svd_gcv(const tc_fit_svd_t *sv, size_t n, double lambda);

/* Solution in scaled coordinates with ridge filter factors at lambda (0:
 * least squares without the singular values below TC_FIT_RCOND): coefficients,
 * covariance (q x q), residual standard error, dof and rank. */
void tc_fit_svd_solve(const tc_fit_svd_t *sv, size_t n, double lambda, double *gamma,
                      double *cov, double *rse, double *dof, size_t *rank);

/* min ||z g - y|| subject to g >= 0; gamma and cov in scaled coordinates. */
int tc_fit_nnls_solve(const tc_fit_problem_t *pr, double *gamma, double *cov,
                      tc_fit_solution_t *out);

#endif
