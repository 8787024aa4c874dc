/* Storing matmuls: the results of a ConvResults message (docs/matmul-
 * benchmarks.md), in the same transaction as its convs, and a model
 * graph's matmul list (model_matmuls). The ids of a message's
 * distinct matmul configs in one statement (the same statement as the
 * conv configs', generated from the matmul key's list), then its rows in
 * one INSERT from JSON. A matmul message is a few dozen rows: it needs
 * none of the convs' COPY batching. */
#include "store_internal.h"

#include "tc_error.h"
#include "tc_matmul.h"
#include "tc_wire.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MM_COLS TC_SQL_MATMUL_KEY_COLS("")

/* As the conv configs' statement (store_put_conv.c): config_id carries each
 * config's position in the list on the way in. */
static const char s_configs_sql[] =
    "WITH v AS (SELECT * FROM json_populate_recordset(NULL::matmul_configs, $1)), "
    "ins AS (INSERT INTO matmul_configs (" MM_COLS ") SELECT " MM_COLS " FROM v "
    "ON CONFLICT DO NOTHING RETURNING config_id, " MM_COLS ") "
    "SELECT v.config_id, coalesce(ins.config_id, mc.config_id) FROM v "
    "LEFT JOIN ins ON " TC_SQL_MATMUL_KEY_EQ("ins", "v") " "
    "LEFT JOIN matmul_configs mc ON " TC_SQL_MATMUL_KEY_EQ("mc", "v");

/* A config committed by another connection while the first statement ran
 * is in neither of its answers: a second look finds it. */
static const char s_reread_sql[] =
    "SELECT v.config_id, mc.config_id FROM json_populate_recordset(NULL::matmul_configs, $1) v "
    "JOIN matmul_configs mc ON " TC_SQL_MATMUL_KEY_EQ("mc", "v");

#define RESULT_COLS                                                                                \
    "message_id, seq, device_id, config_id, batch, direction, policy, backend, algo, route, "     \
    "median_ms, min_ms, max_ms, stddev_ms, repetitions, measured_at, samples_ms, "               \
    "sample_offsets_us, sm_clock_mhz, power_w, load_others_pct, load_steal_pct, "                \
    "gpu_other_processes, load_threshold_pct, remeasured, disturbed, canary_ms, supersedes_at"

static const char s_results_sql[] = "INSERT INTO matmul_results (" RESULT_COLS ") SELECT " RESULT_COLS
                                    " FROM json_populate_recordset(NULL::matmul_results, $1)";

static void s_take_ids(PGresult *res, size_t n, long long *ids)
{
    for (int r = 0; r < PQntuples(res); r++) {
        long long pos = atoll(PQgetvalue(res, r, 0));
        if (pos >= 0 && (size_t)pos < n && !PQgetisnull(res, r, 1))
            ids[pos] = atoll(PQgetvalue(res, r, 1));
    }
}

int tc_store_matmul_config_ids(tc_store_t *s, const Traincast__V1__MatmulConfig *const *cfgs,
                               size_t n_cfgs, size_t *of, long long *ids, size_t *n_keys)
{
    size_t n = 0;
    tc_matmul_config_t *keys = calloc(n_cfgs ? n_cfgs : 1, sizeof *keys);
    tc_buf_t json = {0};
    tc_buf_putc(&json, '[');
    for (size_t i = 0; keys && i < n_cfgs; i++) {
        tc_matmul_config_t k;
        tc_matmul_config_from_proto(cfgs[i], &k);
        k.minibatch = 0; /* not part of the key */
        size_t j = 0;
        while (j < n && tc_matmul_key_cmp(&keys[j], &k) != 0)
            j++;
        if (j == n) {
            keys[n++] = k;
            ids[j] = 0;
            tc_buf_printf(&json, "%s{", j ? "," : "");
            tc_matmul_key_json(&json, &k);
            tc_buf_printf(&json, ",\"config_id\":%zu}", j);
        }
        of[i] = j;
    }
    tc_buf_putc(&json, ']');
    free(keys);
    *n_keys = n;
    if (!keys || json.failed) {
        tc_buf_free(&json);
        return tc_fail(TC_ENOMEM, "out of memory");
    }
    const char *params[] = {json.data};
    PGresult *res = NULL;
    int rc = tc_store_query(s, &res, "recording matmul configs", s_configs_sql, 1, params);
    if (rc == 0) {
        s_take_ids(res, n, ids);
        PQclear(res);
    }
    bool missing = false;
    for (size_t i = 0; rc == 0 && i < n; i++)
        missing |= ids[i] == 0;
    if (rc == 0 && missing) {
        rc = tc_store_query(s, &res, "reading matmul configs back", s_reread_sql, 1, params);
        if (rc == 0) {
            s_take_ids(res, n, ids);
            PQclear(res);
        }
        for (size_t i = 0; rc == 0 && i < n; i++)
            if (ids[i] == 0)
                rc = tc_fail(TC_EDB, "database: a matmul config could not be read back");
    }
    tc_buf_free(&json);
    return rc;
}

