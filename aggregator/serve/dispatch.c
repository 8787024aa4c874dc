/* Connected agents and job dispatch. Runs on the server loop's thread with
 * its own database connection, which also LISTENs for new jobs. */
#include "server_internal.h"

#include "tc_cli.h"
#include "tc_error.h"
#include "tc_log.h"
#include "tc_zmq.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zmq.h>

#define S_MAX_ATTEMPTS 3
#define S_DB_RETRY_MS 2000
#define S_PASS_EVERY_MS 5000
#define S_FORGET_AFTER_MS (10 * 60 * 1000)

typedef struct {
    char agent_id[TC_MAX_NAME_LEN + 1];
    uint8_t route[TC_ROUTE_MAX];
    size_t route_len;
    char key[TC_KEY_Z85_LEN + 1];
    int64_t heard_ms;
    bool accepts_jobs;
    char **uuids, **names;
    size_t n_devices;
    char job_id[TC_JOB_ID_MAX + 1]; /* dispatched and not known to have ended */
    int64_t job_since_ms;
} s_peer_t;

struct tc_dispatch {
    tc_store_t *store;
    char *dsn;
    int64_t heartbeat_ms;
    s_peer_t *peers;
    size_t n, cap;
    bool listening;
    bool due;
    bool warned_down;
    bool adopted; /* active jobs read after the first connection */
    int64_t next_db_try_ms, next_sweep_ms, next_pass_ms;
};

static void s_peer_clear_devices(s_peer_t *p)
{
    tc_free_strv(p->uuids, p->n_devices);
    tc_free_strv(p->names, p->n_devices);
    p->uuids = p->names = NULL;
    p->n_devices = 0;
}

static s_peer_t *s_find(tc_dispatch_t *self, const char *agent_id)
{
    for (size_t i = 0; i < self->n; i++) {
        if (!strcmp(self->peers[i].agent_id, agent_id))
            return &self->peers[i];
    }
    return NULL;
}

static s_peer_t *s_get(tc_dispatch_t *self, const char *agent_id)
{
    s_peer_t *p = s_find(self, agent_id);
    if (p)
        return p;
    if (self->n == self->cap) {
        size_t nc = self->cap ? self->cap * 2 : 16;
        s_peer_t *np = realloc(self->peers, nc * sizeof *np);
        if (!np)
            return NULL;
        self->peers = np;
        self->cap = nc;
    }
    p = &self->peers[self->n++];
    memset(p, 0, sizeof *p);
    snprintf(p->agent_id, sizeof p->agent_id, "%s", agent_id);
    p->heard_ms = tc_server_now_ms();
    return p;
}

static int s_adopt_active(void *arg, int ncols, const char *const *names,
                          const char *const *values)
{
    tc_dispatch_t *self = arg;
    (void)ncols;
    (void)names;
    if (!values[0] || !values[1])
        return 0;
    s_peer_t *p = s_get(self, values[1]);
    if (!p)
        return tc_fail(TC_ENOMEM, "out of memory");
    snprintf(p->job_id, sizeof p->job_id, "%s", values[0]);
    p->job_since_ms = tc_server_now_ms();
    return 0;
}

static int s_listen(tc_dispatch_t *self)
{
    int rc = tc_store_listen(self->store, TC_CHANNEL_JOBS);
    self->listening = rc == 0;
    if (rc == 0)
        self->due = true; /* jobs may have been queued while we were not listening */
    return rc;
}

/* Connect, LISTEN, and (once) adopt the jobs that were running before a
 * restart: their agents have a while to show that they still run them. */
static int s_connect(tc_dispatch_t *self)
{
    int rc = self->store ? tc_store_ensure_connected(self->store)
                         : tc_store_open(self->dsn, &self->store);
    if (rc == 0)
        rc = s_listen(self);
    if (rc == 0 && !self->adopted) {
        rc = tc_store_select(self->store, "reading active jobs",
                             "SELECT job_id, agent_id FROM jobs WHERE state IN "
                             "('dispatched', 'running')",
                             0, NULL, s_adopt_active, self);
        self->adopted = rc == 0;
    }
    if (rc < 0)
        self->listening = false;
    return rc;
}

int tc_dispatch_new(const char *dsn, unsigned heartbeat_ms, tc_dispatch_t **out)
{
    *out = NULL;
    tc_dispatch_t *self = calloc(1, sizeof *self);
    if (!self || !(self->dsn = strdup(dsn))) {
        free(self);
        return tc_fail(TC_ENOMEM, "out of memory");
    }
    self->heartbeat_ms = heartbeat_ms;
    /* The database may be down now: dispatch then waits for it (tick). */
    int rc = s_connect(self);
    if (rc < 0 && rc != TC_EDB) {
        tc_dispatch_destroy(&self);
        return rc;
    }
    *out = self;
    return 0;
}

void tc_dispatch_destroy(tc_dispatch_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    tc_dispatch_t *self = *self_p;
    for (size_t i = 0; i < self->n; i++)
        s_peer_clear_devices(&self->peers[i]);
    free(self->peers);
    tc_store_destroy(&self->store);
    free(self->dsn);
    free(self);
    *self_p = NULL;
}

