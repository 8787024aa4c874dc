/* The agent's GPU conv routing (agent/devices/gpu_route.h) against PyTorch's
 * own choice on this GPU (agent/bench/route_check.h, as `agent routes`
 * runs it): every distinct conv of the CNN set at batch 32, in fp32, fp16
 * and bf16, NCHW and channels-last. Where the rule is marked verified for
 * this PyTorch, every conv must agree; otherwise the differences are
 * reported. Skips without a GPU or without PyTorch on it. */
#include "device.h"
#include "gpu_framework.h"
#include "route_check.h"

#include "tc_error.h"
#include "tc_test.h"
#include "tc_wire.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

typedef struct {
    char text[8192];
} s_diffs_t;

static void s_row(const tc_conv_config_t *c, const char *pytorch, const char *rule, void *arg)
{
    s_diffs_t *d = arg;
    if (!strcmp(pytorch, rule))
        return;
    char label[160];
    tc_conv_config_label(c, label, sizeof label);
    size_t len = strlen(d->text);
    if (len + 200 < sizeof d->text)
        snprintf(d->text + len, sizeof d->text - len, "\n  %s %s %s: PyTorch %s, rule %s", label,
                 tc_dtype_name(c->dtype), tc_layout_name(c->layout), pytorch, rule);
}

Test(cuda_route, agrees_with_pytorch_on_the_cnn_set, .timeout = 900)
{
    unsigned count = 0;
    char why[512];
    tc_backend_cuda.enumerate(&count, why, sizeof why);
    if (count == 0)
        cr_skip_test("no GPU: %s", why);
    const tc_gpu_framework_t *f = tc_gpu_framework_probe();
    if (!f->found || !f->cuda)
        cr_skip_test("no PyTorch that sees the GPU: %s", f->found ? "cuda unavailable" : f->why);
    char path[1024];
    tc_test_source_path("tests/data/cnn_set.convs", path, sizeof path);
    s_diffs_t d = {{0}};
    tc_route_check_t r;
    cr_assert_eq(tc_route_check("cuda:0", path, 32, s_row, &d, &r), 0, "%s", tc_errmsg());
    if (r.cannot_say)
        cr_skip_test("this PyTorch cannot name its backend choice");
    cr_expect_gt(r.checked, r.convs, "every conv in more than one dtype and layout");
    cr_log_info("%zu comparisons of %zu convs against %s (rule %s%s), %zu differ", r.checked,
                r.convs, r.framework, r.rule, r.verified ? "" : ", unverified", r.differ);
    if (r.verified)
        cr_expect_eq(r.differ, 0, "%zu of %zu routes differ from %s:%s", r.differ, r.checked,
                     r.framework, d.text);
    else if (r.differ)
        cr_log_warn("%s (no verified rule): %zu of %zu differ:%s", r.framework, r.differ,
                    r.checked, d.text);
}
