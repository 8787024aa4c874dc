/* Shared by store*.c only: the connection object and query helpers. */
#ifndef TC_STORE_INTERNAL_H
#define TC_STORE_INTERNAL_H

#include "store.h"
#include "fit.h"
#include "store_rows.h"
#include "tc_buf.h"
#include "tc_conv.h"

#include <libpq-fe.h>
#include <stdbool.h>
#include <stdint.h>

/* Statements a connection keeps prepared, at most. */
#define TC_STORE_PREPARED_MAX 16

/* A part of the store that keeps state on a connection: a cache, a second
 * connection, rows held for a batch's COPY. The core knows parts only
 * through this table: it tells each part attached to a connection when a
 * transaction or a message's savepoint ends and when the connection goes,
 * and calls none of them by name. Every hook may be NULL. */
typedef struct tc_store_part {
    size_t size; /* of its state, calloc'ed by the core on first use */
    /* A message's savepoint opened inside an open transaction. */
    void (*mark)(void *state);
    /* The transaction ended (message false: COMMIT, committed when it
     * succeeded, or ROLLBACK), or a message's savepoint was rolled back
     * (message true, committed false). */
    void (*settle)(void *state, bool committed, bool message);
    /* The connection was replaced: what it knew is void. */
    void (*reset)(void *state);
    /* The store is destroyed: free what the state owns (not the state). */
    void (*release)(void *state);
} tc_store_part_t;
#define TC_STORE_PARTS_MAX 8

struct tc_store {
    PGconn *conn;
    char *dsn;
    /* While importing a benchmark set (store_set.c): its imports row. Then
     * messages create no agents, and a device is inserted with this import
     * id when its uuid is new and left as it is otherwise. 0 otherwise. */
    long long import_id;
    /* The SQLSTATE of the last statement that failed (TC_STORE_FAIL). */
    char sqlstate[6];
    /* Statements prepared on this connection (tc_store_query_prepared):
     * the n_prepared first, named "tc_<index>". */
    const char *prepared[TC_STORE_PREPARED_MAX];
    unsigned n_prepared;
    /* The parts attached (tc_store_part_state), in the order they came. */
    struct {
        const tc_store_part_t *part;
        void *state;
    } parts[TC_STORE_PARTS_MAX];
    size_t n_parts;
};

/* The state of `part` on this connection, attached (zeroed) on first use;
 * NULL when out of memory or when TC_STORE_PARTS_MAX parts are attached
 * (a part is a cache or can say why it failed). */
void *tc_store_part_state(tc_store_t *s, const tc_store_part_t *part);

/* The id of the conv config `key` (its batch ignored) as resolved on this
 * connection, committed or in the open transaction; 0 when not known. */
long long tc_store_config_id_get(tc_store_t *s, const tc_conv_config_t *key);
/* Note the id of `key`, resolved in the open transaction. */
void tc_store_config_id_put(tc_store_t *s, const tc_conv_config_t *key, long long id);
/* Forget every id (a statement failed with them). */
void tc_store_config_ids_clear(tc_store_t *s);

/* Forget every agent and device recorded lately (store_agents.c): their
 * rows may be gone. */
void tc_store_seen_forget(tc_store_t *s);

/* Upsert the agent of a message (with its Hello's details when `h`), and
 * a device by uuid, its id going to device_id as a decimal string
 * (store_agents.c). */
int tc_store_put_agent(tc_store_t *s, const tc_envelope_t *env, const Traincast__V1__Hello *h);
/* Lock the rows of `agent_ids` (n, may repeat; created when new) in the
 * order of their ids, inside the open transaction (tc_store_batch_begin). */
int tc_store_lock_agents(tc_store_t *s, const char *const *agent_ids, size_t n);
int tc_store_put_device(tc_store_t *s, const char *agent_id, const Traincast__V1__Device *d,
                        char device_id[32]);
/* Store the rows of a ConvResults message (store_put_conv.c). */
int tc_store_put_conv_results(tc_store_t *s, const tc_envelope_t *env);
/* The matmul results of a ConvResults message, on the device with id
 * `device_id` (store_put_matmul.c); called by tc_store_put_conv_results. */
int tc_store_put_matmul_results(tc_store_t *s, const tc_envelope_t *env, const char *device_id);
/* The ids of matmul configs cfgs[0..n_cfgs) (their minibatch ignored),
 * recorded where new: per distinct key ids[k] (the first *n_keys of ids),
 * per config of[i] its key's index. ids and of hold n_cfgs. */
