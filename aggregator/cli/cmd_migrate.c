#include "commands.h"
#include "store.h"

#include "tc_cli.h"
#include "tc_error.h"

#include <stdio.h>
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

int tc_cmd_migrate(int argc, char **argv)
{
    tc_store_t *store = NULL;
    int rc = tc_db_command("aggregator migrate",
                           "Apply pending schema migrations, each in its own transaction. A "
                           "second run does nothing;\na database newer than this binary is "
                           "refused.",
                           0, argc, argv, &store);
    if (rc < 0 || !store)
        return rc;
    int applied = 0, version = 0;
    if (rc == 0)
        rc = tc_store_migrate(store, &applied);
    if (rc == 0)
        rc = tc_store_schema_version(store, &version);
    if (rc == 0) {
        if (applied)
            printf("applied %d migration%s; schema is at version %d\n", applied,
                   applied == 1 ? "" : "s", version);
        else
            printf("schema is up to date at version %d\n", version);
        tc_store_privileges_t p;
        if (tc_store_privileges(store, &p) == 0 && (!p.writer_role || !p.reader_role))
            printf("note: the role%s %s%s%s do%s not exist (%s may not create roles), so "
                   "their grants were skipped: a superuser runs CREATE ROLE ... NOLOGIN for "
                   "each and the GRANT statements of schema/005_security.sql (docs/"
                   "operator-guide.md, \"Database roles\")\n",
                   p.writer_role || p.reader_role ? "" : "s",
                   p.writer_role ? "" : "traincast_writer",
                   !p.writer_role && !p.reader_role ? " and " : "",
                   p.reader_role ? "" : "traincast_reader",
                   p.writer_role || p.reader_role ? "es" : "", p.role);
    }
    tc_store_destroy(&store);
    return rc;
}
