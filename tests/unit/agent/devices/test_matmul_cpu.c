/* Matmul plans on the CPU (agent/devices/cpu/cpu_matmul.c): every training
 * direction of Linear-like (mm, with and without a bias, transposed
 * operands) and attention-like (bmm) configs runs a real GEMM on the
 * framework's BLAS, or baddbmm's loops below 400 multiply-accumulates, and
 * gives what a double-precision reference computes, on 1 and 2 threads;
 * the benchmark around it measures with the conv benchmarks' loop, and a
 * split bmm pays the framework's cost per product. */
#include "matmul_bench.h"

#include "tc_error.h"
#include "tc_matmul_step.h"

#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

typedef struct {
    unsigned batch, m, n, k;
    tc_mm_minibatch_t where;
    bool ta, tb, weight, bias;
    const char *route; /* of the forward at mini-batch 3 */
} shape_t;

static const shape_t s_shapes[] = {
    {1, 7, 24, 16, TC_MM_MB_ROWS, false, true, true, true, "blas"},   /* a Linear, addmm */
    {1, 5, 12, 9, TC_MM_MB_ROWS, false, true, true, false, "blas"},   /* a Linear, mm */
    {1, 6, 10, 8, TC_MM_MB_ROWS, false, false, false, false, "blas"}, /* x @ W, row-major W */
    {1, 6, 10, 8, TC_MM_MB_ROWS, true, false, false, false, "blas"},  /* column-major A */
    {4, 9, 9, 8, TC_MM_MB_BATCH, false, true, false, false, "blas"},  /* scores q k^T */
    {4, 9, 8, 9, TC_MM_MB_BATCH, false, false, false, false, "blas"}, /* values */
    {2, 3, 4, 5, TC_MM_MB_BATCH, false, true, false, false, "naive"}, /* < 400 MACs */
    {3, 5, 6, 4, TC_MM_MB_NONE, true, false, false, false, "naive"},  /* no mini-batch */
};

static const Traincast__V1__Direction s_dirs[] = {
    TRAINCAST__V1__DIRECTION__DIRECTION_FWD,
    TRAINCAST__V1__DIRECTION__DIRECTION_BWD_DATA,
    TRAINCAST__V1__DIRECTION__DIRECTION_BWD_FILTER,
};

static tc_device_t *s_open(unsigned threads)
{
    tc_device_t *dev = NULL;
    int rc = tc_device_open("cpu", threads, &dev);
    if (rc == TC_EINVAL)
        cr_skip_test("no %u CPUs here: %s", threads, tc_errmsg());
    cr_assert_eq(rc, 0, "opening the cpu device: %s", tc_errmsg());
    return dev;
}

static tc_matmul_config_t s_config(const shape_t *s, unsigned minibatch)
{
    tc_matmul_config_t c = tc_matmul_config_default();
    c.batch = s->batch, c.m = s->m, c.n = s->n, c.k = s->k, c.minibatch_in = s->where;
    c.trans_a = s->ta, c.trans_b = s->tb, c.weight = s->weight, c.bias = s->bias;
    c.minibatch = minibatch;
    return c;
}

static void s_check(unsigned threads)
{
    tc_device_t *dev = s_open(threads);
    for (size_t i = 0; i < sizeof s_shapes / sizeof s_shapes[0]; i++)
        for (size_t d = 0; d < 3; d++) {
            tc_matmul_spec_t spec = {.config = s_config(&s_shapes[i], 3),
                                     .direction = s_dirs[d], .seed = 11 + i};
            char label[128];
            tc_matmul_config_label(&spec.config, label, sizeof label);
            double worst = -1;
            int rc = tc_matmul_verify(dev, &spec, &worst);
            if (rc == TC_ENOTFOUND)
                cr_skip_test("no BLAS: %s", tc_errmsg());
            cr_expect_eq(rc, 0, "%s %s on %u thread(s): %s", label,
                         tc_direction_name(s_dirs[d]), threads, tc_errmsg());
            cr_expect(worst >= 0 && worst < 1e-4, "%s %s: worst relative error %g", label,
                      tc_direction_name(s_dirs[d]), worst);
        }
    tc_device_close(&dev);
}

Test(matmul_cpu, every_direction_matches_the_reference_1_thread, .timeout = 120)
{
    s_check(1);
}

Test(matmul_cpu, every_direction_matches_the_reference_2_threads, .timeout = 120)
{
    s_check(2);
}

/* The plan's operands are what it says, and the result a hand-computed
 * product: C = A B^T with A = [[1, 2], [3, 4]], B = [[5, 6], [7, 8]] stored
 * [n, k], plus the bias. */
