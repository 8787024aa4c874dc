/* cuBLAS and cuBLASLt, loaded at run time like cuDNN (cuda_libs.c): the
 * files the framework probe names (PyTorch's own libcublasLt and libcublas,
 * which cuda_libs.c has already mapped where cuDNN came from PyTorch),
 * else the system's of the major version this agent was built against.
 * The agent keeps no load-time dependency on either.
 *
 * Each device gets one cuBLAS handle, set up as PyTorch's
 * getCurrentCUDABlasHandle (aten/src/ATen/cuda/CublasHandlePool.cpp) sets
 * up the handle of a stream: cublasSetStream, then cublasSetWorkspace with
 * a workspace of its default size (parseChosenWorkspaceSize: 4096 KiB x 2 +
 * 16 KiB x 8, 32 MiB on compute capability 9.0, or CUBLAS_WORKSPACE_CONFIG's
 * ":SIZE:COUNT" pairs); cuBLASLt runs on the same handle (PyTorch casts it,
 * getCurrentCUDABlasLtHandle) with a workspace of its own
 * (getCUDABlasLtWorkspaceSize: CUBLASLT_WORKSPACE_SIZE KiB, 1024 by default,
 * at most the cuBLAS workspace's size). The math mode is set per call by
 * the plans (cuda_matmul.c). */
#include "cuda_internal.h"
#include "gpu_framework.h"

#include "tc_log.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define S_STR2(x) #x
#define S_STR(x) S_STR2(x)
#define S_CUBLAS_SONAME "libcublas.so." S_STR(CUBLAS_VER_MAJOR)
#define S_CUBLASLT_SONAME "libcublasLt.so." S_STR(CUBLAS_VER_MAJOR)

static tc_cuda_blas_libs_t s_libs;
static pthread_once_t s_once = PTHREAD_ONCE_INIT;

