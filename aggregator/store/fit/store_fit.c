/* Writing and reading fits (schema/003_fits.sql). */
#include "store_fit.h"
#include "store_internal.h"

#include "tc_error.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void s_num(char *buf, size_t size, double v)
{
    snprintf(buf, size, "%.17g", v);
}

/* A text[] literal of names restricted to [a-z0-9_.]. */
static int s_name_array(tc_buf_t *b, const char *const *names, size_t n)
{
    tc_buf_putc(b, '{');
    for (size_t i = 0; i < n; i++) {
        for (const char *c = names[i]; *c; c++) {
            if (!islower((unsigned char)*c) && !isdigit((unsigned char)*c) && *c != '_' &&
                *c != '.')
                return tc_fail(TC_EINVAL, "feature name '%s' may only hold a-z, 0-9, '_' and '.'",
                               names[i]);
        }
        tc_buf_printf(b, i ? ",\"%s\"" : "\"%s\"", names[i]);
    }
    tc_buf_putc(b, '}');
    return 0;
}

static void s_double_array(tc_buf_t *b, const double *v, size_t n)
{
    tc_buf_putc(b, '{');
    for (size_t i = 0; i < n; i++)
        tc_buf_printf(b, i ? ",%.17g" : "%.17g", v[i]);
    tc_buf_putc(b, '}');
}

static int s_cmp_unsigned(const void *a, const void *b)
{
    unsigned x = *(const unsigned *)a, y = *(const unsigned *)b;
    return (x > y) - (x < y);
}

/* The distinct model ids and batches of a group, as array literals. */
static int s_data_range(const tc_fit_group_t *g, tc_buf_t *models, tc_buf_t *batches)
{
    const char **ids = calloc(g->n_points + 1, sizeof *ids);
    unsigned *bs = calloc(g->n_points + 1, sizeof *bs);
    if (!ids || !bs) {
        free(ids);
        free(bs);
        return tc_fail(TC_ENOMEM, "out of memory");
    }
    size_t n_ids = 0, n_bs = 0;
    for (size_t i = 0; i < g->n_points; i++) {
        size_t k = 0;
        while (k < n_ids && strcmp(ids[k], g->points[i].model_id))
            k++;
        if (k == n_ids)
            ids[n_ids++] = g->points[i].model_id;
        k = 0;
        while (k < n_bs && bs[k] != g->points[i].batch)
            k++;
        if (k == n_bs)
            bs[n_bs++] = g->points[i].batch;
    }
    qsort(bs, n_bs, sizeof *bs, s_cmp_unsigned);
    tc_store_text_array(models, ids, n_ids);
    tc_buf_putc(batches, '{');
    for (size_t i = 0; i < n_bs; i++)
        tc_buf_printf(batches, i ? ",%u" : "%u", bs[i]);
    tc_buf_putc(batches, '}');
    free(ids);
    free(bs);
    return 0;
}

static int s_put_points(tc_store_t *s, const tc_fit_t *fit, const tc_fit_group_t *g,
                        const double *fitted, const tc_fit_held_out_t *held)
{
    tc_buf_t rows = {0};
    int rc = 0;
    for (size_t i = 0; i < g->n_points && rc == 0; i++) {
        const tc_fit_point_t *pt = &g->points[i];
        double x[TC_FIT_MAX_FEATURES];
        for (size_t j = 0; j < fit->p && rc == 0; j++)
            rc = tc_fit_feature_at(&pt->features, pt->conv_ms + (fit->matmuls ? pt->matmul_ms : 0),
                                   fit->features[j], &x[j]);
        tc_copy_int(&rows, fit->fit_id, 0);
        tc_copy_text(&rows, pt->model_id, 0);
        tc_copy_text(&rows, pt->cnn, 0);
        tc_copy_int(&rows, pt->batch, 0);
        tc_copy_int(&rows, pt->traces, 0);
        tc_copy_double(&rows, pt->measured_ms, 0);
        tc_copy_double(&rows, pt->conv_ms, 0);
        tc_copy_double(&rows, fitted[i], 0);
        tc_copy_double(&rows, held && held->ms ? held->ms[i] : NAN, 0);
        tc_copy_double_array(&rows, x, fit->p, 0);
        tc_copy_double(&rows, held && held->lo_ms ? held->lo_ms[i] : NAN, 0);
        tc_copy_double(&rows, held && held->hi_ms ? held->hi_ms[i] : NAN, 0);
        tc_copy_double(&rows, fit->matmuls ? pt->matmul_ms : NAN, 1);
    }
    if (rc == 0)
        rc = tc_store_copy(s, "recording fit points",
                           "COPY fit_points (fit_id, model_id, cnn, batch, traces, measured_ms, "
                           "conv_ms, fitted_ms, held_out_ms, feature_values, held_out_lo_ms, "
                           "held_out_hi_ms, matmul_ms) FROM STDIN",
                           &rows);
    tc_buf_free(&rows);
    return rc;
}

