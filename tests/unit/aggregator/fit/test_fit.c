/* The regression solvers against synthetic data with known coefficients and
 * naive reference computations: every form, GCV ridge, the robust fit, NNLS
 * constraints, degenerate input. Features, cross-validation, predictions
 * and intervals are in test_fit_cv.c. */
#include "fit.h"
#include "predict.h"

#include "tc_error.h"
#include "tc_test_rng.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- naive reference: normal equations by Gauss-Jordan ------------------- */

/* Invert the p x p matrix a (row-major) into inv. Returns false if singular. */
static bool s_invert(const double *a, double *inv, size_t p)
{
    double m[16][32];
    for (size_t i = 0; i < p; i++) {
        for (size_t j = 0; j < p; j++) {
            m[i][j] = a[i * p + j];
            m[i][p + j] = i == j;
        }
    }
    for (size_t c = 0; c < p; c++) {
        size_t piv = c;
        for (size_t r = c + 1; r < p; r++) {
            if (fabs(m[r][c]) > fabs(m[piv][c]))
                piv = r;
        }
        if (fabs(m[piv][c]) < 1e-300)
            return false;
        for (size_t j = 0; j < 2 * p; j++) {
            double t = m[c][j];
            m[c][j] = m[piv][j];
            m[piv][j] = t;
        }
        double d = m[c][c];
        for (size_t j = 0; j < 2 * p; j++)
            m[c][j] /= d;
        for (size_t r = 0; r < p; r++) {
            if (r == c)
                continue;
            double f = m[r][c];
            for (size_t j = 0; j < 2 * p; j++)
                m[r][j] -= f * m[c][j];
        }
    }
    for (size_t i = 0; i < p; i++)
        for (size_t j = 0; j < p; j++)
            inv[i * p + j] = m[i][p + j];
    return true;
}

/* Weighted least squares with ridge lambda^2 on the raw columns:
 * b = (X'WX + lambda^2 I)^-1 X'Wy. Returns the weighted rss and trace(H). */
static void s_naive_ridge(const double *x, const double *y, const double *w, size_t n, size_t p,
                          double lambda, double *b, double *rss, double *trace_h, double *xtwx_inv)
{
    double a[256] = {0}, inv[256], xty[16] = {0};
    for (size_t i = 0; i < n; i++) {
        double wi = w ? w[i] : 1;
        for (size_t j = 0; j < p; j++) {
            xty[j] += wi * x[i * p + j] * y[i];
            for (size_t k = 0; k < p; k++)
                a[j * p + k] += wi * x[i * p + j] * x[i * p + k];
        }
    }
    double plain[256];
    memcpy(plain, a, sizeof plain);
    for (size_t j = 0; j < p; j++)
        a[j * p + j] += lambda * lambda;
    cr_assert(s_invert(a, inv, p), "naive normal equations are singular");
    for (size_t j = 0; j < p; j++) {
        b[j] = 0;
        for (size_t k = 0; k < p; k++)
            b[j] += inv[j * p + k] * xty[k];
    }
    if (xtwx_inv)
        memcpy(xtwx_inv, inv, p * p * sizeof *inv);
    double r = 0;
    for (size_t i = 0; i < n; i++) {
        double f = 0;
        for (size_t j = 0; j < p; j++)
            f += x[i * p + j] * b[j];
        r += (w ? w[i] : 1) * (y[i] - f) * (y[i] - f);
    }
    *rss = r;
    /* trace(H) = trace((X'WX + l^2 I)^-1 X'WX) */
    double t = 0;
    for (size_t j = 0; j < p; j++)
        for (size_t k = 0; k < p; k++)
            t += inv[j * p + k] * plain[k * p + j];
    *trace_h = t;
}

/* Synthetic design: column 0 is a constant, the others span very different
 * scales as real features do (layer counts, element counts, FLOPs). */
static void s_design(double *x, size_t n, size_t p)
{
    static const double scales[] = {1, 50, 3e8, 2e7, 4e9, 1e3};
    for (size_t i = 0; i < n; i++) {
        x[i * p] = 1.0;
        for (size_t j = 1; j < p; j++)
            x[i * p + j] = scales[j % 6] * (0.2 + tc_test_uniform());
    }
}

