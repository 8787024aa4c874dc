/* The CPU device: oneDNN's CPU engine with a fixed OpenMP thread count,
 * the memory allocator this process runs with (allocator.h), and the
 * framework whose CPU computation it measures: its version (which decides
 * the conv routing, cpu_route.h) and the BLAS it loads (cpu_blas.h), as
 * the PyTorch harness reports them (cpu_framework.h). All of them are part
 * of the device: its name says them, e.g.
 *
 *   Intel(R) Xeon(R) CPU @ 2.20GHz (2 threads) [tcmalloc 2.10 | OpenBLAS 0.3.21 openmp | pytorch 1.13.0a0]
 *
 * and its uuid hashes them (with cold operands, operands.h, the name ends
 * in "| cold operands" and the uuid hashes that too), so an agent whose allocator, BLAS or framework
 * changed measures a new device (and says so), and nothing stored under
 * the old one is relabelled.
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

#include "allocator.h"
#include "cpu_framework.h"
#include "hostinfo.h"
#include "operands.h"
#include "tc_log.h"

#include <errno.h>
#include <omp.h>
#include <pthread.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
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
    tc_blas_close(&ctx->blas);
    free(ctx->canary);
    free(ctx);
}

/* The canary (agent/bench/canary.h): ten 96x96x96 products on the
 * framework's BLAS, the kind of kernel the benchmarks run (sgemm_ itself,
 * oneDNN's convs and matmuls on the same vector units), small enough to
 * stay in the core's caches (108 KiB of operands): about half a
 * millisecond. They are timed after an untimed pass of the same ten: the
 * first pass after a large product finds the operands and code evicted
 * (on the first kind, AMD EPYC family 25, 7 to 38 % of first passes after
 * a 392x768 by 768x2304 product read over 1.3 times the fastest, 1 % of
 * second ones), which would read as a slow phase after every large block;
 * a phase of the host lasts seconds and slows both passes. On one
 * thread whatever the device's count: on two, an
 * OpenMP BLAS splits these products or not from call to call (0.31 or
 * 0.55 ms on the third kind), which reads as a phase where there is none;
 * so on a device of several threads it watches the core it runs on. */
#define S_CANARY_N 96
#define S_CANARY_CALLS 10
#define S_CANARY_SETTLE_US 5000

static int s_canary(void *p, double *ms)
{
    tc_cpu_ctx_t *ctx = p;
    *ms = 0;
    if (!ctx->blas)
        return tc_fail(TC_EUNSUPPORTED, "no canary without the framework's BLAS (%s)",
                       ctx->blas_why);
    const size_t nn = (size_t)S_CANARY_N * S_CANARY_N;
    if (!ctx->canary) {
        if (!(ctx->canary = malloc(3 * nn * sizeof *ctx->canary)))
            return tc_fail(TC_ENOMEM, "out of memory for the canary");
        for (size_t i = 0; i < 3 * nn; i++)
            ctx->canary[i] = tc_random_value(0xca, i);
    }
    /* On a device of several threads, the team of the block just measured
     * spins a while on the other cores before it sleeps (OpenMP's active
     * wait): on a sibling hyperthread it slows the canary as a phase would
     * (1.5 to 2 times on the third kind, where OMP_WAIT_POLICY=passive
     * took 21 false alarms of a small plan to 1). Let it sleep first. */
    if (ctx->threads > 1)
        usleep(S_CANARY_SETTLE_US);
    /* An OpenMP BLAS takes its team size from this thread's setting at
     * each call (as the native convs' do, tc_cpu_apply_threads). */
    omp_set_num_threads(1);
    struct timespec a = {0}, b = {0};
    for (int pass = 0; pass < 2; pass++) { /* the second timed */
        clock_gettime(CLOCK_MONOTONIC, &a);
        for (int i = 0; i < S_CANARY_CALLS; i++)
            tc_blas_sgemm(ctx->blas, 'N', 'N', S_CANARY_N, S_CANARY_N, S_CANARY_N, 1.0f,
                          ctx->canary, S_CANARY_N, ctx->canary + nn, S_CANARY_N, 0.0f,
                          ctx->canary + 2 * nn, S_CANARY_N);
        clock_gettime(CLOCK_MONOTONIC, &b);
    }
    omp_set_num_threads((int)ctx->threads);
    *ms = (double)(b.tv_sec - a.tv_sec) * 1e3 + (double)(b.tv_nsec - a.tv_nsec) * 1e-6;
    return 0;
}

/* Warnings about the framework are given once per process. */
static pthread_once_t s_warn_once = PTHREAD_ONCE_INIT;
static const tc_cpu_ctx_t *s_warn_ctx;

