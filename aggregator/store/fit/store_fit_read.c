/* Reading the training data of fits: trace medians, conv benchmark sums and
 * model features per device name, framework, policy and dtype. */
#include "store_fit.h"
#include "store_internal.h"

#include "tc_conv_key.h"
#include "store_model.h"

#include "tc_cli.h"
#include "tc_conv_step.h"
#include "tc_matmul_key.h"
#include "tc_matmul_step.h"
#include "tc_error.h"
#include "tc_wire.h"
#include "tc_log.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Parameters of every group query: $1 device name, $2 framework, $3 trace
 * policy (NULL: none), $4 dtype, $5 the AMP mode ("" off), $6 the library
 * key (on a GPU the cuDNN version the traces ran with, else ""), $7 the
 * settings key; and of the conv queries also $8 the conv policy and the
 * conv-time rule (tc_conv_step.h) as arrays of direction names: $9 for a
 * network's first conv, $10 for every other. */
#define LIBRARY_KEY(t, d)                                                                       \
    "CASE WHEN " d ".kind = 'cuda' THEN coalesce(" t ".library_version, '') ELSE '' END"
#define GROUP_TRACES                                                                            \
    "FROM traces t JOIN devices d USING (device_id) WHERE d.name = $1 AND t.framework = $2 "   \
    "AND t.policy IS NOT DISTINCT FROM $3 AND t.dtype = $4 AND coalesce(t.amp, '') = $5 "      \
    "AND " LIBRARY_KEY("t", "d") " = $6 AND t.settings_key = $7"

/* Every conv measurement a group's points need (need.i numbers them): a
 * model's config is matched to a benchmarked config of the same shape,
 * layout and bias in the dtype the convs ran in: the AMP mode's under AMP,
 * else the traces' dtype. CONV_REPEATS gives each its benchmarks (none when
 * never measured), which tc_fit_conv_time takes its time from; on a GPU only
 * benchmarks measured with the traces' cuDNN count. */
#define CONV_NEEDS_CTE                                                                          \
    "WITH pts AS (SELECT DISTINCT t.model_id, t.batch " GROUP_TRACES " AND t.status = 'ok'), " \
    "need AS (SELECT (row_number() OVER ())::int4 AS i, p.model_id, p.batch, "                 \
    "  mc.config_id AS model_config, mc.multiplicity, mc.first_layer, "                         \
    "  dir.direction, bc.config_id AS bench_config FROM pts p "                                \
    "  JOIN model_convs mc ON mc.model_id = p.model_id "                                       \
    "  JOIN conv_configs c ON c.config_id = mc.config_id "                                     \
    "  CROSS JOIN LATERAL unnest(CASE WHEN mc.first_layer "                                    \
    "    THEN $9::text[] ELSE $10::text[] END) AS dir(direction) "                              \
    "  LEFT JOIN conv_configs bc ON " TC_SQL_CONV_KEY_EQ_NOT_DTYPE("bc", "c")                 \
    "    AND bc.dtype = CASE WHEN $5 <> '' THEN $5 ELSE $4 END) "
#define CONV_REPEATS                                                                            \
    TC_SQL_CONV_REPEATS("$1", "$8", "$6", "n.bench_config", "ARRAY[n.batch]", "n.direction")
#define CONV_PARAMS 10

static char *s_dup(const char *v)
{
    return strdup(v ? v : "");
}

static double s_getd(PGresult *res, int row, int col)
{
    return PQgetisnull(res, row, col) ? NAN : strtod(PQgetvalue(res, row, col), NULL);
}

static int s_known_devices(tc_store_t *s, char *buf, size_t size)
{
    PGresult *res = NULL;
    int rc = tc_store_query(s, &res, "listing devices",
                            "SELECT coalesce(string_agg(DISTINCT name, ', ' ORDER BY name), '') "
                            "FROM devices",
                            0, NULL);
    if (rc < 0)
        return rc;
    snprintf(buf, size, "%s", PQgetvalue(res, 0, 0));
    PQclear(res);
    return 0;
}

/* The device names to fit: the given ones (each must exist and have
 * traces) or every name with traces. */
