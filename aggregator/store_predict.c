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

int tc_store_predictions_put(tc_store_t *s, const char *request_id, const tc_model_t *model,
                             const tc_pred_request_t *req, const tc_pred_device_t *devs,
                             size_t n, size_t *stored)
{
    *stored = 0;
    uint32_t c, h, w;
    tc_model_input(model, &c, &h, &w);
    char input[16];
    snprintf(input, sizeof input, "%u", h);
    int rc = tc_store_begin(s);
    for (size_t i = 0; rc == 0 && i < n; i++) {
        const tc_pred_device_t *d = &devs[i];
        if (d->status != TC_PRED_OK)
            continue;
        char fit_id[32];
        snprintf(fit_id, sizeof fit_id, "%lld", d->fit.fit_id);
        for (size_t j = 0; rc == 0 && j < d->n_points; j++) {
            const tc_pred_point_t *p = &d->points[j];
            if (p->status != TC_PT_OK)
                continue;
            char batch[16], v[10][40];
            snprintf(batch, sizeof batch, "%u", p->batch);
            const char *params[] = {
                request_id,
                tc_model_id(model),
                tc_model_name(model),
                *tc_model_sha256(model) ? tc_model_sha256(model) : NULL,
                input,
                d->device.name,
                batch,
                *d->fit.framework ? d->fit.framework : (req->framework ? req->framework : ""),
                *d->fit.dtype ? d->fit.dtype : (req->dtype ? req->dtype : ""),
                s_num(v[0], sizeof v[0], p->total_ms),
                s_num(v[1], sizeof v[1], p->lo_ms),
                s_num(v[2], sizeof v[2], p->hi_ms),
                s_num(v[3], sizeof v[3], p->conv_ms),
                s_num(v[4], sizeof v[4], p->nonconv_ms),
                s_num(v[5], sizeof v[5], p->epoch_s),
                s_num(v[6], sizeof v[6], req->dataset_size),
                s_num(v[7], sizeof v[7], p->peak_bytes),
                p->fits > 0 ? "true" : p->fits == 0 ? "false" : NULL,
                d->fit.fit_id > 0 ? fit_id : NULL,
                s_num(v[8], sizeof v[8], p->energy_kj),
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