bool tc_dispatch_heard(tc_dispatch_t *self, const char *agent_id, const uint8_t *route,
                       size_t route_len, const char *key)
{
    s_peer_t *p = s_find(self, agent_id);
    if (key && (!p || strcmp(p->key, key) != 0)) {
        /* A key not seen with this id here before: the database knows whom
         * the id belongs to (tc_store_put_from binds it). If it cannot be
         * asked now, storing checks again. */
        char bound[TC_KEY_Z85_LEN + 1];
        bool found = false;
        if (self->store && tc_store_agent_key(self->store, agent_id, bound, &found) == 0 &&
            found && strcmp(bound, key) != 0)
            return false;
        if (!self->store || !found) {
            if (p && p->key[0] && strcmp(p->key, key) != 0)
                return false; /* the id is in use here by another key */
        }
    }
    if (!p)
        p = s_get(self, agent_id);
    if (!p)
        return true;
    if (route_len <= TC_ROUTE_MAX) {
        memcpy(p->route, route, route_len);
        p->route_len = route_len;
    }
    if (key)
        snprintf(p->key, sizeof p->key, "%s", key);
    p->heard_ms = tc_server_now_ms();
    return true;
}

void tc_dispatch_hello(tc_dispatch_t *self, const char *agent_id,
                       const Traincast__V1__Hello *hello)
{
    s_peer_t *p = s_get(self, agent_id);
    if (!p)
        return;
    s_peer_clear_devices(p);
    p->accepts_jobs = hello->accepts_jobs;
    size_t n = hello->n_devices;
    if (n) {
        p->uuids = calloc(n, sizeof *p->uuids);
        p->names = calloc(n, sizeof *p->names);
        if (!p->uuids || !p->names) {
            s_peer_clear_devices(p);
            return;
        }
        for (size_t i = 0; i < n; i++) {
            const Traincast__V1__Device *d = hello->devices[i];
            p->uuids[i] = strdup(d && d->uuid ? d->uuid : "");
            p->names[i] = strdup(d && d->name ? d->name : "");
            p->n_devices = i + 1;
            if (!p->uuids[i] || !p->names[i])
                break;
        }
    }
    tc_log_info("agent %s%s%s: %zu device%s%s", agent_id, p->key[0] ? " key " : "", p->key, n,
                n == 1 ? "" : "s", hello->accepts_jobs ? ", takes jobs" : "");
    self->due = true;
}

static void s_requeue(tc_dispatch_t *self, s_peer_t *p, const char *why)
{
    char state[16] = "";
    if (!self->store) {
        tc_log_warn("cannot requeue job %s (%s) while the database is down; trying again later",
                    p->job_id, why);
        return;
    }
    if (tc_store_job_requeue(self->store, p->job_id, why, S_MAX_ATTEMPTS, state, sizeof state) <
        0) {
        tc_log_warn("cannot requeue job %s: %s (trying again later)", p->job_id, tc_errmsg());
        return;
    }
    if (!strcmp(state, "queued"))
        tc_log_warn("job %s back in the queue: %s", p->job_id, why);
    else if (!strcmp(state, "failed"))
        tc_log_warn("job %s failed after %d attempts: %s", p->job_id, S_MAX_ATTEMPTS, why);
    p->job_id[0] = '\0';
    self->due = true;
}

void tc_dispatch_heartbeat(tc_dispatch_t *self, const char *agent_id,
                           const char *running_job_id)
{
    s_peer_t *p = s_find(self, agent_id);
    if (!p)
        return;
    const char *running = running_job_id ? running_job_id : "";
    if (strlen(running) > TC_JOB_ID_MAX)
        return;
    int64_t now = tc_server_now_ms();
    if (p->job_id[0]) {
        if (strcmp(running, p->job_id) != 0 && now - p->job_since_ms > 3 * self->heartbeat_ms) {
            char why[512];
            snprintf(why, sizeof why, "agent %s is not running it (it reports %s)", agent_id,
                     *running ? running : "no job");
            s_requeue(self, p, why);
        }
    } else if (*running) {
        snprintf(p->job_id, sizeof p->job_id, "%s", running);
        p->job_since_ms = now;
    }
}

void tc_dispatch_job_ended(tc_dispatch_t *self, const char *agent_id, const char *job_id)
{
    s_peer_t *p = s_find(self, agent_id);
    if (p && job_id && !strcmp(p->job_id, job_id)) {
        p->job_id[0] = '\0';
        self->due = true;
    }
}

int tc_dispatch_fd(tc_dispatch_t *self)
{
    return self->listening && self->store ? tc_store_socket(self->store) : -1;
}

void tc_dispatch_readable(tc_dispatch_t *self)
{
    int count = 0;
    if (tc_store_notifications(self->store, &count) < 0) {
        tc_log_warn("job notifications: %s; reconnecting", tc_errmsg());
        self->listening = false;
        return;
    }
    if (count)
        self->due = true;
}

/* Build and send the job's request with its job id and device filled in.
 * Returns 0, TC_EINVAL when the stored request is unreadable (retrying
 * cannot help), or another error when sending failed. */
