/* aggregator devices and aggregator models: what the database knows, the
 * names that --gpu, --device and --model take, one table each. */
#include "cli_db.h"
#include "commands.h"
#include "store.h"
#include "store_server.h"

#include "tc_cli.h"
#include "tc_error.h"
#include "tc_table.h"

#include <stdio.h>

static int s_add_row(void *arg, int ncols, const char *const *names, const char *const *values)
{
    (void)names;
    (void)ncols;
    return tc_table_add_row(arg, values);
}

/* A device name is a device class: the physical devices sharing it, what
 * they measured, and the latest fit of any kind. */
static const tc_col_t s_device_cols[] = {
    {"device", TC_COL_TEXT},       {"kind", TC_COL_TEXT},       {"devices", TC_COL_INT},
    {"hosts", TC_COL_TEXT},        {"threads", TC_COL_INT},     {"memory_bytes", TC_COL_INT},
    {"origin", TC_COL_TEXT},       {"conv_results", TC_COL_INT}, {"traces", TC_COL_INT},
    {"models_traced", TC_COL_INT}, {"fit_id", TC_COL_INT},      {"fit_mape_pct", TC_COL_NUM},
    {"last_seen", TC_COL_TEXT},
};
static const char s_device_sql[] =
    "WITH d AS (SELECT name, min(kind) AS kind, count(*) AS n,"
    "  string_agg(DISTINCT host, ',' ORDER BY host) AS hosts,"
    "  nullif(max(coalesce(threads, 0)), 0) AS threads,"
    "  min(nullif(memory_bytes, 0)) AS memory_bytes,"
    "  bool_or(import_id IS NULL) AS local, bool_or(import_id IS NOT NULL) AS imported,"
    "  max(last_seen) AS last_seen, array_agg(device_id) AS ids"
    "  FROM devices GROUP BY name),"
    " f AS (SELECT DISTINCT ON (device) device, fit_id, cv_mape FROM fits"
    "  ORDER BY device, fitted_at DESC, fit_id DESC)"
    " SELECT d.name, d.kind, d.n::text, d.hosts, d.threads::text, d.memory_bytes::text,"
    " CASE WHEN d.local AND d.imported THEN 'local and imported'"
    "      WHEN d.imported THEN 'imported' ELSE 'local' END,"
    " (SELECT count(*) FROM conv_results r WHERE r.device_id = ANY (d.ids))::text,"
    " (SELECT count(*) FROM traces t WHERE t.device_id = ANY (d.ids))::text,"
    " (SELECT count(DISTINCT t.model_id) FROM traces t"
    "  WHERE t.device_id = ANY (d.ids) AND t.status = 'ok')::text,"
    " f.fit_id::text, round(f.cv_mape::numeric, 2)::text,"
    " to_char(d.last_seen AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"')"
    " FROM d LEFT JOIN f ON f.device = d.name ORDER BY d.name";

/* A stored model graph: its size, its conv configs and where it was traced. */
static const tc_col_t s_model_cols[] = {
    {"model_id", TC_COL_TEXT},     {"name", TC_COL_TEXT},        {"input", TC_COL_TEXT},
    {"params", TC_COL_INT},        {"gflops", TC_COL_NUM},       {"layers", TC_COL_INT},
    {"conv_configs", TC_COL_INT},  {"devices_traced", TC_COL_INT}, {"traces", TC_COL_INT},
    {"stored_at", TC_COL_TEXT},
};
static const char s_model_sql[] =
    "SELECT m.model_id, m.name, m.input_c || 'x' || m.input_h || 'x' || m.input_w,"
    " m.params::text, round((m.flops / 1e9)::numeric, 3)::text,"
    " (SELECT count(*) FROM model_layers l WHERE l.model_id = m.model_id)::text,"
    " (SELECT count(DISTINCT c.config_id) FROM model_convs c WHERE c.model_id = m.model_id)::text,"
    " (SELECT count(DISTINCT d.name) FROM traces t JOIN devices d USING (device_id)"
    "  WHERE t.model_id = m.model_id AND t.status = 'ok')::text,"
    " (SELECT count(*) FROM traces t WHERE t.model_id = m.model_id)::text,"
    " to_char(m.stored_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"')"
    " FROM models m ORDER BY m.name, m.model_id";

/* One table in the format asked for. */
static int s_list(int argc, char **argv, const char *prog, const char *summary,
                  const char *epilog, const char *name, const tc_col_t *cols, size_t ncols,
                  const char *sql)
{
    const char *db = NULL, *format = "table";
    const tc_opt_t opts[] = {
        {"format", TC_OPT_STR, &format, "table|csv|json", "output format (default: table)"},
        TC_DB_OPT(&db),
        {0},
    };
    const tc_cmd_spec_t spec = {
        .prog = prog,
        .summary = summary,
        .max_positional = 0,
        .config_file = true,
        .epilog = epilog,
        .opts = opts,
    };
    tc_cli_result_t cli;
    int rc = tc_cli_begin(&spec, argc, argv, &cli);
    if (rc < 0 || cli.help_shown)
        return rc;
    tc_format_t fmt;
    tc_table_t *table = NULL;
    tc_store_t *store = NULL;
    TC_TRY(tc_format_parse(format, &fmt));
    TC_TRY(tc_store_open(tc_default_dsn(db), &store));
    TC_TRY(tc_store_check_schema(store));
    if (!(table = tc_table_new(name, cols, ncols)))
        TC_FAIL_GOTO(TC_ENOMEM, "out of memory");
    TC_TRY(tc_store_select(store, name, sql, 0, NULL, s_add_row, table));
    rc = tc_table_print(stdout, fmt, &table, 1);
err:
    tc_table_destroy(&table);
    tc_store_destroy(&store);
    tc_cli_result_free(&cli);
    return rc;
}

int tc_cmd_devices(int argc, char **argv)
{
    return s_list(argc, argv, "aggregator devices",
                  "List the device classes the database knows (the names --gpu, --device and "
                  "--prices\ntake): how many physical devices share each name and on which "
                  "hosts, whether they\nare local or imported, what they measured, and their "
                  "latest fit.",
                  "fit_mape_pct is the latest fit's leave-one-CNN-out error (empty when it was "
                  "not validated;\nfit_id empty: no fit, run aggregator fit). last_seen is ISO "
                  "8601 in UTC.",
                  "devices", s_device_cols, sizeof s_device_cols / sizeof s_device_cols[0],
                  s_device_sql);
}

int tc_cmd_models(int argc, char **argv)
{
    return s_list(argc, argv, "aggregator models",
                  "List the model graphs the database knows: size, input, distinct conv "
                  "configs, and on\nhow many device classes they were traced.",
                  "A model id names one structure at one input size: torchvision:NAME@PX, or "
                  "onnx:HASH@PX for\nyour own ONNX file. stored_at is ISO 8601 in UTC.",
                  "models", s_model_cols, sizeof s_model_cols / sizeof s_model_cols[0],
                  s_model_sql);
}
