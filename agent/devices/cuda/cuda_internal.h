/* Private to the cuDNN backend (agent/devices/cuda/, the only code that includes
 * CUDA and cuDNN headers). */
#ifndef TC_CUDA_INTERNAL_H
#define TC_CUDA_INTERNAL_H

#include "device.h"
#include "fw_conv.h"
#include "gpu_route.h"

#include "tc_error.h"

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cudnn.h>
#include <string.h>

/* Every CUDA runtime call goes through this: on failure it records the
 * call, file:line and CUDA's error name and text, sets `rc` (TC_ENOMEM for
 * an allocation failure, else TC_ELIB) and jumps to `err`. */
#define TC_CUDA_TRY(call)                                                                          \
    do {                                                                                           \
        cudaError_t e_ = (call);                                                                   \
        if (e_ != cudaSuccess) {                                                                   \
            rc = tc_fail_at(e_ == cudaErrorMemoryAllocation ? TC_ENOMEM : TC_ELIB, __FILE__,      \
                            __LINE__, "CUDA: %s failed: %s (%s)", #call, cudaGetErrorName(e_),    \
                            cudaGetErrorString(e_));                                               \
            goto err;                                                                              \
        }                                                                                          \
    } while (0)

/* The same for cuDNN (legacy and graph API alike), with cuDNN's status and
 * its last detailed message. */
#define TC_CUDNN_TRY(call)                                                                         \
    do {                                                                                           \
        cudnnStatus_t s_ = (call);                                                                 \
        if (s_ != CUDNN_STATUS_SUCCESS) {                                                          \
            char m_[512] = "";                                                                     \
            cudnnGetLastErrorString(m_, sizeof m_);                                                \
            rc = tc_fail_at(TC_ELIB, __FILE__, __LINE__, "cuDNN: %s failed: %s%s%s", #call,       \
                            cudnnGetErrorString(s_), m_[0] ? ": " : "", m_);                       \
            goto err;                                                                              \
        }                                                                                          \
    } while (0)

/* The same for cuBLAS and cuBLASLt (cuda_blas.c loads them), with the
 * library's name for the status. */
#define TC_CUBLAS_TRY(call)                                                                        \
    do {                                                                                           \
        cublasStatus_t b_ = (call);                                                                \
        if (b_ != CUBLAS_STATUS_SUCCESS) {                                                         \
            rc = tc_fail_at(b_ == CUBLAS_STATUS_ALLOC_FAILED ? TC_ENOMEM : TC_ELIB, __FILE__,     \
                            __LINE__, "cuBLAS: %s failed: %s (%d)", #call,                         \
                            tc_cuda_blas_status(b_), (int)b_);                                     \
            goto err;                                                                              \
        }                                                                                          \
    } while (0)

/* Input copies a plan rotates through at most (their sum exceeds L2). */
#define TC_CUDA_MAX_ROTATION 16

typedef struct tc_nvml tc_nvml_t;
typedef struct tc_cuda_blas tc_cuda_blas_t;

/* ---- cuDNN and the libraries loaded with it (cuda_libs.c) ------------------ */

typedef struct {
    int rc;                 /* 0 loaded, else why not (in `why`) */
    char why[1024];
    void *handle;
    char path[1024];        /* the libcudnn loaded (its real path) */
    bool framework;         /* it is the file PyTorch loads */
    const char *whose;      /* "PyTorch's", "the system's" or "TRAINCAST_CUDNN's" */
    long version;           /* cudnnGetVersion() */
    char preloaded[3200];   /* "NVRTC PATH, cuBLASLt PATH, ..." loaded before it */
} tc_cuda_libs_t;

/* dlopen `file` globally (RTLD_NOW | RTLD_GLOBAL), as PyTorch's libraries
 * are loaded; the real path of what was loaded into `loaded` (may be NULL). */
void *tc_cuda_dlopen(const char *file, char *loaded, size_t size);

/* Load cuDNN once per process (thread-safe): the file PyTorch loads, with
 * the CUDA libraries it loads alongside, unless TRAINCAST_CUDNN says
 * otherwise. `out` always points at the outcome; a failure also returns
 * its reason (tc_errmsg). No cuDNN function may be called before this
 * succeeded. */
int tc_cuda_libs_load(const tc_cuda_libs_t **out);

