#include "gpu_route.h"

#include "tc_error.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The newest PyTorch minor version of 2.x the rule was checked for. */
#define S_NEWEST_MINOR 11

tc_gpu_rule_t tc_gpu_rule(const char *framework, const char *version)
{
    tc_gpu_rule_t r = {"pytorch-2", "2.0 to 2.11", false, 2, S_NEWEST_MINOR};
    int major = 0, minor = 0;
    if (!framework || strcmp(framework, "pytorch") != 0 || !version ||
        sscanf(version, "%d.%d", &major, &minor) != 2)
        return r;
    if (major == 1 && minor == 13)
        return (tc_gpu_rule_t){"pytorch-1.13", "1.13", true, 1, 13};
    r.major = major;
    r.minor = minor;
    r.verified = major == 2 && minor >= 0 && minor <= S_NEWEST_MINOR;
    return r;
}

/* c10::utils::check_env: "1" true, "0" false, anything else (or unset)
 * no value. */
static int s_check_env(const char *v)
{
    if (!v)
        return -1;
    if (!strcmp(v, "1"))
        return 1;
    if (!strcmp(v, "0"))
        return 0;
    return -1;
}

bool tc_gpu_v8_api(const tc_gpu_rule_t *rule, const char *enabled_env, const char *disabled_env)
{
    /* 1.13: static bool cudnnv8_flag = check_env("TORCH_CUDNN_V8_API_ENABLED") == true;
     * 2.x:  static bool cudnnv8_flag = check_env("TORCH_CUDNN_V8_API_DISABLED") != true; */
    if (rule->major == 1)
        return s_check_env(enabled_env) == 1;
    return s_check_env(disabled_env) != 1;
}

static bool s_dilated(const tc_conv_config_t *c) { return c->dilation_h != 1 || c->dilation_w != 1; }

static bool s_channels_last(const tc_conv_config_t *c)
{
    return c->layout == TRAINCAST__V1__LAYOUT__LAYOUT_NHWC;
}

/* ConvParams::is_depthwise (input.is_cuda(), not transposed, 4-d). */
static bool s_is_depthwise(const tc_conv_config_t *c)
{
    return c->c == c->groups && c->groups > 1 && c->k % c->c == 0;
}

/* ConvParams::needs_64bit_indexing_no_split: one sample's input or output
 * has more than INT_MAX elements. */
static bool s_needs_64bit(const tc_conv_config_t *c)
{
    const uint64_t int_max = 2147483647u;
    uint64_t in = (uint64_t)c->c * c->h * c->w;
    uint64_t out = (uint64_t)c->k * tc_conv_out_h(c) * tc_conv_out_w(c);
    return in > int_max || out > int_max;
}

static bool s_use_cudnn(const tc_gpu_rule_t *r, const tc_gpu_settings_t *s,
                        const tc_conv_config_t *c)
{
    if (!s->cudnn_enabled)
        return false;
    if (s_needs_64bit(c)) {
        /* 2.5 and later (pull request 134890): allowed with cuDNN >= 9.3 and
         * the v8 API. */
        if (!(r->major == 2 && r->minor >= 5 && s->cudnn_version >= 90300 && s->v8_api))
            return false;
    }
    if (c->dtype == TRAINCAST__V1__DTYPE__DTYPE_BF16) {
        if (r->major == 1)
            return s->v8_api; /* 1.13: return cudnnv8_enabled_check_debug(); */
        /* supportsBFloat16ConvolutionWithCuDNNv8(): compute capability >= 8.0 */
        if (!(s->cc_major >= 8 && s->v8_api))
            return false;
    }
    if (!s_channels_last(c)) {
        /* "cudnn doesn't support deterministic dilated convolution fully yet" */
        if (s->deterministic && s_dilated(c))
            return false;
        /* supportsDilatedConvolutionWithCuDNN() holds for every cuDNN PyTorch
         * builds with; output padding is 0 for a conv that is not transposed. */
    }
    return true;
}

/* check_cudnn_depthwise_workload: the cuDNN 7.6 rule, by batch, channels,
 * width and stride. */