Test(matmul_cpu, a_small_product_by_hand, .timeout = 30)
{
    tc_device_t *dev = s_open(1);
    const shape_t s = {1, 1, 2, 2, TC_MM_MB_ROWS, false, true, true, true, "blas"};
    tc_matmul_spec_t spec = {.config = s_config(&s, 2),
                             .direction = TRAINCAST__V1__DIRECTION__DIRECTION_FWD, .seed = 1};
    tc_matmul_plan_t *plan = NULL;
    int rc = tc_matmul_plan_create(dev, &spec, &plan);
    if (rc == TC_ENOTFOUND)
        cr_skip_test("no BLAS: %s", tc_errmsg());
    cr_assert_eq(rc, 0, "%s", tc_errmsg());
    cr_expect_str_eq(tc_matmul_plan_route(plan), "blas");
    float a[4], b[4], bias[2], c[4];
    cr_assert_eq(tc_matmul_plan_read(plan, TC_MM_TENSOR_A, a, 4), 0);
    cr_assert_eq(tc_matmul_plan_read(plan, TC_MM_TENSOR_B, b, 4), 0);
    cr_assert_eq(tc_matmul_plan_read(plan, TC_MM_TENSOR_BIAS, bias, 2), 0);
    cr_expect_eq(tc_matmul_plan_read(plan, TC_MM_TENSOR_C, c, 3), TC_EINVAL, "count checked");
    double ms;
    cr_assert_eq(tc_matmul_plan_run(plan, &ms), 0, "%s", tc_errmsg());
    cr_assert_eq(tc_matmul_plan_read(plan, TC_MM_TENSOR_C, c, 4), 0);
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 2; j++) {
            double want = bias[j] + (double)a[2 * i] * b[2 * j] +
                          (double)a[2 * i + 1] * b[2 * j + 1];
            cr_expect(fabs(c[2 * i + j] - want) < 1e-5, "c[%d][%d] = %g, want %g", i, j,
                      (double)c[2 * i + j], want);
        }
    tc_matmul_plan_destroy(&plan);
    tc_device_close(&dev);
}

/* Every shape's forward runs on its route and is measured; a bmm on the
 * split path (PyTorch 1.13 without MKL: one addmm_impl_cpu_ per product)
 * also pays the framework's own cost per product besides its sgemm_,
 * taken once per process from the probe's timing of PyTorch's own bmm: the
 * same for every product, and inside each timed run. An mm and baddbmm's
 * loops for tiny products pay none, nor does anything without a framework. */
Test(matmul_cpu, routes_measurement_and_the_split_bmm_cost, .timeout = 60)
{
    tc_device_t *dev = s_open(1);
    tc_device_env_t env;
    tc_device_environment(dev, &env);
    bool framework = strcmp(env.framework, "no framework") != 0;
    tc_measure_opts_t mo = tc_measure_defaults();
    mo.budget_ms = 50;
    mo.max_reps = 20;
    double per = -1;
    for (size_t i = 0; i < sizeof s_shapes / sizeof s_shapes[0]; i++) {
        tc_matmul_spec_t spec = {.config = s_config(&s_shapes[i], 3),
                                 .direction = TRAINCAST__V1__DIRECTION__DIRECTION_FWD};
        tc_matmul_outcome_t o;
        int rc = tc_matmul_bench(dev, &spec, &mo, &o);
        if (rc == TC_ENOTFOUND)
            cr_skip_test("no BLAS: %s", tc_errmsg());
        cr_assert_eq(rc, 0, "%s", tc_errmsg());
        cr_expect_str_eq(o.route, s_shapes[i].route, "shape %zu", i);
        cr_expect_geq(o.samples.n, mo.min_reps);
        cr_expect_gt(o.samples.stats.median, 0.0);
        tc_gemm_t f = tc_matmul_forward(&spec.config);
        cr_expect_eq(o.gemm.count, f.count);
        cr_expect_eq(o.gemm.m, f.m);
        bool split = !tc_matmul_is_mm(&spec.config) && !strcmp(o.route, "blas");
        if (split && framework) {
            double p = o.framework_ms / (double)o.gemm.count;
            cr_expect_gt(p, 0.0, "shape %zu", i);
            if (per < 0)
                per = p;
            cr_expect(fabs(p - per) <= 1e-9 * per, "shape %zu: %g ms per product, not %g", i,
                      p, per);
            cr_expect_geq(o.samples.stats.min, o.framework_ms, "shape %zu: runs include it", i);
        } else {
            cr_expect_eq(o.framework_ms, 0.0, "shape %zu (%s, %s)", i, o.route, env.framework);
        }
        tc_matmul_outcome_free(&o);
    }
    if (framework)
        cr_expect_gt(per, 0.0, "a split bmm among the shapes, and %s's cost per product taken "
                               "from the probe (one with MKL has no split loop)", env.framework);
    tc_device_close(&dev);
}

Test(matmul_cpu, bad_specs_fail, .timeout = 30)
{
    tc_device_t *dev = s_open(1);
    tc_matmul_plan_t *plan = NULL;
    tc_matmul_spec_t spec = {.config = s_config(&s_shapes[0], 0),
                             .direction = TRAINCAST__V1__DIRECTION__DIRECTION_FWD};
    cr_expect_eq(tc_matmul_plan_create(dev, &spec, &plan), TC_EINVAL, "no mini-batch");
    spec.config.minibatch = 2;
    spec.config.dtype = TRAINCAST__V1__DTYPE__DTYPE_FP16;
    cr_expect_eq(tc_matmul_plan_create(dev, &spec, &plan), TC_EUNSUPPORTED);
    cr_expect(strstr(tc_errmsg(), "fp16"), "%s", tc_errmsg());
    spec.config.dtype = TRAINCAST__V1__DTYPE__DTYPE_FP32;
    spec.direction = TRAINCAST__V1__DIRECTION__DIRECTION_UNSPECIFIED;
    cr_expect_eq(tc_matmul_plan_create(dev, &spec, &plan), TC_EINVAL);
    cr_expect_null(plan);
    tc_device_close(&dev);
}
