/* Exporting benchmark sets (store_set.h): the export's read-only
 * transaction, the set's summary, and its stored results listed as the
 * messages that brought them, in the order they were stored: model graphs
 * (with their conv and matmul lists), conv results with their algorithm
 * timings and the matmul results of the same messages, and training traces,
 * each rebuilt in a pool freed once the message has been handed on. One
 * subject, over 800 lines: the queries and the rebuilding of what they read
 * are read together. */
#include "store_set.h"

#include "store_internal.h"

#include "tc_buf.h"
#include "tc_error.h"
#include "tc_matmul_key.h"
#include "tc_sha256.h"
#include "tc_validate.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Microseconds since the epoch of a timestamptz column, as SQL. */
#define TC_SQL_US(col) "(extract(epoch FROM " col ") * 1000000)::numeric::bigint"

/* The devices of the classes: id list for the export's queries. */
#define TC_SQL_SET_DEVICES "(SELECT device_id FROM devices WHERE name = ANY ($1::text[]))"

/* The columns of a devices row `d` a Device is rebuilt from, in the order
 * the rebuilders below read them: TC_SQL_DEVICE_NCOLS of them. */
#define TC_SQL_DEVICE_NCOLS 17
#define TC_SQL_DEVICE_COLS                                                                      \
    "d.kind, d.name, d.uuid, d.compute_capability, d.multiprocessors, d.threads, "              \
    "d.memory_bytes, d.clock_mhz, d.memory_clock_mhz, d.driver_version, d.runtime_version, "    \
    "d.library, d.library_version, d.host, d.gpu_index, d.framework, d.routing"

/* Everything one rebuilt message owns, freed together after it is used. */
typedef struct {
    void **p;
    size_t n, cap;
    int failed;
} s_pool_t;

static void *s_alloc(s_pool_t *pool, size_t size)
{
    if (pool->n == pool->cap) {
        size_t cap = pool->cap ? pool->cap * 2 : 256;
        void **p = realloc(pool->p, cap * sizeof *p);
        if (!p) {
            pool->failed = 1;
            return NULL;
        }
        pool->p = p;
        pool->cap = cap;
    }
    void *m = calloc(1, size ? size : 1);
    if (!m) {
        pool->failed = 1;
        return NULL;
    }
    pool->p[pool->n++] = m;
    return m;
}

static char *s_str(s_pool_t *pool, const char *s)
{
    size_t n = strlen(s ? s : "");
    char *c = s_alloc(pool, n + 1);
    if (c && n)
        memcpy(c, s, n);
    return c ? c : (char *)"";
}

static void s_pool_free(s_pool_t *pool)
{
    for (size_t i = 0; i < pool->n; i++)
        free(pool->p[i]);
    free(pool->p);
    memset(pool, 0, sizeof *pool);
}

/* Cell helpers: NULL reads as 0 or "". */
static const char *s_v(PGresult *res, int r, int c)
{
    return PQgetisnull(res, r, c) ? NULL : PQgetvalue(res, r, c);
}
static long long s_ll(PGresult *res, int r, int c)
{
    const char *v = s_v(res, r, c);
    return v ? strtoll(v, NULL, 10) : 0;
}
static double s_d(PGresult *res, int r, int c)
{
    const char *v = s_v(res, r, c);
    return v ? strtod(v, NULL) : 0;
}

/* The load columns from `col` (others, steal, GPU processes, threshold,
 * remeasured, disturbed), NULL when none was recorded. */
static Traincast__V1__Load *s_load(s_pool_t *pool, PGresult *res, int row, int col)
{
    if (PQgetisnull(res, row, col))
        return NULL;
    Traincast__V1__Load *l = s_alloc(pool, sizeof *l);
    if (!l)
        return NULL;
    traincast__v1__load__init(l);
    l->others_pct = s_d(res, row, col);
    l->steal_pct = s_d(res, row, col + 1);
    l->gpu_other_processes = (uint32_t)s_ll(res, row, col + 2);
    l->threshold_pct = s_d(res, row, col + 3);
    l->remeasured = (uint32_t)s_ll(res, row, col + 4);
    l->disturbed = PQgetvalue(res, row, col + 5)[0] == 't';
    return l;
}

/* A result's load (s_load) with its canary reading and the time of the
 * result it supersedes in the two columns after (TC_SQL_RESULT_LOAD_COLS). */
static Traincast__V1__Load *s_result_load(s_pool_t *pool, PGresult *res, int row, int col)
{
    Traincast__V1__Load *l = s_load(pool, res, row, col);
    if (l) {
        l->canary_ms = s_d(res, row, col + 6);
        l->supersedes_us = s_ll(res, row, col + 7);
    }
    return l;
}
#define TC_SQL_RESULT_LOAD_COLS                                                                \
    "r.load_others_pct, r.load_steal_pct, r.gpu_other_processes, r.load_threshold_pct, "     \
    "r.remeasured, r.disturbed, r.canary_ms, " TC_SQL_US("r.supersedes_at")


/* The conv key from columns col.. of a row, in tc_conv_key.h's order (as
 * TC_SQL_CONV_KEY_COLS selects it). */
static void s_key_U32(PGresult *res, int r, int c, uint32_t *v)
{
    *v = (uint32_t)s_ll(res, r, c);
}

static void s_key_DTYPE(PGresult *res, int r, int c, Traincast__V1__DType *v)
{
    tc_dtype_parse(PQgetvalue(res, r, c), v);
}

static void s_key_LAYOUT(PGresult *res, int r, int c, Traincast__V1__Layout *v)
{
    tc_layout_parse(PQgetvalue(res, r, c), v);
}

