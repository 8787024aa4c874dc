/* One training trace: a (model, batch) measured by running a trace runner
 * `repeats` times, each run checked line by line (trace_proto.h), folded
 * into one result with status ok, oom or failed.
 *
 * The host-phase canary (agent/bench/canary.h) on a one-thread CPU device: the agent
 * asks the runner for it (TRAINCAST_TRACE_CANARY=1), the runner reads its
 * own canary around every iteration (canary_ms), and a timed iteration read
 * over quiet.canary_slow times the fastest reading of the trace is left
 * out of its repeat's median; a repeat with most of its timed iterations
 * slow is run again (up to the guard's retries), and kept marked disturbed,
 * with all its iterations, where that does not help. */
#ifndef TC_TRACE_RUN_H
#define TC_TRACE_RUN_H

#include "hostload.h"
#include "trace_proto.h"
#include "tc_wire.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The runner's exit status for out of memory (docs/trace-protocol.md). */
#define TC_TRACE_EXIT_OOM 3

typedef struct {
    char *const *runner;   /* command words; the agent appends the flags */
    tc_trace_request_t req;
    uint32_t repeats;      /* >= 1 */
    double timeout_s;      /* per run of the runner */
    bool profile;          /* ask the first repeat for time per op class */
    tc_quiet_t quiet;      /* a repeat run while others used more than its threshold of
                              the machine is run again after waiting for quiet; on the
                              CPU, one that the runner's canary read slow is run again
                              too (its canary_slow; docs/trace-protocol.md) */
    bool (*cancelled)(void *arg); /* may be NULL: true stops the run (TC_EINTR) */
    void *cancel_arg;
} tc_trace_job_t;

typedef struct {
    uint32_t repeat;
    tc_trace_iter_t it;
} tc_trace_sample_t;

/* A finished trace. On oom or failed, nothing measured is kept (no samples,
 * no medians): a trace is used whole or not at all. */
typedef struct {
    Traincast__V1__TraceStatus status;
    char reason[2048];         /* why, when not ok */
    tc_trace_output_t info;    /* header and footer facts of the first repeat; iters NULL */
    tc_trace_sample_t *samples; /* every iteration of every repeat, in order */
    size_t n_samples;
    double *repeat_medians;     /* median timed iteration of each repeat */
    uint32_t n_repeats;
    double median_ms;           /* median of the repeat medians */
    double spread;              /* (max - min) / median of the repeat medians */
    uint64_t peak_memory_bytes; /* largest over the repeats */
    int64_t started_at_us;
    tc_load_t load;             /* what others used of the machine over the repeats kept */
    unsigned remeasured;        /* repeats run again because of load or a slow phase */
    bool disturbed;             /* a repeat kept was over the guard's threshold, or
                                   read slow by the canary in most of its iterations */
    unsigned slow_iters;        /* timed iterations left out of the repeat medians: the
                                   runner's canary read them in a slow phase of the host */
} tc_trace_result_t;

/* Called before each run of the runner (repeat is 0-based). */
typedef void (*tc_trace_progress_fn)(uint32_t repeat, void *arg);

/* Measure. Returns 0 with the outcome in `out` (whatever the runner did),
 * or a negative code when the agent itself failed or was interrupted. */
int tc_trace_measure(const tc_trace_job_t *job, tc_trace_progress_fn progress, void *arg,
                     tc_trace_result_t *out);
void tc_trace_result_free(tc_trace_result_t *r);

/* Median of `n` values (n > 0); `v` is reordered. */
double tc_trace_median(double *v, size_t n);

#endif
