/* The cuDNN backend on a real GPU: every direction, both layouts and every
 * data type the GPU has, over strides, padding, groups, dilation and layers
 * with a bias, for every algorithm (legacy API) or engine configuration
 * (graph API) cuDNN can run, against the naive reference; the convs
 * PyTorch keeps for its own kernels, run by PyTorch, against the same
 * reference; and the runner's two policies. Skips, with the reason, where
 * no GPU or driver is present or the agent was built without CUDA. */
#include "conv_bench.h"
#include "conv_verify.h"
#include "device.h"

#include "tc_error.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

static tc_device_t *s_open_gpu(void)
{
    unsigned count = 0;
    char why[512];
    tc_backend_cuda.enumerate(&count, why, sizeof why);
    if (count == 0)
        cr_skip_test("no GPU to test the cuDNN backend on: %s", why);
    tc_device_t *dev = NULL;
    int rc = tc_device_open("cuda:0", 0, &dev);
    cr_assert_eq(rc, 0, "opening cuda:0: %s", tc_errmsg());
    return dev;
}

typedef struct {
    unsigned n, c, h, w, k, r, s, pad, stride, dil, g;
} shape_t;

static const shape_t s_shapes[] = {
    {2, 8, 9, 9, 16, 3, 3, 1, 1, 1, 1},     {2, 8, 10, 11, 8, 3, 3, 1, 2, 1, 1},
    {2, 16, 8, 8, 32, 1, 1, 0, 2, 1, 1},    {2, 16, 9, 9, 16, 3, 3, 1, 1, 1, 16},
    {2, 8, 9, 9, 16, 3, 3, 1, 1, 1, 4},     {2, 8, 11, 11, 8, 3, 3, 2, 1, 2, 1},
    {2, 3, 20, 20, 8, 7, 7, 3, 2, 1, 1},    {4, 32, 14, 14, 32, 3, 3, 1, 1, 1, 1},
};

static unsigned s_check(tc_device_t *dev, Traincast__V1__DType dt, Traincast__V1__Layout layout)
{
    unsigned checked = 0;
    for (size_t i = 0; i < sizeof s_shapes / sizeof s_shapes[0]; i++)
        for (int d = 1; d <= 3; d++) {
            const shape_t *sh = &s_shapes[i];
            tc_conv_spec_t spec = {.config = tc_conv_config_default(),
                                   .direction = (Traincast__V1__Direction)d,
                                   .policy = TRAINCAST__V1__POLICY__POLICY_EXHAUSTIVE,
                                   .seed = 3 + i,
                                   .path = TC_PATH_LIBRARY};
            tc_conv_config_t *c = &spec.config;
            c->n = sh->n, c->c = sh->c, c->h = sh->h, c->w = sh->w, c->k = sh->k, c->r = sh->r;
            c->s = sh->s, c->pad_h = c->pad_w = sh->pad, c->stride_h = c->stride_w = sh->stride;
            c->dilation_h = c->dilation_w = sh->dil, c->groups = sh->g;
            c->dtype = dt, c->layout = layout;
            c->bias = i % 2 == 1;
            char label[128];
            tc_conv_config_label(c, label, sizeof label);
            tc_conv_plan_t *plan = NULL;
            int rc = tc_conv_plan_create(dev, &spec, &plan);
            if (rc == TC_EUNSUPPORTED)
                cr_skip_test("%s: %s", tc_dtype_name(dt), tc_errmsg());
            cr_assert_eq(rc, 0, "%s: %s", label, tc_errmsg());
            unsigned ran = 0;
            for (size_t a = 0; a < tc_conv_plan_algo_count(plan); a++) {
                const tc_algo_t *al = tc_conv_plan_algo(plan, a);
                if (al->status != TRAINCAST__V1__ALGO_STATUS__ALGO_STATUS_OK)
                    continue;
                double ms = 0;
                if (tc_conv_plan_select(plan, a) < 0 || tc_conv_plan_run(plan, &ms) < 0) {
                    cr_log_warn("%s %s %s: %s failed to run: %s", label, tc_direction_name(d),
                                tc_dtype_name(dt), al->name, tc_errmsg());
                    continue;
                }
                tc_verify_t v;
                cr_assert_eq(tc_conv_verify(plan, &spec, &v), 0, "%s", tc_errmsg());
                cr_expect_eq(v.wrong, 0,
                             "%s %s %s %s with %s: %zu of %zu wrong; worst %s[%zu] = %g, "
                             "reference %g",
                             label, tc_direction_name(d), tc_dtype_name(dt),
                             tc_layout_name(layout), al->name, v.wrong, v.checked,
                             tc_tensor_name(v.tensor), v.worst, v.got, v.want);
                ran++;
                checked++;
            }
            cr_expect_gt(ran, 0, "%s %s: no cuDNN algorithm ran", label, tc_direction_name(d));
            tc_conv_plan_destroy(&plan);
        }
    return checked;
}

