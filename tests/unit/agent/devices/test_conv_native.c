/* PyTorch's native CPU conv path as the agent mirrors it (im2col + the
 * framework's BLAS, agent/devices/cpu/cpu_native.c) against the naive reference,
 * every direction, on 1 and 2 threads and batches 1 and 3 (at::parallel_for
 * runs a one-sample batch inline and splits larger ones), over 1x1 convs
 * (whose columns are the input itself), strides, padding, rectangular
 * filters, groups, dilation and layers with a bias; and PyTorch 1.13's routing rule
 * (cpu_route.h) on cases its profiler was seen to take. */
#include "conv_verify.h"
#include "cpu/cpu_route.h"
#include "device.h"

#include "tc_error.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

typedef struct {
    unsigned c, h, w, k, r, s, ph, pw, sh, sw, dh, dw, g;
} shape_t;

static const shape_t s_shapes[] = {
    {16, 7, 7, 24, 1, 1, 0, 0, 1, 1, 1, 1, 1},   /* 1x1: columns are the input */
    {16, 8, 8, 32, 1, 1, 0, 0, 2, 2, 1, 1, 1},   /* 1x1 stride 2 */
    {8, 9, 9, 16, 3, 3, 1, 1, 1, 1, 1, 1, 1},    /* 3x3 same */
    {8, 10, 11, 8, 3, 3, 1, 1, 2, 2, 1, 1, 1},   /* stride 2, odd sizes */
    {8, 12, 10, 8, 3, 5, 1, 2, 1, 2, 1, 1, 1},   /* rectangular, mixed strides */
    {3, 20, 20, 8, 7, 7, 3, 3, 2, 2, 1, 1, 1},   /* first layer 7x7/2 */
    {4, 6, 6, 4, 3, 3, 0, 0, 3, 3, 1, 1, 1},     /* no padding, stride 3 */
    {4, 5, 5, 4, 5, 5, 4, 4, 1, 1, 1, 1, 1},     /* padding as large as the filter */
    {16, 6, 6, 32, 1, 1, 0, 0, 1, 1, 1, 1, 4},   /* grouped 1x1 */
    {8, 9, 9, 16, 3, 3, 1, 1, 1, 1, 1, 1, 8},    /* depthwise-like */
    {8, 11, 11, 8, 3, 3, 2, 2, 1, 1, 2, 2, 1},   /* dilation 2 */
};

static void s_check(Traincast__V1__Direction dir, unsigned threads)
{
    tc_device_t *dev = NULL;
    int rc = tc_device_open("cpu", threads, &dev);
    if (rc == TC_EINVAL)
        cr_skip_test("no %u CPUs here: %s", threads, tc_errmsg());
    cr_assert_eq(rc, 0, "opening the cpu device: %s", tc_errmsg());
    for (size_t i = 0; i < sizeof s_shapes / sizeof s_shapes[0]; i++) {
        for (unsigned n = 1; n <= 3; n += 2) {
            const shape_t *s = &s_shapes[i];
            tc_conv_config_t c = tc_conv_config_default();
            c.n = n, c.c = s->c, c.h = s->h, c.w = s->w, c.k = s->k, c.r = s->r, c.s = s->s;
            c.pad_h = s->ph, c.pad_w = s->pw, c.stride_h = s->sh, c.stride_w = s->sw;
            c.dilation_h = s->dh, c.dilation_w = s->dw, c.groups = s->g;
            c.bias = (i + n / 3) % 2 == 1; /* every shape with and without a bias */
            tc_conv_spec_t spec = {.config = c, .direction = dir,
                                   .policy = TRAINCAST__V1__POLICY__POLICY_HEURISTIC,
                                   .seed = 7 + i, .path = TC_PATH_NATIVE};
            char label[128];
            tc_conv_config_label(&c, label, sizeof label);
            tc_conv_plan_t *plan = NULL;
            rc = tc_conv_plan_create(dev, &spec, &plan);
            if (rc == TC_ENOTFOUND)
                cr_skip_test("no BLAS: %s", tc_errmsg());
            cr_assert_eq(rc, 0, "%s %s: %s", label, tc_direction_name(dir), tc_errmsg());
            cr_assert_eq(tc_conv_plan_algo_count(plan), 1);
            const tc_algo_t *a = tc_conv_plan_algo(plan, 0);
            cr_assert(strncmp(a->name, "pytorch-native:", 15) == 0, "%s", a->name);
            cr_assert_eq(tc_conv_plan_select(plan, 0), 0, "%s", tc_errmsg());
            double ms = 0;
            /* Twice: the second run must not build on the first one's output. */
            for (int rep = 0; rep < 2; rep++)
                cr_assert_eq(tc_conv_plan_run(plan, &ms), 0, "%s: %s", label, tc_errmsg());
            cr_expect_gt(ms, 0.0);
            tc_verify_t v;
            cr_assert_eq(tc_conv_verify(plan, &spec, &v), 0, "%s: %s", label, tc_errmsg());
            cr_expect_gt(v.checked, 0);
            cr_expect_eq(v.wrong, 0,
                         "%s %s on %u thread(s): %zu of %zu values wrong; worst %s[%zu] = %g, "
                         "reference %g",
                         label, tc_direction_name(dir), threads, v.wrong, v.checked,
                         tc_tensor_name(v.tensor), v.worst, v.got, v.want);
            if (c.bias && dir != TRAINCAST__V1__DIRECTION__DIRECTION_BWD_DATA) {
                /* The plan holds the bias or computes its gradient, so the
                 * verification compared it too. */
                tc_tensor_t t = dir == TRAINCAST__V1__DIRECTION__DIRECTION_FWD ? TC_TENSOR_B
                                                                              : TC_TENSOR_DB;
                float b[64];
                cr_assert_leq(c.k, 64);
                cr_expect_eq(tc_conv_plan_read(plan, t, b, c.k), 0, "%s: no %s: %s", label,
                             tc_tensor_name(t), tc_errmsg());
            }
            tc_conv_plan_destroy(&plan);
        }
    }
    tc_device_close(&dev);
}

