#include "store_predict.h"

#include "store_internal.h"

#include "tc_error.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

static const char *s_num(char *buf, size_t size, double v)
{
    if (!isfinite(v))
        return NULL;
    snprintf(buf, size, "%.17g", v);
    return buf;
}

int tc_store_predictions_put(tc_store_t *s, const char *request_id,
                             const tc_store_prediction_t *rows, size_t n, size_t *stored)
{
    *stored = 0;
    int rc = tc_store_begin(s);
    for (size_t i = 0; rc == 0 && i < n; i++) {
        const tc_store_prediction_t *r = &rows[i];
        char input[16], batch[16], fit_id[32], v[10][40];
        snprintf(input, sizeof input, "%u", r->input_size);
        snprintf(batch, sizeof batch, "%u", r->batch);
        snprintf(fit_id, sizeof fit_id, "%lld", r->fit_id);
        const char *params[] = {
            request_id,
            r->model_id,
            r->model_name,
            r->model_sha256 && *r->model_sha256 ? r->model_sha256 : NULL,
            input,
            r->device,
            batch,
            r->framework ? r->framework : "",
            r->dtype ? r->dtype : "",
            s_num(v[0], sizeof v[0], r->iteration_ms),
            s_num(v[1], sizeof v[1], r->lo_ms),
            s_num(v[2], sizeof v[2], r->hi_ms),
            s_num(v[3], sizeof v[3], r->conv_ms),
            s_num(v[4], sizeof v[4], r->nonconv_ms),
            s_num(v[5], sizeof v[5], r->epoch_s),
            s_num(v[6], sizeof v[6], r->dataset_size),
            s_num(v[7], sizeof v[7], r->peak_memory_bytes),
            r->fits_memory > 0 ? "true" : r->fits_memory == 0 ? "false" : NULL,
            r->fit_id > 0 ? fit_id : NULL,
            s_num(v[8], sizeof v[8], r->energy_kj),
        };
        rc = tc_store_query(
            s, NULL, "recording a prediction",
            "INSERT INTO predictions (request_id, model_id, model_name, model_sha256, "
            "input_size, device, batch, framework, dtype, iteration_ms, lo_ms, hi_ms, "
            "conv_ms, nonconv_ms, epoch_s, dataset_size, peak_memory_bytes, fits_memory, "
            "fit_id, energy_kj) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, "
            "$13, $14, $15, $16, $17, $18, $19, $20)",
            20, params);
        if (rc == 0)
            (*stored)++;
    }
    if (rc == 0)
        rc = tc_store_commit(s);
    if (rc < 0) {
        tc_store_rollback(s);
        *stored = 0;
    }
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
