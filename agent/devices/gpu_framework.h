/* What the training framework runs with on a GPU machine: its version, the
 * cuDNN it loads and the conv settings it starts with, as the PyTorch
 * harness reports them (agent/harness/gpu_env.py --probe, run once per
 * process with this process's environment). The GPU device routes convs as
 * that version does (gpu_route.h) and measures with that cuDNN: before a
 * command opens a GPU, tc_gpu_use_framework_cudnn() starts the agent again
 * with the framework's cuDNN directory first in LD_LIBRARY_PATH, as the
 * CPU device preloads its allocator. */
#ifndef TC_GPU_FRAMEWORK_H
#define TC_GPU_FRAMEWORK_H

#include <stdbool.h>

typedef struct {
    bool found;              /* the framework answered */
    char framework[32];      /* "pytorch" */
    char version[64];        /* torch.__version__ */
    bool cuda;               /* torch.cuda.is_available() */
    char cudnn_version[32];  /* "9.1.0"; "" when it has none */
    long cudnn_number;       /* 90100 (torch.backends.cudnn.version()) */
    char cudnn_dir[1024];    /* the directory of the libcudnn it loaded */
    /* Settings it starts with (torch.backends.cudnn.*). */
    bool cudnn_enabled, deterministic, benchmark;
    int benchmark_limit;     /* 0 where the version has none */
    char why[600];           /* why not found */
} tc_gpu_framework_t;

/* The probe's answer, asked once per process (thread-safe); a process the
 * agent started again with the framework's cuDNN reuses its parent's
 * answer. Never fails: without Python or PyTorch, found is false and `why`
 * says what is missing. */
const tc_gpu_framework_t *tc_gpu_framework_probe(void);

/* What to do about the cuDNN this process loaded (`loaded`, a path, "" none)
 * given the framework's (`framework_dir`, "" none) and the choice in
 * TRAINCAST_CUDNN (`choice`: NULL or "framework", or "system").
 * TC_CUDNN_KEEP: nothing; TC_CUDNN_REEXEC: start again with framework_dir
 * first in LD_LIBRARY_PATH; TC_CUDNN_WARN: keep the system's and warn that
 * it is not the framework's. `restarted`: this process already was. */
typedef enum { TC_CUDNN_KEEP = 0, TC_CUDNN_REEXEC, TC_CUDNN_WARN } tc_cudnn_action_t;
tc_cudnn_action_t tc_cudnn_action(const char *loaded, const char *framework_dir,
                                  const char *choice, bool restarted);

/* Before a command opens a GPU: start this program again once, with the
 * framework's cuDNN directory first in LD_LIBRARY_PATH, unless it already
 * loads that library (or TRAINCAST_CUDNN=system, or there is no framework:
 * then a warning). Returns 0 (also when nothing was done) or a failure
 * when the program cannot start again. */
int tc_gpu_use_framework_cudnn(void);

/* tc_gpu_use_framework_cudnn() for a command about to measure on
 * `device_spec` ("cuda:I"; "any" for a command that may open every device,
 * such as `agent info`), when this machine has a GPU; nothing otherwise. */
int tc_gpu_prepare(const char *device_spec);

/* The path of the libcudnn mapped into this process, "" when none is. */
void tc_gpu_loaded_cudnn(char *buf, unsigned long size);

#endif
