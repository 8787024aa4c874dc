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

int tc_store_device_power_each(tc_store_t *s, tc_power_query_t *q, size_t n)
{
    if (n == 0)
        return 0;
    const char **v = calloc(4 * n, sizeof *v);
    if (!v)
        return tc_fail(TC_ENOMEM, "out of memory");
    for (size_t i = 0; i < n; i++) {
        q[i].watts = NAN;
        q[i].source[0] = '\0';
        v[i] = q[i].device;
        v[n + i] = q[i].framework;
        v[2 * n + i] = q[i].dtype;
        v[3 * n + i] = q[i].amp;
    }
    tc_buf_t arr[4] = {{0}};
    for (int k = 0; k < 4; k++)
        tc_store_text_array(&arr[k], v + (size_t)k * n, n);
    free(v);
    const char *params[] = {arr[0].data, arr[1].data, arr[2].data, arr[3].data};
    PGresult *res = NULL;
    int rc = tc_store_query(s, &res, "reading the devices' training power",
                            "SELECT q.i, p.watts, p.energy_source FROM unnest($1::text[], "
                            "$2::text[], $3::text[], $4::text[]) WITH ORDINALITY "
                            "AS q (device, framework, dtype, amp, i) CROSS JOIN LATERAL "
                            "(SELECT watts, energy_source FROM device_training_power p WHERE "
                            "p.device = q.device AND (q.framework = '' OR p.framework = "
                            "q.framework) AND (q.dtype = '' OR p.dtype = q.dtype) AND "
                            "p.amp = q.amp ORDER BY p.traces DESC LIMIT 1) p "
                            "WHERE p.watts IS NOT NULL",
                            4, params);
    for (int k = 0; k < 4; k++)
        tc_buf_free(&arr[k]);
    for (int r = 0; rc == 0 && r < PQntuples(res); r++) {
        long i = atol(PQgetvalue(res, r, 0)) - 1;
        if (i < 0 || (size_t)i >= n)
            continue;
        q[i].watts = strtod(PQgetvalue(res, r, 1), NULL);
        snprintf(q[i].source, sizeof q[i].source, "%s", PQgetvalue(res, r, 2));
    }
    PQclear(res);
    return rc;
}
