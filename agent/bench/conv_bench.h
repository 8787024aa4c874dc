/* Benchmarking one conv (config with batch, direction) on a device under a
 * policy, whatever the backend:
 *   heuristic  - candidates in the library's heuristic order; the first that
 *                can run is measured (what frameworks do by default, e.g.
 *                PyTorch with cudnn.benchmark=False); the rest are recorded
 *                as skipped.
 *   exhaustive - every candidate that can run is timed (a screening share of
 *                the budget each), the fastest median wins and is measured
 *                again with the rest of the budget (like cudnnFind*AlgorithmEx
 *                / cudnn.benchmark=True).
 * Every candidate is recorded with its status, workspace and time. */
#ifndef TC_CONV_BENCH_H
#define TC_CONV_BENCH_H

#include "device.h"
#include "measure.h"

typedef struct {
    tc_algo_t info;   /* status updated: FAILED when it errored, SKIPPED when not timed */
    bool timed;
    tc_stats_t stats; /* when timed */
} tc_algo_result_t;

typedef struct {
    tc_conv_spec_t spec;
    tc_algo_result_t *algos;
    size_t n_algos;
    int chosen;            /* index into algos */
    tc_samples_t samples;  /* the chosen algorithm's measurement */
    char route[32];        /* which code ran it, as the framework routes it */
    tc_telemetry_t telemetry; /* median SM clock and power over that measurement */
    double spec_quiet_pct;    /* the quiet threshold it was measured under */
} tc_conv_outcome_t;

/* Plan, choose and measure. TC_EUNSUPPORTED (listing every candidate's
 * status) when no algorithm can run; backend errors otherwise. */
int tc_conv_bench(tc_device_t *dev, const tc_conv_spec_t *spec, const tc_measure_opts_t *mo,
                  tc_conv_outcome_t *out);
void tc_conv_outcome_free(tc_conv_outcome_t *o);

/* The wire form. Free with tc_conv_result_proto_free, which frees any
 * benchmarked op's result (a conv's here, a matmul's: matmul_bench.h). */
int tc_conv_outcome_to_proto(const tc_conv_outcome_t *o, Traincast__V1__ConvResult **out);
void tc_conv_result_proto_free(Traincast__V1__ConvResult **r_p);

#endif