static void s_respond(const double *x, const double *beta, double noise_sd, double *y, size_t n,
                      size_t p)
{
    for (size_t i = 0; i < n; i++) {
        y[i] = 0;
        for (size_t j = 0; j < p; j++)
            y[i] += x[i * p + j] * beta[j];
        y[i] += noise_sd * tc_test_normal();
    }
}

static void s_expect_coef(const tc_fit_solution_t *sol, const double *beta, size_t p, double rel,
                          const char *what)
{
    for (size_t j = 0; j < p; j++) {
        double tol = rel * fabs(beta[j]) + 1e-300;
        cr_expect(fabs(sol->coef[j] - beta[j]) <= tol, "%s: coef[%zu] = %.10g, true %.10g", what,
                  j, sol->coef[j], beta[j]);
    }
}

#define N 80
#define P 4
static const double s_beta[P] = {12.5, 0.08, 2.0e-8, 5.0e-7};

/* ---- every form recovers known coefficients ------------------------------ */

Test(fit_linear, every_form_recovers_exact_coefficients, .timeout = 30)
{
    double x[N * P], y[N];
    tc_test_seed(1);
    s_design(x, N, P);
    s_respond(x, s_beta, 0, y, N, P);
    for (int f = 0; f < TC_FIT_FORM_COUNT; f++) {
        for (int wt = 0; wt < 2; wt++) {
            double w[N];
            for (size_t i = 0; i < N; i++)
                w[i] = 1.0 / (y[i] * y[i]);
            tc_fit_solution_t sol;
            int rc = tc_fit_linear((tc_fit_form_t)f, x, y, wt ? w : NULL, N, P, &sol);
            cr_assert_eq(rc, 0, "%s: %s", tc_fit_form_name((tc_fit_form_t)f), tc_errmsg());
            s_expect_coef(&sol, s_beta, P, 1e-6, tc_fit_form_name((tc_fit_form_t)f));
        }
    }
}

Test(fit_linear, every_form_recovers_noisy_coefficients_within_their_errors, .timeout = 30)
{
    enum { NN = 400 };
    static double x[NN * P], y[NN];
    tc_test_seed(2);
    s_design(x, NN, P);
    s_respond(x, s_beta, 0.5, y, NN, P);
    for (int f = 0; f < TC_FIT_FORM_COUNT; f++) {
        tc_fit_solution_t sol;
        cr_assert_eq(tc_fit_linear((tc_fit_form_t)f, x, y, NULL, NN, P, &sol), 0, "%s",
                     tc_errmsg());
        for (size_t j = 0; j < P; j++) {
            double se = sqrt(sol.cov[j * P + j]);
            cr_expect(se > 0, "%s: standard error of coef %zu is %g",
                      tc_fit_form_name((tc_fit_form_t)f), j, se);
            cr_expect(fabs(sol.coef[j] - s_beta[j]) < 5 * se,
                      "%s: coef[%zu] = %g, true %g, se %g", tc_fit_form_name((tc_fit_form_t)f), j,
                      sol.coef[j], s_beta[j], se);
        }
        cr_expect(fabs(sol.rse - 0.5) < 0.1, "%s: rse %g, true noise 0.5",
                  tc_fit_form_name((tc_fit_form_t)f), sol.rse);
    }
}

Test(fit_linear, ols_matches_weighted_normal_equations, .timeout = 30)
{
    double x[N * P], y[N], w[N];
    tc_test_seed(3);
    s_design(x, N, P);
    s_respond(x, s_beta, 0, y, N, P);
    for (size_t i = 0; i < N; i++) {
        y[i] *= 1 + 0.05 * tc_test_normal(); /* relative noise */
        w[i] = 1.0 / (y[i] * y[i]);
    }
    tc_fit_solution_t sol;
    cr_assert_eq(tc_fit_linear(TC_FIT_OLS, x, y, w, N, P, &sol), 0, "%s", tc_errmsg());
    double b[P], rss, tr, inv[P * P];
    s_naive_ridge(x, y, w, N, P, 0, b, &rss, &tr, inv);
    double sigma2 = rss / (N - P);
    cr_expect(fabs(sol.rse - sqrt(sigma2)) < 1e-8 * sqrt(sigma2), "rse %g, naive %g", sol.rse,
              sqrt(sigma2));
    cr_expect(fabs(sol.dof - (N - P)) < 1e-9, "dof %g", sol.dof);
    for (size_t j = 0; j < P; j++) {
        cr_expect(fabs(sol.coef[j] - b[j]) < 1e-7 * fabs(b[j]), "coef[%zu] %g, naive %g", j,
                  sol.coef[j], b[j]);
        for (size_t k = 0; k < P; k++) {
            double c = sigma2 * inv[j * P + k];
            cr_expect(fabs(sol.cov[j * P + k] - c) < 1e-6 * sqrt(fabs(sigma2 * inv[j * P + j] *
                                                                      sigma2 * inv[k * P + k])),
                      "cov[%zu][%zu] %g, naive %g", j, k, sol.cov[j * P + k], c);
        }
    }
}