static int s_device_names(tc_store_t *s, char *const *devices, size_t n_devices, char ***names,
                          size_t *n_names)
{
    *names = NULL;
    *n_names = 0;
    PGresult *res = NULL;
    int rc = 0;
    if (n_devices == 0) {
        rc = tc_store_query(s, &res, "listing traced devices",
                            "SELECT DISTINCT d.name FROM traces t JOIN devices d USING "
                            "(device_id) ORDER BY 1",
                            0, NULL);
        if (rc < 0)
            return rc;
        int n = PQntuples(res);
        if (n == 0) {
            PQclear(res);
            return tc_fail(TC_EINVAL, "no traces are stored: run 'agent trace' (or 'agent run') "
                                      "on each device first, then fit");
        }
        *names = calloc((size_t)n, sizeof **names);
        for (int i = 0; *names && i < n; i++)
            (*names)[i] = s_dup(PQgetvalue(res, i, 0));
        PQclear(res);
        if (!*names)
            return tc_fail(TC_ENOMEM, "out of memory");
        *n_names = (size_t)n;
        return 0;
    }
    *names = calloc(n_devices, sizeof **names);
    if (!*names)
        return tc_fail(TC_ENOMEM, "out of memory");
    for (size_t i = 0; i < n_devices; i++) {
        bool again = false;
        for (size_t k = 0; k < *n_names && !again; k++)
            again = !strcmp((*names)[k], devices[i]);
        if (again)
            continue;
        const char *p[] = {devices[i]};
        rc = tc_store_query(s, &res, "looking up the device",
                            "SELECT (SELECT count(*) FROM devices WHERE name = $1), "
                            "(SELECT count(*) FROM traces t JOIN devices d USING (device_id) "
                            "WHERE d.name = $1)",
                            1, p);
        if (rc < 0)
            return rc;
        long n_dev = atol(PQgetvalue(res, 0, 0)), n_traces = atol(PQgetvalue(res, 0, 1));
        PQclear(res);
        if (n_dev == 0) {
            char known[1024];
            rc = s_known_devices(s, known, sizeof known);
            if (rc < 0)
                return rc;
            return tc_fail(TC_ENOTFOUND, "unknown device '%s': %s%s", devices[i],
                           *known ? "the store knows " : "the store knows no devices yet",
                           known);
        }
        if (n_traces == 0)
            return tc_fail(TC_EINVAL, "device '%s' has no traces: run 'agent trace' on it "
                                      "before fitting",
                           devices[i]);
        (*names)[i] = s_dup(devices[i]);
        (*n_names)++;
    }
    return 0;
}

#define S_POINTS_SQL(view)                                                                      \
    "SELECT ts.model_id, coalesce(m.name, ''), ts.batch, ts.traces, " TC_SQL_TRACE_STAT("$8")    \
    ", ts.spread_within_trace, ts.spread_between_traces, m.model_id IS NOT NULL, "               \
    "ts.last_started_at, " TC_SQL_TRACE_HALF("$8", "a") ", " TC_SQL_TRACE_HALF("$8", "b") " "      \
    "FROM " view " ts LEFT JOIN models m USING (model_id) "                                      \
    "WHERE ts.device = $1 AND ts.framework = $2 AND ts.policy IS NOT DISTINCT FROM $3 "          \
    "AND ts.dtype = $4 AND ts.amp = $5 AND ts.library_key = $6 AND ts.settings_key = $7 "        \
    "ORDER BY coalesce(m.name, ts.model_id), ts.model_id, ts.batch"

/* The disturbed traces of the group and conv benchmarks of its device name. */
static int s_read_disturbed(tc_store_t *s, const char *const *params, tc_fit_group_t *g)
{
    PGresult *res = NULL;
    int rc = tc_store_query(s, &res, "counting disturbed measurements",
                            "SELECT (SELECT count(*) " GROUP_TRACES " AND t.status = 'ok' "
                            "AND t.disturbed), (SELECT count(*) FROM conv_results r JOIN devices "
                            "d USING (device_id) WHERE d.name = $1 AND (r.disturbed OR "
                            TC_SQL_SUPERSEDED("conv_results") "))",
                            7, params);
    if (rc < 0)
        return rc;
    g->disturbed_traces = strtoul(PQgetvalue(res, 0, 0), NULL, 10);
    g->disturbed_benchmarks = strtoul(PQgetvalue(res, 0, 1), NULL, 10);
    PQclear(res);
    return 0;
}

