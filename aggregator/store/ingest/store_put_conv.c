/* Storing a ConvResults message: its matmul results first
 * (store_put_matmul.c), then its conv rows straight into conv_results and
 * conv_algo_timings by COPY, with their ids resolved first (one statement
 * for the configs, one for the result ids), so that each row is written
 * once. */
#include "store_internal.h"

#include "tc_conv.h"
#include "tc_error.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CFG_COLS TC_SQL_CONV_KEY_COLS("")

/* The ids of the distinct configs of a message: json_populate_recordset
 * reads them as rows of conv_configs, whose config_id carries the config's
 * position in the list (so that the answer can be matched up); the ones
 * new here are inserted, and every one is answered with its config_id. */
static const char s_configs_sql[] =
    "WITH v AS (SELECT * FROM json_populate_recordset(NULL::conv_configs, $1)), "
    "ins AS (INSERT INTO conv_configs (" CFG_COLS ") SELECT " CFG_COLS " FROM v "
    "ON CONFLICT DO NOTHING RETURNING config_id, " CFG_COLS ") "
    "SELECT v.config_id, coalesce(ins.config_id, cc.config_id) FROM v "
    "LEFT JOIN ins ON " TC_SQL_CONV_KEY_EQ("ins", "v") " "
    "LEFT JOIN conv_configs cc ON " TC_SQL_CONV_KEY_EQ("cc", "v");

/* The distinct configs of a message and, per result, which one it has. */
typedef struct {
    const Traincast__V1__ConvConfig **cfg; /* first result with each config */
    tc_conv_config_t *key;                 /* its key (batch 0) */
    size_t n;
    size_t *of;                            /* per result: index into cfg */
    long long *config_id;                  /* per distinct config */
} s_configs_t;

static void s_configs_free(s_configs_t *c)
{
    free(c->cfg);
    free(c->key);
    free(c->of);
    free(c->config_id);
}

static int s_distinct(const Traincast__V1__ConvResults *cr, s_configs_t *c)
{
    size_t n = cr->n_results ? cr->n_results : 1;
    c->key = calloc(n, sizeof *c->key);
    c->cfg = calloc(n, sizeof *c->cfg);
    c->of = calloc(n, sizeof *c->of);
    c->config_id = calloc(n, sizeof *c->config_id);
    if (!c->key || !c->cfg || !c->of || !c->config_id)
        return tc_fail(TC_ENOMEM, "out of memory");
    for (size_t i = 0; i < cr->n_results; i++) {
        tc_conv_config_t k;
        tc_conv_config_from_proto(cr->results[i]->config, &k);
        k.n = 0; /* the batch is not part of the key */
        size_t j = 0;
        while (j < c->n && tc_conv_config_cmp(&c->key[j], &k) != 0)
            j++;
        if (j == c->n) {
            c->key[c->n] = k;
            c->cfg[c->n++] = cr->results[i]->config;
        }
        c->of[i] = j;
    }
    return 0;
}

/* Fill config_id[] from one answer of s_configs_sql (or of the re-read). */
static void s_take_ids(s_configs_t *c, PGresult *res)
{
    for (int r = 0; r < PQntuples(res); r++) {
        long long pos = atoll(PQgetvalue(res, r, 0));
        if (pos >= 0 && (size_t)pos < c->n && !PQgetisnull(res, r, 1))
            c->config_id[pos] = atoll(PQgetvalue(res, r, 1));
    }
}

/* The configs' ids: those this connection knows, then the others from the
 * database (inserting the new ones). */
