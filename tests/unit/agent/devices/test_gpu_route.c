/* PyTorch's GPU conv routing as the agent ports it (agent/devices/gpu_route.h):
 * which rule a framework version gets, when it calls cuDNN through the v8
 * API, and where it sends each conv, on cases worked out by hand from
 * _select_conv_backend, use_cudnn, use_cudnn_depthwise and the two
 * depthwise workload checks of aten/src/ATen/native/Convolution.cpp (1.13
 * and 2.x). The GPU test (tests/gpu/test_cuda_route.c) compares the same
 * rule with PyTorch's own choice on a GPU. */
#include "gpu_route.h"

#include "tc_error.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#define FP32 TRAINCAST__V1__DTYPE__DTYPE_FP32
#define FP16 TRAINCAST__V1__DTYPE__DTYPE_FP16
#define BF16 TRAINCAST__V1__DTYPE__DTYPE_BF16
#define NCHW TRAINCAST__V1__LAYOUT__LAYOUT_NCHW
#define NHWC TRAINCAST__V1__LAYOUT__LAYOUT_NHWC

#define CUDNN TC_GPU_ROUTE_CUDNN
#define DEPTHWISE TC_GPU_ROUTE_NATIVE_DEPTHWISE
#define SLOW TC_GPU_ROUTE_NATIVE
#define DILATED TC_GPU_ROUTE_NATIVE_DILATED

Test(gpu_route, rules_by_framework_version)
{
    tc_gpu_rule_t r = tc_gpu_rule("pytorch", "1.13.0a0");
    cr_expect_str_eq(r.name, "pytorch-1.13");
    cr_expect(r.verified);
    r = tc_gpu_rule("pytorch", "1.13.1+cu117");
    cr_expect_str_eq(r.name, "pytorch-1.13");
    r = tc_gpu_rule("pytorch", "2.11.0+cu130");
    cr_expect_str_eq(r.name, "pytorch-2");
    cr_expect(r.verified);
    cr_expect_eq(r.minor, 11);
    r = tc_gpu_rule("pytorch", "2.0.1");
    cr_expect(r.verified);
    r = tc_gpu_rule("pytorch", "2.12.0");
    cr_expect_str_eq(r.name, "pytorch-2");
    cr_expect_not(r.verified, "2.12 was not checked");
    r = tc_gpu_rule("pytorch", "1.12.1");
    cr_expect_not(r.verified);
    r = tc_gpu_rule(NULL, NULL);
    cr_expect_not(r.verified);
    r = tc_gpu_rule("pytorch", "nightly");
    cr_expect_not(r.verified);
}

Test(gpu_route, v8_api_per_version_and_environment)
{
    tc_gpu_rule_t old = tc_gpu_rule("pytorch", "1.13.1");
    tc_gpu_rule_t cur = tc_gpu_rule("pytorch", "2.11.0");
    /* 1.13: off unless TORCH_CUDNN_V8_API_ENABLED=1 (check_env: only "1"). */
    cr_expect_not(tc_gpu_v8_api(&old, NULL, NULL));
    cr_expect(tc_gpu_v8_api(&old, "1", NULL));
    cr_expect_not(tc_gpu_v8_api(&old, "true", NULL));
    cr_expect_not(tc_gpu_v8_api(&old, NULL, "0"));
    /* 2.x: on unless TORCH_CUDNN_V8_API_DISABLED=1. */
    cr_expect(tc_gpu_v8_api(&cur, NULL, NULL));
    cr_expect_not(tc_gpu_v8_api(&cur, NULL, "1"));
    cr_expect(tc_gpu_v8_api(&cur, NULL, "0"));
    cr_expect(tc_gpu_v8_api(&cur, NULL, "yes"));
    cr_expect(tc_gpu_v8_api(&cur, "0", NULL));
}

typedef struct {
    const char *what;
    const char *version;
    unsigned n, c, hw, k, rs, stride, pad, groups, dil;
    Traincast__V1__DType dtype;
    Traincast__V1__Layout layout;
    long cudnn;
    int cc;
    bool deterministic, disabled, v8_env; /* v8_env: ENABLED=1 (1.13) or DISABLED=1 (2.x) */
    tc_gpu_route_t want;
} s_case_t;