int tc_store_matmul_config_ids(tc_store_t *s, const Traincast__V1__MatmulConfig *const *cfgs,
                               size_t n_cfgs, size_t *of, long long *ids, size_t *n_keys);
/* A model graph's matmul list into model_matmuls, once: when the graph
 * lists its matmuls and the stored model's are not listed yet (a model
 * stored from an older agent's graph gets them from a newer one's). */
int tc_store_put_model_matmuls(tc_store_t *s, const Traincast__V1__ModelGraph *g);

/* Turn a failed result (or connection) into a status with a message naming
 * `what`, classed by tc_store_error_code (store.h). Clears `res`. */
int tc_store_fail(tc_store_t *s, PGresult *res, const char *what, const char *file, int line);
int tc_store_fail_conn(PGconn *conn, PGresult *res, const char *what, const char *file, int line);
#define TC_STORE_FAIL(s, res, what) tc_store_fail((s), (res), (what), __FILE__, __LINE__)

/* The index of `name` in names[0..n), or n. */
size_t tc_store_name_index(const char *const *names, size_t n, const char *name);

/* The end of the run of rows from `from` on that share column `col`'s
 * value (a result ordered by that column). */
int tc_store_run_end(PGresult *res, int from, int col);

/* Append a text[] literal of `v` to `b`: {"a","b"} with " and \ escaped
 * (a NULL entry reads as ""). */
void tc_store_text_array(tc_buf_t *b, const char *const *v, size_t n);

/* Run a statement with text parameters (NULL entries are SQL NULL). On
 * success *out holds the result (caller PQclear()s) unless out is NULL. */
int tc_store_query(tc_store_t *s, PGresult **out, const char *what, const char *sql, int nparams,
                   const char *const *params);
/* The same for a statement run with every message: prepared on the
 * connection the first time (parsed and planned once, not per call). `sql`
 * must be a string literal: its address names the statement. */
int tc_store_query_prepared(tc_store_t *s, PGresult **out, const char *what, const char *sql,
                            int nparams, const char *const *params);

/* Create this connection's temp staging tables unless done already. Outside
 * any transaction only: whatever stores messages calls it before it begins
 * one (store_put.c). */
int tc_store_staging(tc_store_t *s);

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

/* The benchmarks of a conv measurement (config, batch, direction) on a
 * device name under a policy, which its time is taken from by
 * tc_fit_conv_time (the rule fit and predict share): on a GPU only those
 * measured with cuDNN `libv` (NULL or "": any). A subquery with one row
 * (batch, median_ms, stddev_ms, measured_at, result_id) per benchmark at
 * each batch of the integer array `batches`: one index scan serves every
 * batch of a config, where a look-up per batch costs an executor loop each
 * (predict asks for 10 batches at once). The arguments are SQL expressions
 * (parameters or columns). Read in binary by tc_store_conv_repeats. A
 * result that a later one supersedes (schema/018_canary.sql) reads as
 * disturbed: an uncorrelated IN, which PostgreSQL runs per benchmark as an
 * index-only scan of the partial index on supersedes_at (the few superseding
 * results): 71 ms over a study's 105 000 conv results. */
#define TC_SQL_SUPERSEDED(table)                                                                   \
    "coalesce((r.device_id, r.config_id, r.batch, r.direction, r.policy, r.measured_at) IN "     \
    "  (SELECT s.device_id, s.config_id, s.batch, s.direction, s.policy, s.supersedes_at "      \
    "   FROM " table " s WHERE s.supersedes_at IS NOT NULL), false)"
#define TC_SQL_CONV_REPEATS(dev, policy, libv, config, batches, dir)                              \
    "(SELECT r.batch, r.median_ms, r.stddev_ms, r.measured_at, r.result_id, "                    \
    "  r.disturbed OR " TC_SQL_SUPERSEDED("conv_results") " AS disturbed "                       \
    "  FROM conv_results r JOIN devices d USING (device_id) "                                     \
    "  WHERE d.name = " dev " AND r.policy = " policy                                            \
    "  AND (coalesce(" libv ", '') = '' OR d.kind <> 'cuda' OR r.library_version = " libv ") "  \
    "  AND r.config_id = " config " AND r.batch = ANY (" batches ") "                           \
    "  AND r.direction = " dir ")"

