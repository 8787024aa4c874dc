/* The CPU device: oneDNN's CPU engine with a fixed OpenMP thread count.
 *
 * Debian's oneDNN 2.6 is built with the OpenMP runtime (GNU libgomp), so the
 * thread count is OpenMP's: oneDNN sizes its parallel regions and chooses
 * its kernel blocking from omp_get_max_threads() of the calling thread, both
 * when a primitive is created and when it runs. The backend therefore sets
 * omp_set_num_threads() on the thread that drives it (at open, plan creation
 * and before every run), turns dynamic adjustment off, and checks that an
 * OpenMP team really has that many threads. This is what PyTorch does with
 * torch.set_num_threads(). */
#include "cpu_internal.h"

#include "hostinfo.h"

#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *s_isa_name(dnnl_cpu_isa_t isa)
{
    switch (isa) {
    case dnnl_cpu_isa_sse41: return "sse41";
    case dnnl_cpu_isa_avx: return "avx";
    case dnnl_cpu_isa_avx2: return "avx2";
    case dnnl_cpu_isa_avx2_vnni: return "avx2_vnni";
    case dnnl_cpu_isa_avx512_mic: return "avx512_mic";
    case dnnl_cpu_isa_avx512_mic_4ops: return "avx512_mic_4ops";
    case dnnl_cpu_isa_avx512_core: return "avx512_core";
    case dnnl_cpu_isa_avx512_core_vnni: return "avx512_core_vnni";
    case dnnl_cpu_isa_avx512_core_bf16: return "avx512_core_bf16";
    case dnnl_cpu_isa_avx512_core_amx: return "avx512_core_amx";
    default: return "generic";
    }
}

static const char *s_runtime_name(unsigned rt)
{
    switch (rt) {
    case DNNL_RUNTIME_SEQ: return "sequential";
    case DNNL_RUNTIME_OMP: return "OpenMP";
    case DNNL_RUNTIME_TBB: return "TBB";
    case DNNL_RUNTIME_THREADPOOL: return "threadpool";
    default: return "unknown";
    }
}

/* 64-bit FNV-1a with a chosen offset basis, finished with the splitmix64
 * mixer so that similar keys give unrelated-looking ids. */
static uint64_t s_hash(const char *s, uint64_t basis)
{
    uint64_t h = basis;
    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= 0x100000001b3ull;
    }
    h = (h ^ (h >> 30)) * 0xBF58476D1CE4E5B9ull;
    h = (h ^ (h >> 27)) * 0x94D049BB133111EBull;
    return h ^ (h >> 31);
}

int tc_cpu_apply_threads(const tc_cpu_ctx_t *ctx)
{
    const dnnl_version_t *v = dnnl_version();
    if (v->cpu_runtime == DNNL_RUNTIME_SEQ) {
        if (ctx->threads != 1)
            return tc_fail(TC_EUNSUPPORTED, "this oneDNN is built without threading; only "
                                            "--threads 1 is possible");
        return 0;
    }
    if (v->cpu_runtime != DNNL_RUNTIME_OMP)
        return tc_fail(TC_EUNSUPPORTED, "this oneDNN uses the %s runtime, whose thread count "
                                        "traincast cannot set; rebuild against an OpenMP oneDNN "
                                        "(Debian's libdnnl-dev)",
                       s_runtime_name(v->cpu_runtime));
    omp_set_dynamic(0);
    omp_set_num_threads((int)ctx->threads);
    if (omp_get_max_threads() != (int)ctx->threads)
        return tc_fail(TC_EINVAL, "OpenMP allows %d threads, not the %u asked for; check "
                                  "OMP_THREAD_LIMIT or choose a smaller --threads",
                       omp_get_max_threads(), ctx->threads);
    return 0;
}

/* How many threads an OpenMP team really gets now. */
static int s_team_size(void)
{
    int team = 0;
#pragma omp parallel
    {
#pragma omp master
        team = omp_get_num_threads();
    }
    return team;
}

static int s_enumerate(unsigned *count, char *why, size_t why_size)
{
    *count = 1;
    if (why_size)
        why[0] = '\0';
    return 0;
}

static void s_versions(char *buf, size_t size)
{
    const dnnl_version_t *v = dnnl_version();
    snprintf(buf, size, "oneDNN %d.%d.%d (%s runtime, OpenMP %d, isa %s)", v->major, v->minor,
             v->patch, s_runtime_name(v->cpu_runtime), _OPENMP,
             s_isa_name(dnnl_get_effective_cpu_isa()));
}