static void s_key_BOOL(PGresult *res, int r, int c, protobuf_c_boolean *v)
{
    *v = PQgetvalue(res, r, c)[0] == 't';
}

static void s_conv_key(PGresult *res, int r, int col, Traincast__V1__ConvConfig *c)
{
#define X(x, y, name, kind, first) s_key_##kind(res, r, col++, &c->name);
    TC_CONV_KEY(X, , )
#undef X
}

/* The matmul key from columns col.. (as TC_SQL_MATMUL_KEY_COLS selects it):
 * the proto's fields have the key's names. */
static void s_matmul_key(PGresult *res, int r, int col, Traincast__V1__MatmulConfig *c)
{
#define X(x, y, name, kind, first) s_key_##kind(res, r, col++, &c->name);
    TC_MATMUL_KEY(X, , )
#undef X
}

/* "1.5,2,3" (array_to_string) into a pooled array. */
static size_t s_doubles(s_pool_t *pool, const char *text, double **out)
{
    *out = NULL;
    if (!text || !*text)
        return 0;
    size_t n = 1;
    for (const char *p = text; *p; p++)
        n += *p == ',';
    double *v = s_alloc(pool, n * sizeof *v);
    if (!v)
        return 0;
    const char *p = text;
    for (size_t i = 0; i < n; i++) {
        char *end = NULL;
        v[i] = strtod(p, &end);
        p = *end == ',' ? end + 1 : end;
    }
    *out = v;
    return n;
}

static size_t s_ints(s_pool_t *pool, const char *text, int64_t **out)
{
    *out = NULL;
    if (!text || !*text)
        return 0;
    size_t n = 1;
    for (const char *p = text; *p; p++)
        n += *p == ',';
    int64_t *v = s_alloc(pool, n * sizeof *v);
    if (!v)
        return 0;
    const char *p = text;
    for (size_t i = 0; i < n; i++) {
        char *end = NULL;
        v[i] = strtoll(p, &end, 10);
        p = *end == ',' ? end + 1 : end;
    }
    *out = v;
    return n;
}

/* A deterministic message id for a model graph (the same model exported
 * twice is the same message, so a second import stores nothing): a ULID
 * whose 130 bits come from SHA-256 of the model id and its source hash,
 * and, for a graph that lists its matmuls, a mark of that: a graph exported
 * before its matmuls were listed (or by a traincast that did not list them)
 * is another message, so that an importer that holds it stores the list. */
static void s_model_msgid(const char *model_id, const char *sha, bool matmuls_listed,
                          char out[TC_MSGID_LEN + 1])
{
    static const char b32[] = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";
    tc_sha256_t h;
    uint8_t d[32];
    tc_sha256_init(&h);
    tc_sha256_update(&h, "traincast model graph\n", 22);
    tc_sha256_update(&h, model_id, strlen(model_id) + 1);
    tc_sha256_update(&h, sha ? sha : "", strlen(sha ? sha : ""));
    if (matmuls_listed)
        tc_sha256_update(&h, "\nmatmuls listed", 15);
    tc_sha256_final(&h, d);
    /* 3 bits for the first character (a ULID starts at most with 7), then
     * 25 characters of 5 bits. */
    out[0] = b32[d[0] >> 5];
    unsigned bit = 3;
    for (int i = 1; i < TC_MSGID_LEN; i++) {
        unsigned v = 0;
        for (int k = 0; k < 5; k++, bit++)
            v = v << 1 | ((d[bit / 8] >> (7 - bit % 8)) & 1);
        out[i] = b32[v];
    }
    out[TC_MSGID_LEN] = '\0';
}

static int s_emit(s_pool_t *pool, tc_envelope_t *env, tc_store_envelope_fn fn, void *arg)
{
    if (pool->failed)
        return tc_fail(TC_ENOMEM, "out of memory rebuilding a message");
    env->protocol_version = TC_PROTOCOL_VERSION;
    return fn(arg, env);
}

/* A model's matmul list (model_matmuls, in the key's order) and whether
 * its agent listed them (models.matmuls_listed, column 9 of `models`). */
static void s_model_matmuls(s_pool_t *pool, PGresult *models, int m, PGresult *matmuls,
                            Traincast__V1__ModelGraph *g)
{
    g->matmuls_listed = PQgetvalue(models, m, 9)[0] == 't';
    g->n_matmuls = g->matmuls_listed ? (size_t)PQntuples(matmuls) : 0;
    g->matmuls = s_alloc(pool, (g->n_matmuls + 1) * sizeof *g->matmuls);
    for (size_t i = 0; g->matmuls && i < g->n_matmuls; i++) {
        Traincast__V1__MatmulUsage *u = s_alloc(pool, sizeof *u);
        Traincast__V1__MatmulConfig *c = s_alloc(pool, sizeof *c);
        if (!u || !c)
            return;
        traincast__v1__matmul_usage__init(u);
        traincast__v1__matmul_config__init(c);
        int r = (int)i;
        s_matmul_key(matmuls, r, 0, c); /* minibatch 0: a model's list has none */
        u->config = c;
        u->multiplicity = (uint32_t)s_ll(matmuls, r, TC_MATMUL_KEY_FIELDS);
        u->grad_a = PQgetvalue(matmuls, r, TC_MATMUL_KEY_FIELDS + 1)[0] == 't';
        u->grad_b = PQgetvalue(matmuls, r, TC_MATMUL_KEY_FIELDS + 2)[0] == 't';
        g->matmuls[i] = u;
    }
}

