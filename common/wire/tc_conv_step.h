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

#endif
