/* Looking up the benchmarks a prediction needs (convs, and matmuls), on
 * every device at once (predict's hottest query). */
#ifndef TC_STORE_LOOKUP_H
#define TC_STORE_LOOKUP_H

#include "fit.h"
#include "store.h"
#include "tc_conv.h"
#include "tc_matmul.h"

#include <stdbool.h>
#include <stddef.h>

/* One measurement to look up: the latest benchmark of a device name for
 * (config with its batch, direction, policy) of a conv (config, n = batch)
 * or a matmul (matmul, minibatch = batch). Outputs are NaN when missing
 * (and for an item marked skip, which is not looked up nor counted). A
 * matmul is looked up whatever the device's library version. */
typedef struct {
    tc_op_kind_t kind; /* zero: a conv */
    union {
        tc_conv_config_t config;
        tc_matmul_config_t matmul;
    };
    Traincast__V1__Direction direction;
    bool skip;         /* not needed: leave it out */
    double median_ms;  /* out */
    double stddev_ms;  /* out */
} tc_conv_lookup_t;

/* The lookups of one device name: its benchmarks with `policy`, on a GPU
 * measured with cuDNN `library_version` (NULL or "": any), each by `stat`
 * over its most recent benchmarks. */
typedef struct {
    const char *device, *policy, *library_version;
    tc_fit_stat_t stat;
    tc_conv_lookup_t *items;
    size_t n;
    size_t missing; /* out: how many (not skipped) were not found */
} tc_conv_lookup_set_t;

/* Fill median_ms/stddev_ms of every item of every set (but the skipped),
 * by the rule the fit sums them with (tc_fit_conv_time): one statement for all
 * devices per op kind, the items grouped by (device, kind, config,
 * direction) with their batches in one array, sent as one JSON parameter. */
int tc_store_conv_lookup(tc_store_t *s, tc_conv_lookup_set_t *sets, size_t n_sets);
/* Whether a look-up of this many (device, config, direction) groups is
 * split over two connections (then tc_store_side_begin is worth calling
 * early). */
bool tc_store_lookup_splits(size_t n_groups);

#endif