#define NCHW TRAINCAST__V1__LAYOUT__LAYOUT_NCHW
#define NHWC TRAINCAST__V1__LAYOUT__LAYOUT_NHWC

Test(cuda_conv, fp32_nchw, .timeout = 600)
{
    tc_device_t *dev = s_open_gpu();
    cr_expect_gt(s_check(dev, TRAINCAST__V1__DTYPE__DTYPE_FP32, NCHW), 0);
    tc_device_close(&dev);
}

Test(cuda_conv, fp32_nhwc, .timeout = 600)
{
    tc_device_t *dev = s_open_gpu();
    cr_expect_gt(s_check(dev, TRAINCAST__V1__DTYPE__DTYPE_FP32, NHWC), 0);
    tc_device_close(&dev);
}

Test(cuda_conv, tf32_nchw, .timeout = 600)
{
    tc_device_t *dev = s_open_gpu();
    cr_expect_gt(s_check(dev, TRAINCAST__V1__DTYPE__DTYPE_TF32, NCHW), 0);
    tc_device_close(&dev);
}

Test(cuda_conv, fp16_nhwc, .timeout = 600)
{
    tc_device_t *dev = s_open_gpu();
    cr_expect_gt(s_check(dev, TRAINCAST__V1__DTYPE__DTYPE_FP16, NHWC), 0);
    tc_device_close(&dev);
}

Test(cuda_conv, bf16_nchw, .timeout = 600)
{
    tc_device_t *dev = s_open_gpu();
    cr_expect_gt(s_check(dev, TRAINCAST__V1__DTYPE__DTYPE_BF16, NCHW), 0);
    tc_device_close(&dev);
}

/* The legacy API, as PyTorch 2.x calls it with TORCH_CUDNN_V8_API_DISABLED=1. */
Test(cuda_conv, fp32_nchw_legacy_api, .timeout = 600)
{
    setenv("TORCH_CUDNN_V8_API_DISABLED", "1", 1);
    tc_device_t *dev = s_open_gpu();
    tc_device_env_t env;
    tc_device_environment(dev, &env);
    if (strstr(env.framework, "pytorch 1."))
        cr_skip_test("PyTorch 1.x calls the legacy API by default (tested by fp32_nchw)");
    cr_expect(strstr(env.routing, "v7") != NULL, "%s", env.routing);
    cr_expect_gt(s_check(dev, TRAINCAST__V1__DTYPE__DTYPE_FP32, NCHW), 0);
    tc_device_close(&dev);
}

/* fp32 without TF32 (torch.backends.cudnn.allow_tf32 = False). */
Test(cuda_conv, fp32_strict_nchw, .timeout = 600)
{
    tc_device_t *dev = s_open_gpu();
    cr_expect_gt(s_check(dev, TRAINCAST__V1__DTYPE__DTYPE_FP32_STRICT, NCHW), 0);
    tc_device_close(&dev);
}

/* Depthwise convs in fp32, which PyTorch runs with its own kernels, run by
 * PyTorch: every direction, with and without a bias, against the reference. */
