/* The schema and the database around it: the schema version the store
 * holds and the one this binary carries, migrations (under an advisory lock,
 * each in its own transaction), a database created for a store, and what
 * the connected role may do. */
#include "store_internal.h"
#include "store_migrations.h"

#include "tc_error.h"
#include "tc_log.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TC_MIGRATE_LOCK_KEY 7414172 /* advisory lock held while migrating */

int tc_store_binary_schema_version(void)
{
    return tc_migration_count > 0 ? tc_migrations[tc_migration_count - 1].version : 0;
}

int tc_store_schema_version(tc_store_t *self, int *version)
{
    PGresult *res = NULL;
    *version = 0;
    int rc = tc_store_query(self, &res, "looking for schema_version",
                            "SELECT to_regclass('schema_version') IS NOT NULL", 0, NULL);
    if (rc < 0)
        return rc;
    int exists = PQgetvalue(res, 0, 0)[0] == 't';
    PQclear(res);
    if (!exists)
        return 0;
    rc = tc_store_query(self, &res, "reading the schema version",
                        "SELECT coalesce(max(version), 0) FROM schema_version", 0, NULL);
    if (rc < 0)
        return rc;
    *version = atoi(PQgetvalue(res, 0, 0));
    PQclear(res);
    return 0;
}

int tc_store_check_schema(tc_store_t *self)
{
    int have = 0;
    int rc = tc_store_schema_version(self, &have);
    if (rc < 0)
        return rc;
    int want = tc_store_binary_schema_version();
    if (have < want)
        return tc_fail(TC_EVERSION,
                       "the database schema is at version %d but this binary needs %d: run "
                       "'aggregator migrate --db DSN' first",
                       have, want);
    if (have > want)
        return tc_fail(TC_EVERSION,
                       "the database schema is at version %d, newer than this binary's %d: "
                       "upgrade traincast before using this database",
                       have, want);
    return 0;
}

int tc_store_migrate(tc_store_t *self, int *applied)
{
    int rc;
    *applied = 0;
    char lock_sql[96];
    snprintf(lock_sql, sizeof lock_sql, "SELECT pg_advisory_lock(%d)", TC_MIGRATE_LOCK_KEY);
    rc = tc_store_query(self, NULL, "taking the migration lock", lock_sql, 0, NULL);
    if (rc < 0)
        return rc;
    rc = tc_store_query(self, NULL, "creating schema_version",
                        "CREATE TABLE IF NOT EXISTS schema_version ("
                        " version integer PRIMARY KEY,"
                        " name text NOT NULL,"
                        " applied_at timestamptz NOT NULL DEFAULT now())",
                        0, NULL);
    int have = 0;
    if (rc == 0)
        rc = tc_store_schema_version(self, &have);
    int want = tc_store_binary_schema_version();
    if (rc == 0 && have > want)
        rc = tc_fail(TC_EVERSION,
                     "the database schema is at version %d, newer than this binary's %d: "
                     "refusing to migrate; upgrade traincast",
                     have, want);
    for (int i = 0; rc == 0 && i < tc_migration_count; i++) {
        const tc_migration_t *m = &tc_migrations[i];
        if (m->version <= have)
            continue;
        rc = tc_store_begin(self);
        if (rc == 0) {
            PGresult *res = PQexec(self->conn, m->sql);
            if (!res || PQresultStatus(res) != PGRES_COMMAND_OK) {
                char what[128];
                snprintf(what, sizeof what, "migration %s", m->name);
                rc = TC_STORE_FAIL(self, res, what);
            } else {
                PQclear(res);
            }
        }
        if (rc == 0) {
            char ver[16];
            snprintf(ver, sizeof ver, "%d", m->version);
            const char *params[] = {ver, m->name};
            rc = tc_store_query(self, NULL, "recording the migration",
                                "INSERT INTO schema_version (version, name) VALUES ($1, $2)", 2,
                                params);
        }
        if (rc == 0)
            rc = tc_store_commit(self);
        if (rc < 0) {
            tc_store_rollback(self);
            break;
        }
        tc_log_info("applied migration %s", m->name);
        (*applied)++;
    }
    snprintf(lock_sql, sizeof lock_sql, "SELECT pg_advisory_unlock(%d)", TC_MIGRATE_LOCK_KEY);
    PGresult *res = PQexec(self->conn, lock_sql);
    PQclear(res);
    return rc;
}

static void s_conninfo_escape(tc_buf_t *b, const char *v)
{
    tc_buf_putc(b, '\'');
    for (const char *p = v; *p; p++) {
        if (*p == '\'' || *p == '\\')
            tc_buf_putc(b, '\\');
        tc_buf_putc(b, *p);
    }
    tc_buf_putc(b, '\'');
}