static void s_warn(void)
{
    const tc_cpu_ctx_t *ctx = s_warn_ctx;
    const tc_framework_t *f = tc_framework_probe();
    if (!f->found)
        tc_log_warn("no framework to mirror (%s): every conv is timed on oneDNN, which is not "
                    "what PyTorch does for all of them; the device is named 'no framework'",
                    f->why);
    else if (!ctx->rule->verified)
        tc_log_warn("%s: its CPU conv routing is not verified (traincast checked PyTorch %s); "
                    "convs are routed as there, and the device says 'routing unverified' "
                    "(docs/conv-benchmarks.md)",
                    ctx->framework, ctx->rule->versions);
    if (!ctx->blas && f->found)
        tc_log_warn("%s", ctx->blas_why);
}

/* The allocator, framework, BLAS and routing rule of the device. */
static void s_environment(tc_cpu_ctx_t *ctx)
{
    tc_allocator_describe(ctx->allocator, sizeof ctx->allocator);
    const tc_framework_t *f = tc_framework_probe();
    if (f->found) {
        snprintf(ctx->framework, sizeof ctx->framework, "%s %s", f->framework, f->version);
        ctx->rule = tc_route_rule(f->framework, f->version);
        ctx->onednn_enabled = f->mkldnn;
        if (*f->allocator && strcmp(f->allocator, ctx->allocator) != 0)
            tc_log_warn("the framework allocates with %s, this agent with %s: conv benchmarks "
                        "and traces would not measure the same device",
                        f->allocator, ctx->allocator);
    } else {
        snprintf(ctx->framework, sizeof ctx->framework, "no framework");
        ctx->rule = tc_route_rule(NULL, NULL);
        ctx->onednn_enabled = true;
    }
    /* The BLAS the framework loaded (libblas.so.3 without a framework). */
    const char *path = f->found ? f->blas_path : NULL;
    if (f->found && !*f->blas_path) {
        snprintf(ctx->blas_why, sizeof ctx->blas_why, "%s loads no separate BLAS library (%s): "
                 "its native convs cannot be timed on it", ctx->framework, f->blas);
        snprintf(ctx->blas_name, sizeof ctx->blas_name, "%s", *f->blas ? f->blas : "no BLAS");
    } else if (tc_blas_open(path, &ctx->blas) == 0) {
        snprintf(ctx->blas_name, sizeof ctx->blas_name, "%s", tc_blas_name(ctx->blas));
    } else {
        snprintf(ctx->blas_why, sizeof ctx->blas_why, "%s", tc_errmsg());
        snprintf(ctx->blas_name, sizeof ctx->blas_name, "no BLAS");
        tc_err_clear();
    }
    /* mkldnn_bf16_device_check(): AVX-512 BW, VL and DQ, which oneDNN's
     * avx512_core level requires. */
    dnnl_cpu_isa_t isa = dnnl_get_effective_cpu_isa();
    ctx->bf16_onednn = isa == dnnl_cpu_isa_avx512_core || isa == dnnl_cpu_isa_avx512_core_vnni ||
                       isa == dnnl_cpu_isa_avx512_core_bf16 || isa == dnnl_cpu_isa_avx512_core_amx;
    s_warn_ctx = ctx;
    pthread_once(&s_warn_once, s_warn);
}

static void s_routing(const tc_cpu_ctx_t *ctx, char *buf, size_t size)
{
    snprintf(buf, size, "%s%s", ctx->rule->name, ctx->rule->verified ? "" : " unverified");
}

/* Remember the device this processor and thread count were last measured
 * as, and say so when that changes (another allocator, BLAS or framework
 * makes a new device; what was stored under the old one stays as it is). */