static int s_read_points(tc_store_t *s, const char *const *params, tc_fit_group_t *g)
{
    PGresult *res = NULL;
    int rc = tc_store_query(s, &res, "reading trace summaries",
                            g->include_disturbed ? S_POINTS_SQL("trace_summary_all")
                                                 : S_POINTS_SQL("trace_summary"),
                            8, params);
    if (rc < 0)
        return rc;
    int n = PQntuples(res);
    g->points = calloc((size_t)n + 1, sizeof *g->points);
    if (!g->points) {
        PQclear(res);
        return tc_fail(TC_ENOMEM, "out of memory");
    }
    tc_buf_t missing = {0};
    size_t n_missing = 0;
    const char *last_missing = "";
    for (int i = 0; i < n; i++) {
        tc_fit_point_t *pt = &g->points[i];
        pt->model_id = s_dup(PQgetvalue(res, i, 0));
        pt->cnn = s_dup(PQgetvalue(res, i, 1));
        g->n_points++;
        if (!pt->model_id || !pt->cnn) {
            rc = tc_fail(TC_ENOMEM, "out of memory");
            break;
        }
        pt->batch = (unsigned)atoi(PQgetvalue(res, i, 2));
        pt->traces = (unsigned)atoi(PQgetvalue(res, i, 3));
        pt->measured_ms = s_getd(res, i, 4);
        pt->spread_within = s_getd(res, i, 5);
        pt->spread_between = s_getd(res, i, 6);
        double half_a = s_getd(res, i, 9), half_b = s_getd(res, i, 10);
        pt->noise_floor = isfinite(half_a) && isfinite(half_b) && pt->measured_ms > 0
                              ? fabs(half_a - half_b) / (2 * pt->measured_ms)
                              : NAN;
        if (strcmp(PQgetvalue(res, i, 7), "t") != 0 && strcmp(last_missing, pt->model_id)) {
            if (n_missing++ < 8)
                tc_buf_printf(&missing, "%s%s", missing.len ? ", " : "", pt->model_id);
            last_missing = pt->model_id;
        }
        if (!PQgetisnull(res, i, 8)) {
            const char *t = PQgetvalue(res, i, 8);
            if (strcmp(t, g->data_through) > 0)
                snprintf(g->data_through, sizeof g->data_through, "%s", t);
        }
    }
    PQclear(res);
    if (rc == 0 && n_missing)
        rc = tc_fail(TC_EINVAL, "device '%s': traced model(s) %s have no stored model graph: the "
                                "agent sends a model's graph with its traces; trace them again "
                                "with a current agent, then fit",
                     g->device, tc_buf_str(&missing));
    tc_buf_free(&missing);
    return rc;
}

static int s_read_excluded(tc_store_t *s, const char *const *params, tc_fit_group_t *g)
{
    PGresult *res = NULL;
    int rc = tc_store_query(
        s, &res, "reading failed traces",
        "SELECT t.model_id, coalesce((SELECT name FROM models m WHERE m.model_id = t.model_id), "
        "t.model_id), t.batch, "
        "bool_or(t.status = 'oom') " GROUP_TRACES " AND t.status <> 'ok' "
        "AND NOT EXISTS (SELECT 1 FROM traces t2 JOIN devices d2 USING (device_id) "
        "  WHERE d2.name = $1 AND t2.framework = $2 AND t2.policy IS NOT DISTINCT FROM $3 "
        "  AND t2.dtype = $4 AND coalesce(t2.amp, '') = $5 "
        "  AND " LIBRARY_KEY("t2", "d2") " = $6 AND t2.settings_key = $7 "
        "  AND t2.status = 'ok' AND t2.model_id = t.model_id AND t2.batch = t.batch) "
        "GROUP BY t.model_id, t.batch ORDER BY 2, 1, 3",
        7, params);
    if (rc < 0)
        return rc;
    int n = PQntuples(res);
    g->excluded = calloc((size_t)n + 1, sizeof *g->excluded);
    if (!g->excluded) {
        PQclear(res);
        return tc_fail(TC_ENOMEM, "out of memory");
    }
    for (int i = 0; i < n; i++) {
        tc_fit_excluded_t *e = &g->excluded[i];
        e->model_id = s_dup(PQgetvalue(res, i, 0));
        e->cnn = s_dup(PQgetvalue(res, i, 1));
        g->n_excluded++;
        if (!e->model_id || !e->cnn) {
            rc = tc_fail(TC_ENOMEM, "out of memory");
            break;
        }
        e->batch = (unsigned)atoi(PQgetvalue(res, i, 2));
        e->oom = !strcmp(PQgetvalue(res, i, 3), "t");
    }
    PQclear(res);
    return rc;
}

