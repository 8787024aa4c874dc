/* The oneDNN cpu backend (forced: PyTorch would send some of these shapes
 * to its native path, which test_conv_native.c checks) against the naive
 * reference: every direction,
 * both layouts, fp32 and bf16, over strides, padding, groups (depthwise
 * included), dilation and layers with and without a bias, for every implementation oneDNN offers (the
 * exhaustive candidate list), so the benchmark never times a wrong
 * computation. */
#include "conv_verify.h"
#include "device.h"

#include "tc_error.h"

#include <criterion/criterion.h>
#include <stdio.h>

typedef struct {
    unsigned n, c, h, w, k, r, s, ph, pw, sh, sw, dh, dw, g;
} shape_t;

static const shape_t s_shapes[] = {
    {2, 8, 9, 9, 16, 3, 3, 1, 1, 1, 1, 1, 1, 1},     /* 3x3 same */
    {2, 8, 10, 11, 8, 3, 3, 1, 1, 2, 2, 1, 1, 1},    /* stride 2 */
    {2, 16, 8, 8, 32, 1, 1, 0, 0, 2, 2, 1, 1, 1},    /* 1x1 stride 2 (downsample) */
    {2, 16, 7, 7, 24, 1, 1, 0, 0, 1, 1, 1, 1, 1},    /* 1x1 */
    {2, 8, 9, 9, 16, 3, 3, 1, 1, 1, 1, 1, 1, 4},     /* groups */
    {2, 16, 9, 9, 16, 3, 3, 1, 1, 1, 1, 1, 1, 16},   /* depthwise */
    {2, 16, 10, 10, 16, 5, 5, 2, 2, 2, 2, 1, 1, 16}, /* depthwise 5x5 stride 2 */
    {2, 8, 11, 11, 8, 3, 3, 2, 2, 1, 1, 2, 2, 1},    /* dilation 2 */
    {1, 8, 12, 10, 8, 3, 5, 1, 2, 1, 2, 1, 1, 1},    /* rectangular filter, mixed strides */
    {2, 3, 20, 20, 8, 7, 7, 3, 3, 2, 2, 1, 1, 1},    /* first layer: 3 channels, 7x7/2 */
    {2, 8, 12, 12, 8, 3, 3, 2, 2, 1, 1, 2, 2, 2},    /* groups and dilation */
    {3, 4, 6, 6, 4, 3, 3, 0, 0, 3, 3, 1, 1, 1},      /* no padding, stride 3 */
};

static tc_conv_config_t s_config(const shape_t *s, Traincast__V1__DType dt, Traincast__V1__Layout l)
{
    tc_conv_config_t c = tc_conv_config_default();
    c.n = s->n, c.c = s->c, c.h = s->h, c.w = s->w, c.k = s->k, c.r = s->r, c.s = s->s;
    c.pad_h = s->ph, c.pad_w = s->pw, c.stride_h = s->sh, c.stride_w = s->sw;
    c.dilation_h = s->dh, c.dilation_w = s->dw, c.groups = s->g;
    c.dtype = dt;
    c.layout = l;
    return c;
}

/* A plan of a layer with a bias holds the bias (forward) or computes its
 * gradient (backward-filter), so the verification compared it too. */
static void s_expect_bias(tc_conv_plan_t *plan, const tc_conv_spec_t *spec, const char *label)
{
    if (!spec->config.bias || spec->direction == TRAINCAST__V1__DIRECTION__DIRECTION_BWD_DATA)
        return;
    tc_tensor_t t = spec->direction == TRAINCAST__V1__DIRECTION__DIRECTION_FWD ? TC_TENSOR_B
                                                                              : TC_TENSOR_DB;
    float v[64];
    cr_assert_leq(spec->config.k, 64);
    cr_expect_eq(tc_conv_plan_read(plan, t, v, spec->config.k), 0, "%s: no %s: %s", label,
                 tc_tensor_name(t), tc_errmsg());
}

/* Run and verify every selectable candidate for each shape; returns the
 * number of candidates checked. */