/* The opened GPU. */
typedef struct {
    int index;
    cudnnHandle_t cudnn;
    cudaStream_t stream;
    cudaEvent_t start, stop;
    int cc_major, cc_minor;
    char name[256];
    char uuid[48];
    char cc[16];
    char driver_version[32];
    char runtime_version[32];
    char library_version[32];
    long library_number;      /* cudnnGetVersion() as PyTorch numbers it (90100) */
    char host[256];
    unsigned sms;
    unsigned clock_mhz, mem_clock_mhz;
    unsigned clock_khz;       /* for the spin kernel */
    uint64_t memory_bytes;
    uint64_t l2_bytes;
    /* The framework whose path the device follows (gpu_framework.h). */
    char framework[96];       /* "pytorch 2.11.0", or "no framework" */
    tc_gpu_rule_t rule;
    tc_gpu_settings_t settings;
    char routing[64];         /* "pytorch-2", "pytorch-2 unverified" */
    bool v8;                  /* cuDNN through the graph (v8) API */
    int benchmark_limit;      /* torch.backends.cudnn.benchmark_limit; 0 none */
    bool has_framework;       /* PyTorch sees this GPU: it can run and choose convs */
    tc_fw_t *fw;              /* its helper, started on first need */
    int fw_failed;            /* why it could not start (a TC_E code), 0 none */
    char fw_why[400];
    tc_nvml_t *nvml;          /* NULL without NVML */
    tc_cuda_blas_t *blas;     /* created by the first matmul plan, NULL before */
} tc_cuda_ctx_t;

/* The device's cuBLAS handle, created on first use (cuda_blas.c). */
int tc_cuda_blas_get(tc_cuda_ctx_t *ctx, tc_cuda_blas_t **out);
void tc_cuda_blas_destroy(tc_cuda_blas_t **self_p);

/* ---- cuBLAS and cuBLASLt (cuda_blas.c) ------------------------------------ */

/* The entry points the matmul plans call, by the name each library exports
 * (cublas_v2.h maps cublasSgemm to cublasSgemm_v2, ...). */
#define TC_CUBLAS_FUNCS(X)                                                                         \
    X(cublasCreate_v2)                                                                             \
    X(cublasDestroy_v2)                                                                            \
    X(cublasSetStream_v2)                                                                          \
    X(cublasSetWorkspace_v2)                                                                       \
    X(cublasSetMathMode)                                                                           \
    X(cublasSgemm_v2)                                                                              \
    X(cublasSgemmStridedBatched)                                                                   \
    X(cublasGemmEx)                                                                                \
    X(cublasGemmStridedBatchedEx)
#define TC_CUBLASLT_FUNCS(X)                                                                       \
    X(cublasLtGetVersion)                                                                          \
    X(cublasLtMatmulDescCreate)                                                                    \
    X(cublasLtMatmulDescDestroy)                                                                   \
    X(cublasLtMatmulDescSetAttribute)                                                              \
    X(cublasLtMatrixLayoutCreate)                                                                  \
    X(cublasLtMatrixLayoutDestroy)                                                                 \
    X(cublasLtMatrixLayoutSetAttribute)                                                            \
    X(cublasLtMatmulPreferenceCreate)                                                              \
    X(cublasLtMatmulPreferenceDestroy)                                                             \
    X(cublasLtMatmulPreferenceSetAttribute)                                                        \
    X(cublasLtMatmulAlgoGetHeuristic)                                                              \
    X(cublasLtMatmul)

/* A table of pointers into the loaded libraries, typed by the headers'
 * own prototypes. Pointers rather than forwarding definitions (as for
 * cuDNN): cuDNN calls cuBLASLt itself, and a definition of the same name in
 * the agent must never stand between them. */
#define TC_CUBLAS_MEMBER_(name) __typeof__(name) *name;
typedef struct {
    TC_CUBLAS_FUNCS(TC_CUBLAS_MEMBER_)
    TC_CUBLASLT_FUNCS(TC_CUBLAS_MEMBER_)
    __typeof__(cublasGetStatusString) *cublasGetStatusString; /* NULL where absent */
} tc_cublas_t;

typedef struct {
    int rc;                 /* 0 loaded, else why not (in `why`) */
    char why[1024];
    char path[1024];        /* the libcublas loaded (its real path) */
    char lt_path[1024];     /* the libcublasLt */
    const char *whose;      /* "PyTorch's" or "the system's" */
    long version;           /* cublasLtGetVersion(): 120804 for 12.8.4 */
    tc_cublas_t f;
} tc_cuda_blas_libs_t;

/* Load cuBLAS and cuBLASLt once per process (thread-safe): the files the
 * framework loaded (gpu_framework.h), else the system's of this build's
 * major version. `out` always points at the outcome; a failure also
 * returns its reason. */
int tc_cuda_blas_load(const tc_cuda_blas_libs_t **out);

