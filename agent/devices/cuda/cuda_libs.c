/* cuDNN, and the CUDA libraries PyTorch loads with it, loaded at run time.
 *
 * The agent has no load-time dependency on cuDNN (the CUDA runtime is linked
 * statically and the driver is dlopened by it), so it starts on a machine
 * whose only cuDNN is the one in PyTorch's wheel, and measures with the
 * very files the framework runs: the framework probe (gpu_framework.h)
 * names the libcudnn, libnvrtc, libcublasLt and libcublas PyTorch mapped,
 * and they are loaded here in that order, globally, as PyTorch preloads
 * them (cuDNN's runtime-compiled engines need NVRTC, some engines cuBLASLt:
 * without them those engines would not build here while they do in
 * training). TRAINCAST_CUDNN=system takes the system's libcudnn instead, a
 * path takes that file (tc_cudnn_source).
 *
 * The cuDNN entry points the backend calls are defined here with cuDNN's
 * own prototypes (cudnn.h checks them) and forward to the loaded library;
 * they are not exported from the agent, so they never interpose on cuDNN's
 * own calls between its sub-libraries. */
#include "cuda_internal.h"
#include "gpu_framework.h"

#include "tc_log.h"

#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define S_STR2(x) #x
#define S_STR(x) S_STR2(x)
/* The soname of the cuDNN this agent was built against. */
#define S_CUDNN_SONAME "libcudnn.so." S_STR(CUDNN_MAJOR)

