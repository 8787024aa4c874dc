/* NVIDIA GPUs through the CUDA runtime and cuDNN: one device per GPU index,
 * measured as the training framework runs it (gpu_framework.h): its conv
 * routing for its version (gpu_route.h), its cuDNN API, its own kernels
 * for the convs it keeps (fw_conv.h), and its cuBLAS / cuBLASLt calls for
 * matmuls (cuda_matmul.c). On a machine without a driver or a
 * GPU, enumerate() reports none and says why, and open() fails with that
 * reason (TC_ENODEV). */
#include "cuda_internal.h"
#include "gpu_framework.h"

#include "tc_log.h"

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

/* cuDNN's version as PyTorch prints it: 9.x numbers as MAJOR*10000 +
 * MINOR*100 + PATCH, 8.x as MAJOR*1000 + MINOR*100 + PATCH. */
static void s_cudnn_version(long v, char *buf, size_t size)
{
    if (v >= 90000)
        snprintf(buf, size, "%ld.%ld.%ld", v / 10000, v / 100 % 100, v % 100);
    else
        snprintf(buf, size, "%ld.%ld.%ld", v / 1000, v / 100 % 10, v % 100);
}

static void s_versions(char *buf, size_t size)
{
    int rt = 0, drv = 0;
    cudaRuntimeGetVersion(&rt);
    cudaError_t e = cudaDriverGetVersion(&drv);
    char driver[32], cudnn[1600];
    if (e == cudaSuccess && drv > 0)
        snprintf(driver, sizeof driver, "%d.%d", drv / 1000, drv % 1000 / 10);
    else
        snprintf(driver, sizeof driver, "none");
    const tc_cuda_libs_t *l = NULL;
    if (tc_cuda_libs_load(&l) == 0) {
        char v[32];
        s_cudnn_version(l->version, v, sizeof v);
        snprintf(cudnn, sizeof cudnn, "cuDNN %s (%s, %s%s%s)", v, l->path, l->whose,
                 l->preloaded[0] ? "; with " : "", l->preloaded);
    } else {
        snprintf(cudnn, sizeof cudnn, "cuDNN not loaded (%s)", l->why);
    }
    snprintf(buf, size, "%s, CUDA runtime %d.%d (static), driver %s", cudnn, rt / 1000,
             rt % 1000 / 10, driver);
}

int tc_cuda_activate(const tc_cuda_ctx_t *ctx)
{
    int rc = 0;
    TC_CUDA_TRY(cudaSetDevice(ctx->index));
    return 0;
err:
    return rc;
}

/* The spin before each timed call, in microseconds of SM clock. */
#define S_SPIN_US 1000

int tc_cuda_timed_begin(tc_cuda_ctx_t *d)
{
    int rc = 0;
    long long cycles = (long long)d->clock_khz * S_SPIN_US / 1000;
    TC_CUDA_TRY(tc_cuda_spin(cycles > 0 ? cycles : 100000, d->stream));
    TC_CUDA_TRY(cudaEventRecord(d->start, d->stream));
    return 0;
err:
    return rc;
}

int tc_cuda_timed_end(tc_cuda_ctx_t *d, double *ms)
{
    int rc = 0;
    TC_CUDA_TRY(cudaEventRecord(d->stop, d->stream));
    TC_CUDA_TRY(cudaEventSynchronize(d->stop));
    float elapsed = 0;
    TC_CUDA_TRY(cudaEventElapsedTime(&elapsed, d->start, d->stop));
    *ms = elapsed;
    return 0;
err:
    return rc;
}

tc_fw_t *tc_cuda_framework(tc_cuda_ctx_t *ctx)
{
    if (ctx->fw)
        return ctx->fw;
    if (!ctx->has_framework) {
        tc_fail(TC_ENOTFOUND, "%s: PyTorch does not run on this GPU here (%s), so the convs it "
                              "keeps for its own kernels cannot be timed",
                ctx->name, ctx->fw_why);
        return NULL;
    }
    if (ctx->fw_failed) {
        tc_fail(ctx->fw_failed, "%s", ctx->fw_why);
        return NULL;
    }
    char spec[32];
    snprintf(spec, sizeof spec, "cuda:%d", ctx->index);
    int rc = tc_fw_open(spec, &ctx->fw);
    if (rc < 0) {
        ctx->fw_failed = rc;
        snprintf(ctx->fw_why, sizeof ctx->fw_why, "%s", tc_errmsg());
        return NULL;
    }
    return ctx->fw;
}

