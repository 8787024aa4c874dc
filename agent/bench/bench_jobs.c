#include "bench_jobs.h"

#include "bench_opts.h"
#include "bench_run.h"
#include "planner.h"
#include "tc_error.h"
#include "tc_log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define S_SEED 1 /* the input data of `agent bench` (its --seed default) */

struct tc_bench_jobs {
    tc_bench_settings_t set;
    bool keep_results; /* in the journal, by device and policy; resumed */
    unsigned results_per_message;
};

/* One device's share of a job. */
typedef struct {
    const tc_agent_device_t *ad;
    Traincast__V1__Policy policy;
    tc_bench_item_t *items; /* to measure */
    size_t n_items;
    size_t held;            /* items measured before */
    tc_bench_held_t *unchecked; /* of them, those the plan's end has yet to check */
    size_t n_unchecked;
    char name[256];         /* of its results in the journal; "": not kept */
} s_task_t;

int tc_bench_jobs_new(const tc_job_settings_t *settings, tc_bench_jobs_t **out)
{
    *out = NULL;
    tc_bench_flags_t f = {.device = settings->device,
                          .threads = settings->threads,
                          .policy = settings->policy,
                          .budget_ms = settings->budget_ms,
                          .max_reps = settings->max_reps};
    tc_bench_jobs_t *self = calloc(1, sizeof *self);
    if (!self)
        return tc_fail(TC_ENOMEM, "out of memory");
    self->results_per_message = settings->results_per_message;
    int rc = tc_bench_settings(&f, &self->set);
    self->keep_results = settings->keep_results;
    if (rc < 0) {
        tc_bench_jobs_destroy(&self);
        return rc;
    }
    *out = self;
    return 0;
}

void tc_bench_jobs_destroy(tc_bench_jobs_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    free(*self_p);
    *self_p = NULL;
}

Traincast__V1__Policy tc_bench_jobs_policy(const tc_bench_jobs_t *self)
{
    return self->set.policy;
}

/* ---- re-sending what a request asks for and was measured before ---- */

typedef struct {
    tc_job_t *job;
    const char *uuid;
    Traincast__V1__Policy policy;
    const tc_bench_item_t *asked;
    size_t n_asked;
    size_t sent;
} s_resend_t;

/* Whether a kept result (of the list of its kind) is one the request asks
 * for. */
static bool s_asked(const s_resend_t *r, const Traincast__V1__ConvResult *res, bool matmul)
{
    if ((matmul ? !res->matmul : !res->config) || res->policy != r->policy)
        return false;
    tc_bench_item_t it = {.kind = matmul ? TC_OP_MATMUL : TC_OP_CONV};
    if (matmul)
        tc_matmul_config_from_proto(res->matmul, &it.matmul);
    else
        tc_conv_config_from_proto(res->config, &it.config);
    for (size_t i = 0; i < r->n_asked; i++) {
        const tc_bench_item_t *a = &r->asked[i];
        if (a->kind != it.kind || a->direction != res->direction)
            continue;
        if (matmul ? tc_matmul_config_cmp(&a->matmul, &it.matmul) == 0
                   : tc_conv_config_cmp(&a->config, &it.config) == 0)
            return true;
    }
    return false;
}

static int s_resend_record(const tc_envelope_t *env, void *arg)
{
    s_resend_t *r = arg;
    const Traincast__V1__ConvResults *cr = env->conv_results;
    if (env->body_case != TRAINCAST__V1__ENVELOPE__BODY_CONV_RESULTS || !cr || !cr->device ||
        !cr->device->uuid || strcmp(cr->device->uuid, r->uuid) != 0)
        return 0;
    for (size_t i = 0; i < cr->n_results + cr->n_matmul_results; i++) {
        bool matmul = i >= cr->n_results;
        const Traincast__V1__ConvResult *res =
            matmul ? cr->matmul_results[i - cr->n_results] : cr->results[i];
        if (res && s_asked(r, res, matmul)) {
            r->sent++;
            return tc_job_emit_record(r->job, env);
        }
    }
    return 0;
}

/* ---- planning and running one device's share ---- */

/* The results a job kept under a name, as a source of records. */
typedef struct {
    tc_job_t *job;
    const char *name;
} s_kept_t;