int tc_store_fit_put(tc_store_t *s, tc_fit_t *fit, const tc_fit_group_t *g, const double *fitted,
                     const tc_fit_held_out_t *held, const char *const *candidates,
                     size_t n_candidates)
{
    tc_buf_t features = {0}, coef = {0}, cov = {0}, cand = {0}, models = {0}, batches = {0};
    const char *names[TC_FIT_MAX_FEATURES];
    for (size_t j = 0; j < fit->p; j++)
        names[j] = fit->features[j];
    int rc = s_name_array(&features, names, fit->p);
    if (rc == 0)
        rc = s_name_array(&cand, candidates, n_candidates);
    if (rc == 0)
        rc = s_data_range(g, &models, &batches);
    if (rc < 0)
        goto done;
    s_double_array(&coef, fit->coef, fit->p);
    tc_buf_putc(&cov, '{');
    for (size_t a = 0; a < fit->p; a++) {
        tc_buf_puts(&cov, a ? "," : "");
        s_double_array(&cov, fit->cov + a * fit->p, fit->p);
    }
    tc_buf_putc(&cov, '}');
    if (features.failed || coef.failed || cov.failed || cand.failed || models.failed ||
        batches.failed) {
        rc = tc_fail(TC_ENOMEM, "out of memory building a fit");
        goto done;
    }

    char rse[40], dof[40], lambda[40], n_points[24], n_cnns[24], oom[24], failed[24], cv[40],
        cv_med[40], cv_max[40], sel[40], conv_only[40], ilo[40], ihi[40];
    s_num(rse, sizeof rse, fit->rse);
    s_num(dof, sizeof dof, fit->dof);
    s_num(lambda, sizeof lambda, fit->lambda);
    snprintf(n_points, sizeof n_points, "%zu", fit->n_points);
    snprintf(n_cnns, sizeof n_cnns, "%zu", fit->n_cnns);
    snprintf(oom, sizeof oom, "%zu", fit->excluded_oom);
    snprintf(failed, sizeof failed, "%zu", fit->excluded_failed);
    s_num(cv, sizeof cv, fit->cv_mape);
    s_num(cv_med, sizeof cv_med, fit->cv_median_ape);
    s_num(cv_max, sizeof cv_max, fit->cv_max_ape);
    s_num(sel, sizeof sel, fit->selection_mape);
    s_num(conv_only, sizeof conv_only, fit->conv_only_mape);
    s_num(ilo, sizeof ilo, fit->interval_lo);
    s_num(ihi, sizeof ihi, fit->interval_hi);
    bool interval = isfinite(fit->interval_lo) && isfinite(fit->interval_hi);
    const char *params[] = {fit->device,
                            fit->framework,
                            *fit->policy ? fit->policy : NULL,
                            fit->dtype,
                            fit->conv_policy,
                            tc_fit_form_name(fit->form),
                            tc_fit_weighting_name(fit->weighting),
                            tc_buf_str(&features),
                            tc_buf_str(&coef),
                            fit->p ? tc_buf_str(&cov) : "{}",
                            isfinite(fit->rse) ? rse : NULL,
                            dof,
                            fit->form == TC_FIT_RIDGE ? lambda : NULL,
                            tc_buf_str(&cand),
                            n_points,
                            n_cnns,
                            tc_buf_str(&models),
                            tc_buf_str(&batches),
                            oom,
                            failed,
                            isfinite(fit->cv_mape) ? cv : NULL,
                            isfinite(fit->cv_median_ape) ? cv_med : NULL,
                            isfinite(fit->cv_max_ape) ? cv_max : NULL,
                            isfinite(fit->selection_mape) ? sel : NULL,
                            isfinite(fit->conv_only_mape) ? conv_only : NULL,
                            *g->data_through ? g->data_through : NULL,
                            tc_fit_stat_name(fit->stat),
                            interval ? ilo : NULL,
                            interval ? ihi : NULL,
                            fit->amp,
                            fit->library_version,
                            fit->settings,
                            fit->matmuls ? "true" : "false"};
    rc = tc_store_begin(s);
    if (rc < 0)
        goto done;
    PGresult *res = NULL;
    rc = tc_store_query(
        s, &res, "recording the fit",
        "INSERT INTO fits (device, framework, policy, dtype, conv_policy, form, weighting, "
        "features, coefficients, covariance, rse, dof, ridge_lambda, candidates, n_points, "
        "n_cnns, models, batches, excluded_oom, excluded_failed, cv_mape, cv_median_ape, "
        "cv_max_ape, selection_mape, conv_only_mape, data_through, stat, interval_lo, "
        "interval_hi, amp, library_version, settings, matmuls) VALUES ($1, $2, $3, $4, $5, $6, "
        "$7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22, $23, $24, "
        "$25, $26, $27, $28, $29, $30, $31, $32, $33) "
        "RETURNING fit_id, (extract(epoch FROM fitted_at) * 1000000)::bigint",
        33, params);
    if (rc == 0) {
        fit->fit_id = strtoll(PQgetvalue(res, 0, 0), NULL, 10);
        fit->fitted_at_us = strtoll(PQgetvalue(res, 0, 1), NULL, 10);
        PQclear(res);
        rc = s_put_points(s, fit, g, fitted, held);
    }
    if (rc == 0)
        rc = tc_store_commit(s);
    if (rc < 0) {
        tc_store_rollback(s);
        fit->fit_id = 0;
    }
done:
    tc_buf_free(&features);
    tc_buf_free(&coef);
    tc_buf_free(&cov);
    tc_buf_free(&cand);
    tc_buf_free(&models);
    tc_buf_free(&batches);
    return rc;
}

