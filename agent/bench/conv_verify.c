#include "conv_verify.h"

#include "conv_ref.h"
#include "tc_error.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void tc_conv_tolerance(Traincast__V1__DType dtype, double terms, double *atol, double *rtol)
{
    /* Unit roundoff of the storage or math type, with slack for transform
     * based algorithms (Winograd, FFT) that lose a few more bits. */
    double u;
    switch (dtype) {
    case TRAINCAST__V1__DTYPE__DTYPE_BF16: u = 1.0 / 128; break;
    case TRAINCAST__V1__DTYPE__DTYPE_FP16: u = 1.0 / 256; break; /* 2^-11 rounding, x8 slack */
    case TRAINCAST__V1__DTYPE__DTYPE_TF32: u = 1.0 / 1024; break;
    default: u = 1e-5; break;
    }
    /* Inputs are uniform in [-1, 1): an output sums `terms` products whose
     * magnitude grows like sqrt(terms). */
    *atol = 4 * u * sqrt(terms > 1 ? terms : 1);
    *rtol = 2 * u;
}

static int s_read(tc_conv_plan_t *plan, const tc_conv_config_t *c, tc_tensor_t t, float **out)
{
    size_t n = tc_tensor_count(c, t);
    *out = malloc((n ? n : 1) * sizeof **out);
    if (!*out)
        return tc_fail(TC_ENOMEM, "out of memory reading tensor %s", tc_tensor_name(t));
    int rc = tc_conv_plan_read(plan, t, *out, n);
    if (rc < 0) {
        free(*out);
        *out = NULL;
    }
    return rc;
}

static void s_compare(const tc_conv_config_t *c, tc_tensor_t t, const float *got, const float *want,
                      double atol, double rtol, tc_verify_t *res, double *worst_err)
{
    size_t n = tc_tensor_count(c, t), wi = 0;
    res->wrong += tc_conv_ref_compare(got, want, n, atol, rtol, &wi);
    res->checked += n;
    double err = fabs((double)got[wi] - want[wi]);
    if (!isfinite(err))
        err = INFINITY;
    if (n && err > *worst_err) {
        *worst_err = err;
        res->tensor = t;
        res->worst = wi;
        res->got = got[wi];
        res->want = want[wi];
    }
}

int tc_conv_verify(tc_conv_plan_t *plan, const tc_conv_spec_t *spec, tc_verify_t *res)
{
    int rc = 0;
    const tc_conv_config_t *c = &spec->config;
    float *a = NULL, *b = NULL, *bias = NULL, *got = NULL, *want = NULL, *got_b = NULL,
          *want_b = NULL;
    memset(res, 0, sizeof *res);
    double worst = -1;
    tc_tensor_t out_t = tc_direction_output(spec->direction);
    /* fp32 on cuDNN may run on TF32 tensor cores, as PyTorch allows by
     * default (fp32_strict may not). */
    Traincast__V1__DType math = c->dtype;
    if (math == TRAINCAST__V1__DTYPE__DTYPE_FP32 && !strncmp(tc_conv_plan_route(plan), "cudnn", 5))
        math = TRAINCAST__V1__DTYPE__DTYPE_TF32;
    tc_conv_tolerance(math, tc_conv_ref_terms(c, spec->direction), &res->atol, &res->rtol);
    TC_TRY(s_read(plan, c, out_t, &got));
    want = malloc((tc_tensor_count(c, out_t) ? tc_tensor_count(c, out_t) : 1) * sizeof *want);
    if (!want)
        TC_FAIL_GOTO(TC_ENOMEM, "out of memory for the reference output");
    switch (spec->direction) {
    case TRAINCAST__V1__DIRECTION__DIRECTION_BWD_DATA:
        TC_TRY(s_read(plan, c, TC_TENSOR_DY, &a));
        TC_TRY(s_read(plan, c, TC_TENSOR_W, &b));
        TC_TRY(tc_conv_ref_bwd_data(c, a, b, want));
        break;
    case TRAINCAST__V1__DIRECTION__DIRECTION_BWD_FILTER: {
        TC_TRY(s_read(plan, c, TC_TENSOR_X, &a));
        TC_TRY(s_read(plan, c, TC_TENSOR_DY, &b));
        /* The bias gradient is there when the backend computes it. */
        rc = s_read(plan, c, TC_TENSOR_DB, &got_b);
        if (rc == TC_ENOTFOUND)
            rc = 0;
        TC_TRY(rc);
        if (got_b) {
            want_b = malloc(c->k * sizeof *want_b);
            if (!want_b)
                TC_FAIL_GOTO(TC_ENOMEM, "out of memory for the reference bias gradient");
        }
        TC_TRY(tc_conv_ref_bwd_filter(c, a, b, want, want_b));
        break;
    }
    default:
        TC_TRY(s_read(plan, c, TC_TENSOR_X, &a));
        TC_TRY(s_read(plan, c, TC_TENSOR_W, &b));
        rc = s_read(plan, c, TC_TENSOR_B, &bias);
        if (rc == TC_ENOTFOUND)
            rc = 0;
        TC_TRY(rc);
        TC_TRY(tc_conv_ref_fwd(c, a, b, bias, want));
        break;
    }
    s_compare(c, out_t, got, want, res->atol, res->rtol, res, &worst);
    if (got_b) {
        double atol, rtol;
        double terms = (double)c->n * tc_conv_out_h(c) * tc_conv_out_w(c);
        tc_conv_tolerance(math, terms, &atol, &rtol);
        s_compare(c, TC_TENSOR_DB, got_b, want_b, atol, rtol, res, &worst);
    }
err:
    free(a);
    free(b);
    free(bias);
    free(got);
    free(want);
    free(got_b);
    free(want_b);
    return rc;
}