static bool s_workload_76(const tc_conv_config_t *c, unsigned stride)
{
    long w = c->w, ch = c->c, bs = c->n;
    if (stride == 1) {
        if (w >= 7) {
            if (w >= 112)
                return true;
            if (ch >= 1024) {
                if (w >= 56)
                    return true;
                else if (bs >= 32)
                    return true;
            }
            if (bs >= 128) {
                if (ch >= 512)
                    return true;
                else if (ch >= 64) {
                    if (w >= 14)
                        return true;
                } else if (ch >= 32 && w >= 28)
                    return true;
            } else if (bs >= 64) {
                if (ch >= 256 && w >= 14)
                    return true;
                else if (ch >= 32 && w >= 28)
                    return true;
            } else if (bs >= 32) {
                if (ch >= 256 && w >= 14)
                    return true;
                else if (ch >= 128 && w >= 28)
                    return true;
                else if (ch >= 32 && w >= 56)
                    return true;
            } else if (bs >= 16) {
                if (ch >= 1024 && w >= 14)
                    return true;
                if (ch >= 256 && w >= 28)
                    return true;
                else if (ch >= 32 && w >= 56)
                    return true;
            } else if (bs >= 8) {
                if (ch >= 512 && w >= 28)
                    return true;
                else if (ch >= 64 && w >= 56)
                    return true;
            }
        }
    } else if (stride == 2) {
        if (ch < 256)
            return false;
        if (w >= 7) {
            if (bs >= 128) {
                if (ch >= 1024)
                    return true;
                else if (ch >= 512 && w >= 14)
                    return true;
                else if (w >= 28)
                    return true;
            } else if (bs >= 64) {
                if (ch >= 512 && w >= 14)
                    return true;
                else if (w >= 28)
                    return true;
            } else if (bs >= 32) {
                if (ch >= 1024 && w >= 14)
                    return true;
                else if (w >= 28)
                    return true;
            } else if (bs >= 16) {
                if (ch >= 512 && w >= 28)
                    return true;
                else if (w >= 56)
                    return true;
            } else if (bs >= 8) {
                if (ch >= 1024 && w >= 28)
                    return true;
                else if (w >= 56)
                    return true;
            } else if (bs >= 1) {
                if (ch >= 512 && w >= 112)
                    return true;
            }
        }
    }
    return false;
}

/* check_cudnn_depthwise_workload_with_filter: "simplified version for
 * cudnn 8.2 and above"; `stride` is the width stride. */
static bool s_workload_with_filter(const tc_conv_config_t *c, unsigned stride)
{
    if (c->h == 1 && stride == 1)
        return true; /* 1-d conv */
    if (c->r != c->s)
        return false; /* only square filters */
    unsigned filter = c->s;
    if (filter != 1 && filter != 3 && filter != 5)
        return false;
    if (c->w < 7)
        return false; /* min width 7 */
    long w = c->w, ch = c->c, bs = c->n;
    if (stride == 1)
        return true;
    if (stride != 2)
        return false;
    if (bs == 1) {
        if (filter == 1 && w <= 28)
            return true;
        if (filter == 3 || filter == 5)
            return true;
    } else {
        if (filter == 1 && bs <= 16 && ch >= 128 && w <= 7)
            return true;
        if (filter == 3 || filter == 5) {
            if (ch >= 512 || (ch >= 256 && w >= 28))
                return true;
        }
    }
    return false;
}

static bool s_use_cudnn_depthwise(const tc_gpu_rule_t *r, const tc_gpu_settings_t *s,
                                  const tc_conv_config_t *c)
{
    bool use_cudnn = s_use_cudnn(r, s, c);
    /* "always use cudnn_depthwise for channels_last format" */
    if (s_channels_last(c) && use_cudnn)
        return true;
    /* supportsDepthwiseConvolutionWithCuDNN(): Volta (compute capability 7.0)
     * and newer. */
    if (s->cc_major < 7)
        return false;
    bool fp16 = c->dtype == TRAINCAST__V1__DTYPE__DTYPE_FP16;
    if (s->cudnn_version >= 8200) {
        bool kernel_cond = use_cudnn && fp16 && s_is_depthwise(c) && !s_dilated(c) &&
                           (c->stride_h == c->stride_w || c->h == 1) && c->c >= 32;
        if (kernel_cond)
            return s_workload_with_filter(c, c->stride_w);
    }
    /* "keep (7600 <= cudnn < 8200) code unchanged" */
    bool kernel_cond = s->cudnn_version >= 7600 && use_cudnn && fp16 && s_is_depthwise(c) &&
                       c->r == c->s && c->h >= 7 && !s_dilated(c) &&
                       c->stride_h == c->stride_w && (c->s == 3 || c->s == 1) && c->c >= 32;
    return kernel_cond && s_workload_76(c, c->stride_h);
}

tc_gpu_route_t tc_gpu_route_conv(const tc_gpu_rule_t *rule, const tc_gpu_settings_t *s,
                                 const tc_conv_config_t *c)
{
    if (s_is_depthwise(c))
        return s_use_cudnn_depthwise(rule, s, c) ? TC_GPU_ROUTE_CUDNN
                                                 : TC_GPU_ROUTE_NATIVE_DEPTHWISE;
    if (s_use_cudnn(rule, s, c))
        return TC_GPU_ROUTE_CUDNN;
    return s_dilated(c) ? TC_GPU_ROUTE_NATIVE_DILATED : TC_GPU_ROUTE_NATIVE;
}

