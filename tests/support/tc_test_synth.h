/* A synthetic world for the fit tests, every time known: TC_SYNTH_N_CNNS
 * CNNs (model k: a first conv A shared by all, a conv B_k used 1 + k % 2
 * times, two batch norms, two activations and a classifier) traced at
 * TC_SYNTH_N_BATCHES batches on device synth-a, their conv benchmarks, and
 * the messages that store them (through tc_store_put, as agent-fit-test). */
#ifndef TC_TEST_SYNTH_H
#define TC_TEST_SYNTH_H

#include "store.h"
#include "tc_wire.h"

#include <stddef.h>
#include <stdint.h>

#define TC_SYNTH_N_CNNS 5
#define TC_SYNTH_N_BATCHES 3
extern const unsigned tc_synth_batches[TC_SYNTH_N_BATCHES];

/* The repeated point: cnn2 at batch 8 traced twice, 0.5 ms either side. */
#define TC_SYNTH_REPEAT_K 2
#define TC_SYNTH_REPEAT_BI 1

/* bn elements read and written by model k at `batch` (the bn.elems feature). */
double tc_synth_bn_elems(int k, unsigned batch);
/* The conv sum of model k at `batch` (ms): what the fit subtracts. */
double tc_synth_conv_sum(int k, unsigned batch);
/* The trace time of model k at batch index bi (ms): conv sum, a non-conv
 * part linear in bn.elems, and a fixed noise. */
double tc_synth_measured(int k, int bi);
/* The point's truth by the fit's default statistic, the geometric mean of
 * its traces: tc_synth_measured, but sqrt(m^2 - 0.25) for the repeated
 * point (traced m - 0.5 and m + 0.5). */
double tc_synth_truth(int k, int bi);
/* The spread stored with model k's traces. */
double tc_synth_spread(int k);

/* "test:cnnK@32" */
void tc_synth_model_id(int k, char *buf, size_t size);
/* Store model k's graph. */
void tc_synth_put_model(tc_store_t *st, int k);
/* Benchmarks of configs A and B_0..B_{n_b - 1} at `batches`, every direction,
 * measured at `at_us` on `device`; `scale` multiplies every time. */
void tc_synth_put_convs(tc_store_t *st, const char *device, int n_b, const unsigned *batches,
                        size_t n_batches, int64_t at_us, double scale);
/* One trace of `model_id` on `device` (ok: `median` and `spread`; oom and
 * failed: a reason). */
void tc_synth_put_trace(tc_store_t *st, const char *device, const char *model_id,
                        unsigned batch, Traincast__V1__TraceStatus status, double median,
                        double spread);
/* Device synth-a (two physical devices): everything a fit needs, plus a
 * stale conv benchmark, an out-of-memory point and a failed point. */
void tc_synth_populate(tc_store_t *st);

/* A fresh, migrated database `name` (also TRAINCAST_DB for the commands
 * the test runs) and a store on it. */
tc_store_t *tc_synth_fresh_db(const char *name);
/* The first value SQL answers on `st`, as a number (the test fails when
 * the statement does). */
long tc_synth_count(tc_store_t *st, const char *sql);
/* Run `aggregator ARGS`, its output into `out`; the exit status. */
int tc_synth_aggregator(const char *args, char *out, size_t size);

#endif
