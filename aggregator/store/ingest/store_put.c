/* Writing received messages: one transaction each, idempotent on the
 * envelope's message id. */
#include "store_internal.h"

#include "tc_error.h"
#include "tc_validate.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


/* The conv key's columns, their definitions, and two rows with the same key
 * (common/ops/tc_conv_key.h). */
#define CFG_COLS TC_SQL_CONV_KEY_COLS("")
#define CFG_COLS_DEF TC_SQL_CONV_KEY_DEFS
#define CFG_JOIN(a, b) TC_SQL_CONV_KEY_EQ(a, b)

/* The staging table of model convs lives for the connection and is emptied
 * at each commit. It is created outside any transaction (whatever stores
 * messages calls this before it begins one), so that the rollback of a
 * failed message cannot drop it. */
typedef struct {
    bool made;
} s_staging_t;

static void s_staging_reset(void *state)
{
    ((s_staging_t *)state)->made = false;
}

static const tc_store_part_t s_staging_part = {.size = sizeof(s_staging_t),
                                               .reset = s_staging_reset};

int tc_store_staging(tc_store_t *s)
{
    s_staging_t *st = tc_store_part_state(s, &s_staging_part);
    if (!st)
        return tc_fail(TC_ENOMEM, "out of memory");
    if (st->made)
        return 0;
    if (PQtransactionStatus(s->conn) != PQTRANS_IDLE)
        return tc_fail(TC_EDB, "database: the staging tables must be made outside a "
                               "transaction (a bug: store through tc_store_put)");
    int rc = tc_store_exec(
        s,
        "CREATE TEMP TABLE IF NOT EXISTS tc_stage_convs (" CFG_COLS_DEF
        ", first_layer boolean, multiplicity integer) ON COMMIT DELETE ROWS",
        NULL, 0);
    if (rc == 0)
        st->made = true;
    return rc;
}

static int s_put_hello(tc_store_t *s, const tc_envelope_t *env)
{
    const Traincast__V1__Hello *h = env->hello;
    int rc = tc_store_put_agent(s, env, h);
    for (size_t i = 0; rc == 0 && i < h->n_devices; i++) {
        char id[32];
        rc = tc_store_put_device(s, env->agent_id, h->devices[i], id);
    }
    return rc;
}

static int s_put_model_graph(tc_store_t *s, const Traincast__V1__ModelGraph *g)
{
    char ic[16], ih[16], iw[16], params_s[32], flops[64];
    snprintf(ic, sizeof ic, "%u", g->input_c);
    snprintf(ih, sizeof ih, "%u", g->input_h);
    snprintf(iw, sizeof iw, "%u", g->input_w);
    snprintf(params_s, sizeof params_s, "%" PRIu64, g->params);
    snprintf(flops, sizeof flops, "%.17g", g->flops);
    /* An imported graph never replaces one stored here (they may differ
     * only in the bytes of their export). */
    const char *params[] = {g->model_id, g->name, ic, ih, iw, params_s, flops,
                            g->source_sha256 && *g->source_sha256 ? g->source_sha256 : NULL,
                            s->import_id ? "true" : "false"};
    PGresult *res = NULL;
    /* A graph with the same source hash is already stored: nothing to do. A
     * changed one replaces the old layers and conv usage. */
    int rc = tc_store_query(
        s, &res, "recording the model",
        "INSERT INTO models (model_id, name, input_c, input_h, input_w, params, flops, "
        "source_sha256) VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT (model_id) DO "
        "UPDATE SET name = EXCLUDED.name, input_c = EXCLUDED.input_c, input_h = "
        "EXCLUDED.input_h, input_w = EXCLUDED.input_w, params = EXCLUDED.params, flops = "
        "EXCLUDED.flops, source_sha256 = EXCLUDED.source_sha256, stored_at = now() "
        "WHERE models.source_sha256 IS DISTINCT FROM EXCLUDED.source_sha256 "
        "AND NOT $9::boolean RETURNING 1",
        9, params);
    if (rc < 0)
        return rc;
    int changed = PQntuples(res) > 0;
    PQclear(res);
    if (!changed)
        return tc_store_put_model_matmuls(s, g);
    const char *idp[] = {g->model_id};
    rc = tc_store_query(s, NULL, "replacing model layers",
                        "DELETE FROM model_layers WHERE model_id = $1", 1, idp);
    if (rc == 0)
        rc = tc_store_query(s, NULL, "replacing model convs",
                            "DELETE FROM model_convs WHERE model_id = $1", 1, idp);
    if (rc == 0)
        rc = tc_store_query(s, NULL, "replacing model matmuls",
                            "DELETE FROM model_matmuls WHERE model_id = $1", 1, idp);
    if (rc == 0)
        rc = tc_store_query(s, NULL, "replacing model matmuls",
                            "UPDATE models SET matmuls_listed = false WHERE model_id = $1", 1,
                            idp);
    if (rc == 0)
        rc = tc_store_staging(s);
    if (rc < 0)
        return rc;

    tc_buf_t layers = {0}, convs = {0};
    tc_rows_model_graph(g, &layers, &convs);
    if (layers.len)
        rc = tc_store_copy(s, "recording model layers",
                           "COPY model_layers (model_id, idx, name, op, op_class, params, flops, "
                           "elems_in, elems_out, out_shape) FROM STDIN",
                           &layers);
    if (rc == 0 && convs.len) {
        rc = tc_store_copy(s, "staging model convs", "COPY tc_stage_convs FROM STDIN", &convs);
        if (rc == 0)
            rc = tc_store_query(s, NULL, "recording conv configs",
                                "INSERT INTO conv_configs (" CFG_COLS ") SELECT DISTINCT " CFG_COLS
                                " FROM tc_stage_convs ON CONFLICT DO NOTHING",
                                0, NULL);
        if (rc == 0)
            rc = tc_store_query(
                s, NULL, "recording model convs",
                "INSERT INTO model_convs (model_id, config_id, first_layer, multiplicity) "
                "SELECT $1, cc.config_id, st.first_layer, sum(st.multiplicity) FROM "
                "tc_stage_convs st JOIN conv_configs cc ON " CFG_JOIN(
                    "cc", "st") " GROUP BY cc.config_id, st.first_layer",
                1, idp);
        if (rc == 0)
            rc = tc_store_query(s, NULL, "clearing staged convs", "TRUNCATE tc_stage_convs", 0,
                                NULL);
    }
    tc_buf_free(&layers);
    tc_buf_free(&convs);
    if (rc == 0)
        rc = tc_store_put_model_matmuls(s, g);
    return rc;
}

