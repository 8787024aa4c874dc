/* The server loop: waiting for the database, the ROUTER socket (CURVE,
 * monitor), the poll loop, connection events, the periodic summary and
 * shutdown. Receiving, checking and answering messages is in
 * server_recv.c. */
#include "server.h"
#include "server_internal.h"
#include "server_loop.h"
#include "store.h"
#include "zap.h"

#include "tc_error.h"
#include "tc_log.h"
#include "tc_paths.h"
#include "tc_zmq.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <zmq.h>

#define S_DEFAULT_WORKERS 4u
#define S_DEFAULT_BATCH 32u
#define S_DEFAULT_HEARTBEAT_MS 5000u
#define S_DEFAULT_QUEUE_LIMIT 4096u
#define S_STATS_EVERY_MS 30000
#define S_TRANSPORT_SLACK (1u << 20) /* frames over max + this are cut off by ZeroMQ */

#define S_LOG_BURST 20 /* refusal lines a minute (authenticated peers) */
/* Lines about peers before they authenticate, a minute; with the ZAP
 * handler's 10 and one summary each, at most 28 lines in any minute
 * whatever any number of connections do. */
#define S_PEER_LOG_BURST 16
#define S_MAX_FD (1 << 20)
#define S_RELOAD_WAIT_MS 10000

static void s_log_suppressed(tc_server_t *s)
{
    int64_t now = tc_server_now_ms();
    unsigned n = tc_ratelimit_flush(&s->refusal_lines, now);
    if (n)
        tc_log_warn("%u more refused or rejected message%s not logged (at most %d lines a "
                    "minute; the counts are in the periodic summary)",
                    n, n == 1 ? " was" : "s were", S_LOG_BURST);
    n = tc_ratelimit_flush(&s->peer_lines, now);
    if (n)
        tc_log_warn("%u more line%s about connections that failed their handshake or closed "
                    "without a message not logged (at most %d a minute)",
                    n, n == 1 ? "" : "s", S_PEER_LOG_BURST);
}

static bool s_key_allowed(void *arg, const char *key_z85)
{
    return tc_zap_allows(arg, key_z85);
}

/* ---- connections by file descriptor ---- */

static tc_conn_t *s_conn(tc_server_t *s, int fd, bool grow)
{
    if (fd < 0 || fd >= S_MAX_FD)
        return NULL;
    if ((size_t)fd >= s->n_conns) {
        if (!grow)
            return NULL;
        size_t n = s->n_conns ? s->n_conns : 64;
        while (n <= (size_t)fd)
            n *= 2;
        tc_conn_t *c = realloc(s->conns, n * sizeof *c);
        if (!c)
            return NULL; /* only the wording of a log line is lost */
        memset(c + s->n_conns, 0, (n - s->n_conns) * sizeof *c);
        s->conns = c;
        s->n_conns = n;
    }
    return &s->conns[fd];
}

static void s_conn_opened(tc_server_t *s, int fd)
{
    tc_conn_t *c = s_conn(s, fd, true);
    if (!c)
        return;
    memset(c, 0, sizeof *c);
    c->open = true;
    c->opened_ms = tc_server_now_ms();
    c->peer[0] = '\0'; /* unknown: gone before it could be read */
    struct sockaddr_storage sa;
    socklen_t len = sizeof sa;
    char host[INET6_ADDRSTRLEN] = "";
    if (getpeername(fd, (struct sockaddr *)&sa, &len) != 0)
        return;
    if (sa.ss_family == AF_INET) {
        const struct sockaddr_in *in = (const struct sockaddr_in *)&sa;
        inet_ntop(AF_INET, &in->sin_addr, host, sizeof host);
        snprintf(c->peer, sizeof c->peer, "%s:%u", host, ntohs(in->sin_port));
    } else if (sa.ss_family == AF_INET6) {
        const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)&sa;
        inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof host);
        snprintf(c->peer, sizeof c->peer, "[%s]:%u", host, ntohs(in6->sin6_port));
    }
}

void tc_server_conn_message(tc_server_t *s, int fd, const char *key)
{
    tc_conn_t *c = s_conn(s, fd, false);
    if (!c || !c->open)
        return;
    c->messages++;
    if (key && !c->key[0])
        snprintf(c->key, sizeof c->key, "%s", key);
}

/* A closed connection, told as it was: an agent's after its messages (info:
 * it authenticated), or one that never delivered a message (any peer can
 * cause that: rate-limited). */
