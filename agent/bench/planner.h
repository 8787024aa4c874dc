/* The bench planner: from the benchmarked ops of some models (their convs
 * and, where the device times them, their matmuls) and a list of batch
 * sizes to the deduplicated work list of (op config, batch, direction),
 * each op kind skipping the directions its step rule leaves out (a conv
 * that reads the network input in every model that uses it has no
 * backward-data; a matmul has a backward pass only for the operands that
 * need a gradient), and dropping what a result file already holds for this
 * device and policy (resume). The planner never knows which backend will
 * run the items. */
#ifndef TC_PLANNER_H
#define TC_PLANNER_H

#include "tc_model.h"
#include "tc_resultfile.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct {
    tc_op_kind_t kind;                  /* zero: a conv (tc_op_key.h) */
    union {
        tc_conv_config_t config;        /* a conv: n, dtype and layout set */
        tc_matmul_config_t matmul;      /* a matmul: minibatch and dtype set */
    };
    Traincast__V1__Direction direction;
    uint32_t layers;                    /* layers of all models that this item times */
} tc_bench_item_t;

typedef struct {
    size_t models;
    uint64_t conv_layers;    /* conv layers over all models (multiplicity counted) */
    size_t batches;
    uint64_t layer_passes;   /* conv layers x batches x the directions each needs */
    size_t unique_configs;   /* distinct conv configs, batch aside */
    size_t items;            /* distinct (config, batch, direction): what is measured,
                                matmul items included */
    /* The matmuls, where the plan lists them (tc_planner_set_matmuls): */
    uint64_t matmul_layers;  /* matmul layers over all models */
    uint64_t matmul_passes;  /* matmul layers x batches x the directions each needs */
    size_t matmul_configs;   /* distinct matmul configs, batch aside */
    size_t matmul_items;     /* of items, the matmuls */
} tc_plan_stats_t;

typedef struct tc_planner tc_planner_t;

tc_planner_t *tc_planner_new(void);
void tc_planner_destroy(tc_planner_t **self_p);

/* Add one model's conv list (configs with n = 0; dtype is replaced by the
 * plan's, and layout nchw by the plan's: a conv the importer found running
 * channels-last keeps nhwc). TC_EINVAL names a bad config. */
int tc_planner_add(tc_planner_t *self, const tc_conv_usage_t *convs, size_t n);

/* Add one model's matmul list (configs with minibatch 0; dtype is replaced
 * by the plan's), after its convs (it does not count as another model).
 * TC_EINVAL names a bad config. */
int tc_planner_add_matmuls(tc_planner_t *self, const tc_matmul_usage_t *mms, size_t n);

/* Whether the work list has the matmuls (default: no, convs alone, for a
 * device that benchmarks no matmuls). */
void tc_planner_set_matmuls(tc_planner_t *self, bool on);

/* Import each model (FILE.onnx, torchvision:NAME, or a bare NAME, which is
 * a torchvision model as for traces) at `input_size` (0: the model's own)
 * and add its convs and matmuls. Errors name the model (as --models NAME). */
int tc_planner_add_models(tc_planner_t *self, char *const *specs, size_t n,
                          uint32_t input_size);

/* The work list for these batches and directions, ordered by batch, then
 * op kind (convs first), config, direction. A matmul runs in `dtype`.
 * `layout` nhwc runs every conv channels-last (a model moved to
 * channels_last); nchw keeps each conv's own layout (the framework's default
 * format, in which a conv that reads a channels-last tensor still runs
 * nhwc). *items is malloc'ed (caller frees). */
int tc_planner_build(const tc_planner_t *self, const unsigned long *batches, size_t n_batches,
                     Traincast__V1__DType dtype, Traincast__V1__Layout layout,
                     const Traincast__V1__Direction *dirs, size_t n_dirs, tc_bench_item_t **items,
                     size_t *n_items, tc_plan_stats_t *stats);

/* Results measured before (in a result file, or kept in the journal). */
typedef struct tc_resume tc_resume_t;

/* What an item's result says of how it was taken, as the end of its plan
 * needs it (bench_run.c): an item taken while the machine was busy or the
 * host slow is measured again there, and the new result supersedes this
 * one. */
typedef struct {
    bool disturbed;         /* taken while the machine was busy or the host slow */
    double canary_ms;       /* what the device's canary read around it; 0 none */
    int64_t measured_at_us; /* its result's measured_at_us; 0 none (failed) */
} tc_bench_mark_t;

/* An item measured before a resumed run, whose plan's end has not checked
 * it yet: its result was neither measured again nor a measurement again. */
typedef struct {
    tc_bench_item_t item;
    tc_bench_mark_t mark;
} tc_bench_held_t;

/* Collect every (op config, direction) that the file holds for the device with
 * this uuid under this policy. A missing file holds nothing; a truncated
 * last record is ignored. */
int tc_resume_load(const char *path, const char *device_uuid, Traincast__V1__Policy policy,
                   tc_resume_t **out);
/* The same from any source of records: `each(src, fn, arg)` calls fn with
 * every record (the results a job kept in the journal, tc_job_each_kept). */
typedef int (*tc_records_fn)(void *src, tc_resultfile_fn fn, void *arg);
int tc_resume_collect(tc_records_fn each, void *src, const char *device_uuid,
                      Traincast__V1__Policy policy, tc_resume_t **out);
void tc_resume_destroy(tc_resume_t **self_p);
size_t tc_resume_count(const tc_resume_t *self);
bool tc_resume_done(const tc_resume_t *self, const tc_conv_config_t *c,
                    Traincast__V1__Direction d);
bool tc_resume_matmul_done(const tc_resume_t *self, const tc_matmul_config_t *c,
                           Traincast__V1__Direction d);
/* Drop the items already done; returns how many were dropped. */
size_t tc_resume_filter(const tc_resume_t *self, tc_bench_item_t *items, size_t *n_items);
/* Of a plan's items (before tc_resume_filter), those done whose plan's end
 * has yet to check them, with what their newest results say: *held
 * (malloc'ed, caller frees; NULL for none), *n_held how many. A run cut off
 * before its end sent its late slow items unmarked; the run that resumes
 * the plan checks them at its end (tc_bench_run_opts_t.held). */
int tc_resume_held(const tc_resume_t *self, const tc_bench_item_t *items, size_t n_items,
                   tc_bench_held_t **held, size_t *n_held);

#endif