static int s_export_models(tc_store_t *s, const char *const *params, tc_store_envelope_fn fn,
                           void *arg)
{
    PGresult *models = NULL;
    int rc = tc_store_query(s, &models, "reading the set's models",
                            "SELECT model_id, name, input_c, input_h, input_w, params, flops, "
                            "source_sha256, " TC_SQL_US("stored_at") ", matmuls_listed FROM "
                            "models WHERE model_id IN (SELECT t.model_id FROM traces t WHERE "
                            "t.device_id IN " TC_SQL_SET_DEVICES ") ORDER BY model_id",
                            1, params);
    for (int m = 0; rc == 0 && m < PQntuples(models); m++) {
        s_pool_t pool = {0};
        const char *idp[] = {PQgetvalue(models, m, 0)};
        PGresult *layers = NULL, *convs = NULL, *matmuls = NULL;
        rc = tc_store_query(s, &layers, "reading a model's layers",
                            "SELECT name, op, op_class, params, flops, elems_in, elems_out, "
                            "array_to_string(out_shape, ',') FROM model_layers WHERE model_id = "
                            "$1 ORDER BY idx",
                            1, idp);
        if (rc == 0)
            rc = tc_store_query(s, &convs, "reading a model's convs",
                                "SELECT " TC_SQL_CONV_KEY_COLS("c.") ", mc.multiplicity, "
                                "mc.first_layer FROM model_convs mc JOIN conv_configs c USING "
                                "(config_id) WHERE mc.model_id = $1 ORDER BY mc.config_id, "
                                "mc.first_layer",
                                1, idp);
        /* In the key's order, so that the same list is the same message
         * whatever ids its configs have in this database. */
        if (rc == 0)
            rc = tc_store_query(s, &matmuls, "reading a model's matmuls",
                                "SELECT " TC_SQL_MATMUL_KEY_COLS("c.") ", mm.multiplicity, "
                                "mm.grad_a, mm.grad_b FROM model_matmuls mm JOIN matmul_configs "
                                "c USING (config_id) WHERE mm.model_id = $1 ORDER BY "
                                TC_SQL_MATMUL_KEY_COLS("c.") ", mm.grad_a, mm.grad_b",
                                1, idp);
        Traincast__V1__ModelGraph *g = s_alloc(&pool, sizeof *g);
        tc_envelope_t *env = s_alloc(&pool, sizeof *env);
        char *msgid = s_alloc(&pool, TC_MSGID_LEN + 1);
        if (rc == 0 && g && env && msgid) {
            traincast__v1__model_graph__init(g);
            traincast__v1__envelope__init(env);
            g->model_id = s_str(&pool, PQgetvalue(models, m, 0));
            g->name = s_str(&pool, PQgetvalue(models, m, 1));
            g->input_c = (uint32_t)s_ll(models, m, 2);
            g->input_h = (uint32_t)s_ll(models, m, 3);
            g->input_w = (uint32_t)s_ll(models, m, 4);
            g->params = (uint64_t)s_ll(models, m, 5);
            g->flops = s_d(models, m, 6);
            g->source_sha256 = s_str(&pool, s_v(models, m, 7));
            g->n_layers = (size_t)PQntuples(layers);
            g->layers = s_alloc(&pool, (g->n_layers + 1) * sizeof *g->layers);
            for (size_t i = 0; g->layers && i < g->n_layers; i++) {
                Traincast__V1__Layer *l = s_alloc(&pool, sizeof *l);
                if (!l)
                    break;
                traincast__v1__layer__init(l);
                int r = (int)i;
                l->name = s_str(&pool, s_v(layers, r, 0));
                l->op = s_str(&pool, s_v(layers, r, 1));
                l->op_class = s_str(&pool, s_v(layers, r, 2));
                l->params = (uint64_t)s_ll(layers, r, 3);
                l->flops = s_d(layers, r, 4);
                l->elems_in = (uint64_t)s_ll(layers, r, 5);
                l->elems_out = (uint64_t)s_ll(layers, r, 6);
                l->n_out_shape = s_ints(&pool, s_v(layers, r, 7), &l->out_shape);
                g->layers[i] = l;
            }
            g->n_convs = (size_t)PQntuples(convs);
            g->convs = s_alloc(&pool, (g->n_convs + 1) * sizeof *g->convs);
            for (size_t i = 0; g->convs && i < g->n_convs; i++) {
                Traincast__V1__ConvUsage *u = s_alloc(&pool, sizeof *u);
                Traincast__V1__ConvConfig *c = s_alloc(&pool, sizeof *c);
                if (!u || !c)
                    break;
                traincast__v1__conv_usage__init(u);
                traincast__v1__conv_config__init(c);
                int r = (int)i;
                s_conv_key(convs, r, 0, c);
                u->config = c;
                u->multiplicity = (uint32_t)s_ll(convs, r, TC_CONV_KEY_FIELDS);
                u->first_layer = PQgetvalue(convs, r, TC_CONV_KEY_FIELDS + 1)[0] == 't';
                g->convs[i] = u;
            }
            s_model_matmuls(&pool, models, m, matmuls, g);
            s_model_msgid(g->model_id, g->source_sha256, g->matmuls_listed, msgid);
            env->message_id = msgid;
            env->agent_id = (char *)"traincast-export";
            env->sent_at_us = s_ll(models, m, 8);
            env->body_case = TRAINCAST__V1__ENVELOPE__BODY_MODEL_GRAPH;
            env->model_graph = g;
            rc = s_emit(&pool, env, fn, arg);
        } else if (rc == 0) {
            rc = tc_fail(TC_ENOMEM, "out of memory");
        }
        PQclear(layers);
        PQclear(convs);
        PQclear(matmuls);
        s_pool_free(&pool);
    }
    PQclear(models);
    return rc;
}

