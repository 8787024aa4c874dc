/* Timing one operation until its median is known well enough: warm-up until
 * successive times settle, then repetitions until the 95 % confidence
 * interval of the median lies within +-ci_rel of it, or the time budget or
 * the repetition cap ends the measurement. Every timed sample is kept with
 * its start time. Backend-independent: the operation is a callback. */
#ifndef TC_MEASURE_H
#define TC_MEASURE_H

#include "canary.h"
#include "hostload.h"
#include "stats.h"
#include "traincast.pb-c.h"

#include <stdbool.h>
#include <stdint.h>

/* Runs the operation once; returns 0 and its duration in ms, or a negative
 * TC_E* code. */
typedef int (*tc_measure_fn)(void *arg, double *ms);

typedef struct {
    double budget_ms;     /* warm-up and repetitions together (soft: min_reps always run) */
    unsigned min_reps;    /* timed repetitions at least */
    unsigned max_reps;    /* and at most */
    double ci_rel;        /* stop once the 95 % CI of the median is within +-ci_rel */
    unsigned warmup_min;  /* warm-up runs at least */
    unsigned warmup_max;  /* and at most (also at most a third of the budget) */
    double settle_rel;    /* warm-up ends when two successive times differ by less */
    /* The quiet-machine guard (hostload.h): repetitions taken while other
     * processes used more than its threshold of the machine are measured
     * again after waiting for quiet, up to its retries. */
    tc_quiet_t quiet;
    /* NULL, or the device's canary (canary.h), read before the warm-up and
     * after the repetitions: a block around which it read slow is measured
     * again once it reads fast, up to the guard's retries. */
    tc_canary_t *canary;
} tc_measure_opts_t;

/* budget 1000 ms, 5..200 repetitions, CI within 2 %, 2..20 warm-ups
 * settling within 5 %, the guard off (threshold 100 %; the commands turn
 * it on), no canary (the plan's runner gives one). */
tc_measure_opts_t tc_measure_defaults(void);

/* 0, or TC_EINVAL naming the bad option. */
int tc_measure_opts_check(const tc_measure_opts_t *o);

typedef enum {
    TC_STOP_CONVERGED = 0, /* the CI target was reached */
    TC_STOP_BUDGET,        /* the time budget ran out */
    TC_STOP_MAX_REPS,      /* the repetition cap was reached */
} tc_stop_reason_t;

typedef struct {
    double *ms;            /* every timed repetition, in order (owned) */
    int64_t *offset_us;    /* start of each after started_at_us (owned) */
    size_t n;
    int64_t started_at_us; /* unix time of the first timed repetition */
    unsigned warmups;
    bool settled;          /* warm-up times settled (else it hit its cap) */
    tc_stop_reason_t stop;
    tc_stats_t stats;
    tc_load_t load;        /* what others used of the machine meanwhile */
    unsigned remeasured;   /* times measured again because of load or a slow phase */
    bool disturbed;        /* over the guard's threshold, or in a slow phase, even then */
    double canary_ms;      /* the slower canary reading around the block; 0: none */
    bool host_slow;        /* that reading marked a slow phase of the host */
} tc_samples_t;

const char *tc_stop_reason_name(tc_stop_reason_t r);

/* Measure `fn`. On error the samples are freed and the callback's code is
 * returned. Wall time counts against the budget, or the sum of the reported
 * times where that is larger. The load of the timed repetitions is
 * recorded, and the canary around them where there is one; under the guard
 * a disturbed block is measured again. */
int tc_measure(tc_measure_fn fn, void *arg, const tc_measure_opts_t *o, tc_samples_t *out);

/* `o` with the canary `c` of `dev`, set up from o's guard (tc_canary_init):
 * what the commands that measure on a device measure with. */
tc_measure_opts_t tc_measure_with_canary(const tc_measure_opts_t *o, tc_device_t *dev,
                                         tc_canary_t *c);

/* Free the arrays; accepts a zeroed struct. */
void tc_samples_free(tc_samples_t *s);

/* What every benchmarked op's result (a conv's or a matmul's) carries of
 * its measurement: the statistics, every sample with its offset, and the
 * load under the quiet threshold `quiet_pct` with the canary's reading
 * (where the load was read), into an initialized result
 * (arrays and load malloc'ed: tc_conv_result_proto_free frees them).
 * TC_ENOMEM; TC_EINVAL when nothing was measured. */
int tc_samples_to_result(const tc_samples_t *s, double quiet_pct, Traincast__V1__ConvResult *r);

#endif
