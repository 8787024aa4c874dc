/* The job handlers this build has: the place where the device layer (conv
 * benchmarks) and the trace runner plug into `agent serve` and `agent run`.
 *
 * The devices come from the settings (agent/devices/agent_devices.h): the cpu with
 * --threads threads and every GPU, or the --device one. The Hello announces
 * them; a job from the aggregator names one by uuid; a job from the command
 * line (agent run) runs on each of them in turn. Benchmarks and traces of a
 * device use the same description of it (the cpu with the same thread
 * count), so they meet in one device row of the store.
 *
 * Each entry of tc_job_handlers_t left NULL makes the matching job fail with
 * a message saying this build lacks it; nothing is faked. */
#include "jobs.h"

#include "agent_devices.h"
#include "bench_jobs.h"
#include "tc_error.h"
#include "trace_handler.h"

#include <stdlib.h>
#include <string.h>

typedef struct {
    tc_agent_devices_t *devices;
    tc_bench_jobs_t *bench;
    tc_trace_handler_t *trace;
} s_ctx_t;

static int s_devices(void *ctx, Traincast__V1__Device *const **devices, size_t *n)
{
    tc_agent_devices_described(((s_ctx_t *)ctx)->devices, devices, n);
    return 0;
}

/* The devices a job runs on: the one its request names, or (a job from the
 * command line without one) all of them. *out is malloc'ed. */
static int s_targets(s_ctx_t *c, const char *uuid, const char *what,
                     const tc_agent_device_t ***out, size_t *n_out)
{
    *n_out = 0;
    size_t n = tc_agent_devices_count(c->devices);
    if (!(*out = calloc(n + 1, sizeof **out)))
        return tc_fail(TC_ENOMEM, "out of memory");
    if (uuid && *uuid) {
        int rc = tc_agent_devices_find(c->devices, uuid, what, &(*out)[0]);
        *n_out = rc == 0;
        return rc;
    }
    for (size_t i = 0; i < n; i++)
        (*out)[(*n_out)++] = tc_agent_devices_get(c->devices, i);
    return 0;
}

static int s_bench(void *ctx, const Traincast__V1__BenchRequest *req, tc_job_t *job)
{
    s_ctx_t *c = ctx;
    const tc_agent_device_t *dev = NULL;
    size_t n = tc_agent_devices_count(c->devices);
    if (req->device_uuid && *req->device_uuid) {
        int rc = tc_agent_devices_find(c->devices, req->device_uuid, "benchmarks", &dev);
        if (rc < 0)
            return rc;
    } else if (n == 1) {
        dev = tc_agent_devices_get(c->devices, 0);
    } else {
        return tc_fail(TC_EINVAL, "a conv benchmark request must name its device (this agent "
                                  "has %zu)", n);
    }
    return tc_bench_jobs_request(c->bench, dev, req, job);
}

static int s_bench_models(void *ctx, const Traincast__V1__TraceRequest *req, tc_job_t *job)
{
    s_ctx_t *c = ctx;
    const tc_agent_device_t **devs = NULL;
    size_t n = 0;
    int rc = s_targets(c, req->device_uuid, "benchmarks", &devs, &n);
    if (rc == 0)
        rc = tc_bench_jobs_models(c->bench, devs, n, req, job);
    free(devs);
    return rc;
}

static int s_trace(void *ctx, const Traincast__V1__TraceRequest *req, tc_job_t *job)
{
    s_ctx_t *c = ctx;
    const tc_agent_device_t **devs = NULL;
    size_t n = 0;
    int rc = s_targets(c, req->device_uuid, "traces", &devs, &n);
    for (size_t i = 0; i < n && rc == 0; i++)
        rc = tc_trace_handler_run(c->trace, devs[i], req, job);
    free(devs);
    return rc;
}

static void s_destroy(void *ctx)
{
    s_ctx_t *c = ctx;
    if (!c)
        return;
    tc_trace_handler_destroy(&c->trace);
    tc_bench_jobs_destroy(&c->bench);
    tc_agent_devices_destroy(&c->devices);
    free(c);
}

int tc_job_handlers_builtin(const tc_job_settings_t *settings, tc_job_handlers_t *out)
{
    memset(out, 0, sizeof *out);
    const tc_job_settings_t none = {0};
    if (!settings)
        settings = &none;
    s_ctx_t *c = calloc(1, sizeof *c);
    if (!c)
        return tc_fail(TC_ENOMEM, "out of memory");
    int rc = tc_bench_jobs_new(settings, &c->bench);
    if (rc == 0)
        rc = tc_trace_handler_new(settings, &c->trace);
    if (rc == 0)
        rc = tc_agent_devices_new(settings->device, settings->threads, &c->devices);
    if (rc < 0) {
        s_destroy(c);
        return rc;
    }
    out->ctx = c;
    out->devices = s_devices;
    out->bench = s_bench;
    out->bench_models = s_bench_models;
    out->trace = s_trace;
    out->destroy = s_destroy;
    return 0;
}
