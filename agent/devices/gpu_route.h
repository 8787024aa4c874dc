/* Where the framework sends a GPU convolution, and which cuDNN API it
 * calls it through. The agent benchmarks each conv on that path, because
 * that is the time training pays. Pure logic (no CUDA types), so that it
 * is tested on machines without a GPU.
 *
 * PyTorch (aten/src/ATen/native/Convolution.cpp, _select_conv_backend with
 * ConvParams::is_depthwise, use_cudnn_depthwise and use_cudnn) sends a 2-d,
 * non-transposed conv on a CUDA device to
 *
 *   - ConvBackend::Cudnn when it is depthwise (channels == groups > 1,
 *     output channels a multiple of them) and use_cudnn_depthwise holds,
 *     or when it is not depthwise and use_cudnn holds;
 *   - ConvBackend::CudaDepthwise2d (at::_conv_depthwise2d, PyTorch's own
 *     kernels) for the other depthwise convs;
 *   - ConvBackend::SlowDilated2d (slow_conv_dilated2d) or Slow2d
 *     (thnn_conv2d: im2col and a cuBLAS GEMM, per group) for the rest.
 *
 * use_cudnn: cuDNN enabled; no 64-bit indexing that a batch split cannot
 * avoid (from 2.5: unless cuDNN >= 9.3 with the v8 API); bf16 only through
 * the v8 API (1.13: use_cudnn is then exactly "the v8 API is on"; 2.x: also
 * compute capability >= 8.0); in NCHW, not deterministic and dilated at
 * once.
 *
 * use_cudnn_depthwise: channels-last and use_cudnn; else on compute
 * capability >= 7.0, fp16 only: with cuDNN >= 8.2 and (square stride or
 * height 1) and >= 32 channels and no dilation, the answer of
 * check_cudnn_depthwise_workload_with_filter (every stride-1 1x1, 3x3 and
 * 5x5 filter on >= 7 columns; stride 2 by batch, channels, width and
 * filter); else the cuDNN 7.6 rule (check_cudnn_depthwise_workload, square
 * 1x1 or 3x3 filters), which can only say yes below cuDNN 8.2.
 *
 * Checked against the source of 1.13 and of 2.x (2.0 and a 2.x snapshot
 * after the 64-bit change). The later snapshot no longer has the cuDNN 7.6
 * rule (a change only below cuDNN 8.2) nor the deterministic-dilated
 * exception (a change only in deterministic mode). On a GPU with PyTorch at hand the device asks PyTorch itself
 * (torch._C._select_conv_backend) for every conv and follows it where it
 * differs from this rule, saying so.
 *
 * The cuDNN API: 1.13 calls the v7 (legacy) API unless
 * TORCH_CUDNN_V8_API_ENABLED=1; 2.x calls the v8 (graph) API unless
 * TORCH_CUDNN_V8_API_DISABLED=1 (c10::utils::check_env: only "1" is true,
 * only "0" false). */
#ifndef TC_GPU_ROUTE_H
#define TC_GPU_ROUTE_H

#include "tc_conv.h"

#include <stdbool.h>

typedef enum {
    TC_GPU_ROUTE_CUDNN = 0,        /* ConvBackend::Cudnn */
    TC_GPU_ROUTE_NATIVE_DEPTHWISE, /* ConvBackend::CudaDepthwise2d */
    TC_GPU_ROUTE_NATIVE,           /* ConvBackend::Slow2d */
    TC_GPU_ROUTE_NATIVE_DILATED,   /* ConvBackend::SlowDilated2d */
} tc_gpu_route_t;

typedef struct {
    const char *name;     /* "pytorch-1.13", "pytorch-2" */
    const char *versions; /* the framework versions it was checked against */
    bool verified;        /* checked against the source of those versions */
    int major, minor;     /* the framework version it is applied to */
} tc_gpu_rule_t;

/* What the rule needs besides the conv: the framework's settings and the
 * device. */