static tc_fit_point_t *s_find_point(tc_fit_group_t *g, const char *model_id, unsigned batch)
{
    for (size_t i = 0; i < g->n_points; i++) {
        if (g->points[i].batch == batch && !strcmp(g->points[i].model_id, model_id))
            return &g->points[i];
    }
    return NULL;
}

static int s_missing_convs(tc_store_t *s, const char *const *params, const tc_fit_group_t *g)
{
    PGresult *res = NULL;
    int rc = tc_store_query(
        s, &res, "counting missing conv benchmarks",
        CONV_NEEDS_CTE
        "SELECT count(DISTINCT n.model_config), count(*), "
        "array_to_string(array_agg(DISTINCT coalesce(m.name, n.model_id) "
        "  ORDER BY coalesce(m.name, n.model_id)), ','), "
        "array_to_string(array_agg(DISTINCT n.batch ORDER BY n.batch), ','), "
        "array_to_string(array_agg(DISTINCT m.input_h ORDER BY m.input_h), ',') "
        "FROM need n LEFT JOIN models m ON m.model_id = n.model_id "
        "WHERE NOT EXISTS (SELECT 1 FROM " CONV_REPEATS " l)",
        CONV_PARAMS, params);
    if (rc < 0)
        return rc;
    /* The models' convs depend on their input size: name it when it is one. */
    const char *sizes = PQgetvalue(res, 0, 4);
    char input[64] = "";
    if (*sizes && !strchr(sizes, ','))
        snprintf(input, sizeof input, " --input-size %s", sizes);
    else if (*sizes)
        snprintf(input, sizeof input, " --input-size S (once per input size: %s)", sizes);
    /* On a GPU, benchmarks of another cuDNN than the traces' do not count:
     * name both versions. */
    char other[512] = "";
    if (*g->library_version) {
        PGresult *lib = NULL;
        const char *lp[] = {g->device, g->conv_policy, g->library_version};
        if (tc_store_query(s, &lib, "listing the benchmarks' cuDNN versions",
                           "SELECT coalesce(string_agg(DISTINCT coalesce(r.library_version, "
                           "'unknown'), ', '), '') FROM conv_results r JOIN devices d "
                           "USING (device_id) WHERE d.name = $1 AND d.kind = 'cuda' "
                           "AND r.policy = $2 AND r.library_version IS DISTINCT FROM $3",
                           3, lp) == 0) {
            if (*PQgetvalue(lib, 0, 0))
                snprintf(other, sizeof other,
                         "; the traces ran with cuDNN %s (as PyTorch loaded it) and this "
                         "device's conv benchmarks were measured with cuDNN %s, which do not "
                         "count for them: run the agent where it loads PyTorch's cuDNN "
                         "(docs/conv-benchmarks.md, \"The cuDNN PyTorch loads\") and benchmark "
                         "again",
                         g->library_version, PQgetvalue(lib, 0, 0));
            PQclear(lib);
        }
    }
    const char *conv_dtype = *g->amp ? g->amp : g->dtype;
    rc = tc_fail(TC_EINVAL,
                 "device '%s' lacks conv benchmarks for %s configs (%s config x batch x "
                 "direction results; policy %s, dtype %s%s%s) used by %s at batches %s: run "
                 "'agent bench --models %s%s --batches %s --policy %s --dtype %s' on an agent "
                 "with a '%s' device, then fit again%s",
                 g->device, PQgetvalue(res, 0, 0), PQgetvalue(res, 0, 1), g->conv_policy,
                 conv_dtype, *g->library_version ? ", cuDNN " : "", g->library_version,
                 PQgetvalue(res, 0, 2), PQgetvalue(res, 0, 3), PQgetvalue(res, 0, 2), input,
                 PQgetvalue(res, 0, 3), g->conv_policy, conv_dtype, g->device, other);
    PQclear(res);
    return rc;
}

/* One conv measurement a point needs, its time taken by the group's
 * statistic (tc_fit_conv_time): the rows carry the point's model (column 7),
 * the conv's multiplicity (8), its config (9), whether it is the network's
 * first (10) and the direction (11). */
typedef struct {
    tc_fit_point_t *pt;
    long long config;
    bool first_layer;
    uint32_t multiplicity;
    Traincast__V1__Direction dir;
    double ms;
} s_need_t;

typedef struct {
    tc_fit_group_t *g;
    const PGresult *res;
    long missing;
    s_need_t *v;
    size_t n;
} s_needs_t;