static unsigned s_check_all(Traincast__V1__Direction dir, Traincast__V1__DType dt,
                            Traincast__V1__Layout layout)
{
    tc_device_t *dev = NULL;
    int rc = tc_device_open("cpu", 2, &dev);
    if (rc < 0)
        rc = tc_device_open("cpu", 1, &dev);
    cr_assert_eq(rc, 0, "opening the cpu device: %s", tc_errmsg());
    unsigned checked = 0;
    for (size_t i = 0; i < sizeof s_shapes / sizeof s_shapes[0]; i++) {
        tc_conv_config_t cfg = s_config(&s_shapes[i], dt, layout);
        cfg.bias = i % 2 == 1; /* half the shapes with a bias */
        tc_conv_spec_t spec = {.config = cfg,
                               .direction = dir,
                               .policy = TRAINCAST__V1__POLICY__POLICY_EXHAUSTIVE,
                               .seed = 42 + i,
                               .path = TC_PATH_LIBRARY};
        char label[128];
        tc_conv_config_label(&spec.config, label, sizeof label);
        tc_conv_plan_t *plan = NULL;
        rc = tc_conv_plan_create(dev, &spec, &plan);
        cr_assert_eq(rc, 0, "%s %s %s %s: plan: %s", label, tc_direction_name(dir),
                     tc_dtype_name(dt), tc_layout_name(layout), tc_errmsg());
        size_t n = tc_conv_plan_algo_count(plan);
        cr_assert_gt(n, 0, "%s: no candidates", label);
        for (size_t a = 0; a < n; a++) {
            const tc_algo_t *algo = tc_conv_plan_algo(plan, a);
            if (algo->status == TRAINCAST__V1__ALGO_STATUS__ALGO_STATUS_NOT_SUPPORTED)
                continue;
            rc = tc_conv_plan_select(plan, a);
            cr_assert_eq(rc, 0, "%s: select %s: %s", label, algo->name, tc_errmsg());
            double ms = 0;
            /* Twice: the second run must not depend on state left by the first. */
            for (int rep = 0; rep < 2; rep++) {
                rc = tc_conv_plan_run(plan, &ms);
                cr_assert_eq(rc, 0, "%s: run %s: %s", label, algo->name, tc_errmsg());
            }
            cr_expect_gt(ms, 0.0);
            tc_verify_t v;
            rc = tc_conv_verify(plan, &spec, &v);
            cr_assert_eq(rc, 0, "%s: verify: %s", label, tc_errmsg());
            cr_expect_eq(v.wrong, 0,
                         "%s %s %s %s with %s: %zu of %zu values wrong; worst %s[%zu] = %g, "
                         "reference %g (atol %g rtol %g)",
                         label, tc_direction_name(dir), tc_dtype_name(dt), tc_layout_name(layout),
                         algo->name, v.wrong, v.checked, tc_tensor_name(v.tensor), v.worst, v.got,
                         v.want, v.atol, v.rtol);
            cr_expect_gt(v.checked, 0);
            s_expect_bias(plan, &spec, label);
            checked++;
        }
        tc_conv_plan_destroy(&plan);
    }
    tc_device_close(&dev);
    return checked;
}

#define DIR(x) TRAINCAST__V1__DIRECTION__DIRECTION_##x
#define FP32 TRAINCAST__V1__DTYPE__DTYPE_FP32
#define BF16 TRAINCAST__V1__DTYPE__DTYPE_BF16
#define NCHW TRAINCAST__V1__LAYOUT__LAYOUT_NCHW
#define NHWC TRAINCAST__V1__LAYOUT__LAYOUT_NHWC

Test(conv_cpu, fwd_fp32_nchw, .timeout = 300) { cr_expect_gt(s_check_all(DIR(FWD), FP32, NCHW), 0); }
Test(conv_cpu, bwd_data_fp32_nchw, .timeout = 300) { cr_expect_gt(s_check_all(DIR(BWD_DATA), FP32, NCHW), 0); }
Test(conv_cpu, bwd_filter_fp32_nchw, .timeout = 300) { cr_expect_gt(s_check_all(DIR(BWD_FILTER), FP32, NCHW), 0); }
Test(conv_cpu, fwd_fp32_nhwc, .timeout = 300) { cr_expect_gt(s_check_all(DIR(FWD), FP32, NHWC), 0); }
Test(conv_cpu, bwd_data_fp32_nhwc, .timeout = 300) { cr_expect_gt(s_check_all(DIR(BWD_DATA), FP32, NHWC), 0); }
Test(conv_cpu, bwd_filter_fp32_nhwc, .timeout = 300) { cr_expect_gt(s_check_all(DIR(BWD_FILTER), FP32, NHWC), 0); }
Test(conv_cpu, fwd_bf16_nchw, .timeout = 300) { cr_expect_gt(s_check_all(DIR(FWD), BF16, NCHW), 0); }
Test(conv_cpu, bwd_data_bf16_nchw, .timeout = 300) { cr_expect_gt(s_check_all(DIR(BWD_DATA), BF16, NCHW), 0); }
Test(conv_cpu, bwd_filter_bf16_nchw, .timeout = 300) { cr_expect_gt(s_check_all(DIR(BWD_FILTER), BF16, NCHW), 0); }
