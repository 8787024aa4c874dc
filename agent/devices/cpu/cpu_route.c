#include "cpu_route.h"

#include <stdint.h>
#include <string.h>

static const tc_route_rule_t s_pytorch_113 = {"pytorch-1.13", "1.13", true, true};
static const tc_route_rule_t s_pytorch_unverified = {"pytorch-1.13", "1.13", false, true};
static const tc_route_rule_t s_onednn_only = {"onednn-only", "", true, false};

const tc_route_rule_t *tc_route_rule(const char *framework, const char *version)
{
    if (!framework || !*framework)
        return &s_onednn_only;
    if (!strcmp(framework, "pytorch") && version && strncmp(version, "1.13.", 5) == 0)
        return &s_pytorch_113;
    return &s_pytorch_unverified;
}

/* ConvParams::use_mkldnn of PyTorch 1.13 for a non-transposed 2-d conv. */
static bool s_use_mkldnn(const tc_conv_config_t *c, unsigned threads, bool enabled,
                         bool bf16_onednn)
{
    if (!enabled)
        return false;
    if (c->dtype == TRAINCAST__V1__DTYPE__DTYPE_BF16 && bf16_onednn)
        return true;
    /* fp32_strict is fp32 on a CPU (TF32 is a GPU's). */
    if (c->dtype != TRAINCAST__V1__DTYPE__DTYPE_FP32 &&
        c->dtype != TRAINCAST__V1__DTYPE__DTYPE_FP32_STRICT)
        return false;
    bool strided = c->stride_h != 1 || c->stride_w != 1;
    bool dilated = c->dilation_h != 1 || c->dilation_w != 1;
    uint64_t numel = (uint64_t)c->n * c->c * c->h * c->w;
    return (strided || dilated || c->n >= 16 || c->s != 1 || c->r != 1 || threads > 1) &&
           (c->groups > 1 || (c->s > 3 && c->r > 3) || c->n > 1 || numel > 20480);
}

tc_route_t tc_route_conv(const tc_route_rule_t *rule, const tc_conv_config_t *c, unsigned threads,
                         bool onednn_enabled, bool bf16_onednn)
{
    if (!rule->uses_native || s_use_mkldnn(c, threads, onednn_enabled, bf16_onednn))
        return TC_ROUTE_ONEDNN;
    if (c->dtype != TRAINCAST__V1__DTYPE__DTYPE_FP32 &&
        c->dtype != TRAINCAST__V1__DTYPE__DTYPE_FP32_STRICT)
        return TC_ROUTE_UNSUPPORTED;
    if (c->dilation_h != 1 || c->dilation_w != 1)
        return TC_ROUTE_NATIVE_DILATED;
    return TC_ROUTE_NATIVE;
}

const char *tc_route_name(tc_route_t r)
{
    switch (r) {
    case TC_ROUTE_ONEDNN: return "onednn";
    case TC_ROUTE_NATIVE: return "native";
    case TC_ROUTE_NATIVE_DILATED: return "native-dilated";
    default: return "unsupported";
    }
}
