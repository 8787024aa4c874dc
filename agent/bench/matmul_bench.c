#include "matmul_bench.h"

#include "conv_bench.h"
#include "tc_error.h"
#include "tc_matmul_step.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int s_run_cb(void *arg, double *ms)
{
    return tc_matmul_plan_run(arg, ms);
}

int tc_matmul_bench(tc_device_t *dev, const tc_matmul_spec_t *spec, const tc_measure_opts_t *mo,
                    tc_matmul_outcome_t *out)
{
    memset(out, 0, sizeof *out);
    out->spec = *spec;
    tc_matmul_plan_t *plan = NULL;
    int rc = tc_matmul_plan_create(dev, spec, &plan);
    if (rc < 0)
        return rc;
    out->gemm = plan->gemm;
    snprintf(out->route, sizeof out->route, "%s", tc_matmul_plan_route(plan));
    out->framework_ms = tc_matmul_plan_framework_ms(plan);
    out->spec_quiet_pct = mo->quiet.threshold_pct;
    rc = tc_measure(s_run_cb, plan, mo, &out->samples);
    tc_matmul_plan_destroy(&plan);
    return rc;
}

void tc_matmul_outcome_free(tc_matmul_outcome_t *o)
{
    if (o)
        tc_samples_free(&o->samples);
}

const char *tc_matmul_call_name(const tc_matmul_config_t *c)
{
    return !tc_matmul_is_mm(c) ? "bmm" : c->bias ? "addmm" : "mm";
}

int tc_matmul_outcome_to_proto(const tc_matmul_outcome_t *o, Traincast__V1__Policy policy,
                               Traincast__V1__ConvResult **out)
{
    *out = NULL;
    Traincast__V1__ConvResult *r = calloc(1, sizeof *r);
    if (!r)
        return tc_fail(TC_ENOMEM, "out of memory building a matmul result");
    traincast__v1__conv_result__init(r);
    int rc = tc_samples_to_result(&o->samples, o->spec_quiet_pct, r);
    if (rc < 0) {
        tc_conv_result_proto_free(&r);
        return rc;
    }
    r->matmul = calloc(1, sizeof *r->matmul);
    r->algo = strdup(tc_matmul_call_name(&o->spec.config));
    r->route = strdup(o->route);
    if (!r->matmul || !r->algo || !r->route) {
        tc_conv_result_proto_free(&r);
        return tc_fail(TC_ENOMEM, "out of memory building a matmul result");
    }
    traincast__v1__matmul_config__init(r->matmul);
    tc_matmul_config_to_proto(&o->spec.config, r->matmul);
    r->direction = o->spec.direction;
    r->policy = policy;
    r->algo_id = -1;
    *out = r;
    return 0;
}

void tc_gemm_reference(const tc_gemm_t *g, const float *a, const float *b, const float *bias,
                       double *c)
{
    uint64_t m = g->m, n = g->n, k = g->k;
    for (uint64_t p = 0; p < g->count; p++) {
        const float *ap = a + p * m * k, *bp = b + p * k * n;
        for (uint64_t i = 0; i < m; i++)
            for (uint64_t j = 0; j < n; j++) {
                double acc = bias ? bias[j] : 0.0;
                for (uint64_t l = 0; l < k; l++)
                    acc += (double)(g->trans_a ? ap[l * m + i] : ap[i * k + l]) *
                           (double)(g->trans_b ? bp[j * k + l] : bp[l * n + j]);
                c[p * m * n + i * n + j] = acc;
            }
    }
}

double tc_matmul_tolerance(Traincast__V1__DType dtype)
{
    switch (dtype) {
    case TRAINCAST__V1__DTYPE__DTYPE_BF16: return 3e-2; /* 8-bit significand, bf16 result */
    case TRAINCAST__V1__DTYPE__DTYPE_FP16: return 1e-2; /* 11-bit significand, fp16 result */
    case TRAINCAST__V1__DTYPE__DTYPE_TF32: return 1e-2; /* operands rounded to 11 bits */
    default: return 1e-3;
    }
}

int tc_matmul_verify(tc_device_t *dev, const tc_matmul_spec_t *spec, double *worst)
{
    *worst = 0;
    tc_matmul_plan_t *plan = NULL;
    float *t[TC_MM_TENSOR_COUNT] = {NULL};
    double *ref = NULL;
    int rc = tc_matmul_plan_create(dev, spec, &plan);
    if (rc < 0)
        return rc;
    const tc_gemm_t *g = &plan->gemm;
    double ms;
    TC_TRY(tc_matmul_plan_run(plan, &ms));
    for (int i = 0; i < TC_MM_TENSOR_COUNT; i++) {
        size_t n = tc_gemm_tensor_count(g, (tc_mm_tensor_t)i);
        if (!n)
            continue;
        t[i] = malloc(n * sizeof *t[i]);
        if (!t[i])
            TC_FAIL_GOTO(TC_ENOMEM, "out of memory reading a matmul operand");
        TC_TRY(tc_matmul_plan_read(plan, (tc_mm_tensor_t)i, t[i], n));
    }
    size_t nc = tc_gemm_tensor_count(g, TC_MM_TENSOR_C);
    ref = malloc(nc * sizeof *ref);
    if (!ref)
        TC_FAIL_GOTO(TC_ENOMEM, "out of memory for the reference");
    tc_gemm_reference(g, t[TC_MM_TENSOR_A], t[TC_MM_TENSOR_B], t[TC_MM_TENSOR_BIAS], ref);
    size_t at = 0;
    for (size_t i = 0; i < nc; i++) {
        double e = fabs((double)t[TC_MM_TENSOR_C][i] - ref[i]) / (1.0 + fabs(ref[i]));
        if (!(e <= *worst)) { /* NaN counts as the worst */
            *worst = isnan(e) ? INFINITY : e;
            at = i;
        }
    }
    if (*worst > tc_matmul_tolerance(spec->config.dtype))
        TC_FAIL_GOTO(TC_ELIB, "the %s matmul gives wrong results: c[%zu] = %g, reference %g",
                     tc_matmul_plan_route(plan), at, (double)t[TC_MM_TENSOR_C][at], ref[at]);
err:
    for (int i = 0; i < TC_MM_TENSOR_COUNT; i++)
        free(t[i]);
    free(ref);
    tc_matmul_plan_destroy(&plan);
    return rc;
}