static void s_conn_closed(tc_server_t *s, int fd)
{
    tc_conn_t *c = s_conn(s, fd, false);
    int64_t now = tc_server_now_ms();
    if (c && c->open && c->messages > 0) {
        tc_log_info("the connection%s%s%s%s closed after %llu message%s (the agent "
                    "disconnected, or ZeroMQ cut it off for a frame over %zu bytes)",
                    c->peer[0] ? " from " : "", c->peer, c->key[0] ? " of agent key " : "", c->key,
                    (unsigned long long)c->messages, c->messages == 1 ? "" : "s",
                    s->o.max_message_bytes + S_TRANSPORT_SLACK);
    } else if (tc_ratelimit_allow(&s->peer_lines, now)) {
        if (c && c->open)
            tc_log_info("a connection%s%s closed %.1f s after it opened, without delivering a "
                        "message",
                        c->peer[0] ? " from " : "", c->peer,
                        (double)(now - c->opened_ms) / 1000.0);
        else
            tc_log_info("a connection closed without delivering a message");
    }
    if (c)
        c->open = false;
}

void tc_server_default_keys_dir(const char *flag, char *out, size_t size)
{
    tc_state_dir(flag, "TRAINCAST_AGGREGATOR_DIR", "aggregator", out, size);
}

static void s_events(tc_server_t *s)
{
    uint16_t ev;
    uint32_t val;
    char addr[256];
    while (tc_zmq_monitor_read(s->mon, &ev, &val, addr, sizeof addr) == 1) {
        switch (ev) {
        case ZMQ_EVENT_ACCEPTED:
            s_conn_opened(s, (int)val);
            tc_log_debug("connection on %s (descriptor %u)", addr, val);
            break;
        case ZMQ_EVENT_DISCONNECTED:
            s_conn_closed(s, (int)val);
            break;
        case ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL:
        case ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL:
            if (!tc_ratelimit_allow(&s->peer_lines, tc_server_now_ms()))
                break;
            tc_log_warn("a handshake on %s failed (%s, code 0x%x): an agent must use CURVE "
                        "with this aggregator's public key%s",
                        addr, tc_zmq_event_name(ev), val,
                        s->o.insecure ? " (this aggregator runs --insecure)" : "");
            break;
        case ZMQ_EVENT_HANDSHAKE_FAILED_AUTH:
            tc_log_debug("handshake with %s refused (status %u)", addr, val);
            break;
        default:
            break;
        }
    }
}

static void s_stats(tc_server_t *s, bool force)
{
    s_log_suppressed(s);
    int64_t now = tc_server_now_ms();
    if (!force && now < s->next_stats_ms)
        return;
    s->next_stats_ms = now + S_STATS_EVERY_MS;
    if (!force && s->n_stored == s->shown_stored && s->n_dup == s->shown_dup &&
        s->n_rejected == s->shown_rejected && s->n_revoked == s->shown_revoked)
        return;
    char revoked[96] = "";
    if (s->n_revoked)
        snprintf(revoked, sizeof revoked, ", %llu refused for a removed key",
                 (unsigned long long)s->n_revoked);
    tc_log_info("stored %llu message%s (%llu duplicate, %llu rejected, %llu deferred, %llu "
                "unreadable%s) so far; %zu waiting",
                (unsigned long long)s->n_stored, s->n_stored == 1 ? "" : "s",
                (unsigned long long)s->n_dup, (unsigned long long)s->n_rejected,
                (unsigned long long)s->n_deferred, (unsigned long long)s->n_bad, revoked,
                s->workers ? tc_workers_queued(s->workers) : (size_t)0);
    s->shown_stored = s->n_stored;
    s->shown_dup = s->n_dup;
    s->shown_revoked = s->n_revoked;
    s->shown_rejected = s->n_rejected;
}

/* ---- setup ---- */

static void s_sleep_unless_stopped(tc_server_t *s, int ms)
{
    while (ms > 0 && !*s->o.stop) {
        int slice = ms < 100 ? ms : 100;
        struct timespec ts = {0, slice * 1000000L};
        nanosleep(&ts, NULL);
        ms -= slice;
    }
}

/* The role serve connects as must hold what storing needs; one that holds
 * far more (a superuser, the owner of the tables) is worth a warning. */