static void s_add_need(void *ctx, long i, unsigned batch, int row, tc_fit_repeat_t *r, size_t n)
{
    (void)i;
    s_needs_t *needs = ctx;
    if (n == 0) {
        needs->missing++;
        return;
    }
    tc_fit_point_t *pt = s_find_point(needs->g, PQgetvalue(needs->res, row, 7), batch);
    if (!pt)
        return;
    s_need_t *e = &needs->v[needs->n++];
    e->pt = pt;
    e->multiplicity = (uint32_t)tc_store_bin_int4(needs->res, row, 8);
    e->config = atoll(PQgetvalue(needs->res, row, 9));
    e->first_layer = PQgetvalue(needs->res, row, 10)[0] != 0;
    tc_direction_parse(PQgetvalue(needs->res, row, 11), &e->dir);
    double sd;
    tc_fit_conv_time(r, n, needs->g->stat, &e->ms, &sd);
}

static int s_need_cmp(const void *pa, const void *pb)
{
    const s_need_t *a = pa, *b = pb;
    if (a->pt != b->pt)
        return a->pt < b->pt ? -1 : 1;
    if (a->config != b->config)
        return a->config < b->config ? -1 : 1;
    return (int)a->first_layer - (int)b->first_layer;
}

/* Each point's conv time from its needs v[0..n) (sorted by s_need_cmp): its
 * usages laid out and summed by the rule predict sums them with
 * (tc_conv_step_time). */
static int s_step_times(s_need_t *v, size_t n)
{
    tc_conv_use_t *uses = calloc(n ? n : 1, sizeof *uses);
    size_t *use_of = calloc(n ? n : 1, sizeof *use_of);
    double *ms = calloc(n ? n : 1, sizeof *ms);
    int rc = uses && use_of && ms ? 0 : tc_fail(TC_ENOMEM, "out of memory");
    for (size_t from = 0, to; rc == 0 && from < n; from = to) {
        size_t k = 0;
        for (to = from; to < n && v[to].pt == v[from].pt; to++) {
            if (to > from && s_need_cmp(&v[to], &v[to - 1]) != 0)
                k++;
            uses[k] = (tc_conv_use_t){.first_layer = v[to].first_layer,
                                      .multiplicity = v[to].multiplicity};
            use_of[to] = k;
        }
        tc_conv_step_layout_t l;
        rc = tc_conv_step_layout_init(&l, uses, k + 1);
        if (rc == 0) {
            for (size_t i = 0; i < l.size; i++)
                ms[i] = 0;
            for (size_t i = from; i < to; i++) {
                size_t slot = tc_conv_step_slot(&l, use_of[i], v[i].dir);
                if (slot != SIZE_MAX)
                    ms[slot] = v[i].ms;
            }
            v[from].pt->conv_ms = tc_conv_step_time(&l, ms, NULL, NULL);
        }
        tc_conv_step_layout_free(&l);
    }
    free(uses);
    free(use_of);
    free(ms);
    return rc;
}

static int s_read_conv_sums(tc_store_t *s, const char *const *params, tc_fit_group_t *g)
{
    PGresult *res = NULL;
    int rc = tc_store_query_binary(s, &res, "reading conv benchmarks",
                                   CONV_NEEDS_CTE
                                   "SELECT n.i, n.batch, l.median_ms, l.stddev_ms, "
                                   "l.measured_at, l.result_id, l.disturbed, n.model_id, "
                                   "n.multiplicity, n.model_config::text, n.first_layer, "
                                   "n.direction "
                                   "FROM need n LEFT JOIN LATERAL " CONV_REPEATS " l ON true",
                                   CONV_PARAMS, params);
    if (rc < 0)
        return rc;
    s_needs_t needs = {.g = g, .res = res};
    needs.v = calloc((size_t)PQntuples(res) + 1, sizeof *needs.v);
    rc = needs.v ? tc_store_conv_repeats(res, s_add_need, &needs)
                 : tc_fail(TC_ENOMEM, "out of memory");
    PQclear(res);
    if (rc == 0 && needs.missing)
        rc = s_missing_convs(s, params, g);
    if (rc == 0) {
        qsort(needs.v, needs.n, sizeof *needs.v, s_need_cmp);
        rc = s_step_times(needs.v, needs.n);
    }
    free(needs.v);
    return rc;
}

/* Every matmul measurement a group's points could need: each stored matmul
 * usage of a point's model in every direction (the step rule in C,
 * tc_matmul_step_directions, says which count), matched to a benchmarked
 * config of the same key in the dtype the convs ran in. */