#define DIR(x) TRAINCAST__V1__DIRECTION__DIRECTION_##x

Test(conv_native, fwd_1_thread, .timeout = 300) { s_check(DIR(FWD), 1); }
Test(conv_native, fwd_2_threads, .timeout = 300) { s_check(DIR(FWD), 2); }
Test(conv_native, bwd_data_1_thread, .timeout = 300) { s_check(DIR(BWD_DATA), 1); }
Test(conv_native, bwd_data_2_threads, .timeout = 300) { s_check(DIR(BWD_DATA), 2); }
Test(conv_native, bwd_filter_1_thread, .timeout = 300) { s_check(DIR(BWD_FILTER), 1); }
Test(conv_native, bwd_filter_2_threads, .timeout = 300) { s_check(DIR(BWD_FILTER), 2); }

/* fp32 and channels-first only: anything else says why, never times
 * something else. */
Test(conv_native, other_types_and_layouts_are_refused, .timeout = 60)
{
    tc_device_t *dev = NULL;
    cr_assert_eq(tc_device_open("cpu", 1, &dev), 0, "%s", tc_errmsg());
    tc_conv_config_t c = tc_conv_config_default();
    c.n = 2, c.c = 8, c.h = c.w = 6, c.k = 8, c.r = c.s = 1;
    tc_conv_spec_t spec = {.config = c, .direction = DIR(FWD),
                           .policy = TRAINCAST__V1__POLICY__POLICY_HEURISTIC,
                           .path = TC_PATH_NATIVE};
    tc_conv_plan_t *plan = NULL;
    spec.config.layout = TRAINCAST__V1__LAYOUT__LAYOUT_NHWC;
    cr_assert_eq(tc_conv_plan_create(dev, &spec, &plan), TC_EUNSUPPORTED);
    cr_assert(strstr(tc_errmsg(), "NCHW"), "%s", tc_errmsg());
    spec.config.layout = TRAINCAST__V1__LAYOUT__LAYOUT_NCHW;
    spec.config.dtype = TRAINCAST__V1__DTYPE__DTYPE_BF16;
    cr_assert_eq(tc_conv_plan_create(dev, &spec, &plan), TC_EUNSUPPORTED);
    cr_assert(strstr(tc_errmsg(), "bf16"), "%s", tc_errmsg());
    cr_assert_null(plan);
    tc_device_close(&dev);
}

