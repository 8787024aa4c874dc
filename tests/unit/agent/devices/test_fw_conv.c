/* The framework runs convolutions for the agent (agent/devices/fw_conv.h and
 * agent/harness/gpu_env.py --serve): on the CPU here (the GPU backend uses
 * the same helper on cuda:I), every direction of convs with and without a
 * bias, depthwise, grouped and dilated, computed by PyTorch and checked
 * against the naive reference through the helper's tensors; PyTorch's own
 * backend choice; a failing request answered with PyTorch's message while
 * the helper keeps serving. Skipped without PyTorch. */
#include "conv_verify.h"
#include "fw_conv.h"

#include "tc_error.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

static tc_fw_t *s_open(void)
{
    tc_fw_t *fw = NULL;
    int rc = tc_fw_open("cpu", &fw);
    if (rc == TC_ENOTFOUND)
        cr_skip_test("no PyTorch: %s", tc_errmsg());
    cr_assert_eq(rc, 0, "%s", tc_errmsg());
    return fw;
}

typedef struct {
    unsigned n, c, hw, k, rs, stride, pad, groups, dil;
    bool bias;
} s_shape_t;

static const s_shape_t s_shapes[] = {
    {2, 8, 9, 16, 3, 1, 1, 1, 1, true},  /* plain 3x3 with a bias */
    {2, 8, 9, 8, 3, 2, 1, 8, 1, true},   /* depthwise, stride 2, bias */
    {3, 8, 7, 16, 1, 1, 0, 4, 1, false}, /* grouped 1x1 */
    {2, 4, 11, 4, 3, 1, 2, 1, 2, false}, /* dilated */
};

static void s_check(Traincast__V1__Direction dir)
{
    tc_fw_t *fw = s_open();
    cr_expect(strlen(tc_fw_version(fw)) > 0);
    for (size_t i = 0; i < sizeof s_shapes / sizeof s_shapes[0]; i++) {
        const s_shape_t *s = &s_shapes[i];
        tc_conv_config_t c = tc_conv_config_default();
        c.n = s->n, c.c = s->c, c.h = c.w = s->hw, c.k = s->k, c.r = c.s = s->rs;
        c.stride_h = c.stride_w = s->stride, c.pad_h = c.pad_w = s->pad;
        c.groups = s->groups, c.dilation_h = c.dilation_w = s->dil, c.bias = s->bias;
        tc_conv_spec_t spec = {.config = c, .direction = dir,
                               .policy = TRAINCAST__V1__POLICY__POLICY_HEURISTIC,
                               .seed = 5 + i};
        char label[128];
        tc_conv_config_label(&c, label, sizeof label);
        void *impl = NULL;
        cr_assert_eq(tc_fw_plan_create(fw, &spec, "native", &impl), 0, "%s: %s", label,
                     tc_errmsg());
        tc_conv_plan_t plan = {&tc_fw_plan_iface, impl};
        cr_assert_eq(tc_conv_plan_algo_count(&plan), 1);
        cr_expect(strncmp(tc_conv_plan_algo(&plan, 0)->name, "pytorch-native:", 15) == 0, "%s",
                  tc_conv_plan_algo(&plan, 0)->name);
        cr_expect_str_eq(tc_conv_plan_route(&plan), "native");
        cr_assert_eq(tc_conv_plan_select(&plan, 0), 0, "%s", tc_errmsg());
        double ms = 0;
        for (int rep = 0; rep < 2; rep++)
            cr_assert_eq(tc_conv_plan_run(&plan, &ms), 0, "%s: %s", label, tc_errmsg());
        cr_expect_gt(ms, 0.0);
        tc_verify_t v;
        cr_assert_eq(tc_conv_verify(&plan, &spec, &v), 0, "%s: %s", label, tc_errmsg());
        cr_expect_gt(v.checked, 0);
        cr_expect_eq(v.wrong, 0, "%s %s: %zu of %zu values wrong; worst %s[%zu] = %g, reference %g",
                     label, tc_direction_name(dir), v.wrong, v.checked, tc_tensor_name(v.tensor),
                     v.worst, v.got, v.want);
        if (c.bias && dir != TRAINCAST__V1__DIRECTION__DIRECTION_BWD_DATA) {
            float b[64];
            tc_tensor_t t = dir == TRAINCAST__V1__DIRECTION__DIRECTION_FWD ? TC_TENSOR_B
                                                                          : TC_TENSOR_DB;
            cr_expect_eq(tc_conv_plan_read(&plan, t, b, c.k), 0, "%s: no %s: %s", label,
                         tc_tensor_name(t), tc_errmsg());
        }
        plan.iface->plan_destroy(impl);
    }
    tc_fw_close(&fw);
    cr_expect_null(fw);
}