/* Split "a,b,c" of numbers into v (at most max); returns the count or -1. */
static long s_split_doubles(const char *text, double *v, size_t max)
{
    size_t n = 0;
    const char *p = text;
    while (*p) {
        if (n == max)
            return -1;
        char *end;
        v[n++] = strtod(p, &end);
        if (end == p)
            return -1;
        p = *end == ',' ? end + 1 : end;
    }
    return (long)n;
}

#define FIT_COLUMNS "SELECT " FIT_COLUMN_LIST
#define FIT_COLUMN_LIST                                                                         \
    "fit_id, (extract(epoch FROM fitted_at) * 1000000)::bigint, device, framework, "    \
    "coalesce(policy, ''), dtype, conv_policy, form, weighting, array_to_string(features, ','), " \
    "array_to_string(coefficients, ','), array_to_string(covariance, ','), rse, dof, "         \
    "coalesce(ridge_lambda, 0), n_points, n_cnns, (SELECT min(b) FROM unnest(batches) b), "    \
    "(SELECT max(b) FROM unnest(batches) b), excluded_oom, excluded_failed, cv_mape, "         \
    "cv_median_ape, cv_max_ape, selection_mape, conv_only_mape, stat, interval_lo, "         \
    "interval_hi, amp, library_version, settings, matmuls FROM fits "

