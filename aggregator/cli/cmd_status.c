/* aggregator status: agents, their devices (local or imported), when they
 * were last seen, their backlog (messages waiting in their journals), what
 * is stored, and the job queue. Times are ISO 8601 in UTC in every format
 * (2026-12-02T13:38:39Z), how long ago an agent was seen is whole seconds. */
#include "cli_db.h"
#include "commands.h"
#include "store.h"
#include "store_server.h"

#include "tc_cli.h"
#include "tc_error.h"
#include "tc_table.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int s_add_row(void *arg, int ncols, const char *const *names, const char *const *values)
{
    (void)names;
    (void)ncols;
    return tc_table_add_row(arg, values);
}

static const tc_col_t s_agent_cols[] = {
    {"agent_id", TC_COL_TEXT},    {"host", TC_COL_TEXT},          {"version", TC_COL_TEXT},
    {"accepts_jobs", TC_COL_BOOL}, {"last_seen", TC_COL_TEXT},     {"ago_s", TC_COL_INT},
    {"spool_backlog", TC_COL_INT}, {"messages", TC_COL_INT},
};
#define S_ISO(col) "to_char(" col " AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"')"
static const char s_agent_sql[] =
    "SELECT a.agent_id, a.host, a.version,"
    " CASE WHEN a.accepts_jobs THEN 'yes' ELSE 'no' END,"
    " " S_ISO("a.last_seen") ","
    " greatest(floor(extract(epoch FROM now() - a.last_seen)), 0)::bigint::text,"
    " a.spool_backlog::text,"
    " (SELECT count(*) FROM received_messages m WHERE m.agent_id = a.agent_id)::text"
    " FROM agents a ORDER BY a.last_seen DESC, a.agent_id";

/* A device of this fleet has its agent; an imported one says where it came
 * from (and its name in the set, when it was renamed on import). */
static const tc_col_t s_device_cols[] = {
    {"agent_id", TC_COL_TEXT}, {"device", TC_COL_TEXT},    {"kind", TC_COL_TEXT},
    {"uuid", TC_COL_TEXT},     {"origin", TC_COL_TEXT},    {"conv_results", TC_COL_INT},
    {"matmul_results", TC_COL_INT}, {"traces", TC_COL_INT}, {"last_seen", TC_COL_TEXT},
};
static const char s_device_sql[] =
    "SELECT d.agent_id, d.name, d.kind, d.uuid,"
    " CASE WHEN d.import_id IS NULL THEN 'local'"
    "      ELSE 'imported from ' || i.source || ' (import ' || d.import_id || ')'"
    "           || coalesce(', was ''' || d.original_name || '''', '') END,"
    " (SELECT count(*) FROM conv_results r WHERE r.device_id = d.device_id)::text,"
    " (SELECT count(*) FROM matmul_results r WHERE r.device_id = d.device_id)::text,"
    " (SELECT count(*) FROM traces t WHERE t.device_id = d.device_id)::text,"
    " " S_ISO("d.last_seen")
    " FROM devices d LEFT JOIN imports i USING (import_id)"
    " ORDER BY d.import_id NULLS FIRST, d.agent_id, d.name, d.uuid";

static const tc_col_t s_count_cols[] = {{"what", TC_COL_TEXT}, {"count", TC_COL_INT}};
/* The disturbed benchmarks as measurement_load counts them (018, 020): those
 * marked, and those a later result superseded (the superseded keys come
 * through the partial index on supersedes_at). Counted here directly rather
 * than read from the view, which also computes its load percentiles for
 * every device: that sort was most of the command's time on a large store.
 * Each result table is read once for its count and its marked ones. */
#define S_DISTURBED(table)                                                                    \
    "(SELECT count(*) AS n, count(*) FILTER (WHERE disturbed) AS marked,"                     \
    " (SELECT count(*) FROM (SELECT DISTINCT device_id, config_id, batch, direction, policy," \
    "   supersedes_at FROM " table " WHERE supersedes_at IS NOT NULL) s"                      \
    "  JOIN " table " r ON r.device_id = s.device_id AND r.config_id = s.config_id"          \
    "   AND r.batch = s.batch AND r.direction = s.direction AND r.policy = s.policy"          \
    "   AND r.measured_at = s.supersedes_at"                                                  \
    "  WHERE NOT r.disturbed) AS superseded FROM " table ")"