Test(cuda_conv, framework_native_depthwise, .timeout = 600)
{
    tc_device_t *dev = s_open_gpu();
    for (int bias = 0; bias <= 1; bias++)
        for (int d = 1; d <= 3; d++) {
            tc_conv_spec_t spec = {.config = tc_conv_config_default(),
                                   .direction = (Traincast__V1__Direction)d,
                                   .policy = TRAINCAST__V1__POLICY__POLICY_HEURISTIC,
                                   .seed = 9};
            tc_conv_config_t *c = &spec.config;
            c->n = 4, c->c = c->k = c->groups = 32, c->h = c->w = 14, c->r = c->s = 3;
            c->pad_h = c->pad_w = 1, c->bias = bias;
            tc_conv_plan_t *plan = NULL;
            int rc = tc_conv_plan_create(dev, &spec, &plan);
            if (rc == TC_EUNSUPPORTED)
                cr_skip_test("PyTorch cannot run on this GPU here: %s", tc_errmsg());
            cr_assert_eq(rc, 0, "%s", tc_errmsg());
            cr_expect_str_eq(tc_conv_plan_route(plan), "native-depthwise");
            cr_assert_eq(tc_conv_plan_select(plan, 0), 0, "%s", tc_errmsg());
            double ms = 0;
            cr_assert_eq(tc_conv_plan_run(plan, &ms), 0, "%s", tc_errmsg());
            cr_expect_gt(ms, 0.0);
            tc_verify_t v;
            cr_assert_eq(tc_conv_verify(plan, &spec, &v), 0, "%s", tc_errmsg());
            cr_expect_eq(v.wrong, 0, "%s bias %d: %zu of %zu wrong", tc_direction_name(d), bias,
                         v.wrong, v.checked);
            tc_conv_plan_destroy(&plan);
        }
    tc_device_close(&dev);
}

Test(cuda_conv, policies_and_device_description, .timeout = 600)
{
    tc_device_t *dev = s_open_gpu();
    Traincast__V1__Device d = TRAINCAST__V1__DEVICE__INIT;
    cr_assert_eq(tc_device_describe(dev, &d), 0);
    cr_expect_eq(d.kind, TRAINCAST__V1__DEVICE_KIND__DEVICE_KIND_CUDA);
    cr_expect_eq(strncmp(d.uuid, "GPU-", 4), 0, "%s", d.uuid);
    cr_expect_gt(d.multiprocessors, 0);
    cr_expect_str_eq(d.library, "cudnn");
    cr_expect(d.routing && strncmp(d.routing, "pytorch-", 8) == 0, "%s", d.routing);
    cr_expect(d.framework && *d.framework, "the device names its framework");
    tc_measure_opts_t mo = tc_measure_defaults();
    mo.budget_ms = 200;
    for (int pol = 1; pol <= 2; pol++) {
        tc_conv_spec_t spec = {.config = tc_conv_config_default(),
                               .direction = TRAINCAST__V1__DIRECTION__DIRECTION_FWD,
                               .policy = (Traincast__V1__Policy)pol,
                               .seed = 1};
        spec.config.n = 16, spec.config.c = 64, spec.config.h = spec.config.w = 28;
        spec.config.k = 64, spec.config.r = spec.config.s = 3;
        spec.config.pad_h = spec.config.pad_w = 1;
        tc_conv_outcome_t o;
        cr_assert_eq(tc_conv_bench(dev, &spec, &mo, &o), 0, "%s", tc_errmsg());
        cr_expect(o.algos[o.chosen].timed);
        cr_expect(strncmp(o.route, "cudnn", 5) == 0, "%s", o.route);
        if (pol == TRAINCAST__V1__POLICY__POLICY_HEURISTIC) {
            for (int i = 0; i < o.chosen; i++)
                cr_expect_neq(o.algos[i].info.status, TRAINCAST__V1__ALGO_STATUS__ALGO_STATUS_OK,
                              "the heuristic runs the first algorithm that fits");
        } else {
            for (size_t i = 0; i < o.n_algos; i++)
                if (o.algos[i].info.status == TRAINCAST__V1__ALGO_STATUS__ALGO_STATUS_OK)
                    cr_expect(o.algos[i].timed);
        }
        tc_conv_outcome_free(&o);
    }
    tc_device_close(&dev);
}