static int s_kept_each(void *src, tc_resultfile_fn fn, void *arg)
{
    s_kept_t *k = src;
    return tc_job_each_kept(k->job, k->name, fn, arg);
}

static int s_prepare(tc_bench_jobs_t *self, s_task_t *t, const tc_bench_item_t *items,
                     size_t n_items, bool resend, tc_job_t *job)
{
    const tc_agent_device_t *ad = t->ad;
    if (!ad->device)
        return tc_fail(TC_EUNSUPPORTED, "cannot benchmark convs on %s: %s", ad->spec, ad->why);
    t->items = malloc((n_items ? n_items : 1) * sizeof *t->items);
    if (!t->items)
        return tc_fail(TC_ENOMEM, "out of memory");
    memcpy(t->items, items, n_items * sizeof *items);
    t->n_items = n_items;
    if (!self->keep_results)
        return 0;
    tc_job_results_name(t->name, sizeof t->name, "bench-%s-%s", ad->device->uuid,
                        tc_policy_name(t->policy));
    s_kept_t kept = {.job = job, .name = t->name};
    tc_resume_t *resume = NULL;
    int rc = tc_resume_collect(s_kept_each, &kept, ad->device->uuid, t->policy, &resume);
    if (rc < 0)
        return rc;
    rc = tc_resume_held(resume, t->items, t->n_items, &t->unchecked, &t->n_unchecked);
    t->held = tc_resume_filter(resume, t->items, &t->n_items);
    tc_resume_destroy(&resume);
    if (rc < 0)
        return rc;
    if (resend && t->held) {
        s_resend_t r = {.job = job, .uuid = ad->device->uuid, .policy = t->policy,
                        .asked = items, .n_asked = n_items};
        if ((rc = tc_job_each_kept(job, t->name, s_resend_record, &r)) < 0)
            return tc_err_context(rc, "sending the results of %s again", t->name);
        tc_log_info("%s: %zu of the requested results were measured before; sent again",
                    t->name, r.sent);
    }
    return 0;
}

typedef struct {
    tc_job_t *job;
    const char *name; /* of the results kept; "" delivers only */
    size_t base, total;
} s_sink_t;

static int s_emit(tc_envelope_t *env, void *arg)
{
    s_sink_t *s = arg;
    return tc_job_keep(s->job, s->name, env);
}

static void s_progress(uint64_t done, uint64_t total, const char *what, void *arg)
{
    (void)total;
    s_sink_t *s = arg;
    tc_job_progress(s->job, (uint32_t)(s->base + done), (uint32_t)s->total, what);
}

static bool s_cancelled(void *arg)
{
    return tc_job_cancelled(((s_sink_t *)arg)->job);
}

static int s_run(tc_bench_jobs_t *self, s_task_t *t, size_t base, size_t total, tc_job_t *job)
{
    const tc_agent_device_t *ad = t->ad;
    if (t->n_items == 0 && t->n_unchecked == 0) {
        tc_log_info("%s: nothing to measure (%zu item%s measured before)", ad->device->name,
                    t->held, t->held == 1 ? "" : "s");
        return 0;
    }
    tc_device_t *dev = NULL;
    int rc = tc_device_open(ad->spec, ad->threads, &dev);
    if (rc < 0)
        return rc;
    tc_log_info("%s [%s]: measuring %zu benchmark item%s (policy %s; %zu measured before, %zu "
                "of them to check at the plan's end)",
                ad->device->name, ad->device->uuid, t->n_items, t->n_items == 1 ? "" : "s",
                tc_policy_name(t->policy), t->held, t->n_unchecked);
    tc_bench_run_opts_t ro = {.policy = t->policy,
                              .workspace_limit = self->set.workspace_limit,
                              .measure = self->set.measure,
                              .seed = S_SEED,
                              .agent_id = tc_job_agent_id(job),
                              .batch_results = self->results_per_message,
                              .held = t->unchecked,
                              .n_held = t->n_unchecked};
    s_sink_t ss = {.job = job, .name = t->name, .base = base, .total = total};
    const tc_result_sink_t sink = {.emit = s_emit, .progress = s_progress,
                                   .cancelled = s_cancelled, .arg = &ss};
    tc_bench_report_t rep;
    rc = tc_bench_run_sink(dev, t->items, t->n_items, &ro, &sink, &rep);
    tc_device_close(&dev);
    if (rc < 0)
        return rc;
    tc_log_info("%s: %zu item%s measured in %.1f s, %.1f repetitions each", ad->device->name,
                rep.measured, rep.measured == 1 ? "" : "s", rep.elapsed_s,
                rep.measured ? (double)rep.repetitions / (double)rep.measured : 0.0);
    if (rep.failed)
        return tc_fail(TC_ELIB, "%zu of %zu benchmark items could not be measured on %s (warnings "
                                "in the agent's log); the same job again retries them",
                       rep.failed, t->n_items, ad->device->name);
    return 0;
}