/* The same for a matmul: its results carry no library version, so a matmul
 * counts whatever the device's. */
#define TC_SQL_MATMUL_REPEATS(dev, policy, config, batches, dir)                                 \
    "(SELECT r.batch, r.median_ms, r.stddev_ms, r.measured_at, r.result_id, "                    \
    "  r.disturbed OR " TC_SQL_SUPERSEDED("matmul_results") " AS disturbed "                     \
    "  FROM matmul_results r JOIN devices d USING (device_id) "                                   \
    "  WHERE d.name = " dev " AND r.policy = " policy " AND r.config_id = " config                \
    "  AND r.batch = ANY (" batches ") AND r.direction = " dir ")"

/* Rows (grp int4, batch int4, then TC_SQL_CONV_REPEATS's (or
 * TC_SQL_MATMUL_REPEATS') median_ms,
 * stddev_ms, measured_at, result_id, disturbed; any columns after) in
 * binary format (tc_store_query_binary), grouped: `each` is called once per
 * distinct (grp, batch), in ascending order, with its benchmarks r[0..n)
 * (which it may reorder) and the index of one of its rows (for the columns
 * after). A row without a result_id (an outer join that found none) is no
 * benchmark: its (grp, batch) is called with n = 0. A disturbed benchmark
 * (taken while the machine was busy) is passed only where the group has no
 * quiet one. TC_ENOMEM, or 0. */
typedef void (*tc_store_repeats_fn)(void *ctx, long grp, unsigned batch, int row,
                                    tc_fit_repeat_t *r, size_t n);
int tc_store_conv_repeats(const PGresult *res, tc_store_repeats_fn each, void *ctx);
/* An int4 of a binary-format result (not NULL). */
int32_t tc_store_bin_int4(const PGresult *res, int row, int col);

/* A point's measured time from trace_summary `ts` by the same statistic. */
#define TC_SQL_TRACE_STAT(stat)                                                                  \
    "CASE (" stat ")::text WHEN 'min' THEN ts.min_ms WHEN 'p10' THEN ts.p10_ms "                  \
    "WHEN 'median' THEN ts.median_ms ELSE ts.geomean_ms END"

/* The same statistic of one half of the point's traces in time order (half
 * "a", the odd-numbered, or "b"): the median's halves serve min and p10 too. */
#define TC_SQL_TRACE_HALF(stat, half)                                                            \
    "CASE WHEN (" stat ")::text IN ('median', 'p10', 'min') THEN ts.half_" half "_ms "          \
    "ELSE ts.half_" half "_geomean_ms END"

/* libpq's notice processor of every connection: its notices and the
 * messages it gets outside a query (a server that terminates the
 * connection, say) go through the log, prefixed, one line each. */
void tc_store_notice(void *arg, const char *message);

/* tc_store_query with the result in binary format (each type's send
 * format, in network byte order). */
int tc_store_query_binary(tc_store_t *s, PGresult **out, const char *what, const char *sql,
                          int nparams, const char *const *params);

/* Run `sql` (one parameter) twice at once: with params[0] on the store's
 * connection and params[1] on a second one, their results to out[0] and
 * out[1]. The second connection is opened on first use and kept; inside a
 * transaction, or when it cannot be opened, both run on the store's own
 * connection, one after the other, and a second connection lost on the way
 * has its share run there too (a new one opens next time). Results are in
 * binary format (tc_store_query_binary). On failure nothing is returned. */
int tc_store_query_pair(tc_store_t *s, const char *what, const char *sql, const char *params[2],
                        PGresult *out[2]);

/* While a batch is open (tc_store_batch_begin), conv results and algorithm
 * timings are held as binary rows and COPYed together when it commits,
 * instead of two COPYs per message (store_put_conv.c): on or off. */
void tc_store_conv_defer(tc_store_t *s, bool on);
/* COPY what the open batch deferred, and forget it (also when the COPY
 * fails). */
int tc_store_conv_flush(tc_store_t *s);

/* COPY ... FROM STDIN with the rows in `rows` (text format). */
int tc_store_copy(tc_store_t *s, const char *what, const char *copy_sql, const tc_buf_t *rows);
/* The same with rows in COPY's binary format (tc_rows_conv_results): the
 * stream's header and trailer are sent around them. */
int tc_store_copy_binary(tc_store_t *s, const char *what, const char *copy_sql,
                         const tc_buf_t *rows);

#endif