static Traincast__V1__Device *s_device(s_pool_t *pool, PGresult *res, int r, int c)
{
    Traincast__V1__Device *d = s_alloc(pool, sizeof *d);
    if (!d)
        return NULL;
    traincast__v1__device__init(d);
    const char *kind = PQgetvalue(res, r, c);
    d->kind = !strcmp(kind, "cuda") ? TRAINCAST__V1__DEVICE_KIND__DEVICE_KIND_CUDA
                                    : TRAINCAST__V1__DEVICE_KIND__DEVICE_KIND_CPU;
    d->name = s_str(pool, s_v(res, r, c + 1));
    d->uuid = s_str(pool, s_v(res, r, c + 2));
    d->compute_capability = s_str(pool, s_v(res, r, c + 3));
    d->multiprocessors = (uint32_t)s_ll(res, r, c + 4);
    d->threads = (uint32_t)s_ll(res, r, c + 5);
    d->memory_bytes = (uint64_t)s_ll(res, r, c + 6);
    d->clock_mhz = (uint32_t)s_ll(res, r, c + 7);
    d->memory_clock_mhz = (uint32_t)s_ll(res, r, c + 8);
    d->driver_version = s_str(pool, s_v(res, r, c + 9));
    d->runtime_version = s_str(pool, s_v(res, r, c + 10));
    d->library = s_str(pool, s_v(res, r, c + 11));
    d->library_version = s_str(pool, s_v(res, r, c + 12));
    d->host = s_str(pool, s_v(res, r, c + 13));
    d->index = (uint32_t)s_ll(res, r, c + 14);
    d->framework = s_str(pool, s_v(res, r, c + 15));
    d->routing = s_str(pool, s_v(res, r, c + 16));
    return d;
}

static int s_enum(const char *(*name)(int), const char *text)
{
    for (int v = 0; v < 32; v++) {
        if (!strcmp(name(v), text))
            return v;
    }
    return 0;
}
static const char *s_algo_status_name(int v)
{
    return tc_algo_status_name((Traincast__V1__AlgoStatus)v);
}
static const char *s_trace_status_name(int v)
{
    return tc_trace_status_name((Traincast__V1__TraceStatus)v);
}

/* A message's matmul results, in their order (seq): their columns are a
 * conv result's less what only a conv has (algorithm candidates, workspace,
 * an algorithm id: -1, as the agent sends it). */
#define TC_SQL_MATMUL_RESULT_COLS                                                              \
    "r.seq, " TC_SQL_MATMUL_KEY_COLS("c.") ", r.batch, r.direction, r.policy, r.algo, "       \
    "r.route, r.median_ms, r.min_ms, r.max_ms, r.stddev_ms, r.repetitions, "                 \
    TC_SQL_US("r.measured_at") ", array_to_string(r.samples_ms, ','), "                      \
    "array_to_string(r.sample_offsets_us, ','), r.sm_clock_mhz, r.power_w, "                 \
    TC_SQL_RESULT_LOAD_COLS

static void s_matmul_results(s_pool_t *pool, PGresult *rows, Traincast__V1__ConvResults *cr)
{
    cr->n_matmul_results = (size_t)PQntuples(rows);
    cr->matmul_results = s_alloc(pool, (cr->n_matmul_results + 1) * sizeof *cr->matmul_results);
    for (size_t i = 0; cr->matmul_results && i < cr->n_matmul_results; i++) {
        int r = (int)i;
        Traincast__V1__ConvResult *x = s_alloc(pool, sizeof *x);
        Traincast__V1__MatmulConfig *c = s_alloc(pool, sizeof *c);
        if (!x || !c)
            return;
        traincast__v1__conv_result__init(x);
        traincast__v1__matmul_config__init(c);
        /* seq, the matmul key, then the result's columns from B on. */
        enum { B = 1 + TC_MATMUL_KEY_FIELDS };
        s_matmul_key(rows, r, 1, c);
        c->minibatch = (uint32_t)s_ll(rows, r, B);
        x->matmul = c;
        tc_direction_parse(PQgetvalue(rows, r, B + 1), &x->direction);
        tc_policy_parse(PQgetvalue(rows, r, B + 2), &x->policy);
        x->algo = s_str(pool, s_v(rows, r, B + 3));
        x->algo_id = -1;
        x->route = s_str(pool, s_v(rows, r, B + 4));
        x->median_ms = s_d(rows, r, B + 5);
        x->min_ms = s_d(rows, r, B + 6);
        x->max_ms = s_d(rows, r, B + 7);
        x->stddev_ms = s_d(rows, r, B + 8);
        x->repetitions = (uint32_t)s_ll(rows, r, B + 9);
        x->measured_at_us = s_ll(rows, r, B + 10);
        x->n_samples_ms = s_doubles(pool, s_v(rows, r, B + 11), &x->samples_ms);
        x->n_sample_offsets_us = s_ints(pool, s_v(rows, r, B + 12), &x->sample_offsets_us);
        x->sm_clock_mhz = (uint32_t)s_ll(rows, r, B + 13);
        x->power_w = s_d(rows, r, B + 14);
        x->load = s_result_load(pool, rows, r, B + 15);
        cr->matmul_results[i] = x;
    }
}

/* One ConvResults message as it was sent: `msgs` row m has its id, agent,
 * send time, backend, its device's columns from 4, and how many convs and
 * matmuls it holds (S_MSG_CONVS, S_MSG_MATMULS); either may be none. */