/* Prepare every task, then run them with one progress count. */
static int s_run_tasks(tc_bench_jobs_t *self, s_task_t *tasks, size_t n,
                       const tc_bench_item_t *items, size_t n_items, bool resend, tc_job_t *job)
{
    int rc = 0;
    size_t total = 0, base = 0;
    for (size_t i = 0; i < n && rc == 0; i++) {
        rc = s_prepare(self, &tasks[i], items, n_items, resend, job);
        total += tasks[i].n_items;
    }
    for (size_t i = 0; i < n && rc == 0; i++) {
        rc = s_run(self, &tasks[i], base, total, job);
        base += tasks[i].n_items;
    }
    for (size_t i = 0; i < n; i++) {
        free(tasks[i].items);
        free(tasks[i].unchecked);
    }
    return rc;
}

/* The batch of an item of either kind. */
static uint32_t s_item_batch(const tc_bench_item_t *it)
{
    return it->kind == TC_OP_MATMUL ? it->matmul.minibatch : it->config.n;
}

/* By batch, then kind (convs first), config and direction: the planner's
 * order. */
static int s_item_cmp(const void *a, const void *b)
{
    const tc_bench_item_t *x = a, *y = b;
    uint32_t bx = s_item_batch(x), by = s_item_batch(y);
    if (bx != by)
        return bx < by ? -1 : 1;
    if (x->kind != y->kind)
        return x->kind < y->kind ? -1 : 1;
    int c = x->kind == TC_OP_MATMUL ? tc_matmul_config_cmp(&x->matmul, &y->matmul)
                                    : tc_conv_config_cmp(&x->config, &y->config);
    if (c)
        return c;
    return (int)x->direction - (int)y->direction;
}

/* Whether the backend of a device benchmarks matmuls (it has the device
 * interface's matmul functions); *kind names the backend. */
static bool s_times_matmuls(const tc_agent_device_t *ad, const char **kind)
{
    const tc_backend_iface_t *iface = NULL;
    unsigned index = 0;
    *kind = ad->spec;
    if (tc_device_parse(ad->spec, &iface, &index) < 0 || !iface)
        return false;
    *kind = iface->kind;
    return iface->matmul_create != NULL;
}