int tc_store_create_database(const char *admin_dsn, const char *name, char *dsn_out,
                             size_t dsn_size)
{
    tc_store_t *admin = NULL;
    int rc = tc_store_open(admin_dsn, &admin);
    if (rc < 0)
        return rc;
    PGresult *res = NULL;
    const char *params[] = {name};
    rc = tc_store_query(admin, &res, "looking up the database",
                        "SELECT 1 FROM pg_database WHERE datname = $1", 1, params);
    if (rc == 0) {
        int exists = PQntuples(res) > 0;
        PQclear(res);
        if (!exists) {
            char *ident = PQescapeIdentifier(admin->conn, name, strlen(name));
            if (!ident) {
                rc = TC_STORE_FAIL(admin, NULL, "escaping the database name");
            } else {
                char sql[512];
                snprintf(sql, sizeof sql, "CREATE DATABASE %s", ident);
                PQfreemem(ident);
                rc = tc_store_query(admin, NULL, "creating the database", sql, 0, NULL);
            }
        }
    }
    if (rc == 0) {
        /* Rebuild the connection string from the admin one with a new dbname. */
        PQconninfoOption *opts = PQconninfo(admin->conn);
        tc_buf_t b = {0};
        for (PQconninfoOption *o = opts; o && o->keyword; o++) {
            if (!o->val || !*o->val || !strcmp(o->keyword, "dbname"))
                continue;
            tc_buf_printf(&b, "%s=", o->keyword);
            s_conninfo_escape(&b, o->val);
            tc_buf_putc(&b, ' ');
        }
        tc_buf_puts(&b, "dbname=");
        s_conninfo_escape(&b, name);
        PQconninfoFree(opts);
        if (b.failed || b.len + 1 > dsn_size)
            rc = tc_fail(TC_ELIMIT, "connection string for %s does not fit", name);
        else
            memcpy(dsn_out, b.data, b.len + 1);
        tc_buf_free(&b);
    }
    tc_store_destroy(&admin);
    return rc;
}

/* What `aggregator serve` does to each table, as granted to
 * traincast_writer in schema/005_security.sql (and the migrations that add
 * tables it writes: 015, 016). */
static const struct {
    const char *table, *privileges;
} s_writer_grants[] = {
    {"schema_version", "SELECT"},
    {"agents", "SELECT,INSERT,UPDATE"},
    {"devices", "SELECT,INSERT,UPDATE"},
    {"models", "SELECT,INSERT,UPDATE"},
    {"jobs", "SELECT,INSERT,UPDATE"},
    {"conv_configs", "SELECT,INSERT"},
    {"conv_results", "SELECT,INSERT"},
    {"conv_algo_timings", "SELECT,INSERT"},
    {"traces", "SELECT,INSERT"},
    {"trace_iterations", "SELECT,INSERT"},
    {"trace_op_times", "SELECT,INSERT"},
    {"received_messages", "SELECT,INSERT"},
    {"job_events", "SELECT,INSERT"},
    {"agent_keys", "SELECT,INSERT"},
    {"model_layers", "SELECT,INSERT,DELETE"},
    {"model_convs", "SELECT,INSERT,DELETE"},
    {"matmul_configs", "SELECT,INSERT"},
    {"matmul_results", "SELECT,INSERT"},
    {"model_matmuls", "SELECT,INSERT,DELETE"},
};

int tc_store_privileges(tc_store_t *self, tc_store_privileges_t *out)
{
    memset(out, 0, sizeof *out);
    PGresult *res = NULL;
    int rc = tc_store_query(
        self, &res, "reading the role's privileges",
        "SELECT current_user, r.rolsuper, "
        " coalesce((SELECT tableowner = current_user FROM pg_tables"
        "           WHERE schemaname = current_schema() AND tablename = 'conv_results'), false),"
        " EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'traincast_writer'),"
        " EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'traincast_reader')"
        " FROM pg_roles r WHERE r.rolname = current_user",
        0, NULL);
    if (rc < 0)
        return rc;
    if (PQntuples(res) == 1) {
        snprintf(out->role, sizeof out->role, "%s", PQgetvalue(res, 0, 0));
        out->superuser = PQgetvalue(res, 0, 1)[0] == 't';
        out->owner = PQgetvalue(res, 0, 2)[0] == 't';
        out->writer_role = PQgetvalue(res, 0, 3)[0] == 't';
        out->reader_role = PQgetvalue(res, 0, 4)[0] == 't';
    }
    PQclear(res);
    tc_buf_t missing = {0};
    int n_missing = 0;
    for (size_t i = 0; rc == 0 && i < sizeof s_writer_grants / sizeof s_writer_grants[0]; i++) {
        char privs[64];
        snprintf(privs, sizeof privs, "%s", s_writer_grants[i].privileges);
        for (char *save = NULL, *p = strtok_r(privs, ",", &save); p && rc == 0;
             p = strtok_r(NULL, ",", &save)) {
            const char *params[] = {s_writer_grants[i].table, p};
            rc = tc_store_query(self, &res, "checking a privilege",
                                "SELECT to_regclass($1) IS NULL OR "
                                "has_table_privilege(to_regclass($1), $2)",
                                2, params);
            if (rc == 0 && PQgetvalue(res, 0, 0)[0] != 't' && n_missing++ < 4)
                tc_buf_printf(&missing, "%s%s on %s", missing.len ? ", " : "", p,
                              s_writer_grants[i].table);
            if (rc == 0)
                PQclear(res);
        }
    }
    if (rc == 0 && n_missing > 4)
        tc_buf_printf(&missing, " and %d more", n_missing - 4);
    if (rc == 0 && missing.len)
        snprintf(out->missing, sizeof out->missing, "%s", tc_buf_str(&missing));
    tc_buf_free(&missing);
    return rc;
}
