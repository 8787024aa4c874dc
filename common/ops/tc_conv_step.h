/* What a conv layer costs in one training step: the one rule that the
 * agent's planner (what to benchmark), the fit (the conv time it subtracts
 * from a measured iteration) and predict (the conv time it adds) all use.
 *
 * A conv layer runs forward and, in the backward pass, backward-filter
 * (the gradient of its weights and bias) and backward-data (the gradient
 * of its input). A network's first conv reads the training data, which
 * needs no gradient, so the framework skips its backward-data pass. Each
 * direction is one benchmark; a layer used `multiplicity` times costs that
 * many calls of each. */
#ifndef TC_CONV_STEP_H
#define TC_CONV_STEP_H

#include "traincast.pb-c.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TC_CONV_STEP_MAX_DIRS 3

/* The directions that make up the step time of a conv usage, in a fixed
 * order (fwd, bwd_filter, bwd_data); returns how many (2 or 3). */
size_t tc_conv_step_directions(bool first_layer, Traincast__V1__Direction out[TC_CONV_STEP_MAX_DIRS]);

/* Whether direction d counts towards the step time of such a usage. */
bool tc_conv_step_counts(bool first_layer, Traincast__V1__Direction d);

/* The step time of one usage from its per-direction times (indexed like
 * tc_conv_step_directions' output): multiplicity x their sum. */
double tc_conv_step_ms(bool first_layer, unsigned multiplicity,
                       const double ms[TC_CONV_STEP_MAX_DIRS]);

/* A conv usage as the rule sees it. */
typedef struct {
    bool first_layer;
    uint32_t multiplicity;
} tc_conv_use_t;

/* Where the benchmarks of a step's conv time sit in a flat array: usage
 * after usage in the order given, each direction of its rule in the rule's
 * order (usage u's k-th at first[u] + k). Whoever times a step (the fit,
 * subtracting it from a measured iteration; predict, adding it) lays its
 * benchmarks out so and sums them with tc_conv_step_time. */
typedef struct {
    size_t n_uses;
    size_t size;          /* benchmarks one step needs */
    tc_conv_use_t *uses;  /* n_uses, owned */
    size_t *first;        /* n_uses + 1 (first[n_uses] = size), owned */
} tc_conv_step_layout_t;

/* The layout of uses[0..n). TC_ENOMEM, or 0; free it either way. */
int tc_conv_step_layout_init(tc_conv_step_layout_t *l, const tc_conv_use_t *uses, size_t n);
void tc_conv_step_layout_free(tc_conv_step_layout_t *l);

/* The slot of usage u's direction d, or SIZE_MAX when d does not count
 * for it. */
size_t tc_conv_step_slot(const tc_conv_step_layout_t *l, size_t u, Traincast__V1__Direction d);

/* The direction of usage u's k-th slot (slot first[u] + k). */
Traincast__V1__Direction tc_conv_step_direction(const tc_conv_step_layout_t *l, size_t u,
                                                size_t k);

/* The conv time of one step from its benchmarks' times ms[0..l->size):
 * the sum over usages of tc_conv_step_ms. With `var`, also the variance a
 * usage's `multiplicity` calls of one benchmark with standard deviation
 * sd[i] add (sd NULL or a non-finite entry: none). */
double tc_conv_step_time(const tc_conv_step_layout_t *l, const double *ms, const double *sd,
                         double *var);

#endif