enum { S_MSG_CONVS = 4 + TC_SQL_DEVICE_NCOLS, S_MSG_MATMULS };

static int s_export_conv_message(tc_store_t *s, PGresult *msgs, int m, tc_store_envelope_fn fn,
                                 void *arg)
{
    s_pool_t pool = {0};
    const char *idp[] = {PQgetvalue(msgs, m, 0)};
    PGresult *rows = NULL, *cands = NULL, *mms = NULL;
    bool convs = s_ll(msgs, m, S_MSG_CONVS) > 0;
    int rc = 0;
    if (convs)
        rc = tc_store_query(
            s, &rows, "reading a message's conv results",
            "SELECT r.seq, " TC_SQL_CONV_KEY_COLS("c.") ", r.batch, r.direction, "
            "r.policy, r.algo, r.algo_id, r.median_ms, r.min_ms, r.max_ms, r.stddev_ms, "
            "r.repetitions, r.workspace_bytes, " TC_SQL_US("r.measured_at") ", "
            "array_to_string(r.samples_ms, ','), array_to_string(r.sample_offsets_us, ','), "
            "r.result_id, r.route, r.library_version, r.sm_clock_mhz, r.power_w, "
            TC_SQL_RESULT_LOAD_COLS " FROM "
            "conv_results r JOIN conv_configs c USING (config_id) WHERE "
            "r.message_id = $1 ORDER BY r.seq",
            1, idp);
    if (rc == 0 && convs)
        rc = tc_store_query(s, &cands, "reading a message's algorithm timings",
                            "SELECT r.seq, t.algo, t.algo_id, t.time_ms, t.workspace_bytes, "
                            "t.status, t.message FROM conv_algo_timings t JOIN conv_results r "
                            "USING (result_id) WHERE r.message_id = $1 ORDER BY r.seq, t.ctid",
                            1, idp);
    if (rc == 0 && s_ll(msgs, m, S_MSG_MATMULS) > 0)
        rc = tc_store_query(s, &mms, "reading a message's matmul results",
                            "SELECT " TC_SQL_MATMUL_RESULT_COLS " FROM matmul_results r JOIN "
                            "matmul_configs c USING (config_id) WHERE r.message_id = $1 ORDER "
                            "BY r.seq",
                            1, idp);
    tc_envelope_t *env = s_alloc(&pool, sizeof *env);
    Traincast__V1__ConvResults *cr = s_alloc(&pool, sizeof *cr);
    if (rc == 0 && env && cr) {
        traincast__v1__envelope__init(env);
        traincast__v1__conv_results__init(cr);
        cr->device = s_device(&pool, msgs, m, 4);
        cr->backend = s_str(&pool, s_v(msgs, m, 3));
        cr->n_results = (size_t)PQntuples(rows);
        cr->results = s_alloc(&pool, (cr->n_results + 1) * sizeof *cr->results);
        int cand = 0, n_cands = PQntuples(cands);
        for (size_t i = 0; cr->results && i < cr->n_results; i++) {
            int r = (int)i;
            Traincast__V1__ConvResult *x = s_alloc(&pool, sizeof *x);
            Traincast__V1__ConvConfig *c = s_alloc(&pool, sizeof *c);
            if (!x || !c)
                break;
            traincast__v1__conv_result__init(x);
            traincast__v1__conv_config__init(c);
            /* seq, the conv key, then the result's columns from B on. */
            enum { B = 1 + TC_CONV_KEY_FIELDS };
            s_conv_key(rows, r, 1, c);
            c->n = (uint32_t)s_ll(rows, r, B);
            x->route = s_str(&pool, s_v(rows, r, B + 15));
            /* The library version each result was measured with travels in
             * its message's device (they are one per message). */
            if (i == 0 && s_v(rows, r, B + 16) && cr->device)
                cr->device->library_version = s_str(&pool, s_v(rows, r, B + 16));
            x->sm_clock_mhz = (uint32_t)s_ll(rows, r, B + 17);
            x->power_w = s_d(rows, r, B + 18);
            x->load = s_result_load(&pool, rows, r, B + 19);
            x->config = c;
            tc_direction_parse(PQgetvalue(rows, r, B + 1), &x->direction);
            tc_policy_parse(PQgetvalue(rows, r, B + 2), &x->policy);
            x->algo = s_str(&pool, s_v(rows, r, B + 3));
            x->algo_id = (int32_t)s_ll(rows, r, B + 4);
            x->median_ms = s_d(rows, r, B + 5);
            x->min_ms = s_d(rows, r, B + 6);
            x->max_ms = s_d(rows, r, B + 7);
            x->stddev_ms = s_d(rows, r, B + 8);
            x->repetitions = (uint32_t)s_ll(rows, r, B + 9);
            x->workspace_bytes = (uint64_t)s_ll(rows, r, B + 10);
            x->measured_at_us = s_ll(rows, r, B + 11);
            x->n_samples_ms = s_doubles(&pool, s_v(rows, r, B + 12), &x->samples_ms);
            x->n_sample_offsets_us = s_ints(&pool, s_v(rows, r, B + 13), &x->sample_offsets_us);
            long long seq = s_ll(rows, r, 0);
            int first = cand;
            while (cand < n_cands && s_ll(cands, cand, 0) == seq)
                cand++;
            x->n_candidates = (size_t)(cand - first);
            x->candidates = s_alloc(&pool, (x->n_candidates + 1) * sizeof *x->candidates);
            for (size_t j = 0; x->candidates && j < x->n_candidates; j++) {
                int q = first + (int)j;
                Traincast__V1__AlgoTiming *a = s_alloc(&pool, sizeof *a);
                if (!a)
                    break;
                traincast__v1__algo_timing__init(a);
                a->algo = s_str(&pool, s_v(cands, q, 1));
                a->algo_id = (int32_t)s_ll(cands, q, 2);
                a->time_ms = s_d(cands, q, 3);
                a->workspace_bytes = (uint64_t)s_ll(cands, q, 4);
                a->status = (Traincast__V1__AlgoStatus)s_enum(s_algo_status_name,
                                                              PQgetvalue(cands, q, 5));
                a->message = s_str(&pool, s_v(cands, q, 6));
                x->candidates[j] = a;
            }
            cr->results[i] = x;
        }
        if (mms)
            s_matmul_results(&pool, mms, cr);
        env->message_id = s_str(&pool, PQgetvalue(msgs, m, 0));
        env->agent_id = s_str(&pool, PQgetvalue(msgs, m, 1));
        env->sent_at_us = s_ll(msgs, m, 2);
        env->body_case = TRAINCAST__V1__ENVELOPE__BODY_CONV_RESULTS;
        env->conv_results = cr;
        rc = s_emit(&pool, env, fn, arg);
    } else if (rc == 0) {
        rc = tc_fail(TC_ENOMEM, "out of memory");
    }
    PQclear(rows);
    PQclear(cands);
    PQclear(mms);
    s_pool_free(&pool);
    return rc;
}

