/* The agent's GPU conv routing (agent/devices/gpu_route.h) against PyTorch's own
 * choice on this GPU (torch._C._select_conv_backend through the framework
 * helper): every distinct conv of the CNN set at batch 32, in fp32, fp16
 * and bf16, NCHW and channels-last. Where the rule is marked verified for
 * this PyTorch, every conv must agree; otherwise the differences are
 * reported. Skips without a GPU or without PyTorch on it. */
#include "convlist.h"
#include "fw_conv.h"
#include "gpu_framework.h"
#include "gpu_route.h"

#include "tc_error.h"
#include "tc_test.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    tc_conv_config_t *v;
    size_t n, cap;
} s_list_t;

static int s_collect(const char *model, const tc_conv_usage_t *convs, size_t n, void *arg)
{
    (void)model;
    s_list_t *l = arg;
    for (size_t i = 0; i < n; i++) {
        if (l->n == l->cap) {
            l->cap = l->cap ? 2 * l->cap : 256;
            l->v = realloc(l->v, l->cap * sizeof *l->v);
            cr_assert_not_null(l->v);
        }
        l->v[l->n++] = convs[i].config;
    }
    return 0;
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
    tc_fw_t *fw = NULL;
    cr_assert_eq(tc_fw_open("cuda:0", &fw), 0, "%s", tc_errmsg());
    char path[1024];
    tc_test_source_path("tests/data/cnn_set.convs", path, sizeof path);
    s_list_t l = {0};
    cr_assert_eq(tc_convlist_read(path, s_collect, &l), 0, "%s", tc_errmsg());

    tc_gpu_rule_t rule = tc_gpu_rule(f->framework, f->version);
    Traincast__V1__Device d = TRAINCAST__V1__DEVICE__INIT;
    tc_device_t *dev = NULL;
    cr_assert_eq(tc_device_open("cuda:0", 0, &dev), 0, "%s", tc_errmsg());
    cr_assert_eq(tc_device_describe(dev, &d), 0);
    int major = atoi(d.compute_capability);
    tc_gpu_settings_t s = {.cudnn_version = f->cudnn_number, .cc_major = major,
                           .cudnn_enabled = f->cudnn_enabled, .deterministic = f->deterministic};
    s.v8_api = tc_gpu_v8_api(&rule, getenv("TORCH_CUDNN_V8_API_ENABLED"),
                             getenv("TORCH_CUDNN_V8_API_DISABLED"));
    const Traincast__V1__DType dtypes[] = {TRAINCAST__V1__DTYPE__DTYPE_FP32,
                                           TRAINCAST__V1__DTYPE__DTYPE_FP16,
                                           TRAINCAST__V1__DTYPE__DTYPE_BF16};
    size_t checked = 0, wrong = 0;
    char diffs[8192] = "";
    for (size_t i = 0; i < l.n; i++)
        for (size_t t = 0; t < 3; t++)
            for (int layout = 1; layout <= 2; layout++) {
                tc_conv_config_t c = l.v[i];
                c.n = 32, c.dtype = dtypes[t], c.layout = (Traincast__V1__Layout)layout;
                char backend[64];
                cr_assert_eq(tc_fw_select(fw, &c, backend, sizeof backend), 0, "%s",
                             tc_errmsg());
                if (!backend[0])
                    cr_skip_test("this PyTorch cannot name its backend choice");
                tc_gpu_route_t ours = tc_gpu_route_conv(&rule, &s, &c);
                checked++;
                if (tc_gpu_route_from_backend(backend) != (int)ours) {
                    char label[160];
                    tc_conv_config_label(&c, label, sizeof label);
                    size_t len = strlen(diffs);
                    if (len + 200 < sizeof diffs)
                        snprintf(diffs + len, sizeof diffs - len, "\n  %s %s %s: PyTorch %s, rule %s",
                                 label, tc_dtype_name(c.dtype), tc_layout_name(c.layout), backend,
                                 tc_gpu_route_backend(ours));
                    wrong++;
                }
            }
    cr_log_info("%zu convs x dtypes x layouts checked against PyTorch %s (rule %s%s), %zu differ",
                checked, f->version, rule.name, rule.verified ? "" : ", unverified", wrong);
    if (rule.verified)
        cr_expect_eq(wrong, 0, "%zu of %zu routes differ from PyTorch %s:%s", wrong, checked,
                     f->version, diffs);
    else if (wrong)
        cr_log_warn("PyTorch %s (no verified rule): %zu of %zu differ:%s", f->version, wrong,
                    checked, diffs);
    tc_device_close(&dev);
    tc_fw_close(&fw);
    free(l.v);
}