static const struct {
    tc_gpu_route_t route;
    const char *name, *backend;
} s_names[] = {
    {TC_GPU_ROUTE_CUDNN, "cudnn", "Cudnn"},
    {TC_GPU_ROUTE_NATIVE_DEPTHWISE, "native-depthwise", "CudaDepthwise2d"},
    {TC_GPU_ROUTE_NATIVE, "native", "Slow2d"},
    {TC_GPU_ROUTE_NATIVE_DILATED, "native-dilated", "SlowDilated2d"},
};

const char *tc_gpu_route_name(tc_gpu_route_t r)
{
    for (size_t i = 0; i < sizeof s_names / sizeof s_names[0]; i++)
        if (s_names[i].route == r)
            return s_names[i].name;
    return "unknown";
}

const char *tc_gpu_route_backend(tc_gpu_route_t r)
{
    for (size_t i = 0; i < sizeof s_names / sizeof s_names[0]; i++)
        if (s_names[i].route == r)
            return s_names[i].backend;
    return "unknown";
}

int tc_gpu_route_from_backend(const char *name)
{
    /* "ConvBackend.Cudnn" as torch._C._ConvBackend prints, or bare. */
    const char *dot = name ? strrchr(name, '.') : NULL;
    const char *base = dot ? dot + 1 : name;
    for (size_t i = 0; base && i < sizeof s_names / sizeof s_names[0]; i++)
        if (!strcmp(s_names[i].backend, base))
            return (int)s_names[i].route;
    return -1;
}

int tc_gpu_conv_math(Traincast__V1__DType dtype, bool allow_tf32, int cc_major,
                     tc_gpu_conv_math_t *out)
{
    bool ampere = cc_major >= 8;
    out->allow_tf32 = false;
    out->math = TC_GPU_MATH_DEFAULT;
    switch (dtype) {
    case TRAINCAST__V1__DTYPE__DTYPE_FP32:
        out->allow_tf32 = allow_tf32;
        out->math = allow_tf32 ? TC_GPU_MATH_DEFAULT : TC_GPU_MATH_FMA;
        return 0;
    case TRAINCAST__V1__DTYPE__DTYPE_FP32_STRICT:
        out->math = TC_GPU_MATH_FMA;
        return 0;
    case TRAINCAST__V1__DTYPE__DTYPE_TF32:
        if (!ampere)
            return tc_fail(TC_EUNSUPPORTED, "tf32 needs compute capability 8.0 or newer (this GPU "
                                            "is %d.x): use --dtype fp32",
                           cc_major);
        out->allow_tf32 = true;
        return 0;
    case TRAINCAST__V1__DTYPE__DTYPE_FP16:
        out->math = TC_GPU_MATH_TENSOR_OP;
        return 0;
    case TRAINCAST__V1__DTYPE__DTYPE_BF16:
        if (!ampere)
            return tc_fail(TC_EUNSUPPORTED, "bf16 convolutions need compute capability 8.0 or "
                                            "newer (this GPU is %d.x)",
                           cc_major);
        out->math = TC_GPU_MATH_TENSOR_OP;
        return 0;
    default:
        return tc_fail(TC_EINVAL, "conv config: unknown dtype %d", (int)dtype);
    }
}

tc_gpu_plan_failure_t tc_gpu_plan_failure(int status)
{
    switch (status) {
    case 1001: /* NOT_INITIALIZED */
    case 1002: /* SUBLIBRARY_VERSION_MISMATCH */
    case 1008: /* SUBLIBRARY_LOADING_FAILED */
    case 3005: /* NOT_SUPPORTED_INCOMPATIBLE_CUDA_DRIVER */
    case 3006: /* NOT_SUPPORTED_INCOMPATIBLE_CUDART */
    case 3008: /* NOT_SUPPORTED_RUNTIME_PREREQUISITE_MISSING (NVRTC, cuBLASLt) */
    case 3009: /* NOT_SUPPORTED_SUBLIBRARY_UNAVAILABLE */
    case 4001: /* INTERNAL_ERROR_COMPILATION_FAILED (runtime compilation) */
        return TC_GPU_PLAN_ENVIRONMENT;
    default:
        /* The NOT_SUPPORTED category (3000-3999): the engine cannot run this
         * conv here, in training neither. */
        return status / 1000 * 1000 == 3000 ? TC_GPU_PLAN_SKIP : TC_GPU_PLAN_ERROR;
    }
}