/* ---- ridge and GCV --------------------------------------------------------- */

/* Columns scaled to unit RMS so the solver's standardized design equals x. */
static void s_unit_rms(double *x, size_t n, size_t p)
{
    for (size_t j = 0; j < p; j++) {
        double s = 0;
        for (size_t i = 0; i < n; i++)
            s += x[i * p + j] * x[i * p + j];
        s = sqrt(s / (double)n);
        for (size_t i = 0; i < n; i++)
            x[i * p + j] /= s;
    }
}

static double s_naive_gcv(const double *x, const double *y, size_t n, size_t p, double lambda)
{
    double b[16], rss, tr;
    s_naive_ridge(x, y, NULL, n, p, lambda, b, &rss, &tr, NULL);
    return rss / (((double)n - tr) * ((double)n - tr));
}

/* y = 1 + 2 t + noise on (1, t, t + jitter): nearly collinear, unit RMS columns. */
static void s_collinear(double *x, double *y, size_t n, double jitter)
{
    for (size_t i = 0; i < n; i++) {
        double t = tc_test_uniform();
        x[i * 3] = 1;
        x[i * 3 + 1] = t;
        x[i * 3 + 2] = t + jitter * tc_test_normal();
        y[i] = 1 + 2 * t + tc_test_normal() * 0.3;
    }
    s_unit_rms(x, n, 3);
}

Test(fit_ridge, gcv_score_matches_the_naive_formula, .timeout = 30)
{
    enum { NN = 40, PP = 3 };
    double x[NN * PP], y[NN];
    tc_test_seed(4);
    s_collinear(x, y, NN, 0.01);
    const double lambdas[] = {1e-4, 1e-2, 0.1, 0.5, 2, 10};
    for (size_t k = 0; k < sizeof lambdas / sizeof lambdas[0]; k++) {
        double g;
        cr_assert_eq(tc_fit_ridge_gcv(x, y, NULL, NN, PP, lambdas[k], &g), 0, "%s", tc_errmsg());
        double ref = s_naive_gcv(x, y, NN, PP, lambdas[k]);
        cr_expect(fabs(g - ref) < 1e-8 * ref, "lambda %g: gcv %.12g, naive %.12g", lambdas[k], g,
                  ref);
    }
}

Test(fit_ridge, gcv_lambda_is_the_minimum_and_shrinks_collinear_noise, .timeout = 30)
{
    enum { NN = 40, PP = 3 };
    double x[NN * PP], y[NN];
    tc_test_seed(5);
    s_collinear(x, y, NN, 0.005);
    tc_fit_solution_t ridge, ols;
    cr_assert_eq(tc_fit_linear(TC_FIT_RIDGE, x, y, NULL, NN, PP, &ridge), 0, "%s", tc_errmsg());
    cr_assert_eq(tc_fit_linear(TC_FIT_OLS, x, y, NULL, NN, PP, &ols), 0, "%s", tc_errmsg());
    /* The chosen lambda minimizes the naive GCV over a fine grid. */
    double chosen = s_naive_gcv(x, y, NN, PP, ridge.lambda);
    for (double l = 1e-6; l < 100; l *= 1.05) {
        double g = s_naive_gcv(x, y, NN, PP, l);
        cr_expect(chosen <= g * (1 + 1e-6), "gcv at chosen lambda %g is %g > %g at lambda %g",
                  ridge.lambda, chosen, g, l);
    }
    cr_expect(ridge.lambda > 1e-3, "noisy collinear data should be regularized, lambda %g",
              ridge.lambda);
    double nr = 0, no = 0;
    for (size_t j = 0; j < PP; j++) {
        nr += ridge.coef[j] * ridge.coef[j];
        no += ols.coef[j] * ols.coef[j];
    }
    cr_expect(nr < no, "ridge coefficients (norm %g) must be smaller than OLS (%g)", sqrt(nr),
              sqrt(no));
    /* The ridge coefficients are the naive ones at the chosen lambda. */
    double b[PP], rss, tr;
    s_naive_ridge(x, y, NULL, NN, PP, ridge.lambda, b, &rss, &tr, NULL);
    for (size_t j = 0; j < PP; j++)
        cr_expect(fabs(ridge.coef[j] - b[j]) < 1e-7 * (fabs(b[j]) + 1e-9), "coef[%zu] %g naive %g",
                  j, ridge.coef[j], b[j]);
    cr_expect(fabs(ridge.dof - (NN - tr)) < 1e-8, "dof %g, naive %g", ridge.dof, NN - tr);
}