#define MATMUL_NEEDS_CTE                                                                        \
    "WITH pts AS (SELECT DISTINCT t.model_id, t.batch " GROUP_TRACES " AND t.status = 'ok'), " \
    "need AS (SELECT (row_number() OVER ())::int4 AS i, p.model_id, p.batch, "                 \
    "  mm.multiplicity, mm.grad_a, mm.grad_b, dir.direction, bc.config_id AS bench_config "     \
    "  FROM pts p JOIN model_matmuls mm ON mm.model_id = p.model_id "                          \
    "  JOIN matmul_configs c ON c.config_id = mm.config_id "                                   \
    "  CROSS JOIN unnest(ARRAY['fwd', 'bwd_data', 'bwd_filter']) AS dir(direction) "           \
    "  LEFT JOIN matmul_configs bc ON " TC_SQL_MATMUL_KEY_EQ_NOT_DTYPE("bc", "c")              \
    "    AND bc.dtype = CASE WHEN $5 <> '' THEN $5 ELSE $4 END) "

typedef struct {
    tc_fit_group_t *g;
    const PGresult *res;
    long missing;
    bool failed;
} s_mm_needs_t;

/* One matmul measurement (tc_store_repeats_fn): columns 7 on are the
 * point's model, the usage's multiplicity, grad_a, grad_b and the
 * direction. Its step time goes into the point's matmul_ms by the rule. */
static void s_add_mm_need(void *ctx, long i, unsigned batch, int row, tc_fit_repeat_t *r,
                          size_t n)
{
    (void)i;
    s_mm_needs_t *needs = ctx;
    const PGresult *res = needs->res;
    tc_matmul_use_t use = {.multiplicity = (uint32_t)tc_store_bin_int4(res, row, 8),
                           .grad_a = PQgetvalue(res, row, 9)[0] != 0,
                           .grad_b = PQgetvalue(res, row, 10)[0] != 0};
    Traincast__V1__Direction dir, dirs[TC_MATMUL_STEP_MAX_DIRS];
    if (tc_direction_parse(PQgetvalue(res, row, 11), &dir) < 0) {
        needs->failed = true;
        return;
    }
    size_t n_dirs = tc_matmul_step_directions(&use, dirs), slot = n_dirs;
    for (size_t k = 0; k < n_dirs; k++)
        if (dirs[k] == dir)
            slot = k;
    if (slot == n_dirs)
        return; /* a direction this usage's step does not run */
    if (n == 0) {
        needs->missing++;
        return;
    }
    tc_fit_point_t *pt = s_find_point(needs->g, PQgetvalue(res, row, 7), batch);
    if (!pt)
        return;
    double ms[TC_MATMUL_STEP_MAX_DIRS] = {0}, sd;
    tc_fit_conv_time(r, n, needs->g->stat, &ms[slot], &sd);
    pt->matmul_ms += tc_matmul_step_ms(&use, ms);
}

/* Whether the group's matmuls are benchmarked, and if so each point's
 * matmul_ms (see tc_fit_group_t.matmuls). */