static int s_resolve_configs(tc_store_t *s, s_configs_t *c)
{
    tc_buf_t json = {0};
    size_t unknown = 0;
    tc_buf_putc(&json, '[');
    for (size_t i = 0; i < c->n; i++) {
        if ((c->config_id[i] = tc_store_config_id_get(s, &c->key[i])) != 0)
            continue;
        tc_buf_printf(&json, "%s{", unknown++ ? "," : "");
        tc_json_conv_key(&json, c->cfg[i]);
        tc_buf_printf(&json, "\"config_id\":%zu}", i);
    }
    tc_buf_putc(&json, ']');
    if (!unknown) {
        tc_buf_free(&json);
        return 0;
    }
    if (json.failed) {
        tc_buf_free(&json);
        return tc_fail(TC_ENOMEM, "out of memory");
    }
    const char *params[] = {json.data};
    PGresult *res = NULL;
    int rc = tc_store_query_prepared(s, &res, "recording conv configs", s_configs_sql, 1,
                                     params);
    if (rc == 0) {
        s_take_ids(c, res);
        PQclear(res);
    }
    /* A config another connection inserted and committed while this
     * statement ran is neither inserted here nor in its snapshot: a second
     * look, with a fresh snapshot, finds it. */
    bool missing = false;
    for (size_t i = 0; rc == 0 && i < c->n; i++)
        missing |= c->config_id[i] == 0;
    if (rc == 0 && missing) {
        rc = tc_store_query(s, &res, "reading conv configs back",
                            "SELECT v.config_id, cc.config_id FROM json_populate_recordset("
                            "NULL::conv_configs, $1) v JOIN conv_configs cc ON " TC_SQL_CONV_KEY_EQ(
                                "cc", "v"),
                            1, params);
        if (rc == 0) {
            s_take_ids(c, res);
            PQclear(res);
        }
        for (size_t i = 0; rc == 0 && i < c->n; i++)
            if (c->config_id[i] == 0)
                rc = tc_fail(TC_EDB, "database: a conv config could not be read back");
    }
    for (size_t i = 0; rc == 0 && i < c->n; i++)
        tc_store_config_id_put(s, &c->key[i], c->config_id[i]);
    tc_buf_free(&json);
    return rc;
}

/* n new result ids from conv_results' sequence. */
static int s_result_ids(tc_store_t *s, size_t n, long long *ids)
{
    char count[32];
    snprintf(count, sizeof count, "%zu", n);
    const char *params[] = {count};
    PGresult *res = NULL;
    int rc = tc_store_query_prepared(
        s, &res, "numbering conv results",
        "SELECT nextval(pg_get_serial_sequence('conv_results', 'result_id')) "
        "FROM generate_series(1, $1::integer)",
        1, params);
    if (rc < 0)
        return rc;
    if ((size_t)PQntuples(res) != n)
        rc = tc_fail(TC_EDB, "database: %d result ids for %zu results", PQntuples(res), n);
    for (size_t i = 0; rc == 0 && i < n; i++)
        ids[i] = atoll(PQgetvalue(res, (int)i, 0));
    PQclear(res);
    return rc;
}

/* COPY rows of conv results and of their algorithm timings (binary rows,
 * tc_rows_conv_results). */
static int s_copy(tc_store_t *s, const tc_buf_t *rows, const tc_buf_t *cands)
{
    int rc = 0;
    if (rows->len)
        rc = tc_store_copy_binary(s, "recording conv results",
                                  "COPY conv_results (" TC_ROWS_RESULT_COLUMNS
                                  ") FROM STDIN (FORMAT binary)",
                                  rows);
    if (rc == 0 && cands->len)
        rc = tc_store_copy_binary(s, "recording algorithm timings",
                                  "COPY conv_algo_timings (" TC_ROWS_CAND_COLUMNS
                                  ") FROM STDIN (FORMAT binary)",
                                  cands);
    /* A reference check that failed (SQLSTATE 23503, the foreign keys of
     * schema/010_batched_references.sql) points at a config or device row
     * deleted since this connection learned its id (by hand: traincast
     * deletes neither): the ids are forgotten and the message is tried again
     * (an outage's answer), not refused. */
    if (rc < 0 && !strcmp(s->sqlstate, "23503")) {
        tc_store_config_ids_clear(s);
        tc_store_seen_forget(s);
        char why[1024];
        snprintf(why, sizeof why, "%s", tc_errmsg());
        rc = tc_fail(TC_EDB, "%s (a conv config or device known from before is gone: trying "
                             "again)",
                     why);
    }
    return rc;
}

