/* The server loop: waiting for the database, the ROUTER socket (CURVE,
 * monitor), the poll loop, connection events, receiving and checking
 * messages, handing them to the store workers, the answers (acks, nacks,
 * heartbeats) for what they finished, the periodic summary and shutdown.
 * One subject, over 600 lines. */
#include "server.h"
#include "server_internal.h"
#include "store.h"
#include "zap.h"

#include "tc_error.h"
#include "tc_hash.h"
#include "tc_log.h"
#include "tc_paths.h"
#include "tc_zmq.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdint.h>
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

#define S_IDSET_BUCKETS 4096u

/* Message ids queued or being stored: a resend of one of them is dropped
 * (its ack follows when the first copy is stored). */
typedef struct s_idnode {
    char id[TC_MSGID_LEN + 1];
    struct s_idnode *next;
} s_idnode_t;

typedef struct {
    s_idnode_t *b[S_IDSET_BUCKETS];
} s_idset_t;

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
} s_conn_t;

typedef struct {
    tc_server_opts_t o;
    void *ctx, *router, *mon, *done;
    tc_zap_t *zap;
    tc_workers_t *workers;
    tc_dispatch_t *dispatch;
    s_idset_t *inflight;
    uint64_t n_stored, n_dup, n_rejected, n_deferred, n_bad, n_revoked;
    uint64_t shown_stored, shown_dup, shown_rejected, shown_revoked;
    int64_t next_stats_ms;
    tc_ratelimit_t refusal_lines; /* refused and rejected messages (authenticated peers) */
    tc_ratelimit_t peer_lines;    /* what any peer can cause: failed handshakes, connections
                                   * closed without a message */
    s_conn_t *conns;              /* by file descriptor */
    size_t n_conns;
} s_server_t;

static void s_log_suppressed(s_server_t *s)
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

static s_conn_t *s_conn(s_server_t *s, int fd, bool grow)
{
    if (fd < 0 || fd >= S_MAX_FD)
        return NULL;
    if ((size_t)fd >= s->n_conns) {
        if (!grow)
            return NULL;
        size_t n = s->n_conns ? s->n_conns : 64;
        while (n <= (size_t)fd)
            n *= 2;
        s_conn_t *c = realloc(s->conns, n * sizeof *c);
        if (!c)
            return NULL; /* only the wording of a log line is lost */
        memset(c + s->n_conns, 0, (n - s->n_conns) * sizeof *c);
        s->conns = c;
        s->n_conns = n;
    }
    return &s->conns[fd];
}