int tc_bench_jobs_request(tc_bench_jobs_t *self, const tc_agent_device_t *dev,
                          const Traincast__V1__BenchRequest *req, tc_job_t *job)
{
    Traincast__V1__Direction dirs[3];
    size_t n_dirs = 0;
    if (req->n_directions == 0) {
        tc_parse_directions("all", dirs, &n_dirs);
    } else {
        for (size_t i = 0; i < req->n_directions && n_dirs < 3; i++) {
            Traincast__V1__Direction d = req->directions[i];
            if (d < TRAINCAST__V1__DIRECTION__DIRECTION_FWD ||
                d > TRAINCAST__V1__DIRECTION__DIRECTION_BWD_FILTER)
                return tc_fail(TC_EINVAL, "bench_request.directions[%zu]: unknown direction %d",
                               i, (int)d);
            bool dup = false;
            for (size_t k = 0; k < n_dirs; k++)
                dup |= dirs[k] == d;
            if (!dup)
                dirs[n_dirs++] = d;
        }
    }
    /* Matmuls on a backend that times none are not measured (nor dropped
     * silently): the convs run, then the job fails saying so. */
    const char *backend = NULL;
    bool matmuls = req->n_matmuls && s_times_matmuls(dev, &backend);
    size_t n_mm = matmuls ? req->n_matmuls : 0;
    size_t n = (req->n_configs + n_mm) * n_dirs, k = 0;
    tc_bench_item_t *items = calloc(n ? n : 1, sizeof *items);
    if (!items)
        return tc_fail(TC_ENOMEM, "out of memory for %zu benchmark items", n);
    for (size_t i = 0; i < req->n_configs + n_mm; i++) {
        for (size_t d = 0; d < n_dirs; d++) {
            tc_bench_item_t *it = &items[k++];
            if (i < req->n_configs) {
                tc_conv_config_from_proto(req->configs[i], &it->config);
            } else {
                it->kind = TC_OP_MATMUL;
                tc_matmul_config_from_proto(req->matmuls[i - req->n_configs], &it->matmul);
            }
            it->direction = dirs[d];
            it->layers = 1;
        }
    }
    /* A config asked for twice is measured once. */
    qsort(items, n, sizeof *items, s_item_cmp);
    size_t u = 0;
    for (size_t i = 0; i < n; i++) {
        if (u == 0 || s_item_cmp(&items[u - 1], &items[i]) != 0)
            items[u++] = items[i];
    }
    s_task_t task = {.ad = dev,
                     .policy = req->policy != TRAINCAST__V1__POLICY__POLICY_UNSPECIFIED
                                   ? req->policy
                                   : self->set.policy};
    int rc = u ? s_run_tasks(self, &task, 1, items, u, true, job) : 0;
    free(items);
    if (rc == 0 && req->n_matmuls && !matmuls) {
        size_t asked = req->n_matmuls * n_dirs;
        rc = tc_fail(TC_EUNSUPPORTED,
                     "%zu matmul item%s (%zu config%s) of this request cannot be measured on %s: "
                     "its %s backend benchmarks no matmuls%s",
                     asked, asked == 1 ? "" : "s", req->n_matmuls, req->n_matmuls == 1 ? "" : "s",
                     dev->device ? dev->device->name : dev->spec, backend,
                     req->n_configs ? "; its conv items were measured" : "");
    }
    return rc;
}

int tc_bench_jobs_models(tc_bench_jobs_t *self, const tc_agent_device_t *const *devs, size_t n,
                         const Traincast__V1__TraceRequest *req, tc_job_t *job)
{
    tc_planner_t *planner = tc_planner_new();
    unsigned long *batches = calloc(req->n_batches + 1, sizeof *batches);
    s_task_t *tasks = calloc(n + 1, sizeof *tasks);
    tc_bench_item_t *items = NULL;
    size_t n_items = 0;
    int rc = 0;
    if (!planner || !batches || !tasks)
        TC_FAIL_GOTO(TC_ENOMEM, "out of memory");
    if (req->n_models == 0 || req->n_batches == 0)
        TC_FAIL_GOTO(TC_EINVAL, "nothing to benchmark: no models or no batch sizes");
    for (size_t i = 0; i < req->n_batches; i++)
        batches[i] = req->batches[i];
    TC_TRY(tc_planner_add_models(planner, req->models, req->n_models, req->input_size));
    Traincast__V1__Direction dirs[3];
    size_t n_dirs = 0;
    tc_parse_directions("all", dirs, &n_dirs);
    tc_plan_stats_t st;
    TC_TRY(tc_planner_build(planner, batches, req->n_batches, self->set.dtype, self->set.layout,
                            dirs, n_dirs, &items, &n_items, &st));
    tc_log_info("conv plan: %zu model%s, %llu conv layers, %zu batch size%s: %zu unique "
                "items (%zu configs) per device",
                st.models, st.models == 1 ? "" : "s", (unsigned long long)st.conv_layers,
                st.batches, st.batches == 1 ? "" : "s", st.items, st.unique_configs);
    for (size_t i = 0; i < n; i++) {
        tasks[i].ad = devs[i];
        tasks[i].policy = self->set.policy;
    }
    rc = s_run_tasks(self, tasks, n, items, n_items, false, job);
err:
    free(items);
    free(tasks);
    free(batches);
    tc_planner_destroy(&planner);
    return rc;
}
