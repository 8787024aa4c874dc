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
 * device_training_power) for traces of this framework, dtype and AMP mode
 * (NULL or "": any framework or dtype; amp NULL: any): *watts, and the
 * counter in `source`; *watts NaN when none of its traces measured energy. */
int tc_store_device_power(tc_store_t *s, const char *device, const char *framework,
                          const char *dtype, const char *amp, double *watts, char *source,
                          size_t size);

#endif