/* ConvParams::use_mkldnn of PyTorch 1.13 (aten/src/ATen/native/
 * Convolution.cpp), on cases its profiler recorded on this project's CI
 * machines (aten::mkldnn_convolution or aten::_slow_conv2d_forward). */
Test(conv_native, pytorch_1_13_routing_rule, .timeout = 30)
{
    const tc_route_rule_t *rule = tc_route_rule("pytorch", "1.13.0a0");
    cr_assert(rule->verified && rule->uses_native);
    cr_assert(!tc_route_rule("pytorch", "2.1.0")->verified);
    cr_assert(!tc_route_rule(NULL, NULL)->uses_native);
    struct {
        unsigned n, c, hw, k, rs, stride, groups, dil, threads;
        tc_route_t want;
    } cases[] = {
        {8, 64, 56, 256, 1, 1, 1, 1, 1, TC_ROUTE_NATIVE},  /* 1x1, batch < 16, 1 thread */
        {8, 64, 56, 256, 1, 1, 1, 1, 2, TC_ROUTE_ONEDNN},  /* ... on 2 threads */
        {16, 64, 56, 256, 1, 1, 1, 1, 1, TC_ROUTE_ONEDNN}, /* ... at batch 16 */
        {8, 256, 56, 512, 1, 2, 1, 1, 1, TC_ROUTE_ONEDNN}, /* strided 1x1 */
        {8, 64, 56, 64, 3, 1, 1, 1, 1, TC_ROUTE_ONEDNN},   /* 3x3 at batch 8 */
        {1, 3, 8, 8, 3, 1, 1, 1, 2, TC_ROUTE_NATIVE},      /* tiny input, batch 1 */
        {1, 16, 16, 16, 1, 1, 1, 1, 2, TC_ROUTE_NATIVE},   /* 4096 elements */
        {1, 32, 64, 32, 1, 1, 1, 1, 2, TC_ROUTE_ONEDNN},   /* 131072 elements */
        {2, 32, 16, 32, 1, 1, 1, 1, 2, TC_ROUTE_ONEDNN},   /* batch 2 */
        {2, 32, 16, 32, 1, 1, 1, 1, 1, TC_ROUTE_NATIVE},   /* batch 2, 1 thread */
        {1, 8, 8, 8, 5, 1, 1, 1, 1, TC_ROUTE_ONEDNN},      /* 5x5: kernel > 3 */
        {1, 8, 8, 8, 3, 1, 8, 1, 1, TC_ROUTE_ONEDNN},      /* groups > 1 */
        {4, 8, 8, 8, 1, 1, 4, 1, 1, TC_ROUTE_NATIVE},      /* grouped 1x1, 1 thread */
        {1, 8, 8, 8, 3, 1, 1, 2, 1, TC_ROUTE_NATIVE_DILATED},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        tc_conv_config_t c = tc_conv_config_default();
        c.n = cases[i].n, c.c = cases[i].c, c.h = c.w = cases[i].hw, c.k = cases[i].k;
        c.r = c.s = cases[i].rs;
        c.stride_h = c.stride_w = cases[i].stride;
        c.groups = cases[i].groups;
        c.dilation_h = c.dilation_w = cases[i].dil;
        tc_route_t got = tc_route_conv(rule, &c, cases[i].threads, true, false);
        cr_expect_eq(got, cases[i].want, "case %zu: %s, want %s", i, tc_route_name(got),
                     tc_route_name(cases[i].want));
        /* oneDNN turned off: every conv native. */
        cr_expect_neq(tc_route_conv(rule, &c, cases[i].threads, false, false), TC_ROUTE_ONEDNN);
    }
    /* bf16: oneDNN when the CPU has AVX-512 BW/VL/DQ, else the framework's
     * own kernels, which are not mirrored. */
    tc_conv_config_t b = tc_conv_config_default();
    b.n = 8, b.c = b.k = 64, b.h = b.w = 56, b.r = b.s = 3;
    b.dtype = TRAINCAST__V1__DTYPE__DTYPE_BF16;
    cr_expect_eq(tc_route_conv(rule, &b, 1, true, true), TC_ROUTE_ONEDNN);
    cr_expect_eq(tc_route_conv(rule, &b, 1, true, false), TC_ROUTE_UNSUPPORTED);
}