static double s_col(PGresult *res, int row, int col)
{
    return PQgetisnull(res, row, col) ? NAN : strtod(PQgetvalue(res, row, col), NULL);
}

/* Row `row` of a FIT_COLUMNS result. */
static int s_parse_fit(PGresult *res, int row, tc_fit_t *out)
{
    memset(out, 0, sizeof *out);
    out->fit_id = strtoll(PQgetvalue(res, row, 0), NULL, 10);
    out->fitted_at_us = strtoll(PQgetvalue(res, row, 1), NULL, 10);
    snprintf(out->device, sizeof out->device, "%s", PQgetvalue(res, row, 2));
    snprintf(out->framework, sizeof out->framework, "%s", PQgetvalue(res, row, 3));
    snprintf(out->policy, sizeof out->policy, "%s", PQgetvalue(res, row, 4));
    snprintf(out->dtype, sizeof out->dtype, "%s", PQgetvalue(res, row, 5));
    snprintf(out->conv_policy, sizeof out->conv_policy, "%s", PQgetvalue(res, row, 6));
    int rc = tc_fit_form_parse(PQgetvalue(res, row, 7), &out->form);
    if (rc == 0)
        rc = tc_fit_weighting_parse(PQgetvalue(res, row, 8), &out->weighting);
    if (rc < 0)
        return tc_err_context(rc, "fit %lld", out->fit_id);
    const char *f = PQgetvalue(res, row, 9);
    while (*f) {
        const char *end = strchr(f, ',');
        size_t len = end ? (size_t)(end - f) : strlen(f);
        if (out->p == TC_FIT_MAX_FEATURES || len >= TC_FIT_NAME_LEN)
            return tc_fail(TC_EINVAL, "fit %lld: too many or too long feature names",
                           out->fit_id);
        memcpy(out->features[out->p], f, len);
        out->features[out->p][len] = '\0';
        out->p++;
        f = end ? end + 1 : f + len;
    }
    long nc = s_split_doubles(PQgetvalue(res, row, 10), out->coef, TC_FIT_MAX_FEATURES);
    long ncov = s_split_doubles(PQgetvalue(res, row, 11), out->cov,
                                TC_FIT_MAX_FEATURES * TC_FIT_MAX_FEATURES);
    if (nc != (long)out->p || ncov != (long)(out->p * out->p))
        return tc_fail(TC_EINVAL, "fit %lld: %zu features but %ld coefficients and %ld "
                                  "covariance entries",
                       out->fit_id, out->p, nc, ncov);
    out->rse = s_col(res, row, 12);
    out->dof = s_col(res, row, 13);
    out->lambda = s_col(res, row, 14);
    out->n_points = (size_t)atol(PQgetvalue(res, row, 15));
    out->n_cnns = (size_t)atol(PQgetvalue(res, row, 16));
    out->batch_min = (unsigned)atol(PQgetvalue(res, row, 17));
    out->batch_max = (unsigned)atol(PQgetvalue(res, row, 18));
    out->excluded_oom = (size_t)atol(PQgetvalue(res, row, 19));
    out->excluded_failed = (size_t)atol(PQgetvalue(res, row, 20));
    out->cv_mape = s_col(res, row, 21);
    out->cv_median_ape = s_col(res, row, 22);
    out->cv_max_ape = s_col(res, row, 23);
    out->selection_mape = s_col(res, row, 24);
    out->conv_only_mape = s_col(res, row, 25);
    if (tc_fit_stat_parse(PQgetvalue(res, row, 26), &out->stat) < 0)
        return tc_err_context(TC_EINVAL, "fit %lld", out->fit_id);
    out->interval_lo = s_col(res, row, 27);
    out->interval_hi = s_col(res, row, 28);
    snprintf(out->amp, sizeof out->amp, "%s", PQgetvalue(res, row, 29));
    snprintf(out->library_version, sizeof out->library_version, "%s", PQgetvalue(res, row, 30));
    snprintf(out->settings, sizeof out->settings, "%s", PQgetvalue(res, row, 31));
    out->matmuls = PQgetvalue(res, row, 32)[0] == 't';
    return 0;
}

