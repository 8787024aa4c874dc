/* Connection, errors, queries, transactions and COPY (the schema and
 * migrations: store_schema.c). */
#include "store_internal.h"

#include "tc_error.h"
#include "tc_log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void tc_store_notice(void *arg, const char *message)
{
    (void)arg;
    /* libpq's messages end in a newline and may span lines: one log line. */
    char line[1024];
    size_t n = 0;
    for (const char *p = message; *p && n + 1 < sizeof line; p++)
        line[n++] = *p == '\n' || *p == '\r' ? ' ' : *p;
    while (n && line[n - 1] == ' ')
        n--;
    line[n] = '\0';
    tc_log_warn("PostgreSQL: %s", line);
}

/* libpq's multi-line message as one line, without a trailing newline. */
static void s_one_line(char *out, size_t size, const char *msg)
{
    size_t n = 0;
    for (const char *p = msg ? msg : ""; *p && n + 1 < size; p++) {
        char c = *p == '\n' || *p == '\t' || *p == '\r' ? ' ' : *p;
        if (c == ' ' && (n == 0 || out[n - 1] == ' '))
            continue;
        out[n++] = c;
    }
    while (n && out[n - 1] == ' ')
        n--;
    out[n] = '\0';
}

int tc_store_error_code(const char *sqlstate, bool connected)
{
    if (!connected || !sqlstate || strlen(sqlstate) != 5)
        return TC_EDB; /* no answer from the server: the connection failed */
    /* Connection exceptions, the server shutting down or refusing new work,
     * lack of resources, system and internal errors, authentication and
     * privileges (an operator's setting): none says anything about the
     * message, all may pass. */
    static const char *const outage_classes[] = {"08", "53", "58", "XX", "28", "57"};
    for (size_t i = 0; i < sizeof outage_classes / sizeof outage_classes[0]; i++) {
        if (!strncmp(sqlstate, outage_classes[i], 2))
            return TC_EDB;
    }
    /* Conflicts with other transactions: retry. */
    if (!strcmp(sqlstate, "40001") || !strcmp(sqlstate, "40P01") ||
        !strcmp(sqlstate, "55P03") || !strcmp(sqlstate, "55006") ||
        !strcmp(sqlstate, "42501"))
        return TC_EDB;
    /* Everything else failed for what this statement carried. */
    return TC_EINVAL;
}

int tc_store_fail(tc_store_t *s, PGresult *res, const char *what, const char *file, int line)
{
    const char *state = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;
    snprintf(s->sqlstate, sizeof s->sqlstate, "%s", state ? state : "");
    return tc_store_fail_conn(s->conn, res, what, file, line);
}

int tc_store_fail_conn(PGconn *conn, PGresult *res, const char *what, const char *file, int line)
{
    const char *state = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;
    const char *msg = res ? PQresultErrorMessage(res) : NULL;
    if (!msg || !*msg)
        msg = PQerrorMessage(conn);
    char text[1024];
    s_one_line(text, sizeof text, msg && *msg ? msg : "no message from libpq");
    char code_text[8] = "";
    if (state)
        snprintf(code_text, sizeof code_text, "%s", state);
    int code = tc_store_error_code(state, conn && PQstatus(conn) == CONNECTION_OK);
    if (res)
        PQclear(res);
    return tc_fail_at(code, file, line, "database: %s failed: %s%s%s%s", what, text,
                      *code_text ? " (SQLSTATE " : "", code_text, *code_text ? ")" : "");
}

size_t tc_store_name_index(const char *const *names, size_t n, const char *name)
{
    size_t i = 0;
    while (i < n && strcmp(names[i], name) != 0)
        i++;
    return i;
}

int tc_store_run_end(PGresult *res, int from, int col)
{
    int rows = PQntuples(res), to = from + 1;
    while (to < rows && !strcmp(PQgetvalue(res, to, col), PQgetvalue(res, from, col)))
        to++;
    return to;
}

void tc_store_text_array(tc_buf_t *b, const char *const *v, size_t n)
{
    tc_buf_putc(b, '{');
    for (size_t i = 0; i < n; i++) {
        tc_buf_puts(b, i ? ",\"" : "\"");
        for (const char *p = v[i] ? v[i] : ""; *p; p++) {
            if (*p == '"' || *p == '\\')
                tc_buf_putc(b, '\\');
            tc_buf_putc(b, *p);
        }
        tc_buf_putc(b, '"');
    }
    tc_buf_putc(b, '}');
}

static int s_result(tc_store_t *s, PGresult *res, PGresult **out, const char *what)
{
    ExecStatusType st = res ? PQresultStatus(res) : PGRES_FATAL_ERROR;
    if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK)
        return TC_STORE_FAIL(s, res, what);
    if (out)
        *out = res;
    else
        PQclear(res);
    return 0;
}