/* The trace's agent, its device (whose id goes into device_id) and its
 * model graph. */
static int s_put_trace_refs(tc_store_t *s, const tc_envelope_t *env, char device_id[32])
{
    const Traincast__V1__TrainTrace *t = env->train_trace;
    int rc = tc_store_put_agent(s, env, NULL);
    if (rc == 0)
        rc = tc_store_put_device(s, env->agent_id, t->device, device_id);
    if (rc == 0 && t->graph)
        rc = s_put_model_graph(s, t->graph);
    return rc;
}

/* A trace's numbers as the text of query parameters. */
typedef struct {
    char batch[16], input[16], threads[16], warmup[16], iters[16], repeats[16], median[64],
        spread[64], peak[32], started[64], clock[16], power[64], energy[64], others[64],
        steal[64], gpu_others[16], threshold[64], remeasured[16];
} s_trace_text_t;

/* Write the trace's numbers as text. */
static void s_trace_text(const Traincast__V1__TrainTrace *t, s_trace_text_t *x)
{
    snprintf(x->clock, sizeof x->clock, "%u", t->sm_clock_mhz);
    if (t->load) {
        snprintf(x->others, sizeof x->others, "%.17g", t->load->others_pct);
        snprintf(x->steal, sizeof x->steal, "%.17g", t->load->steal_pct);
        snprintf(x->gpu_others, sizeof x->gpu_others, "%u", t->load->gpu_other_processes);
        snprintf(x->threshold, sizeof x->threshold, "%.17g", t->load->threshold_pct);
        snprintf(x->remeasured, sizeof x->remeasured, "%u", t->load->remeasured);
    }
    snprintf(x->energy, sizeof x->energy, "%.17g", t->energy_j);
    snprintf(x->power, sizeof x->power, "%.17g", t->power_w);
    snprintf(x->batch, sizeof x->batch, "%u", t->batch);
    snprintf(x->input, sizeof x->input, "%u", t->input_size);
    snprintf(x->threads, sizeof x->threads, "%u", t->threads);
    snprintf(x->warmup, sizeof x->warmup, "%u", t->warmup);
    snprintf(x->iters, sizeof x->iters, "%u", t->iters);
    snprintf(x->repeats, sizeof x->repeats, "%u", t->repeats);
    snprintf(x->median, sizeof x->median, "%.17g", t->median_ms);
    snprintf(x->spread, sizeof x->spread, "%.17g", t->spread);
    snprintf(x->peak, sizeof x->peak, "%" PRIu64, t->peak_memory_bytes);
    tc_store_time_param(t->started_at_us, x->started, sizeof x->started);
}

