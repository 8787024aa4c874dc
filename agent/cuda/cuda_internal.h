/* Private to the cuDNN backend (agent/cuda/, the only code that includes
 * CUDA and cuDNN headers). */
#ifndef TC_CUDA_INTERNAL_H
#define TC_CUDA_INTERNAL_H

#include "device.h"

#include "tc_error.h"

#include <cuda_runtime.h>
#include <cudnn.h>

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

/* The same for cuDNN, with cuDNN's status and its last detailed message. */
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
    char host[256];
    unsigned sms;
    unsigned clock_mhz, mem_clock_mhz;
    uint64_t memory_bytes;
} tc_cuda_ctx_t;

/* Make this device current on the calling thread. */
int tc_cuda_activate(const tc_cuda_ctx_t *ctx);

/* Conv plans (cuda_conv.c). */
int tc_cuda_plan_create(void *ctx, const tc_conv_spec_t *spec, void **plan);
size_t tc_cuda_algo_count(void *plan);
const tc_algo_t *tc_cuda_algo(void *plan, size_t i);
int tc_cuda_select(void *plan, size_t i);
int tc_cuda_run(void *plan, double *ms);
int tc_cuda_read(void *plan, tc_tensor_t t, float *out, size_t count);
void tc_cuda_plan_destroy(void *plan);

/* Random fill kernel (cuda_fill.cu): values tc_random_value(seed, i) stored
 * as fp32 (kind 0), fp16 (1) or bf16 (2). */
#ifdef __cplusplus
extern "C"
#endif
cudaError_t tc_cuda_fill(void *data, size_t count, int kind, uint64_t seed, cudaStream_t stream);

#endif
