/* Schema migrations embedded at build time from schema/NNN_name.sql. */
#ifndef TC_STORE_MIGRATIONS_H
#define TC_STORE_MIGRATIONS_H

typedef struct {
    int version;
    const char *name;
    const char *sql;
} tc_migration_t;

extern const tc_migration_t tc_migrations[];
extern const int tc_migration_count;

#endif
