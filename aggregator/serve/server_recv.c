/* Receiving in the server loop: frames from the ROUTER socket and their
 * checks, the ids of messages in flight, handing messages to the store
 * workers, and the answers (acks, nacks, heartbeats) for what they
 * finished. */
#include "server_internal.h"
#include "server_loop.h"

#include "tc_error.h"
#include "tc_hash.h"
#include "tc_log.h"
#include "tc_zmq.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zmq.h>

static unsigned s_hash(const char *id)
{
    return tc_fnv1a32_str(id) % TC_IDSET_BUCKETS;
}

static bool s_idset_has(tc_idset_t *s, const char *id)
{
    for (tc_idnode_t *n = s->b[s_hash(id)]; n; n = n->next) {
        if (!strcmp(n->id, id))
            return true;
    }
    return false;
}

static void s_idset_add(tc_idset_t *s, const char *id)
{
    tc_idnode_t *n = malloc(sizeof *n);
    if (!n)
        return; /* only an optimization */
    snprintf(n->id, sizeof n->id, "%s", id);
    unsigned h = s_hash(id);
    n->next = s->b[h];
    s->b[h] = n;
}

static void s_idset_del(tc_idset_t *s, const char *id)
{
    for (tc_idnode_t **pp = &s->b[s_hash(id)]; *pp; pp = &(*pp)->next) {
        if (!strcmp((*pp)->id, id)) {
            tc_idnode_t *n = *pp;
            *pp = n->next;
            free(n);
            return;
        }
    }
}

void tc_idset_clear(tc_idset_t *s)
{
    for (unsigned i = 0; i < TC_IDSET_BUCKETS; i++) {
        while (s->b[i]) {
            tc_idnode_t *n = s->b[i];
            s->b[i] = n->next;
            free(n);
        }
    }
}

/* ---- replies ---- */

static void s_send(tc_server_t *s, const uint8_t *route, size_t route_len, tc_envelope_t *env)
{
    char id[TC_MSGID_LEN + 1];
    tc_envelope_stamp(env, "aggregator", id);
    if (tc_zmq_send_envelope(s->router, route, route_len, env, ZMQ_DONTWAIT) < 0)
        tc_log_debug("reply not sent (the agent is gone or its queue is full): %s", tc_errmsg());
}

static void s_ack(tc_server_t *s, const uint8_t *route, size_t route_len, const char *msg_id,
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

static void s_nack_as(tc_server_t *s, const uint8_t *route, size_t route_len,
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

static void s_nack(tc_server_t *s, const uint8_t *route, size_t route_len, const char *msg_id,
                   const char *reason, bool permanent)
{
    s_nack_as(s, route, route_len, msg_id, reason, permanent, false);
}

/* A message whose key left the allowlist on a reload (the session was
 * opened before): not stored; the agent is told, and keeps it. */
static void s_revoked(tc_server_t *s, const uint8_t *route, size_t route_len,
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

static void s_heartbeat_reply(tc_server_t *s, const uint8_t *route, size_t route_len)
{
    Traincast__V1__Heartbeat hb = TRAINCAST__V1__HEARTBEAT__INIT;
    hb.spool_backlog = (uint32_t)tc_workers_queued(s->workers);
    tc_envelope_t env = TRAINCAST__V1__ENVELOPE__INIT;
    env.body_case = TRAINCAST__V1__ENVELOPE__BODY_HEARTBEAT;
    env.heartbeat = &hb;
    s_send(s, route, route_len, &env);
}

/* ---- receiving ---- */

static void s_refuse(tc_server_t *s, const uint8_t *route, size_t route_len, const char *peer,
                     const char *key, const char *msg_id, const char *why)
{
    s->n_bad++;
    if (tc_ratelimit_allow(&s->refusal_lines, tc_server_now_ms()))
        tc_log_warn("refused a message from %s%s%s: %s", peer, key ? " key " : "",
                    key ? key : "", why);
    s_nack(s, route, route_len, msg_id, why, true);
}

static void s_enqueue(tc_server_t *s, tc_envelope_t *env, const uint8_t *route, size_t route_len,
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

static void s_handle(tc_server_t *s, const uint8_t *route, size_t route_len, const uint8_t *data,
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

void tc_server_receive(tc_server_t *s)
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
        tc_server_conn_message(s, zmq_msg_get(&body, ZMQ_SRCFD), key && *key ? key : NULL);
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

static void s_finish(tc_server_t *s, tc_work_t *w)
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

void tc_server_collect(tc_server_t *s, int flags)
{
    for (;;) {
        tc_work_t *w = NULL;
        int n = zmq_recv(s->done, &w, sizeof w, flags);
        if (n != (int)sizeof w)
            return;
        s_finish(s, w);
    }
}
