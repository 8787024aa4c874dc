/* Recording predictions (schema/008: table predictions, view
 * prediction_vs_trace). */
#ifndef TC_STORE_PREDICT_H
#define TC_STORE_PREDICT_H

#include "store.h"

#include <stddef.h>
#include <stdint.h>

/* One row of table predictions. Numbers that are NaN, fits_memory < 0 and
 * fit_id <= 0 are stored as NULL, as is an empty model_sha256. */
typedef struct {
    const char *model_id, *model_name, *model_sha256;
    uint32_t input_size;
    const char *device, *framework, *dtype;
    unsigned batch;
    double iteration_ms, lo_ms, hi_ms, conv_ms, nonconv_ms, epoch_s, dataset_size;
    double peak_memory_bytes, energy_kj;
    int fits_memory; /* 1 fits, 0 does not, -1 unknown */
    long long fit_id;
} tc_store_prediction_t;

/* Store `rows` under `request_id` in one transaction; *stored gets how many
 * (0 when it failed). */
int tc_store_predictions_put(tc_store_t *s, const char *request_id,
                             const tc_store_prediction_t *rows, size_t n, size_t *stored);

/* The mean power of a device class while training (view
 * device_training_power) for traces of a framework, dtype and AMP mode. */
typedef struct {
    const char *device;    /* in */
    const char *framework; /* in: NULL or "": any */
    const char *dtype;     /* in: NULL or "": any */
    const char *amp;       /* in: "" without AMP */
    double watts;          /* out: NaN when none of its traces measured energy */
    char source[16];       /* out: the counter ("nvml", "rapl"; "" none) */
} tc_power_query_t;

/* Every query of q[0..n) in one statement. */
int tc_store_device_power_each(tc_store_t *s, tc_power_query_t *q, size_t n);

#endif