static int s_resolve(void *h, void *lt)
{
    tc_cublas_t *f = &s_libs.f;
#define S_RESOLVE(name)                                                                            \
    if (!(*(void **)&f->name = dlsym(h, #name)))                                                   \
        return tc_fail(TC_ELIB, "%s has no %s: not a cuBLAS this agent can use", s_libs.path,      \
                       #name);
    TC_CUBLAS_FUNCS(S_RESOLVE)
#undef S_RESOLVE
#define S_RESOLVE_LT(name)                                                                         \
    if (!(*(void **)&f->name = dlsym(lt, #name)))                                                  \
        return tc_fail(TC_ELIB, "%s has no %s: not a cuBLASLt this agent can use",                 \
                       s_libs.lt_path, #name);
    TC_CUBLASLT_FUNCS(S_RESOLVE_LT)
#undef S_RESOLVE_LT
    *(void **)&f->cublasGetStatusString = dlsym(h, "cublasGetStatusString");
    return 0;
}

static void s_load(void)
{
    tc_cuda_blas_libs_t *l = &s_libs;
    const tc_gpu_framework_t *fw = tc_gpu_framework_probe();
    bool theirs = fw->found && fw->cuda && fw->cublas_path[0] && fw->cublaslt_path[0];
    const char *lt_file = theirs ? fw->cublaslt_path : S_CUBLASLT_SONAME;
    const char *file = theirs ? fw->cublas_path : S_CUBLAS_SONAME;
    l->whose = theirs ? "PyTorch's" : "the system's";
    /* cuBLAS needs cuBLASLt: load that first, as PyTorch's preload does. */
    void *lt = tc_cuda_dlopen(lt_file, l->lt_path, sizeof l->lt_path);
    void *h = lt ? tc_cuda_dlopen(file, l->path, sizeof l->path) : NULL;
    if (!h) {
        const char *err = dlerror();
        l->rc = tc_fail(TC_ENOTFOUND, "cannot load %s cuBLAS (%s): %s; %s", l->whose,
                        lt ? file : lt_file, err ? err : "not found",
                        theirs ? "PyTorch's wheel looks damaged"
                               : "install cuBLAS " S_STR(CUBLAS_VER_MAJOR)
                                 " (the CUDA toolkit's libcublas), or run where a PyTorch with "
                                 "CUDA is found (TRAINCAST_PYTHON) so that its cuBLAS is used");
        snprintf(l->why, sizeof l->why, "%s", tc_errmsg());
        return;
    }
    l->rc = s_resolve(h, lt);
    if (l->rc < 0) {
        snprintf(l->why, sizeof l->why, "%s", tc_errmsg());
        return;
    }
    l->version = (long)l->f.cublasLtGetVersion();
    if (!theirs)
        tc_log_warn("matmuls run on the system's cuBLAS %s: %s", l->path,
                    !fw->found  ? "no framework was found"
                    : !fw->cuda ? "the framework sees no CUDA device"
                                : "the framework reports no cuBLAS library");
    tc_log_debug("cuBLAS %ld loaded from %s and %s (%s)", l->version, l->path, l->lt_path,
                 l->whose);
}

int tc_cuda_blas_load(const tc_cuda_blas_libs_t **out)
{
    pthread_once(&s_once, s_load);
    *out = &s_libs;
    if (s_libs.rc < 0)
        return tc_fail(s_libs.rc, "%s", s_libs.why);
    return 0;
}

const char *tc_cuda_blas_status(cublasStatus_t s)
{
    const char *name = s_libs.f.cublasGetStatusString ? s_libs.f.cublasGetStatusString(s) : NULL;
    return name ? name : "cuBLAS status";
}

/* parseChosenWorkspaceSize: CUBLAS_WORKSPACE_CONFIG as ":SIZE:COUNT" pairs
 * (KiB x count, summed), else the default for the GPU. */
static size_t s_workspace_size(const tc_cuda_ctx_t *ctx)
{
    size_t def = ctx->cc_major == 9 && ctx->cc_minor == 0 ? (size_t)4096 * 8 * 1024
                                                          : (size_t)4096 * 1024 * 2 + 16 * 1024 * 8;
    const char *v = getenv("CUBLAS_WORKSPACE_CONFIG");
    if (!v || !*v)
        return def;
    size_t total = 0;
    bool any = false;
    for (const char *p = strchr(v, ':'); p; p = strchr(p + 1, ':')) {
        unsigned long long size = 0, count = 0;
        int used = 0;
        if (sscanf(p, ":%llu:%llu%n", &size, &count, &used) == 2) {
            total += (size_t)(size * 1024 * count);
            any = true;
            p += used - 1;
        }
    }
    if (!any) {
        tc_log_warn("cannot parse CUBLAS_WORKSPACE_CONFIG='%s': using the default cuBLAS "
                    "workspace of %zu bytes, as PyTorch does",
                    v, def);
        return def;
    }
    return total;
}

/* getCUDABlasLtWorkspaceSize: CUBLASLT_WORKSPACE_SIZE KiB (1024 unless
 * set), no more than the cuBLAS workspace (the unified workspace, on
 * unless TORCH_CUBLASLT_UNIFIED_WORKSPACE=0). */
static size_t s_lt_workspace_size(size_t cublas_size)
{
    size_t kib = 1024;
    const char *v = getenv("CUBLASLT_WORKSPACE_SIZE");
    if (v && *v) {
        char *end = NULL;
        long long n = strtoll(v, &end, 10);
        if (end != v && n >= 0)
            kib = (size_t)n;
        else
            tc_log_warn("invalid CUBLASLT_WORKSPACE_SIZE='%s': using %zu KiB, as PyTorch does", v,
                        kib);
    }
    size_t size = kib * 1024;
    const char *unified = getenv("TORCH_CUBLASLT_UNIFIED_WORKSPACE");
    if (!(unified && !strcmp(unified, "0")) && size > cublas_size)
        size = cublas_size;
    return size;
}

void tc_cuda_blas_destroy(tc_cuda_blas_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    tc_cuda_blas_t *b = *self_p;
    if (b->handle)
        b->f->cublasDestroy_v2(b->handle);
    if (b->ws)
        cudaFree(b->ws);
    if (b->lt_ws)
        cudaFree(b->lt_ws);
    free(b);
    *self_p = NULL;
}

int tc_cuda_blas_get(tc_cuda_ctx_t *ctx, tc_cuda_blas_t **out)
{
    int rc = 0;
    *out = NULL;
    if (ctx->blas) {
        *out = ctx->blas;
        return 0;
    }
    const tc_cuda_blas_libs_t *libs = NULL;
    if ((rc = tc_cuda_blas_load(&libs)) < 0)
        return tc_err_context(rc, "matmuls on %s", ctx->name);
    tc_cuda_blas_t *b = calloc(1, sizeof *b);
    if (!b)
        return tc_fail(TC_ENOMEM, "out of memory creating a cuBLAS handle");
    b->f = &libs->f;
    TC_TRY(tc_cuda_activate(ctx));
    TC_CUBLAS_TRY(b->f->cublasCreate_v2(&b->handle));
    /* cublasSetStream resets the workspace: the stream first. */
    TC_CUBLAS_TRY(b->f->cublasSetStream_v2(b->handle, ctx->stream));
    b->ws_size = s_workspace_size(ctx);
    if (b->ws_size) {
        TC_CUDA_TRY(cudaMalloc(&b->ws, b->ws_size));
        TC_CUBLAS_TRY(b->f->cublasSetWorkspace_v2(b->handle, b->ws, b->ws_size));
    }
    b->lt_ws_size = s_lt_workspace_size(b->ws_size);
    if (b->lt_ws_size)
        TC_CUDA_TRY(cudaMalloc(&b->lt_ws, b->lt_ws_size));
    ctx->blas = b;
    *out = b;
    return 0;
err:
    tc_cuda_blas_destroy(&b);
    return tc_err_context(rc, "setting up cuBLAS on %s", ctx->name);
}
