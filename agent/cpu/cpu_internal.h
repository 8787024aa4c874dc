/* Private to the oneDNN CPU backend (agent/cpu/). */
#ifndef TC_CPU_INTERNAL_H
#define TC_CPU_INTERNAL_H

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
    char name[320];
    char uuid[48];
    char host[256];
    char library_version[32];
    char runtime_version[128];
    char os_version[160];
    unsigned cores;
    unsigned mhz;
    uint64_t memory_bytes;
} tc_cpu_ctx_t;

/* Set this thread's OpenMP team size to the device's thread count (oneDNN
 * reads it when it creates and runs primitives). */
int tc_cpu_apply_threads(const tc_cpu_ctx_t *ctx);

/* Conv plan functions (cpu_conv.c). */
int tc_cpu_plan_create(void *ctx, const tc_conv_spec_t *spec, void **plan);
size_t tc_cpu_algo_count(void *plan);
const tc_algo_t *tc_cpu_algo(void *plan, size_t i);
int tc_cpu_select(void *plan, size_t i);
int tc_cpu_run(void *plan, double *ms);
int tc_cpu_read(void *plan, tc_tensor_t t, float *out, size_t count);
void tc_cpu_plan_destroy(void *plan);

#endif
