/* The jobs queue, notifications and row queries. */
#include "store_internal.h"
#include "store_server.h"

#include "tc_error.h"

#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static void s_hex_encode(tc_buf_t *b, const uint8_t *data, size_t len)
{
    static const char hex[] = "0123456789abcdef";
    tc_buf_puts(b, "\\x");
    for (size_t i = 0; i < len; i++) {
        tc_buf_putc(b, hex[data[i] >> 4]);
        tc_buf_putc(b, hex[data[i] & 15]);
    }
}

static int s_hex_value(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

static int s_hex_decode(const char *text, uint8_t **out, size_t *len)
{
    size_t n = strlen(text);
    if (n % 2)
        return tc_fail(TC_EDB, "database: a job request is not hex text");
    uint8_t *b = malloc(n / 2 ? n / 2 : 1);
    if (!b)
        return tc_fail(TC_ENOMEM, "out of memory");
    for (size_t i = 0; i < n / 2; i++) {
        int hi = s_hex_value(text[2 * i]), lo = s_hex_value(text[2 * i + 1]);
        if (hi < 0 || lo < 0) {
            free(b);
            return tc_fail(TC_EDB, "database: a job request is not hex text");
        }
        b[i] = (uint8_t)(hi << 4 | lo);
    }
    *out = b;
    *len = n / 2;
    return 0;
}

int tc_store_job_enqueue(tc_store_t *self, const char *kind, const char *device_name,
                         const char *device_uuid, const uint8_t *request, size_t request_len,
                         const char *summary, char job_id[TC_MSGID_LEN + 1])
{
    if (!kind || (strcmp(kind, "bench") != 0 && strcmp(kind, "trace") != 0))
        return tc_fail(TC_EINVAL, "job kind must be bench or trace (got '%s')", kind ? kind : "");
    if ((!device_name || !*device_name) && (!device_uuid || !*device_uuid))
        return tc_fail(TC_EINVAL, "a job needs a device name or a device uuid");
    tc_buf_t hex = {0};
    s_hex_encode(&hex, request, request_len);
    if (hex.failed) {
        tc_buf_free(&hex);
        return tc_fail(TC_ENOMEM, "out of memory");
    }
    tc_msgid_new(job_id);
    const char *params[] = {job_id,
                            kind,
                            device_name && *device_name ? device_name : NULL,
                            device_uuid && *device_uuid ? device_uuid : NULL,
                            tc_buf_str(&hex),
                            summary};
    int rc = tc_store_query(self, NULL, "queueing a job",
                            "INSERT INTO jobs (job_id, kind, device_name, device_uuid, request, "
                            "summary) VALUES ($1, $2, $3, $4, $5::bytea, $6)",
                            6, params);
    tc_buf_free(&hex);
    return rc;
}

int tc_store_job_claim(tc_store_t *self, const char *agent_id, const char *const *uuids,
                       const char *const *names, size_t n, tc_store_job_t *out, bool *found)
{
    memset(out, 0, sizeof *out);
    *found = false;
    if (n == 0)
        return 0;
    tc_buf_t u = {0}, nm = {0};
    tc_store_text_array(&u, uuids, n);
    tc_store_text_array(&nm, names, n);
    if (u.failed || nm.failed) {
        tc_buf_free(&u);
        tc_buf_free(&nm);
        return tc_fail(TC_ENOMEM, "out of memory");
    }
    const char *params[] = {agent_id, tc_buf_str(&u), tc_buf_str(&nm)};
    PGresult *res = NULL;
    int rc = tc_store_query(
        self, &res, "claiming a job",
        "WITH cand AS ("
        " SELECT j.job_id, coalesce(j.device_uuid, d.uuid) AS uuid"
        " FROM jobs j JOIN unnest($2::text[], $3::text[]) AS d(uuid, name)"
        "   ON j.device_uuid = d.uuid OR (j.device_uuid IS NULL AND j.device_name = d.name)"
        " WHERE j.state = 'queued'"
        " ORDER BY j.created_at, j.job_id LIMIT 1"
        " FOR UPDATE OF j SKIP LOCKED)"
        " UPDATE jobs SET state = 'dispatched', agent_id = $1, assigned_uuid = cand.uuid,"
        "  attempts = jobs.attempts + 1, dispatched_at = now(), updated_at = now(),"
        "  done = 0, total = 0"
        " FROM cand WHERE jobs.job_id = cand.job_id"
        " RETURNING jobs.job_id, jobs.kind, jobs.assigned_uuid, encode(jobs.request, 'hex')",
        3, params);
    tc_buf_free(&u);
    tc_buf_free(&nm);
    if (rc < 0)
        return rc;
    if (PQntuples(res) == 1) {
        snprintf(out->job_id, sizeof out->job_id, "%s", PQgetvalue(res, 0, 0));
        snprintf(out->kind, sizeof out->kind, "%s", PQgetvalue(res, 0, 1));
        snprintf(out->device_uuid, sizeof out->device_uuid, "%s", PQgetvalue(res, 0, 2));
        rc = s_hex_decode(PQgetvalue(res, 0, 3), &out->request, &out->request_len);
        *found = rc == 0;
    }
    PQclear(res);
    return rc;
}

void tc_store_job_clear(tc_store_job_t *job)
{
    free(job->request);
    memset(job, 0, sizeof *job);
}

static const char *s_state_name(Traincast__V1__JobState s)
{
    switch (s) {
    case TRAINCAST__V1__JOB_STATE__JOB_STATE_RUNNING: return "running";
    case TRAINCAST__V1__JOB_STATE__JOB_STATE_DONE: return "done";
    case TRAINCAST__V1__JOB_STATE__JOB_STATE_FAILED: return "failed";
    default: return NULL;
    }
}

int tc_store_job_progress(tc_store_t *self, const tc_envelope_t *env, const char *key,
                          tc_store_outcome_t *outcome, bool *terminal)
{
    *outcome = TC_STORE_STORED;
    *terminal = false;
    if (env->body_case != TRAINCAST__V1__ENVELOPE__BODY_JOB_PROGRESS)
        return tc_fail(TC_EINVAL, "body: expected job_progress, got %s", tc_body_name(env));
    int rc = tc_validate_envelope(env);
    if (rc < 0)
        return rc;
    const Traincast__V1__JobProgress *p = env->job_progress;
    const char *state = s_state_name(p->state);
    int nested = 0;
    if ((rc = tc_store_msg_begin(self, &nested)) < 0)
        return rc;
    if ((rc = tc_store_bind_key(self, env->agent_id, key)) < 0) {
        tc_store_msg_rollback(self, nested);
        return rc;
    }
    char sent[64], done[16], total[16];
    tc_store_time_param(env->sent_at_us, sent, sizeof sent);
    snprintf(done, sizeof done, "%u", p->done);
    snprintf(total, sizeof total, "%u", p->total);
    const char *idp[] = {env->message_id, env->agent_id, "job_progress",
                         env->sent_at_us > 0 ? sent : NULL};
    PGresult *res = NULL;
    rc = tc_store_query(self, &res, "recording the message id",
                        "INSERT INTO received_messages (message_id, agent_id, kind, sent_at) "
                        "VALUES ($1, $2, $3, $4) ON CONFLICT (message_id) DO NOTHING RETURNING 1",
                        4, idp);
    if (rc == 0 && PQntuples(res) == 0) {
        PQclear(res);
        tc_store_msg_rollback(self, nested);
        *outcome = TC_STORE_DUPLICATE;
        return 0;
    }
    PQclear(res);
    res = NULL;
    const char *jp[] = {p->job_id};
    if (rc == 0)
        rc = tc_store_query(self, &res, "reading the job",
                            "SELECT state, agent_id FROM jobs WHERE job_id = $1 FOR UPDATE", 1,
                            jp);
    if (rc == 0 && PQntuples(res) == 0) {
        rc = tc_fail(TC_EINVAL, "job_progress.job_id: there is no job '%s' in this database",
                     p->job_id);
    }
    bool applies = false;
    if (rc == 0) {
        const char *cur = PQgetvalue(res, 0, 0);
        const char *owner = PQgetisnull(res, 0, 1) ? "" : PQgetvalue(res, 0, 1);
        applies = strcmp(cur, "done") != 0 && strcmp(cur, "failed") != 0 &&
                  strcmp(cur, "queued") != 0 && !strcmp(owner, env->agent_id);
    }
    PQclear(res);
    const char *ev[] = {p->job_id, env->message_id, env->agent_id, state, done, total,
                        p->message && *p->message ? p->message : NULL};
    if (rc == 0)
        rc = tc_store_query(self, NULL, "recording the job event",
                            "INSERT INTO job_events (job_id, message_id, agent_id, state, done, "
                            "total, message) VALUES ($1, $2, $3, $4, $5, $6, $7)",
                            7, ev);
    if (rc == 0 && applies) {
        const char *up[] = {p->job_id, state, done, total,
                            p->message && *p->message ? p->message : NULL};
        rc = tc_store_query(self, NULL, "updating the job",
                            "UPDATE jobs SET state = $2, done = $3, total = $4, "
                            "message = coalesce($5, message), updated_at = now(), "
                            "finished_at = CASE WHEN $2 IN ('done', 'failed') THEN now() END "
                            "WHERE job_id = $1",
                            5, up);
        *terminal = rc == 0 && strcmp(state, "running") != 0;
    }
    if (rc == 0)
        rc = tc_store_msg_commit(self, nested);
    if (rc < 0) {
        tc_store_msg_rollback(self, nested);
        *terminal = false;
    }
    return rc;
}

int tc_store_job_requeue(tc_store_t *self, const char *job_id, const char *why,
                         int max_attempts, char *state_out, size_t size)
{
    char max[16];
    snprintf(max, sizeof max, "%d", max_attempts);
    const char *params[] = {job_id, why, max};
    PGresult *res = NULL;
    int rc = tc_store_query(
        self, &res, "requeueing a job",
        "UPDATE jobs SET state = CASE WHEN attempts >= $3::int THEN 'failed' ELSE 'queued' END,"
        " message = $2, updated_at = now(),"
        " agent_id = CASE WHEN attempts >= $3::int THEN agent_id END,"
        " finished_at = CASE WHEN attempts >= $3::int THEN now() END"
        " WHERE job_id = $1 AND state IN ('dispatched', 'running') RETURNING state",
        3, params);
    if (rc < 0)
        return rc;
    if (state_out && size)
        snprintf(state_out, size, "%s", PQntuples(res) ? PQgetvalue(res, 0, 0) : "");
    PQclear(res);
    return 0;
}

int tc_store_batch_begin(tc_store_t *self, const char *const *agent_ids, size_t n)
{
    int rc = tc_store_staging(self);
    if (rc == 0)
        rc = tc_store_begin(self);
    if (rc == 0 && (rc = tc_store_lock_agents(self, agent_ids, n)) < 0)
        tc_store_rollback(self);
    tc_store_conv_defer(self, rc == 0);
    return rc;
}

int tc_store_batch_commit(tc_store_t *self)
{
    tc_store_conv_defer(self, false);
    int rc = tc_store_conv_flush(self);
    return rc < 0 ? rc : tc_store_commit(self);
}

void tc_store_batch_rollback(tc_store_t *self)
{
    tc_store_conv_defer(self, false);
    tc_store_rollback(self);
}

int tc_store_set_accepts_jobs(tc_store_t *self, const char *agent_id, bool accepts)
{
    const char *params[] = {agent_id, accepts ? "true" : "false"};
    return tc_store_query(self, NULL, "recording whether the agent takes jobs",
                          "UPDATE agents SET accepts_jobs = $2::boolean WHERE agent_id = $1", 2,
                          params);
}

int tc_store_device_online(tc_store_t *self, const char *device_name, int within_s, int *agents)
{
    char secs[16];
    snprintf(secs, sizeof secs, "%d", within_s);
    const char *params[] = {device_name, secs};
    PGresult *res = NULL;
    *agents = 0;
    int rc = tc_store_query(self, &res, "looking for online agents",
                            "SELECT count(DISTINCT a.agent_id) FROM devices d JOIN agents a USING "
                            "(agent_id) WHERE d.name = $1 AND a.accepts_jobs AND a.last_seen > "
                            "now() - make_interval(secs => $2::int)",
                            2, params);
    if (rc < 0)
        return rc;
    *agents = atoi(PQgetvalue(res, 0, 0));
    PQclear(res);
    return 0;
}

static void s_status_from_row(PGresult *res, int row, tc_store_job_status_t *out)
{
    snprintf(out->state, sizeof out->state, "%s", PQgetvalue(res, row, 1));
    out->done = (uint32_t)strtoul(PQgetvalue(res, row, 2), NULL, 10);
    out->total = (uint32_t)strtoul(PQgetvalue(res, row, 3), NULL, 10);
    snprintf(out->message, sizeof out->message, "%s",
             PQgetisnull(res, row, 4) ? "" : PQgetvalue(res, row, 4));
}

static const char s_status_sql[] =
    "SELECT job_id, state, done, total, message FROM jobs WHERE job_id = ANY($1::text[])";

int tc_store_job_status(tc_store_t *self, const char *job_id, tc_store_job_status_t *out)
{
    memset(out, 0, sizeof *out);
    tc_buf_t ids = {0};
    tc_store_text_array(&ids, &job_id, 1);
    const char *params[] = {tc_buf_str(&ids)};
    PGresult *res = NULL;
    int rc = tc_store_query(self, &res, "reading a job", s_status_sql, 1, params);
    tc_buf_free(&ids);
    if (rc < 0)
        return rc;
    if (PQntuples(res) == 0)
        rc = tc_fail(TC_ENOTFOUND, "there is no job '%s'", job_id);
    else
        s_status_from_row(res, 0, out);
    PQclear(res);
    return rc;
}

static bool s_terminal(const char *state)
{
    return !strcmp(state, "done") || !strcmp(state, "failed");
}

int tc_store_job_wait(tc_store_t *self, const char *const *job_ids, size_t n, int timeout_ms,
                      tc_store_job_fn fn, void *arg)
{
    tc_store_job_status_t *last = calloc(n ? n : 1, sizeof *last);
    tc_buf_t ids = {0};
    tc_store_text_array(&ids, job_ids, n);
    if (!last || ids.failed) {
        free(last);
        tc_buf_free(&ids);
        return tc_fail(TC_ENOMEM, "out of memory");
    }
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int rc = tc_store_listen(self, TC_CHANNEL_JOB_PROGRESS);
    while (rc == 0) {
        const char *params[] = {tc_buf_str(&ids)};
        PGresult *res = NULL;
        if ((rc = tc_store_query(self, &res, "reading jobs", s_status_sql, 1, params)) < 0)
            break;
        size_t finished = 0, found = 0;
        for (int r = 0; r < PQntuples(res); r++) {
            for (size_t i = 0; i < n; i++) {
                if (strcmp(job_ids[i], PQgetvalue(res, r, 0)) != 0)
                    continue;
                tc_store_job_status_t st;
                s_status_from_row(res, r, &st);
                if (fn && (strcmp(st.state, last[i].state) || st.done != last[i].done ||
                           st.total != last[i].total))
                    fn(arg, job_ids[i], &st);
                last[i] = st;
                found++;
                finished += s_terminal(st.state);
            }
        }
        PQclear(res);
        if (found < n) {
            rc = tc_fail(TC_ENOTFOUND, "%zu of the %zu jobs waited for do not exist", n - found,
                         n);
            break;
        }
        if (finished == n)
            break;
        struct timespec now;
        clock_gettime(CLOCK_MONOTONIC, &now);
        long spent = (long)(now.tv_sec - t0.tv_sec) * 1000 + (now.tv_nsec - t0.tv_nsec) / 1000000;
        if (timeout_ms > 0 && spent >= timeout_ms) {
            rc = tc_fail(TC_ETIMEOUT, "%zu of %zu jobs still unfinished after %d s", n - finished,
                         n, timeout_ms / 1000);
            break;
        }
        int wait = 2000;
        if (timeout_ms > 0 && timeout_ms - spent < wait)
            wait = (int)(timeout_ms - spent);
        struct pollfd pfd = {.fd = PQsocket(self->conn), .events = POLLIN};
        if (poll(&pfd, 1, wait) > 0) {
            int count = 0;
            rc = tc_store_notifications(self, &count);
        }
    }
    PGresult *u = PQexec(self->conn, "UNLISTEN " TC_CHANNEL_JOB_PROGRESS);
    PQclear(u);
    free(last);
    tc_buf_free(&ids);
    return rc;
}

int tc_store_listen(tc_store_t *self, const char *channel)
{
    char sql[128];
    snprintf(sql, sizeof sql, "LISTEN %s", channel);
    return tc_store_query(self, NULL, "listening for job notifications", sql, 0, NULL);
}

int tc_store_socket(tc_store_t *self)
{
    if (!self->conn || PQstatus(self->conn) != CONNECTION_OK)
        return -1;
    return PQsocket(self->conn);
}

int tc_store_notifications(tc_store_t *self, int *count)
{
    *count = 0;
    if (!self->conn || PQstatus(self->conn) != CONNECTION_OK)
        return tc_fail(TC_EDB, "database: the notification connection is closed");
    if (!PQconsumeInput(self->conn))
        return TC_STORE_FAIL(self, NULL, "reading notifications");
    PGnotify *n;
    while ((n = PQnotifies(self->conn)) != NULL) {
        (*count)++;
        PQfreemem(n);
    }
    if (PQstatus(self->conn) != CONNECTION_OK)
        return tc_fail(TC_EDB, "database: the notification connection was lost");
    return 0;
}

int tc_store_select(tc_store_t *self, const char *what, const char *sql, int nparams,
                    const char *const *params, tc_store_row_fn fn, void *arg)
{
    PGresult *res = NULL;
    int rc = tc_store_query(self, &res, what, sql, nparams, params);
    if (rc < 0)
        return rc;
    int nc = PQnfields(res), nr = PQntuples(res);
    const char **names = calloc((size_t)(nc ? nc : 1), sizeof *names);
    const char **values = calloc((size_t)(nc ? nc : 1), sizeof *values);
    if (!names || !values)
        rc = tc_fail(TC_ENOMEM, "out of memory");
    for (int c = 0; rc == 0 && c < nc; c++)
        names[c] = PQfname(res, c);
    for (int r = 0; rc == 0 && r < nr; r++) {
        for (int c = 0; c < nc; c++)
            values[c] = PQgetisnull(res, r, c) ? NULL : PQgetvalue(res, r, c);
        rc = fn(arg, nc, names, values);
    }
    free(names);
    free(values);
    PQclear(res);
    return rc;
}
