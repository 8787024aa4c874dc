/* Stored models, device classes and conv lookups for predictions. */
#include "store_model.h"
#include "store_internal.h"

#include "tc_conv_key.h"

#include "tc_error.h"
#include "tc_wire.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int s_read_layers(tc_store_t *s, const char *model_id, tc_layer_summary_t **layers,
                         size_t *n)
{
    *layers = NULL;
    *n = 0;
    const char *p[] = {model_id};
    PGresult *res = NULL;
    int rc = tc_store_query(s, &res, "reading model layers",
                            "SELECT op_class, params, flops, elems_in, elems_out "
                            "FROM model_layers WHERE model_id = $1 ORDER BY idx",
                            1, p);
    if (rc < 0)
        return rc;
    size_t rows = (size_t)PQntuples(res);
    if (rows == 0) {
        PQclear(res);
        return tc_fail(TC_ENOTFOUND, "model '%s' has no stored layers", model_id);
    }
    tc_layer_summary_t *l = calloc(rows, sizeof *l);
    if (!l) {
        PQclear(res);
        return tc_fail(TC_ENOMEM, "out of memory for %zu layers", rows);
    }
    for (size_t i = 0; i < rows; i++) {
        int c = tc_op_class_parse(PQgetvalue(res, (int)i, 0));
        l[i].op_class = c < 0 ? TC_OPC_OTHER : (tc_op_class_t)c;
        l[i].params = strtoull(PQgetvalue(res, (int)i, 1), NULL, 10);
        l[i].flops = strtod(PQgetvalue(res, (int)i, 2), NULL);
        l[i].elems_in = strtoull(PQgetvalue(res, (int)i, 3), NULL, 10);
        l[i].elems_out = strtoull(PQgetvalue(res, (int)i, 4), NULL, 10);
    }
    PQclear(res);
    *layers = l;
    *n = rows;
    return 0;
}

struct tc_store_layers {
    char *model_id;
    tc_layer_summary_t *layers;
    size_t n;
};

void tc_store_layers_clear(tc_store_t *s)
{
    for (size_t i = 0; i < s->n_layers; i++) {
        free(s->layers[i].model_id);
        free(s->layers[i].layers);
    }
    free(s->layers);
    s->layers = NULL;
    s->n_layers = 0;
}

int tc_store_model_layers(tc_store_t *s, const char *model_id, tc_layer_summary_t **layers,
                          size_t *n)
{
    *layers = NULL;
    *n = 0;
    size_t i = 0;
    while (i < s->n_layers && strcmp(s->layers[i].model_id, model_id) != 0)
        i++;
    if (i == s->n_layers) {
        tc_layer_summary_t *l = NULL;
        size_t rows = 0;
        int rc = s_read_layers(s, model_id, &l, &rows);
        if (rc < 0)
            return rc;
        struct tc_store_layers *grown = realloc(s->layers, (s->n_layers + 1) * sizeof *grown);
        char *id = strdup(model_id);
        if (!grown || !id) {
            if (grown)
                s->layers = grown;
            free(id);
            free(l);
            return tc_fail(TC_ENOMEM, "out of memory");
        }
        s->layers = grown;
        s->layers[s->n_layers++] = (struct tc_store_layers){.model_id = id, .layers = l, .n = rows};
    }
    /* The caller owns its copy. */
    *layers = malloc(s->layers[i].n * sizeof **layers);
    if (!*layers)
        return tc_fail(TC_ENOMEM, "out of memory for %zu layers", s->layers[i].n);
    memcpy(*layers, s->layers[i].layers, s->layers[i].n * sizeof **layers);
    *n = s->layers[i].n;
    return 0;
}

