/* Private to the oneDNN CPU backend (agent/devices/cpu/). */
#ifndef TC_CPU_INTERNAL_H
#define TC_CPU_INTERNAL_H

#include "cpu_blas.h"
#include "cpu_route.h"
#include "device.h"

#include "tc_error.h"

#include <oneapi/dnnl/dnnl.h>
#include <oneapi/dnnl/dnnl_debug.h>

/* Every oneDNN call goes through this: on failure it records the call, the
 * file:line and oneDNN's status, sets `rc` and jumps to `err`. */
#define TC_DNNL_TRY(call)                                                                          \
    do {                                                                                           \
        dnnl_status_t st_ = (call);                                                                \
        if (st_ != dnnl_success) {                                                                 \
            rc = tc_fail_at(TC_ELIB, __FILE__, __LINE__, "oneDNN: %s failed: %s", #call,          \
                            dnnl_status2str(st_));                                                 \
            goto err;                                                                              \
        }                                                                                          \
    } while (0)

/* The opened CPU device. */
typedef struct {
    unsigned threads;
    dnnl_engine_t engine;
    dnnl_stream_t stream;
    char name[512];
    char uuid[48];
    char host[256];
    char library_version[32];
    char runtime_version[128];
    char os_version[160];
    unsigned cores;
    unsigned mhz;
    uint64_t memory_bytes;
    /* What the device measures with besides the processor (cpu_device.c). */
    char allocator[96];      /* tc_allocator_describe() */
    char framework[96];      /* "pytorch 1.13.0a0", or "no framework" */
    tc_blas_t *blas;         /* the framework's BLAS; NULL when there is none */
    char blas_name[96];      /* tc_blas_name(), or "no BLAS" */
    char blas_why[400];      /* why there is none */
    const tc_route_rule_t *rule; /* PyTorch's conv dispatch for its version */
    bool onednn_enabled;     /* the framework runs convs on oneDNN at all */
    bool bf16_onednn;        /* mkldnn_bf16_device_check() holds on this CPU */
    bool cold;               /* cold operands (operands.h; cpu_cold.h) */
    uint64_t cache_bytes;    /* the last-level cache cold operands exceed */
    float *canary;           /* the canary's operands (cpu_device.c); NULL until first run */
    double bmm_product_ms;   /* the framework's cost per product of a split
                                bmm, besides its sgemm_ (cpu_matmul.c);
                                < 0 until the first split bmm plan asks */
} tc_cpu_ctx_t;

/* Set this thread's OpenMP team size to the device's thread count (oneDNN
 * reads it when it creates and runs primitives). */
int tc_cpu_apply_threads(const tc_cpu_ctx_t *ctx);

/* Conv plans on oneDNN (cpu_conv.c: create, read; cpu_conv_run.c: select,
 * run). */
int tc_cpu_dnnl_create(tc_cpu_ctx_t *dev, const tc_conv_spec_t *spec, void **plan);
size_t tc_cpu_dnnl_algo_count(void *plan);
const tc_algo_t *tc_cpu_dnnl_algo(void *plan, size_t i);
int tc_cpu_dnnl_select(void *plan, size_t i);
int tc_cpu_dnnl_run(void *plan, double *ms);
int tc_cpu_dnnl_read(void *plan, tc_tensor_t t, float *out, size_t count);
void tc_cpu_dnnl_destroy(void *plan);

/* Conv plans on PyTorch's native path (cpu_native.c); `dilated`: its
 * SlowDilated2d variant. */
int tc_cpu_native_create(tc_cpu_ctx_t *dev, const tc_conv_spec_t *spec, bool dilated, void **plan);
size_t tc_cpu_native_algo_count(void *plan);
const tc_algo_t *tc_cpu_native_algo(void *plan, size_t i);
int tc_cpu_native_select(void *plan, size_t i);
int tc_cpu_native_run(void *plan, double *ms);
int tc_cpu_native_read(void *plan, tc_tensor_t t, float *out, size_t count);
void tc_cpu_native_destroy(void *plan);

/* Matmul plans on PyTorch's CPU path for float32 (cpu_matmul.c). */
int tc_cpu_matmul_create(void *ctx, const tc_matmul_spec_t *spec, void **plan);
int tc_cpu_matmul_run(void *plan, double *ms);
int tc_cpu_matmul_read(void *plan, tc_mm_tensor_t t, float *out, size_t count);
const char *tc_cpu_matmul_route(void *plan);
double tc_cpu_matmul_framework_ms(void *plan);
void tc_cpu_matmul_destroy(void *plan);

/* The backend's plan functions (cpu_plan.c): the route the framework takes
 * (or the spec's forced path) picks one of the two above. */
int tc_cpu_plan_create(void *ctx, const tc_conv_spec_t *spec, void **plan);
size_t tc_cpu_algo_count(void *plan);
const tc_algo_t *tc_cpu_algo(void *plan, size_t i);
int tc_cpu_select(void *plan, size_t i);
int tc_cpu_run(void *plan, double *ms);
int tc_cpu_read(void *plan, tc_tensor_t t, float *out, size_t count);
void tc_cpu_plan_destroy(void *plan);
const char *tc_cpu_plan_route(void *plan);

#endif