Test(fw_conv, fwd, .timeout = 300) { s_check(TRAINCAST__V1__DIRECTION__DIRECTION_FWD); }
Test(fw_conv, bwd_data, .timeout = 300) { s_check(TRAINCAST__V1__DIRECTION__DIRECTION_BWD_DATA); }
Test(fw_conv, bwd_filter, .timeout = 300)
{
    s_check(TRAINCAST__V1__DIRECTION__DIRECTION_BWD_FILTER);
}

Test(fw_conv, two_plans_take_turns_and_failures_are_answered, .timeout = 300)
{
    tc_fw_t *fw = s_open();
    tc_conv_config_t c = tc_conv_config_default();
    c.n = 2, c.c = 4, c.h = c.w = 6, c.k = 4, c.r = c.s = 3, c.pad_h = c.pad_w = 1;
    char backend[64];
    cr_assert_eq(tc_fw_select(fw, &c, backend, sizeof backend), 0, "%s", tc_errmsg());
    /* On the CPU: oneDNN for this shape (PyTorch's rule, cpu_route.h). */
    cr_expect_str_eq(backend, "Mkldnn");

    tc_conv_spec_t a = {.config = c, .direction = TRAINCAST__V1__DIRECTION__DIRECTION_FWD,
                        .seed = 1};
    tc_conv_spec_t b = a;
    b.config.k = 8;
    void *pa = NULL, *pb = NULL;
    cr_assert_eq(tc_fw_plan_create(fw, &a, "native", &pa), 0, "%s", tc_errmsg());
    cr_assert_eq(tc_fw_plan_create(fw, &b, "native", &pb), 0, "%s", tc_errmsg());
    tc_conv_plan_t plan_a = {&tc_fw_plan_iface, pa}, plan_b = {&tc_fw_plan_iface, pb};
    double ms;
    cr_assert_eq(tc_conv_plan_select(&plan_a, 0), 0);
    cr_assert_eq(tc_conv_plan_select(&plan_b, 0), 0);
    /* Each run and read reaches its own plan, however they interleave. */
    cr_assert_eq(tc_conv_plan_run(&plan_a, &ms), 0, "%s", tc_errmsg());
    cr_assert_eq(tc_conv_plan_run(&plan_b, &ms), 0, "%s", tc_errmsg());
    float y[2 * 8 * 6 * 6];
    cr_expect_eq(tc_conv_plan_read(&plan_a, TC_TENSOR_Y, y, 2 * 4 * 6 * 6), 0, "%s", tc_errmsg());
    cr_expect_eq(tc_conv_plan_read(&plan_b, TC_TENSOR_Y, y, 2 * 8 * 6 * 6), 0, "%s", tc_errmsg());
    cr_expect_eq(tc_conv_plan_read(&plan_a, TC_TENSOR_DX, y, 2 * 4 * 6 * 6), TC_ENOTFOUND);

    /* A conv PyTorch refuses (fp16 on the CPU in this version, or channels
     * that do not match the groups) fails with PyTorch's words... */
    tc_conv_spec_t bad = a;
    bad.config.groups = 3;
    void *pbad = NULL;
    int rc = tc_fw_plan_create(fw, &bad, "native", &pbad);
    cr_expect_lt(rc, 0);
    cr_expect(strstr(tc_errmsg(), "PyTorch") != NULL, "%s", tc_errmsg());
    /* ...and the helper serves on. */
    cr_expect_eq(tc_conv_plan_run(&plan_a, &ms), 0, "%s", tc_errmsg());
    /* Destroying the current plan frees it there; the other plan comes back. */
    tc_fw_plan_iface.plan_destroy(pa);
    cr_expect_eq(tc_conv_plan_run(&plan_b, &ms), 0, "%s", tc_errmsg());
    tc_fw_plan_iface.plan_destroy(pb);
    tc_fw_close(&fw);
}