int tc_store_fit_latest_each(tc_store_t *s, const char *const *devices, size_t n,
                             const char *framework, const char *policy, const char *dtype,
                             const char *amp, tc_fit_t *fits, bool *found)
{
    for (size_t i = 0; i < n; i++)
        found[i] = false;
    if (n == 0)
        return 0;
    tc_buf_t names = {0};
    tc_store_text_array(&names, devices, n);
    const char *params[] = {names.data, framework, policy, dtype, amp};
    PGresult *res = NULL;
    int rc = tc_store_query(s, &res, "reading the latest fits",
                            "SELECT DISTINCT ON (device) " FIT_COLUMN_LIST
                            "WHERE device = ANY ($1::text[]) "
                            "AND ($2::text IS NULL OR framework = $2) "
                            "AND ($3::text IS NULL OR policy IS NOT DISTINCT FROM nullif($3, '')) "
                            "AND ($4::text IS NULL OR dtype = $4) "
                            "AND ($5::text IS NULL OR amp = $5) "
                            "ORDER BY device, fitted_at DESC, fit_id DESC",
                            5, params);
    tc_buf_free(&names);
    for (int r = 0; rc == 0 && r < PQntuples(res); r++) {
        size_t i = tc_store_name_index(devices, n, PQgetvalue(res, r, 2));
        if (i < n && !found[i]) {
            rc = s_parse_fit(res, r, &fits[i]);
            found[i] = rc == 0;
        }
    }
    PQclear(res);
    return rc;
}

int tc_store_fit_latest(tc_store_t *s, const char *device, const char *framework,
                        const char *policy, const char *dtype, const char *amp, tc_fit_t *out)
{
    bool found = false;
    int rc = tc_store_fit_latest_each(s, &device, 1, framework, policy, dtype, amp, out, &found);
    if (rc == 0 && !found)
        return tc_fail(TC_ENOTFOUND, "no fit for device '%s'%s%s%s%s%s%s: run 'aggregator fit "
                                     "--device %s' first",
                       device, framework ? " with framework " : "", framework ? framework : "",
                       dtype ? ", dtype " : "", dtype ? dtype : "",
                       amp ? (*amp ? ", amp " : ", without amp") : "", amp ? amp : "", device);
    return rc;
}

int tc_store_fit_get(tc_store_t *s, long long fit_id, tc_fit_t *out)
{
    char id[24];
    snprintf(id, sizeof id, "%lld", fit_id);
    const char *params[] = {id};
    PGresult *res = NULL;
    int rc = tc_store_query(s, &res, "reading a fit", FIT_COLUMNS "WHERE fit_id = $1", 1, params);
    if (rc < 0)
        return rc;
    if (PQntuples(res) == 0) {
        PQclear(res);
        return tc_fail(TC_ENOTFOUND, "no fit with id %lld", fit_id);
    }
    rc = s_parse_fit(res, 0, out);
    PQclear(res);
    return rc;
}

int tc_store_fit_classes_each(tc_store_t *s, const long long *fit_ids, size_t n, char **bufs,
                              size_t size)
{
    for (size_t i = 0; i < n; i++)
        bufs[i][0] = '\0';
    if (n == 0)
        return 0;
    tc_buf_t ids = {0};
    tc_buf_putc(&ids, '{');
    for (size_t i = 0; i < n; i++)
        tc_buf_printf(&ids, i ? ",%lld" : "%lld", fit_ids[i]);
    tc_buf_putc(&ids, '}');
    const char *params[] = {ids.data};
    PGresult *res = NULL;
    int rc = tc_store_query(s, &res, "reading the classes the fits were trained on",
                            "SELECT f.fit_id, c.classes FROM fits f CROSS JOIN LATERAL "
                            "(SELECT string_agg(k.op_class, ',' ORDER BY k.op_class) AS classes "
                            "FROM (SELECT DISTINCT l.op_class FROM model_layers l "
                            "WHERE l.model_id = ANY (f.models)) k) c "
                            "WHERE f.fit_id = ANY ($1::bigint[]) AND c.classes IS NOT NULL",
                            1, params);
    tc_buf_free(&ids);
    for (int r = 0; rc == 0 && r < PQntuples(res); r++) {
        long long id = strtoll(PQgetvalue(res, r, 0), NULL, 10);
        for (size_t i = 0; i < n; i++) {
            if (fit_ids[i] == id)
                snprintf(bufs[i], size, "%s", PQgetvalue(res, r, 1));
        }
    }
    PQclear(res);
    return rc;
}