/* cuBLAS's name for a status ("CUBLAS_STATUS_NOT_SUPPORTED", ...). */
const char *tc_cuda_blas_status(cublasStatus_t s);

/* A device's cuBLAS handle on its stream, with the workspaces PyTorch gives
 * it (CublasHandlePool.cpp); the cuBLASLt handle is the same handle, as
 * PyTorch casts it. Owned by the device context. */
struct tc_cuda_blas {
    const tc_cublas_t *f;
    cublasHandle_t handle;
    void *ws;               /* cublasSetWorkspace's */
    size_t ws_size;
    void *lt_ws;            /* cublasLtMatmul's */
    size_t lt_ws_size;
};

/* Make this device current on the calling thread. */
int tc_cuda_activate(const tc_cuda_ctx_t *ctx);

/* The timed region of every plan's run, convs and matmuls alike: a spin of
 * about 1 ms of SM clock queued first (the launches after it are timed on a
 * busy GPU, not on their own latency), then the start event (begin); the
 * stop event, waited for, and the time between them in ms (end). */
int tc_cuda_timed_begin(tc_cuda_ctx_t *d);
int tc_cuda_timed_end(tc_cuda_ctx_t *d, double *ms);

/* The framework helper for this GPU, started on first use; NULL (with the
 * reason in tc_errmsg()) when there is none. */
tc_fw_t *tc_cuda_framework(tc_cuda_ctx_t *ctx);

/* Conv plans (cuda_conv.c): every route; cudnn through cuda_conv_v7.c or
 * cuda_conv_v8.c, the framework's own kernels through fw_conv.h. */
int tc_cuda_plan_create(void *ctx, const tc_conv_spec_t *spec, void **plan);
size_t tc_cuda_algo_count(void *plan);
const tc_algo_t *tc_cuda_algo(void *plan, size_t i);
int tc_cuda_select(void *plan, size_t i);
int tc_cuda_run(void *plan, double *ms);
int tc_cuda_read(void *plan, tc_tensor_t t, float *out, size_t count);
void tc_cuda_plan_destroy(void *plan);
const char *tc_cuda_plan_route(void *plan);

/* Matmul plans (cuda_matmul.c): the GEMM of a direction on cuBLAS or
 * cuBLASLt, as PyTorch calls them. */
int tc_cuda_matmul_create(void *ctx, const tc_matmul_spec_t *spec, void **plan);
int tc_cuda_matmul_run(void *plan, double *ms);
int tc_cuda_matmul_read(void *plan, tc_mm_tensor_t t, float *out, size_t count);
const char *tc_cuda_matmul_route(void *plan);
void tc_cuda_matmul_destroy(void *plan);

/* The rotation of a plan's inputs: how many copies of `in_bytes` exceed
 * twice the L2 cache, within a quarter of the free memory (1 to
 * TC_CUDA_MAX_ROTATION). */
int tc_cuda_rotation(const tc_cuda_ctx_t *ctx, uint64_t in_bytes, size_t *copies);

