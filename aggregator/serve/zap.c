#include "zap.h"
#include "allowlist.h"

#include "tc_error.h"
#include "tc_log.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zmq.h>

#define S_REFUSED_LOG_EVERY_S 60
#define S_REFUSED_REMEMBERED 64
#define S_REFUSED_LOG_BURST 10 /* refusal lines per minute, whatever the keys */

typedef struct {
    char key[TC_KEY_Z85_LEN + 1];
    time_t logged;
} s_refused_t;

struct tc_zap {
    void *ctx;
    char *path;
    pthread_t thread;
    bool started;
    atomic_int stop;
    pthread_mutex_t lock;
    tc_allowlist_t *list;
    void *sock; /* owned by the thread */
    int bind_rc;
    char bind_err[512];
    pthread_mutex_t ready_lock;
    pthread_cond_t ready;
    bool ready_flag;
    s_refused_t refused[S_REFUSED_REMEMBERED]; /* one line per key a minute */
    tc_ratelimit_t refusal_lines;              /* and a cap on all of them */
};

static long long s_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* A refusal line, unless the cap on them is reached. */
static bool s_may_log(tc_zap_t *self)
{
    return tc_ratelimit_allow(&self->refusal_lines, s_now_ms());
}

static void s_log_suppressed(tc_zap_t *self)
{
    unsigned n = tc_ratelimit_flush(&self->refusal_lines, s_now_ms());
    if (n)
        tc_log_warn("authentication: %u more refused handshake%s not logged (at most %d lines a "
                    "minute)",
                    n, n == 1 ? " was" : "s were", S_REFUSED_LOG_BURST);
}

static bool s_should_log_refusal(tc_zap_t *self, const char *key)
{
    time_t now = time(NULL);
    size_t oldest = 0;
    for (size_t i = 0; i < S_REFUSED_REMEMBERED; i++) {
        if (!strcmp(self->refused[i].key, key)) {
            if (now - self->refused[i].logged < S_REFUSED_LOG_EVERY_S)
                return false;
            self->refused[i].logged = now;
            return true;
        }
        if (self->refused[i].logged < self->refused[oldest].logged)
            oldest = i;
    }
    snprintf(self->refused[oldest].key, sizeof self->refused[oldest].key, "%s", key);
    self->refused[oldest].logged = now;
    return true;
}

/* Receive all frames of one request (at most 8). */
static int s_recv_request(void *sock, zmq_msg_t *frames, int max)
{
    int n = 0;
    for (;;) {
        zmq_msg_t m;
        zmq_msg_init(&m);
        if (zmq_msg_recv(&m, sock, 0) < 0) {
            zmq_msg_close(&m);
            return -1;
        }
        int more = zmq_msg_more(&m);
        if (n < max) {
            frames[n++] = m;
        } else {
            zmq_msg_close(&m);
        }
        if (!more)
            break;
    }
    return n;
}

static void s_send_reply(void *sock, zmq_msg_t *request_id, const char *status,
                         const char *text, const char *user)
{
    zmq_send(sock, "1.0", 3, ZMQ_SNDMORE);
    zmq_send(sock, zmq_msg_data(request_id), zmq_msg_size(request_id), ZMQ_SNDMORE);
    zmq_send(sock, status, strlen(status), ZMQ_SNDMORE);
    zmq_send(sock, text, strlen(text), ZMQ_SNDMORE);
    zmq_send(sock, user, strlen(user), ZMQ_SNDMORE);
    zmq_send(sock, "", 0, 0);
}

static void s_handle(tc_zap_t *self)
{
    zmq_msg_t f[8];
    int n = s_recv_request(self->sock, f, 8);
    if (n < 0)
        return;
    if (n < 6) {
        tc_log_warn("authentication: ignored a malformed ZAP request of %d frames", n);
        for (int i = 0; i < n; i++)
            zmq_msg_close(&f[i]);
        return;
    }
    char mech[32] = "", addr[128] = "";
    snprintf(mech, sizeof mech, "%.*s", (int)zmq_msg_size(&f[5]), (const char *)zmq_msg_data(&f[5]));
    snprintf(addr, sizeof addr, "%.*s", (int)zmq_msg_size(&f[3]), (const char *)zmq_msg_data(&f[3]));
    if (!strcmp(mech, "CURVE") && n >= 7 && zmq_msg_size(&f[6]) == 32) {
        char key[TC_KEY_Z85_LEN + 1];
        zmq_z85_encode(key, zmq_msg_data(&f[6]), 32);
        pthread_mutex_lock(&self->lock);
        const char *label = self->list ? tc_allowlist_find(self->list, key) : NULL;
        char lab[TC_ALLOWLIST_LABEL_MAX + 1];
        snprintf(lab, sizeof lab, "%s", label ? label : "");
        pthread_mutex_unlock(&self->lock);
        if (label) {
            tc_log_debug("authentication: accepted key %s (%s) from %s", key, lab, addr);
            s_send_reply(self->sock, &f[1], "200", "OK", key);
        } else {
            if (s_should_log_refusal(self, key) && s_may_log(self))
                tc_log_warn("authentication: refused agent key %s from %s: not in the allowlist "
                            "%s (add the agent's agent.pub line there and send SIGHUP)",
                            key, addr, self->path);
            s_send_reply(self->sock, &f[1], "400", "key not in the allowlist", "");
        }
    } else {
        if (s_may_log(self))
            tc_log_warn("authentication: refused a %.32s handshake from %s: this aggregator "
                        "requires CURVE",
                        mech, addr);
        s_send_reply(self->sock, &f[1], "400", "CURVE required", "");
    }
    for (int i = 0; i < n; i++)
        zmq_msg_close(&f[i]);
}