static void s_close(void *p)
{
    tc_cuda_ctx_t *ctx = p;
    if (!ctx)
        return;
    tc_fw_close(&ctx->fw);
    tc_nvml_close(&ctx->nvml);
    cudaSetDevice(ctx->index);
    if (ctx->stream)
        cudaStreamSynchronize(ctx->stream);
    tc_cuda_blas_destroy(&ctx->blas);
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

/* The framework whose path the device follows, its routing rule and
 * settings; a warning when its cuDNN is not the one measured with. */
static void s_framework(tc_cuda_ctx_t *ctx)
{
    const tc_gpu_framework_t *f = tc_gpu_framework_probe();
    if (!f->found) {
        snprintf(ctx->framework, sizeof ctx->framework, "no framework");
        snprintf(ctx->fw_why, sizeof ctx->fw_why, "%s", f->why);
        ctx->rule = tc_gpu_rule(NULL, NULL);
        tc_log_warn("%s: no framework found (%s): convs are routed as PyTorch %d.%d would "
                    "route them, unverified, and those it keeps for its own kernels cannot be "
                    "timed",
                    ctx->name, f->why, ctx->rule.major, ctx->rule.minor);
    } else {
        snprintf(ctx->framework, sizeof ctx->framework, "%s %s", f->framework, f->version);
        ctx->rule = tc_gpu_rule(f->framework, f->version);
        ctx->has_framework = f->cuda;
        if (!f->cuda)
            snprintf(ctx->fw_why, sizeof ctx->fw_why, "%s %s sees no CUDA device",
                     f->framework, f->version);
        if (!ctx->rule.verified)
            tc_log_warn("%s: the conv routing of %s was not checked for this version: convs are "
                        "routed by the rule for %s, and the device says 'routing unverified'",
                        ctx->name, ctx->framework, ctx->rule.versions);
    }
    snprintf(ctx->routing, sizeof ctx->routing, "%s%s", ctx->rule.name,
             ctx->rule.verified ? "" : " unverified");
    ctx->settings.cudnn_version = f->cudnn_number ? f->cudnn_number : ctx->library_number;
    ctx->settings.cc_major = ctx->cc_major;
    ctx->settings.cudnn_enabled = f->found ? f->cudnn_enabled : true;
    ctx->settings.deterministic = f->found && f->deterministic;
    /* PyTorch's default (True) where there is no framework to ask. */
    const char *override = getenv("NVIDIA_TF32_OVERRIDE");
    ctx->settings.allow_tf32 = f->found ? f->allow_tf32 : !(override && !strcmp(override, "0"));
    ctx->v8 = tc_gpu_v8_api(&ctx->rule, getenv("TORCH_CUDNN_V8_API_ENABLED"),
                            getenv("TORCH_CUDNN_V8_API_DISABLED"));
    ctx->settings.v8_api = ctx->v8;
    /* torch.backends.cudnn.benchmark_limit: 10 unless set; 0 means all. */
    ctx->benchmark_limit = f->found && f->benchmark_limit > 0 ? f->benchmark_limit
                           : f->found && ctx->rule.major >= 2 ? 10
                                                              : 0;
    if (f->found && f->cuda && f->cudnn_number && f->cudnn_number != ctx->library_number)
        tc_log_warn("%s: the agent measures with cuDNN %s while %s loads cuDNN %s (%s): its "
                    "benchmarks and the framework's traces are kept apart by cuDNN version and "
                    "will not be fitted together",
                    ctx->name, ctx->library_version, ctx->framework, f->cudnn_version,
                    f->cudnn_path);
}

static int s_open(unsigned index, unsigned threads, void **out)
{
    int rc = 0;
    (void)threads;
    *out = NULL;
    unsigned count = 0;
    char why[512];
    s_enumerate(&count, why, sizeof why);
    if (count == 0)
        return tc_fail(TC_ENODEV, "cuda:%u: %s", index, why);
    if (index >= count)
        return tc_fail(TC_ENODEV, "cuda:%u: this machine has %u GPU%s (cuda:0%s)", index, count,
                       count == 1 ? "" : "s", count > 1 ? " and up" : "");
    const tc_cuda_libs_t *libs = NULL;
    if ((rc = tc_cuda_libs_load(&libs)) < 0)
        return tc_err_context(rc, "opening cuda:%u", index);
    tc_cuda_ctx_t *ctx = calloc(1, sizeof *ctx);
    if (!ctx)
        return tc_fail(TC_ENOMEM, "out of memory opening cuda:%u", index);
    ctx->index = (int)index;
    TC_CUDA_TRY(cudaSetDevice(ctx->index));
    struct cudaDeviceProp prop;
    TC_CUDA_TRY(cudaGetDeviceProperties(&prop, ctx->index));
    int khz = 0, mem_khz = 0, drv = 0, rt = 0, l2 = 0;
    TC_CUDA_TRY(cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, ctx->index));
    TC_CUDA_TRY(cudaDeviceGetAttribute(&mem_khz, cudaDevAttrMemoryClockRate, ctx->index));
    TC_CUDA_TRY(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, ctx->index));
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
    ctx->library_number = (long)cudnnGetVersion();
    s_cudnn_version(ctx->library_number, ctx->library_version, sizeof ctx->library_version);
    if (gethostname(ctx->host, sizeof ctx->host) != 0 || !ctx->host[0])
        snprintf(ctx->host, sizeof ctx->host, "unknown");
    ctx->host[sizeof ctx->host - 1] = '\0';
    ctx->sms = (unsigned)prop.multiProcessorCount;
    ctx->clock_khz = (unsigned)khz;
    ctx->clock_mhz = (unsigned)(khz / 1000);
    ctx->mem_clock_mhz = (unsigned)(mem_khz / 1000);
    ctx->memory_bytes = prop.totalGlobalMem;
    ctx->l2_bytes = l2 > 0 ? (uint64_t)l2 : 0;
    s_framework(ctx);
    ctx->nvml = tc_nvml_open(ctx->uuid);
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
    out->framework = ctx->framework;
    out->routing = ctx->routing;
    return 0;
}