static const s_case_t s_cases[] = {
    /* Ordinary convs go to cuDNN in every dtype. */
    {"resnet 3x3", "2.11.0", 32, 64, 56, 64, 3, 1, 1, 1, 1, FP32, NCHW, 91000, 9, 0, 0, 0, CUDNN},
    {"resnet 3x3 fp16", "2.11.0", 32, 64, 56, 64, 3, 1, 1, 1, 1, FP16, NCHW, 91000, 9, 0, 0, 0, CUDNN},
    {"7x7/2 stem", "1.13.1", 32, 3, 224, 64, 7, 2, 3, 1, 1, FP32, NCHW, 8500, 8, 0, 0, 0, CUDNN},
    {"grouped, not depthwise", "2.11.0", 32, 128, 56, 128, 3, 1, 1, 32, 1, FP32, NCHW, 91000, 9, 0, 0, 0, CUDNN},
    /* Depthwise: PyTorch's own kernels unless fp16 passes the workload check. */
    {"depthwise fp32", "2.11.0", 32, 96, 112, 96, 3, 1, 1, 96, 1, FP32, NCHW, 91000, 9, 0, 0, 0, DEPTHWISE},
    {"depthwise bf16", "2.11.0", 32, 96, 112, 96, 3, 1, 1, 96, 1, BF16, NCHW, 91000, 9, 0, 0, 0, DEPTHWISE},
    {"depthwise fp16 stride 1", "2.11.0", 32, 96, 112, 96, 3, 1, 1, 96, 1, FP16, NCHW, 91000, 9, 0, 0, 0, CUDNN},
    {"depthwise fp16 5x5 stride 1", "2.11.0", 32, 240, 28, 240, 5, 1, 2, 240, 1, FP16, NCHW, 91000, 9, 0, 0, 0, CUDNN},
    {"depthwise multiplier 2", "2.11.0", 32, 32, 56, 64, 3, 1, 1, 32, 1, FP16, NCHW, 91000, 9, 0, 0, 0, CUDNN},
    {"depthwise fp16 < 32 channels", "2.11.0", 32, 16, 112, 16, 3, 1, 1, 16, 1, FP16, NCHW, 91000, 9, 0, 0, 0, DEPTHWISE},
    {"depthwise fp16 width < 7", "2.11.0", 32, 576, 4, 576, 3, 1, 1, 576, 1, FP16, NCHW, 91000, 9, 0, 0, 0, DEPTHWISE},
    {"depthwise fp16 7x7 (convnext)", "2.11.0", 32, 96, 56, 96, 7, 1, 3, 96, 1, FP16, NCHW, 91000, 9, 0, 0, 0, DEPTHWISE},
    {"depthwise fp16 3x3/2, 96 ch", "2.11.0", 32, 96, 112, 96, 3, 2, 1, 96, 1, FP16, NCHW, 91000, 9, 0, 0, 0, DEPTHWISE},
    {"depthwise fp16 3x3/2, 576 ch", "2.11.0", 32, 576, 14, 576, 3, 2, 1, 576, 1, FP16, NCHW, 91000, 9, 0, 0, 0, CUDNN},
    {"depthwise fp16 3x3/2, 256 ch 28 px", "2.11.0", 32, 256, 28, 256, 3, 2, 1, 256, 1, FP16, NCHW, 91000, 9, 0, 0, 0, CUDNN},
    {"depthwise fp16 3x3/2, 256 ch 14 px", "2.11.0", 32, 256, 14, 256, 3, 2, 1, 256, 1, FP16, NCHW, 91000, 9, 0, 0, 0, DEPTHWISE},
    {"depthwise fp16 3x3/2 batch 1", "1.13.1", 1, 96, 112, 96, 3, 2, 1, 96, 1, FP16, NCHW, 8500, 8, 0, 0, 0, CUDNN},
    {"depthwise fp16 before Volta", "2.11.0", 32, 96, 112, 96, 3, 1, 1, 96, 1, FP16, NCHW, 91000, 6, 0, 0, 0, DEPTHWISE},
    {"depthwise fp32 channels-last", "2.11.0", 32, 96, 112, 96, 3, 2, 1, 96, 1, FP32, NHWC, 91000, 9, 0, 0, 0, CUDNN},
    {"depthwise, cuDNN disabled", "2.11.0", 32, 96, 112, 96, 3, 1, 1, 96, 1, FP16, NCHW, 91000, 9, 0, 1, 0, DEPTHWISE},
    /* A 1x1 stride-2 depthwise conv that the cuDNN 8.2 filter rule refuses
     * at batch 32 (its answer is final) and the cuDNN 7.6 rule takes. */
    {"depthwise fp16 1x1/2, cuDNN 9", "2.11.0", 32, 256, 28, 256, 1, 2, 0, 256, 1, FP16, NCHW, 91000, 9, 0, 0, 0, DEPTHWISE},
    {"depthwise fp16 1x1/2, cuDNN 8.1", "1.13.1", 32, 256, 28, 256, 1, 2, 0, 256, 1, FP16, NCHW, 8100, 8, 0, 0, 0, CUDNN},
    {"depthwise fp16 1x1/2, cuDNN 8.1, 14 px", "1.13.1", 32, 256, 14, 256, 1, 2, 0, 256, 1, FP16, NCHW, 8100, 8, 0, 0, 0, DEPTHWISE},
    /* With cuDNN 7.6 only the older rule applies. */
    {"cuDNN 7.6: 128 ch 28 px", "1.13.1", 32, 128, 28, 128, 3, 1, 1, 128, 1, FP16, NCHW, 7605, 7, 0, 0, 0, CUDNN},
    {"cuDNN 7.6: 32 ch 28 px", "1.13.1", 32, 32, 28, 32, 3, 1, 1, 32, 1, FP16, NCHW, 7605, 7, 0, 0, 0, DEPTHWISE},
    /* bf16 needs the v8 API (and in 2.x compute capability 8.0). */
    {"bf16, 1.13 without v8", "1.13.1", 32, 64, 56, 64, 3, 1, 1, 1, 1, BF16, NCHW, 8500, 8, 0, 0, 0, SLOW},
    {"bf16, 1.13 with v8", "1.13.1", 32, 64, 56, 64, 3, 1, 1, 1, 1, BF16, NCHW, 8500, 8, 0, 0, 1, CUDNN},
    {"bf16, 2.x on 8.0", "2.11.0", 32, 64, 56, 64, 3, 1, 1, 1, 1, BF16, NCHW, 91000, 8, 0, 0, 0, CUDNN},
    {"bf16, 2.x on 7.5", "2.11.0", 32, 64, 56, 64, 3, 1, 1, 1, 1, BF16, NCHW, 91000, 7, 0, 0, 0, SLOW},
    {"bf16, 2.x v8 disabled", "2.11.0", 32, 64, 56, 64, 3, 1, 1, 1, 1, BF16, NCHW, 91000, 9, 0, 0, 1, SLOW},
    /* Dilation: cuDNN unless deterministic. */
    {"dilated", "2.11.0", 8, 64, 28, 64, 3, 1, 2, 1, 2, FP32, NCHW, 91000, 9, 0, 0, 0, CUDNN},
    {"dilated deterministic", "2.11.0", 8, 64, 28, 64, 3, 1, 2, 1, 2, FP32, NCHW, 91000, 9, 1, 0, 0, DILATED},
    {"dilated deterministic nhwc", "2.11.0", 8, 64, 28, 64, 3, 1, 2, 1, 2, FP32, NHWC, 91000, 9, 1, 0, 0, CUDNN},
    {"cuDNN disabled", "2.11.0", 32, 64, 56, 64, 3, 1, 1, 1, 1, FP32, NCHW, 91000, 9, 0, 1, 0, SLOW},
    /* One sample with more than INT_MAX elements. */
    {"64-bit, 1.13", "1.13.1", 1, 1, 50000, 4, 3, 1, 1, 1, 1, FP16, NCHW, 8500, 8, 0, 0, 0, SLOW},
    {"64-bit, cuDNN 9.1", "2.11.0", 1, 1, 50000, 4, 3, 1, 1, 1, 1, FP16, NCHW, 90100, 9, 0, 0, 0, SLOW},
    {"64-bit, cuDNN 9.3", "2.11.0", 1, 1, 50000, 4, 3, 1, 1, 1, 1, FP16, NCHW, 90300, 9, 0, 0, 0, CUDNN},
    {"64-bit, 2.4", "2.4.1", 1, 1, 50000, 4, 3, 1, 1, 1, 1, FP16, NCHW, 90300, 9, 0, 0, 0, SLOW},
};