int tc_store_put_model_matmuls(tc_store_t *s, const Traincast__V1__ModelGraph *g)
{
    if (!g->matmuls_listed)
        return 0;
    const char *idp[] = {g->model_id};
    PGresult *res = NULL;
    int rc = tc_store_query(s, &res, "recording the model's matmul list",
                            "UPDATE models SET matmuls_listed = true WHERE model_id = $1 "
                            "AND NOT matmuls_listed RETURNING 1",
                            1, idp);
    if (rc < 0)
        return rc;
    bool listed_now = PQntuples(res) > 0;
    PQclear(res);
    if (!listed_now || g->n_matmuls == 0)
        return 0; /* listed before (the same structure), or none to list */
    size_t n = g->n_matmuls, n_keys = 0;
    const Traincast__V1__MatmulConfig **cfgs = calloc(n, sizeof *cfgs);
    size_t *of = calloc(n, sizeof *of);
    long long *ids = calloc(n, sizeof *ids);
    tc_buf_t json = {0};
    rc = cfgs && of && ids ? 0 : tc_fail(TC_ENOMEM, "out of memory");
    for (size_t i = 0; rc == 0 && i < n; i++)
        cfgs[i] = g->matmuls[i]->config;
    if (rc == 0)
        rc = tc_store_matmul_config_ids(s, cfgs, n, of, ids, &n_keys);
    tc_buf_putc(&json, '[');
    for (size_t i = 0; rc == 0 && i < n; i++) {
        const Traincast__V1__MatmulUsage *u = g->matmuls[i];
        tc_buf_printf(&json, "%s{\"config_id\":%lld,\"grad_a\":%s,\"grad_b\":%s,"
                             "\"multiplicity\":%u}",
                      i ? "," : "", ids[of[i]], u->grad_a ? "true" : "false",
                      u->grad_b ? "true" : "false", u->multiplicity);
    }
    tc_buf_putc(&json, ']');
    if (rc == 0 && json.failed)
        rc = tc_fail(TC_ENOMEM, "out of memory");
    if (rc == 0) {
        const char *p[] = {g->model_id, json.data};
        rc = tc_store_query(s, NULL, "recording model matmuls",
                            "INSERT INTO model_matmuls (model_id, config_id, grad_a, grad_b, "
                            "multiplicity) SELECT $1, v.config_id, v.grad_a, v.grad_b, "
                            "sum(v.multiplicity) FROM json_to_recordset($2::json) AS v "
                            "(config_id bigint, grad_a boolean, grad_b boolean, multiplicity "
                            "integer) GROUP BY 2, 3, 4",
                            2, p);
    }
    tc_buf_free(&json);
    free(cfgs);
    free(of);
    free(ids);
    return rc;
}

/* A unix-microsecond time as a JSON timestamptz; 0 (or less) null. */
static void s_json_time(tc_buf_t *b, long long us)
{
    if (us > 0) {
        char t[64];
        tc_store_time_param(us, t, sizeof t);
        tc_buf_json_str(b, t);
    } else {
        tc_buf_puts(b, "null");
    }
}

static void s_json_opt_num(tc_buf_t *b, const char *name, bool set, double v)
{
    tc_buf_printf(b, ",\"%s\":", name);
    if (set)
        tc_buf_json_num(b, v);
    else
        tc_buf_puts(b, "null");
}

