/* The agent's connection to the aggregator: a ZeroMQ DEALER socket that
 * delivers everything waiting in the journal and keeps the session alive.
 *
 * Delivery: up to `window` waiting messages are in flight at once, oldest
 * first. A message stops waiting only when its Ack arrives; a permanent
 * Nack marks it refused, with the reason; a message without an answer is sent again
 * after ack_timeout_ms, then after twice that, up to max_backoff_ms. On every
 * (re)connection a Hello goes out and all unacknowledged messages are sent
 * again. Heartbeats carry the backlog; an aggregator silent for three
 * heartbeat intervals gets a fresh connection.
 *
 * Several aggregators (`serve` processes on one database, the endpoint a
 * comma-separated list): the socket connects to each and sends to the
 * connected ones in turn; when one is lost, what it held unanswered is sent
 * again at once to the others. The database stores each message once
 * whichever process receives it or its resend.
 *
 * Ack log (opt-in, for measuring): with TRAINCAST_ACK_LOG=FILE set, the link
 * appends one tab-separated line per message the aggregator answers for
 * good: message id, first send and answer (microseconds since the epoch),
 * latency from first send to answer (microseconds, monotonic clock), number
 * of sends, and the outcome (stored, duplicate or rejected). Lines are
 * written as the answers arrive (line-buffered); a file that cannot be
 * opened fails tc_link_new.
 *
 * A link is used from one thread; other threads hand it work through the
 * journal (thread-safe). Library code: nothing here exits or prints except
 * through tc_log. */
#ifndef TC_LINK_H
#define TC_LINK_H

#include "journal.h"
#include "tc_zmq.h"

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct tc_link tc_link_t;

/* A job request (bench_request or trace_request) from the aggregator. `env`
 * is valid during the call only. */
typedef void (*tc_link_job_fn)(void *arg, const tc_envelope_t *env);

typedef struct {
    const char *endpoint;       /* tcp://HOST:PORT, or several separated by commas */
    const char *agent_id;
    const tc_keypair_t *keys;   /* this agent's keys; NULL with insecure */
    const char *server_key;     /* the aggregator's public key (z85); NULL with insecure */
    bool insecure;              /* no CURVE: a trusted local network only */
    unsigned window;            /* messages in flight (0: 32) */
    unsigned heartbeat_ms;      /* 0: 5000 */
    unsigned ack_timeout_ms;    /* first resend after this (0: 10000) */
    unsigned max_backoff_ms;    /* longest wait between resends (0: 60000) */
    size_t max_message_bytes;   /* 0: TC_MAX_MESSAGE_BYTES */
    /* Sent on each connection; its agent_name must be set. Copied. */
    const Traincast__V1__Hello *hello;
    tc_link_job_fn on_job;      /* may be NULL: jobs are refused */
    void *job_arg;
} tc_link_opts_t;

typedef struct {
    bool connected;
    uint64_t connections;       /* successful handshakes so far */
    uint64_t sent;              /* sends, resends included */
    uint64_t acked;             /* stored by the aggregator */
    uint64_t duplicates;        /* acked as stored before */
    uint64_t rejected;          /* permanent Nacks */
    uint64_t deferred;          /* transient Nacks */
    uint64_t auth_failures;     /* handshakes refused by the aggregator (ZAP) */
    uint64_t handshake_failures;/* other failed handshakes (mechanism mismatch, cut off) */
    bool revoked;               /* the aggregator removed this agent's key: nothing is sent */
    size_t in_flight;
    size_t waiting;
} tc_link_stats_t;

/* Create the socket and start connecting. `journal` is borrowed. */
int tc_link_new(const tc_link_opts_t *opts, tc_journal_t *journal, tc_link_t **out);
void tc_link_destroy(tc_link_t **self_p);

/* Receive and send for up to `timeout_ms` (returns earlier once something
 * was handled). Returns 0 or a negative code on a failure of this side, or
 * TC_ENET once the aggregator said it removed this agent's key (nothing
 * more is sent; the journal keeps what waits). */
int tc_link_step(tc_link_t *self, int timeout_ms);

/* Replace the Hello sent on the next connection (e.g. after a job starts or
 * ends). Copied. */
int tc_link_set_hello(tc_link_t *self, const Traincast__V1__Hello *hello);

/* The job id heartbeats report as running ("" or NULL: none). */
void tc_link_set_running_job(tc_link_t *self, const char *job_id);

void tc_link_stats(tc_link_t *self, tc_link_stats_t *out);

/* Step until nothing waits in the journal. Fails with TC_ETIMEOUT after `timeout_ms`
 * (<= 0: no limit), TC_EINTR when *stop becomes set, or TC_ENET as soon as
 * the aggregator refuses this agent's key or says it removed it. With `show_progress`, a progress
 * bar counts acknowledged messages. */
int tc_link_drain(tc_link_t *self, int64_t timeout_ms, volatile sig_atomic_t *stop,
                  bool show_progress);

/* Monotonic milliseconds (for callers' own timing). */
int64_t tc_link_now_ms(void);

#endif