int tc_store_query(tc_store_t *s, PGresult **out, const char *what, const char *sql, int nparams,
                   const char *const *params)
{
    if (out)
        *out = NULL;
    return s_result(s, PQexecParams(s->conn, sql, nparams, NULL, params, NULL, NULL, 0), out,
                    what);
}

int tc_store_query_binary(tc_store_t *s, PGresult **out, const char *what, const char *sql,
                          int nparams, const char *const *params)
{
    if (out)
        *out = NULL;
    return s_result(s, PQexecParams(s->conn, sql, nparams, NULL, params, NULL, NULL, 1), out,
                    what);
}

int tc_store_query_prepared(tc_store_t *s, PGresult **out, const char *what, const char *sql,
                            int nparams, const char *const *params)
{
    unsigned i = 0;
    while (i < s->n_prepared && s->prepared[i] != sql)
        i++;
    if (i == TC_STORE_PREPARED_MAX)
        return tc_store_query(s, out, what, sql, nparams, params);
    if (out)
        *out = NULL;
    char name[32];
    snprintf(name, sizeof name, "tc_%u", i);
    if (i == s->n_prepared) {
        int rc = s_result(s, PQprepare(s->conn, name, sql, nparams, NULL), NULL, what);
        if (rc < 0)
            return rc;
        s->prepared[s->n_prepared++] = sql;
    }
    return s_result(s, PQexecPrepared(s->conn, name, nparams, params, NULL, NULL, 0), out, what);
}

void *tc_store_part_state(tc_store_t *s, const tc_store_part_t *part)
{
    for (size_t i = 0; i < s->n_parts; i++)
        if (s->parts[i].part == part)
            return s->parts[i].state;
    if (s->n_parts == TC_STORE_PARTS_MAX)
        return NULL;
    void *state = calloc(1, part->size ? part->size : 1);
    if (state) {
        s->parts[s->n_parts].part = part;
        s->parts[s->n_parts++].state = state;
    }
    return state;
}

/* Tell every attached part that a transaction or a message ended. */
static void s_settle(tc_store_t *s, bool committed, bool message)
{
    for (size_t i = 0; i < s->n_parts; i++)
        if (s->parts[i].part->settle)
            s->parts[i].part->settle(s->parts[i].state, committed, message);
}

static void s_reset(tc_store_t *s)
{
    for (size_t i = 0; i < s->n_parts; i++)
        if (s->parts[i].part->reset)
            s->parts[i].part->reset(s->parts[i].state);
}

int tc_store_begin(tc_store_t *s)
{
    return tc_store_query(s, NULL, "BEGIN", "BEGIN", 0, NULL);
}

int tc_store_commit(tc_store_t *s)
{
    int rc = tc_store_query(s, NULL, "COMMIT", "COMMIT", 0, NULL);
    s_settle(s, rc == 0, false);
    return rc;
}

void tc_store_rollback(tc_store_t *s)
{
    s_settle(s, false, false);
    if (PQtransactionStatus(s->conn) == PQTRANS_IDLE)
        return;
    PGresult *res = PQexec(s->conn, "ROLLBACK");
    PQclear(res);
}

int tc_store_msg_begin(tc_store_t *s, int *nested)
{
    *nested = PQtransactionStatus(s->conn) == PQTRANS_INTRANS;
    if (*nested) {
        for (size_t i = 0; i < s->n_parts; i++)
            if (s->parts[i].part->mark)
                s->parts[i].part->mark(s->parts[i].state);
        return tc_store_query(s, NULL, "SAVEPOINT", "SAVEPOINT tc_msg", 0, NULL);
    }
    return tc_store_begin(s);
}

int tc_store_msg_commit(tc_store_t *s, int nested)
{
    if (nested)
        return tc_store_query(s, NULL, "RELEASE SAVEPOINT", "RELEASE SAVEPOINT tc_msg", 0, NULL);
    return tc_store_commit(s);
}

void tc_store_msg_rollback(tc_store_t *s, int nested)
{
    if (!nested) {
        tc_store_rollback(s);
        return;
    }
    s_settle(s, false, true);
    PGresult *res = PQexec(s->conn, "ROLLBACK TO SAVEPOINT tc_msg");
    PQclear(res);
    res = PQexec(s->conn, "RELEASE SAVEPOINT tc_msg");
    PQclear(res);
}

/* COPY_SQL fed with the n buffers of `parts`, one after the other. */
static int s_copy(tc_store_t *s, const char *what, const char *copy_sql, const tc_buf_t *const *parts,
                  size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (parts[i]->failed)
            return tc_fail(TC_ENOMEM, "out of memory building rows for %s", what);
    PGresult *res = PQexec(s->conn, copy_sql);
    if (!res || PQresultStatus(res) != PGRES_COPY_IN)
        return TC_STORE_FAIL(s, res, what);
    PQclear(res);
    for (size_t i = 0; i < n; i++) {
        if (parts[i]->len && PQputCopyData(s->conn, parts[i]->data, (int)parts[i]->len) != 1) {
            PQputCopyEnd(s->conn, "client failed");
            return TC_STORE_FAIL(s, PQgetResult(s->conn), what);
        }
    }
    if (PQputCopyEnd(s->conn, NULL) != 1)
        return TC_STORE_FAIL(s, PQgetResult(s->conn), what);
    int rc = 0;
    while ((res = PQgetResult(s->conn)) != NULL) {
        if (PQresultStatus(res) != PGRES_COMMAND_OK && rc == 0)
            rc = TC_STORE_FAIL(s, res, what);
        else
            PQclear(res);
    }
    return rc;
}

