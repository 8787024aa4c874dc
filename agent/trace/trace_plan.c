#include "trace_plan.h"

#include "agent_id.h"
#include "hostinfo.h"
#include "tc_error.h"
#include "tc_log.h"
#include "tc_model.h"
#include "tc_paths.h"
#include "trace_device.h"
#include "trace_graph.h"
#include "trace_record.h"
#include "trace_run.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    char *spec;               /* as given */
    const char *runner_model; /* points into spec */
    uint32_t input_size;
    char model_id[256];
    Traincast__V1__ModelGraph *graph;
} s_model_t;

struct tc_trace_plan {
    /* Settings, with copies of their strings. */
    char device[32], dtype[16], amp[16], optimizer[256], agent_id[256];
    char *runner;
    Traincast__V1__DeviceKind kind;
    uint32_t index, threads;
    tc_trace_device_t dev;
    bool dev_known; /* else a GPU described by the runner's header */
    char fw_version[64]; /* the framework version the device measures with */
    tc_trace_job_t job;
    char *runner_argv[6];
    char script[1200], runner_label[1100];
    s_model_t *models;
    size_t n_models;
    tc_trace_item_t *items;
    size_t n_items;
};

static int s_check(const tc_trace_settings_t *s)
{
    const char *dtype = s->dtype ? s->dtype : "fp32";
    const char *amp = s->amp ? s->amp : "";
    Traincast__V1__DType dt;
    if (tc_dtype_parse(dtype, &dt) < 0)
        return tc_fail(TC_EINVAL, "dtype: expected fp32, tf32, fp16 or bf16, got '%s'", dtype);
    if (strcmp(amp, "") && strcmp(amp, "fp16") && strcmp(amp, "bf16"))
        return tc_fail(TC_EINVAL, "amp: expected fp16 or bf16 (or none), got '%s'", amp);
    if (s->iters < 1 || s->iters > 10000 || s->warmup > 10000)
        return tc_fail(TC_EINVAL, "iters must be 1..10000 and warmup 0..10000 (got %u, %u)",
                       s->iters, s->warmup);
    if (s->repeats < 1 || s->repeats > 1000)
        return tc_fail(TC_EINVAL, "repeat must be 1..1000 (got %u)", s->repeats);
    if (!(s->timeout_s > 0))
        return tc_fail(TC_EINVAL, "timeout must be a number of seconds > 0");
    if (s->threads > 4096)
        return tc_fail(TC_EINVAL, "threads must be at most 4096 (got %u)", s->threads);
    if (s->input_size > 8192)
        return tc_fail(TC_EINVAL, "input size must be at most 8192 (got %u)", s->input_size);
    if (s->runner && (!*s->runner || strlen(s->runner) > 1000))
        return tc_fail(TC_EINVAL, "the runner must be a command of 1 to 1000 characters");
    if (s->optimizer && (!*s->optimizer || strlen(s->optimizer) > 200))
        return tc_fail(TC_EINVAL, "the optimizer must be 1 to 200 characters (e.g. sgd or "
                                  "sgd,momentum=0.9)");
    return 0;
}

/* The runner's command words: the built-in PyTorch harness, or a command
 * run by /bin/sh with the agent's flags as its arguments. */
static void s_runner_argv(tc_trace_plan_t *p)
{
    if (p->runner) {
        snprintf(p->script, sizeof p->script, "%s \"$@\"", p->runner);
        p->runner_argv[0] = "/bin/sh", p->runner_argv[1] = "-c";
        p->runner_argv[2] = p->script, p->runner_argv[3] = "traincast-runner";
        p->runner_argv[4] = NULL;
        snprintf(p->runner_label, sizeof p->runner_label, "%s", p->runner);
        return;
    }
    const char *py = getenv("TRAINCAST_PYTHON");
    char dir[1024];
    snprintf(p->script, sizeof p->script, "%s/trace_runner.py",
             tc_resource_dir(TC_DIR_HARNESS, dir, sizeof dir));
    p->runner_argv[0] = (char *)(py && *py ? py : "/usr/bin/python3");
    p->runner_argv[1] = p->script;
    p->runner_argv[2] = NULL;
    snprintf(p->runner_label, sizeof p->runner_label,
             "traincast pytorch harness (trace_runner.py)");
}

