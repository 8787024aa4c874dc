/* A set of training traces to measure: models × batch sizes on one device,
 * with one runner and one set of training settings. Used by `agent trace`
 * (results to a file, resumable) and by trace jobs (`agent run`, `agent
 * serve`: results to the journal). Each finished trace is handed to a sink as
 * a validated TrainTrace envelope. */
#ifndef TC_TRACE_PLAN_H
#define TC_TRACE_PLAN_H

#include "result_sink.h"
#include "tc_wire.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TC_TRACE_KEY_LEN 600

typedef struct {
    const char *device;    /* "cpu" (NULL too), "cuda" or "cuda:I" */
    uint32_t threads;      /* cpu: 0 = every CPU this process may use */
    uint32_t input_size;   /* 0: the model's default (224, 299 for inception_v3) */
    const char *dtype;     /* NULL: fp32 */
    const char *amp;       /* NULL or "": off; fp16, bf16 */
    const char *optimizer; /* NULL: sgd (momentum 0, weight decay 0) */
    bool cudnn_benchmark;
    uint32_t warmup, iters, repeats; /* iters, repeats >= 1 */
    double timeout_s;      /* per run of the runner */
    bool profile;          /* time per op class from the first repeat */
    bool no_graph;         /* do not attach model graphs */
    const char *runner;    /* command (run by /bin/sh); NULL: the PyTorch harness */
    const char *agent_id;  /* stamped on the envelopes; NULL: tc_agent_id's default */
} tc_trace_settings_t;

/* How a trace ended, for summaries. */
typedef struct {
    bool have;
    Traincast__V1__TraceStatus status;
    double median_ms, spread;
    double *repeat_medians; /* owned by the plan */
    uint32_t n_repeats;
    char reason[2048];
} tc_trace_row_t;

typedef struct {
    size_t model;           /* index in the plan's model list */
    const char *model_id;   /* "torchvision:resnet50@224" */
    const char *runner_model;
    uint32_t batch;
    char key[TC_TRACE_KEY_LEN]; /* tc_trace_key of its TrainTrace */
    bool done;              /* skipped by tc_trace_plan_run */
    tc_trace_row_t row;
} tc_trace_item_t;

typedef struct tc_trace_plan tc_trace_plan_t;

/* Check the settings, import every model's graph (unless no_graph: a bad
 * model name fails here, before any training) and list the items, one per
 * distinct (model, batch). Errors: TC_EINVAL/TC_EUSAGE for bad settings,
 * the importer's for a model. The settings' strings are copied. */
int tc_trace_plan_new(const tc_trace_settings_t *s, char *const *models, size_t n_models,
                      const uint32_t *batches, size_t n_batches, tc_trace_plan_t **out);
void tc_trace_plan_destroy(tc_trace_plan_t **self_p);

size_t tc_trace_plan_count(const tc_trace_plan_t *self);
tc_trace_item_t *tc_trace_plan_item(tc_trace_plan_t *self, size_t i);

/* Resume: an item with the key of `t` (status ok or oom) is marked done
 * and its row filled from `t`. Failed traces are ignored (retried). */
void tc_trace_plan_mark_done(tc_trace_plan_t *self, const Traincast__V1__TrainTrace *t);

/* Measure every item not done, in order, handing each finished trace to
 * the sink (result_sink.h); its progress counts runs of the runner.
 * Returns 0 (also when traces failed: they are results, counted in
 * *failed), or a negative code when
 * the agent itself failed, the sink refused a record, or it was cancelled
 * (TC_EINTR); what was emitted before stays emitted. */
int tc_trace_plan_run(tc_trace_plan_t *self, const tc_result_sink_t *sink, size_t *measured,
                      size_t *failed);

#endif