static void *s_thread(void *arg)
{
    tc_zap_t *self = arg;
    self->sock = zmq_socket(self->ctx, ZMQ_REP);
    int linger = 0;
    if (!self->sock || zmq_setsockopt(self->sock, ZMQ_LINGER, &linger, sizeof linger) != 0 ||
        zmq_bind(self->sock, "inproc://zeromq.zap.01") != 0) {
        self->bind_rc = -1;
        snprintf(self->bind_err, sizeof self->bind_err, "%s", zmq_strerror(zmq_errno()));
    }
    pthread_mutex_lock(&self->ready_lock);
    self->ready_flag = true;
    pthread_cond_signal(&self->ready);
    pthread_mutex_unlock(&self->ready_lock);
    while (self->bind_rc == 0 && !atomic_load(&self->stop)) {
        zmq_pollitem_t it = {self->sock, 0, ZMQ_POLLIN, 0};
        int r = zmq_poll(&it, 1, 200);
        if (r < 0 && zmq_errno() == ETERM)
            break;
        if (r > 0)
            s_handle(self);
        s_log_suppressed(self);
    }
    if (self->sock)
        zmq_close(self->sock);
    self->sock = NULL;
    return NULL;
}

int tc_zap_start(void *ctx, const char *path, tc_zap_t **out)
{
    *out = NULL;
    tc_zap_t *self = calloc(1, sizeof *self);
    if (!self || !(self->path = strdup(path))) {
        free(self);
        return tc_fail(TC_ENOMEM, "out of memory");
    }
    self->ctx = ctx;
    self->refusal_lines.burst = S_REFUSED_LOG_BURST;
    self->refusal_lines.window_ms = 60000;
    pthread_mutex_init(&self->lock, NULL);
    pthread_mutex_init(&self->ready_lock, NULL);
    pthread_cond_init(&self->ready, NULL);
    int rc = tc_allowlist_load(path, &self->list);
    if (rc < 0) {
        tc_zap_stop(&self);
        return rc;
    }
    if (tc_allowlist_count(self->list) == 0)
        tc_log_warn("the allowlist %s lists no agent key: every agent will be refused", path);
    if (pthread_create(&self->thread, NULL, s_thread, self) != 0) {
        tc_zap_stop(&self);
        return tc_fail(TC_ENOMEM, "cannot start the authentication thread");
    }
    self->started = true;
    pthread_mutex_lock(&self->ready_lock);
    while (!self->ready_flag)
        pthread_cond_wait(&self->ready, &self->ready_lock);
    pthread_mutex_unlock(&self->ready_lock);
    if (self->bind_rc != 0) {
        rc = tc_fail(TC_ENET, "cannot start the ZAP authentication handler: %s", self->bind_err);
        tc_zap_stop(&self);
        return rc;
    }
    tc_log_info("authentication: %zu agent key%s allowed (%s)", tc_allowlist_count(self->list),
                tc_allowlist_count(self->list) == 1 ? "" : "s", path);
    *out = self;
    return 0;
}

int tc_zap_reload(tc_zap_t *self)
{
    tc_allowlist_t *fresh = NULL;
    int rc = tc_allowlist_load(self->path, &fresh);
    if (rc < 0)
        return tc_err_context(rc, "keeping the previous allowlist");
    pthread_mutex_lock(&self->lock);
    tc_allowlist_t *old = self->list;
    self->list = fresh;
    memset(self->refused, 0, sizeof self->refused);
    pthread_mutex_unlock(&self->lock);
    tc_log_info("authentication: reloaded %s: %zu agent key%s allowed", self->path,
                tc_allowlist_count(fresh), tc_allowlist_count(fresh) == 1 ? "" : "s");
    tc_allowlist_destroy(&old);
    return 0;
}

bool tc_zap_allows(tc_zap_t *self, const char *key_z85)
{
    pthread_mutex_lock(&self->lock);
    bool ok = self->list && tc_allowlist_find(self->list, key_z85) != NULL;
    pthread_mutex_unlock(&self->lock);
    return ok;
}

void tc_zap_stop(tc_zap_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    tc_zap_t *self = *self_p;
    if (self->started) {
        atomic_store(&self->stop, 1);
        pthread_join(self->thread, NULL);
    }
    tc_allowlist_destroy(&self->list);
    pthread_mutex_destroy(&self->lock);
    pthread_mutex_destroy(&self->ready_lock);
    pthread_cond_destroy(&self->ready);
    free(self->path);
    free(self);
    *self_p = NULL;
}