/* A model's id, and its graph unless no_graph. */
static int s_model(const tc_trace_settings_t *s, s_model_t *m, const char *spec)
{
    if (!(m->spec = strdup(spec)))
        return tc_fail(TC_ENOMEM, "out of memory");
    m->runner_model = tc_trace_runner_model(m->spec);
    m->input_size = s->input_size ? s->input_size : tc_trace_default_input(m->runner_model);
    if (s->no_graph && tc_model_spec_is_file(spec))
        return tc_fail(TC_EUSAGE, "model %s: a model from a file is identified by its graph; "
                                  "trace it with its graph", spec);
    if (s->no_graph) {
        tc_trace_model_id(m->runner_model, m->input_size, m->model_id, sizeof m->model_id);
        return 0;
    }
    return tc_trace_graph_load(spec, m->input_size, &m->graph, m->model_id, sizeof m->model_id);
}

int tc_trace_plan_new(const tc_trace_settings_t *s, char *const *models, size_t n_models,
                      const uint32_t *batches, size_t n_batches, tc_trace_plan_t **out)
{
    *out = NULL;
    int rc = s_check(s);
    if (rc < 0)
        return rc;
    tc_trace_plan_t *p = calloc(1, sizeof *p);
    if (!p)
        return tc_fail(TC_ENOMEM, "out of memory");
    TC_TRY(tc_trace_device_parse(s->device ? s->device : "cpu", &p->kind, &p->index));
    bool cpu = p->kind == TRAINCAST__V1__DEVICE_KIND__DEVICE_KIND_CPU;
    p->threads = cpu ? (s->threads ? s->threads : tc_cpu_logical()) : 0;
    snprintf(p->device, sizeof p->device, cpu ? "cpu" : "cuda:%u", p->index);
    /* The device layer's identity, as the conv benchmarks record it. */
    rc = tc_trace_device_describe(p->device, p->threads, &p->dev);
    if (rc < 0 && (cpu || rc != TC_EUNSUPPORTED))
        goto err; /* no such device: nothing could train on it */
    p->dev_known = rc == 0;
    /* "pytorch 1.13.0a0": the runner must report that version. */
    if (p->dev_known && !strncmp(p->dev.env.framework, "pytorch ", 8))
        snprintf(p->fw_version, sizeof p->fw_version, "%s", p->dev.env.framework + 8);
    if (rc < 0)
        tc_log_warn("%s; the traces record the GPU as the runner describes it", tc_errmsg());
    rc = 0;
    snprintf(p->dtype, sizeof p->dtype, "%s", s->dtype ? s->dtype : "fp32");
    snprintf(p->amp, sizeof p->amp, "%s", s->amp ? s->amp : "");
    snprintf(p->optimizer, sizeof p->optimizer, "%s", s->optimizer ? s->optimizer : "sgd");
    if (s->agent_id && *s->agent_id)
        snprintf(p->agent_id, sizeof p->agent_id, "%s", s->agent_id);
    else
        tc_agent_id(NULL, NULL, p->agent_id, sizeof p->agent_id); /* the machine's on error */
    if (s->runner && !(p->runner = strdup(s->runner)))
        TC_FAIL_GOTO(TC_ENOMEM, "out of memory");
    s_runner_argv(p);
    p->job = (tc_trace_job_t){
        .runner = p->runner_argv,
        .req = {.device = p->device, .threads = p->threads, .dtype = p->dtype, .amp = p->amp,
                .optimizer = p->optimizer, .cudnn_benchmark = s->cudnn_benchmark,
                .warmup = s->warmup, .iters = s->iters,
                .allocator = p->dev_known && *p->dev.env.allocator ? p->dev.env.allocator : NULL,
                .blas = p->dev_known && *p->dev.env.blas ? p->dev.env.blas : NULL,
                .framework_version = p->fw_version[0] ? p->fw_version : NULL},
        .repeats = s->repeats,
        .timeout_s = s->timeout_s,
        .profile = s->profile,
        .quiet = tc_quiet_get(),
    };

    p->models = calloc(n_models + 1, sizeof *p->models);
    p->items = calloc(n_models * n_batches + 1, sizeof *p->items);
    if (!p->models || !p->items)
        TC_FAIL_GOTO(TC_ENOMEM, "out of memory");
    /* Every model's graph first: a bad name fails before any training. */
    for (size_t m = 0; m < n_models; m++) {
        p->n_models++; /* destroy frees what a failed load left */
        TC_TRY(s_model(s, &p->models[m], models[m]));
    }
    for (size_t m = 0; m < n_models; m++) {
        for (size_t b = 0; b < n_batches; b++) {
            tc_trace_item_t *it = &p->items[p->n_items];
            p->job.req.batch = batches[b];
            tc_trace_plan_key(&p->job, p->models[m].model_id, p->kind, p->index, it->key,
                              sizeof it->key);
            bool dup = false;
            for (size_t i = 0; i < p->n_items && !dup; i++)
                dup = strcmp(p->items[i].key, it->key) == 0;
            if (dup)
                continue; /* the same model named twice */
            it->model = m;
            it->model_id = p->models[m].model_id;
            it->runner_model = p->models[m].runner_model;
            it->batch = batches[b];
            p->n_items++;
        }
    }
    *out = p;
    return 0;
err:
    tc_trace_plan_destroy(&p);
    return rc;
}