static void s_close(void *p)
{
    tc_cpu_ctx_t *ctx = p;
    if (!ctx)
        return;
    if (ctx->stream)
        dnnl_stream_destroy(ctx->stream);
    if (ctx->engine)
        dnnl_engine_destroy(ctx->engine);
    free(ctx);
}

static int s_open(unsigned index, unsigned threads, void **out)
{
    int rc = 0;
    *out = NULL;
    if (index != 0)
        return tc_fail(TC_ENODEV, "there is one cpu device (index 0), not %u", index);
    unsigned logical = tc_cpu_logical();
    if (threads == 0)
        threads = logical;
    if (threads > logical)
        return tc_fail(TC_EINVAL, "--threads %u is more than the %u logical CPUs this process "
                                  "may run on; measuring an oversubscribed CPU is meaningless",
                       threads, logical);
    tc_cpu_ctx_t *ctx = calloc(1, sizeof *ctx);
    if (!ctx)
        return tc_fail(TC_ENOMEM, "out of memory opening the cpu device");
    ctx->threads = threads;
    TC_TRY(tc_cpu_apply_threads(ctx));
    int team = s_team_size();
    if (team != (int)threads)
        TC_FAIL_GOTO(TC_EINVAL, "an OpenMP parallel region got %d threads instead of %u; check "
                                "OMP_* environment variables", team, threads);
    TC_DNNL_TRY(dnnl_engine_create(&ctx->engine, dnnl_cpu, 0));
    TC_DNNL_TRY(dnnl_stream_create(&ctx->stream, ctx->engine, dnnl_stream_default_flags));

    char model[192];
    tc_cpu_model(model, sizeof model);
    tc_host_name(ctx->host, sizeof ctx->host);
    snprintf(ctx->name, sizeof ctx->name, "%s (%u thread%s)", model, threads,
             threads == 1 ? "" : "s");
    char key[512];
    snprintf(key, sizeof key, "%s\n%s\n%u", ctx->host, model, threads);
    snprintf(ctx->uuid, sizeof ctx->uuid, "cpu-%016llx%016llx",
             (unsigned long long)s_hash(key, 0xcbf29ce484222325ull),
             (unsigned long long)s_hash(key, 0x84222325cbf29ce4ull));
    const dnnl_version_t *v = dnnl_version();
    snprintf(ctx->library_version, sizeof ctx->library_version, "%d.%d.%d", v->major, v->minor,
             v->patch);
    snprintf(ctx->runtime_version, sizeof ctx->runtime_version, "%s %d, isa %s",
             s_runtime_name(v->cpu_runtime), _OPENMP,
             s_isa_name(dnnl_get_effective_cpu_isa()));
    tc_os_version(ctx->os_version, sizeof ctx->os_version);
    ctx->cores = tc_cpu_physical();
    ctx->mhz = tc_cpu_mhz();
    ctx->memory_bytes = tc_mem_total();
    *out = ctx;
    return 0;
err:
    s_close(ctx);
    return rc;
}

static int s_describe(void *p, Traincast__V1__Device *out)
{
    tc_cpu_ctx_t *ctx = p;
    out->kind = TRAINCAST__V1__DEVICE_KIND__DEVICE_KIND_CPU;
    out->name = ctx->name;
    out->uuid = ctx->uuid;
    out->compute_capability = "";
    out->multiprocessors = ctx->cores;
    out->threads = ctx->threads;
    out->memory_bytes = ctx->memory_bytes;
    out->clock_mhz = ctx->mhz;
    out->memory_clock_mhz = 0;
    out->driver_version = ctx->os_version;
    out->runtime_version = ctx->runtime_version;
    out->library = "onednn";
    out->library_version = ctx->library_version;
    out->host = ctx->host;
    out->index = 0;
    return 0;
}

const tc_backend_iface_t tc_backend_cpu = {
    .kind = "cpu",
    .library = "onednn",
    .enumerate = s_enumerate,
    .versions = s_versions,
    .open = s_open,
    .close = s_close,
    .describe = s_describe,
    .plan_create = tc_cpu_plan_create,
    .algo_count = tc_cpu_algo_count,
    .algo = tc_cpu_algo,
    .select = tc_cpu_select,
    .run = tc_cpu_run,
    .read = tc_cpu_read,
    .plan_destroy = tc_cpu_plan_destroy,
};