typedef struct {
    long cudnn_version;   /* as PyTorch numbers it: 8902 for 8.9.2, 90100 for 9.1.0 */
    int cc_major;         /* compute capability */
    bool cudnn_enabled;   /* torch.backends.cudnn.enabled */
    bool deterministic;   /* cudnn.deterministic or torch.use_deterministic_algorithms */
    bool v8_api;          /* tc_gpu_v8_api() */
    bool allow_tf32;      /* torch.backends.cudnn.allow_tf32 (and no NVIDIA_TF32_OVERRIDE=0) */
} tc_gpu_settings_t;

/* The rule for a framework and version ("pytorch", "2.11.0+cu128"). A
 * PyTorch version outside the checked ones gets the newest rule, marked
 * unverified (the caller keeps the returned struct). */
tc_gpu_rule_t tc_gpu_rule(const char *framework, const char *version);

/* Whether the version calls cuDNN through the v8 (graph) API, from the
 * values of TORCH_CUDNN_V8_API_ENABLED and TORCH_CUDNN_V8_API_DISABLED (NULL:
 * unset). */
bool tc_gpu_v8_api(const tc_gpu_rule_t *rule, const char *enabled_env, const char *disabled_env);

/* The route of conv `c` (n set). */
tc_gpu_route_t tc_gpu_route_conv(const tc_gpu_rule_t *rule, const tc_gpu_settings_t *s,
                                 const tc_conv_config_t *c);

/* The math of a cuDNN conv of `dtype`, as PyTorch sets it (Descriptors.h,
 * ConvolutionDescriptor::set; Conv_v8.cpp's filterEngineConfigs): fp32
 * may use TF32 tensor cores exactly when `allow_tf32` (the probed
 * torch.backends.cudnn.allow_tf32: default math, and the v8 API keeps its
 * tensor-core engines), else FMA math and no tensor-core engine; fp32_strict
 * never, tf32 always (it needs compute capability 8.0); fp16 tensor-op
 * math; bf16 (compute capability 8.0) tensor-op math. TC_EUNSUPPORTED,
 * with the reason, for a dtype this GPU lacks; TC_EINVAL for an unknown one. */
typedef enum { TC_GPU_MATH_DEFAULT = 0, TC_GPU_MATH_FMA, TC_GPU_MATH_TENSOR_OP } tc_gpu_math_t;
typedef struct {
    tc_gpu_math_t math;
    bool allow_tf32;      /* tensor-core engines allowed for fp32 data */
} tc_gpu_conv_math_t;
int tc_gpu_conv_math(Traincast__V1__DType dtype, bool allow_tf32, int cc_major,
                     tc_gpu_conv_math_t *out);

/* What a cuDNN status from building an execution plan (v8 API) means for
 * timing the conv as PyTorch runs it. PyTorch (Conv_v8.cpp, try_configs)
 * skips a configuration whose plan does not build and runs the next one:
 * where the engine does not support the conv on this GPU (cuDNN's
 * NOT_SUPPORTED statuses: shape, layout, padding, shared memory, arch...)
 * the agent skips it too (TC_GPU_PLAN_SKIP). Where the failure comes from
 * this process's environment (a sub-library or NVRTC that did not load, a
 * runtime compilation that failed, a driver or runtime cuDNN finds
 * incompatible) the same engine builds in training, so timing the next one
 * would time another engine than PyTorch's: TC_GPU_PLAN_ENVIRONMENT, and
 * the conv is reported as failed. Anything else (bad parameters, internal
 * errors) is TC_GPU_PLAN_ERROR: also a failure. `status` is a
 * cudnnStatus_t of cuDNN 9 (cudnn_graph.h; cuda_conv_v8.c checks the
 * numbers at compile time). */
typedef enum { TC_GPU_PLAN_SKIP = 0, TC_GPU_PLAN_ENVIRONMENT, TC_GPU_PLAN_ERROR } tc_gpu_plan_failure_t;
tc_gpu_plan_failure_t tc_gpu_plan_failure(int status);

/* "cudnn", "native-depthwise", "native", "native-dilated". */
const char *tc_gpu_route_name(tc_gpu_route_t r);

/* PyTorch's name of the backend ("Cudnn", "CudaDepthwise2d", "Slow2d",
 * "SlowDilated2d"), and the route of such a name (-1 for another one). */
const char *tc_gpu_route_backend(tc_gpu_route_t r);
int tc_gpu_route_from_backend(const char *name);

#endif