void tc_trace_plan_destroy(tc_trace_plan_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    tc_trace_plan_t *p = *self_p;
    for (size_t i = 0; i < p->n_items; i++)
        free(p->items[i].row.repeat_medians);
    for (size_t m = 0; m < p->n_models; m++) {
        free(p->models[m].spec);
        tc_trace_graph_free(&p->models[m].graph);
    }
    free(p->models);
    free(p->items);
    free(p->runner);
    free(p);
    *self_p = NULL;
}

size_t tc_trace_plan_count(const tc_trace_plan_t *self)
{
    return self->n_items;
}

tc_trace_item_t *tc_trace_plan_item(tc_trace_plan_t *self, size_t i)
{
    return i < self->n_items ? &self->items[i] : NULL;
}

/* The median measured iteration of each repeat of a stored trace. */
static void s_repeat_medians(const Traincast__V1__TrainTrace *t, tc_trace_row_t *row)
{
    uint32_t reps = 0;
    for (size_t k = 0; k < t->n_iterations; k++)
        reps = t->iterations[k]->repeat + 1 > reps ? t->iterations[k]->repeat + 1 : reps;
    double *med = calloc(reps + 1, sizeof *med);
    double *tmp = calloc(t->n_iterations + 1, sizeof *tmp);
    if (med && tmp) {
        for (uint32_t r = 0; r < reps; r++) {
            size_t n = 0;
            for (size_t k = 0; k < t->n_iterations; k++) {
                if (t->iterations[k]->repeat == r && !t->iterations[k]->warmup)
                    tmp[n++] = t->iterations[k]->ms;
            }
            med[r] = n ? tc_trace_median(tmp, n) : 0;
        }
        row->repeat_medians = med;
        row->n_repeats = reps;
        med = NULL;
    }
    free(med);
    free(tmp);
}

void tc_trace_plan_mark_done(tc_trace_plan_t *self, const Traincast__V1__TrainTrace *t)
{
    if (t->status != TRAINCAST__V1__TRACE_STATUS__TRACE_STATUS_OK &&
        t->status != TRAINCAST__V1__TRACE_STATUS__TRACE_STATUS_OOM)
        return;
    char key[TC_TRACE_KEY_LEN];
    tc_trace_key(t, key, sizeof key);
    for (size_t i = 0; i < self->n_items; i++) {
        tc_trace_item_t *it = &self->items[i];
        if (strcmp(it->key, key) != 0)
            continue;
        it->done = true;
        free(it->row.repeat_medians);
        it->row = (tc_trace_row_t){.have = true, .status = t->status,
                                   .median_ms = t->median_ms, .spread = t->spread};
        snprintf(it->row.reason, sizeof it->row.reason, "%s", t->reason);
        s_repeat_medians(t, &it->row);
    }
}

typedef struct {
    const tc_result_sink_t *sink;
    uint64_t runs_done, runs_total;
    char label[320];
} s_prog_t;

static void s_on_repeat(uint32_t repeat, void *arg)
{
    s_prog_t *pg = arg;
    char what[400];
    snprintf(what, sizeof what, "%s repeat %u", pg->label, repeat + 1);
    if (pg->sink->progress)
        pg->sink->progress(pg->runs_done, pg->runs_total, what, pg->sink->arg);
    pg->runs_done++;
}

/* Trace item i and emit its result; *disturbed says whether it was taken
 * while the machine was busy. */
