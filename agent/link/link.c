#include "link.h"

#include "tc_error.h"
#include "tc_log.h"
#include "tc_progress.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zmq.h>

#define S_DEFAULT_WINDOW 32u
#define S_DEFAULT_HEARTBEAT_MS 5000u
#define S_DEFAULT_ACK_TIMEOUT_MS 10000u
#define S_DEFAULT_MAX_BACKOFF_MS 60000u
#define S_RETRY_SOON_MS 100

typedef struct {
    char id[TC_MSGID_LEN + 1];
    int64_t due_ms;     /* when to send (again) */
    int64_t backoff_ms; /* wait after the next send */
    unsigned sends;
    int64_t first_sent_us, first_sent_wall_us; /* monotonic and epoch; for the ack log */
} s_flight_t;

struct tc_link {
    tc_link_opts_t opts;
    char *endpoint;
    char *agent_id;
    char server_key[TC_KEY_Z85_LEN + 1];
    tc_keypair_t keys;
    tc_spool_t *spool;
    void *ctx;
    void *sock;
    void *mon;
    unsigned generation; /* sockets created so far (monitor endpoint names) */

    s_flight_t *flight; /* opts.window entries */
    size_t n_flight;

    uint8_t *hello_body; /* packed Hello */
    size_t hello_len;
    char hello_id[TC_MSGID_LEN + 1];
    bool hello_pending;
    int64_t hello_due_ms, hello_backoff_ms;

    char running_job[72]; /* reported in heartbeats */
    int64_t started_ms, last_rx_ms, last_hb_ms;
    bool warned_refused;
    tc_link_stats_t stats;
    FILE *ack_log; /* TRAINCAST_ACK_LOG, or NULL */
};

