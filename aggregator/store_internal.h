/* Shared by store*.c only: the connection object and query helpers. */
#ifndef TC_STORE_INTERNAL_H
#define TC_STORE_INTERNAL_H

#include "store.h"
#include "store_rows.h"
#include "tc_buf.h"

#include <libpq-fe.h>

struct tc_store {
    PGconn *conn;
    char *dsn;
    int staged; /* temp staging tables created on this connection */
};

/* Turn a failed result (or connection) into a status with a message naming
 * `what`, classed by tc_store_error_code (store.h). Clears `res`. */
int tc_store_fail(tc_store_t *s, PGresult *res, const char *what, const char *file, int line);
#define TC_STORE_FAIL(s, res, what) tc_store_fail((s), (res), (what), __FILE__, __LINE__)

/* Run a statement with text parameters (NULL entries are SQL NULL). On
 * success *out holds the result (caller PQclear()s) unless out is NULL. */
int tc_store_query(tc_store_t *s, PGresult **out, const char *what, const char *sql, int nparams,
                   const char *const *params);

/* Create this connection's temp staging tables unless done already. Outside
 * any transaction only. */
int tc_store_staging(tc_store_t *s);

/* BEGIN, after making sure the staging tables exist. */
int tc_store_begin(tc_store_t *s);
int tc_store_commit(tc_store_t *s);
void tc_store_rollback(tc_store_t *s);

/* One message's writes: its own transaction, or a savepoint when the caller
 * already opened one (tc_store_batch_begin) so that several messages share a
 * commit. `nested` records which, for the matching end. */
int tc_store_msg_begin(tc_store_t *s, int *nested);
int tc_store_msg_commit(tc_store_t *s, int nested);
void tc_store_msg_rollback(tc_store_t *s, int nested);

/* Bind an agent id to the key it came with, or refuse (TC_EINVAL) a key
 * other than the bound one. No-op without a key. In the caller's
 * transaction. */
int tc_store_bind_key(tc_store_t *s, const char *agent_id, const char *key);

/* COPY ... FROM STDIN with the rows in `rows` (text format). */
int tc_store_copy(tc_store_t *s, const char *what, const char *copy_sql, const tc_buf_t *rows);

#endif