static void s_conn_opened(s_server_t *s, int fd)
{
    s_conn_t *c = s_conn(s, fd, true);
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

static void s_conn_message(s_server_t *s, int fd, const char *key)
{
    s_conn_t *c = s_conn(s, fd, false);
    if (!c || !c->open)
        return;
    c->messages++;
    if (key && !c->key[0])
        snprintf(c->key, sizeof c->key, "%s", key);
}

/* A closed connection, told as it was: an agent's after its messages (info:
 * it authenticated), or one that never delivered a message (any peer can
 * cause that: rate-limited). */
static void s_conn_closed(s_server_t *s, int fd)
{
    s_conn_t *c = s_conn(s, fd, false);
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

static void s_events(s_server_t *s)
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

static void s_stats(s_server_t *s, bool force)
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

/* ---- in-flight ids ---- */

static unsigned s_hash(const char *id)
{
    return tc_fnv1a32_str(id) % S_IDSET_BUCKETS;
}

static bool s_idset_has(s_idset_t *s, const char *id)
{
    for (s_idnode_t *n = s->b[s_hash(id)]; n; n = n->next) {
        if (!strcmp(n->id, id))
            return true;
    }
    return false;
}

static void s_idset_add(s_idset_t *s, const char *id)
{
    s_idnode_t *n = malloc(sizeof *n);
    if (!n)
        return; /* only an optimization */
    snprintf(n->id, sizeof n->id, "%s", id);
    unsigned h = s_hash(id);
    n->next = s->b[h];
    s->b[h] = n;
}

static void s_idset_del(s_idset_t *s, const char *id)
{
    for (s_idnode_t **pp = &s->b[s_hash(id)]; *pp; pp = &(*pp)->next) {
        if (!strcmp((*pp)->id, id)) {
            s_idnode_t *n = *pp;
            *pp = n->next;
            free(n);
            return;
        }
    }
}

static void s_idset_clear(s_idset_t *s)
{
    for (unsigned i = 0; i < S_IDSET_BUCKETS; i++) {
        while (s->b[i]) {
            s_idnode_t *n = s->b[i];
            s->b[i] = n->next;
            free(n);
        }
    }
}

/* ---- replies ---- */

static void s_send(s_server_t *s, const uint8_t *route, size_t route_len, tc_envelope_t *env)
{
    char id[TC_MSGID_LEN + 1];
    tc_envelope_stamp(env, "aggregator", id);
    if (tc_zmq_send_envelope(s->router, route, route_len, env, ZMQ_DONTWAIT) < 0)
        tc_log_debug("reply not sent (the agent is gone or its queue is full): %s", tc_errmsg());
}

static void s_ack(s_server_t *s, const uint8_t *route, size_t route_len, const char *msg_id,
                  bool duplicate)
{
    Traincast__V1__Ack ack = TRAINCAST__V1__ACK__INIT;
    ack.message_id = (char *)msg_id;
    ack.duplicate = duplicate;
    tc_envelope_t env = TRAINCAST__V1__ENVELOPE__INIT;
    env.body_case = TRAINCAST__V1__ENVELOPE__BODY_ACK;
    env.ack = &ack;
    s_send(s, route, route_len, &env);
}

static void s_nack_as(s_server_t *s, const uint8_t *route, size_t route_len,
                      const char *msg_id, const char *reason, bool permanent, bool revoked)
{
    Traincast__V1__Nack nack = TRAINCAST__V1__NACK__INIT;
    char why[TC_MAX_TEXT_LEN];
    snprintf(why, sizeof why, "%s", reason);
    nack.message_id = (char *)(msg_id ? msg_id : "");
    nack.reason = why;
    nack.permanent = permanent;
    nack.revoked = revoked;
    tc_envelope_t env = TRAINCAST__V1__ENVELOPE__INIT;
    env.body_case = TRAINCAST__V1__ENVELOPE__BODY_NACK;
    env.nack = &nack;
    s_send(s, route, route_len, &env);
}

static void s_nack(s_server_t *s, const uint8_t *route, size_t route_len, const char *msg_id,
                   const char *reason, bool permanent)
{
    s_nack_as(s, route, route_len, msg_id, reason, permanent, false);
}

/* A message whose key left the allowlist on a reload (the session was
 * opened before): not stored; the agent is told, and keeps it. */
static void s_revoked(s_server_t *s, const uint8_t *route, size_t route_len,
                      const tc_envelope_t *env, const char *key)
{
    s->n_revoked++;
    if (tc_ratelimit_allow(&s->refusal_lines, tc_server_now_ms()))
        tc_log_warn("refused %s %.40s from agent %.256s: its key %s was removed from the "
                    "allowlist",
                    tc_body_name(env), env->message_id, env->agent_id, key);
    s_nack_as(s, route, route_len, env->message_id,
              "this agent's key was removed from the aggregator's allowlist; nothing more of "
              "it is stored",
              false, true);
}

static void s_heartbeat_reply(s_server_t *s, const uint8_t *route, size_t route_len)
{
    Traincast__V1__Heartbeat hb = TRAINCAST__V1__HEARTBEAT__INIT;
    hb.spool_backlog = (uint32_t)tc_workers_queued(s->workers);
    tc_envelope_t env = TRAINCAST__V1__ENVELOPE__INIT;
    env.body_case = TRAINCAST__V1__ENVELOPE__BODY_HEARTBEAT;
    env.heartbeat = &hb;
    s_send(s, route, route_len, &env);
}

/* ---- receiving ---- */

static void s_refuse(s_server_t *s, const uint8_t *route, size_t route_len, const char *peer,
                     const char *key, const char *msg_id, const char *why)
{
    s->n_bad++;
    if (tc_ratelimit_allow(&s->refusal_lines, tc_server_now_ms()))
        tc_log_warn("refused a message from %s%s%s: %s", peer, key ? " key " : "",
                    key ? key : "", why);
    s_nack(s, route, route_len, msg_id, why, true);
}

static void s_enqueue(s_server_t *s, tc_envelope_t *env, const uint8_t *route, size_t route_len,
                      const char *key)
{
    tc_work_t *w = calloc(1, sizeof *w);
    if (!w) {
        s_nack(s, route, route_len, env->message_id, "aggregator out of memory; retry later",
               false);
        tc_envelope_free(&env);
        return;
    }
    w->env = env;
    memcpy(w->route, route, route_len);
    w->route_len = route_len;
    if (key)
        snprintf(w->key, sizeof w->key, "%s", key);
    if (env->body_case != TRAINCAST__V1__ENVELOPE__BODY_HEARTBEAT)
        s_idset_add(s->inflight, env->message_id);
    tc_workers_push(s->workers, w);
}

static void s_handle(s_server_t *s, const uint8_t *route, size_t route_len, const uint8_t *data,
                     size_t len, int frames, const char *peer, const char *key)
{
    char why[1200];
    if (frames != 1) {
        snprintf(why, sizeof why, "a message must be one frame (this one had %d)", frames);
        s_refuse(s, route, route_len, peer, key, "", why);
        return;
    }
    if (len > s->o.max_message_bytes) {
        snprintf(why, sizeof why, "message of %zu bytes exceeds the %zu byte limit", len,
                 s->o.max_message_bytes);
        s_refuse(s, route, route_len, peer, key, "", why);
        return;
    }
    tc_envelope_t *env = NULL;
    if (tc_envelope_unpack(data, len, s->o.max_message_bytes, &env) < 0) {
        snprintf(why, sizeof why, "cannot decode: %s", tc_errmsg());
        s_refuse(s, route, route_len, peer, key, "", why);
        return;
    }
    const char *id = tc_msgid_valid(env->message_id) ? env->message_id : "";
    /* The handshake checked the key when the session opened; a reload may
     * have removed it since. */
    if (key && s->zap && !tc_zap_allows(s->zap, key)) {
        s_revoked(s, route, route_len, env, key);
        tc_envelope_free(&env);
        return;
    }
    if (env->protocol_version != TC_PROTOCOL_VERSION) {
        snprintf(why, sizeof why,
                 "protocol_version: this aggregator speaks version %u, the message has %u; "
                 "upgrade the older side",
                 TC_PROTOCOL_VERSION, env->protocol_version);
        s_refuse(s, route, route_len, peer, key, id, why);
        tc_envelope_free(&env);
        return;
    }
    if (!*id) {
        snprintf(why, sizeof why, "message_id: must be a 26-character ULID (got '%.40s')",
                 env->message_id ? env->message_id : "");
        s_refuse(s, route, route_len, peer, key, "", why);
        tc_envelope_free(&env);
        return;
    }
    if (tc_validate_agent_id(env->agent_id) < 0) {
        s_refuse(s, route, route_len, peer, key, id, tc_errmsg());
        tc_envelope_free(&env);
        return;
    }
    /* Session messages carry the sender's own agent id (results pushed from
     * a file may carry another's): they tell where that agent is now. */
    if ((env->body_case == TRAINCAST__V1__ENVELOPE__BODY_HELLO ||
         env->body_case == TRAINCAST__V1__ENVELOPE__BODY_HEARTBEAT ||
         env->body_case == TRAINCAST__V1__ENVELOPE__BODY_JOB_PROGRESS) &&
        !tc_dispatch_heard(s->dispatch, env->agent_id, route, route_len, key)) {
        snprintf(why, sizeof why,
                 "agent_id: '%.256s' belongs to another agent's key; each agent sends under its "
                 "own id (docs/transport.md, \"Agent identity\")",
                 env->agent_id);
        s_refuse(s, route, route_len, peer, key, id, why);
        tc_envelope_free(&env);
        return;
    }
    switch (env->body_case) {
    case TRAINCAST__V1__ENVELOPE__BODY_HEARTBEAT:
        s_heartbeat_reply(s, route, route_len);
        tc_dispatch_heartbeat(s->dispatch, env->agent_id, env->heartbeat->running_job_id);
        /* Stored for `aggregator status`; skipped when storing lags. */
        if (tc_workers_queued(s->workers) < s->o.queue_limit / 2)
            s_enqueue(s, env, route, route_len, key);
        else
            tc_envelope_free(&env);
        return;
    case TRAINCAST__V1__ENVELOPE__BODY_HELLO:
        tc_dispatch_hello(s->dispatch, env->agent_id, env->hello);
        break;
    case TRAINCAST__V1__ENVELOPE__BODY_CONV_RESULTS:
    case TRAINCAST__V1__ENVELOPE__BODY_MODEL_GRAPH:
    case TRAINCAST__V1__ENVELOPE__BODY_TRAIN_TRACE:
    case TRAINCAST__V1__ENVELOPE__BODY_JOB_PROGRESS:
        break;
    default:
        snprintf(why, sizeof why, "body: a %s message is not accepted from agents",
                 tc_body_name(env));
        s_refuse(s, route, route_len, peer, key, id, why);
        tc_envelope_free(&env);
        return;
    }
    if (s_idset_has(s->inflight, id)) {
        tc_log_debug("%s from %s is being stored already; its ack follows", id, env->agent_id);
        tc_envelope_free(&env);
        return;
    }
    if (tc_workers_queued(s->workers) >= s->o.queue_limit) {
        s->n_deferred++;
        s_nack(s, route, route_len, id,
               tc_workers_db_down(s->workers) ? "the database is unavailable; retry later"
                                              : "the aggregator is busy; retry later",
               false);
        tc_envelope_free(&env);
        return;
    }
    s_enqueue(s, env, route, route_len, key);
}

static void s_receive(s_server_t *s)
{
    for (int i = 0; i < 512; i++) {
        zmq_msg_t route, body;
        zmq_msg_init(&route);
        if (zmq_msg_recv(&route, s->router, ZMQ_DONTWAIT) < 0) {
            zmq_msg_close(&route);
            return;
        }
        if (!zmq_msg_more(&route)) {
            zmq_msg_close(&route);
            continue;
        }
        zmq_msg_init(&body);
        if (zmq_msg_recv(&body, s->router, 0) < 0) {
            zmq_msg_close(&route);
            zmq_msg_close(&body);
            return;
        }
        int frames = 1;
        bool more = zmq_msg_more(&body);
        while (more) {
            zmq_msg_t extra;
            zmq_msg_init(&extra);
            if (zmq_msg_recv(&extra, s->router, 0) < 0) {
                zmq_msg_close(&extra);
                break;
            }
            more = zmq_msg_more(&extra);
            frames++;
            zmq_msg_close(&extra);
        }
        const char *key = zmq_msg_gets(&body, "User-Id");
        s_conn_message(s, zmq_msg_get(&body, ZMQ_SRCFD), key && *key ? key : NULL);
        const char *addr = zmq_msg_gets(&body, "Peer-Address");
        char peer[128];
        snprintf(peer, sizeof peer, "%s", addr ? addr : "an agent");
        if (zmq_msg_size(&route) <= TC_ROUTE_MAX)
            s_handle(s, zmq_msg_data(&route), zmq_msg_size(&route), zmq_msg_data(&body),
                     zmq_msg_size(&body), frames, peer, key && *key ? key : NULL);
        zmq_msg_close(&route);
        zmq_msg_close(&body);
    }
}

static void s_finish(s_server_t *s, tc_work_t *w)
{
    if (s->workers) /* NULL once stopped: the last results are only answered */
        tc_workers_done(s->workers, w);
    const tc_envelope_t *env = w->env;
    bool heartbeat = env->body_case == TRAINCAST__V1__ENVELOPE__BODY_HEARTBEAT;
    if (!heartbeat)
        s_idset_del(s->inflight, env->message_id);
    /* Answer on the connection the message came by. If the agent has
     * reconnected since, the answer is lost and its resend is acknowledged
     * as a duplicate. */
    const uint8_t *route = w->route;
    size_t route_len = w->route_len;
    switch (w->outcome) {
    case TC_WORK_STORED:
    case TC_WORK_DUPLICATE:
        if (w->outcome == TC_WORK_STORED)
            s->n_stored++;
        else
            s->n_dup++;
        s_ack(s, route, route_len, env->message_id, w->outcome == TC_WORK_DUPLICATE);
        if (w->job_terminal)
            tc_dispatch_job_ended(s->dispatch, env->agent_id, env->job_progress->job_id);
        break;
    case TC_WORK_REJECTED:
        s->n_rejected++;
        if (tc_ratelimit_allow(&s->refusal_lines, tc_server_now_ms()))
            tc_log_warn("rejected %s %s from agent %s: %s", tc_body_name(env), env->message_id,
                    env->agent_id, w->reason);
        s_nack(s, route, route_len, env->message_id, w->reason, true);
        break;
    case TC_WORK_DEFERRED:
        s->n_deferred++;
        tc_log_warn("could not store %s %s from agent %s now: %s", tc_body_name(env),
                    env->message_id, env->agent_id, w->reason);
        s_nack(s, route, route_len, env->message_id, w->reason, false);
        break;
    case TC_WORK_REVOKED:
        s_revoked(s, route, route_len, env, w->key);
        break;
    case TC_WORK_DROPPED:
        break;
    }
    tc_work_free(w);
}

static void s_collect(s_server_t *s, int flags)
{
    for (;;) {
        tc_work_t *w = NULL;
        int n = zmq_recv(s->done, &w, sizeof w, flags);
        if (n != (int)sizeof w)
            return;
        s_finish(s, w);
    }
}

/* ---- setup ---- */

static void s_sleep_unless_stopped(s_server_t *s, int ms)
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
static int s_wait_for_database(s_server_t *s)
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


static int s_open_router(s_server_t *s)
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

static void s_close(s_server_t *s)
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
static int s_init(s_server_t *s, const tc_server_opts_t *opts)
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
static int s_start(s_server_t *s)
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
static void s_reload(s_server_t *s)
{
    bool idle = tc_workers_pause(s->workers, S_RELOAD_WAIT_MS);
    if (!idle)
        tc_log_warn("SIGHUP: a store worker is still in a transaction after %d s (the database "
                    "is slow); what it stores of a removed key may still commit",
                    S_RELOAD_WAIT_MS / 1000);
    /* The acks of what committed go out before any refusal under the new list. */
    s_collect(s, ZMQ_DONTWAIT);
    if (tc_zap_reload(s->zap) < 0)
        tc_log_error("SIGHUP: %s", tc_errmsg());
    tc_workers_resume(s->workers);
}

/* Serve until asked to stop: agents' messages, committed batches, socket
 * events, jobs, statistics; SIGHUP reloads the allowlist. */
static int s_loop(s_server_t *s)
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
        s_receive(s);
        s_collect(s, ZMQ_DONTWAIT);
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
static void s_stop(s_server_t *s)
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
            s_collect(s, ZMQ_DONTWAIT);
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
    s_idset_clear(s->inflight);
    free(s->inflight);
    free(s->conns);
}

int tc_server_run(const tc_server_opts_t *opts)
{
    s_server_t srv;
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