/* X(return type, name, parameters, arguments, value when not loaded) */
#define S_CUDNN_FUNCS(X)                                                                          \
    X(cudnnStatus_t, cudnnCreate, (cudnnHandle_t * handle), (handle))                              \
    X(cudnnStatus_t, cudnnDestroy, (cudnnHandle_t handle), (handle))                               \
    X(cudnnStatus_t, cudnnSetStream, (cudnnHandle_t handle, cudaStream_t streamId),                \
      (handle, streamId))                                                                          \
    X(cudnnStatus_t, cudnnBackendCreateDescriptor,                                                 \
      (cudnnBackendDescriptorType_t descriptorType, cudnnBackendDescriptor_t * descriptor),        \
      (descriptorType, descriptor))                                                                \
    X(cudnnStatus_t, cudnnBackendDestroyDescriptor, (cudnnBackendDescriptor_t descriptor),         \
      (descriptor))                                                                                \
    X(cudnnStatus_t, cudnnBackendSetAttribute,                                                     \
      (cudnnBackendDescriptor_t descriptor, cudnnBackendAttributeName_t attributeName,             \
       cudnnBackendAttributeType_t attributeType, int64_t elementCount,                            \
       const void *arrayOfElements),                                                               \
      (descriptor, attributeName, attributeType, elementCount, arrayOfElements))                   \
    X(cudnnStatus_t, cudnnBackendGetAttribute,                                                     \
      (cudnnBackendDescriptor_t const descriptor, cudnnBackendAttributeName_t attributeName,       \
       cudnnBackendAttributeType_t attributeType, int64_t requestedElementCount,                   \
       int64_t *elementCount, void *arrayOfElements),                                              \
      (descriptor, attributeName, attributeType, requestedElementCount, elementCount,             \
       arrayOfElements))                                                                           \
    X(cudnnStatus_t, cudnnBackendFinalize, (cudnnBackendDescriptor_t descriptor), (descriptor))    \
    X(cudnnStatus_t, cudnnBackendExecute,                                                          \
      (cudnnHandle_t handle, cudnnBackendDescriptor_t executionPlan,                               \
       cudnnBackendDescriptor_t variantPack),                                                      \
      (handle, executionPlan, variantPack))                                                        \
    X(cudnnStatus_t, cudnnCreateTensorDescriptor, (cudnnTensorDescriptor_t * tensorDesc),          \
      (tensorDesc))                                                                                \
    X(cudnnStatus_t, cudnnDestroyTensorDescriptor, (cudnnTensorDescriptor_t tensorDesc),           \
      (tensorDesc))                                                                                \
    X(cudnnStatus_t, cudnnSetTensor4dDescriptor,                                                   \
      (cudnnTensorDescriptor_t tensorDesc, cudnnTensorFormat_t format, cudnnDataType_t dataType,   \
       int n, int c, int h, int w),                                                                \
      (tensorDesc, format, dataType, n, c, h, w))                                                  \
    X(cudnnStatus_t, cudnnCreateFilterDescriptor, (cudnnFilterDescriptor_t * filterDesc),          \
      (filterDesc))                                                                                \
    X(cudnnStatus_t, cudnnDestroyFilterDescriptor, (cudnnFilterDescriptor_t filterDesc),           \
      (filterDesc))                                                                                \
    X(cudnnStatus_t, cudnnSetFilter4dDescriptor,                                                   \
      (cudnnFilterDescriptor_t filterDesc, cudnnDataType_t dataType, cudnnTensorFormat_t format,   \
       int k, int c, int h, int w),                                                                \
      (filterDesc, dataType, format, k, c, h, w))                                                  \
    X(cudnnStatus_t, cudnnCreateConvolutionDescriptor,                                             \
      (cudnnConvolutionDescriptor_t * convDesc), (convDesc))                                       \
    X(cudnnStatus_t, cudnnDestroyConvolutionDescriptor, (cudnnConvolutionDescriptor_t convDesc),   \
      (convDesc))                                                                                  \
    X(cudnnStatus_t, cudnnSetConvolution2dDescriptor,                                              \
      (cudnnConvolutionDescriptor_t convDesc, int pad_h, int pad_w, int u, int v, int dilation_h,  \
       int dilation_w, cudnnConvolutionMode_t mode, cudnnDataType_t computeType),                  \
      (convDesc, pad_h, pad_w, u, v, dilation_h, dilation_w, mode, computeType))                   \
    X(cudnnStatus_t, cudnnSetConvolutionGroupCount,                                                \
      (cudnnConvolutionDescriptor_t convDesc, int groupCount), (convDesc, groupCount))             \
    X(cudnnStatus_t, cudnnSetConvolutionMathType,                                                  \
      (cudnnConvolutionDescriptor_t convDesc, cudnnMathType_t mathType), (convDesc, mathType))     \
    X(cudnnStatus_t, cudnnGetConvolution2dForwardOutputDim,                                        \
      (const cudnnConvolutionDescriptor_t convDesc, const cudnnTensorDescriptor_t inputTensorDesc, \
       const cudnnFilterDescriptor_t filterDesc, int *n, int *c, int *h, int *w),                  \
      (convDesc, inputTensorDesc, filterDesc, n, c, h, w))                                         \
    X(cudnnStatus_t, cudnnGetConvolutionForwardAlgorithm_v7,                                       \
      (cudnnHandle_t handle, const cudnnTensorDescriptor_t srcDesc,                                \
       const cudnnFilterDescriptor_t filterDesc, const cudnnConvolutionDescriptor_t convDesc,      \
       const cudnnTensorDescriptor_t destDesc, const int requestedAlgoCount,                       \
       int *returnedAlgoCount, cudnnConvolutionFwdAlgoPerf_t *perfResults),                        \
      (handle, srcDesc, filterDesc, convDesc, destDesc, requestedAlgoCount, returnedAlgoCount,    \
       perfResults))                                                                               \
    X(cudnnStatus_t, cudnnGetConvolutionBackwardDataAlgorithm_v7,                                  \
      (cudnnHandle_t handle, const cudnnFilterDescriptor_t filterDesc,                             \
       const cudnnTensorDescriptor_t diffDesc, const cudnnConvolutionDescriptor_t convDesc,        \
       const cudnnTensorDescriptor_t gradDesc, const int requestedAlgoCount,                       \
       int *returnedAlgoCount, cudnnConvolutionBwdDataAlgoPerf_t *perfResults),                    \
      (handle, filterDesc, diffDesc, convDesc, gradDesc, requestedAlgoCount, returnedAlgoCount,   \
       perfResults))                                                                               \
    X(cudnnStatus_t, cudnnGetConvolutionBackwardFilterAlgorithm_v7,                                \
      (cudnnHandle_t handle, const cudnnTensorDescriptor_t srcDesc,                                \
       const cudnnTensorDescriptor_t diffDesc, const cudnnConvolutionDescriptor_t convDesc,        \
       const cudnnFilterDescriptor_t gradDesc, const int requestedAlgoCount,                       \
       int *returnedAlgoCount, cudnnConvolutionBwdFilterAlgoPerf_t *perfResults),                  \
      (handle, srcDesc, diffDesc, convDesc, gradDesc, requestedAlgoCount, returnedAlgoCount,      \
       perfResults))                                                                               \
    X(cudnnStatus_t, cudnnGetConvolutionForwardWorkspaceSize,                                      \
      (cudnnHandle_t handle, const cudnnTensorDescriptor_t xDesc,                                  \
       const cudnnFilterDescriptor_t wDesc, const cudnnConvolutionDescriptor_t convDesc,           \
       const cudnnTensorDescriptor_t yDesc, cudnnConvolutionFwdAlgo_t algo, size_t *sizeInBytes),  \
      (handle, xDesc, wDesc, convDesc, yDesc, algo, sizeInBytes))                                  \
    X(cudnnStatus_t, cudnnGetConvolutionBackwardDataWorkspaceSize,                                 \
      (cudnnHandle_t handle, const cudnnFilterDescriptor_t wDesc,                                  \
       const cudnnTensorDescriptor_t dyDesc, const cudnnConvolutionDescriptor_t convDesc,          \
       const cudnnTensorDescriptor_t dxDesc, cudnnConvolutionBwdDataAlgo_t algo,                   \
       size_t *sizeInBytes),                                                                       \
      (handle, wDesc, dyDesc, convDesc, dxDesc, algo, sizeInBytes))                                \
    X(cudnnStatus_t, cudnnGetConvolutionBackwardFilterWorkspaceSize,                               \
      (cudnnHandle_t handle, const cudnnTensorDescriptor_t xDesc,                                  \
       const cudnnTensorDescriptor_t dyDesc, const cudnnConvolutionDescriptor_t convDesc,          \
       const cudnnFilterDescriptor_t gradDesc, cudnnConvolutionBwdFilterAlgo_t algo,               \
       size_t *sizeInBytes),                                                                       \
      (handle, xDesc, dyDesc, convDesc, gradDesc, algo, sizeInBytes))                              \
    X(cudnnStatus_t, cudnnConvolutionForward,                                                      \
      (cudnnHandle_t handle, const void *alpha, const cudnnTensorDescriptor_t xDesc,               \
       const void *x, const cudnnFilterDescriptor_t wDesc, const void *w,                          \
       const cudnnConvolutionDescriptor_t convDesc, cudnnConvolutionFwdAlgo_t algo,                \
       void *workSpace, size_t workSpaceSizeInBytes, const void *beta,                             \
       const cudnnTensorDescriptor_t yDesc, void *y),                                              \
      (handle, alpha, xDesc, x, wDesc, w, convDesc, algo, workSpace, workSpaceSizeInBytes, beta,  \
       yDesc, y))                                                                                  \
    X(cudnnStatus_t, cudnnConvolutionBackwardData,                                                 \
      (cudnnHandle_t handle, const void *alpha, const cudnnFilterDescriptor_t wDesc,               \
       const void *w, const cudnnTensorDescriptor_t dyDesc, const void *dy,                        \
       const cudnnConvolutionDescriptor_t convDesc, cudnnConvolutionBwdDataAlgo_t algo,            \
       void *workSpace, size_t workSpaceSizeInBytes, const void *beta,                             \
       const cudnnTensorDescriptor_t dxDesc, void *dx),                                            \
      (handle, alpha, wDesc, w, dyDesc, dy, convDesc, algo, workSpace, workSpaceSizeInBytes,      \
       beta, dxDesc, dx))                                                                          \
    X(cudnnStatus_t, cudnnConvolutionBackwardFilter,                                               \
      (cudnnHandle_t handle, const void *alpha, const cudnnTensorDescriptor_t xDesc,               \
       const void *x, const cudnnTensorDescriptor_t dyDesc, const void *dy,                        \
       const cudnnConvolutionDescriptor_t convDesc, cudnnConvolutionBwdFilterAlgo_t algo,          \
       void *workSpace, size_t workSpaceSizeInBytes, const void *beta,                             \
       const cudnnFilterDescriptor_t dwDesc, void *dw),                                            \
      (handle, alpha, xDesc, x, dyDesc, dy, convDesc, algo, workSpace, workSpaceSizeInBytes,      \
       beta, dwDesc, dw))