Test(gpu_route, routes_as_pytorch_sends_them)
{
    size_t wrong = 0;
    char diffs[4096] = "";
    for (size_t i = 0; i < sizeof s_cases / sizeof s_cases[0]; i++) {
        const s_case_t *t = &s_cases[i];
        tc_gpu_rule_t rule = tc_gpu_rule("pytorch", t->version);
        tc_gpu_settings_t s = {.cudnn_version = t->cudnn,
                               .cc_major = t->cc,
                               .cudnn_enabled = !t->disabled,
                               .deterministic = t->deterministic};
        s.v8_api = rule.major == 1 ? tc_gpu_v8_api(&rule, t->v8_env ? "1" : NULL, NULL)
                                   : tc_gpu_v8_api(&rule, NULL, t->v8_env ? "1" : NULL);
        tc_conv_config_t c = tc_conv_config_default();
        c.n = t->n, c.c = t->c, c.h = c.w = t->hw, c.k = t->k, c.r = c.s = t->rs;
        c.stride_h = c.stride_w = t->stride, c.pad_h = c.pad_w = t->pad;
        c.groups = t->groups, c.dilation_h = c.dilation_w = t->dil;
        c.dtype = t->dtype, c.layout = t->layout;
        cr_assert_eq(tc_conv_config_check(&c), 0, "%s: bad case", t->what);
        tc_gpu_route_t got = tc_gpu_route_conv(&rule, &s, &c);
        if (got != t->want) {
            size_t len = strlen(diffs);
            snprintf(diffs + len, sizeof diffs - len, "\n  %s: %s, want %s", t->what,
                     tc_gpu_route_name(got), tc_gpu_route_name(t->want));
            wrong++;
        }
    }
    cr_expect_eq(wrong, 0, "%zu routes differ from PyTorch's rule:%s", wrong, diffs);
}

