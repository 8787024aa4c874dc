/* NVIDIA GPUs through the CUDA runtime and cuDNN: one device per GPU index.
 * On a machine without a driver or a GPU, enumerate() reports none and says
 * why, and open() fails with that reason (TC_ENODEV). */
#include "cuda_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Why there is no usable GPU, from cudaGetDeviceCount's error. */
static void s_why(cudaError_t e, char *why, size_t size)
{
    int rt = 0;
    cudaRuntimeGetVersion(&rt);
    switch (e) {
    case cudaErrorNoDevice:
        snprintf(why, size, "no NVIDIA GPU is present (cudaGetDeviceCount: %s)",
                 cudaGetErrorString(e));
        break;
    case cudaErrorInsufficientDriver:
        snprintf(why, size, "no NVIDIA driver is loaded, or it is older than CUDA runtime %d.%d "
                            "needs (cudaGetDeviceCount: %s); install the NVIDIA driver on a "
                            "machine with a GPU",
                 rt / 1000, rt % 1000 / 10, cudaGetErrorString(e));
        break;
    default:
        snprintf(why, size, "the CUDA runtime found no usable GPU (cudaGetDeviceCount: %s: %s)",
                 cudaGetErrorName(e), cudaGetErrorString(e));
        break;
    }
}

static int s_enumerate(unsigned *count, char *why, size_t why_size)
{
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    *count = 0;
    if (why_size)
        why[0] = '\0';
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        if (why_size)
            s_why(e, why, why_size);
        return 0;
    }
    if (n <= 0 && why_size)
        snprintf(why, why_size, "no NVIDIA GPU is present");
    *count = n > 0 ? (unsigned)n : 0;
    return 0;
}

static void s_versions(char *buf, size_t size)
{
    int rt = 0, drv = 0;
    cudaRuntimeGetVersion(&rt);
    cudaError_t e = cudaDriverGetVersion(&drv);
    size_t v = cudnnGetVersion();
    char driver[32];
    if (e == cudaSuccess && drv > 0)
        snprintf(driver, sizeof driver, "%d.%d", drv / 1000, drv % 1000 / 10);
    else
        snprintf(driver, sizeof driver, "none");
    snprintf(buf, size, "cuDNN %zu.%zu.%zu, CUDA runtime %d.%d, driver %s", v / 10000,
             v % 10000 / 100, v % 100, rt / 1000, rt % 1000 / 10, driver);
}

int tc_cuda_activate(const tc_cuda_ctx_t *ctx)
{
    int rc = 0;
    TC_CUDA_TRY(cudaSetDevice(ctx->index));
    return 0;
err:
    return rc;
}

static void s_close(void *p)
{
    tc_cuda_ctx_t *ctx = p;
    if (!ctx)
        return;
    cudaSetDevice(ctx->index);
    if (ctx->cudnn)
        cudnnDestroy(ctx->cudnn);
    if (ctx->start)
        cudaEventDestroy(ctx->start);
    if (ctx->stop)
        cudaEventDestroy(ctx->stop);
    if (ctx->stream)
        cudaStreamDestroy(ctx->stream);
    free(ctx);
}