static int s_read_matmul_sums(tc_store_t *s, const char *const *params, tc_fit_group_t *g)
{
    g->matmuls = false;
    g->matmuls_why[0] = '\0';
    PGresult *res = NULL;
    const char *dp[] = {g->device, g->conv_policy};
    int rc = tc_store_query(s, &res, "counting matmul benchmarks",
                            "SELECT EXISTS (SELECT 1 FROM matmul_results r JOIN devices d USING "
                            "(device_id) WHERE d.name = $1 AND r.policy = $2)",
                            2, dp);
    if (rc < 0)
        return rc;
    bool any = PQgetvalue(res, 0, 0)[0] == 't';
    PQclear(res);
    if (!any)
        return 0; /* no matmul benchmarks: regressed with the rest, as ever */
    rc = tc_store_query(s, &res, "checking the models' matmul lists",
                        "WITH pts AS (SELECT DISTINCT t.model_id " GROUP_TRACES
                        " AND t.status = 'ok') SELECT count(*), coalesce(string_agg("
                        "coalesce(m.name, p.model_id), ', ' ORDER BY 1), '') FROM pts p "
                        "LEFT JOIN models m USING (model_id) "
                        "WHERE NOT coalesce(m.matmuls_listed, false)",
                        7, params);
    if (rc < 0)
        return rc;
    long unlisted = atol(PQgetvalue(res, 0, 0));
    if (unlisted) {
        snprintf(g->matmuls_why, sizeof g->matmuls_why,
                 "%ld traced model%s came without a matmul list (an older agent traced them: "
                 "trace them again to benchmark their matmuls): %.300s",
                 unlisted, unlisted == 1 ? "" : "s", PQgetvalue(res, 0, 1));
        PQclear(res);
        return 0;
    }
    PQclear(res);
    const char *mp[] = {params[0], params[1], params[2], params[3], params[4],
                        params[5], params[6], params[7]};
    rc = tc_store_query_binary(s, &res, "reading matmul benchmarks",
                               MATMUL_NEEDS_CTE
                               "SELECT n.i, n.batch, l.median_ms, l.stddev_ms, l.measured_at, "
                               "l.result_id, l.disturbed, n.model_id, n.multiplicity, n.grad_a, "
                               "n.grad_b, n.direction FROM need n LEFT JOIN LATERAL "
                               TC_SQL_MATMUL_REPEATS("$1", "$8", "n.bench_config",
                                                     "ARRAY[n.batch]", "n.direction")
                               " l ON true",
                               8, mp);
    if (rc < 0)
        return rc;
    for (size_t i = 0; i < g->n_points; i++)
        g->points[i].matmul_ms = 0;
    s_mm_needs_t needs = {.g = g, .res = res};
    rc = tc_store_conv_repeats(res, s_add_mm_need, &needs);
    PQclear(res);
    if (rc == 0 && needs.failed)
        rc = tc_fail(TC_EDB, "database: a matmul result has an unknown direction");
    if (rc < 0)
        return rc;
    if (needs.missing) {
        for (size_t i = 0; i < g->n_points; i++)
            g->points[i].matmul_ms = 0;
        snprintf(g->matmuls_why, sizeof g->matmuls_why,
                 "%ld matmul measurement%s of the traced models lack%s benchmarks on '%s' "
                 "(policy %s): run 'agent bench --models ... --ops matmul' there for the traced "
                 "models and batches, then fit again",
                 needs.missing, needs.missing == 1 ? "" : "s", needs.missing == 1 ? "s" : "",
                 g->device, g->conv_policy);
        return 0;
    }
    g->matmuls = true;
    return 0;
}

static int s_read_features(tc_store_t *s, tc_fit_group_t *g)
{
    tc_layer_summary_t *layers = NULL;
    size_t n_layers = 0;
    const char *loaded = NULL;
    int rc = 0;
    /* Points are ordered by model, so each model's layers are read once. */
    for (size_t i = 0; i < g->n_points && rc == 0; i++) {
        tc_fit_point_t *pt = &g->points[i];
        if (!loaded || strcmp(loaded, pt->model_id) != 0) {
            free(layers);
            layers = NULL;
            rc = tc_store_model_layers(s, pt->model_id, &layers, &n_layers);
            loaded = pt->model_id;
        }
        if (rc == 0)
            tc_features_from_layers(layers, n_layers, pt->batch, &pt->features);
    }
    free(layers);
    return rc;
}

/* The directions of the conv-time rule as a PostgreSQL array literal. */
static void s_step_dirs(bool first_layer, char *buf, size_t size)
{
    Traincast__V1__Direction dirs[TC_CONV_STEP_MAX_DIRS];
    size_t n = tc_conv_step_directions(first_layer, dirs), len = 0;
    len += (size_t)snprintf(buf, size, "{");
    for (size_t i = 0; i < n && len < size; i++)
        len += (size_t)snprintf(buf + len, size - len, "%s%s", i ? "," : "",
                                tc_direction_name(dirs[i]));
    if (len < size)
        snprintf(buf + len, size - len, "}");
}

static int s_read_group(tc_store_t *s, tc_fit_group_t *g)
{
    char first_dirs[64], other_dirs[64];
    s_step_dirs(true, first_dirs, sizeof first_dirs);
    s_step_dirs(false, other_dirs, sizeof other_dirs);
    const char *stat = tc_fit_stat_name(g->stat);
    const char *params[CONV_PARAMS] = {
        g->device,   g->framework,   *g->policy ? g->policy : NULL, g->dtype,   g->amp,
        g->library_version, g->settings, g->conv_policy, first_dirs, other_dirs};
    const char *point_params[] = {params[0], params[1], params[2], params[3],
                                  params[4], params[5], params[6], stat};
    int rc = s_read_points(s, point_params, g);
    if (rc == 0)
        rc = s_read_disturbed(s, params, g);
    if (rc == 0)
        rc = s_read_excluded(s, params, g);
    if (rc == 0)
        rc = s_read_conv_sums(s, params, g);
    if (rc == 0)
        rc = s_read_matmul_sums(s, params, g);
    if (rc == 0)
        rc = s_read_features(s, g);
    return rc;
}

