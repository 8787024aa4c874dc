#include "link_internal.h"

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
    self->peers_up = 0;
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
    /* Several endpoints: the DEALER sends to each connected one in turn, and
     * a message whose answer does not come is sent again to any. */
    for (size_t i = 0; i < self->n_endpoints; i++) {
        if (zmq_connect(self->sock, self->endpoints[i]) != 0) {
            rc = tc_fail(TC_EUSAGE, "cannot connect to '%s': %s (expected tcp://HOST:PORT)",
                         self->endpoints[i], zmq_strerror(zmq_errno()));
            goto err;
        }
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

/* self->endpoint: one endpoint, or several separated by commas (several
 * `aggregator serve` processes on one database). */
static int s_split_endpoints(tc_link_t *self)
{
    size_t n = 1;
    for (const char *p = self->endpoint; *p; p++)
        n += *p == ',';
    if (n > TC_LINK_MAX_ENDPOINTS)
        return tc_fail(TC_EUSAGE, "--aggregator names %zu endpoints; at most %d", n,
                       TC_LINK_MAX_ENDPOINTS);
    self->endpoints = calloc(n, sizeof *self->endpoints);
    if (!self->endpoints)
        return tc_fail(TC_ENOMEM, "out of memory");
    const char *p = self->endpoint;
    for (size_t i = 0; i < n; i++) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        while (len && (*p == ' ' || *p == '\t'))
            p++, len--;
        while (len && (p[len - 1] == ' ' || p[len - 1] == '\t'))
            len--;
        if (!len)
            return tc_fail(TC_EUSAGE, "--aggregator '%s': an empty endpoint (expected "
                                      "tcp://HOST:PORT[,tcp://HOST:PORT...])",
                           self->endpoint);
        self->endpoints[i] = strndup(p, len);
        if (!self->endpoints[i])
            return tc_fail(TC_ENOMEM, "out of memory");
        self->n_endpoints = i + 1;
        p = end ? end + 1 : p + len;
    }
    return 0;
}

int tc_link_new(const tc_link_opts_t *opts, tc_journal_t *journal, tc_link_t **out)
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
    self->journal = journal;
    self->endpoint = strdup(opts->endpoint);
    self->agent_id = strdup(opts->agent_id);
    self->flight = calloc(self->opts.window, sizeof *self->flight);
    if (!self->endpoint || !self->agent_id || !self->flight)
        TC_FAIL_GOTO(TC_ENOMEM, "out of memory");
    TC_TRY(s_split_endpoints(self));
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
    for (size_t i = 0; i < self->n_endpoints; i++)
        free(self->endpoints[i]);
    free(self->endpoints);
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
    out->waiting = tc_journal_waiting(self->journal);
}

/* ---- connection events ---- */

/* Index of `addr` among the connected aggregators, or -1. */
static int s_up_index(const tc_link_t *self, const char *addr)
{
    for (size_t i = 0; i < self->peers_up; i++)
        if (strcmp(self->up[i], addr) == 0)
            return (int)i;
    return -1;
}

static void s_on_connected(tc_link_t *self, const char *addr)
{
    int64_t now = tc_link_now_ms();
    if (s_up_index(self, addr) < 0 && self->peers_up < TC_LINK_MAX_ENDPOINTS)
        snprintf(self->up[self->peers_up++], sizeof self->up[0], "%s", addr);
    self->stats.connected = true;
    self->stats.connections++;
    self->last_rx_ms = now;
    self->warned_refused = false;
    /* With several aggregators, one more joining is a connection, not a
     * reconnection. */
    tc_log_info("%s aggregator %s (%zu message%s waiting)",
                self->stats.connections > 1 && self->peers_up == 1 ? "reconnected to"
                                                                   : "connected to",
                self->n_endpoints > 1 ? addr : self->endpoint, tc_journal_waiting(self->journal),
                tc_journal_waiting(self->journal) == 1 ? "" : "s");
    /* Whatever was in flight may have been lost with the old connection. */
    for (size_t i = 0; i < self->n_flight; i++)
        self->flight[i].due_ms = now;
    /* A Hello on each connection (with several aggregators it reaches one
     * of them: each learns of the agent from its heartbeats too). */
    self->hello_pending = true;
    self->hello_due_ms = now;
    self->hello_backoff_ms = self->opts.ack_timeout_ms;
}

