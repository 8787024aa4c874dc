/* The database the aggregator's commands open: the --db option, its
 * default, and the start of a command whose only option it is. */
#ifndef TC_CLI_DB_H
#define TC_CLI_DB_H

#include "tc_cli.h"

/* The --db value, falling back to $TRAINCAST_DB, else "": libpq's own
 * environment (PGHOST, PGPORT, PGDATABASE, PGUSER, PGSERVICE, PGPASSFILE,
 * ~/.pgpass, ...) then decides, as for psql. Never NULL. */
const char *tc_default_dsn(const char *flag_value);

/* The --db option of every command that opens the database. */
#define TC_DB_HELP                                                                             \
    "PostgreSQL connection string (default: $TRAINCAST_DB, else libpq's environment: "         \
    "PGHOST, PGDATABASE, PGSERVICE, ~/.pgpass, ...)"
#define TC_DB_OPT(dest) {"db", TC_OPT_STR, (dest), "DSN", TC_DB_HELP}

struct tc_store;
/* A command whose only option is --db: parse argv with `prog` and `summary`
 * for the help, then open the store. 0 with *store set; 0 with *store NULL
 * when --help was shown; a negative tc error otherwise. `check_schema`
 * refuses a database whose schema is not this binary's. */
int tc_db_command(const char *prog, const char *summary, int check_schema, int argc,
                  char **argv, struct tc_store **store);

#endif
