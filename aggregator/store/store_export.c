/* Exporting benchmark sets (store_set.h): the export's read-only
 * transaction, the set's summary, and its stored results listed as the
 * messages that brought them, in the order they were stored. Each message
 * is rebuilt by store_export_msg.c. */
#include "store_set.h"

#include "store_export_internal.h"
#include "store_internal.h"

#include "tc_buf.h"
#include "tc_error.h"

#include <stdlib.h>
#include <string.h>

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
        " (SELECT count(*) FROM traces t WHERE t.device_id = d.device_id)"
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
        tc_buf_printf(&dj, ", \"conv_results\": %lld, \"traces\": %lld}", tc_store_ll(res, r, 3),
                      tc_store_ll(res, r, 4));
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
                            "SELECT (SELECT count(DISTINCT message_id) FROM conv_results WHERE "
                            "device_id IN " TC_SQL_SET_DEVICES "), (SELECT count(*) FROM traces "
                            "WHERE device_id IN " TC_SQL_SET_DEVICES ")",
                            1, params);
    if (rc == 0) {
        *messages = models + tc_store_ll(res, 0, 0) + tc_store_ll(res, 0, 1);
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
    int rc = tc_store_export_models(s, params, fn, arg);
    PGresult *res = NULL;
    /* One message per stored message id, in the order they were stored; the
     * agent and send time from received_messages. */
    if (rc == 0)
        rc = tc_store_query(
            s, &res, "listing the set's conv result messages",
            "SELECT x.message_id, coalesce(m.agent_id, d.agent_id, 'traincast-export'), "
            "coalesce(" TC_SQL_US("m.sent_at") ", 0), x.backend, " TC_SQL_DEVICE_COLS " FROM "
            "(SELECT r.message_id, min(r.device_id) AS device_id, min(r.backend) AS backend, "
            "min(r.result_id) AS first FROM conv_results r WHERE r.device_id IN "
            TC_SQL_SET_DEVICES " GROUP BY r.message_id) x JOIN devices d USING (device_id) "
            "LEFT JOIN received_messages m USING (message_id) ORDER BY x.first",
            1, params);
    for (int m = 0; rc == 0 && m < PQntuples(res); m++)
        rc = tc_store_export_conv_message(s, res, m, fn, arg);
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
        rc = tc_store_export_trace(s, res, t, fn, arg);
    PQclear(res);
    tc_buf_free(&arr);
    return rc;
}