int tc_store_device_classes(tc_store_t *s, tc_device_class_t **out, size_t *n)
{
    *out = NULL;
    *n = 0;
    PGresult *res = NULL;
    int rc = tc_store_query(
        s, &res, "listing devices",
        "WITH t AS (SELECT device_id, count(*) AS n FROM traces GROUP BY device_id) "
        "SELECT d.name, min(d.kind), coalesce(min(nullif(d.memory_bytes, 0)), 0), count(*), "
        "coalesce(sum(t.n), 0), "
        "EXISTS (SELECT 1 FROM fits f WHERE f.device = d.name), "
        "coalesce(max(d.threads), 0), coalesce(min(d.gpu_index), 0), "
        "coalesce(string_agg(DISTINCT d.host, ','), '') "
        "FROM devices d LEFT JOIN t USING (device_id) "
        "GROUP BY d.name ORDER BY d.name",
        0, NULL);
    if (rc < 0)
        return rc;
    size_t rows = (size_t)PQntuples(res);
    tc_device_class_t *v = calloc(rows + 1, sizeof *v);
    if (!v) {
        PQclear(res);
        return tc_fail(TC_ENOMEM, "out of memory");
    }
    for (size_t i = 0; i < rows; i++) {
        snprintf(v[i].name, sizeof v[i].name, "%s", PQgetvalue(res, (int)i, 0));
        snprintf(v[i].kind, sizeof v[i].kind, "%s", PQgetvalue(res, (int)i, 1));
        v[i].memory_bytes = strtoull(PQgetvalue(res, (int)i, 2), NULL, 10);
        v[i].devices = atol(PQgetvalue(res, (int)i, 3));
        v[i].traces = atol(PQgetvalue(res, (int)i, 4));
        v[i].has_fit = PQgetvalue(res, (int)i, 5)[0] == 't';
        v[i].threads = (unsigned)atoi(PQgetvalue(res, (int)i, 6));
        v[i].gpu_index = atoi(PQgetvalue(res, (int)i, 7));
        snprintf(v[i].hosts, sizeof v[i].hosts, "%s", PQgetvalue(res, (int)i, 8));
    }
    PQclear(res);
    *out = v;
    *n = rows;
    return 0;
}

/* The lookup staging table lives for the connection (emptied at each
 * commit), so a predict creates it once. Created outside a transaction. */
static int s_lookup_table(tc_store_t *s)
{
    if (s->lookup_ready)
        return 0;
    int rc = tc_store_exec(s,
                           "CREATE TEMP TABLE IF NOT EXISTS tc_lookup (set_idx integer, idx "
                           "integer, device text, policy text, library_version text, stat "
                           "text, " TC_SQL_CONV_KEY_DEFS ", batch integer, direction text) "
                           "ON COMMIT DELETE ROWS",
                           NULL, 0);
    if (rc == 0)
        s->lookup_ready = 1;
    return rc;
}