/* A trace row's own columns (from 4) and its device's (from 26). */
static void s_trace_fields(s_pool_t *pool, PGresult *tr, int t, Traincast__V1__TrainTrace *x)
{
    x->framework = s_str(pool, s_v(tr, t, 4));
    x->framework_version = s_str(pool, s_v(tr, t, 5));
    x->library_version = s_str(pool, s_v(tr, t, 6));
    x->model_id = s_str(pool, s_v(tr, t, 7));
    x->batch = (uint32_t)s_ll(tr, t, 8);
    x->input_size = (uint32_t)s_ll(tr, t, 9);
    tc_dtype_parse(PQgetvalue(tr, t, 10), &x->dtype);
    x->amp = s_str(pool, s_v(tr, t, 11));
    x->optimizer = s_str(pool, s_v(tr, t, 12));
    if (s_v(tr, t, 13))
        tc_policy_parse(PQgetvalue(tr, t, 13), &x->policy);
    x->threads = (uint32_t)s_ll(tr, t, 14);
    x->warmup = (uint32_t)s_ll(tr, t, 15);
    x->iters = (uint32_t)s_ll(tr, t, 16);
    x->repeats = (uint32_t)s_ll(tr, t, 17);
    x->median_ms = s_d(tr, t, 18);
    x->spread = s_d(tr, t, 19);
    x->peak_memory_bytes = (uint64_t)s_ll(tr, t, 20);
    x->status = (Traincast__V1__TraceStatus)s_enum(s_trace_status_name, PQgetvalue(tr, t, 21));
    x->reason = s_str(pool, s_v(tr, t, 22));
    x->runner = s_str(pool, s_v(tr, t, 23));
    x->started_at_us = s_ll(tr, t, 24);
    x->device = s_device(pool, tr, t, 26);
    x->sm_clock_mhz = (uint32_t)s_ll(tr, t, 26 + TC_SQL_DEVICE_NCOLS);
    x->power_w = s_d(tr, t, 26 + TC_SQL_DEVICE_NCOLS + 1);
    x->energy_j = s_d(tr, t, 26 + TC_SQL_DEVICE_NCOLS + 2);
    x->energy_source = s_str(pool, s_v(tr, t, 26 + TC_SQL_DEVICE_NCOLS + 3));
    x->energy_absent = s_str(pool, s_v(tr, t, 26 + TC_SQL_DEVICE_NCOLS + 4));
    x->load = s_load(pool, tr, t, 26 + TC_SQL_DEVICE_NCOLS + 5);
}

/* `n` initialised messages of `desc` in a NULL-terminated array, all from
 * the pool; NULL (and the pool failed) when out of memory. */
static void **s_messages(s_pool_t *pool, const ProtobufCMessageDescriptor *desc, size_t n)
{
    void **v = s_alloc(pool, (n + 1) * sizeof *v);
    for (size_t i = 0; v && i < n; i++) {
        if (!(v[i] = s_alloc(pool, desc->sizeof_message)))
            return NULL;
        protobuf_c_message_init(desc, v[i]);
    }
    return v;
}

/* A trace's settings, iterations and op-class times from their reads. */
static void s_trace_settings(s_pool_t *pool, PGresult *sets, Traincast__V1__TrainTrace *x)
{
    x->n_settings = (size_t)PQntuples(sets);
    x->settings = (Traincast__V1__Setting **)s_messages(
        pool, &traincast__v1__setting__descriptor, x->n_settings);
    for (size_t i = 0; x->settings && i < x->n_settings; i++) {
        x->settings[i]->name = s_str(pool, s_v(sets, (int)i, 0));
        x->settings[i]->value = s_str(pool, s_v(sets, (int)i, 1));
    }
}

static void s_trace_iterations(s_pool_t *pool, PGresult *its, Traincast__V1__TrainTrace *x)
{
    x->n_iterations = (size_t)PQntuples(its);
    x->iterations = (Traincast__V1__Iteration **)s_messages(
        pool, &traincast__v1__iteration__descriptor, x->n_iterations);
    for (size_t i = 0; x->iterations && i < x->n_iterations; i++) {
        Traincast__V1__Iteration *it = x->iterations[i];
        int r = (int)i;
        it->repeat = (uint32_t)s_ll(its, r, 0);
        it->index = (uint32_t)s_ll(its, r, 1);
        it->ms = s_d(its, r, 2);
        it->at_us = s_ll(its, r, 3);
        it->warmup = PQgetvalue(its, r, 4)[0] == 't';
    }
}

