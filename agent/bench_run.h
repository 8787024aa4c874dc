/* Running a work list from the planner on one device and appending one
 * ConvResults envelope per measured item to a result file (crash-safe, so
 * an interrupted run resumes where it stopped). */
#ifndef TC_BENCH_RUN_H
#define TC_BENCH_RUN_H

#include "device.h"
#include "measure.h"
#include "planner.h"

typedef struct {
    Traincast__V1__Policy policy;
    uint64_t workspace_limit;
    tc_measure_opts_t measure;
    uint64_t seed;
    const char *agent_id;
    const char *progress_label; /* NULL: "bench" */
} tc_bench_run_opts_t;

typedef struct {
    size_t measured;     /* items written */
    size_t failed;       /* items that could not be measured (logged) */
    double elapsed_s;
    double measured_ms;  /* sum of the chosen medians */
    size_t repetitions;  /* timed repetitions of the chosen algorithms, all items */
    size_t converged;    /* items whose median CI reached the target (others hit a limit) */
} tc_bench_report_t;

/* Measure every item and append its result to `out_path`. An item that
 * fails is logged and skipped (a later run retries it); errors writing the
 * file stop the run. */
int tc_bench_run(tc_device_t *dev, const tc_bench_item_t *items, size_t n_items,
                 const tc_bench_run_opts_t *o, const char *out_path, tc_bench_report_t *rep);

#endif
