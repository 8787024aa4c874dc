/* Predict's look-up of conv benchmarks (store_lookup.h): every device's
 * items grouped by (device, config, direction), their batches in one array,
 * one statement for all, its rows decoded by tc_store_conv_repeats and
 * turned into a time by the fit's rule (tc_fit_conv_time). */
#include "store_lookup.h"

#include "store_internal.h"

#include "tc_conv_key.h"
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
