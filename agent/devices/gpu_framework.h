/* What the training framework runs with on a GPU machine: its version, the
 * cuDNN and other CUDA libraries it loads and the conv settings it starts
 * with, as the PyTorch harness reports them (agent/harness/gpu_env.py
 * --probe, run once per process with this process's environment). The GPU
 * device routes convs as that version does (gpu_route.h) and measures with
 * the same library files, which it loads at run time (the agent has no
 * load-time dependency on cuDNN: it starts where PyTorch's wheel holds the
 * only cuDNN of the machine). */
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
    char cudnn_path[1024];   /* that file; "" when it loaded none */
    /* Other CUDA libraries it loaded, "" when not: NVRTC (runtime-compiled
     * cuDNN engines), cuBLASLt and cuBLAS (engines built on them). */
    char nvrtc_path[1024], cublaslt_path[1024], cublas_path[1024];
    /* Settings it starts with (torch.backends.cudnn.*). */
    bool cudnn_enabled, deterministic, benchmark;
    /* Whether fp32 convs may use TF32 tensor cores: torch.backends.cudnn.
     * allow_tf32 (True unless the user turns it off), unless
     * NVIDIA_TF32_OVERRIDE=0 forbids TF32 below the framework. */
    bool allow_tf32;
    int benchmark_limit;     /* 0 where the version has none */
    char why[600];           /* why not found */
} tc_gpu_framework_t;

/* The probe's answer, asked once per process (thread-safe); a process
 * whose environment holds one in TRAINCAST_GPU_FRAMEWORK_PROBE (the probe's
 * JSON line, as `gpu_env.py --probe` prints it) takes that instead of
 * starting Python again. Never fails: without Python or PyTorch, found is false and `why`
 * says what is missing. */
const tc_gpu_framework_t *tc_gpu_framework_probe(void);

/* Which cuDNN the GPU device loads (agent/devices/cuda/cuda_libs.c), from
 * TRAINCAST_CUDNN (`choice`: NULL, "" or "framework", "system", or the path
 * of a libcudnn file) and the file the framework loaded (`framework_path`,
 * "" or NULL when it has none): TC_CUDNN_FRAMEWORK that file,
 * TC_CUDNN_SYSTEM the dynamic loader's search for the soname, TC_CUDNN_FILE
 * the path given. A framework without a cuDNN gives the system's, with
 * `*fallback` set so that the caller says so. TC_EUSAGE for any other
 * choice. */
typedef enum { TC_CUDNN_FRAMEWORK = 0, TC_CUDNN_SYSTEM, TC_CUDNN_FILE } tc_cudnn_source_t;
int tc_cudnn_source(const char *framework_path, const char *choice, tc_cudnn_source_t *out,
                    bool *fallback);

/* The path of the libcudnn mapped into this process, "" when none is. */
void tc_gpu_loaded_cudnn(char *buf, unsigned long size);

#endif