Test(fit_ridge, noise_free_data_gets_almost_no_regularization, .timeout = 30)
{
    double x[N * P], y[N];
    tc_test_seed(6);
    s_design(x, N, P);
    s_respond(x, s_beta, 0, y, N, P);
    tc_fit_solution_t sol;
    cr_assert_eq(tc_fit_linear(TC_FIT_RIDGE, x, y, NULL, N, P, &sol), 0, "%s", tc_errmsg());
    cr_expect(sol.lambda < 1e-4, "lambda %g on exact data", sol.lambda);
}

/* ---- robust ------------------------------------------------------------------ */

Test(fit_robust, outliers_do_not_move_the_robust_fit, .timeout = 30)
{
    enum { NN = 100 };
    double x[NN * P], y[NN];
    tc_test_seed(7);
    s_design(x, NN, P);
    s_respond(x, s_beta, 0.05, y, NN, P);
    for (size_t i = 0; i < NN; i += 10)
        y[i] += 400; /* 10 % gross outliers */
    tc_fit_solution_t rob, ols;
    cr_assert_eq(tc_fit_linear(TC_FIT_ROBUST, x, y, NULL, NN, P, &rob), 0, "%s", tc_errmsg());
    cr_assert_eq(tc_fit_linear(TC_FIT_OLS, x, y, NULL, NN, P, &ols), 0, "%s", tc_errmsg());
    s_expect_coef(&rob, s_beta, P, 0.02, "robust");
    cr_expect(fabs(ols.coef[0] - s_beta[0]) > 0.5 * fabs(s_beta[0]),
              "the outliers should pull OLS off (intercept %g, true %g)", ols.coef[0],
              s_beta[0]);
}

/* ---- NNLS ------------------------------------------------------------------- */

/* Brute force: among all column subsets, the unconstrained solutions that
 * are non-negative; the best of those is the NNLS optimum. */
static double s_brute_nnls(const double *x, const double *y, size_t n, size_t p, double *best)
{
    double best_rss = INFINITY;
    for (uint32_t m = 0; m < (1u << p); m++) {
        size_t cols[8], k = 0;
        for (size_t j = 0; j < p; j++)
            if (m & (1u << j))
                cols[k++] = j;
        double sub[N * 8], b[8] = {0}, rss = 0, tr;
        for (size_t i = 0; i < n; i++)
            for (size_t a = 0; a < k; a++)
                sub[i * k + a] = x[i * p + cols[a]];
        if (k)
            s_naive_ridge(sub, y, NULL, n, k, 0, b, &rss, &tr, NULL);
        else
            for (size_t i = 0; i < n; i++)
                rss += y[i] * y[i];
        bool ok = true;
        for (size_t a = 0; a < k; a++)
            ok = ok && b[a] >= 0;
        if (ok && rss < best_rss) {
            best_rss = rss;
            memset(best, 0, p * sizeof *best);
            for (size_t a = 0; a < k; a++)
                best[cols[a]] = b[a];
        }
    }
    return best_rss;
}