/* Insert the trace's row, its settings as JSON and as a key; *trace_id gets
 * the row's id. */
static int s_insert_trace(tc_store_t *s, const tc_envelope_t *env, const char *device_id,
                          long long *trace_id)
{
    const Traincast__V1__TrainTrace *t = env->train_trace;
    s_trace_text_t x;
    s_trace_text(t, &x);
    bool has_energy = t->energy_source && *t->energy_source;
    tc_buf_t settings = {0}, settings_key = {0};
    tc_rows_settings(t, &settings, &settings_key);
    if (settings.failed || settings_key.failed) {
        tc_buf_free(&settings);
        tc_buf_free(&settings_key);
        return tc_fail(TC_ENOMEM, "out of memory recording the trace's settings");
    }
    int ok = t->status == TRAINCAST__V1__TRACE_STATUS__TRACE_STATUS_OK;
    const char *policy = t->policy ? tc_policy_name(t->policy) : NULL;
    const char *params[] = {env->message_id,
                            device_id,
                            t->model_id,
                            t->framework,
                            t->framework_version,
                            t->library_version,
                            x.batch,
                            x.input,
                            tc_dtype_name(t->dtype),
                            t->amp,
                            t->optimizer,
                            policy,
                            x.threads,
                            x.warmup,
                            x.iters,
                            x.repeats,
                            ok ? x.median : NULL,
                            ok ? x.spread : NULL,
                            t->peak_memory_bytes ? x.peak : NULL,
                            tc_trace_status_name(t->status),
                            t->reason && *t->reason ? t->reason : NULL,
                            t->runner && *t->runner ? t->runner : NULL,
                            t->started_at_us > 0 ? x.started : NULL,
                            tc_buf_str(&settings),
                            tc_buf_str(&settings_key),
                            t->sm_clock_mhz ? x.clock : NULL,
                            t->power_w > 0 ? x.power : NULL,
                            has_energy ? x.energy : NULL,
                            has_energy ? t->energy_source : NULL,
                            t->energy_absent && *t->energy_absent ? t->energy_absent : NULL,
                            t->load ? x.others : NULL,
                            t->load ? x.steal : NULL,
                            t->load ? x.gpu_others : NULL,
                            t->load ? x.threshold : NULL,
                            t->load ? x.remeasured : NULL,
                            t->load && t->load->disturbed ? "true" : "false"};
    PGresult *res = NULL;
    int rc;
    rc = tc_store_query(s, &res, "recording the trace",
                        "INSERT INTO traces (message_id, device_id, model_id, framework, "
                        "framework_version, library_version, batch, input_size, dtype, amp, "
                        "optimizer, policy, threads, warmup, iters, repeats, median_ms, spread, "
                        "peak_memory_bytes, status, reason, runner, started_at, settings, "
                        "settings_key, sm_clock_mhz, power_w, energy_j, energy_source, "
                        "energy_absent, load_others_pct, load_steal_pct, gpu_other_processes, "
                        "load_threshold_pct, remeasured, disturbed) VALUES ($1, $2, $3, $4, $5, "
                        "$6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, "
                        "$21, $22, $23, $24::jsonb, $25, $26, $27, $28, $29, $30, $31, $32, $33, "
                        "$34, $35, $36) RETURNING trace_id",
                        36, params);
    tc_buf_free(&settings);
    tc_buf_free(&settings_key);
    if (rc < 0)
        return rc;
    *trace_id = strtoll(PQgetvalue(res, 0, 0), NULL, 10);
    PQclear(res);
    return rc;
}

/* Copy the trace's iterations and its op class times into their tables. */
static int s_put_trace_rows(tc_store_t *s, long long trace_id, const Traincast__V1__TrainTrace *t)
{
    int rc = 0;
    tc_buf_t iters_rows = {0}, ops = {0};
    tc_rows_trace(trace_id, t, &iters_rows, &ops);
    if (iters_rows.len)
        rc = tc_store_copy(s, "recording trace iterations",
                           "COPY trace_iterations (trace_id, repeat, idx, ms, at, warmup) FROM STDIN",
                           &iters_rows);
    if (rc == 0 && ops.len)
        rc = tc_store_copy(s, "recording op class times",
                           "COPY trace_op_times (trace_id, op_class, ms) FROM STDIN", &ops);
    tc_buf_free(&iters_rows);
    tc_buf_free(&ops);
    return rc;
}

