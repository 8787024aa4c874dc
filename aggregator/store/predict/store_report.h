/* What the comparison page (aggregator report) shows next to predictions:
 * the traces measured of the model being predicted, and how much each
 * device's training time varies from run to run. */
#ifndef TC_STORE_REPORT_H
#define TC_STORE_REPORT_H

#include "store.h"

#include <stddef.h>

/* A (device, batch) point of a model as its successful, quiet traces
 * measured it (view trace_summary): measured_ms is their geometric mean, the
 * truth the fit takes by default (docs/fitting.md, "The truth: a geometric
 * mean"), min_ms and max_ms their range. */
typedef struct {
    char device[256];
    unsigned batch;
    long traces;
    double measured_ms, min_ms, max_ms;
} tc_measured_point_t;

/* The measured points of `model_id` on devices[0..n) with `framework` and
 * `dtype` (and `amp`: "" without), sorted by device and batch; where
 * several settings traced one point, the one with most traces. *out is
 * malloc'ed (caller frees); *n_out may be 0. */
int tc_store_measured_points(tc_store_t *s, const char *model_id, const char *const *devices,
                             size_t n, const char *framework, const char *dtype, const char *amp,
                             tc_measured_point_t **out, size_t *n_out);

/* How a device's training time varies over all its traced points with
 * `framework` and `dtype`: NaN where no point has the data. */
typedef struct {
    long points;           /* traced (model, batch) points */
    long repeated;         /* of those, traced more than once */
    double between_median; /* median over points of (max - min) / median across traces */
    double between_max;
    double within_median;  /* median over points of the largest within-trace spread */
    double noise_floor;    /* mean of |a - b| / (2 x the truth), a and b the geometric means
                              of the halves of a point's traces (validate's floor) */
} tc_device_spread_t;

/* The spread of each of devices[0..n) into out[0..n), in one statement. */
int tc_store_device_spread_each(tc_store_t *s, const char *const *devices, size_t n,
                                const char *framework, const char *dtype, tc_device_spread_t *out);

#endif
