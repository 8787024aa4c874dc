#include "trace_handler.h"

#include "tc_error.h"
#include "tc_log.h"
#include "trace_plan.h"
#include "trace_record.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DEFAULT_WARMUP 3
#define DEFAULT_ITERS 10
#define DEFAULT_REPEATS 3
#define DEFAULT_TIMEOUT_S 1800

struct tc_trace_handler {
    char *runner;
    bool cudnn_benchmark;
    bool keep_results;
};

int tc_trace_handler_new(const tc_job_settings_t *settings, tc_trace_handler_t **out)
{
    *out = NULL;
    Traincast__V1__Policy policy = TRAINCAST__V1__POLICY__POLICY_HEURISTIC;
    if (settings && settings->policy && tc_policy_parse(settings->policy, &policy) < 0)
        return tc_fail(TC_EUSAGE, "--policy: expected heuristic or exhaustive, got '%s'",
                       settings->policy);
    tc_trace_handler_t *self = calloc(1, sizeof *self);
    if (!self)
        return tc_fail(TC_ENOMEM, "out of memory");
    self->cudnn_benchmark = policy == TRAINCAST__V1__POLICY__POLICY_EXHAUSTIVE;
    self->keep_results = settings && settings->keep_results;
    if (settings && settings->runner && !(self->runner = strdup(settings->runner))) {
        tc_trace_handler_destroy(&self);
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

typedef struct {
    tc_job_t *job;
    char name[256]; /* of the results kept in the journal; "": not kept */
} s_sink_t;

static int s_emit(tc_envelope_t *env, void *arg)
{
    s_sink_t *s = arg;
    return *s->name ? tc_job_keep(s->job, s->name, env) : tc_job_emit(s->job, env);
}

static void s_progress(uint64_t done, uint64_t total, const char *what, void *arg)
{
    tc_job_progress(((s_sink_t *)arg)->job, (uint32_t)done, (uint32_t)total, what);
}

static bool s_cancelled(void *arg)
{
    return tc_job_cancelled(((s_sink_t *)arg)->job);
}

/* Resume: what was kept before is marked done in the plan. */
static int s_seen(const tc_envelope_t *env, void *arg)
{
    if (env->body_case == TRAINCAST__V1__ENVELOPE__BODY_TRAIN_TRACE && env->train_trace)
        tc_trace_plan_mark_done(arg, env->train_trace);
    return 0;
}

/* Re-sending the stored traces of items the plan had done before. */
typedef struct {
    tc_job_t *job;
    tc_trace_plan_t *plan;
    bool *held; /* per item: done before this job */
    size_t sent;
} s_resend_t;

static int s_resend(const tc_envelope_t *env, void *arg)
{
    s_resend_t *r = arg;
    const Traincast__V1__TrainTrace *t = env->train_trace;
    if (env->body_case != TRAINCAST__V1__ENVELOPE__BODY_TRAIN_TRACE || !t ||
        (t->status != TRAINCAST__V1__TRACE_STATUS__TRACE_STATUS_OK &&
         t->status != TRAINCAST__V1__TRACE_STATUS__TRACE_STATUS_OOM))
        return 0;
    char key[TC_TRACE_KEY_LEN];
    tc_trace_key(t, key, sizeof key);
    for (size_t i = 0; i < tc_trace_plan_count(r->plan); i++) {
        if (r->held[i] && !strcmp(tc_trace_plan_item(r->plan, i)->key, key)) {
            r->sent++;
            return tc_job_emit_record(r->job, env);
        }
    }
    return 0;
}

/* Mark what the device's kept results hold as done and, for a request
 * from the aggregator, send those traces again. */
static int s_resume(const tc_agent_device_t *dev, tc_trace_plan_t *plan, tc_job_t *job,
                    char *name, size_t size)
{
    tc_job_results_name(name, size, "trace-%s", dev->device ? dev->device->uuid : dev->spec);
    int rc = tc_job_each_kept(job, name, s_seen, plan);
    if (rc < 0)
        return rc;
    size_t n = tc_trace_plan_count(plan), held = 0;
    bool *was = calloc(n + 1, sizeof *was);
    if (!was)
        return tc_fail(TC_ENOMEM, "out of memory");
    for (size_t i = 0; i < n; i++)
        held += was[i] = tc_trace_plan_item(plan, i)->done;
    if (held)
        tc_log_info("%s: %zu of %zu traces were measured before and are skipped", name, held, n);
    if (held && *tc_job_id(job)) {
        s_resend_t r = {.job = job, .plan = plan, .held = was};
        rc = tc_job_each_kept(job, name, s_resend, &r);
        if (rc == 0)
            tc_log_info("%s: %zu trace%s sent again for job %s", name, r.sent,
                        r.sent == 1 ? "" : "s", tc_job_id(job));
    }
    free(was);
    return rc;
}

int tc_trace_handler_run(tc_trace_handler_t *self, const tc_agent_device_t *dev,
                         const Traincast__V1__TraceRequest *req, tc_job_t *job)
{
    const tc_trace_settings_t settings = {
        .device = dev->spec,
        .threads = dev->threads,
        .input_size = req->input_size,
        .cudnn_benchmark = self->cudnn_benchmark,
        .warmup = req->warmup ? req->warmup : DEFAULT_WARMUP,
        .iters = req->iters ? req->iters : DEFAULT_ITERS,
        .repeats = req->repeats ? req->repeats : DEFAULT_REPEATS,
        .timeout_s = DEFAULT_TIMEOUT_S,
        .profile = true,
        .runner = self->runner,
        .agent_id = tc_job_agent_id(job),
    };
    tc_trace_plan_t *plan = NULL;
    s_sink_t ss = {.job = job};
    int rc = tc_trace_plan_new(&settings, req->models, req->n_models, req->batches,
                               req->n_batches, &plan);
    if (rc == 0 && self->keep_results)
        rc = s_resume(dev, plan, job, ss.name, sizeof ss.name);
    size_t measured = 0, failed = 0;
    if (rc == 0) {
        const tc_result_sink_t sink = {.emit = s_emit, .progress = s_progress,
                                       .cancelled = s_cancelled, .arg = &ss};
        rc = tc_trace_plan_run(plan, &sink, &measured, &failed);
    }
    tc_trace_plan_destroy(&plan);
    if (rc == 0 && failed)
        tc_log_warn("trace job: %zu of %zu traces failed (sent with the reason)", failed,
                    measured);
    return rc;
}
