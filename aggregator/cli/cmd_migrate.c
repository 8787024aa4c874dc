#include "cli_db.h"
#include "commands.h"
#include "store.h"

#include "tc_error.h"

#include <stdio.h>

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