/* A training trace: what it refers to, its row, then its per-iteration and
 * per-op-class rows. */
static int s_put_trace(tc_store_t *s, const tc_envelope_t *env)
{
    char device_id[32];
    long long trace_id = 0;
    int rc = s_put_trace_refs(s, env, device_id);
    if (rc < 0)
        return rc;
    rc = s_insert_trace(s, env, device_id, &trace_id);
    if (rc < 0)
        return rc;
    return s_put_trace_rows(s, trace_id, env->train_trace);
}

static int s_put_heartbeat(tc_store_t *s, const tc_envelope_t *env)
{
    char backlog[16];
    snprintf(backlog, sizeof backlog, "%u", env->heartbeat->spool_backlog);
    const char *params[] = {env->agent_id, backlog};
    return tc_store_query(s, NULL, "recording the heartbeat",
                          "INSERT INTO agents (agent_id, spool_backlog) VALUES ($1, $2) "
                          "ON CONFLICT (agent_id) DO UPDATE SET last_seen = now(), "
                          "spool_backlog = EXCLUDED.spool_backlog",
                          2, params);
}

int tc_store_put(tc_store_t *self, const tc_envelope_t *env, tc_store_outcome_t *outcome)
{
    return tc_store_put_from(self, env, NULL, outcome);
}

int tc_store_put_from(tc_store_t *self, const tc_envelope_t *env, const char *key,
                      tc_store_outcome_t *outcome)
{
    *outcome = TC_STORE_STORED;
    int rc = tc_validate_envelope(env);
    if (rc < 0)
        return rc;
    if (env->body_case == TRAINCAST__V1__ENVELOPE__BODY_HEARTBEAT) {
        rc = tc_store_bind_key(self, env->agent_id, key);
        return rc < 0 ? rc : s_put_heartbeat(self, env);
    }
    if (env->body_case != TRAINCAST__V1__ENVELOPE__BODY_HELLO &&
        env->body_case != TRAINCAST__V1__ENVELOPE__BODY_CONV_RESULTS &&
        env->body_case != TRAINCAST__V1__ENVELOPE__BODY_MODEL_GRAPH &&
        env->body_case != TRAINCAST__V1__ENVELOPE__BODY_TRAIN_TRACE)
        return tc_fail(TC_EINVAL, "body: a %s message is not stored", tc_body_name(env));

    int nested = 0;
    rc = tc_store_staging(self); /* made before a batch opens, else here */
    if (rc == 0)
        rc = tc_store_msg_begin(self, &nested);
    if (rc < 0)
        return rc;
    /* The agent's row before its key's: every transaction that takes both
     * takes them in this order (a batch takes its agents' rows first). */
    if (env->body_case != TRAINCAST__V1__ENVELOPE__BODY_HELLO)
        rc = tc_store_put_agent(self, env, NULL);
    if (rc == 0)
        rc = tc_store_bind_key(self, env->agent_id, key);
    char sent[64];
    tc_store_time_param(env->sent_at_us, sent, sizeof sent);
    const char *params[] = {env->message_id, env->agent_id, tc_body_name(env),
                            env->sent_at_us > 0 ? sent : NULL};
    PGresult *res = NULL;
    if (rc == 0)
        rc = tc_store_query_prepared(
            self, &res, "recording the message id",
            "INSERT INTO received_messages (message_id, agent_id, kind, sent_at) "
            "VALUES ($1, $2, $3, $4) ON CONFLICT (message_id) DO NOTHING RETURNING 1",
            4, params);
    if (rc == 0 && PQntuples(res) == 0) {
        PQclear(res);
        tc_store_msg_rollback(self, nested);
        *outcome = TC_STORE_DUPLICATE;
        return 0;
    }
    PQclear(res);
    if (rc == 0) {
        switch (env->body_case) {
        case TRAINCAST__V1__ENVELOPE__BODY_HELLO:
            rc = s_put_hello(self, env);
            break;
        case TRAINCAST__V1__ENVELOPE__BODY_CONV_RESULTS:
            rc = tc_store_put_conv_results(self, env);
            break;
        case TRAINCAST__V1__ENVELOPE__BODY_MODEL_GRAPH:
            rc = tc_store_put_agent(self, env, NULL);
            if (rc == 0)
                rc = s_put_model_graph(self, env->model_graph);
            break;
        default:
            rc = s_put_trace(self, env);
            break;
        }
    }
    if (rc == 0)
        rc = tc_store_msg_commit(self, nested);
    if (rc < 0)
        tc_store_msg_rollback(self, nested);
    return rc;
}