static void s_on_disconnected(tc_link_t *self, const char *addr)
{
    int i = s_up_index(self, addr);
    if (i < 0)
        return; /* a connection that never finished its handshake */
    memmove(self->up[i], self->up[i + 1], (self->peers_up - (size_t)i - 1) * sizeof self->up[0]);
    self->peers_up--;
    if (self->peers_up > 0) {
        /* Another aggregator is still connected: what the lost one held
         * unanswered goes to it now. */
        tc_log_warn("lost the connection to aggregator %s; %zu message%s unacknowledged go to "
                    "the %zu still connected",
                    addr, self->n_flight, self->n_flight == 1 ? "" : "s", self->peers_up);
        int64_t now = tc_link_now_ms();
        for (size_t k = 0; k < self->n_flight; k++)
            self->flight[k].due_ms = now;
        return;
    }
    tc_log_warn("lost the connection to aggregator %s; reconnecting (%zu messages "
                "unacknowledged will be sent again)",
                self->n_endpoints > 1 ? addr : self->endpoint, self->n_flight);
    self->stats.connected = false;
}

static void s_handle_events(tc_link_t *self)
{
    uint16_t ev;
    uint32_t val;
    char addr[256];
    while (self->mon && tc_zmq_monitor_read(self->mon, &ev, &val, addr, sizeof addr) == 1) {
        switch (ev) {
        case ZMQ_EVENT_HANDSHAKE_SUCCEEDED:
            s_on_connected(self, addr);
            break;
        case ZMQ_EVENT_DISCONNECTED:
            s_on_disconnected(self, addr);
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

int tc_link_step(tc_link_t *self, int timeout_ms)
{
    int rc = 0;
    if (self->stats.revoked) {
        /* Nothing is sent any more, but the acks of what was stored before
         * the key was removed may still come: take them meanwhile (callers
         * that go on stepping, a job winding down, wait rather than spin). */
        zmq_pollitem_t it = {self->sock, 0, ZMQ_POLLIN, 0};
        if (!self->sock) {
            struct timespec ts = {timeout_ms / 1000, (long)(timeout_ms % 1000) * 1000000L};
            nanosleep(&ts, NULL);
        } else if (zmq_poll(&it, 1, timeout_ms) > 0) {
            tc_link_receive(self);
        }
        return tc_fail(TC_ENET,
                       "aggregator %s removed this agent's key from its allowlist; %zu "
                       "message%s wait in %s (add the line of agent.pub to the aggregator's "
                       "allowlist again and send it SIGHUP, then run agent push)",
                       self->endpoint, tc_journal_waiting(self->journal),
                       tc_journal_waiting(self->journal) == 1 ? "" : "s",
                       tc_journal_path(self->journal));
    }
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
    if ((rc = tc_link_receive(self)) < 0)
        return rc;

    now = tc_link_now_ms();
    if (self->stats.connected && now - self->last_rx_ms > 3 * (int64_t)self->opts.heartbeat_ms) {
        tc_log_warn("no word from aggregator %s for %lld s; opening a new connection",
                    self->endpoint, (long long)((now - self->last_rx_ms) / 1000));
        s_close_socket(self);
        return s_open_socket(self);
    }
    if (self->stats.connected && now - self->last_hb_ms >= (int64_t)self->opts.heartbeat_ms) {
        if ((rc = tc_link_send_heartbeat(self)) < 0)
            return rc;
        self->last_hb_ms = now;
    }
    return tc_link_pump(self);
}

int tc_link_drain(tc_link_t *self, int64_t timeout_ms, volatile sig_atomic_t *stop,
                  bool show_progress)
{
    int64_t start = tc_link_now_ms();
    size_t total = tc_journal_waiting(self->journal);
    uint64_t base = self->stats.acked + self->stats.rejected;
    tc_progress_t *bar = show_progress && total ? tc_progress_new("sending", total) : NULL;
    int rc = 0;
    while (tc_journal_waiting(self->journal) > 0) {
        if (stop && *stop) {
            rc = tc_fail(TC_EINTR, "interrupted with %zu messages still waiting in %s; they "
                                   "are sent on the next start",
                         tc_journal_waiting(self->journal), tc_journal_path(self->journal));
            break;
        }
        if (self->stats.auth_failures && !self->stats.connected) {
            rc = tc_fail(TC_ENET,
                         "aggregator %s refused the connection (key not allowlisted, wrong "
                         "--server-key, or CURVE/--insecure mismatch); %zu messages wait "
                         "in %s",
                         self->endpoint, tc_journal_waiting(self->journal), tc_journal_path(self->journal));
            break;
        }
        if (timeout_ms > 0 && tc_link_now_ms() - start > timeout_ms) {
            rc = tc_fail(TC_ETIMEOUT,
                         "%zu messages not yet acknowledged by aggregator %s after %lld s (%s); "
                         "they wait in %s and are sent on the next start",
                         tc_journal_waiting(self->journal), self->endpoint,
                         (long long)(timeout_ms / 1000),
                         self->stats.connections ? "connected" : "never connected",
                         tc_journal_path(self->journal));
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