int tc_store_fit_paired_ratios(tc_store_t *s, long long fit_a, long long fit_b, double **ra,
                               double **rb, size_t *n)
{
    *ra = *rb = NULL;
    *n = 0;
    char a[24], b[24];
    snprintf(a, sizeof a, "%lld", fit_a);
    snprintf(b, sizeof b, "%lld", fit_b);
    const char *params[] = {a, b};
    PGresult *res = NULL;
    int rc = tc_store_query(s, &res, "pairing held-out predictions of two fits",
                            "SELECT pa.measured_ms / pa.held_out_ms, pb.measured_ms / "
                            "pb.held_out_ms FROM fit_points pa JOIN fit_points pb "
                            "ON pb.fit_id = $2 AND pb.model_id = pa.model_id "
                            "AND pb.batch = pa.batch WHERE pa.fit_id = $1 "
                            "AND pa.held_out_ms > 0 AND pb.held_out_ms > 0",
                            2, params);
    if (rc < 0)
        return rc;
    size_t rows = (size_t)PQntuples(res);
    *ra = calloc(rows + 1, sizeof **ra);
    *rb = calloc(rows + 1, sizeof **rb);
    if (!*ra || !*rb) {
        free(*ra);
        free(*rb);
        *ra = *rb = NULL;
        PQclear(res);
        return tc_fail(TC_ENOMEM, "out of memory");
    }
    for (size_t i = 0; i < rows; i++) {
        (*ra)[i] = strtod(PQgetvalue(res, (int)i, 0), NULL);
        (*rb)[i] = strtod(PQgetvalue(res, (int)i, 1), NULL);
    }
    *n = rows;
    PQclear(res);
    return 0;
}

int tc_store_routing_warnings(tc_store_t *s, const char *const *devices, size_t n, char **bufs,
                              size_t size)
{
    for (size_t i = 0; i < n; i++)
        bufs[i][0] = '\0';
    if (n == 0)
        return 0;
    tc_buf_t names = {0};
    tc_store_text_array(&names, devices, n);
    const char *params[] = {names.data};
    PGresult *res = NULL;
    int rc = tc_store_query(s, &res, "reading the devices' conv routing",
                            "SELECT name, string_agg(DISTINCT coalesce(framework, "
                            "'an unknown framework') || ' (' || routing || ')', ', ') "
                            "FROM devices WHERE name = ANY ($1::text[]) "
                            "AND routing LIKE '%unverified%' GROUP BY name",
                            1, params);
    tc_buf_free(&names);
    for (int r = 0; rc == 0 && r < PQntuples(res); r++) {
        size_t i = tc_store_name_index(devices, n, PQgetvalue(res, r, 0));
        if (i < n)
            snprintf(bufs[i], size, "conv routing unverified for %s: the agent times each conv "
                                    "where the newest checked rule sends it, which this version "
                                    "may not (docs/conv-benchmarks.md)",
                     PQgetvalue(res, r, 1));
    }
    PQclear(res);
    return rc;
}

int tc_store_routing_warning(tc_store_t *s, const char *device, char *buf, size_t size)
{
    return tc_store_routing_warnings(s, &device, 1, &buf, size);
}
