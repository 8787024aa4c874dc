/* The cuda backend of the CPU-only agent (agent/cpu/agent, the
 * traincast-agent-cpu package) and of a build without the CUDA toolkit or
 * cuDNN (or with TRAINCAST_CUDA=OFF): it lists no devices and says why. */
#include "device.h"

#include "tc_error.h"

#include <stdio.h>

#define S_WHY                                                                                      \
    "this agent was built without CUDA (the CPU-only agent of traincast-agent-cpu, or a build "    \
    "where the CUDA toolkit and cuDNN were not found, or TRAINCAST_CUDA=OFF); the "                \
    "traincast-agent package, or a build where they are installed, benchmarks NVIDIA GPUs"

static int s_enumerate(unsigned *count, char *why, size_t why_size)
{
    *count = 0;
    if (why_size)
        snprintf(why, why_size, "%s", S_WHY);
    return 0;
}

static void s_versions(char *buf, size_t size)
{
    snprintf(buf, size, "cuDNN: not built (this agent was built without CUDA)");
}

static int s_open(unsigned index, unsigned threads, void **ctx)
{
    *ctx = NULL;
    return tc_fail(TC_EUNSUPPORTED, "cuda:%u: %s", index, S_WHY);
}

static void s_close(void *ctx) {}

static int s_describe(void *ctx, Traincast__V1__Device *out)
{
    return tc_fail(TC_EUNSUPPORTED, "%s", S_WHY);
}

static int s_plan_create(void *ctx, const tc_conv_spec_t *spec, void **plan)
{
    *plan = NULL;
    return tc_fail(TC_EUNSUPPORTED, "%s", S_WHY);
}

static size_t s_algo_count(void *plan) { return 0; }
static const tc_algo_t *s_algo(void *plan, size_t i) { return NULL; }
static int s_select(void *plan, size_t i) { return tc_fail(TC_EUNSUPPORTED, "%s", S_WHY); }
static int s_run(void *plan, double *ms) { return tc_fail(TC_EUNSUPPORTED, "%s", S_WHY); }

static int s_read(void *plan, tc_tensor_t t, float *out, size_t count)
{
    return tc_fail(TC_EUNSUPPORTED, "%s", S_WHY);
}

static void s_plan_destroy(void *plan) {}

const tc_backend_iface_t tc_backend_cuda = {
    .kind = "cuda",
    .library = "cudnn",
    .enumerate = s_enumerate,
    .versions = s_versions,
    .open = s_open,
    .close = s_close,
    .describe = s_describe,
    .plan_create = s_plan_create,
    .algo_count = s_algo_count,
    .algo = s_algo,
    .select = s_select,
    .run = s_run,
    .read = s_read,
    .plan_destroy = s_plan_destroy,
};
