/* Peak training memory of a model on a device class, calibrated on the
 * traces' peak memory and out-of-memory records:
 *
 *     peak bytes = base + a * parameters + b * activation elements x batch
 *
 * fitted by non-negative least squares (each term is memory something
 * really holds: the framework's baseline, weights with their gradients and
 * optimizer state, the activations kept for the backward pass). A model
 * "fits" when its predicted peak stays below the usable capacity: the
 * device's memory, lowered to just under the smallest predicted peak of
 * any out-of-memory record (a device rarely lets a job use all of it). */
#ifndef TC_MEMORY_H
#define TC_MEMORY_H

#include "store_model.h"

#include <stdbool.h>

typedef struct {
    bool valid;          /* enough traces to fit (4 or more with peak memory) */
    double coef[3];      /* base bytes, bytes per parameter, bytes per activation element */
    size_t n_points;
    double max_rel_err;  /* in-sample, fraction */
    double capacity;     /* bytes: device memory (0 unknown) */
    double usable;       /* bytes: capacity lowered by out-of-memory evidence */
} tc_memory_model_t;

/* Activation elements of a model at its features' batch (all layers'
 * outputs) and its parameters: the model's two memory features. */
double tc_memory_activations(const tc_features_t *f);

int tc_memory_fit(const tc_mem_point_t *points, size_t n, double capacity,
                  tc_memory_model_t *out);

/* Predicted peak bytes (NaN when the model is not valid). */
double tc_memory_predict(const tc_memory_model_t *m, const tc_features_t *f);

/* 1 fits, 0 does not, -1 unknown. Direct evidence wins: a stored trace of
 * the same model (model_id) that ran out of memory at this batch or a
 * smaller one means no; one that succeeded at this batch or a larger one
 * means yes. */
int tc_memory_fits(const tc_memory_model_t *m, const tc_mem_point_t *points, size_t n,
                   const char *model_id, unsigned batch, double predicted);

#endif
