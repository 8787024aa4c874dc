/* The measured side of the comparison page: a model's traced points and
 * each device's run-to-run variability (views trace_summary). */
#include "store_report.h"
#include "store_internal.h"

#include "tc_buf.h"
#include "tc_error.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

/* A number column, NaN when NULL. */
static double s_num(PGresult *res, int row, int col)
{
    return PQgetisnull(res, row, col) ? NAN : atof(PQgetvalue(res, row, col));
}

int tc_store_measured_points(tc_store_t *s, const char *model_id, const char *const *devices,
                             size_t n, const char *framework, const char *dtype, const char *amp,
                             tc_measured_point_t **out, size_t *n_out)
{
    *out = NULL;
    *n_out = 0;
    if (n == 0)
        return 0;
    tc_buf_t names = {0};
    tc_store_text_array(&names, devices, n);
    if (names.failed) {
        tc_buf_free(&names);
        return tc_fail(TC_ENOMEM, "out of memory");
    }
    const char *p[] = {model_id, names.data, framework, dtype, amp ? amp : ""};
    PGresult *res = NULL;
    int rc = tc_store_query(
        s, &res, "reading the model's traces",
        "SELECT DISTINCT ON (device, batch) device, batch, traces, geomean_ms, min_ms, max_ms "
        "FROM trace_summary "
        "WHERE model_id = $1 AND device = ANY ($2::text[]) AND framework = $3 AND dtype = $4 "
        "AND amp = $5 "
        "ORDER BY device, batch, traces DESC",
        5, p);
    tc_buf_free(&names);
    if (rc < 0)
        return rc;
    size_t rows = (size_t)PQntuples(res);
    tc_measured_point_t *v = calloc(rows + 1, sizeof *v);
    if (!v) {
        PQclear(res);
        return tc_fail(TC_ENOMEM, "out of memory");
    }
    for (size_t i = 0; i < rows; i++) {
        int r = (int)i;
        snprintf(v[i].device, sizeof v[i].device, "%s", PQgetvalue(res, r, 0));
        v[i].batch = (unsigned)strtoul(PQgetvalue(res, r, 1), NULL, 10);
        v[i].traces = atol(PQgetvalue(res, r, 2));
        v[i].measured_ms = s_num(res, r, 3);
        v[i].min_ms = s_num(res, r, 4);
        v[i].max_ms = s_num(res, r, 5);
    }
    PQclear(res);
    *out = v;
    *n_out = rows;
    return 0;
}

int tc_store_device_spread_each(tc_store_t *s, const char *const *devices, size_t n,
                                const char *framework, const char *dtype, tc_device_spread_t *out)
{
    for (size_t i = 0; i < n; i++)
        out[i] = (tc_device_spread_t){0, 0, NAN, NAN, NAN, NAN};
    if (n == 0)
        return 0;
    tc_buf_t names = {0};
    tc_store_text_array(&names, devices, n);
    if (names.failed) {
        tc_buf_free(&names);
        return tc_fail(TC_ENOMEM, "out of memory");
    }
    const char *p[] = {names.data, framework, dtype};
    PGresult *res = NULL;
    int rc = tc_store_query(
        s, &res, "reading the devices' trace spread",
        "SELECT device, count(*), count(*) FILTER (WHERE traces > 1), "
        "percentile_cont(0.5) WITHIN GROUP (ORDER BY spread_between_traces), "
        "max(spread_between_traces), "
        "percentile_cont(0.5) WITHIN GROUP (ORDER BY spread_within_trace), "
        "avg(abs(half_a_geomean_ms - half_b_geomean_ms) / nullif(2 * geomean_ms, 0)) "
        "FROM trace_summary "
        "WHERE device = ANY ($1::text[]) AND framework = $2 AND dtype = $3 "
        "GROUP BY device",
        3, p);
    tc_buf_free(&names);
    if (rc < 0)
        return rc;
    for (int r = 0; r < PQntuples(res); r++) {
        size_t i = tc_store_name_index(devices, n, PQgetvalue(res, r, 0));
        if (i == n)
            continue;
        out[i].points = atol(PQgetvalue(res, r, 1));
        out[i].repeated = atol(PQgetvalue(res, r, 2));
        out[i].between_median = s_num(res, r, 3);
        out[i].between_max = s_num(res, r, 4);
        out[i].within_median = s_num(res, r, 5);
        out[i].noise_floor = s_num(res, r, 6);
    }
    PQclear(res);
    return 0;
}
