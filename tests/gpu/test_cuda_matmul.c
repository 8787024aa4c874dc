/* Matmul plans on a real GPU (agent/devices/cuda/cuda_matmul.c): every
 * training direction of Linear-like (mm, addmm with and without cuBLASLt's
 * bias epilogue, transposed operands) and attention-like (bmm) configs, in
 * every data type the GPU has, runs cuBLAS or cuBLASLt and gives what the
 * double-precision reference computes from the operands it read; the
 * routes are PyTorch's; the benchmark around a plan measures. Skips, with
 * the reason, where no GPU or driver is present or the agent was built
 * without CUDA. */
#include "matmul_bench.h"

#include "tc_error.h"
#include "tc_matmul_step.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static tc_device_t *s_open_gpu(void)
{
    unsigned count = 0;
    char why[512];
    tc_backend_cuda.enumerate(&count, why, sizeof why);
    if (count == 0)
        cr_skip_test("no GPU to test the cuBLAS matmuls on: %s", why);
    tc_device_t *dev = NULL;
    int rc = tc_device_open("cuda:0", 0, &dev);
    cr_assert_eq(rc, 0, "opening cuda:0: %s", tc_errmsg());
    return dev;
}

typedef struct {
    unsigned batch, m, n, k;
    tc_mm_minibatch_t where;
    bool ta, tb, weight, bias;
    const char *route; /* of the forward */
} shape_t;

static const shape_t s_shapes[] = {
    {1, 7, 24, 16, TC_MM_MB_ROWS, false, true, true, true, "cublaslt"}, /* a Linear, addmm */
    {1, 5, 12, 9, TC_MM_MB_ROWS, false, true, true, false, "cublas"},   /* a Linear, mm */
    {1, 6, 10, 8, TC_MM_MB_ROWS, false, false, false, false, "cublas"}, /* x @ W, row-major W */
    {1, 6, 10, 8, TC_MM_MB_ROWS, true, false, false, false, "cublas"},  /* column-major A */
    {1, 7, 1, 16, TC_MM_MB_ROWS, false, true, true, true, "cublas"},    /* n = 1: no cuBLASLt */
    {4, 9, 9, 8, TC_MM_MB_BATCH, false, true, false, false, "cublas"},  /* scores q k^T */
    {4, 9, 8, 9, TC_MM_MB_BATCH, false, false, false, false, "cublas"}, /* values */
    {3, 5, 6, 4, TC_MM_MB_NONE, true, false, false, false, "cublas"},   /* no mini-batch */
    {1, 50, 384, 96, TC_MM_MB_ROWS, false, true, true, true, "cublaslt"}, /* a larger Linear */
};

static const Traincast__V1__Direction s_dirs[] = {
    TRAINCAST__V1__DIRECTION__DIRECTION_FWD,
    TRAINCAST__V1__DIRECTION__DIRECTION_BWD_DATA,
    TRAINCAST__V1__DIRECTION__DIRECTION_BWD_FILTER,
};

static tc_matmul_config_t s_config(const shape_t *s, unsigned minibatch, Traincast__V1__DType dt)
{
    tc_matmul_config_t c = tc_matmul_config_default();
    c.batch = s->batch, c.m = s->m, c.n = s->n, c.k = s->k, c.minibatch_in = s->where;
    c.trans_a = s->ta, c.trans_b = s->tb, c.weight = s->weight, c.bias = s->bias;
    c.minibatch = minibatch;
    c.dtype = dt;
    return c;
}

/* Every shape and direction in `dt` against the reference; fp32 (no TF32)
 * as tightly as the CPU's. */
