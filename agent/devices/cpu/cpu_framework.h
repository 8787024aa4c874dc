/* What the training framework runs with on this machine: its version, the
 * BLAS it loads and the allocator it allocates with, as the PyTorch harness
 * reports them (agent/harness/cpu_env.py --probe, run once per process with
 * this process's environment, so with the same allocator preload). The CPU
 * device takes its framework version and BLAS from here, and its conv
 * routing follows that version (cpu_route.h). */
#ifndef TC_CPU_FRAMEWORK_H
#define TC_CPU_FRAMEWORK_H

#include <stdbool.h>

/* A batched matmul of `count` products of m x k by k x n, and a time. */
typedef struct {
    unsigned count, m, n, k;
    double ms;
} tc_bmm_split_t;

typedef struct {
    bool found;           /* the framework answered */
    char framework[32];   /* "pytorch" */
    char version[64];     /* torch.__version__, e.g. "1.13.0a0" */
    bool mkldnn;          /* oneDNN available and enabled */
    char allocator[96];   /* as tc_allocator_describe() words it */
    char blas[96];        /* as tc_blas_name() words it; "none" */
    char blas_path[1024]; /* the library it loaded; "" when none is separate */
    char why[600];        /* why not found */
    /* PyTorch's own time for one batched matmul on its split path (the
     * fastest of some calls, one thread; cpu_env.py's BMM_SPLIT: `count`
     * products of m x k by k x n), from which the CPU device takes the
     * framework's cost per product (cpu_matmul.c); ms is 0 where the probe
     * did not measure it (a framework with MKL, an older harness). */
    tc_bmm_split_t bmm_split;
} tc_framework_t;

/* The probe's answer, asked once per process (thread-safe). Never fails:
 * without Python or PyTorch, found is false and `why` says what is
 * missing. */
const tc_framework_t *tc_framework_probe(void);

#endif