static int s_check_privileges(tc_store_t *store)
{
    tc_store_privileges_t p;
    int rc = tc_store_privileges(store, &p);
    if (rc < 0)
        return rc;
    if (*p.missing)
        return tc_fail(TC_EINVAL,
                       "the database role %s lacks privileges that storing needs: %s; grant "
                       "it the writer role (GRANT traincast_writer TO %s; see "
                       "docs/operator-guide.md, \"Database roles\")",
                       p.role, p.missing, p.role);
    if (p.superuser || p.owner)
        tc_log_warn("connected to the database as %s, %s: serve needs only the privileges of "
                    "the traincast_writer role; give it a role of its own (docs/"
                    "operator-guide.md, \"Database roles\")",
                    p.role, p.superuser ? "a superuser" : "the owner of the tables");
    return 0;
}

/* Connect and check the schema, retrying with backoff while the database is
 * unreachable (an outage: TC_EDB). A schema at the wrong version, or a
 * connection string that cannot work, ends the wait with that error. Logs
 * when the wait starts, every minute while it lasts, and when it ends. */
static int s_wait_for_database(tc_server_t *s)
{
    int delay = 250;
    int64_t since = tc_server_now_ms(), next_note = since + 60000;
    bool waiting = false;
    for (;;) {
        tc_store_t *check = NULL;
        int rc = tc_store_open(s->o.dsn, &check);
        if (rc == 0)
            rc = s_check_privileges(check);
        if (rc == 0)
            rc = tc_store_check_schema(check);
        tc_store_destroy(&check);
        if (rc != TC_EDB) {
            if (rc == 0 && waiting)
                tc_log_info("the database is up after %.1f s: accepting agents",
                            (double)(tc_server_now_ms() - since) / 1000.0);
            return rc;
        }
        int64_t now = tc_server_now_ms();
        if (!waiting) {
            tc_log_warn("waiting for the database: %s; agents keep their results in their journals "
                        "until it is up",
                        tc_errmsg());
            waiting = true;
        } else if (now >= next_note) {
            tc_log_warn("still waiting for the database after %.0f s: %s",
                        (double)(now - since) / 1000.0, tc_errmsg());
            next_note = now + 60000;
        }
        s_sleep_unless_stopped(s, delay);
        if (*s->o.stop)
            return 0;
        delay = delay * 2 > 5000 ? 5000 : delay * 2;
    }
}


static int s_open_router(tc_server_t *s)
{
    int rc = 0;
    s->router = zmq_socket(s->ctx, ZMQ_ROUTER);
    if (!s->router)
        return tc_zmq_fail("zmq_socket(ZMQ_ROUTER)", __FILE__, __LINE__);
    TC_TRY(tc_zmq_socket_setup(s->router, s->o.max_message_bytes + S_TRANSPORT_SLACK, 1000));
    int one = 1, hb = (int)s->o.heartbeat_ms, hb_timeout = 3 * (int)s->o.heartbeat_ms;
    TC_ZMQ_TRY(zmq_setsockopt(s->router, ZMQ_ROUTER_MANDATORY, &one, sizeof one));
    TC_ZMQ_TRY(zmq_setsockopt(s->router, ZMQ_HEARTBEAT_IVL, &hb, sizeof hb));
    TC_ZMQ_TRY(zmq_setsockopt(s->router, ZMQ_HEARTBEAT_TIMEOUT, &hb_timeout, sizeof hb_timeout));
    if (!s->o.insecure) {
        char keyfile[2200];
        tc_keypair_t kp;
        snprintf(keyfile, sizeof keyfile, "%s/aggregator.key", s->o.keys_dir);
        rc = tc_keypair_read(keyfile, &kp);
        if (rc == TC_ENOTFOUND)
            TC_FAIL_GOTO(TC_EINVAL,
                         "no aggregator key in %s: run 'aggregator keygen --keys %s' and give "
                         "agents its aggregator.pub (or use --insecure for a local demo)",
                         s->o.keys_dir, s->o.keys_dir);
        if (rc < 0)
            goto err;
        TC_ZMQ_TRY(zmq_setsockopt(s->router, ZMQ_CURVE_SERVER, &one, sizeof one));
        TC_ZMQ_TRY(zmq_setsockopt(s->router, ZMQ_CURVE_SECRETKEY, kp.secret_z85,
                                  TC_KEY_Z85_LEN + 1));
        TC_ZMQ_TRY(zmq_setsockopt(s->router, ZMQ_ZAP_DOMAIN, "traincast", 9));
        tc_log_info("CURVE on: aggregator public key %s", kp.public_z85);
        memset(&kp, 0, sizeof kp);
    }
    TC_ZMQ_TRY(zmq_socket_monitor(s->router, "inproc://tc-server-monitor",
                                  ZMQ_EVENT_ACCEPTED | ZMQ_EVENT_DISCONNECTED |
                                      ZMQ_EVENT_HANDSHAKE_FAILED_AUTH |
                                      ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL |
                                      ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL));
    s->mon = zmq_socket(s->ctx, ZMQ_PAIR);
    if (!s->mon || zmq_connect(s->mon, "inproc://tc-server-monitor") != 0) {
        rc = tc_zmq_fail("monitor socket", __FILE__, __LINE__);
        goto err;
    }
    if (zmq_bind(s->router, s->o.listen) != 0)
        TC_FAIL_GOTO(TC_ENET, "cannot listen on %s: %s (is another aggregator using the port? "
                              "the form is tcp://*:5555 or tcp://127.0.0.1:5555)",
                     s->o.listen, zmq_strerror(zmq_errno()));
    char bound[256] = "";
    size_t blen = sizeof bound;
    zmq_getsockopt(s->router, ZMQ_LAST_ENDPOINT, bound, &blen);
    tc_log_info("listening on %s", bound);
    return 0;
err:
    return rc;
}

