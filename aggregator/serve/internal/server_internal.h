/* Shared by server*.c only: store workers and the job dispatcher. */
#ifndef TC_SERVER_INTERNAL_H
#define TC_SERVER_INTERNAL_H

#include "store_server.h"
#include "tc_wire.h"
#include "tc_zmq.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#define TC_ROUTE_MAX 256

/* The server's clock: monotonic milliseconds. Here, where server.c, the
 * workers and the dispatcher all read it, so that none of them depends on
 * another for it. */
static inline int64_t tc_server_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---- store workers (server_workers.c) ---- */

typedef enum {
    TC_WORK_STORED = 0,
    TC_WORK_DUPLICATE,
    TC_WORK_REJECTED, /* can never be stored: permanent Nack */
    TC_WORK_DEFERRED, /* failed for now: transient Nack */
    TC_WORK_DROPPED,  /* no answer (heartbeats, shutdown) */
    TC_WORK_REVOKED,  /* its key left the allowlist: not stored, the agent keeps it */
} tc_work_outcome_t;

typedef struct tc_work tc_work_t;
struct tc_work {
    tc_envelope_t *env;           /* owned */
    uint8_t route[TC_ROUTE_MAX];  /* the connection it came from */
    size_t route_len;
    char key[TC_KEY_Z85_LEN + 1]; /* the sender's CURVE key; "" without CURVE */
    tc_work_outcome_t outcome;
    bool job_terminal;            /* a JobProgress that finished its job */
    bool ordered;                 /* counted in its agent's order (server_workers.c) */
    bool spilled;                 /* away from its agent's worker: stored alone */
    char reason[1024];
    tc_work_t *next;
};

void tc_work_free(tc_work_t *w);

typedef struct tc_workers tc_workers_t;

/* Start `n` workers, each with its own connection to `dsn`, storing up to
 * `batch` waiting messages per transaction. Finished work is sent (as a
 * pointer) to the PULL socket bound at `done_endpoint` on `ctx`. */
int tc_workers_start(void *ctx, const char *dsn, unsigned n, unsigned batch,
                     const char *done_endpoint, tc_workers_t **out);
/* Queue work (never blocks): to its agent's worker (conv results to an
 * idle one when that worker is behind), any message but conv results once
 * all its agent sent before it is done, and nothing ahead of what its agent
 * sent before (held until then). The server loop's thread only, as
 * tc_workers_done. */
void tc_workers_push(tc_workers_t *self, tc_work_t *w);
/* A pushed item came back done (stored, refused, deferred or dropped): its
 * agent's held messages that may go now are handed out. */
void tc_workers_done(tc_workers_t *self, const tc_work_t *w);
size_t tc_workers_queued(tc_workers_t *self);
/* Before storing, each worker asks `allowed` (from its own thread) whether
 * the message's CURVE key may still store; one that may not is answered
 * TC_WORK_REVOKED. Set before the first push. */
typedef bool (*tc_key_check_fn)(void *arg, const char *key_z85);
void tc_workers_set_key_check(tc_workers_t *self, tc_key_check_fn allowed, void *arg);
/* Hold storing while the allowlist changes: once tc_workers_pause returns,
 * no worker is between checking a key and committing (it waits up to
 * `timeout_ms` for those that are; false when one still is), and none
 * starts until tc_workers_resume. */
bool tc_workers_pause(tc_workers_t *self, int timeout_ms);
void tc_workers_resume(tc_workers_t *self);
/* Messages waiting because the database is unavailable (0 when it is up). */
bool tc_workers_db_down(tc_workers_t *self);
/* Stop: each worker finishes the message it is storing (its result is sent
 * as usual), then exits. Returns what was still queued (a list the caller
 * frees, unacknowledged). */
tc_work_t *tc_workers_stop(tc_workers_t **self_p);

/* ---- connected agents and job dispatch (dispatch.c) ---- */

typedef struct tc_dispatch tc_dispatch_t;

int tc_dispatch_new(const char *dsn, unsigned heartbeat_ms, tc_dispatch_t **out);
void tc_dispatch_destroy(tc_dispatch_t **self_p);

/* A session message (hello, heartbeat, job progress) arrived from
 * `agent_id` over `route` with CURVE key `key` (NULL without CURVE):
 * remember the route (jobs go to the latest one). False, and nothing
 * remembered, when the id belongs to another key (schema/005_security.sql). */
bool tc_dispatch_heard(tc_dispatch_t *self, const char *agent_id, const uint8_t *route,
                       size_t route_len, const char *key);
void tc_dispatch_hello(tc_dispatch_t *self, const char *agent_id,
                       const Traincast__V1__Hello *hello);
void tc_dispatch_heartbeat(tc_dispatch_t *self, const char *agent_id,
                           const char *running_job_id);
/* A JobProgress that ended a job was stored. */
void tc_dispatch_job_ended(tc_dispatch_t *self, const char *agent_id, const char *job_id);

/* The notification connection's socket for poll (-1 when down). */
int tc_dispatch_fd(tc_dispatch_t *self);
/* Read notifications (when the fd is readable). */
void tc_dispatch_readable(tc_dispatch_t *self);
/* Periodic work and dispatch: reconnect to the database, requeue jobs whose
 * agent vanished or stopped running them, send queued jobs to idle agents
 * over `router`. Cheap when there is nothing to do. */
void tc_dispatch_tick(tc_dispatch_t *self, void *router);

#endif
