/* Stored models, device classes and the memory points of traces, as
 * predictions read them (their conv look-up: store_lookup.c). */
#include "store_model.h"
#include "store_internal.h"

#include "tc_conv_key.h"

#include "tc_error.h"
#include "tc_wire.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Layers of the models read so far (tc_store_model_layers): a model id
 * names one structure for good, so predict's memory model reads each traced
 * model once, not once per device. */
typedef struct {
    struct s_model {
        char *model_id;
        tc_layer_summary_t *layers;
        size_t n;
    } *models;
    size_t n;
} s_layers_t;

static void s_layers_release(void *state)
{
    s_layers_t *c = state;
    for (size_t i = 0; i < c->n; i++) {
        free(c->models[i].model_id);
        free(c->models[i].layers);
    }
    free(c->models);
    c->models = NULL;
    c->n = 0;
}

static const tc_store_part_t s_layers_part = {.size = sizeof(s_layers_t),
                                              .release = s_layers_release};

/* The cache entry of a model, or c->n. */
static size_t s_cached(const s_layers_t *c, const char *model_id)
{
    size_t i = 0;
    while (i < c->n && strcmp(c->models[i].model_id, model_id) != 0)
        i++;
    return i;
}

/* Rows [from, to) of a layer read (model_id, op_class, params, flops,
 * elems_in, elems_out) as one model's layers, into the cache. */
static int s_cache_add(s_layers_t *c, PGresult *res, int from, int to)
{
    size_t rows = (size_t)(to - from);
    tc_layer_summary_t *l = calloc(rows, sizeof *l);
    char *id = strdup(PQgetvalue(res, from, 0));
    struct s_model *grown = l && id ? realloc(c->models, (c->n + 1) * sizeof *grown) : NULL;
    if (!grown) {
        free(l);
        free(id);
        return tc_fail(TC_ENOMEM, "out of memory for %zu layers", rows);
    }
    c->models = grown;
    for (size_t i = 0; i < rows; i++) {
        int r = from + (int)i;
        int k = tc_op_class_parse(PQgetvalue(res, r, 1));
        l[i].op_class = k < 0 ? TC_OPC_OTHER : (tc_op_class_t)k;
        l[i].params = strtoull(PQgetvalue(res, r, 2), NULL, 10);
        l[i].flops = strtod(PQgetvalue(res, r, 3), NULL);
        l[i].elems_in = strtoull(PQgetvalue(res, r, 4), NULL, 10);
        l[i].elems_out = strtoull(PQgetvalue(res, r, 5), NULL, 10);
    }
    c->models[c->n++] = (struct s_model){.model_id = id, .layers = l, .n = rows};
    return 0;
}

/* Read the layers of every model of ids[0..n) not cached yet, in one
 * statement. A model without stored layers stays uncached. */
static int s_cache_models(tc_store_t *s, s_layers_t *c, const char *const *ids, size_t n)
{
    const char **want = calloc(n + 1, sizeof *want);
    if (!want)
        return tc_fail(TC_ENOMEM, "out of memory");
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (s_cached(c, ids[i]) == c->n)
            want[k++] = ids[i];
    int rc = 0;
    if (k > 0) {
        tc_buf_t arr = {0};
        tc_store_text_array(&arr, want, k);
        const char *p[] = {arr.data};
        PGresult *res = NULL;
        /* Layers stored before layer norm and softmax were classes of their
         * own hold them as reduce: read as an import classes them now
         * (common/onnx/tc_shape_rules.c). */
        rc = tc_store_query(s, &res, "reading model layers",
                            "SELECT model_id, CASE WHEN op_class <> 'reduce' THEN op_class "
                            "WHEN op = 'LayerNormalization' THEN 'norm' "
                            "WHEN op IN ('Softmax', 'LogSoftmax') THEN 'softmax' "
                            "ELSE op_class END, params, flops, elems_in, elems_out "
                            "FROM model_layers WHERE model_id = ANY ($1::text[]) "
                            "ORDER BY model_id, idx",
                            1, p);
        tc_buf_free(&arr);
        int rows = rc == 0 ? PQntuples(res) : 0;
        for (int from = 0, to; rc == 0 && from < rows; from = to) {
            to = tc_store_run_end(res, from, 0);
            if (s_cached(c, PQgetvalue(res, from, 0)) == c->n)
                rc = s_cache_add(c, res, from, to);
        }
        PQclear(res);
    }
    free(want);
    return rc;
}

int tc_store_model_layers(tc_store_t *s, const char *model_id, tc_layer_summary_t **layers,
                          size_t *n)
{
    *layers = NULL;
    *n = 0;
    s_layers_t *c = tc_store_part_state(s, &s_layers_part);
    if (!c)
        return tc_fail(TC_ENOMEM, "out of memory");
    int rc = s_cache_models(s, c, &model_id, 1);
    if (rc < 0)
        return rc;
    size_t i = s_cached(c, model_id);
    if (i == c->n)
        return tc_fail(TC_ENOTFOUND, "model '%s' has no stored layers", model_id);
    /* The caller owns its copy. */
    const struct s_model *m = &c->models[i];
    *layers = malloc(m->n * sizeof **layers);
    if (!*layers)
        return tc_fail(TC_ENOMEM, "out of memory for %zu layers", m->n);
    memcpy(*layers, m->layers, m->n * sizeof **layers);
    *n = m->n;
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
        "coalesce(string_agg(DISTINCT d.host, ','), ''), "
        "coalesce((SELECT a.alias FROM device_aliases a WHERE a.device = d.name), '') "
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
        snprintf(v[i].alias, sizeof v[i].alias, "%s", PQgetvalue(res, (int)i, 9));
        v[i].alias_set = v[i].alias[0] != '\0';
    }
    PQclear(res);
    *out = v;
    *n = rows;
    return 0;
}