static void s_environment(void *p, tc_device_env_t *out)
{
    tc_cuda_ctx_t *ctx = p;
    snprintf(out->framework, sizeof out->framework, "%s", ctx->framework);
    snprintf(out->routing, sizeof out->routing, "%s, cuDNN %s API", ctx->routing,
             ctx->v8 ? "v8 (graph)" : "v7 (legacy)");
}

static int s_telemetry(void *p, tc_telemetry_t *out)
{
    tc_cuda_ctx_t *ctx = p;
    if (!ctx->nvml)
        return 0;
    return tc_nvml_read(ctx->nvml, out);
}

const tc_backend_iface_t tc_backend_cuda = {
    .kind = "cuda",
    .library = "cudnn",
    .enumerate = s_enumerate,
    .versions = s_versions,
    .open = s_open,
    .close = s_close,
    .describe = s_describe,
    .environment = s_environment,
    .plan_create = tc_cuda_plan_create,
    .algo_count = tc_cuda_algo_count,
    .algo = tc_cuda_algo,
    .select = tc_cuda_select,
    .run = tc_cuda_run,
    .read = tc_cuda_read,
    .plan_destroy = tc_cuda_plan_destroy,
    .plan_route = tc_cuda_plan_route,
    .telemetry = s_telemetry,
    .matmul_create = tc_cuda_matmul_create,
    .matmul_run = tc_cuda_matmul_run,
    .matmul_read = tc_cuda_matmul_read,
    .matmul_route = tc_cuda_matmul_route,
    .matmul_destroy = tc_cuda_matmul_destroy,
};
