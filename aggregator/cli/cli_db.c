/* The database the aggregator's commands open. */
#include "cli_db.h"

#include "store.h"

#include <stdlib.h>

const char *tc_default_dsn(const char *flag_value)
{
    if (flag_value && *flag_value)
        return flag_value;
    const char *env = getenv("TRAINCAST_DB");
    /* "": libpq's own defaults (PGHOST, PGDATABASE, PGSERVICE, PGPASSFILE...). */
    return env && *env ? env : "";
}

int tc_db_command(const char *prog, const char *summary, int check_schema, int argc,
                  char **argv, tc_store_t **store)
{
    const char *db = NULL;
    const tc_opt_t opts[] = {
        TC_DB_OPT(&db),
        {0},
    };
    const tc_cmd_spec_t spec = {
        .prog = prog,
        .summary = summary,
        .max_positional = 0,
        .config_file = true,
        .opts = opts,
    };
    *store = NULL;
    tc_cli_result_t cli;
    int rc = tc_cli_parse(&spec, argc, argv, &cli);
    if (rc == 0 && !cli.help_shown)
        rc = tc_store_open(tc_default_dsn(db), store);
    if (rc == 0 && *store && check_schema && (rc = tc_store_check_schema(*store)) < 0)
        tc_store_destroy(store);
    tc_cli_result_free(&cli);
    return rc;
}
