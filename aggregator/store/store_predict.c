#include "store_predict.h"

#include "store_internal.h"

#include "tc_error.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

int tc_store_predictions_put(tc_store_t *s, const char *request_id,
                             const tc_store_prediction_t *rows, size_t n, size_t *stored)
{
    *stored = 0;
    if (n == 0)
        return 0;
    tc_buf_t b = {0};
    for (size_t i = 0; i < n; i++) {
        const tc_store_prediction_t *r = &rows[i];
        tc_copy_text(&b, request_id, 0);
        tc_copy_text(&b, r->model_id, 0);
        tc_copy_text(&b, r->model_name, 0);
        tc_copy_text(&b, r->model_sha256 && *r->model_sha256 ? r->model_sha256 : NULL, 0);
        tc_copy_int(&b, r->input_size, 0);
        tc_copy_text(&b, r->device, 0);
        tc_copy_int(&b, r->batch, 0);
        tc_copy_text(&b, r->framework ? r->framework : "", 0);
        tc_copy_text(&b, r->dtype ? r->dtype : "", 0);
        tc_copy_double(&b, r->iteration_ms, 0);
        tc_copy_double(&b, r->lo_ms, 0);
        tc_copy_double(&b, r->hi_ms, 0);
        tc_copy_double(&b, r->conv_ms, 0);
        tc_copy_double(&b, r->nonconv_ms, 0);
        tc_copy_double(&b, r->epoch_s, 0);
        tc_copy_double(&b, r->dataset_size, 0);
        tc_copy_double(&b, r->peak_memory_bytes, 0);
        if (r->fits_memory < 0)
            tc_copy_text(&b, NULL, 0);
        else
            tc_copy_bool(&b, r->fits_memory, 0);
        if (r->fit_id > 0)
            tc_copy_int(&b, r->fit_id, 0);
        else
            tc_copy_text(&b, NULL, 0);
        tc_copy_double(&b, r->energy_kj, 1);
    }
    /* One COPY: one statement, so all rows or none. */
    int rc = tc_store_copy(s, "recording predictions",
                           "COPY predictions (request_id, model_id, model_name, model_sha256, "
                           "input_size, device, batch, framework, dtype, iteration_ms, lo_ms, "
                           "hi_ms, conv_ms, nonconv_ms, epoch_s, dataset_size, "
                           "peak_memory_bytes, fits_memory, fit_id, energy_kj) FROM STDIN",
                           &b);
    tc_buf_free(&b);
    if (rc == 0)
        *stored = n;
    return rc;
}

int tc_store_device_power(tc_store_t *s, const char *device, const char *framework,
                          const char *dtype, const char *amp, double *watts, char *source,
                          size_t size)
{
    *watts = NAN;
    if (size)
        source[0] = '\0';
    const char *params[] = {device, framework && *framework ? framework : NULL,
                            dtype && *dtype ? dtype : NULL, amp};
    PGresult *res = NULL;
    int rc = tc_store_query(s, &res, "reading the device's training power",
                            "SELECT watts, energy_source FROM device_training_power WHERE "
                            "device = $1 AND ($2::text IS NULL OR framework = $2) AND "
                            "($3::text IS NULL OR dtype = $3) AND ($4::text IS NULL OR amp = $4) "
                            "ORDER BY traces DESC LIMIT 1",
                            4, params);
    if (rc == 0 && PQntuples(res) == 1 && !PQgetisnull(res, 0, 0)) {
        *watts = strtod(PQgetvalue(res, 0, 0), NULL);
        snprintf(source, size, "%s", PQgetvalue(res, 0, 1));
    }
    PQclear(res);
    return rc;
}