/* Pointers to the loaded library's entry points. */
#define S_POINTER(ret, name, params, args) static ret(*s_##name) params;
S_CUDNN_FUNCS(S_POINTER)
static size_t (*s_cudnnGetVersion)(void);
static const char *(*s_cudnnGetErrorString)(cudnnStatus_t);
static void (*s_cudnnGetLastErrorString)(char *, size_t); /* cuDNN 9 and later */

/* The forwarding definitions: called only once the library is loaded
 * (tc_cuda_libs_load succeeded, which every open checks first). */
#define S_FORWARD(ret, name, params, args)                                                        \
    ret CUDNNWINAPI name params { return s_##name args; }
S_CUDNN_FUNCS(S_FORWARD)

size_t CUDNNWINAPI cudnnGetVersion(void) { return s_cudnnGetVersion ? s_cudnnGetVersion() : 0; }

const char *CUDNNWINAPI cudnnGetErrorString(cudnnStatus_t status)
{
    return s_cudnnGetErrorString ? s_cudnnGetErrorString(status) : "cuDNN is not loaded";
}

void CUDNNWINAPI cudnnGetLastErrorString(char *message, size_t max_size)
{
    if (s_cudnnGetLastErrorString)
        s_cudnnGetLastErrorString(message, max_size);
    else if (max_size)
        message[0] = '\0';
}

static tc_cuda_libs_t s_libs;
static pthread_once_t s_once = PTHREAD_ONCE_INIT;

void *tc_cuda_dlopen(const char *file, char *loaded, size_t size)
{
    void *h = dlopen(file, RTLD_NOW | RTLD_GLOBAL);
    if (h && loaded) {
        struct link_map *map = NULL;
        char *real = NULL;
        if (dlinfo(h, RTLD_DI_LINKMAP, &map) == 0 && map && map->l_name)
            real = realpath(map->l_name, NULL);
        snprintf(loaded, size, "%s", real ? real : file);
        free(real);
    }
    return h;
}

/* The libraries the framework loaded with its cuDNN, loaded first. */
static void s_preload(const tc_gpu_framework_t *f)
{
    const struct {
        const char *name, *path;
    } libs[] = {{"NVRTC", f->nvrtc_path}, {"cuBLASLt", f->cublaslt_path},
                {"cuBLAS", f->cublas_path}};
    size_t len = 0;
    for (size_t i = 0; i < sizeof libs / sizeof libs[0]; i++) {
        if (!libs[i].path[0])
            continue;
        char real[1024] = "";
        if (!tc_cuda_dlopen(libs[i].path, real, sizeof real)) {
            tc_log_warn("cannot load %s as PyTorch does (%s): cuDNN engines that need it may not "
                        "build here while they do in training",
                        libs[i].name, dlerror());
            continue;
        }
        len += (size_t)snprintf(s_libs.preloaded + len,
                                len < sizeof s_libs.preloaded ? sizeof s_libs.preloaded - len : 0,
                                "%s%s %s", len ? ", " : "", libs[i].name, real);
    }
}

static int s_resolve(void *h)
{
#define S_RESOLVE(ret, name, params, args)                                                        \
    if (!(*(void **)&s_##name = dlsym(h, #name)))                                                  \
        return tc_fail(TC_ELIB, "%s has no %s: not a cuDNN this agent can use", s_libs.path,      \
                       #name);
    S_CUDNN_FUNCS(S_RESOLVE)
    if (!(*(void **)&s_cudnnGetVersion = dlsym(h, "cudnnGetVersion")) ||
        !(*(void **)&s_cudnnGetErrorString = dlsym(h, "cudnnGetErrorString")))
        return tc_fail(TC_ELIB, "%s is not a cuDNN library (no cudnnGetVersion)", s_libs.path);
    *(void **)&s_cudnnGetLastErrorString = dlsym(h, "cudnnGetLastErrorString");
    return 0;
#undef S_RESOLVE
}

static void s_load(void)
{
    tc_cuda_libs_t *l = &s_libs;
    const char *choice = getenv("TRAINCAST_CUDNN");
    /* The framework is asked only on a machine with a GPU: without one it
     * has no CUDA, hence no cuDNN of its own. */
    unsigned count = 0;
    char why[512];
    tc_backend_cuda.enumerate(&count, why, sizeof why);
    const tc_gpu_framework_t *f = count ? tc_gpu_framework_probe() : NULL;
    const char *theirs = f && f->found && f->cuda ? f->cudnn_path : "";
    tc_cudnn_source_t source;
    bool fallback = false;
    l->rc = tc_cudnn_source(theirs, choice, &source, &fallback);
    if (l->rc < 0) {
        snprintf(l->why, sizeof l->why, "%s", tc_errmsg());
        return;
    }
    const char *file = source == TC_CUDNN_FRAMEWORK ? theirs
                       : source == TC_CUDNN_FILE    ? choice
                                                    : S_CUDNN_SONAME;
    if (source == TC_CUDNN_FRAMEWORK) {
        long major = f->cudnn_number >= 90000 ? f->cudnn_number / 10000 : f->cudnn_number / 1000;
        if (major != CUDNN_MAJOR) {
            l->rc = tc_fail(TC_EUNSUPPORTED,
                            "PyTorch %s loads cuDNN %s (%s), but this agent was built for cuDNN "
                            "%d: build it against cuDNN %ld headers, or set TRAINCAST_CUDNN to a "
                            "libcudnn.so.%d",
                            f->version, f->cudnn_version, theirs, CUDNN_MAJOR, major, CUDNN_MAJOR);
            snprintf(l->why, sizeof l->why, "%s", tc_errmsg());
            return;
        }
        s_preload(f);
    }
    l->handle = tc_cuda_dlopen(file, l->path, sizeof l->path);
    if (!l->handle) {
        const char *err = dlerror();
        l->rc = tc_fail(TC_ENOTFOUND,
                        "cannot load cuDNN (%s): %s; %s", file, err ? err : "not found",
                        source == TC_CUDNN_SYSTEM
                            ? "install cuDNN, or run where a PyTorch with CUDA is found "
                              "(TRAINCAST_PYTHON) so that its cuDNN is used"
                            : "set TRAINCAST_CUDNN to a libcudnn file that loads");
        snprintf(l->why, sizeof l->why, "%s", tc_errmsg());
        return;
    }
    l->rc = s_resolve(l->handle);
    if (l->rc < 0) {
        snprintf(l->why, sizeof l->why, "%s", tc_errmsg());
        return;
    }
    l->framework = source == TC_CUDNN_FRAMEWORK;
    l->whose = l->framework                ? "PyTorch's"
               : source == TC_CUDNN_SYSTEM ? "the system's"
                                           : "TRAINCAST_CUDNN's";
    l->version = (long)s_cudnnGetVersion();
    if (fallback && count)
        tc_log_warn("measuring with the system's cuDNN %s: PyTorch's could not be found (%s)",
                    l->path,
                    !f || !f->found ? (f ? f->why : "no framework probe")
                    : !f->cuda      ? "its torch.cuda.is_available() is False"
                                    : "it reports no cuDNN library");
    else if (!l->framework && count && f && f->found && f->cudnn_path[0])
        tc_log_warn("measuring with cuDNN %s, not PyTorch's %s (TRAINCAST_CUDNN=%s)", l->path,
                    f->cudnn_path, choice);
    tc_log_debug("cuDNN %ld loaded from %s%s%s", l->version, l->path,
                 l->preloaded[0] ? "; with " : "", l->preloaded);
}

int tc_cuda_libs_load(const tc_cuda_libs_t **out)
{
    pthread_once(&s_once, s_load);
    *out = &s_libs;
    if (s_libs.rc < 0)
        return tc_fail(s_libs.rc, "%s", s_libs.why);
    return 0;
}