/* One result as a JSON object of matmul_results' columns. */
static void s_row(tc_buf_t *b, const tc_envelope_t *env, const char *device_id, size_t seq,
                  long long config_id, const Traincast__V1__ConvResult *r)
{
    const Traincast__V1__ConvResults *cr = env->conv_results;
    tc_buf_puts(b, "{\"message_id\":");
    tc_buf_json_str(b, env->message_id);
    tc_buf_printf(b, ",\"seq\":%zu,\"device_id\":%s,\"config_id\":%lld,\"batch\":%u", seq,
                  device_id, config_id, r->matmul->minibatch);
    tc_buf_printf(b, ",\"direction\":\"%s\",\"policy\":\"%s\",\"backend\":",
                  tc_direction_name(r->direction), tc_policy_name(r->policy));
    tc_buf_json_str(b, cr->backend ? cr->backend : "");
    tc_buf_puts(b, ",\"algo\":");
    tc_buf_json_str(b, r->algo);
    tc_buf_puts(b, ",\"route\":");
    if (r->route && *r->route)
        tc_buf_json_str(b, r->route);
    else
        tc_buf_puts(b, "null");
    s_json_opt_num(b, "median_ms", true, r->median_ms);
    s_json_opt_num(b, "min_ms", true, r->min_ms);
    s_json_opt_num(b, "max_ms", true, r->max_ms);
    s_json_opt_num(b, "stddev_ms", true, r->stddev_ms);
    tc_buf_printf(b, ",\"repetitions\":%u,\"measured_at\":", r->repetitions);
    s_json_time(b, r->measured_at_us);
    tc_buf_puts(b, ",\"samples_ms\":[");
    for (size_t i = 0; i < r->n_samples_ms; i++) {
        if (i)
            tc_buf_putc(b, ',');
        tc_buf_json_num(b, r->samples_ms[i]);
    }
    tc_buf_puts(b, "],\"sample_offsets_us\":[");
    for (size_t i = 0; i < r->n_sample_offsets_us; i++)
        tc_buf_printf(b, "%s%lld", i ? "," : "", (long long)r->sample_offsets_us[i]);
    tc_buf_printf(b, "],\"sm_clock_mhz\":%u", r->sm_clock_mhz);
    s_json_opt_num(b, "power_w", true, r->power_w);
    const Traincast__V1__Load *l = r->load;
    s_json_opt_num(b, "load_others_pct", l, l ? l->others_pct : 0);
    s_json_opt_num(b, "load_steal_pct", l, l ? l->steal_pct : 0);
    s_json_opt_num(b, "gpu_other_processes", l, l ? l->gpu_other_processes : 0);
    s_json_opt_num(b, "load_threshold_pct", l, l ? l->threshold_pct : 0);
    s_json_opt_num(b, "remeasured", l, l ? l->remeasured : 0);
    tc_buf_printf(b, ",\"disturbed\":%s", l && l->disturbed ? "true" : "false");
    s_json_opt_num(b, "canary_ms", l && l->canary_ms > 0, l ? l->canary_ms : 0);
    tc_buf_puts(b, ",\"supersedes_at\":");
    s_json_time(b, l ? l->supersedes_us : 0);
    tc_buf_putc(b, '}');
}

int tc_store_put_matmul_results(tc_store_t *s, const tc_envelope_t *env, const char *device_id)
{
    const Traincast__V1__ConvResults *cr = env->conv_results;
    size_t n = cr->n_matmul_results;
    if (!n)
        return 0;
    size_t *of = calloc(n, sizeof *of);
    const Traincast__V1__MatmulConfig **cfgs = calloc(n, sizeof *cfgs);
    long long *ids = calloc(n, sizeof *ids);
    tc_buf_t rows = {0};
    size_t n_keys = 0;
    int rc = of && cfgs && ids ? 0 : tc_fail(TC_ENOMEM, "out of memory");
    for (size_t i = 0; rc == 0 && i < n; i++)
        cfgs[i] = cr->matmul_results[i]->matmul;
    if (rc == 0)
        rc = tc_store_matmul_config_ids(s, cfgs, n, of, ids, &n_keys);
    if (rc == 0) {
        tc_buf_putc(&rows, '[');
        for (size_t i = 0; i < n; i++) {
            if (i)
                tc_buf_putc(&rows, ',');
            s_row(&rows, env, device_id, i, ids[of[i]], cr->matmul_results[i]);
        }
        tc_buf_putc(&rows, ']');
        if (rows.failed)
            rc = tc_fail(TC_ENOMEM, "out of memory building the rows of matmul results");
    }
    if (rc == 0) {
        const char *params[] = {rows.data};
        PGresult *res = NULL;
        rc = tc_store_query(s, &res, "recording matmul results", s_results_sql, 1, params);
        if (rc == 0)
            PQclear(res);
    }
    tc_buf_free(&rows);
    free(of);
    free(cfgs);
    free(ids);
    return rc;
}
