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
 * commit), so a predict creates it once. Created outside a transaction.
 * One row per group: the batches of one (set, config, direction). */
static int s_lookup_table(tc_store_t *s)
{
    if (s->lookup_ready)
        return 0;
    int rc = tc_store_exec(s,
                           "CREATE TEMP TABLE IF NOT EXISTS tc_lookup_groups (grp integer, "
                           "device text, policy text, library_version text, stat text, "
                           TC_SQL_CONV_KEY_DEFS ", batches integer[], direction text) "
                           "ON COMMIT DELETE ROWS",
                           NULL, 0);
    if (rc == 0)
        s->lookup_ready = 1;
    return rc;
}

/* One look-up item, by its set and index. */
typedef struct {
    const tc_conv_lookup_set_t *set;
    size_t set_idx, idx;
} s_ref_t;

/* The order that puts the batches of one (set, config, direction) next to
 * each other: set, the config without its batch, direction, batch. */
static int s_ref_cmp(const void *pa, const void *pb)
{
    const s_ref_t *a = pa, *b = pb;
    if (a->set_idx != b->set_idx)
        return a->set_idx < b->set_idx ? -1 : 1;
    const tc_conv_lookup_t *x = &a->set->items[a->idx], *y = &b->set->items[b->idx];
    tc_conv_config_t cx = x->config, cy = y->config;
    cx.n = cy.n = 0;
    int c = tc_conv_config_cmp(&cx, &cy);
    if (c)
        return c;
    if (x->direction != y->direction)
        return x->direction < y->direction ? -1 : 1;
    return x->config.n < y->config.n ? -1 : x->config.n > y->config.n;
}

static bool s_same_group(const s_ref_t *a, const s_ref_t *b)
{
    if (a->set_idx != b->set_idx)
        return false;
    const tc_conv_lookup_t *x = &a->set->items[a->idx], *y = &b->set->items[b->idx];
    tc_conv_config_t cx = x->config, cy = y->config;
    cx.n = cy.n = 0;
    return tc_conv_config_cmp(&cx, &cy) == 0 && x->direction == y->direction;
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
            g->refs[g->n++] = (s_ref_t){&sets[k], k, i};
    qsort(g->refs, g->n, sizeof *g->refs, s_ref_cmp);
    for (size_t i = 0; i < g->n; i++)
        if (i == 0 || !s_same_group(&g->refs[i - 1], &g->refs[i]))
            g->group[g->n_groups++] = i;
    g->group[g->n_groups] = g->n;
    return 0;
}

/* The staging rows: one per group, its batches as an array. */
static int s_group_rows(const s_groups_t *g, tc_buf_t *rows)
{
    long long *batches = calloc(g->n + 1, sizeof *batches);
    if (!batches)
        return tc_fail(TC_ENOMEM, "out of memory");
    for (size_t gi = 0; gi < g->n_groups; gi++) {
        const s_ref_t *first = &g->refs[g->group[gi]];
        const tc_conv_lookup_set_t *set = first->set;
        const tc_conv_lookup_t *it = &set->items[first->idx];
        Traincast__V1__ConvConfig key = TRAINCAST__V1__CONV_CONFIG__INIT;
        tc_conv_config_to_proto(&it->config, &key);
        tc_copy_int(rows, (long long)gi, 0);
        tc_copy_text(rows, set->device, 0);
        tc_copy_text(rows, set->policy, 0);
        tc_copy_text(rows,
                     set->library_version && *set->library_version ? set->library_version : NULL,
                     0);
        tc_copy_text(rows, tc_fit_stat_name(set->stat), 0);
        tc_copy_conv_key(rows, &key);
        size_t nb = 0;
        for (size_t i = g->group[gi]; i < g->group[gi + 1]; i++) {
            long long n = set->items[g->refs[i].idx].config.n;
            if (nb == 0 || batches[nb - 1] != n) /* asked twice: looked up once */
                batches[nb++] = n;
        }
        tc_copy_int_array(rows, batches, nb, 0);
        tc_copy_text(rows, tc_direction_name(it->direction), 1);
    }
    free(batches);
    return 0;
}

/* Store one result row (group, batch, median, stddev) in every item of the
 * group asked at that batch. */
static void s_group_fill(const s_groups_t *g, size_t gi, unsigned batch, double median,
                         double stddev)
{
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
        sets[k].missing = sets[k].n;
        for (size_t i = 0; i < sets[k].n; i++)
            sets[k].items[i].median_ms = sets[k].items[i].stddev_ms = NAN;
        total += sets[k].n;
    }
    if (total == 0)
        return 0;
    s_groups_t g = {0};
    tc_buf_t rows = {0};
    int rc = s_group(sets, n_sets, total, &g);
    if (rc == 0)
        rc = s_group_rows(&g, &rows);
    if (rc == 0)
        rc = s_lookup_table(s);
    /* A plain BEGIN: a look-up needs none of the ingest staging tables
     * tc_store_begin makes. */
    if (rc == 0)
        rc = tc_store_query(s, NULL, "BEGIN", "BEGIN", 0, NULL);
    if (rc == 0)
        rc = tc_store_copy(s, "staging conv lookups", "COPY tc_lookup_groups FROM STDIN", &rows);
    PGresult *res = NULL;
    if (rc == 0)
        rc = tc_store_query(
            s, &res, "looking up conv benchmarks",
            "SELECT q.grp, l.batch, l.median_ms, l.stddev_ms FROM tc_lookup_groups q "
            "JOIN conv_configs cc ON " TC_SQL_CONV_KEY_EQ("cc", "q") " "
            "JOIN LATERAL " TC_SQL_CONV_STAT("q.device", "q.policy", "q.library_version",
                                             "q.stat", "cc.config_id", "q.batches",
                                             "q.direction") " l ON true",
            0, NULL);
    if (rc == 0) {
        for (int i = 0; i < PQntuples(res); i++) {
            long gi = atol(PQgetvalue(res, i, 0));
            if (gi < 0 || (size_t)gi >= g.n_groups)
                continue;
            s_group_fill(&g, (size_t)gi, (unsigned)atol(PQgetvalue(res, i, 1)),
                         strtod(PQgetvalue(res, i, 2), NULL), strtod(PQgetvalue(res, i, 3), NULL));
        }
        PQclear(res);
        rc = tc_store_commit(s);
    }
    if (rc < 0)
        tc_store_rollback(s);
    tc_buf_free(&rows);
    s_groups_free(&g);
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