int tc_store_conv_lookup(tc_store_t *s, tc_conv_lookup_set_t *sets, size_t n_sets)
{
    size_t total = 0;
    for (size_t k = 0; k < n_sets; k++) {
        sets[k].missing = sets[k].n;
        for (size_t i = 0; i < sets[k].n; i++)
            sets[k].items[i].median_ms = sets[k].items[i].stddev_ms = NAN;
        total += sets[k].n;
    }
    if (total == 0)
        return 0;
    tc_buf_t rows = {0};
    for (size_t k = 0; k < n_sets; k++) {
        const tc_conv_lookup_set_t *set = &sets[k];
        for (size_t i = 0; i < set->n; i++) {
            const tc_conv_lookup_t *it = &set->items[i];
            Traincast__V1__ConvConfig key = TRAINCAST__V1__CONV_CONFIG__INIT;
            tc_conv_config_to_proto(&it->config, &key);
            tc_copy_int(&rows, (long long)k, 0);
            tc_copy_int(&rows, (long long)i, 0);
            tc_copy_text(&rows, set->device, 0);
            tc_copy_text(&rows, set->policy, 0);
            tc_copy_text(&rows,
                         set->library_version && *set->library_version ? set->library_version
                                                                       : NULL,
                         0);
            tc_copy_text(&rows, tc_fit_stat_name(set->stat), 0);
            tc_copy_conv_key(&rows, &key);
            tc_copy_int(&rows, it->config.n, 0);
            tc_copy_text(&rows, tc_direction_name(it->direction), 1);
        }
    }
    int rc = s_lookup_table(s);
    /* A plain BEGIN: a look-up needs none of the ingest staging tables
     * tc_store_begin makes. */
    if (rc == 0)
        rc = tc_store_query(s, NULL, "BEGIN", "BEGIN", 0, NULL);
    if (rc == 0)
        rc = tc_store_copy(s, "staging conv lookups", "COPY tc_lookup FROM STDIN", &rows);
    PGresult *res = NULL;
    if (rc == 0)
        rc = tc_store_query(
            s, &res, "looking up conv benchmarks",
            "SELECT q.set_idx, q.idx, l.median_ms, l.stddev_ms FROM tc_lookup q "
            "JOIN conv_configs cc ON " TC_SQL_CONV_KEY_EQ("cc", "q") " "
            "JOIN LATERAL " TC_SQL_CONV_STAT("q.device", "q.policy", "q.library_version",
                                             "q.stat", "cc.config_id", "q.batch",
                                             "q.direction") " l ON true",
            0, NULL);
    if (rc == 0) {
        for (int i = 0; i < PQntuples(res); i++) {
            long k = atol(PQgetvalue(res, i, 0)), idx = atol(PQgetvalue(res, i, 1));
            if (k < 0 || (size_t)k >= n_sets || idx < 0 || (size_t)idx >= sets[k].n)
                continue;
            tc_conv_lookup_t *it = &sets[k].items[idx];
            it->median_ms = strtod(PQgetvalue(res, i, 2), NULL);
            it->stddev_ms = strtod(PQgetvalue(res, i, 3), NULL);
            sets[k].missing--;
        }
        PQclear(res);
        rc = tc_store_commit(s);
    }
    if (rc < 0)
        tc_store_rollback(s);
    tc_buf_free(&rows);
    return rc;
}

int tc_store_memory_points(tc_store_t *s, const char *device, tc_mem_point_t **out, size_t *n)
{
    *out = NULL;
    *n = 0;
    const char *p[] = {device};
    PGresult *res = NULL;
    int rc = tc_store_query(
        s, &res, "reading trace memory",
        "SELECT t.model_id, t.batch, t.peak_memory_bytes, t.status = 'oom' "
        "FROM traces t JOIN devices d USING (device_id) "
        "WHERE d.name = $1 AND ((t.status = 'ok' AND t.peak_memory_bytes > 0) OR t.status = 'oom') "
        "AND EXISTS (SELECT 1 FROM model_layers ml WHERE ml.model_id = t.model_id) "
        "ORDER BY t.model_id, t.batch",
        1, p);
    if (rc < 0)
        return rc;
    size_t rows = (size_t)PQntuples(res);
    tc_mem_point_t *v = calloc(rows + 1, sizeof *v);
    if (!v) {
        PQclear(res);
        return tc_fail(TC_ENOMEM, "out of memory");
    }
    for (size_t i = 0; i < rows; i++) {
        snprintf(v[i].model_id, sizeof v[i].model_id, "%s", PQgetvalue(res, (int)i, 0));
        v[i].batch = (unsigned)atoi(PQgetvalue(res, (int)i, 1));
        v[i].peak_bytes = PQgetisnull(res, (int)i, 2) ? NAN : strtod(PQgetvalue(res, (int)i, 2), NULL);
        v[i].oom = PQgetvalue(res, (int)i, 3)[0] == 't';
    }
    PQclear(res);
    tc_layer_summary_t *layers = NULL;
    size_t n_layers = 0;
    const char *loaded = NULL;
    for (size_t i = 0; i < rows && rc == 0; i++) {
        if (!loaded || strcmp(loaded, v[i].model_id) != 0) {
            free(layers);
            layers = NULL;
            rc = tc_store_model_layers(s, v[i].model_id, &layers, &n_layers);
            loaded = v[i].model_id;
        }
        if (rc == 0)
            tc_features_from_layers(layers, n_layers, v[i].batch, &v[i].features);
    }
    free(layers);
    if (rc < 0) {
        free(v);
        return rc;
    }
    *out = v;
    *n = rows;
    return 0;
}
