/* A fitted model as stored: predictions with their variance. */
#include "fit.h"

#include "tc_error.h"

#include <gsl/gsl_cdf.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

void tc_fit_from_solution(tc_fit_t *fit, const tc_fit_data_t *d, const tc_fit_spec_t *spec,
                          const tc_fit_solution_t *sol)
{
    fit->form = spec->form;
    fit->weighting = spec->weighting;
    fit->p = 0;
    for (size_t j = 0; j < d->p; j++) {
        if (spec->mask & (1u << j))
            snprintf(fit->features[fit->p++], TC_FIT_NAME_LEN, "%s", d->names[j]);
    }
    memset(fit->coef, 0, sizeof fit->coef);
    memset(fit->cov, 0, sizeof fit->cov);
    for (size_t a = 0; a < fit->p; a++) {
        fit->coef[a] = sol->coef[a];
        for (size_t b = 0; b < fit->p; b++)
            fit->cov[a * fit->p + b] = sol->cov[a * sol->p + b];
    }
    fit->rse = sol->rse;
    fit->dof = sol->dof;
    fit->lambda = sol->lambda;
}

int tc_fit_predict(const tc_fit_t *fit, const tc_features_t *f, double conv_ms,
                   double *nonconv_ms, double *variance_ms2)
{
    if (fit->p > TC_FIT_MAX_FEATURES)
        return tc_fail(TC_EINVAL, "fit %lld has %zu features, more than %d", fit->fit_id, fit->p,
                       TC_FIT_MAX_FEATURES);
    double x[TC_FIT_MAX_FEATURES];
    for (size_t j = 0; j < fit->p; j++) {
        int rc = tc_fit_feature_at(f, conv_ms, fit->features[j], &x[j]);
        if (rc < 0)
            return tc_err_context(rc, "fit %lld for %s", fit->fit_id, fit->device);
    }
    double mean = 0, var = 0;
    for (size_t a = 0; a < fit->p; a++) {
        mean += fit->coef[a] * x[a];
        for (size_t b = 0; b < fit->p; b++)
            var += x[a] * fit->cov[a * fit->p + b] * x[b];
    }
    double noise = isfinite(fit->rse) ? fit->rse : 0;
    if (fit->weighting == TC_FIT_W_RELATIVE)
        noise *= fabs(conv_ms + mean);
    *nonconv_ms = mean;
    if (variance_ms2)
        *variance_ms2 = fmax(var, 0) + noise * noise;
    return 0;
}

double tc_fit_t_quantile(double p, double dof)
{
    if (!(dof >= 1) || !isfinite(dof))
        return gsl_cdf_ugaussian_Pinv(p);
    return gsl_cdf_tdist_Pinv(p, dof);
}