static void s_close(tc_server_t *s)
{
    if (s->router)
        zmq_socket_monitor(s->router, NULL, 0);
    if (s->mon)
        zmq_close(s->mon);
    if (s->router)
        zmq_close(s->router);
    if (s->done)
        zmq_close(s->done);
    s->mon = s->router = s->done = NULL;
}

/* The options with their defaults filled in, and the rate limits. */
static int s_init(tc_server_t *s, const tc_server_opts_t *opts)
{
    memset(s, 0, sizeof *s);
    s->o = *opts;
    s->refusal_lines = (tc_ratelimit_t){.burst = S_LOG_BURST, .window_ms = 60000};
    s->peer_lines = (tc_ratelimit_t){.burst = S_PEER_LOG_BURST, .window_ms = 60000};
    if (!s->o.workers)
        s->o.workers = S_DEFAULT_WORKERS;
    if (!s->o.batch)
        s->o.batch = S_DEFAULT_BATCH;
    if (!s->o.heartbeat_ms)
        s->o.heartbeat_ms = S_DEFAULT_HEARTBEAT_MS;
    if (!s->o.queue_limit)
        s->o.queue_limit = S_DEFAULT_QUEUE_LIMIT;
    if (!s->o.max_message_bytes)
        s->o.max_message_bytes = TC_MAX_MESSAGE_BYTES;
    s->inflight = calloc(1, sizeof *s->inflight);
    return s->inflight ? 0 : tc_fail(TC_ENOMEM, "out of memory");
}

/* Security, the database, the job dispatcher, the store workers and the
 * agents' socket, in that order. Stops early (0) when asked to stop while
 * waiting for the database. */
static int s_start(tc_server_t *s)
{
    int rc = 0;
    if (s->o.insecure) {
        tc_log_warn("INSECURE MODE (--insecure): no encryption and no authentication; ANY "
                    "program that reaches %s can store data here. Use it only for a local demo "
                    "on a trusted machine.",
                    s->o.listen);
    } else {
        TC_TRY(tc_curve_check());
    }
    /* The schema must match before anything is accepted; while the
     * database is unreachable, wait (agents keep their results in their journals). */
    TC_TRY(s_wait_for_database(s));
    if (*s->o.stop)
        return 0;
    TC_TRY(tc_dispatch_new(s->o.dsn, s->o.heartbeat_ms, &s->dispatch));
    s->ctx = zmq_ctx_new();
    if (!s->ctx)
        TC_FAIL_GOTO(TC_ENET, "cannot create a ZeroMQ context: %s", zmq_strerror(zmq_errno()));
    if (!s->o.insecure)
        TC_TRY(tc_zap_start(s->ctx, s->o.allowlist, &s->zap));
    s->done = zmq_socket(s->ctx, ZMQ_PULL);
    if (!s->done)
        TC_FAIL_GOTO(TC_ENET, "cannot create a ZeroMQ socket: %s", zmq_strerror(zmq_errno()));
    int linger = 0;
    zmq_setsockopt(s->done, ZMQ_LINGER, &linger, sizeof linger);
    TC_ZMQ_TRY(zmq_bind(s->done, "inproc://tc-server-done"));
    TC_TRY(tc_workers_start(s->ctx, s->o.dsn, s->o.workers, s->o.batch,
                            "inproc://tc-server-done", &s->workers));
    if (s->zap)
        tc_workers_set_key_check(s->workers, s_key_allowed, s->zap);
    TC_TRY(s_open_router(s));
    tc_log_info("serving with %u store worker%s, up to %u message%s per transaction; acks "
                "only after commit",
                s->o.workers, s->o.workers == 1 ? "" : "s", s->o.batch,
                s->o.batch == 1 ? "" : "s");
err:
    return rc;
}

