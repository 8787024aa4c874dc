/* The PostgreSQL store: the only module that talks to the database.
 *
 * A tc_store_t owns one connection. Writes of a message happen in one
 * transaction, idempotent on the envelope's message id. Errors:
 *   TC_EINVAL / TC_EVERSION  the message can never be stored (reject it);
 *   TC_EDB                   the database failed (retry later);
 * each with a message naming what went wrong. No libpq type crosses this
 * header. */
#ifndef TC_STORE_H
#define TC_STORE_H

#include "tc_wire.h"

#include <stdbool.h>
#include <stddef.h>

typedef struct tc_store tc_store_t;

typedef enum {
    TC_STORE_STORED = 0,
    TC_STORE_DUPLICATE = 1, /* the message id was stored before; nothing written */
} tc_store_outcome_t;

/* How a failed statement is classed, from its SQLSTATE (NULL when the server
 * gave none) and whether the connection is still up:
 *   TC_EDB    an outage: no connection, the server shutting down or short of
 *             resources, authentication or privileges (an operator's
 *             setting), or a conflict with another transaction (serialization
 *             failure, deadlock, lock not available). Nothing is wrong with
 *             the message; hold it and retry.
 *   TC_EINVAL anything else: the message itself cannot be stored (bad data,
 *             a constraint, a value out of range); refuse it for good. */
int tc_store_error_code(const char *sqlstate, bool connected);

/* Connect. `dsn` is a libpq connection string or URI; "" or NULL leaves
 * everything to libpq's defaults and environment (PGHOST, PGDATABASE,
 * PGSERVICE, PGPASSFILE, ...). */
int tc_store_open(const char *dsn, tc_store_t **out);
/* Close and free. Accepts NULL; nulls the pointer. */
void tc_store_destroy(tc_store_t **self_p);

/* Start opening, in the background, the second connection that large conv
 * look-ups (tc_store_conv_lookup) split onto, so that its start overlaps
 * the caller's other work. Optional: a look-up that needs it opens it
 * itself; one that cannot is run on the store's own connection. */
void tc_store_side_begin(tc_store_t *s);

/* Reconnect if the connection was lost. Returns 0 when usable. */
int tc_store_ensure_connected(tc_store_t *self);

/* The schema version this binary carries (highest embedded migration). */
int tc_store_binary_schema_version(void);
/* The database's version (0 for an empty database). */
int tc_store_schema_version(tc_store_t *self, int *version);
/* Apply pending migrations, each in its own transaction. Refuses (TC_EVERSION)
 * a database newer than this binary. `applied` gets how many ran. */
int tc_store_migrate(tc_store_t *self, int *applied);
/* TC_EVERSION unless the database is exactly at this binary's version,
 * with a message saying what to run. */
int tc_store_check_schema(tc_store_t *self);

/* Validate and store one envelope carrying hello, conv_results, model_graph
 * or train_trace. A heartbeat only updates the agent's last-seen time and
 * backlog (no message id is recorded). */
int tc_store_put(tc_store_t *self, const tc_envelope_t *env, tc_store_outcome_t *outcome);

/* The privileges of the connected role, for `aggregator serve`:
 * `superuser` and `owner` (it owns the tables) say it may do far more than
 * storing needs; `missing` gets the privileges of the traincast_writer role
 * (schema/005_security.sql) that it lacks, e.g. "INSERT on conv_results,
 * ..." ("" when none). `role` gets its name. */
typedef struct {
    char role[128];
    bool superuser, owner;
    bool writer_role, reader_role; /* the two group roles exist */
    char missing[1024];
} tc_store_privileges_t;
int tc_store_privileges(tc_store_t *self, tc_store_privileges_t *out);

/* The public key bound to `agent_id` (schema/005_security.sql) into key
 * (41 bytes); *found false when the id is not bound yet. */
int tc_store_agent_key(tc_store_t *self, const char *agent_id, char key[41], bool *found);

/* As tc_store_put, for a message that came with the CURVE public key
 * `key` (z85; NULL when the connection had none): the message's agent id is
 * bound to the first key that stores under it, and a message under an id
 * bound to another key is refused (TC_EINVAL naming both). */
int tc_store_put_from(tc_store_t *self, const tc_envelope_t *env, const char *key,
                      tc_store_outcome_t *outcome);

/* Create database `name` (if absent) through the server at `admin_dsn`, and
 * write a connection string for it into dsn_out. For tests and tools. */
int tc_store_create_database(const char *admin_dsn, const char *name, char *dsn_out,
                             size_t dsn_size);

/* Run one SQL statement without parameters (administration, tests). When the
 * statement returns rows, the first column of the first row is copied into
 * `first_value` (may be NULL). */
int tc_store_exec(tc_store_t *self, const char *sql, char *first_value, size_t size);

#endif
