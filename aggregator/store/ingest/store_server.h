/* The store's jobs queue (schema/004_jobs.sql), notifications, and plain
 * row queries for reports. Part of the store: the code is in store_server.c,
 * no libpq type crosses this header, errors as in store.h (TC_EINVAL for
 * what can never be stored, TC_EDB for database failures). */
#ifndef TC_STORE_SERVER_H
#define TC_STORE_SERVER_H

#include "store.h"
#include "tc_validate.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TC_JOB_ID_MAX TC_MAX_JOB_ID_LEN
/* LISTEN channels. */
#define TC_CHANNEL_JOBS "traincast_jobs"                 /* a job became queued */
#define TC_CHANNEL_JOB_PROGRESS "traincast_job_progress" /* a job changed */

/* Queue a job: kind "bench" (request = packed BenchRequest) or "trace"
 * (packed TraceRequest), for any device named `device_name` or exactly the
 * device `device_uuid` (one of them may be NULL). `summary` (may be NULL) is
 * shown in listings. The new job's id goes to job_id. */
int tc_store_job_enqueue(tc_store_t *self, const char *kind, const char *device_name,
                         const char *device_uuid, const uint8_t *request, size_t request_len,
                         const char *summary, char job_id[TC_MSGID_LEN + 1]);

typedef struct {
    char job_id[TC_JOB_ID_MAX + 1];
    char kind[8];
    char device_uuid[TC_MAX_NAME_LEN + 1];
    uint8_t *request; /* owned; free with tc_store_job_clear */
    size_t request_len;
} tc_store_job_t;

/* Claim the oldest queued job that one of an agent's devices can run
 * (uuids[i], names[i] for i < n): it becomes 'dispatched' to `agent_id` on
 * that device. *found is false when there is none. */
int tc_store_job_claim(tc_store_t *self, const char *agent_id, const char *const *uuids,
                       const char *const *names, size_t n, tc_store_job_t *out, bool *found);
void tc_store_job_clear(tc_store_job_t *job);

/* Store one JobProgress envelope in one transaction, idempotent on its
 * message id: the event is kept, and the job row follows it while the job
 * is still assigned to the sending agent. *terminal is set when the job is
 * now done or failed. An unknown job id is TC_EINVAL. `key` as for
 * tc_store_put_from. */
int tc_store_job_progress(tc_store_t *self, const tc_envelope_t *env, const char *key,
                          tc_store_outcome_t *outcome, bool *terminal);

/* Return a dispatched or running job to the queue, or fail it with `why`
 * once it has been dispatched `max_attempts` times. *state_out (may be NULL)
 * gets "queued", "failed" or "" when the job was no longer active. */
int tc_store_job_requeue(tc_store_t *self, const char *job_id, const char *why,
                         int max_attempts, char *state_out, size_t size);

/* How many agents that take jobs, heard from in the last `within_s`
 * seconds, have a device named `device_name` (0: no job for that device
 * would run now). */
int tc_store_device_online(tc_store_t *self, const char *device_name, int within_s, int *agents);

typedef struct {
    char state[16]; /* queued, dispatched, running, done, failed */
    uint32_t done, total;
    char message[TC_MAX_TEXT_LEN + 1];
} tc_store_job_status_t;

/* A job's state and progress. TC_ENOTFOUND when there is no such job. */
int tc_store_job_status(tc_store_t *self, const char *job_id, tc_store_job_status_t *out);

/* Called by tc_store_job_wait whenever a job's state or progress changed. */
typedef void (*tc_store_job_fn)(void *arg, const char *job_id, const tc_store_job_status_t *st);

/* Wait until each of the jobs is done or failed (LISTENing on
 * TC_CHANNEL_JOB_PROGRESS, and looking at least every 2 s). `fn` (may be
 * NULL) sees every change. TC_ETIMEOUT after `timeout_ms` (<= 0: no limit);
 * TC_ENOTFOUND for an unknown job id. */
int tc_store_job_wait(tc_store_t *self, const char *const *job_ids, size_t n, int timeout_ms,
                      tc_store_job_fn fn, void *arg);

/* Several messages in one transaction: between batch_begin and
 * batch_commit, tc_store_put and tc_store_job_progress write each message
 * under a savepoint (a message that fails is undone alone) and nothing is
 * durable before batch_commit returns 0. The rows of the batch's conv
 * results and their timings are written by batch_commit, in one COPY each
 * for the whole batch; should that COPY refuse a row for its content
 * (TC_EINVAL: a constraint added by hand, say), no message can be told
 * from the others: store them again one at a time (without a batch), so
 * that only the one that carried the row is refused. After a failure call
 * batch_rollback: none of the batch was stored. `agent_ids` (n of them, may
 * repeat; NULL and 0 when unknown) are the agents whose messages the batch
 * holds: their rows are taken first, in the order of their ids, so that
 * two aggregators storing batches of the same agents at once wait for
 * each other instead of deadlocking. */
int tc_store_batch_begin(tc_store_t *self, const char *const *agent_ids, size_t n);
int tc_store_batch_commit(tc_store_t *self);
void tc_store_batch_rollback(tc_store_t *self);

/* Record whether an agent takes jobs (from its Hello). */
int tc_store_set_accepts_jobs(tc_store_t *self, const char *agent_id, bool accepts);

/* LISTEN on a channel (again after a reconnect). */
int tc_store_listen(tc_store_t *self, const char *channel);
/* The connection's socket for poll(), or -1 when not connected. */
int tc_store_socket(tc_store_t *self);
/* Read what the server sent; *count gets the notifications that arrived.
 * TC_EDB when the connection is broken. */
int tc_store_notifications(tc_store_t *self, int *count);

/* Run a query with text parameters and call `fn` for each row: values[i] is
 * NULL for SQL NULL. `fn` returns 0 to go on. */
typedef int (*tc_store_row_fn)(void *arg, int ncols, const char *const *names,
                               const char *const *values);
int tc_store_select(tc_store_t *self, const char *what, const char *sql, int nparams,
                    const char *const *params, tc_store_row_fn fn, void *arg);

#endif