static void s_note_change(const tc_cpu_ctx_t *ctx, const char *model, unsigned threads)
{
    const char *cache = getenv("TRAINCAST_CACHE"), *home = getenv("HOME");
    char dir[1024];
    if (cache && *cache)
        snprintf(dir, sizeof dir, "%s/devices", cache);
    else if (home && *home)
        snprintf(dir, sizeof dir, "%s/.cache/traincast/devices", home);
    else
        return;
    char parent[1024];
    snprintf(parent, sizeof parent, "%.*s", (int)(strrchr(dir, '/') - dir), dir);
    mkdir(parent, 0755);
    if (mkdir(dir, 0755) < 0 && errno != EEXIST)
        return;
    char key[512], path[1200];
    snprintf(key, sizeof key, "%s\n%s\n%u%s", ctx->host, model, threads,
             ctx->cold ? "\ncold" : "");
    snprintf(path, sizeof path, "%s/cpu-%016llx", dir, (unsigned long long)s_hash(key, 7));
    char old[512] = "";
    FILE *f = fopen(path, "r");
    if (f) {
        if (!fgets(old, sizeof old, f))
            old[0] = '\0';
        fclose(f);
        old[strcspn(old, "\n")] = '\0';
    }
    char now[512];
    snprintf(now, sizeof now, "%s %s", ctx->uuid, ctx->name);
    if (!strcmp(old, now))
        return;
    if (*old && strncmp(old, ctx->uuid, strlen(ctx->uuid)) != 0)
        tc_log_warn("this CPU with %u thread%s is a new device: it was '%s' when last measured "
                    "here, and is '%s' now (allocator, BLAS or framework changed); new results "
                    "go to the new device [%s], results stored under the old one stay as they "
                    "are",
                    threads, threads == 1 ? "" : "s", strchr(old, ' ') ? strchr(old, ' ') + 1 : old,
                    ctx->name, ctx->uuid);
    char tmp[1300];
    snprintf(tmp, sizeof tmp, "%s.%d", path, (int)getpid());
    f = fopen(tmp, "w");
    if (!f)
        return;
    fprintf(f, "%s\n", now);
    if (fclose(f) == 0)
        rename(tmp, path);
    else
        remove(tmp);
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
    ctx->bmm_product_ms = -1; /* measured when a split bmm first needs it */
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
    s_environment(ctx);
    char routing[64];
    s_routing(ctx, routing, sizeof routing);
    /* Cold operands are another device; warm ones keep the name and uuid
     * they always had. */
    ctx->cold = tc_operands_get() == TC_OPERANDS_COLD;
    ctx->cache_bytes = tc_operands_cache_bytes();
    snprintf(ctx->name, sizeof ctx->name, "%s (%u thread%s) [%s | %s | %s%s%s%s]", model, threads,
             threads == 1 ? "" : "s", ctx->allocator, ctx->blas_name, ctx->framework,
             ctx->rule->verified ? "" : " routing ", ctx->rule->verified ? "" : "unverified",
             ctx->cold ? " | cold operands" : "");
    char key[1024];
    snprintf(key, sizeof key, "%s\n%s\n%u\n%s\n%s\n%s\n%s%s", ctx->host, model, threads,
             ctx->allocator, ctx->blas_name, ctx->framework, routing,
             ctx->cold ? "\ncold operands" : "");
    snprintf(ctx->uuid, sizeof ctx->uuid, "cpu-%016llx%016llx",
             (unsigned long long)s_hash(key, 0xcbf29ce484222325ull),
             (unsigned long long)s_hash(key, 0x84222325cbf29ce4ull));
    s_note_change(ctx, model, threads);
    const dnnl_version_t *v = dnnl_version();
    snprintf(ctx->library_version, sizeof ctx->library_version, "%d.%d.%d", v->major, v->minor,
             v->patch);
    snprintf(ctx->runtime_version, sizeof ctx->runtime_version, "%s %d, isa %s, routing %s",
             s_runtime_name(v->cpu_runtime), _OPENMP,
             s_isa_name(dnnl_get_effective_cpu_isa()), routing);
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

static void s_env(void *p, tc_device_env_t *out)
{
    tc_cpu_ctx_t *ctx = p;
    snprintf(out->allocator, sizeof out->allocator, "%s", ctx->allocator);
    snprintf(out->blas, sizeof out->blas, "%s", ctx->blas_name);
    snprintf(out->framework, sizeof out->framework, "%s", ctx->framework);
    s_routing(ctx, out->routing, sizeof out->routing);
}

const tc_backend_iface_t tc_backend_cpu = {
    .kind = "cpu",
    .library = "onednn",
    .enumerate = s_enumerate,
    .versions = s_versions,
    .open = s_open,
    .close = s_close,
    .describe = s_describe,
    .environment = s_env,
    .plan_create = tc_cpu_plan_create,
    .algo_count = tc_cpu_algo_count,
    .algo = tc_cpu_algo,
    .select = tc_cpu_select,
    .run = tc_cpu_run,
    .read = tc_cpu_read,
    .plan_destroy = tc_cpu_plan_destroy,
    .plan_route = tc_cpu_plan_route,
    .canary = s_canary,
    .matmul_create = tc_cpu_matmul_create,
    .matmul_run = tc_cpu_matmul_run,
    .matmul_read = tc_cpu_matmul_read,
    .matmul_route = tc_cpu_matmul_route,
    .matmul_framework_ms = tc_cpu_matmul_framework_ms,
    .matmul_destroy = tc_cpu_matmul_destroy,
};