Test(gpu_route, backend_names)
{
    cr_expect_str_eq(tc_gpu_route_name(TC_GPU_ROUTE_NATIVE_DEPTHWISE), "native-depthwise");
    cr_expect_eq(tc_gpu_route_from_backend("ConvBackend.CudaDepthwise2d"),
                 TC_GPU_ROUTE_NATIVE_DEPTHWISE);
    cr_expect_eq(tc_gpu_route_from_backend("Cudnn"), TC_GPU_ROUTE_CUDNN);
    cr_expect_eq(tc_gpu_route_from_backend("ConvBackend.Slow2d"), TC_GPU_ROUTE_NATIVE);
    cr_expect_eq(tc_gpu_route_from_backend("ConvBackend.SlowDilated2d"),
                 TC_GPU_ROUTE_NATIVE_DILATED);
    cr_expect_eq(tc_gpu_route_from_backend("ConvBackend.Miopen"), -1);
    cr_expect_eq(tc_gpu_route_from_backend(NULL), -1);
    for (int r = TC_GPU_ROUTE_CUDNN; r <= TC_GPU_ROUTE_NATIVE_DILATED; r++)
        cr_expect_eq(tc_gpu_route_from_backend(tc_gpu_route_backend((tc_gpu_route_t)r)), r);
}

/* The math of a cuDNN conv follows PyTorch's TF32 setting as probed: fp32
 * uses TF32 tensor cores only where torch.backends.cudnn.allow_tf32 is on
 * (the default), FMA math otherwise; the explicit dtypes are fixed. */
