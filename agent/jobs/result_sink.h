/* Where a measuring run hands what it measures: conv benchmarks
 * (agent/bench/bench_run.h) and training traces (agent/trace/trace_plan.h)
 * alike, into a result file (the commands) or the journal (the job
 * handlers, through tc_job_emit and tc_job_keep). */
#ifndef TC_RESULT_SINK_H
#define TC_RESULT_SINK_H

#include "tc_wire.h"

#include <stdbool.h>
#include <stdint.h>

typedef struct {
    /* Results as a stamped, validated envelope (owned by the runner; valid
     * during the call): a batch of conv results, or one trace. Returning
     * < 0 stops the run with that code. */
    int (*emit)(tc_envelope_t *env, void *arg);
    /* Before each step (a conv item, a run of the trace runner): `done` of
     * `total` steps are finished and `what` names the next one; at the end
     * done == total and what is NULL. May be NULL. */
    void (*progress)(uint64_t done, uint64_t total, const char *what, void *arg);
    /* Polled between steps (and while the trace runner runs); true stops
     * the run with TC_EINTR. May be NULL. */
    bool (*cancelled)(void *arg);
    void *arg;
} tc_result_sink_t;

#endif