int64_t tc_link_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int64_t s_clock_us(clockid_t clock)
{
    struct timespec ts;
    clock_gettime(clock, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* One line of the ack log (link.h) for a message that was sent. */
static void s_ack_log(tc_link_t *self, const s_flight_t *f, const char *outcome)
{
    if (!self->ack_log || !f || !f->sends)
        return;
    fprintf(self->ack_log, "%s\t%lld\t%lld\t%lld\t%u\t%s\n", f->id,
            (long long)f->first_sent_wall_us, (long long)s_clock_us(CLOCK_REALTIME),
            (long long)(s_clock_us(CLOCK_MONOTONIC) - f->first_sent_us), f->sends, outcome);
}

static void s_close_socket(tc_link_t *self)
{
    if (self->sock) {
        zmq_socket_monitor(self->sock, NULL, 0);
        zmq_close(self->sock);
        self->sock = NULL;
    }
    if (self->mon) {
        zmq_close(self->mon);
        self->mon = NULL;
    }
    self->stats.connected = false;
}

static int s_open_socket(tc_link_t *self)
{
    int rc = 0;
    self->sock = zmq_socket(self->ctx, ZMQ_DEALER);
    if (!self->sock)
        return tc_zmq_fail("zmq_socket(ZMQ_DEALER)", __FILE__, __LINE__);
    TC_TRY(tc_zmq_socket_setup(self->sock, self->opts.max_message_bytes, 0));
    int one = 1, ivl = 100, ivl_max = 5000;
    int hb = (int)self->opts.heartbeat_ms, hb_timeout = 3 * (int)self->opts.heartbeat_ms;
    TC_ZMQ_TRY(zmq_setsockopt(self->sock, ZMQ_IMMEDIATE, &one, sizeof one));
    TC_ZMQ_TRY(zmq_setsockopt(self->sock, ZMQ_RECONNECT_IVL, &ivl, sizeof ivl));
    TC_ZMQ_TRY(zmq_setsockopt(self->sock, ZMQ_RECONNECT_IVL_MAX, &ivl_max, sizeof ivl_max));
    TC_ZMQ_TRY(zmq_setsockopt(self->sock, ZMQ_HEARTBEAT_IVL, &hb, sizeof hb));
    TC_ZMQ_TRY(zmq_setsockopt(self->sock, ZMQ_HEARTBEAT_TIMEOUT, &hb_timeout, sizeof hb_timeout));
    if (!self->opts.insecure) {
        TC_ZMQ_TRY(zmq_setsockopt(self->sock, ZMQ_CURVE_SERVERKEY, self->server_key,
                                  TC_KEY_Z85_LEN + 1));
        TC_ZMQ_TRY(zmq_setsockopt(self->sock, ZMQ_CURVE_PUBLICKEY, self->keys.public_z85,
                                  TC_KEY_Z85_LEN + 1));
        TC_ZMQ_TRY(zmq_setsockopt(self->sock, ZMQ_CURVE_SECRETKEY, self->keys.secret_z85,
                                  TC_KEY_Z85_LEN + 1));
    }
    char mon_ep[96];
    snprintf(mon_ep, sizeof mon_ep, "inproc://tc-link-monitor-%p-%u", (void *)self,
             self->generation++);
    TC_ZMQ_TRY(zmq_socket_monitor(self->sock, mon_ep,
                                  ZMQ_EVENT_HANDSHAKE_SUCCEEDED | ZMQ_EVENT_DISCONNECTED |
                                      ZMQ_EVENT_HANDSHAKE_FAILED_AUTH |
                                      ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL |
                                      ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL));
    self->mon = zmq_socket(self->ctx, ZMQ_PAIR);
    if (!self->mon) {
        rc = tc_zmq_fail("zmq_socket(ZMQ_PAIR)", __FILE__, __LINE__);
        goto err;
    }
    TC_ZMQ_TRY(zmq_connect(self->mon, mon_ep));
    if (zmq_connect(self->sock, self->endpoint) != 0) {
        rc = tc_fail(TC_EUSAGE, "cannot connect to '%s': %s (expected tcp://HOST:PORT)",
                     self->endpoint, zmq_strerror(zmq_errno()));
        goto err;
    }
    return 0;
err:
    s_close_socket(self);
    return rc;
}

int tc_link_set_hello(tc_link_t *self, const Traincast__V1__Hello *hello)
{
    size_t n = traincast__v1__hello__get_packed_size(hello);
    uint8_t *b = malloc(n ? n : 1);
    if (!b)
        return tc_fail(TC_ENOMEM, "out of memory");
    traincast__v1__hello__pack(hello, b);
    free(self->hello_body);
    self->hello_body = b;
    self->hello_len = n;
    return 0;
}

int tc_link_new(const tc_link_opts_t *opts, tc_spool_t *spool, tc_link_t **out)
{
    *out = NULL;
    if (!opts->endpoint || !*opts->endpoint)
        return tc_fail(TC_EUSAGE, "no aggregator given: pass --aggregator tcp://HOST:5555");
    if (!opts->hello || !opts->hello->agent_name)
        return tc_fail(TC_EINVAL, "internal: a link needs a Hello with the agent name");
    int rc = 0;
    if (!opts->insecure) {
        if (!opts->keys || !opts->server_key)
            return tc_fail(TC_EINVAL, "internal: a secure link needs the agent keys and the "
                                      "aggregator's public key");
        if ((rc = tc_curve_check()) < 0)
            return rc;
    }
    tc_link_t *self = calloc(1, sizeof *self);
    if (!self)
        return tc_fail(TC_ENOMEM, "out of memory");
    self->opts = *opts;
    if (!self->opts.window)
        self->opts.window = S_DEFAULT_WINDOW;
    if (!self->opts.heartbeat_ms)
        self->opts.heartbeat_ms = S_DEFAULT_HEARTBEAT_MS;
    if (!self->opts.ack_timeout_ms)
        self->opts.ack_timeout_ms = S_DEFAULT_ACK_TIMEOUT_MS;
    if (!self->opts.max_backoff_ms)
        self->opts.max_backoff_ms = S_DEFAULT_MAX_BACKOFF_MS;
    if (!self->opts.max_message_bytes)
        self->opts.max_message_bytes = TC_MAX_MESSAGE_BYTES;
    self->opts.hello = NULL;
    self->spool = spool;
    self->endpoint = strdup(opts->endpoint);
    self->agent_id = strdup(opts->agent_id);
    self->flight = calloc(self->opts.window, sizeof *self->flight);
    if (!self->endpoint || !self->agent_id || !self->flight)
        TC_FAIL_GOTO(TC_ENOMEM, "out of memory");
    if (!opts->insecure) {
        self->keys = *opts->keys;
        snprintf(self->server_key, sizeof self->server_key, "%s", opts->server_key);
    }
    TC_TRY(tc_link_set_hello(self, opts->hello));
    const char *ack_log = getenv("TRAINCAST_ACK_LOG");
    if (ack_log && *ack_log) {
        self->ack_log = fopen(ack_log, "a");
        if (!self->ack_log)
            TC_FAIL_GOTO(TC_EIO, "cannot open the ack log '%s' (TRAINCAST_ACK_LOG): %s", ack_log,
                         strerror(errno));
        setvbuf(self->ack_log, NULL, _IOLBF, 0);
    }
    self->ctx = zmq_ctx_new();
    if (!self->ctx)
        TC_FAIL_GOTO(TC_ENET, "cannot create a ZeroMQ context: %s", zmq_strerror(zmq_errno()));
    TC_TRY(s_open_socket(self));
    self->started_ms = self->last_hb_ms = tc_link_now_ms();
    *out = self;
    return 0;
err:
    tc_link_destroy(&self);
    return rc;
}

void tc_link_destroy(tc_link_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    tc_link_t *self = *self_p;
    s_close_socket(self);
    if (self->ctx)
        zmq_ctx_term(self->ctx);
    memset(&self->keys, 0, sizeof self->keys);
    if (self->ack_log)
        fclose(self->ack_log);
    free(self->hello_body);
    free(self->flight);
    free(self->endpoint);
    free(self->agent_id);
    free(self);
    *self_p = NULL;
}

void tc_link_set_running_job(tc_link_t *self, const char *job_id)
{
    snprintf(self->running_job, sizeof self->running_job, "%s", job_id ? job_id : "");
}

void tc_link_stats(tc_link_t *self, tc_link_stats_t *out)
{
    *out = self->stats;
    out->in_flight = self->n_flight;
    out->spooled = tc_spool_count(self->spool);
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

static int s_send_heartbeat(tc_link_t *self)
{
    Traincast__V1__Heartbeat hb = TRAINCAST__V1__HEARTBEAT__INIT;
    size_t backlog = tc_spool_count(self->spool);
    hb.spool_backlog = backlog > UINT32_MAX ? UINT32_MAX : (uint32_t)backlog;
    hb.uptime_s = (uint64_t)((tc_link_now_ms() - self->started_ms) / 1000);
    hb.running_job_id = self->running_job;
    tc_envelope_t env = TRAINCAST__V1__ENVELOPE__INIT;
    env.body_case = TRAINCAST__V1__ENVELOPE__BODY_HEARTBEAT;
    env.heartbeat = &hb;
    char id[TC_MSGID_LEN + 1];
    return s_send_control(self, &env, id);
}

static s_flight_t *s_flight_find(tc_link_t *self, const char *id)
{
    for (size_t i = 0; i < self->n_flight; i++) {
        if (!strcmp(self->flight[i].id, id))
            return &self->flight[i];
    }
    return NULL;
}

static void s_flight_drop(tc_link_t *self, const char *id)
{
    s_flight_t *f = s_flight_find(self, id);
    if (!f)
        return;
    *f = self->flight[--self->n_flight];
}

/* Send one spooled message. Returns 1 sent, 0 later, <0 error. A message
 * that cannot be read is rejected locally. */
static int s_send_spooled(tc_link_t *self, s_flight_t *f, int64_t now)
{
    uint8_t *buf = NULL;
    size_t len = 0;
    int rc = tc_spool_read(self->spool, f->id, &buf, &len);
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
        tc_log_error("spool: message %s cannot be sent (%s); moving it to %s/rejected", id,
                     tc_errmsg(), tc_spool_dir(self->spool));
        tc_spool_reject(self->spool, id, tc_errmsg());
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

static int s_pump(tc_link_t *self)
{
    if (!self->stats.connected)
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
            rc = s_send_spooled(self, &self->flight[i], now);
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
    size_t n = tc_spool_oldest(self->spool, ids, want);
    for (size_t i = 0; i < n && self->n_flight < self->opts.window; i++) {
        if (s_flight_find(self, ids[i]))
            continue;
        s_flight_t *f = &self->flight[self->n_flight++];
        memcpy(f->id, ids[i], sizeof f->id);
        f->sends = 0;
        f->backoff_ms = self->opts.ack_timeout_ms;
        rc = s_send_spooled(self, f, now);
        if (rc < 0)
            break;
        if (rc == 0)
            break; /* socket full: the rest waits */
    }
    free(ids);
    return rc < 0 ? rc : 0;
}

/* ---- receiving ---- */

static void s_on_connected(tc_link_t *self)
{
    int64_t now = tc_link_now_ms();
    self->stats.connected = true;
    self->stats.connections++;
    self->last_rx_ms = now;
    self->warned_refused = false;
    tc_log_info("%s aggregator %s (%zu message%s spooled)",
                self->stats.connections > 1 ? "reconnected to" : "connected to", self->endpoint,
                tc_spool_count(self->spool), tc_spool_count(self->spool) == 1 ? "" : "s");
    /* Whatever was in flight may have been lost with the old connection. */
    for (size_t i = 0; i < self->n_flight; i++)
        self->flight[i].due_ms = now;
    self->hello_pending = true;
    self->hello_due_ms = now;
    self->hello_backoff_ms = self->opts.ack_timeout_ms;
}

static void s_handle_events(tc_link_t *self)
{
    uint16_t ev;
    uint32_t val;
    char addr[256];
    while (self->mon && tc_zmq_monitor_read(self->mon, &ev, &val, addr, sizeof addr) == 1) {
        switch (ev) {
        case ZMQ_EVENT_HANDSHAKE_SUCCEEDED:
            s_on_connected(self);
            break;
        case ZMQ_EVENT_DISCONNECTED:
            if (self->stats.connected)
                tc_log_warn("lost the connection to aggregator %s; reconnecting (%zu messages "
                            "unacknowledged will be sent again)",
                            self->endpoint, self->n_flight);
            self->stats.connected = false;
            break;
        case ZMQ_EVENT_HANDSHAKE_FAILED_AUTH:
            self->stats.auth_failures++;
            if (!self->warned_refused)
                tc_log_error("aggregator %s refused this agent's key %s (status %u): add the "
                             "line of agent.pub to the aggregator's allowlist and send it "
                             "SIGHUP; check that --server-key is the aggregator's key",
                             self->endpoint, self->opts.insecure ? "-" : self->keys.public_z85,
                             val);
            self->warned_refused = true;
            break;
        case ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL:
        case ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL:
            /* Also seen when the aggregator goes away mid-handshake: not fatal. */
            self->stats.handshake_failures++;
            if (!self->warned_refused)
                tc_log_error("handshake with aggregator %s failed (%s, code 0x%x): both sides "
                             "must use CURVE, or both --insecure; check --server-key",
                             self->endpoint, tc_zmq_event_name(ev), val);
            self->warned_refused = true;
            break;
        default:
            break;
        }
    }
}

static void s_on_ack(tc_link_t *self, const Traincast__V1__Ack *ack)
{
    const char *id = ack->message_id ? ack->message_id : "";
    if (!strcmp(id, self->hello_id)) {
        self->hello_pending = false;
        return;
    }
    bool known = tc_spool_contains(self->spool, id);
    if (known)
        s_ack_log(self, s_flight_find(self, id), ack->duplicate ? "duplicate" : "stored");
    s_flight_drop(self, id);
    if (!known)
        return; /* a second ack for something already deleted */
    if (tc_spool_remove(self->spool, id) < 0)
        tc_log_warn("%s", tc_errmsg());
    self->stats.acked++;
    if (ack->duplicate)
        self->stats.duplicates++;
}

static void s_on_nack(tc_link_t *self, const Traincast__V1__Nack *nack)
{
    const char *id = nack->message_id ? nack->message_id : "";
    const char *why = nack->reason && *nack->reason ? nack->reason : "no reason given";
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
        tc_log_error("the aggregator rejected message %s for good: %s; moved to %s/rejected", id,
                     why, tc_spool_dir(self->spool));
        if (tc_spool_contains(self->spool, id))
            s_ack_log(self, s_flight_find(self, id), "rejected");
        s_flight_drop(self, id);
        if (tc_spool_contains(self->spool, id)) {
            if (tc_spool_reject(self->spool, id, why) < 0)
                tc_log_warn("%s", tc_errmsg());
            self->stats.rejected++;
        }
        return;
    }
    s_flight_t *f = s_flight_find(self, id);
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

static int s_receive(tc_link_t *self)
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

int tc_link_step(tc_link_t *self, int timeout_ms)
{
    int rc = 0;
    if (!self->sock && (rc = s_open_socket(self)) < 0)
        return rc;
    int64_t now = tc_link_now_ms();
    /* Wake up in time for the next due send or heartbeat. */
    int64_t next = now + timeout_ms;
    if (self->stats.connected) {
        if (self->last_hb_ms + self->opts.heartbeat_ms < next)
            next = self->last_hb_ms + self->opts.heartbeat_ms;
        for (size_t i = 0; i < self->n_flight; i++)
            if (self->flight[i].due_ms < next)
                next = self->flight[i].due_ms;
        if (self->hello_pending && self->hello_due_ms < next)
            next = self->hello_due_ms;
    }
    long wait = next > now ? (long)(next - now) : 0;
    zmq_pollitem_t items[2] = {{self->sock, 0, ZMQ_POLLIN, 0}, {self->mon, 0, ZMQ_POLLIN, 0}};
    if (zmq_poll(items, 2, wait) < 0 && zmq_errno() != EINTR)
        return tc_zmq_fail("zmq_poll", __FILE__, __LINE__);
    s_handle_events(self);
    if ((rc = s_receive(self)) < 0)
        return rc;

    now = tc_link_now_ms();
    if (self->stats.connected && now - self->last_rx_ms > 3 * (int64_t)self->opts.heartbeat_ms) {
        tc_log_warn("no word from aggregator %s for %lld s; opening a new connection",
                    self->endpoint, (long long)((now - self->last_rx_ms) / 1000));
        s_close_socket(self);
        return s_open_socket(self);
    }
    if (self->stats.connected && now - self->last_hb_ms >= (int64_t)self->opts.heartbeat_ms) {
        if ((rc = s_send_heartbeat(self)) < 0)
            return rc;
        self->last_hb_ms = now;
    }
    return s_pump(self);
}

int tc_link_drain(tc_link_t *self, int64_t timeout_ms, volatile sig_atomic_t *stop,
                  bool show_progress)
{
    int64_t start = tc_link_now_ms();
    size_t total = tc_spool_count(self->spool);
    uint64_t base = self->stats.acked + self->stats.rejected;
    tc_progress_t *bar = show_progress && total ? tc_progress_new("sending", total) : NULL;
    int rc = 0;
    while (tc_spool_count(self->spool) > 0) {
        if (stop && *stop) {
            rc = tc_fail(TC_EINTR, "interrupted with %zu messages still spooled in %s; they are "
                                   "sent on the next start",
                         tc_spool_count(self->spool), tc_spool_dir(self->spool));
            break;
        }
        if (self->stats.auth_failures && !self->stats.connected) {
            rc = tc_fail(TC_ENET,
                         "aggregator %s refused the connection (key not allowlisted, wrong "
                         "--server-key, or CURVE/--insecure mismatch); %zu messages stay "
                         "spooled in %s",
                         self->endpoint, tc_spool_count(self->spool), tc_spool_dir(self->spool));
            break;
        }
        if (timeout_ms > 0 && tc_link_now_ms() - start > timeout_ms) {
            rc = tc_fail(TC_ETIMEOUT,
                         "%zu messages not yet acknowledged by aggregator %s after %lld s (%s); "
                         "they stay spooled in %s and are sent on the next start",
                         tc_spool_count(self->spool), self->endpoint,
                         (long long)(timeout_ms / 1000),
                         self->stats.connections ? "connected" : "never connected",
                         tc_spool_dir(self->spool));
            break;
        }
        if ((rc = tc_link_step(self, 200)) < 0)
            break;
        if (bar) {
            uint64_t done = self->stats.acked + self->stats.rejected - base;
            tc_progress_update(bar, done < total ? done : total, NULL);
        }
    }
    if (bar) {
        uint64_t done = self->stats.acked + self->stats.rejected - base;
        tc_progress_update(bar, done < total ? done : total, NULL);
        tc_progress_destroy(&bar);
    }
    return rc;
}