static void s_check(Traincast__V1__DType dt, double within)
{
    tc_device_t *dev = s_open_gpu();
    for (size_t i = 0; i < sizeof s_shapes / sizeof s_shapes[0]; i++)
        for (size_t d = 0; d < 3; d++) {
            tc_matmul_spec_t spec = {.config = s_config(&s_shapes[i], 3, dt),
                                     .direction = s_dirs[d], .seed = 11 + i};
            char label[128];
            tc_matmul_config_label(&spec.config, label, sizeof label);
            double worst = -1;
            int rc = tc_matmul_verify(dev, &spec, &worst);
            if (rc == TC_EUNSUPPORTED)
                cr_skip_test("%s: %s", tc_dtype_name(dt), tc_errmsg());
            cr_expect_eq(rc, 0, "%s %s %s: %s", label, tc_direction_name(s_dirs[d]),
                         tc_dtype_name(dt), tc_errmsg());
            cr_expect(worst >= 0 && worst < within, "%s %s %s: worst relative error %g", label,
                      tc_direction_name(s_dirs[d]), tc_dtype_name(dt), worst);
        }
    tc_device_close(&dev);
}

Test(cuda_matmul, fp32_every_direction_matches_the_reference, .timeout = 300)
{
    s_check(TRAINCAST__V1__DTYPE__DTYPE_FP32, 1e-4);
}

Test(cuda_matmul, fp32_strict_every_direction_matches_the_reference, .timeout = 300)
{
    s_check(TRAINCAST__V1__DTYPE__DTYPE_FP32_STRICT, 1e-4);
}

Test(cuda_matmul, tf32_every_direction_matches_the_reference, .timeout = 300)
{
    s_check(TRAINCAST__V1__DTYPE__DTYPE_TF32,
            tc_matmul_tolerance(TRAINCAST__V1__DTYPE__DTYPE_TF32));
}

Test(cuda_matmul, fp16_every_direction_matches_the_reference, .timeout = 300)
{
    s_check(TRAINCAST__V1__DTYPE__DTYPE_FP16,
            tc_matmul_tolerance(TRAINCAST__V1__DTYPE__DTYPE_FP16));
}

Test(cuda_matmul, bf16_every_direction_matches_the_reference, .timeout = 300)
{
    s_check(TRAINCAST__V1__DTYPE__DTYPE_BF16,
            tc_matmul_tolerance(TRAINCAST__V1__DTYPE__DTYPE_BF16));
}

/* The plan's operands are what it says, and the result a hand-computed
 * product: C = A B^T + bias on cuBLASLt's bias epilogue, read back. */
Test(cuda_matmul, a_small_product_by_hand, .timeout = 60)
{
    tc_device_t *dev = s_open_gpu();
    const shape_t s = {1, 1, 2, 2, TC_MM_MB_ROWS, false, true, true, true, "cublaslt"};
    tc_matmul_spec_t spec = {.config = s_config(&s, 2, TRAINCAST__V1__DTYPE__DTYPE_FP32),
                             .direction = TRAINCAST__V1__DIRECTION__DIRECTION_FWD, .seed = 1};
    tc_matmul_plan_t *plan = NULL;
    cr_assert_eq(tc_matmul_plan_create(dev, &spec, &plan), 0, "%s", tc_errmsg());
    cr_expect_str_eq(tc_matmul_plan_route(plan), "cublaslt");
    float a[4], b[4], bias[2], c[4];
    cr_assert_eq(tc_matmul_plan_read(plan, TC_MM_TENSOR_A, a, 4), 0, "%s", tc_errmsg());
    cr_assert_eq(tc_matmul_plan_read(plan, TC_MM_TENSOR_B, b, 4), 0, "%s", tc_errmsg());
    cr_assert_eq(tc_matmul_plan_read(plan, TC_MM_TENSOR_BIAS, bias, 2), 0, "%s", tc_errmsg());
    cr_expect_eq(tc_matmul_plan_read(plan, TC_MM_TENSOR_C, c, 3), TC_EINVAL, "count checked");
    /* The inputs are the CPU plan's: tc_random_value of seed + operand. */
    for (int i = 0; i < 4; i++) {
        cr_expect_eq(a[i], tc_random_value(1 + TC_MM_TENSOR_A, (uint64_t)i));
        cr_expect_eq(b[i], tc_random_value(1 + TC_MM_TENSOR_B, (uint64_t)i));
    }
    double ms = 0;
    cr_assert_eq(tc_matmul_plan_run(plan, &ms), 0, "%s", tc_errmsg());
    cr_expect_gt(ms, 0.0);
    cr_assert_eq(tc_matmul_plan_read(plan, TC_MM_TENSOR_C, c, 4), 0, "%s", tc_errmsg());
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 2; j++) {
            double want = bias[j] + (double)a[2 * i] * b[2 * j] +
                          (double)a[2 * i + 1] * b[2 * j + 1];
            cr_expect(fabs(c[2 * i + j] - want) < 1e-5, "c[%d][%d] = %g, want %g", i, j,
                      (double)c[2 * i + j], want);
        }
    tc_matmul_plan_destroy(&plan);
    /* A plan without a bias has no bias to read. */
    spec.config.bias = false;
    cr_assert_eq(tc_matmul_plan_create(dev, &spec, &plan), 0, "%s", tc_errmsg());
    cr_expect_str_eq(tc_matmul_plan_route(plan), "cublas");
    cr_expect_eq(tc_matmul_plan_read(plan, TC_MM_TENSOR_BIAS, bias, 2), TC_ENOTFOUND);
    tc_matmul_plan_destroy(&plan);
    tc_device_close(&dev);
}