static int s_open(unsigned index, unsigned threads, void **out)
{
    int rc = 0;
    *out = NULL;
    unsigned count = 0;
    char why[512];
    s_enumerate(&count, why, sizeof why);
    if (count == 0)
        return tc_fail(TC_ENODEV, "cuda:%u: %s", index, why);
    if (index >= count)
        return tc_fail(TC_ENODEV, "cuda:%u: this machine has %u GPU%s (cuda:0%s)", index, count,
                       count == 1 ? "" : "s", count > 1 ? " and up" : "");
    tc_cuda_ctx_t *ctx = calloc(1, sizeof *ctx);
    if (!ctx)
        return tc_fail(TC_ENOMEM, "out of memory opening cuda:%u", index);
    ctx->index = (int)index;
    TC_CUDA_TRY(cudaSetDevice(ctx->index));
    struct cudaDeviceProp prop;
    TC_CUDA_TRY(cudaGetDeviceProperties(&prop, ctx->index));
    int khz = 0, mem_khz = 0, drv = 0, rt = 0;
    TC_CUDA_TRY(cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, ctx->index));
    TC_CUDA_TRY(cudaDeviceGetAttribute(&mem_khz, cudaDevAttrMemoryClockRate, ctx->index));
    TC_CUDA_TRY(cudaDriverGetVersion(&drv));
    TC_CUDA_TRY(cudaRuntimeGetVersion(&rt));
    TC_CUDA_TRY(cudaStreamCreateWithFlags(&ctx->stream, cudaStreamNonBlocking));
    TC_CUDA_TRY(cudaEventCreate(&ctx->start));
    TC_CUDA_TRY(cudaEventCreate(&ctx->stop));
    TC_CUDNN_TRY(cudnnCreate(&ctx->cudnn));
    TC_CUDNN_TRY(cudnnSetStream(ctx->cudnn, ctx->stream));

    snprintf(ctx->name, sizeof ctx->name, "%s", prop.name);
    const unsigned char *u = (const unsigned char *)prop.uuid.bytes;
    snprintf(ctx->uuid, sizeof ctx->uuid,
             "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", u[0],
             u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13],
             u[14], u[15]);
    ctx->cc_major = prop.major;
    ctx->cc_minor = prop.minor;
    snprintf(ctx->cc, sizeof ctx->cc, "%d.%d", prop.major, prop.minor);
    snprintf(ctx->driver_version, sizeof ctx->driver_version, "%d.%d", drv / 1000,
             drv % 1000 / 10);
    snprintf(ctx->runtime_version, sizeof ctx->runtime_version, "%d.%d", rt / 1000,
             rt % 1000 / 10);
    size_t v = cudnnGetVersion();
    snprintf(ctx->library_version, sizeof ctx->library_version, "%zu.%zu.%zu", v / 10000,
             v % 10000 / 100, v % 100);
    if (gethostname(ctx->host, sizeof ctx->host) != 0 || !ctx->host[0])
        snprintf(ctx->host, sizeof ctx->host, "unknown");
    ctx->host[sizeof ctx->host - 1] = '\0';
    ctx->sms = (unsigned)prop.multiProcessorCount;
    ctx->clock_mhz = (unsigned)(khz / 1000);
    ctx->mem_clock_mhz = (unsigned)(mem_khz / 1000);
    ctx->memory_bytes = prop.totalGlobalMem;
    *out = ctx;
    return 0;
err:
    s_close(ctx);
    return tc_err_context(rc, "opening cuda:%u", index);
}

static int s_describe(void *p, Traincast__V1__Device *out)
{
    tc_cuda_ctx_t *ctx = p;
    out->kind = TRAINCAST__V1__DEVICE_KIND__DEVICE_KIND_CUDA;
    out->name = ctx->name;
    out->uuid = ctx->uuid;
    out->compute_capability = ctx->cc;
    out->multiprocessors = ctx->sms;
    out->threads = 0;
    out->memory_bytes = ctx->memory_bytes;
    out->clock_mhz = ctx->clock_mhz;
    out->memory_clock_mhz = ctx->mem_clock_mhz;
    out->driver_version = ctx->driver_version;
    out->runtime_version = ctx->runtime_version;
    out->library = "cudnn";
    out->library_version = ctx->library_version;
    out->host = ctx->host;
    out->index = (uint32_t)ctx->index;
    return 0;
}

const tc_backend_iface_t tc_backend_cuda = {
    .kind = "cuda",
    .library = "cudnn",
    .enumerate = s_enumerate,
    .versions = s_versions,
    .open = s_open,
    .close = s_close,
    .describe = s_describe,
    .plan_create = tc_cuda_plan_create,
    .algo_count = tc_cuda_algo_count,
    .algo = tc_cuda_algo,
    .select = tc_cuda_select,
    .run = tc_cuda_run,
    .read = tc_cuda_read,
    .plan_destroy = tc_cuda_plan_destroy,
};