static const char s_count_sql[] =
    "WITH conv AS " S_DISTURBED("conv_results") ", mm AS " S_DISTURBED("matmul_results")
    " SELECT 'messages received', count(*)::text FROM received_messages"
    " UNION ALL SELECT 'conv results', n::text FROM conv"
    " UNION ALL SELECT 'conv configs', count(*)::text FROM conv_configs"
    " UNION ALL SELECT 'conv results disturbed or superseded (used only where no quiet one "
    "is)', (marked + superseded)::text FROM conv"
    " UNION ALL SELECT 'matmul results', n::text FROM mm"
    " UNION ALL SELECT 'matmul configs', count(*)::text FROM matmul_configs"
    " UNION ALL SELECT 'matmul results disturbed or superseded', (marked + superseded)::text"
    " FROM mm"
    " UNION ALL SELECT 'traces', count(*)::text FROM traces"
    " UNION ALL SELECT 'traces disturbed (left out of fits)', count(*)::text FROM traces "
    "WHERE disturbed"
    " UNION ALL SELECT 'models', count(*)::text FROM models"
    " UNION ALL SELECT 'fits', count(*)::text FROM fits"
    " UNION ALL SELECT 'predictions', count(*)::text FROM predictions"
    " UNION ALL SELECT 'imports', count(*)::text FROM imports";
#undef S_DISTURBED

static const tc_col_t s_job_cols[] = {
    {"state", TC_COL_TEXT}, {"jobs", TC_COL_INT}, {"latest", TC_COL_TEXT}};
static const char s_job_sql[] =
    "SELECT state, count(*)::text,"
    " " S_ISO("max(updated_at)")
    " FROM jobs GROUP BY state"
    " ORDER BY array_position(ARRAY['queued','dispatched','running','done','failed'], state)";

static const struct {
    const char *name;
    const tc_col_t *cols;
    size_t ncols;
    const char *sql;
} s_sections[] = {
    {"agents", s_agent_cols, sizeof s_agent_cols / sizeof s_agent_cols[0], s_agent_sql},
    {"devices", s_device_cols, sizeof s_device_cols / sizeof s_device_cols[0], s_device_sql},
    {"stored", s_count_cols, 2, s_count_sql},
    {"jobs", s_job_cols, 3, s_job_sql},
};
#define S_SECTIONS (sizeof s_sections / sizeof s_sections[0])

int tc_cmd_status(int argc, char **argv)
{
    const char *db = NULL, *format = "table", *section = NULL;
    const tc_opt_t opts[] = {
        {"format", TC_OPT_STR, &format, "table|csv|json", "output format (default: table)"},
        {"section", TC_OPT_STR, &section, "NAME",
         "only one table: agents, devices, stored or jobs (one plain CSV document)"},
        TC_DB_OPT(&db),
        {0},
    };
    const tc_cmd_spec_t spec = {
        .prog = "aggregator status",
        .summary = "Show the agents (last seen, backlog, messages stored), the devices "
                   "with what each\nhas measured and where it came from (an agent of this "
                   "fleet, or an imported set), totals\nstored, and the job queue.",
        .max_positional = 0,
        .config_file = true,
        .epilog = "The tables are agents, devices, stored and jobs, with the same column names "
                  "in every format:\ncsv prints them one after another, separated by a blank "
                  "line; json prints one object\nwith a member per table.",
        .opts = opts,
    };
    tc_cli_result_t cli;
    int rc = tc_cli_begin(&spec, argc, argv, &cli);
    if (rc < 0 || cli.help_shown)
        return rc;
    tc_format_t fmt;
    tc_table_t *tables[S_SECTIONS] = {0};
    size_t n = 0;
    tc_store_t *store = NULL;
    TC_TRY(tc_format_parse(format, &fmt));
    if (section) {
        size_t k = 0;
        while (k < S_SECTIONS && strcmp(s_sections[k].name, section) != 0)
            k++;
        if (k == S_SECTIONS)
            TC_FAIL_GOTO(TC_EUSAGE,
                         "--section must be agents, devices, stored or jobs (got '%s')", section);
    }
    TC_TRY(tc_store_open(tc_default_dsn(db), &store));
    TC_TRY(tc_store_check_schema(store));
    for (size_t k = 0; k < S_SECTIONS; k++) {
        if (section && strcmp(s_sections[k].name, section) != 0)
            continue;
        tc_table_t *t = tc_table_new(s_sections[k].name, s_sections[k].cols, s_sections[k].ncols);
        if (!t)
            TC_FAIL_GOTO(TC_ENOMEM, "out of memory");
        tables[n++] = t;
        TC_TRY(tc_store_select(store, s_sections[k].name, s_sections[k].sql, 0, NULL, s_add_row,
                               t));
    }
    rc = tc_table_print(stdout, fmt, tables, n);
err:
    for (size_t k = 0; k < n; k++)
        tc_table_destroy(&tables[k]);
    tc_store_destroy(&store);
    tc_cli_result_free(&cli);
    return rc;
}