int tc_store_copy(tc_store_t *s, const char *what, const char *copy_sql, const tc_buf_t *rows)
{
    const tc_buf_t *parts[] = {rows};
    return s_copy(s, what, copy_sql, parts, 1);
}

int tc_store_copy_binary(tc_store_t *s, const char *what, const char *copy_sql,
                         const tc_buf_t *rows)
{
    tc_buf_t head = {0}, tail = {0};
    tc_bin_begin(&head);
    tc_bin_end(&tail);
    const tc_buf_t *parts[] = {&head, rows, &tail};
    int rc = s_copy(s, what, copy_sql, parts, 3);
    tc_buf_free(&head);
    tc_buf_free(&tail);
    return rc;
}

static int s_connect(tc_store_t *self)
{
    if (self->conn)
        PQfinish(self->conn);
    s_reset(self);
    self->n_prepared = 0;
    self->conn = PQconnectdb(self->dsn);
    if (!self->conn)
        return tc_fail(TC_ENOMEM, "out of memory connecting to the database");
    PQsetNoticeProcessor(self->conn, tc_store_notice, NULL);
    if (PQstatus(self->conn) != CONNECTION_OK) {
        char msg[512];
        s_one_line(msg, sizeof msg, PQerrorMessage(self->conn));
        return tc_fail(TC_EDB,
                       "cannot connect to the database: %s (%s; for a local store run "
                       "deploy/pg-local.sh start)",
                       msg,
                       *self->dsn ? "check --db or TRAINCAST_DB"
                                  : "no --db or TRAINCAST_DB given, so libpq's defaults and "
                                    "environment (PGHOST, PGPORT, PGDATABASE, PGUSER, "
                                    "PGSERVICE) were used");
    }
    if (PQserverVersion(self->conn) < 130000)
        return tc_fail(TC_EVERSION, "the database server is PostgreSQL %d.%d; traincast needs 13 or newer",
                       PQserverVersion(self->conn) / 10000, PQserverVersion(self->conn) % 10000);
    PGresult *res = PQexec(self->conn, "SET application_name = 'traincast'; SET client_min_messages = warning");
    if (!res || PQresultStatus(res) != PGRES_COMMAND_OK)
        return TC_STORE_FAIL(self, res, "session setup");
    PQclear(res);
    return 0;
}

int tc_store_open(const char *dsn, tc_store_t **out)
{
    *out = NULL;
    if (!dsn)
        dsn = ""; /* libpq's defaults and environment */
    tc_store_t *self = calloc(1, sizeof *self);
    if (!self || !(self->dsn = strdup(dsn))) {
        free(self);
        return tc_fail(TC_ENOMEM, "out of memory");
    }
    int rc = s_connect(self);
    if (rc < 0) {
        tc_store_destroy(&self);
        return rc;
    }
    *out = self;
    return 0;
}

void tc_store_destroy(tc_store_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    tc_store_t *self = *self_p;
    if (self->conn)
        PQfinish(self->conn);
    for (size_t i = 0; i < self->n_parts; i++) {
        if (self->parts[i].part->release)
            self->parts[i].part->release(self->parts[i].state);
        free(self->parts[i].state);
    }
    free(self->dsn);
    free(self);
    *self_p = NULL;
}

int tc_store_ensure_connected(tc_store_t *self)
{
    if (self->conn && PQstatus(self->conn) == CONNECTION_OK) {
        /* A server restart is only noticed on the next query; probe cheaply. */
        PGresult *res = PQexec(self->conn, "SELECT 1");
        int ok = res && PQresultStatus(res) == PGRES_TUPLES_OK;
        PQclear(res);
        if (ok)
            return 0;
    }
    return s_connect(self);
}

int tc_store_exec(tc_store_t *self, const char *sql, char *first_value, size_t size)
{
    PGresult *res = PQexec(self->conn, sql);
    ExecStatusType st = res ? PQresultStatus(res) : PGRES_FATAL_ERROR;
    if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK)
        return TC_STORE_FAIL(self, res, "statement");
    if (first_value && size) {
        first_value[0] = '\0';
        if (st == PGRES_TUPLES_OK && PQntuples(res) > 0 && PQnfields(res) > 0)
            snprintf(first_value, size, "%s", PQgetvalue(res, 0, 0));
    }
    PQclear(res);
    return 0;
}