static void s_trace_op_times(s_pool_t *pool, PGresult *ops, Traincast__V1__TrainTrace *x)
{
    x->n_op_times = (size_t)PQntuples(ops);
    x->op_times = (Traincast__V1__OpClassTime **)s_messages(
        pool, &traincast__v1__op_class_time__descriptor, x->n_op_times);
    for (size_t i = 0; x->op_times && i < x->n_op_times; i++) {
        x->op_times[i]->op_class = s_str(pool, s_v(ops, (int)i, 0));
        x->op_times[i]->ms = s_d(ops, (int)i, 1);
    }
}

static int s_export_trace(tc_store_t *s, PGresult *tr, int t, tc_store_envelope_fn fn, void *arg)
{
    s_pool_t pool = {0};
    const char *idp[] = {PQgetvalue(tr, t, 0)};
    PGresult *its = NULL, *ops = NULL, *sets = NULL;
    int rc = tc_store_query(s, &its, "reading a trace's iterations",
                            "SELECT repeat, idx, ms, " TC_SQL_US("at") ", warmup FROM "
                            "trace_iterations WHERE trace_id = $1 ORDER BY repeat, idx",
                            1, idp);
    if (rc == 0)
        rc = tc_store_query(s, &ops, "reading a trace's op times",
                            "SELECT op_class, ms FROM trace_op_times WHERE trace_id = $1 ORDER "
                            "BY op_class",
                            1, idp);
    /* Settings in the order the runner sent them: sorted by name. */
    if (rc == 0)
        rc = tc_store_query(s, &sets, "reading a trace's settings",
                            "SELECT key, value FROM traces, jsonb_each_text(settings) WHERE "
                            "trace_id = $1 ORDER BY key COLLATE \"C\"",
                            1, idp);
    tc_envelope_t *env = s_alloc(&pool, sizeof *env);
    Traincast__V1__TrainTrace *x = s_alloc(&pool, sizeof *x);
    if (rc == 0 && env && x) {
        traincast__v1__envelope__init(env);
        traincast__v1__train_trace__init(x);
        /* Columns: trace_id, message_id, agent_id, sent_at_us, then the
         * trace's own from 4, the device's from 26. */
        s_trace_fields(&pool, tr, t, x);
        s_trace_settings(&pool, sets, x);
        s_trace_iterations(&pool, its, x);
        s_trace_op_times(&pool, ops, x);
        env->message_id = s_str(&pool, PQgetvalue(tr, t, 1));
        env->agent_id = s_str(&pool, PQgetvalue(tr, t, 2));
        env->sent_at_us = s_ll(tr, t, 3);
        env->body_case = TRAINCAST__V1__ENVELOPE__BODY_TRAIN_TRACE;
        env->train_trace = x;
        rc = s_emit(&pool, env, fn, arg);
    } else if (rc == 0) {
        rc = tc_fail(TC_ENOMEM, "out of memory");
    }
    PQclear(its);
    PQclear(ops);
    PQclear(sets);
    s_pool_free(&pool);
    return rc;
}

int tc_store_export_begin(tc_store_t *s)
{
    return tc_store_query(s, NULL, "starting the export",
                          "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", 0, NULL);
}

void tc_store_export_end(tc_store_t *s)
{
    tc_store_rollback(s);
}

int tc_store_export_summary(tc_store_t *s, char *const *names, size_t n, char **devices_json,
                            char **models_json, long long *messages)
{
    *devices_json = *models_json = NULL;
    *messages = 0;
    tc_buf_t arr = {0}, dj = {0}, mj = {0};
    tc_store_text_array(&arr, (const char *const *)names, n);
    const char *params[] = {tc_buf_str(&arr)};
    PGresult *res = NULL;
    int rc = tc_store_query(
        s, &res, "listing the set's devices",
        "SELECT d.name, d.uuid, d.kind,"
        " (SELECT count(*) FROM conv_results r WHERE r.device_id = d.device_id),"
        " (SELECT count(*) FROM traces t WHERE t.device_id = d.device_id),"
        " to_char(d.last_seen AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"'),"
        " (SELECT count(*) FROM matmul_results r WHERE r.device_id = d.device_id)"
        " FROM devices d WHERE d.name = ANY ($1::text[]) ORDER BY d.name, d.uuid",
        1, params);
    tc_buf_putc(&dj, '[');
    for (int r = 0; rc == 0 && r < PQntuples(res); r++) {
        tc_buf_puts(&dj, r ? ",\n  {\"name\": " : "\n  {\"name\": ");
        tc_buf_json_str(&dj, PQgetvalue(res, r, 0));
        tc_buf_puts(&dj, ", \"uuid\": ");
        tc_buf_json_str(&dj, PQgetvalue(res, r, 1));
        tc_buf_puts(&dj, ", \"kind\": ");
        tc_buf_json_str(&dj, PQgetvalue(res, r, 2));
        tc_buf_printf(&dj,
                      ", \"conv_results\": %lld, \"matmul_results\": %lld, \"traces\": %lld, "
                      "\"last_seen\": ",
                      s_ll(res, r, 3), s_ll(res, r, 6), s_ll(res, r, 4));
        tc_buf_json_str(&dj, PQgetvalue(res, r, 5));
        tc_buf_putc(&dj, '}');
    }
    tc_buf_putc(&dj, ']');
    PQclear(res);
    res = NULL;
    if (rc == 0)
        rc = tc_store_query(s, &res, "listing the set's models",
                            "SELECT m.model_id FROM models m WHERE m.model_id IN (SELECT "
                            "t.model_id FROM traces t WHERE t.device_id IN " TC_SQL_SET_DEVICES ") "
                            "ORDER BY m.model_id",
                            1, params);
    tc_buf_putc(&mj, '[');
    for (int r = 0; rc == 0 && r < PQntuples(res); r++) {
        if (r)
            tc_buf_puts(&mj, ", ");
        tc_buf_json_str(&mj, PQgetvalue(res, r, 0));
    }
    tc_buf_putc(&mj, ']');
    long long models = rc == 0 ? PQntuples(res) : 0;
    PQclear(res);
    res = NULL;
    if (rc == 0)
        rc = tc_store_query(s, &res, "counting the set's messages",
                            "SELECT (SELECT count(DISTINCT message_id) FROM (SELECT message_id "
                            "FROM conv_results WHERE device_id IN " TC_SQL_SET_DEVICES " UNION "
                            "ALL SELECT message_id FROM matmul_results WHERE device_id IN "
                            TC_SQL_SET_DEVICES ") u), (SELECT count(*) FROM traces WHERE "
                            "device_id IN " TC_SQL_SET_DEVICES ")",
                            1, params);
    if (rc == 0) {
        *messages = models + s_ll(res, 0, 0) + s_ll(res, 0, 1);
        PQclear(res);
    }
    if (rc == 0 && (dj.failed || mj.failed || arr.failed))
        rc = tc_fail(TC_ENOMEM, "out of memory");
    if (rc == 0 && (!(*devices_json = strdup(tc_buf_str(&dj))) ||
                    !(*models_json = strdup(tc_buf_str(&mj))))) {
        free(*devices_json);
        *devices_json = NULL;
        rc = tc_fail(TC_ENOMEM, "out of memory");
    }
    tc_buf_free(&arr);
    tc_buf_free(&dj);
    tc_buf_free(&mj);
    return rc;
}