static int s_trace_item(tc_trace_plan_t *self, size_t i, const tc_result_sink_t *sink,
                        s_prog_t *pg, bool *disturbed)
{
    tc_trace_job_t *job = &self->job;
    tc_trace_item_t *it = &self->items[i];
    const s_model_t *m = &self->models[it->model];
    tc_trace_result_t result = {0};
    tc_trace_device_t header_dev;
    job->req.model = it->runner_model;
    job->req.batch = it->batch;
    job->req.input_size = m->input_size;
    snprintf(pg->label, sizeof pg->label, "%s batch %u", it->runner_model, it->batch);
    int rc = tc_trace_measure(job, s_on_repeat, pg, &result);
    if (rc < 0)
        goto done;
    if (!self->dev_known)
        tc_trace_device_from_header(self->index, &result.info, &header_dev);
    tc_trace_record_t rec = {.job = job, .model_id = it->model_id,
                             .device = self->dev_known ? &self->dev : &header_dev,
                             .graph = m->graph, .runner = self->runner_label,
                             .result = &result};
    if ((rc = tc_trace_record_emit(&rec, self->agent_id, sink->emit, sink->arg)) < 0)
        goto done;
    it->done = true;
    *disturbed = result.disturbed;
    free(it->row.repeat_medians); /* a trace taken again replaces the row */
    it->row = (tc_trace_row_t){.have = true, .status = result.status,
                               .median_ms = result.median_ms, .spread = result.spread,
                               .repeat_medians = result.repeat_medians,
                               .n_repeats = result.n_repeats};
    snprintf(it->row.reason, sizeof it->row.reason, "%s", result.reason);
    result.repeat_medians = NULL; /* now the row's */
done:
    tc_trace_result_free(&result);
    return rc;
}

int tc_trace_plan_run(tc_trace_plan_t *self, const tc_result_sink_t *sink, size_t *measured,
                      size_t *failed)
{
    tc_trace_job_t *job = &self->job;
    size_t todo = 0;
    for (size_t i = 0; i < self->n_items; i++)
        todo += !self->items[i].done;
    s_prog_t pg = {.sink = sink, .runs_total = (uint64_t)todo * job->repeats};
    job->cancelled = sink->cancelled;
    job->cancel_arg = sink->arg;
    *measured = *failed = 0;
    /* Traces taken while the machine was busy are taken again at the end,
     * once, if it is quiet by then (the disturbed ones stay stored, marked). */
    bool *again = calloc(self->n_items + 1, sizeof *again);
    if (!again)
        return tc_fail(TC_ENOMEM, "out of memory");
    size_t n_again = 0;
    int rc = 0;
    for (size_t i = 0; i < self->n_items && rc == 0; i++) {
        tc_trace_item_t *it = &self->items[i];
        if (it->done)
            continue;
        pg.runs_done = (uint64_t)*measured * job->repeats;
        bool disturbed = false;
        if ((rc = s_trace_item(self, i, sink, &pg, &disturbed)) < 0)
            break;
        ++*measured;
        if (disturbed && job->quiet.threshold_pct < 100) {
            again[i] = true;
            n_again++;
        }
        if (it->row.status == TRAINCAST__V1__TRACE_STATUS__TRACE_STATUS_FAILED) {
            ++*failed;
            tc_log_warn("%s batch %u failed: %s", it->model_id, it->batch, it->row.reason);
        } else if (it->row.status == TRAINCAST__V1__TRACE_STATUS__TRACE_STATUS_OOM) {
            tc_log_info("%s batch %u: %s", it->model_id, it->batch, it->row.reason);
        }
    }
    tc_load_t last;
    if (rc == 0 && n_again && tc_quiet_wait_again(&job->quiet, "training traces", &last)) {
        tc_log_info("taking %zu trace%s again that %s taken while the machine was busy",
                    n_again, n_again == 1 ? "" : "s", n_again == 1 ? "was" : "were");
        for (size_t i = 0; i < self->n_items && rc == 0; i++) {
            bool disturbed = false;
            if (again[i])
                rc = s_trace_item(self, i, sink, &pg, &disturbed);
        }
    }
    free(again);
    if (rc == 0 && sink->progress)
        sink->progress(pg.runs_total, pg.runs_total, NULL, sink->arg);
    return rc;
}