/* DISABLE_ADDMM_CUDA_LT=1 turns PyTorch's cuBLASLt path off: the bias is
 * copied into the result and cuBLAS adds the product to it. */
Test(cuda_matmul, addmm_without_cublaslt, .timeout = 60)
{
    setenv("DISABLE_ADDMM_CUDA_LT", "1", 1);
    tc_device_t *dev = s_open_gpu();
    tc_matmul_spec_t spec = {.config = s_config(&s_shapes[0], 3, TRAINCAST__V1__DTYPE__DTYPE_FP32),
                             .direction = TRAINCAST__V1__DIRECTION__DIRECTION_FWD, .seed = 5};
    tc_matmul_plan_t *plan = NULL;
    cr_assert_eq(tc_matmul_plan_create(dev, &spec, &plan), 0, "%s", tc_errmsg());
    cr_expect_str_eq(tc_matmul_plan_route(plan), "cublas");
    tc_matmul_plan_destroy(&plan);
    double worst = -1;
    cr_expect_eq(tc_matmul_verify(dev, &spec, &worst), 0, "%s", tc_errmsg());
    cr_expect(worst >= 0 && worst < 1e-4, "worst relative error %g", worst);
    tc_device_close(&dev);
}

/* The forward's route per shape, and the conv benchmarks' measurement
 * around each plan. */
Test(cuda_matmul, routes_and_measurement, .timeout = 120)
{
    tc_device_t *dev = s_open_gpu();
    tc_measure_opts_t mo = tc_measure_defaults();
    mo.budget_ms = 50;
    mo.max_reps = 20;
    for (size_t i = 0; i < sizeof s_shapes / sizeof s_shapes[0]; i++) {
        tc_matmul_spec_t spec = {
            .config = s_config(&s_shapes[i], 3, TRAINCAST__V1__DTYPE__DTYPE_FP32),
            .direction = TRAINCAST__V1__DIRECTION__DIRECTION_FWD};
        tc_matmul_outcome_t o;
        int rc = tc_matmul_bench(dev, &spec, &mo, &o);
        cr_assert_eq(rc, 0, "%s", tc_errmsg());
        cr_expect_str_eq(o.route, s_shapes[i].route, "shape %zu", i);
        cr_expect_geq(o.samples.n, mo.min_reps);
        cr_expect_gt(o.samples.stats.median, 0.0);
        tc_matmul_outcome_free(&o);
    }
    tc_device_close(&dev);
}
