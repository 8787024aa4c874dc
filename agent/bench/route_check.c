#include "route_check.h"

#include "convlist.h"
#include "device.h"
#include "fw_conv.h"
#include "gpu_framework.h"
#include "gpu_route.h"

#include "tc_error.h"
#include "tc_wire.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    tc_conv_config_t *v;
    size_t n, cap;
} s_list_t;

/* The distinct configs of every model of the list. */
static int s_collect(const char *model, const tc_conv_usage_t *convs, size_t n, void *arg)
{
    (void)model;
    s_list_t *l = arg;
    for (size_t i = 0; i < n; i++) {
        bool seen = false;
        for (size_t j = 0; j < l->n && !seen; j++)
            seen = tc_conv_key_cmp(&l->v[j], &convs[i].config) == 0;
        if (seen)
            continue;
        if (l->n == l->cap) {
            size_t cap = l->cap ? 2 * l->cap : 256;
            tc_conv_config_t *v = realloc(l->v, cap * sizeof *v);
            if (!v)
                return tc_fail(TC_ENOMEM, "out of memory reading a conv list");
            l->v = v, l->cap = cap;
        }
        l->v[l->n++] = convs[i].config;
    }
    return 0;
}

int tc_route_check(const char *device, const char *convs_path, uint32_t batch,
                   tc_route_row_fn row, void *arg, tc_route_check_t *out)
{
    int rc = 0;
    memset(out, 0, sizeof *out);
    s_list_t l = {0};
    tc_device_t *dev = NULL;
    tc_fw_t *fw = NULL;
    if (strncmp(device, "cuda:", 5) != 0)
        return tc_fail(TC_EUSAGE, "routes are compared on a GPU (cuda:INDEX), not on '%s'",
                       device);
    TC_TRY(tc_convlist_read(convs_path, s_collect, &l));
    TC_TRY(tc_device_open(device, 0, &dev));
    Traincast__V1__Device d = TRAINCAST__V1__DEVICE__INIT;
    TC_TRY(tc_device_describe(dev, &d));
    int cc_major = atoi(d.compute_capability);
    const tc_gpu_framework_t *f = tc_gpu_framework_probe();
    if (!f->found || !f->cuda)
        TC_FAIL_GOTO(TC_ENOTFOUND, "%s: no PyTorch that sees this GPU to compare with (%s)",
                     device, f->found ? "its torch.cuda.is_available() is False" : f->why);
    TC_TRY(tc_fw_open(device, &fw));
    tc_gpu_rule_t rule = tc_gpu_rule(f->framework, f->version);
    snprintf(out->framework, sizeof out->framework, "%s %s", f->framework, f->version);
    snprintf(out->rule, sizeof out->rule, "%s", rule.name);
    out->verified = rule.verified;
    out->convs = l.n;
    tc_gpu_settings_t s = {.cudnn_version = f->cudnn_number,
                           .cc_major = cc_major,
                           .cudnn_enabled = f->cudnn_enabled,
                           .deterministic = f->deterministic,
                           .allow_tf32 = f->allow_tf32};
    s.v8_api = tc_gpu_v8_api(&rule, getenv("TORCH_CUDNN_V8_API_ENABLED"),
                             getenv("TORCH_CUDNN_V8_API_DISABLED"));
    const Traincast__V1__DType dtypes[] = {TRAINCAST__V1__DTYPE__DTYPE_FP32,
                                           TRAINCAST__V1__DTYPE__DTYPE_FP16,
                                           TRAINCAST__V1__DTYPE__DTYPE_BF16};
    const Traincast__V1__Layout layouts[] = {TRAINCAST__V1__LAYOUT__LAYOUT_NCHW,
                                             TRAINCAST__V1__LAYOUT__LAYOUT_NHWC};
    for (size_t i = 0; i < l.n; i++)
        for (size_t t = 0; t < sizeof dtypes / sizeof dtypes[0]; t++) {
            if (dtypes[t] == TRAINCAST__V1__DTYPE__DTYPE_BF16 && cc_major < 8)
                continue; /* no bf16 convs before compute capability 8.0 */
            for (size_t y = 0; y < sizeof layouts / sizeof layouts[0]; y++) {
                tc_conv_config_t c = l.v[i];
                c.n = batch, c.dtype = dtypes[t], c.layout = layouts[y];
                char backend[64];
                TC_TRY(tc_fw_select(fw, &c, backend, sizeof backend));
                if (!backend[0]) {
                    out->cannot_say = true;
                    goto err;
                }
                tc_gpu_route_t ours = tc_gpu_route_conv(&rule, &s, &c);
                out->checked++;
                if (tc_gpu_route_from_backend(backend) != (int)ours)
                    out->differ++;
                if (row)
                    row(&c, backend, tc_gpu_route_backend(ours), arg);
            }
        }
err:
    tc_fw_close(&fw);
    tc_device_close(&dev);
    free(l.v);
    return rc;
}