/* fp16 and bf16 values read back from the GPU, as float. */
static inline float tc_cuda_half_to_float(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16, exp = (h >> 10) & 0x1f, man = h & 0x3ffu;
    uint32_t bits;
    if (exp == 0) {
        if (man == 0) {
            bits = sign;
        } else { /* subnormal: normalize */
            exp = 127 - 15 + 1;
            while (!(man & 0x400u)) {
                man <<= 1;
                exp--;
            }
            bits = sign | exp << 23 | (man & 0x3ffu) << 13;
        }
    } else if (exp == 31) {
        bits = sign | 0x7f800000u | man << 13;
    } else {
        bits = sign | (exp + 127 - 15) << 23 | man << 13;
    }
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

static inline float tc_cuda_bf16_to_float(uint16_t b)
{
    uint32_t bits = (uint32_t)b << 16;
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

/* ---- a cuDNN plan: tensors, rotation, timing (cuda_conv.c) ---------------- */

/* One candidate of a cuDNN plan: a legacy algorithm with its math type, or
 * a graph-API engine configuration with its finalized execution plan. */
typedef struct {
    tc_algo_t info;
    int algo;                /* cudnnConvolution*Algo_t value (v7) */
    cudnnMathType_t math;    /* v7 */
    void *exec;              /* cudnnBackendDescriptor_t execution plan (v8), owned */
} tc_cuda_cand_t;

typedef struct tc_cuda_v8 tc_cuda_v8_t;

typedef struct {
    tc_cuda_ctx_t *dev;
    tc_conv_spec_t spec;
    char route[32];           /* "cudnn" (v7) or "cudnn-v8" */
    cudnnDataType_t data_type;
    int fill_kind;            /* for tc_cuda_fill */
    size_t elem;              /* bytes per element */
    bool allow_tf32;          /* cuDNN may use TF32 (fp32 by default, tf32) */
    cudnnMathType_t math;     /* the dtype's v7 math type */
    /* Inputs of the direction, rotated: in[r][0..1] are copy r of the two
     * tensors in_t[0..1]. Outputs are one buffer each. */
    tc_tensor_t in_t[2];
    void *in[TC_CUDA_MAX_ROTATION][2];
    size_t n_rot, rot, last_rot;
    void *buf[TC_TENSOR_COUNT]; /* outputs, the bias, and copy 0 of the inputs */
    float *bias_acc;          /* fp32 partial sums of the bias gradient */
    /* v7 descriptors, one owner each. */
    cudnnTensorDescriptor_t x_desc, y_desc;
    cudnnFilterDescriptor_t w_desc;
    cudnnConvolutionDescriptor_t conv;
    tc_cuda_v8_t *v8;         /* graph-API state (cuda_conv_v8.c), owned */
    tc_cuda_cand_t *cands;
    size_t n_cands;
    int sel;
    void *ws;
    size_t ws_size;
} tc_cuda_plan_t;

/* Add a candidate; `status` CUDNN_STATUS_SUCCESS lists it as runnable
 * unless its workspace is over `limit`. */
int tc_cuda_cand_add(tc_cuda_plan_t *p, const tc_cuda_cand_t *c, cudnnStatus_t status,
                     uint64_t limit);

/* The legacy (v7) API, as PyTorch's Conv_v7.cpp calls it (cuda_conv_v7.c). */
int tc_cuda_v7_prepare(tc_cuda_plan_t *p);
int tc_cuda_v7_list(tc_cuda_plan_t *p, uint64_t limit);
int tc_cuda_v7_select(tc_cuda_plan_t *p, const tc_cuda_cand_t *c);
int tc_cuda_v7_launch(tc_cuda_plan_t *p, const tc_cuda_cand_t *c);
void tc_cuda_v7_release(tc_cuda_plan_t *p);

/* The graph (v8) API, as PyTorch's Conv_v8.cpp calls it through
 * cudnn-frontend (cuda_conv_v8.c). */
int tc_cuda_v8_list(tc_cuda_plan_t *p, uint64_t limit);
int tc_cuda_v8_launch(tc_cuda_plan_t *p, const tc_cuda_cand_t *c);
void tc_cuda_v8_release(tc_cuda_plan_t *p);

/* ---- NVML (cuda_nvml.c): loaded at run time, absent without a driver ---- */

/* NULL (and a debug line) when NVML cannot be loaded or has no such GPU. */
tc_nvml_t *tc_nvml_open(const char *uuid);
void tc_nvml_close(tc_nvml_t **self_p);
int tc_nvml_read(tc_nvml_t *self, tc_telemetry_t *out);

/* ---- kernels (cuda_kernels.cu) --------------------------------------------- */

#ifdef __cplusplus
extern "C" {
#endif
/* Values tc_random_value(seed, i) stored as fp32 (kind 0), fp16 (1) or
 * bf16 (2). */
cudaError_t tc_cuda_fill(void *data, size_t count, int kind, uint64_t seed, cudaStream_t stream);
/* Keep the GPU busy for about `cycles` SM clock cycles (one block). */
cudaError_t tc_cuda_spin(long long cycles, cudaStream_t stream);
/* y += bias per channel: the add_ PyTorch runs after a cuDNN forward
 * (output.add_(reshape_bias(...))). y is n x k x pq (nhwc: n x pq x k). */
cudaError_t tc_cuda_bias_add(void *y, const void *bias, size_t n, size_t k, size_t pq, int nhwc,
                             int kind, cudaStream_t stream);
/* db = sum of dy over batch and space (grad_output.sum({0, 2, 3})), with
 * fp32 partial sums in acc[k]. */
cudaError_t tc_cuda_bias_grad(const void *dy, void *db, float *acc, size_t n, size_t k,
                              size_t pq, int nhwc, int kind, cudaStream_t stream);
/* The rows of a row-major c[rows x cols] set to bias[cols]: the copy of the
 * expanded bias into the result that addmm runs before a GEMM with beta 1
 * (at::native::copy_(result, *self_)). */
cudaError_t tc_cuda_bias_rows(void *c, const void *bias, size_t rows, size_t cols, int kind,
                              cudaStream_t stream);
#ifdef __cplusplus
}
#endif

#endif