Test(gpu_route, conv_math_follows_the_probed_tf32_setting)
{
    tc_gpu_conv_math_t m;
    const Traincast__V1__DType fp32 = TRAINCAST__V1__DTYPE__DTYPE_FP32;
    cr_assert_eq(tc_gpu_conv_math(fp32, true, 9, &m), 0);
    cr_expect(m.allow_tf32);
    cr_expect_eq(m.math, TC_GPU_MATH_DEFAULT);
    /* A user who turns TF32 off (or NVIDIA_TF32_OVERRIDE=0): full fp32. */
    cr_assert_eq(tc_gpu_conv_math(fp32, false, 9, &m), 0);
    cr_expect_not(m.allow_tf32);
    cr_expect_eq(m.math, TC_GPU_MATH_FMA);
    cr_assert_eq(tc_gpu_conv_math(fp32, false, 7, &m), 0);
    cr_expect_eq(m.math, TC_GPU_MATH_FMA);
    /* fp32_strict never, tf32 always, whatever the setting. */
    cr_assert_eq(tc_gpu_conv_math(TRAINCAST__V1__DTYPE__DTYPE_FP32_STRICT, true, 9, &m), 0);
    cr_expect_not(m.allow_tf32);
    cr_expect_eq(m.math, TC_GPU_MATH_FMA);
    cr_assert_eq(tc_gpu_conv_math(TRAINCAST__V1__DTYPE__DTYPE_TF32, false, 8, &m), 0);
    cr_expect(m.allow_tf32);
    cr_expect_eq(m.math, TC_GPU_MATH_DEFAULT);
    cr_expect_eq(tc_gpu_conv_math(TRAINCAST__V1__DTYPE__DTYPE_TF32, true, 7, &m), TC_EUNSUPPORTED);
    /* Half precision on tensor ops; bf16 needs compute capability 8.0. */
    cr_assert_eq(tc_gpu_conv_math(TRAINCAST__V1__DTYPE__DTYPE_FP16, false, 7, &m), 0);
    cr_expect_eq(m.math, TC_GPU_MATH_TENSOR_OP);
    cr_assert_eq(tc_gpu_conv_math(TRAINCAST__V1__DTYPE__DTYPE_BF16, true, 9, &m), 0);
    cr_expect_eq(m.math, TC_GPU_MATH_TENSOR_OP);
    cr_expect_eq(tc_gpu_conv_math(TRAINCAST__V1__DTYPE__DTYPE_BF16, true, 7, &m), TC_EUNSUPPORTED);
    cr_expect_eq(tc_gpu_conv_math((Traincast__V1__DType)99, true, 9, &m), TC_EINVAL);
}

/* A plan that does not build is skipped as PyTorch skips it only where the
 * engine cannot run the conv; a failure of this process's environment (a
 * library that did not load, a runtime compilation) fails the conv, since
 * training would run that engine. */
Test(gpu_route, plan_build_failures)
{
    const int skip[] = {3000, 3001, 3002, 3003, 3004, 3007, 3010, 3011, 3012, 3014};
    for (size_t i = 0; i < sizeof skip / sizeof skip[0]; i++)
        cr_expect_eq(tc_gpu_plan_failure(skip[i]), TC_GPU_PLAN_SKIP, "status %d", skip[i]);
    const int env[] = {1001, 1002, 1008, 3005, 3006, 3008, 3009, 4001};
    for (size_t i = 0; i < sizeof env / sizeof env[0]; i++)
        cr_expect_eq(tc_gpu_plan_failure(env[i]), TC_GPU_PLAN_ENVIRONMENT, "status %d", env[i]);
    const int err[] = {2000, 2002, 4000, 4003, 4004, 5000, 1003};
    for (size_t i = 0; i < sizeof err / sizeof err[0]; i++)
        cr_expect_eq(tc_gpu_plan_failure(err[i]), TC_GPU_PLAN_ERROR, "status %d", err[i]);
}
