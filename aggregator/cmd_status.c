/* aggregator status: agents, their devices, when they were last seen, their
 * spool backlog, and what is stored. */
#include "commands.h"
#include "store.h"
#include "store_server.h"

#include "tc_buf.h"
#include "tc_cli.h"
#include "tc_error.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define S_MAX_COLS 12

/* Rows collected for one table, printed with aligned columns. */
typedef struct {
    const char *title;
    const char *const *headers;
    int ncols;
    char **cells; /* row-major */
    size_t nrows, cap;
} s_table_t;

static int s_add_row(void *arg, int ncols, const char *const *names, const char *const *values)
{
    s_table_t *t = arg;
    (void)names;
    if (ncols != t->ncols)
        return tc_fail(TC_EDB, "internal: status query returned %d columns, expected %d", ncols,
                       t->ncols);
    if (t->nrows == t->cap) {
        size_t nc = t->cap ? t->cap * 2 : 16;
        char **c = realloc(t->cells, nc * (size_t)t->ncols * sizeof *c);
        if (!c)
            return tc_fail(TC_ENOMEM, "out of memory");
        t->cells = c;
        t->cap = nc;
    }
    for (int i = 0; i < ncols; i++) {
        char *v = strdup(values[i] ? values[i] : "-");
        if (!v)
            return tc_fail(TC_ENOMEM, "out of memory");
        t->cells[t->nrows * (size_t)t->ncols + (size_t)i] = v;
    }
    t->nrows++;
    return 0;
}

static void s_print(const s_table_t *t)
{
    size_t w[S_MAX_COLS];
    for (int c = 0; c < t->ncols; c++) {
        w[c] = strlen(t->headers[c]);
        for (size_t r = 0; r < t->nrows; r++) {
            size_t n = strlen(t->cells[r * (size_t)t->ncols + (size_t)c]);
            if (n > w[c])
                w[c] = n;
        }
    }
    printf("%s (%zu)\n", t->title, t->nrows);
    if (!t->nrows)
        return;
    for (int c = 0; c < t->ncols; c++)
        printf("  %-*s", (int)w[c], t->headers[c]);
    printf("\n");
    for (size_t r = 0; r < t->nrows; r++) {
        for (int c = 0; c < t->ncols; c++)
            printf("  %-*s", (int)w[c], t->cells[r * (size_t)t->ncols + (size_t)c]);
        printf("\n");
    }
}

static void s_free(s_table_t *t)
{
    for (size_t i = 0; i < t->nrows * (size_t)t->ncols; i++)
        free(t->cells[i]);
    free(t->cells);
    t->cells = NULL;
    t->nrows = t->cap = 0;
}

static int s_table(tc_store_t *store, const char *title, const char *const *headers, int ncols,
                   const char *sql)
{
    s_table_t t = {.title = title, .headers = headers, .ncols = ncols};
    int rc = tc_store_select(store, title, sql, 0, NULL, s_add_row, &t);
    if (rc == 0)
        s_print(&t);
    s_free(&t);
    return rc;
}

static const char *const s_agent_cols[] = {"AGENT",   "HOST",      "VERSION", "JOBS",
                                           "LAST SEEN", "AGO",     "BACKLOG", "MESSAGES"};
static const char s_agent_sql[] =
    "SELECT a.agent_id, coalesce(a.host, '-'), coalesce(a.version, '-'),"
    " CASE WHEN a.accepts_jobs THEN 'yes' ELSE 'no' END,"
    " to_char(a.last_seen AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS') || ' UTC',"
    " CASE WHEN now() - a.last_seen < interval '1 minute'"
    "      THEN extract(epoch FROM now() - a.last_seen)::int || ' s'"
    "      WHEN now() - a.last_seen < interval '1 hour'"
    "      THEN (extract(epoch FROM now() - a.last_seen) / 60)::int || ' min'"
    "      ELSE (extract(epoch FROM now() - a.last_seen) / 3600)::int || ' h' END,"
    " coalesce(a.spool_backlog::text, '-'),"
    " (SELECT count(*) FROM received_messages m WHERE m.agent_id = a.agent_id)::text"
    " FROM agents a ORDER BY a.last_seen DESC, a.agent_id";

static const char *const s_device_cols[] = {"AGENT", "DEVICE", "KIND", "UUID",
                                            "CONV RESULTS", "TRACES", "LAST SEEN"};
static const char s_device_sql[] =
    "SELECT coalesce(d.agent_id, '-'), d.name, d.kind, d.uuid,"
    " (SELECT count(*) FROM conv_results r WHERE r.device_id = d.device_id)::text,"
    " (SELECT count(*) FROM traces t WHERE t.device_id = d.device_id)::text,"
    " to_char(d.last_seen AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS') || ' UTC'"
    " FROM devices d ORDER BY d.agent_id, d.name, d.uuid";

static const char *const s_count_cols[] = {"WHAT", "COUNT"};
static const char s_count_sql[] =
    "SELECT 'messages received', count(*)::text FROM received_messages"
    " UNION ALL SELECT 'conv results', count(*)::text FROM conv_results"
    " UNION ALL SELECT 'conv configs', count(*)::text FROM conv_configs"
    " UNION ALL SELECT 'traces', count(*)::text FROM traces"
    " UNION ALL SELECT 'models', count(*)::text FROM models";

static const char *const s_job_cols[] = {"STATE", "JOBS", "LATEST"};
static const char s_job_sql[] =
    "SELECT state, count(*)::text,"
    " to_char(max(updated_at) AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS') || ' UTC'"
    " FROM jobs GROUP BY state"
    " ORDER BY array_position(ARRAY['queued','dispatched','running','done','failed'], state)";

int tc_cmd_status(int argc, char **argv)
{
    tc_store_t *store = NULL;
    int rc = tc_db_command("aggregator status",
                           "Show the agents (last seen, spool backlog, messages stored), their "
                           "devices with what\neach has measured, totals stored, and the job "
                           "queue.",
                           1, argc, argv, &store);
    if (rc < 0 || !store)
        return rc;
    if (rc == 0)
        rc = s_table(store, "agents", s_agent_cols, 8, s_agent_sql);
    if (rc == 0) {
        printf("\n");
        rc = s_table(store, "devices", s_device_cols, 7, s_device_sql);
    }
    if (rc == 0) {
        printf("\n");
        rc = s_table(store, "stored", s_count_cols, 2, s_count_sql);
    }
    if (rc == 0) {
        printf("\n");
        rc = s_table(store, "job states", s_job_cols, 3, s_job_sql);
    }
    tc_store_destroy(&store);
    return rc;
}
