/* Predicting a model's training time on device classes over batch sizes:
 * the sum of the device's conv benchmarks plus the fitted non-conv time,
 * with a 95 % prediction interval, throughput, epoch time, cost and memory. */
#ifndef TC_PREDICT_H
#define TC_PREDICT_H

#include "fit.h"
#include "memory.h"
#include "store_model.h"
#include "tc_model.h"

#include <stdbool.h>

typedef struct {
    unsigned batch;
    double conv_ms;      /* sum of conv benchmarks (fwd + bwd_filter + bwd_data) */
    double conv_sd_ms;   /* their combined standard deviation */
    double nonconv_ms;   /* the fit's prediction */
    double total_ms;     /* predicted iteration time */
    double sd_ms;        /* standard deviation of a new measurement */
    double lo_ms, hi_ms; /* 95 % prediction interval */
    double images_per_s;
    double epoch_s;      /* ceil(dataset / batch) iterations */
    double cost;         /* per epoch; NaN without a price */
    double peak_bytes;   /* predicted peak memory; NaN unknown */
    int fits;            /* 1 fits, 0 does not, -1 unknown */
    bool clamped;        /* the fit predicted a negative non-conv time (an
                            extrapolation it cannot make); shown as 0 */
} tc_pred_point_t;

typedef enum {
    TC_PRED_OK = 0,
    TC_PRED_NO_FIT,      /* the device has no fit (no traces) */
    TC_PRED_MISSING,     /* conv benchmarks missing for this model */
} tc_pred_status_t;

typedef struct {
    tc_device_class_t device;
    tc_pred_status_t status;
    char note[1024];      /* why there are no predictions, and what to run */
    char warning[512];    /* said with every prediction ("" none): e.g. conv routing that
                             was not checked for the framework version */
    tc_fit_t fit;
    double price;         /* per device-hour; NaN none */
    size_t missing;       /* conv lookups not found */
    tc_conv_lookup_t *lookups; /* owned: every conv measurement the model needs */
    size_t n_lookups;
    tc_memory_model_t memory;
    tc_pred_point_t *points; /* owned, one per batch */
    size_t n_points;
} tc_pred_device_t;

typedef struct {
    const tc_model_t *model;
    const unsigned long *batches;
    size_t n_batches;
    double dataset_size;
    const char *framework; /* NULL: any */
    const char *dtype;     /* NULL: any */
    const char *amp;       /* NULL: any; "": without AMP */
    uint32_t input_size;   /* the --input-size the model was imported at; 0: its own */
} tc_pred_request_t;

/* Build the conv lookups a model needs on one device at every batch (into
 * d->lookups) and fetch them; sets d->missing. */
int tc_predict_lookup(tc_store_t *s, const tc_pred_request_t *req, tc_pred_device_t *d);

/* Compute the points of a device whose fit and lookups are complete. */
int tc_predict_device(tc_store_t *s, const tc_pred_request_t *req, tc_pred_device_t *d);

void tc_pred_device_free(tc_pred_device_t *d);

#endif