int tc_store_fit_groups(tc_store_t *s, char *const *devices, size_t n_devices,
                        tc_fit_stat_t stat, bool include_disturbed, tc_fit_group_t **out,
                        size_t *n_out)
{
    *out = NULL;
    *n_out = 0;
    char **names = NULL;
    size_t n_names = 0;
    tc_fit_group_t *groups = NULL;
    size_t n_groups = 0;
    int rc = tc_store_check_schema(s);
    if (rc == 0)
        rc = s_device_names(s, devices, n_devices, &names, &n_names);
    for (size_t k = 0; rc == 0 && k < n_names; k++) {
        const char *p[] = {names[k]};
        PGresult *res = NULL;
        rc = tc_store_query(s, &res, "listing trace groups",
                            "SELECT t.framework, coalesce(t.policy, ''), t.dtype, "
                            "count(*) FILTER (WHERE t.status = 'ok'), "
                            "count(*) FILTER (WHERE t.status = 'oom'), "
                            "count(*) FILTER (WHERE t.status = 'failed'), "
                            "coalesce(t.amp, ''), " LIBRARY_KEY("t", "d") ", t.settings_key "
                            "FROM traces t JOIN devices d USING (device_id) WHERE d.name = $1 "
                            "GROUP BY 1, 2, 3, 7, 8, 9 ORDER BY 1, 2, 3, 7, 8, 9",
                            1, p);
        if (rc < 0)
            break;
        int n = PQntuples(res);
        long ok_total = 0, oom_total = 0, failed_total = 0;
        for (int i = 0; i < n; i++) {
            ok_total += atol(PQgetvalue(res, i, 3));
            oom_total += atol(PQgetvalue(res, i, 4));
            failed_total += atol(PQgetvalue(res, i, 5));
        }
        if (ok_total == 0) {
            PQclear(res);
            rc = tc_fail(TC_EINVAL, "device '%s' has no successful traces (%ld failed, %ld ran "
                                    "out of memory; see the view trace_failures): fix the "
                                    "failures or trace smaller batches, then fit",
                         names[k], failed_total, oom_total);
            break;
        }
        tc_fit_group_t *grown = realloc(groups, (n_groups + (size_t)n) * sizeof *groups);
        if (!grown) {
            PQclear(res);
            rc = tc_fail(TC_ENOMEM, "out of memory");
            break;
        }
        groups = grown;
        for (int i = 0; i < n && rc == 0; i++) {
            if (atol(PQgetvalue(res, i, 3)) == 0) {
                tc_log_warn("device '%s': every %s %s %s trace failed; no fit for those",
                            names[k], PQgetvalue(res, i, 0), PQgetvalue(res, i, 1),
                            PQgetvalue(res, i, 2));
                continue;
            }
            tc_fit_group_t *g = &groups[n_groups++];
            memset(g, 0, sizeof *g);
            snprintf(g->device, sizeof g->device, "%s", names[k]);
            snprintf(g->framework, sizeof g->framework, "%s", PQgetvalue(res, i, 0));
            snprintf(g->policy, sizeof g->policy, "%s", PQgetvalue(res, i, 1));
            snprintf(g->dtype, sizeof g->dtype, "%s", PQgetvalue(res, i, 2));
            snprintf(g->amp, sizeof g->amp, "%s", PQgetvalue(res, i, 6));
            snprintf(g->library_version, sizeof g->library_version, "%s",
                     PQgetvalue(res, i, 7));
            snprintf(g->settings, sizeof g->settings, "%s", PQgetvalue(res, i, 8));
            snprintf(g->conv_policy, sizeof g->conv_policy, "%s",
                     *g->policy ? g->policy : "heuristic");
            g->stat = stat;
            g->include_disturbed = include_disturbed;
            rc = s_read_group(s, g);
        }
        PQclear(res);
    }
    tc_free_strv(names, n_names);
    if (rc < 0) {
        tc_fit_groups_free(&groups, n_groups);
        return rc;
    }
    *out = groups;
    *n_out = n_groups;
    return 0;
}