Test(fit_nnls, respects_the_constraint_and_matches_brute_force, .timeout = 30)
{
    const double beta[P] = {12.5, -0.3, 2.0e-8, -5.0e-7}; /* two negative */
    double x[N * P], y[N];
    tc_test_seed(8);
    s_design(x, N, P);
    s_respond(x, beta, 0.2, y, N, P);
    tc_fit_solution_t sol;
    cr_assert_eq(tc_fit_linear(TC_FIT_NNLS, x, y, NULL, N, P, &sol), 0, "%s", tc_errmsg());
    double ref[P];
    s_brute_nnls(x, y, N, P, ref);
    for (size_t j = 0; j < P; j++) {
        cr_expect(sol.coef[j] >= 0, "coef[%zu] = %g is negative", j, sol.coef[j]);
        cr_expect(fabs(sol.coef[j] - ref[j]) <= 1e-6 * fabs(ref[j]) + 1e-12,
                  "coef[%zu] = %.10g, brute force %.10g", j, sol.coef[j], ref[j]);
        if (sol.coef[j] == 0)
            for (size_t k = 0; k < P; k++)
                cr_expect(sol.cov[j * P + k] == 0, "cov of a clamped coefficient must be 0");
    }
    cr_expect(sol.rank < P, "some coefficients must be clamped (active set %zu)", sol.rank);
}

Test(fit_nnls, positive_truth_is_recovered, .timeout = 30)
{
    double x[N * P], y[N];
    tc_test_seed(9);
    s_design(x, N, P);
    s_respond(x, s_beta, 0, y, N, P);
    tc_fit_solution_t sol;
    cr_assert_eq(tc_fit_linear(TC_FIT_NNLS, x, y, NULL, N, P, &sol), 0, "%s", tc_errmsg());
    s_expect_coef(&sol, s_beta, P, 1e-6, "nnls");
    cr_expect_eq(sol.rank, P);
}

Test(fit_nnls, all_negative_truth_gives_the_zero_model, .timeout = 30)
{
    const double beta[P] = {-1, -0.1, -2e-8, -5e-7};
    double x[N * P], y[N];
    tc_test_seed(10);
    s_design(x, N, P);
    s_respond(x, beta, 0, y, N, P);
    tc_fit_solution_t sol;
    cr_assert_eq(tc_fit_linear(TC_FIT_NNLS, x, y, NULL, N, P, &sol), 0, "%s", tc_errmsg());
    for (size_t j = 0; j < P; j++)
        cr_expect_eq(sol.coef[j], 0.0, "coef[%zu] = %g", j, sol.coef[j]);
}

/* ---- degenerate input ------------------------------------------------------ */

Test(fit_linear, zero_column_gets_zero_and_degenerate_input_fails, .timeout = 30)
{
    double x[N * P], y[N];
    tc_test_seed(11);
    s_design(x, N, P);
    for (size_t i = 0; i < N; i++)
        x[i * P + 2] = 0;
    s_respond(x, s_beta, 0, y, N, P);
    tc_fit_solution_t sol;
    for (int f = 0; f < TC_FIT_FORM_COUNT; f++) {
        cr_assert_eq(tc_fit_linear((tc_fit_form_t)f, x, y, NULL, N, P, &sol), 0, "%s",
                     tc_errmsg());
        cr_expect_eq(sol.coef[2], 0.0);
        cr_expect(fabs(sol.coef[0] - s_beta[0]) < 1e-6 * s_beta[0], "%s: coef[0] %g",
                  tc_fit_form_name((tc_fit_form_t)f), sol.coef[0]);
    }
    cr_expect_eq(tc_fit_linear(TC_FIT_OLS, x, y, NULL, P, P, &sol), TC_EINVAL);
    /* A column that is a multiple of another is refused by every form. */
    for (size_t i = 0; i < N; i++)
        x[i * P + 2] = 3 * x[i * P + 1];
    for (int f = 0; f < TC_FIT_FORM_COUNT; f++) {
        cr_expect_eq(tc_fit_linear((tc_fit_form_t)f, x, y, NULL, N, P, &sol), TC_EINVAL,
                     "%s accepted collinear features", tc_fit_form_name((tc_fit_form_t)f));
        cr_expect(strstr(tc_errmsg(), "collinear") != NULL, "%s", tc_errmsg());
    }
    y[3] = NAN;
    cr_expect_eq(tc_fit_linear(TC_FIT_OLS, x, y, NULL, N, P, &sol), TC_EINVAL);
}