int tc_store_device_alias_set(tc_store_t *s, const char *device, const char *alias)
{
    const char *p[] = {device, alias};
    PGresult *res = NULL;
    int rc = tc_store_query(s, &res, "finding the device",
                            "SELECT 1 FROM devices WHERE name = $1 LIMIT 1", 1, p);
    if (rc < 0)
        return rc;
    bool known = PQntuples(res) > 0;
    PQclear(res);
    if (!known)
        return tc_fail(TC_ENOTFOUND, "no device is named '%s'", device);
    if (!alias)
        return tc_store_query(s, NULL, "removing the alias",
                              "DELETE FROM device_aliases WHERE device = $1", 1, p);
    rc = tc_store_query(s, &res, "checking the alias",
                        "SELECT device FROM device_aliases "
                        "WHERE lower(alias) = lower($2) AND device <> $1",
                        2, p);
    if (rc < 0)
        return rc;
    if (PQntuples(res) > 0)
        rc = tc_fail(TC_EINVAL, "the alias '%s' is taken by '%s'", alias,
                     PQgetvalue(res, 0, 0));
    PQclear(res);
    if (rc < 0)
        return rc;
    return tc_store_query(s, NULL, "setting the alias",
                          "INSERT INTO device_aliases (device, alias) VALUES ($1, $2) "
                          "ON CONFLICT (device) DO UPDATE SET alias = EXCLUDED.alias, "
                          "set_at = now()",
                          2, p);
}

int tc_store_memory_points_each(tc_store_t *s, const char *const *devices, size_t n,
                                tc_mem_point_t **out, size_t *n_out)
{
    for (size_t i = 0; i < n; i++) {
        out[i] = NULL;
        n_out[i] = 0;
    }
    if (n == 0)
        return 0;
    tc_buf_t names = {0};
    tc_store_text_array(&names, devices, n);
    const char *p[] = {names.data};
    PGresult *res = NULL;
    int rc = tc_store_query(
        s, &res, "reading trace memory",
        "SELECT d.name, t.model_id, t.batch, t.peak_memory_bytes, t.status = 'oom' "
        "FROM traces t JOIN devices d USING (device_id) "
        "WHERE d.name = ANY ($1::text[]) "
        "AND ((t.status = 'ok' AND t.peak_memory_bytes > 0) OR t.status = 'oom') "
        "AND EXISTS (SELECT 1 FROM model_layers ml WHERE ml.model_id = t.model_id) "
        "ORDER BY d.name, t.model_id, t.batch",
        1, p);
    tc_buf_free(&names);
    if (rc < 0)
        return rc;
    int rows = PQntuples(res);
    /* Every model's layers in one read; then each device's points. */
    s_layers_t *cache = tc_store_part_state(s, &s_layers_part);
    const char **ids = calloc((size_t)rows + 1, sizeof *ids);
    rc = ids && cache ? 0 : tc_fail(TC_ENOMEM, "out of memory");
    for (int r = 0; rc == 0 && r < rows; r++)
        ids[r] = PQgetvalue(res, r, 1);
    if (rc == 0)
        rc = s_cache_models(s, cache, ids, (size_t)rows);
    free(ids);
    for (int from = 0, to; rc == 0 && from < rows; from = to) {
        to = tc_store_run_end(res, from, 0);
        size_t i = tc_store_name_index(devices, n, PQgetvalue(res, from, 0));
        if (i == n || out[i])
            continue;
        tc_mem_point_t *v = calloc((size_t)(to - from) + 1, sizeof *v);
        if (!v) {
            rc = tc_fail(TC_ENOMEM, "out of memory");
            break;
        }
        out[i] = v;
        for (int r = from; r < to; r++, v++) {
            snprintf(v->model_id, sizeof v->model_id, "%s", PQgetvalue(res, r, 1));
            v->batch = (unsigned)atoi(PQgetvalue(res, r, 2));
            v->peak_bytes = PQgetisnull(res, r, 3) ? NAN : strtod(PQgetvalue(res, r, 3), NULL);
            v->oom = PQgetvalue(res, r, 4)[0] == 't';
            size_t c = s_cached(cache, v->model_id);
            if (c < cache->n)
                tc_features_from_layers(cache->models[c].layers, cache->models[c].n, v->batch,
                                        &v->features);
        }
        n_out[i] = (size_t)(to - from);
    }
    PQclear(res);
    if (rc < 0) {
        for (size_t i = 0; i < n; i++) {
            free(out[i]);
            out[i] = NULL;
            n_out[i] = 0;
        }
    }
    return rc;
}

int tc_store_memory_points(tc_store_t *s, const char *device, tc_mem_point_t **out, size_t *n)
{
    return tc_store_memory_points_each(s, &device, 1, out, n);
}