/* Re-read the allowlist with storing held, so that once "reloaded" is
 * logged nothing of a removed key commits: the workers check each
 * message's key before storing it, and the loop each message as it comes
 * (sessions opened under a removed key stay open, but store nothing). */
static void s_reload(tc_server_t *s)
{
    bool idle = tc_workers_pause(s->workers, S_RELOAD_WAIT_MS);
    if (!idle)
        tc_log_warn("SIGHUP: a store worker is still in a transaction after %d s (the database "
                    "is slow); what it stores of a removed key may still commit",
                    S_RELOAD_WAIT_MS / 1000);
    /* The acks of what committed go out before any refusal under the new list. */
    tc_server_collect(s, ZMQ_DONTWAIT);
    if (tc_zap_reload(s->zap) < 0)
        tc_log_error("SIGHUP: %s", tc_errmsg());
    tc_workers_resume(s->workers);
}

/* Serve until asked to stop: agents' messages, committed batches, socket
 * events, jobs, statistics; SIGHUP reloads the allowlist. */
static int s_loop(tc_server_t *s)
{
    s->next_stats_ms = tc_server_now_ms() + S_STATS_EVERY_MS;
    while (!*s->o.stop) {
        if (s->o.reload && *s->o.reload) {
            *s->o.reload = 0;
            if (s->zap)
                s_reload(s);
            else
                tc_log_info("SIGHUP: nothing to reload in --insecure mode");
        }
        int fd = tc_dispatch_fd(s->dispatch);
        zmq_pollitem_t items[4] = {{s->router, 0, ZMQ_POLLIN, 0},
                                   {s->done, 0, ZMQ_POLLIN, 0},
                                   {s->mon, 0, ZMQ_POLLIN, 0},
                                   {NULL, fd, ZMQ_POLLIN, 0}};
        int n = zmq_poll(items, fd >= 0 ? 4 : 3, 200);
        if (n < 0 && zmq_errno() != EINTR)
            return tc_zmq_fail("zmq_poll", __FILE__, __LINE__);
        s_events(s);
        tc_server_receive(s);
        tc_server_collect(s, ZMQ_DONTWAIT);
        if (fd >= 0 && n > 0 && (items[3].revents & ZMQ_POLLIN))
            tc_dispatch_readable(s->dispatch);
        tc_dispatch_tick(s->dispatch, s->router);
        s_stats(s, false);
    }
    tc_log_info("stopping: finishing the transactions in progress");
    return 0;
}

/* Stop the workers (acknowledging what they committed), close and free
 * whatever s_start opened. */
static void s_stop(tc_server_t *s)
{
    if (s->workers) {
        tc_work_t *left = tc_workers_stop(&s->workers);
        size_t dropped = 0;
        while (left) {
            tc_work_t *next = left->next;
            if (left->env && left->env->body_case != TRAINCAST__V1__ENVELOPE__BODY_HEARTBEAT)
                dropped++;
            tc_work_free(left);
            left = next;
        }
        /* Every worker has handed back its last result: ack what committed. */
        if (s->done && s->router)
            tc_server_collect(s, ZMQ_DONTWAIT);
        if (dropped)
            tc_log_info("%zu queued message%s not stored and not acknowledged; agents send "
                        "them again",
                        dropped, dropped == 1 ? "" : "s");
        s_stats(s, true);
    }
    s_close(s);
    tc_zap_stop(&s->zap);
    if (s->ctx)
        zmq_ctx_term(s->ctx);
    tc_dispatch_destroy(&s->dispatch);
    tc_idset_clear(s->inflight);
    free(s->inflight);
    free(s->conns);
}

int tc_server_run(const tc_server_opts_t *opts)
{
    tc_server_t srv;
    int rc = s_init(&srv, opts);
    if (rc < 0)
        return rc;
    rc = s_start(&srv);
    if (rc == 0 && !*srv.o.stop)
        rc = s_loop(&srv);
    s_stop(&srv);
    if (rc == 0)
        tc_log_info("stopped");
    return rc;
}