/* The rows a batch holds for its COPY (tc_store_conv_defer), and where the
 * current message's rows begin, so that a message rolled back alone takes
 * its rows with it. */
typedef struct {
    bool defer;
    tc_buf_t rows, cands;
    size_t rows_mark, cands_mark;
} s_batch_t;

static void s_drop(void *state)
{
    s_batch_t *b = state;
    tc_buf_free(&b->rows);
    tc_buf_free(&b->cands);
    b->rows_mark = b->cands_mark = 0;
}

static void s_mark(void *state)
{
    s_batch_t *b = state;
    b->rows_mark = b->rows.len;
    b->cands_mark = b->cands.len;
}

static void s_settle(void *state, bool committed, bool message)
{
    s_batch_t *b = state;
    if (!message) {
        s_drop(b); /* flushed before a commit; forgotten with a rollback */
    } else if (!committed) {
        tc_buf_truncate(&b->rows, b->rows_mark);
        tc_buf_truncate(&b->cands, b->cands_mark);
    }
}

static void s_reset(void *state)
{
    ((s_batch_t *)state)->defer = false;
    s_drop(state);
}

static const tc_store_part_t s_part = {.size = sizeof(s_batch_t),
                                       .mark = s_mark,
                                       .settle = s_settle,
                                       .reset = s_reset,
                                       .release = s_drop};

void tc_store_conv_defer(tc_store_t *s, bool on)
{
    s_batch_t *b = tc_store_part_state(s, &s_part);
    if (b)
        b->defer = on; /* else every message COPYs its own rows */
}

int tc_store_conv_flush(tc_store_t *s)
{
    s_batch_t *b = tc_store_part_state(s, &s_part);
    if (!b)
        return 0;
    int rc = s_copy(s, &b->rows, &b->cands);
    s_drop(b);
    return rc;
}

int tc_store_put_conv_results(tc_store_t *s, const tc_envelope_t *env)
{
    const Traincast__V1__ConvResults *cr = env->conv_results;
    char device_id[32];
    s_configs_t cfg = {0};
    tc_buf_t rows = {0}, cands = {0};
    long long *result_ids = calloc(cr->n_results ? cr->n_results : 1, sizeof *result_ids);
    long long *config_ids = calloc(cr->n_results ? cr->n_results : 1, sizeof *config_ids);
    int rc = result_ids && config_ids ? 0 : tc_fail(TC_ENOMEM, "out of memory");
    s->sqlstate[0] = '\0';
    if (rc == 0)
        rc = tc_store_put_agent(s, env, NULL);
    if (rc == 0)
        rc = tc_store_put_device(s, env->agent_id, cr->device, device_id);
    if (rc == 0)
        rc = tc_store_put_matmul_results(s, env, device_id);
    if (rc == 0)
        rc = s_distinct(cr, &cfg);
    if (rc == 0)
        rc = s_resolve_configs(s, &cfg);
    if (rc == 0)
        rc = s_result_ids(s, cr->n_results, result_ids);
    if (rc == 0) {
        for (size_t i = 0; i < cr->n_results; i++)
            config_ids[i] = cfg.config_id[cfg.of[i]];
        const tc_rows_conv_ids_t ids = {.message_id = env->message_id,
                                        .device_id = device_id,
                                        .result_ids = result_ids,
                                        .config_ids = config_ids};
        s_batch_t *b = tc_store_part_state(s, &s_part);
        if (b && b->defer) {
            /* In a batch: stored with the batch's others when it commits. */
            tc_rows_conv_results(cr, &ids, &b->rows, &b->cands);
            if (b->rows.failed || b->cands.failed)
                rc = tc_fail(TC_ENOMEM, "out of memory building the rows of conv results");
        } else {
            tc_rows_conv_results(cr, &ids, &rows, &cands);
            rc = s_copy(s, &rows, &cands);
        }
    }
    tc_buf_free(&rows);
    tc_buf_free(&cands);
    s_configs_free(&cfg);
    free(result_ids);
    free(config_ids);
    return rc;
}