int tc_store_export_messages(tc_store_t *s, char *const *names, size_t n,
                             tc_store_envelope_fn fn, void *arg)
{
    tc_buf_t arr = {0};
    tc_store_text_array(&arr, (const char *const *)names, n);
    if (arr.failed)
        return tc_fail(TC_ENOMEM, "out of memory");
    const char *params[] = {tc_buf_str(&arr)};
    int rc = s_export_models(s, params, fn, arg);
    PGresult *res = NULL;
    /* One message per stored message id, with its convs and its matmuls:
     * those with convs in the order they were stored, then those of matmuls
     * alone in theirs; the agent and send time from received_messages. */
    if (rc == 0)
        rc = tc_store_query(
            s, &res, "listing the set's conv result messages",
            "SELECT x.message_id, coalesce(m.agent_id, d.agent_id, 'traincast-export'), "
            "coalesce(" TC_SQL_US("m.sent_at") ", 0), x.backend, " TC_SQL_DEVICE_COLS ", "
            "x.convs, x.matmuls FROM (SELECT u.message_id, min(u.device_id) AS device_id, "
            "min(u.backend) AS backend, min(u.conv) AS conv_first, min(u.mm) AS mm_first, "
            "count(u.conv) AS convs, count(u.mm) AS matmuls FROM ("
            "SELECT r.message_id, r.device_id, r.backend, r.result_id AS conv, NULL::bigint AS "
            "mm FROM conv_results r WHERE r.device_id IN " TC_SQL_SET_DEVICES " UNION ALL "
            "SELECT r.message_id, r.device_id, r.backend, NULL, r.result_id FROM matmul_results "
            "r WHERE r.device_id IN " TC_SQL_SET_DEVICES ") u GROUP BY u.message_id) x "
            "JOIN devices d USING (device_id) LEFT JOIN received_messages m USING (message_id) "
            "ORDER BY x.conv_first NULLS LAST, x.mm_first",
            1, params);
    for (int m = 0; rc == 0 && m < PQntuples(res); m++)
        rc = s_export_conv_message(s, res, m, fn, arg);
    PQclear(res);
    res = NULL;
    if (rc == 0)
        rc = tc_store_query(
            s, &res, "listing the set's traces",
            "SELECT t.trace_id, t.message_id, coalesce(m.agent_id, d.agent_id, "
            "'traincast-export'), coalesce(" TC_SQL_US("m.sent_at") ", 0), t.framework, "
            "t.framework_version, t.library_version, t.model_id, t.batch, t.input_size, t.dtype, "
            "t.amp, t.optimizer, t.policy, t.threads, t.warmup, t.iters, t.repeats, t.median_ms, "
            "t.spread, t.peak_memory_bytes, t.status, t.reason, t.runner, "
            "coalesce(" TC_SQL_US("t.started_at") ", 0), t.device_id, " TC_SQL_DEVICE_COLS ", "
            "t.sm_clock_mhz, t.power_w, t.energy_j, t.energy_source, t.energy_absent, "
            "t.load_others_pct, t.load_steal_pct, t.gpu_other_processes, t.load_threshold_pct, "
            "t.remeasured, t.disturbed FROM traces t "
            "JOIN devices d USING (device_id) LEFT JOIN received_messages m USING (message_id) "
            "WHERE t.device_id IN " TC_SQL_SET_DEVICES " ORDER BY t.trace_id",
            1, params);
    for (int t = 0; rc == 0 && t < PQntuples(res); t++)
        rc = s_export_trace(s, res, t, fn, arg);
    PQclear(res);
    tc_buf_free(&arr);
    return rc;
}
