/* Recording predictions (schema/008: table predictions, view
 * prediction_vs_trace). */
#ifndef TC_STORE_PREDICT_H
#define TC_STORE_PREDICT_H

#include "predict.h"
#include "store.h"

/* Store every predicted row (status TC_PT_OK) of `devs` under `request_id`
 * in one transaction; *stored gets how many. */
int tc_store_predictions_put(tc_store_t *s, const char *request_id, const tc_model_t *model,
                             const tc_pred_request_t *req, const tc_pred_device_t *devs,
                             size_t n, size_t *stored);

/* The mean power of a device class while training (view
 * device_training_power) for traces of this framework, dtype and AMP mode
 * (NULL or "": any framework or dtype; amp NULL: any): *watts, and the
 * counter in `source`; *watts NaN when none of its traces measured energy. */
int tc_store_device_power(tc_store_t *s, const char *device, const char *framework,
                          const char *dtype, const char *amp, double *watts, char *source,
                          size_t size);

#endif
