/* The link's traffic: sending the Hello, heartbeats and waiting messages
 * within the window, and the aggregator's answers (acks, nacks, jobs). */
#include "link_internal.h"

#include "tc_error.h"
#include "tc_log.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int64_t tc_link_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

#define S_RETRY_SOON_MS 100

static int64_t s_clock_us(clockid_t clock)
{
    struct timespec ts;
    clock_gettime(clock, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* One line of the ack log (link.h) for a message that was sent. */
static void s_ack_log(tc_link_t *self, const tc_link_flight_t *f, const char *outcome)
{
    if (!self->ack_log || !f || !f->sends)
        return;
    fprintf(self->ack_log, "%s\t%lld\t%lld\t%lld\t%u\t%s\n", f->id,
            (long long)f->first_sent_wall_us, (long long)s_clock_us(CLOCK_REALTIME),
            (long long)(s_clock_us(CLOCK_MONOTONIC) - f->first_sent_us), f->sends, outcome);
}

/* ---- sending ---- */

/* Send bytes as one frame. Returns 1 sent, 0 not now (try later), <0 error. */
static int s_send_frame(tc_link_t *self, const uint8_t *buf, size_t len)
{
    if (!self->sock || !self->stats.connected)
        return 0;
    if (zmq_send(self->sock, buf, len, ZMQ_DONTWAIT) >= 0) {
        self->stats.sent++;
        return 1;
    }
    int e = zmq_errno();
    if (e == EAGAIN || e == EINTR)
        return 0;
    return tc_zmq_fail("zmq_send", __FILE__, __LINE__);
}

static int s_send_control(tc_link_t *self, tc_envelope_t *env, char id[TC_MSGID_LEN + 1])
{
    tc_envelope_stamp(env, self->agent_id, id);
    uint8_t *buf = NULL;
    size_t len = 0;
    int rc = tc_envelope_pack(env, &buf, &len);
    if (rc == 0)
        rc = s_send_frame(self, buf, len);
    free(buf);
    return rc;
}

static int s_send_hello(tc_link_t *self)
{
    Traincast__V1__Hello *h = traincast__v1__hello__unpack(NULL, self->hello_len, self->hello_body);
    if (!h)
        return tc_fail(TC_ELIB, "internal: cannot unpack this agent's own Hello");
    tc_envelope_t env = TRAINCAST__V1__ENVELOPE__INIT;
    env.body_case = TRAINCAST__V1__ENVELOPE__BODY_HELLO;
    env.hello = h;
    int rc = s_send_control(self, &env, self->hello_id);
    traincast__v1__hello__free_unpacked(h, NULL);
    return rc;
}

int tc_link_send_heartbeat(tc_link_t *self)
{
    Traincast__V1__Heartbeat hb = TRAINCAST__V1__HEARTBEAT__INIT;
    size_t backlog = tc_journal_waiting(self->journal);
    hb.spool_backlog = backlog > UINT32_MAX ? UINT32_MAX : (uint32_t)backlog;
    hb.uptime_s = (uint64_t)((tc_link_now_ms() - self->started_ms) / 1000);
    hb.running_job_id = self->running_job;
    tc_envelope_t env = TRAINCAST__V1__ENVELOPE__INIT;
    env.body_case = TRAINCAST__V1__ENVELOPE__BODY_HEARTBEAT;
    env.heartbeat = &hb;
    char id[TC_MSGID_LEN + 1];
    return s_send_control(self, &env, id);
}

static tc_link_flight_t *s_flight_find(tc_link_t *self, const char *id)
{
    for (size_t i = 0; i < self->n_flight; i++) {
        if (!strcmp(self->flight[i].id, id))
            return &self->flight[i];
    }
    return NULL;
}

static void s_flight_drop(tc_link_t *self, const char *id)
{
    tc_link_flight_t *f = s_flight_find(self, id);
    if (!f)
        return;
    *f = self->flight[--self->n_flight];
}

/* Send one waiting message. Returns 1 sent, 0 later, <0 error. A message
 * that cannot be read is rejected locally. */
static int s_send_waiting(tc_link_t *self, tc_link_flight_t *f, int64_t now)
{
    uint8_t *buf = NULL;
    size_t len = 0;
    int rc = tc_journal_read(self->journal, f->id, &buf, &len);
    if (rc == TC_ENOTFOUND) {
        s_flight_drop(self, f->id);
        return 0;
    }
    if (rc == 0 && len > self->opts.max_message_bytes)
        rc = tc_fail(TC_ELIMIT, "%zu bytes, more than the %zu byte message limit", len,
                     self->opts.max_message_bytes);
    if (rc < 0) {
        char id[TC_MSGID_LEN + 1];
        memcpy(id, f->id, sizeof id);
        tc_log_error("message %s cannot be sent (%s); %s keeps it as refused", id,
                     tc_errmsg(), tc_journal_path(self->journal));
        tc_journal_reject(self->journal, id, tc_errmsg());
        s_flight_drop(self, id);
        self->stats.rejected++;
        return 0;
    }
    rc = s_send_frame(self, buf, len);
    free(buf);
    if (rc == 1) {
        if (f->sends == 0) {
            f->first_sent_us = s_clock_us(CLOCK_MONOTONIC);
            f->first_sent_wall_us = s_clock_us(CLOCK_REALTIME);
        }
        f->sends++;
        f->due_ms = now + f->backoff_ms;
        if (f->sends > 1)
            tc_log_debug("resent %s (attempt %u); next try in %lld ms", f->id, f->sends,
                         (long long)f->backoff_ms);
        f->backoff_ms *= 2;
        if (f->backoff_ms > self->opts.max_backoff_ms)
            f->backoff_ms = self->opts.max_backoff_ms;
    } else if (rc == 0) {
        f->due_ms = now + S_RETRY_SOON_MS;
    }
    return rc;
}

int tc_link_pump(tc_link_t *self)
{
    if (!self->stats.connected || self->stats.revoked)
        return 0;
    int64_t now = tc_link_now_ms();
    int rc = 0;
    if (self->hello_pending && self->hello_due_ms <= now) {
        rc = s_send_hello(self);
        if (rc < 0)
            return rc;
        self->hello_due_ms = now + (rc == 1 ? self->hello_backoff_ms : S_RETRY_SOON_MS);
        if (rc == 1 && self->hello_backoff_ms < self->opts.max_backoff_ms)
            self->hello_backoff_ms *= 2;
    }
    /* Due resends first, then new messages while the window has room. */
    for (size_t i = 0; i < self->n_flight; i++) {
        if (self->flight[i].due_ms <= now) {
            size_t before = self->n_flight;
            rc = s_send_waiting(self, &self->flight[i], now);
            if (rc < 0)
                return rc;
            if (self->n_flight < before)
                i--; /* entry i was replaced by the last one */
        }
    }
    size_t room = self->opts.window - self->n_flight;
    if (room == 0)
        return 0;
    size_t want = self->n_flight + room;
    char(*ids)[TC_MSGID_LEN + 1] = malloc(want * sizeof *ids);
    if (!ids)
        return tc_fail(TC_ENOMEM, "out of memory");
    size_t n = tc_journal_oldest(self->journal, ids, want);
    for (size_t i = 0; i < n && self->n_flight < self->opts.window; i++) {
        if (s_flight_find(self, ids[i]))
            continue;
        tc_link_flight_t *f = &self->flight[self->n_flight++];
        memcpy(f->id, ids[i], sizeof f->id);
        f->sends = 0;
        f->backoff_ms = self->opts.ack_timeout_ms;
        rc = s_send_waiting(self, f, now);
        if (rc < 0)
            break;
        if (rc == 0)
            break; /* socket full: the rest waits */
    }
    free(ids);
    return rc < 0 ? rc : 0;
}

/* ---- receiving ---- */

static void s_on_ack(tc_link_t *self, const Traincast__V1__Ack *ack)
{
    const char *id = ack->message_id ? ack->message_id : "";
    if (!strcmp(id, self->hello_id)) {
        self->hello_pending = false;
        return;
    }
    bool known = tc_journal_is_waiting(self->journal, id);
    if (known)
        s_ack_log(self, s_flight_find(self, id), ack->duplicate ? "duplicate" : "stored");
    s_flight_drop(self, id);
    if (!known)
        return; /* a second ack for something already deleted */
    if (tc_journal_ack(self->journal, id) < 0)
        tc_log_warn("%s", tc_errmsg());
    self->stats.acked++;
    if (ack->duplicate)
        self->stats.duplicates++;
}

static void s_on_nack(tc_link_t *self, const Traincast__V1__Nack *nack)
{
    const char *id = nack->message_id ? nack->message_id : "";
    const char *why = nack->reason && *nack->reason ? nack->reason : "no reason given";
    if (nack->revoked) {
        /* Whatever the message: nothing more of this agent is stored, so
         * nothing more is sent; the journal keeps it all. */
        if (!self->stats.revoked)
            tc_log_error("aggregator %s removed this agent's key %s from its allowlist (%s): "
                         "nothing more is sent; %zu message%s keep waiting in %s for the key to "
                         "be allowlisted again",
                         self->endpoint, self->opts.insecure ? "-" : self->keys.public_z85, why,
                         tc_journal_waiting(self->journal),
                         tc_journal_waiting(self->journal) == 1 ? "" : "s",
                         tc_journal_path(self->journal));
        self->stats.revoked = true;
        self->n_flight = 0;
        return;
    }
    if (!*id) {
        tc_log_error("the aggregator could not read a message from this agent: %s", why);
        return;
    }
    if (!strcmp(id, self->hello_id)) {
        tc_log_error("the aggregator refused this agent's Hello: %s", why);
        self->hello_pending = !nack->permanent;
        return;
    }
    if (nack->permanent) {
        tc_log_error("the aggregator rejected message %s for good: %s; %s keeps it as refused", id,
                     why, tc_journal_path(self->journal));
        if (tc_journal_is_waiting(self->journal, id))
            s_ack_log(self, s_flight_find(self, id), "rejected");
        s_flight_drop(self, id);
        if (tc_journal_is_waiting(self->journal, id)) {
            if (tc_journal_reject(self->journal, id, why) < 0)
                tc_log_warn("%s", tc_errmsg());
            self->stats.rejected++;
        }
        return;
    }
    tc_link_flight_t *f = s_flight_find(self, id);
    self->stats.deferred++;
    if (f) {
        f->due_ms = tc_link_now_ms() + f->backoff_ms;
        tc_log_debug("aggregator deferred %s (%s); retrying in %lld ms", id, why,
                     (long long)f->backoff_ms);
        f->backoff_ms *= 2;
        if (f->backoff_ms > self->opts.max_backoff_ms)
            f->backoff_ms = self->opts.max_backoff_ms;
    }
}

static void s_handle_message(tc_link_t *self, zmq_msg_t *m, bool more)
{
    size_t len = zmq_msg_size(m);
    if (more) {
        tc_log_warn("dropped a multi-frame message from the aggregator (expected one frame)");
        return;
    }
    tc_envelope_t *env = NULL;
    if (tc_envelope_unpack(zmq_msg_data(m), len, self->opts.max_message_bytes, &env) < 0) {
        tc_log_warn("dropped a message from the aggregator: %s", tc_errmsg());
        return;
    }
    if (env->protocol_version != TC_PROTOCOL_VERSION) {
        tc_log_warn("dropped a message from the aggregator with protocol version %u (this agent "
                    "speaks %u); upgrade the older side",
                    env->protocol_version, TC_PROTOCOL_VERSION);
        tc_envelope_free(&env);
        return;
    }
    switch (env->body_case) {
    case TRAINCAST__V1__ENVELOPE__BODY_ACK:
        s_on_ack(self, env->ack);
        break;
    case TRAINCAST__V1__ENVELOPE__BODY_NACK:
        s_on_nack(self, env->nack);
        break;
    case TRAINCAST__V1__ENVELOPE__BODY_HEARTBEAT:
        break;
    case TRAINCAST__V1__ENVELOPE__BODY_BENCH_REQUEST:
    case TRAINCAST__V1__ENVELOPE__BODY_TRACE_REQUEST:
        if (self->opts.on_job)
            self->opts.on_job(self->opts.job_arg, env);
        else
            tc_log_warn("ignored a %s: this command does not run jobs (use agent serve)",
                        tc_body_name(env));
        break;
    default:
        tc_log_debug("ignored a %s message from the aggregator", tc_body_name(env));
        break;
    }
    tc_envelope_free(&env);
}

int tc_link_receive(tc_link_t *self)
{
    for (int i = 0; i < 1000 && self->sock; i++) {
        zmq_msg_t m;
        zmq_msg_init(&m);
        if (zmq_msg_recv(&m, self->sock, ZMQ_DONTWAIT) < 0) {
            int e = zmq_errno();
            zmq_msg_close(&m);
            if (e == EAGAIN || e == EINTR)
                return 0;
            return tc_zmq_fail("zmq_msg_recv", __FILE__, __LINE__);
        }
        bool more = zmq_msg_more(&m);
        self->last_rx_ms = tc_link_now_ms();
        s_handle_message(self, &m, more);
        zmq_msg_close(&m);
        while (more) { /* discard the rest of a multi-frame message */
            zmq_msg_init(&m);
            if (zmq_msg_recv(&m, self->sock, 0) < 0) {
                zmq_msg_close(&m);
                break;
            }
            more = zmq_msg_more(&m);
            zmq_msg_close(&m);
        }
    }
    return 0;
}

