/* aggregator serve: receive agents' messages over ZeroMQ (ROUTER, CURVE),
 * store them in PostgreSQL, acknowledge each only after its transaction
 * committed, and dispatch queued jobs to connected agents.
 *
 * Threads: the main loop owns the ROUTER socket (receives, validates the
 * frame, answers heartbeats, sends acks and jobs); a pool of store workers,
 * each with its own database connection, stores messages from a bounded
 * queue and hands results back over an inproc socket; the ZAP thread checks
 * agent keys against the allowlist. */
#ifndef TC_SERVER_H
#define TC_SERVER_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>

typedef struct {
    const char *listen;       /* e.g. tcp://0.0.0.0:5555 */
    const char *dsn;
    const char *keys_dir;     /* holds aggregator.key */
    const char *allowlist;    /* agent public keys */
    bool insecure;            /* no CURVE (local demo only) */
    unsigned workers;         /* store workers (0: 4) */
    unsigned batch;           /* messages per transaction, at most (0: 32) */
    size_t max_message_bytes; /* 0: TC_MAX_MESSAGE_BYTES */
    unsigned heartbeat_ms;    /* 0: 5000 */
    unsigned queue_limit;     /* messages waiting for a worker (0: 4096) */
    /* Set by signal handlers: stop (SIGTERM, SIGINT), reload (SIGHUP). */
    volatile sig_atomic_t *stop;
    volatile sig_atomic_t *reload;
} tc_server_opts_t;

/* Run until *stop. On stop: no new message is taken, the workers finish the
 * transaction they are in, the acks of what committed go out, and what was
 * still queued is dropped unacknowledged (agents send it again). */
int tc_server_run(const tc_server_opts_t *opts);

/* Default key directory: $TRAINCAST_AGGREGATOR_DIR, else
 * $HOME/.traincast/aggregator. */
void tc_server_default_keys_dir(const char *flag, char *out, size_t size);

#endif
