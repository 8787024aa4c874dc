/* Predict's look-up of benchmarks (store_lookup.h): every device's items
 * grouped by (device, op kind, config, direction), their batches in one
 * array, one statement for all of a kind, its rows decoded by
 * tc_store_conv_repeats and turned into a time by the fit's rule
 * (tc_fit_conv_time), the same for every kind. */
#include "store_lookup.h"

#include "store_internal.h"

#include "tc_conv_key.h"
#include "tc_matmul_key.h"
#include "tc_error.h"
#include "tc_wire.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One look-up item, by its set and index. */
typedef struct {
    const tc_conv_lookup_set_t *set;
    size_t set_idx, idx;
} s_ref_t;

/* An item's batch, whatever its kind. */
static unsigned s_batch(const tc_conv_lookup_t *it)
{
    return it->kind == TC_OP_MATMUL ? it->matmul.minibatch : it->config.n;
}

/* The group key of a look-up: set, kind, the config without its batch,
 * direction. */
static int s_group_cmp(const s_ref_t *a, const s_ref_t *b)
{
    if (a->set_idx != b->set_idx)
        return a->set_idx < b->set_idx ? -1 : 1;
    const tc_conv_lookup_t *x = &a->set->items[a->idx], *y = &b->set->items[b->idx];
    if (x->kind != y->kind)
        return x->kind < y->kind ? -1 : 1;
    int c = x->kind == TC_OP_MATMUL ? tc_matmul_key_cmp(&x->matmul, &y->matmul)
                                    : tc_conv_key_cmp(&x->config, &y->config);
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
    unsigned na = s_batch(&a->set->items[a->idx]), nb = s_batch(&b->set->items[b->idx]);
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

/* The groups of kind `kind` among [from, to) as one JSON array, a row each
 * (the columns of its kind's statement). */
static int s_group_json(const s_groups_t *g, size_t from, size_t to, tc_op_kind_t kind,
                        tc_buf_t *json)
{
    tc_buf_putc(json, '[');
    bool any = false;
    for (size_t gi = from; gi < to; gi++) {
        const s_ref_t *first = &g->refs[g->group[gi]];
        const tc_conv_lookup_set_t *set = first->set;
        const tc_conv_lookup_t *it = &set->items[first->idx];
        if (it->kind != kind)
            continue;
        tc_buf_printf(json, "%s{\"grp\":%zu,\"device\":", any ? "," : "", gi);
        any = true;
        tc_buf_json_str(json, set->device);
        tc_buf_puts(json, ",\"policy\":");
        tc_buf_json_str(json, set->policy);
        tc_buf_puts(json, ",\"library_version\":");
        tc_buf_json_str(json, set->library_version ? set->library_version : "");
        tc_buf_printf(json, ",\"direction\":\"%s\",", tc_direction_name(it->direction));
        if (kind == TC_OP_MATMUL) {
            tc_matmul_key_json(json, &it->matmul);
            tc_buf_putc(json, ',');
        } else {
            Traincast__V1__ConvConfig key = TRAINCAST__V1__CONV_CONFIG__INIT;
            tc_conv_config_to_proto(&it->config, &key);
            tc_json_conv_key(json, &key);
        }
        tc_buf_puts(json, "\"batches\":[");
        unsigned last = 0;
        for (size_t i = g->group[gi]; i < g->group[gi + 1]; i++) {
            unsigned n = s_batch(&set->items[g->refs[i].idx]);
            if (i > g->group[gi] && n == last)
                continue; /* asked twice: looked up once */
            tc_buf_printf(json, i > g->group[gi] ? ",%u" : "%u", n);
            last = n;
        }
        tc_buf_puts(json, "]}");
    }
    tc_buf_putc(json, ']');
    return json->failed ? tc_fail(TC_ENOMEM, "out of memory for %zu look-ups", g->n) : 0;
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

/* The same for matmuls: their configs and results (matmul_results has no
 * library version: a matmul is looked up whatever the device's). */
static const char s_matmul_lookup_sql[] =
    "SELECT q.grp, l.batch, l.median_ms, l.stddev_ms, l.measured_at, l.result_id, l.disturbed "
    "FROM json_to_recordset($1::json) "
    "AS q (grp integer, device text, policy text, library_version text, "
    "direction text, " TC_SQL_MATMUL_KEY_DEFS ", batches integer[]) "
    "JOIN matmul_configs mc ON " TC_SQL_MATMUL_KEY_EQ("mc", "q") " "
    "JOIN LATERAL " TC_SQL_MATMUL_REPEATS("q.device", "q.policy", "mc.config_id", "q.batches",
                                          "q.direction") " l ON true";

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
        if (s_batch(it) != batch || !isnan(it->median_ms))
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
    tc_buf_t json[2] = {{0}}, mm = {0};
    int rc = s_group(sets, n_sets, total, &g);
    size_t n_mm = 0;
    for (size_t gi = 0; gi < g.n_groups; gi++)
        n_mm += g.refs[g.group[gi]].set->items[g.refs[g.group[gi]].idx].kind == TC_OP_MATMUL;
    size_t n_conv = g.n_groups - n_mm;
    size_t half = tc_store_lookup_splits(n_conv) ? g.n_groups / 2 : g.n_groups;
    if (rc == 0 && n_conv)
        rc = s_group_json(&g, 0, half, TC_OP_CONV, &json[0]);
    if (rc == 0 && n_conv && half < g.n_groups)
        rc = s_group_json(&g, half, g.n_groups, TC_OP_CONV, &json[1]);
    PGresult *res[3] = {NULL, NULL, NULL};
    const char *params[2] = {json[0].data, json[1].data};
    if (rc == 0 && n_conv && half < g.n_groups)
        rc = tc_store_query_pair(s, "looking up conv benchmarks", s_lookup_sql, params, res);
    else if (rc == 0 && n_conv)
        rc = tc_store_query_binary(s, &res[0], "looking up conv benchmarks", s_lookup_sql, 1,
                                   params);
    if (rc == 0 && n_mm)
        rc = s_group_json(&g, 0, g.n_groups, TC_OP_MATMUL, &mm);
    if (rc == 0 && n_mm) {
        const char *mp[] = {mm.data};
        rc = tc_store_query_binary(s, &res[2], "looking up matmul benchmarks",
                                   s_matmul_lookup_sql, 1, mp);
    }
    for (int k = 0; k < 3; k++) {
        if (rc == 0 && res[k])
            rc = tc_store_conv_repeats(res[k], s_group_fill, &g);
        PQclear(res[k]);
    }
    tc_buf_free(&json[0]);
    tc_buf_free(&json[1]);
    tc_buf_free(&mm);
    s_groups_free(&g);
    return rc;
}