static int s_send_job(void *router, s_peer_t *p, const tc_store_job_t *job)
{
    bool bench = !strcmp(job->kind, "bench");
    const ProtobufCMessageDescriptor *desc = bench ? &traincast__v1__bench_request__descriptor
                                                   : &traincast__v1__trace_request__descriptor;
    ProtobufCMessage *m = protobuf_c_message_unpack(desc, NULL, job->request_len, job->request);
    if (!m)
        return tc_fail(TC_EINVAL, "the stored request is not a valid %s", desc->short_name);
    tc_envelope_t env = TRAINCAST__V1__ENVELOPE__INIT;
    char **id_field, **uuid_field;
    if (bench) {
        env.body_case = TRAINCAST__V1__ENVELOPE__BODY_BENCH_REQUEST;
        env.bench_request = (Traincast__V1__BenchRequest *)m;
        id_field = &env.bench_request->job_id;
        uuid_field = &env.bench_request->device_uuid;
    } else {
        env.body_case = TRAINCAST__V1__ENVELOPE__BODY_TRACE_REQUEST;
        env.trace_request = (Traincast__V1__TraceRequest *)m;
        id_field = &env.trace_request->job_id;
        uuid_field = &env.trace_request->device_uuid;
    }
    /* Borrowed for packing; the unpacked strings go back before freeing. */
    char *old_id = *id_field, *old_uuid = *uuid_field;
    *id_field = (char *)job->job_id;
    *uuid_field = (char *)job->device_uuid;
    char id[TC_MSGID_LEN + 1];
    tc_envelope_stamp(&env, "aggregator", id);
    int rc = tc_zmq_send_envelope(router, p->route, p->route_len, &env, ZMQ_DONTWAIT);
    *id_field = old_id;
    *uuid_field = old_uuid;
    protobuf_c_message_free_unpacked(m, NULL);
    return rc == TC_EINVAL ? TC_ENET : rc;
}

static void s_pass(tc_dispatch_t *self, void *router, int64_t now)
{
    for (size_t i = 0; i < self->n; i++) {
        s_peer_t *p = &self->peers[i];
        if (!p->accepts_jobs || !p->n_devices || p->job_id[0] || !p->route_len ||
            now - p->heard_ms > 3 * self->heartbeat_ms)
            continue;
        tc_store_job_t job;
        bool found = false;
        if (tc_store_job_claim(self->store, p->agent_id, (const char *const *)p->uuids,
                               (const char *const *)p->names, p->n_devices, &job, &found) < 0) {
            tc_log_warn("cannot claim a job: %s", tc_errmsg());
            self->listening = false; /* reconnect on the next tick */
            return;
        }
        if (!found)
            continue;
        snprintf(p->job_id, sizeof p->job_id, "%s", job.job_id);
        p->job_since_ms = now;
        int rc = s_send_job(router, p, &job);
        if (rc < 0) {
            char why[1200];
            snprintf(why, sizeof why, "could not send it to agent %s: %s", p->agent_id,
                     tc_errmsg());
            if (rc == TC_EINVAL) { /* the request itself is bad: retrying cannot help */
                char st[16];
                tc_store_job_requeue(self->store, p->job_id, why, 0, st, sizeof st);
                tc_log_error("job %s failed: %s", p->job_id, why);
                p->job_id[0] = '\0';
            } else {
                s_requeue(self, p, why);
            }
        } else {
            tc_log_info("dispatched %s job %s to agent %s (device %s)", job.kind, job.job_id,
                        p->agent_id, job.device_uuid);
        }
        tc_store_job_clear(&job);
    }
}

void tc_dispatch_tick(tc_dispatch_t *self, void *router)
{
    int64_t now = tc_server_now_ms();
    if (!self->listening) {
        if (now < self->next_db_try_ms)
            return;
        self->next_db_try_ms = now + S_DB_RETRY_MS;
        if (s_connect(self) < 0) {
            if (!self->warned_down)
                tc_log_warn("job dispatch paused: %s", tc_errmsg());
            self->warned_down = true;
            return;
        }
        if (self->warned_down)
            tc_log_info("job dispatch resumed");
        self->warned_down = false;
    }
    if (now >= self->next_sweep_ms) {
        self->next_sweep_ms = now + self->heartbeat_ms;
        for (size_t i = 0; i < self->n; i++) {
            s_peer_t *p = &self->peers[i];
            int64_t silent = now - p->heard_ms;
            if (p->job_id[0] && silent > 3 * self->heartbeat_ms + 2000) {
                char why[512];
                snprintf(why, sizeof why, "agent %s went silent for %lld s", p->agent_id,
                         (long long)(silent / 1000));
                s_requeue(self, p, why);
            }
            if (!p->job_id[0] && silent > S_FORGET_AFTER_MS) {
                s_peer_clear_devices(p);
                self->peers[i] = self->peers[--self->n];
                i--;
            }
        }
    }
    if (self->due || now >= self->next_pass_ms) {
        self->due = false;
        self->next_pass_ms = now + S_PASS_EVERY_MS;
        s_pass(self, router, now);
    }
}
