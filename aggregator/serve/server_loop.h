/* The server loop's state, shared by server.c (setup, the poll loop,
 * shutdown) and server_recv.c (receiving and answering). Private to those
 * two files. */
#ifndef TC_SERVER_LOOP_H
#define TC_SERVER_LOOP_H

#include "server.h"
#include "server_internal.h"
#include "zap.h"

#include "tc_log.h"

#include <stdint.h>

#define TC_IDSET_BUCKETS 4096u

/* Message ids queued or being stored: a resend of one of them is dropped
 * (its ack follows when the first copy is stored). */
typedef struct tc_idnode {
    char id[TC_MSGID_LEN + 1];
    struct tc_idnode *next;
} tc_idnode_t;

typedef struct {
    tc_idnode_t *b[TC_IDSET_BUCKETS];
} tc_idset_t;

/* A connection the ROUTER accepted, by its file descriptor (the monitor's
 * ACCEPTED and DISCONNECTED events carry it, as each message does): where
 * it came from and what it carried, so that its closing is told as it
 * was. */
typedef struct {
    bool open;
    char peer[64];
    int64_t opened_ms;
    uint64_t messages;
    char key[TC_KEY_Z85_LEN + 1];
} tc_conn_t;

typedef struct {
    tc_server_opts_t o;
    void *ctx, *router, *mon, *done;
    tc_zap_t *zap;
    tc_workers_t *workers;
    tc_dispatch_t *dispatch;
    tc_idset_t *inflight;
    uint64_t n_stored, n_dup, n_rejected, n_deferred, n_bad, n_revoked;
    uint64_t shown_stored, shown_dup, shown_rejected, shown_revoked;
    int64_t next_stats_ms;
    tc_ratelimit_t refusal_lines; /* refused and rejected messages (authenticated peers) */
    tc_ratelimit_t peer_lines;    /* what any peer can cause: failed handshakes, connections
                                   * closed without a message */
    tc_conn_t *conns;             /* by file descriptor */
    size_t n_conns;
} tc_server_t;

/* Take up to 512 waiting messages from the ROUTER socket: check each,
 * answer what needs no store, queue the rest for the store workers. */
void tc_server_receive(tc_server_t *s);
/* Answer what the store workers finished; `flags` for zmq_recv
 * (ZMQ_DONTWAIT: only what is there). */
void tc_server_collect(tc_server_t *s, int flags);
/* A message came over connection `fd` (-1: unknown) from `key` (NULL
 * without CURVE). */
void tc_server_conn_message(tc_server_t *s, int fd, const char *key);
/* Free every id in the set (not the set). */
void tc_idset_clear(tc_idset_t *s);

#endif
