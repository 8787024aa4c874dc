/* Running a work list from the planner on one device: measured items go
 * out in ConvResults envelopes of up to TC_BENCH_BATCH_RESULTS results, one
 * sent at the latest TC_BENCH_BATCH_MS after its first result was
 * measured, so a slow stream is not held back (the aggregator stores a
 * message's results with one COPY); a batch's matmul results go in an
 * envelope of their own, after its convs'. Each is handed to a sink (the job
 * handlers keep it in the journal) or appended to a result file (crash-safe, so an
 * interrupted run resumes where it stopped: what a crash loses is at most
 * the unsent batch, measured again on resume). Backend-independent: the
 * device layer runs the items. */
#ifndef TC_BENCH_RUN_H
#define TC_BENCH_RUN_H

#include "device.h"
#include "measure.h"
#include "planner.h"
#include "result_sink.h"
#include "trace_peaks.h"

#include <stdio.h>

#define TC_BENCH_BATCH_RESULTS 256u
#define TC_BENCH_BATCH_MS 500u

typedef struct {
    Traincast__V1__Policy policy;
    uint64_t workspace_limit;  /* 0: the backend's default, or from the peaks below */
    /* Where traces are known: the workspace limit of an item at a batch is
     * the device's memory less the largest peak of the traces at that batch
     * (what training leaves free), unless workspace_limit is set. */
    const tc_trace_peak_t *peaks;
    size_t n_peaks;
    tc_measure_opts_t measure;
    uint64_t seed;
    const char *agent_id;
    const char *progress_label; /* NULL: "bench" */
    FILE *json;                 /* NULL, or one JSON line per measured item goes there */
    unsigned batch_results;     /* results per message at most; 0: TC_BENCH_BATCH_RESULTS */
    /* The plan's items measured by an earlier run that this one resumes,
     * which that run's end did not check (tc_resume_held): checked at this
     * run's end with its own items. */
    const tc_bench_held_t *held;
    size_t n_held;
} tc_bench_run_opts_t;

typedef struct {
    size_t measured;     /* items written */
    size_t failed;       /* items that could not be measured (logged) */
    double elapsed_s;
    double measured_ms;  /* sum of the chosen medians */
    size_t repetitions;  /* timed repetitions of the chosen algorithms, all items */
    size_t converged;    /* items whose median CI reached the target (others hit a limit) */
} tc_bench_report_t;

/* Measure every item and hand its results to the sink (result_sink.h) in
 * batches, each a ConvResults envelope; its progress counts items. Under
 * the quiet guard, items taken under load or in a slow phase of the host
 * (the device's canary, canary.h) are measured again at the end, and so
 * are the resumed run's held items (o->held) taken so. An item
 * that fails is logged and skipped (a later run retries it); an error of
 * the sink stops the run; what was emitted before stays emitted, and a
 * stop or cancellation first emits what was measured. */
int tc_bench_run_sink(tc_device_t *dev, const tc_bench_item_t *items, size_t n_items,
                      const tc_bench_run_opts_t *o, const tc_result_sink_t *sink,
                      tc_bench_report_t *rep);

/* The workspace limit of an item at `batch`: o->workspace_limit when set,
 * else memory_bytes less the batch's trace peak when known (and smaller),
 * else 0 (the backend's default: what is free now). */
uint64_t tc_bench_workspace_limit(const tc_bench_run_opts_t *o, uint64_t memory_bytes,
                                  uint32_t batch);

/* tc_bench_run_sink appending to the result file `out_path`, with a
 * progress bar on the terminal (o->progress_label). */
int tc_bench_run(tc_device_t *dev, const tc_bench_item_t *items, size_t n_items,
                 const tc_bench_run_opts_t *o, const char *out_path, tc_bench_report_t *rep);

#endif
