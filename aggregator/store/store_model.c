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
        rc = tc_store_query(s, &res, "reading model layers",
                            "SELECT model_id, op_class, params, flops, elems_in, elems_out "
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

/* One look-up item, by its set and index. */
typedef struct {
    const tc_conv_lookup_set_t *set;
    size_t set_idx, idx;
} s_ref_t;

/* The group key of a look-up: set, the config without its batch, direction. */
static int s_group_cmp(const s_ref_t *a, const s_ref_t *b)
{
    if (a->set_idx != b->set_idx)
        return a->set_idx < b->set_idx ? -1 : 1;
    const tc_conv_lookup_t *x = &a->set->items[a->idx], *y = &b->set->items[b->idx];
    int c = tc_conv_key_cmp(&x->config, &y->config);
    if (c || x->direction == y->direction)
        return c;
    return x->direction < y->direction ? -1 : 1;
}

/* The order that puts the batches of one group next to each other: the
 * group key, then the batch. */
static int s_ref_cmp(const void *pa, const void *pb)
{
    const s_ref_t *a = pa, *b = pb;
    int c = s_group_cmp(a, b);
    if (c)
        return c;
    uint32_t na = a->set->items[a->idx].config.n, nb = b->set->items[b->idx].config.n;
    return na < nb ? -1 : na > nb;
}

/* Look-ups grouped: refs sorted by s_ref_cmp, group[g] the first ref of
 * group g (group[n_groups] = n), each group's distinct batches. */
typedef struct {
    s_ref_t *refs;
    size_t n, n_groups;
    size_t *group;
} s_groups_t;

static void s_groups_free(s_groups_t *g)
{
    free(g->refs);
    free(g->group);
}

static int s_group(tc_conv_lookup_set_t *sets, size_t n_sets, size_t total, s_groups_t *g)
{
    g->refs = calloc(total, sizeof *g->refs);
    g->group = calloc(total + 1, sizeof *g->group);
    if (!g->refs || !g->group)
        return tc_fail(TC_ENOMEM, "out of memory");
    for (size_t k = 0; k < n_sets; k++)
        for (size_t i = 0; i < sets[k].n; i++)
            if (!sets[k].items[i].skip)
                g->refs[g->n++] = (s_ref_t){&sets[k], k, i};
    qsort(g->refs, g->n, sizeof *g->refs, s_ref_cmp);
    for (size_t i = 0; i < g->n; i++)
        if (i == 0 || s_group_cmp(&g->refs[i - 1], &g->refs[i]) != 0)
            g->group[g->n_groups++] = i;
    g->group[g->n_groups] = g->n;
    return 0;
}

/* Groups [from, to) as one JSON array, a row each (s_lookup_sql's columns). */
static int s_group_json(const s_groups_t *g, size_t from, size_t to, tc_buf_t *json)
{
    tc_buf_putc(json, '[');
    for (size_t gi = from; gi < to; gi++) {
        const s_ref_t *first = &g->refs[g->group[gi]];
        const tc_conv_lookup_set_t *set = first->set;
        const tc_conv_lookup_t *it = &set->items[first->idx];
        Traincast__V1__ConvConfig key = TRAINCAST__V1__CONV_CONFIG__INIT;
        tc_conv_config_to_proto(&it->config, &key);
        tc_buf_printf(json, "%s{\"grp\":%zu,\"device\":", gi > from ? "," : "", gi);
        tc_buf_json_str(json, set->device);
        tc_buf_puts(json, ",\"policy\":");
        tc_buf_json_str(json, set->policy);
        tc_buf_puts(json, ",\"library_version\":");
        tc_buf_json_str(json, set->library_version ? set->library_version : "");
        tc_buf_printf(json, ",\"direction\":\"%s\",", tc_direction_name(it->direction));
        tc_json_conv_key(json, &key);
        tc_buf_puts(json, "\"batches\":[");
        unsigned last = 0;
        for (size_t i = g->group[gi]; i < g->group[gi + 1]; i++) {
            unsigned n = set->items[g->refs[i].idx].config.n;
            if (i > g->group[gi] && n == last)
                continue; /* asked twice: looked up once */
            tc_buf_printf(json, i > g->group[gi] ? ",%u" : "%u", n);
            last = n;
        }
        tc_buf_puts(json, "]}");
    }
    tc_buf_putc(json, ']');
    return json->failed ? tc_fail(TC_ENOMEM, "out of memory for %zu conv look-ups", g->n) : 0;
}

/* From this many groups on, the look-up is split over two connections
 * (tc_store_query_pair): it costs the server about 4 ms per 100 groups, a
 * second connection about 2 ms to open (hidden when tc_store_side_begin
 * opened it earlier). */
enum { S_SPLIT_GROUPS = 128 };

bool tc_store_lookup_splits(size_t n_groups)
{
    return n_groups >= S_SPLIT_GROUPS;
}

/* Every group's benchmarks per batch: one statement, the groups a JSON
 * parameter (no staging table, no transaction of its own); the statistic is
 * taken here (tc_fit_conv_time), which costs the server half the time of
 * taking it there (a sort and two window functions per group). */
static const char s_lookup_sql[] =
    "SELECT q.grp, l.batch, l.median_ms, l.stddev_ms, l.measured_at, l.result_id, l.disturbed "
    "FROM json_to_recordset($1::json) "
    "AS q (grp integer, device text, policy text, library_version text, "
    "direction text, " TC_SQL_CONV_KEY_DEFS ", batches integer[]) "
    "JOIN conv_configs cc ON " TC_SQL_CONV_KEY_EQ("cc", "q") " "
    "JOIN LATERAL " TC_SQL_CONV_REPEATS("q.device", "q.policy", "q.library_version",
                                        "cc.config_id", "q.batches", "q.direction") " l ON true";

/* Store a group's time at one batch in every item of the group asked at
 * that batch (tc_store_repeats_fn). */
static void s_group_fill(void *ctx, long gi, unsigned batch, int row, tc_fit_repeat_t *r,
                         size_t n)
{
    (void)row;
    const s_groups_t *g = ctx;
    if (gi < 0 || (size_t)gi >= g->n_groups || n == 0)
        return;
    const tc_conv_lookup_set_t *first = g->refs[g->group[gi]].set;
    double median, stddev;
    tc_fit_conv_time(r, n, first->stat, &median, &stddev);
    for (size_t i = g->group[gi]; i < g->group[gi + 1]; i++) {
        tc_conv_lookup_set_t *set = (tc_conv_lookup_set_t *)g->refs[i].set;
        tc_conv_lookup_t *it = &set->items[g->refs[i].idx];
        if (it->config.n != batch || !isnan(it->median_ms))
            continue;
        it->median_ms = median;
        it->stddev_ms = stddev;
        set->missing--;
    }
}

int tc_store_conv_lookup(tc_store_t *s, tc_conv_lookup_set_t *sets, size_t n_sets)
{
    size_t total = 0;
    for (size_t k = 0; k < n_sets; k++) {
        sets[k].missing = 0;
        for (size_t i = 0; i < sets[k].n; i++) {
            sets[k].items[i].median_ms = sets[k].items[i].stddev_ms = NAN;
            sets[k].missing += !sets[k].items[i].skip;
        }
        total += sets[k].missing;
    }
    if (total == 0)
        return 0;
    s_groups_t g = {0};
    tc_buf_t json[2] = {{0}};
    int rc = s_group(sets, n_sets, total, &g);
    size_t half = tc_store_lookup_splits(g.n_groups) ? g.n_groups / 2 : g.n_groups;
    if (rc == 0)
        rc = s_group_json(&g, 0, half, &json[0]);
    if (rc == 0 && half < g.n_groups)
        rc = s_group_json(&g, half, g.n_groups, &json[1]);
    PGresult *res[2] = {NULL, NULL};
    const char *params[2] = {json[0].data, json[1].data};
    if (rc == 0 && half < g.n_groups)
        rc = tc_store_query_pair(s, "looking up conv benchmarks", s_lookup_sql, params, res);
    else if (rc == 0)
        rc = tc_store_query_binary(s, &res[0], "looking up conv benchmarks", s_lookup_sql, 1,
                                   params);
    for (int k = 0; k < 2; k++) {
        if (rc == 0 && res[k])
            rc = tc_store_conv_repeats(res[k], s_group_fill, &g);
        PQclear(res[k]);
        tc_buf_free(&json[k]);
    }
    s_groups_free(&g);
    return rc;
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
