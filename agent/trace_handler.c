#include "trace_handler.h"

#include "tc_error.h"
#include "tc_log.h"
#include "trace_device.h"
#include "trace_plan.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DEFAULT_WARMUP 3
#define DEFAULT_ITERS 10
#define DEFAULT_REPEATS 3
#define DEFAULT_TIMEOUT_S 1800

struct tc_trace_handler {
    char device[32];
    char *runner;
};

int tc_trace_handler_new(const tc_job_settings_t *settings, tc_trace_handler_t **out)
{
    *out = NULL;
    const char *device = settings && settings->device ? settings->device : "cpu";
    Traincast__V1__DeviceKind kind;
    uint32_t index;
    int rc = tc_trace_device_parse(device, &kind, &index);
    if (rc < 0)
        return rc;
    tc_trace_handler_t *self = calloc(1, sizeof *self);
    if (!self)
        return tc_fail(TC_ENOMEM, "out of memory");
    snprintf(self->device, sizeof self->device, "%s", device);
    if (settings && settings->runner && !(self->runner = strdup(settings->runner))) {
        free(self);
        return tc_fail(TC_ENOMEM, "out of memory");
    }
    *out = self;
    return 0;
}

void tc_trace_handler_destroy(tc_trace_handler_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    free((*self_p)->runner);
    free(*self_p);
    *self_p = NULL;
}

static int s_emit(tc_envelope_t *env, void *arg)
{
    return tc_job_emit(arg, env);
}

static void s_progress(uint64_t done, uint64_t total, const char *what, void *arg)
{
    tc_job_progress(arg, (uint32_t)done, (uint32_t)total, what);
}

static bool s_cancelled(void *arg)
{
    return tc_job_cancelled(arg);
}

/* A request names the device by uuid; it must be the one traced here (the
 * CPU with all its threads, or the GPU of --device). */
static int s_check_device(const tc_trace_handler_t *self, const char *uuid)
{
    if (!uuid || !*uuid)
        return 0;
    tc_trace_device_t dev;
    int rc = tc_trace_device_describe(self->device, 0, &dev);
    if (rc < 0)
        return rc;
    if (strcmp(dev.uuid, uuid) != 0)
        return tc_fail(TC_ENODEV, "the trace request is for device %s, but this agent traces "
                                  "%s (%s)", uuid, dev.name, dev.uuid);
    return 0;
}

int tc_trace_handler_run(tc_trace_handler_t *self, const Traincast__V1__TraceRequest *req,
                         tc_job_t *job)
{
    int rc = s_check_device(self, req->device_uuid);
    if (rc < 0)
        return rc;
    const tc_trace_settings_t settings = {
        .device = self->device,
        .input_size = req->input_size,
        .warmup = req->warmup ? req->warmup : DEFAULT_WARMUP,
        .iters = req->iters ? req->iters : DEFAULT_ITERS,
        .repeats = req->repeats ? req->repeats : DEFAULT_REPEATS,
        .timeout_s = DEFAULT_TIMEOUT_S,
        .profile = true,
        .runner = self->runner,
    };
    tc_trace_plan_t *plan = NULL;
    rc = tc_trace_plan_new(&settings, req->models, req->n_models, req->batches, req->n_batches,
                           &plan);
    if (rc < 0)
        return rc;
    const tc_trace_sink_t sink = {.emit = s_emit, .progress = s_progress,
                                  .cancelled = s_cancelled, .arg = job};
    size_t measured = 0, failed = 0;
    rc = tc_trace_plan_run(plan, &sink, &measured, &failed);
    tc_trace_plan_destroy(&plan);
    if (rc == 0 && failed)
        tc_log_warn("trace job: %zu of %zu traces failed (sent with the reason)", failed,
                    measured);
    return rc;
}
