/* Store workers: each owns a database connection and stores one message at
 * a time. A database failure holds the message and retries (reconnecting)
 * until it commits or the server stops; nothing is acknowledged before its
 * transaction committed. One subject, over 600 lines. */
#include "server_internal.h"

#include "store.h"
#include "tc_error.h"
#include "tc_hash.h"
#include "tc_log.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <zmq.h>

#define S_BACKOFF_MIN_MS 100
#define S_BACKOFF_MAX_MS 2000

/* Each worker has its own queue. An agent's conv results go to its own
 * worker unless that one is behind, then to an idle one: each ConvResults
 * message stands alone (its agent, device and configs are upserted with
 * it), so several of one agent's are stored at once on several
 * connections. Every other message of an agent (job
 * progress, traces, model graphs, hello, heartbeats) goes to the agent's own
 * worker once everything the agent sent before it has been stored, and
 * what the agent sends after it waits for it to be handed out: so job
 * progress is stored after the results of its job, a trace after its model
 * graph, as when one worker took all of an agent's messages in order.
 * The per-agent order (s_order_t) belongs to the server loop's thread: push
 * and done are called there only. */

/* One agent's messages handed out and not yet done, and those waiting for
 * them to be done. */
typedef struct s_order {
    struct s_order *next;
    char *agent_id;
    size_t outstanding;
    tc_work_t *held, *held_tail;
} s_order_t;

#define S_ORDER_BUCKETS 1024u
/* Conv results leave their agent's worker, for an idle one, when this
 * many wait there. */
#define S_SPILL_AT 2u

typedef struct {
    struct tc_workers *pool;
    pthread_t thread;
    bool started;
    int index;
    pthread_cond_t cond;
    tc_work_t *head, *tail;
    size_t queued;
} s_worker_t;

struct tc_workers {
    void *ctx;
    char *dsn;
    char *done_endpoint;
    unsigned batch;
    pthread_mutex_t lock;
    size_t queued;
    atomic_int stop;
    atomic_int down; /* workers currently waiting for the database */
    atomic_llong down_since_ms;
    s_worker_t *workers;
    unsigned n;
    s_order_t *order[S_ORDER_BUCKETS]; /* the server loop's only */
    size_t held;                       /* under lock */
    tc_key_check_fn allowed;           /* NULL: every key stores */
    void *allowed_arg;
    /* The gate: workers storing now, and whether a pause holds new ones. */
    pthread_mutex_t gate_lock;
    pthread_cond_t gate_cond;
    unsigned storing;
    bool paused;
};

void tc_work_free(tc_work_t *w)
{
    if (!w)
        return;
    tc_envelope_free(&w->env);
    free(w);
}

static void s_sleep_ms(struct tc_workers *pool, int ms)
{
    /* In slices, so that a stop is noticed quickly. */
    while (ms > 0 && !atomic_load(&pool->stop)) {
        int slice = ms < 50 ? ms : 50;
        struct timespec ts = {0, slice * 1000000L};
        nanosleep(&ts, NULL);
        ms -= slice;
    }
}

/* Take up to `max` queued items (a list), waiting while there are none. */
static tc_work_t *s_pop(s_worker_t *me, unsigned max)
{
    struct tc_workers *pool = me->pool;
    pthread_mutex_lock(&pool->lock);
    while (!me->head && !atomic_load(&pool->stop))
        pthread_cond_wait(&me->cond, &pool->lock);
    tc_work_t *first = NULL, **tail = &first;
    for (unsigned i = 0; i < max && me->head && !atomic_load(&pool->stop); i++) {
        tc_work_t *w = me->head;
        me->head = w->next;
        if (!me->head)
            me->tail = NULL;
        me->queued--;
        pool->queued--;
        w->next = NULL;
        *tail = w;
        tail = &w->next;
    }
    pthread_mutex_unlock(&pool->lock);
    return first;
}

/* ---- the gate: no commit of a key while the allowlist changes ---- */

static void s_gate_enter(struct tc_workers *pool)
{
    pthread_mutex_lock(&pool->gate_lock);
    while (pool->paused && !atomic_load(&pool->stop))
        pthread_cond_wait(&pool->gate_cond, &pool->gate_lock);
    pool->storing++;
    pthread_mutex_unlock(&pool->gate_lock);
}

static void s_gate_leave(struct tc_workers *pool)
{
    pthread_mutex_lock(&pool->gate_lock);
    if (--pool->storing == 0)
        pthread_cond_broadcast(&pool->gate_cond);
    pthread_mutex_unlock(&pool->gate_lock);
}

bool tc_workers_pause(tc_workers_t *self, int timeout_ms)
{
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += timeout_ms / 1000;
    until.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
    if (until.tv_nsec >= 1000000000L) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&self->gate_lock);
    self->paused = true;
    int rc = 0;
    while (self->storing > 0 && rc == 0)
        rc = pthread_cond_timedwait(&self->gate_cond, &self->gate_lock, &until);
    bool idle = self->storing == 0;
    pthread_mutex_unlock(&self->gate_lock);
    return idle;
}

void tc_workers_resume(tc_workers_t *self)
{
    pthread_mutex_lock(&self->gate_lock);
    self->paused = false;
    pthread_cond_broadcast(&self->gate_cond);
    pthread_mutex_unlock(&self->gate_lock);
}

void tc_workers_set_key_check(tc_workers_t *self, tc_key_check_fn allowed, void *arg)
{
    self->allowed = allowed;
    self->allowed_arg = arg;
}

/* Database messages span lines; a log line and a Nack reason should not. */
static void s_one_line(char *text)
{
    char *w = text;
    for (const char *r = text; *r; r++) {
        char c = *r == '\n' || *r == '\t' || *r == '\r' ? ' ' : *r;
        if (c == ' ' && w > text && w[-1] == ' ')
            continue;
        *w++ = c;
    }
    *w = '\0';
}

static bool s_batchable(const tc_work_t *w)
{
    if (w->spilled)
        return false;
    switch (w->env->body_case) {
    case TRAINCAST__V1__ENVELOPE__BODY_CONV_RESULTS:
    case TRAINCAST__V1__ENVELOPE__BODY_MODEL_GRAPH:
    case TRAINCAST__V1__ENVELOPE__BODY_TRAIN_TRACE:
    case TRAINCAST__V1__ENVELOPE__BODY_JOB_PROGRESS:
    case TRAINCAST__V1__ENVELOPE__BODY_HELLO:
        return true;
    default:
        return false;
    }
}

/* One attempt at one message. Returns 0 (stored or duplicate in *outcome),
 * or an error. */
static int s_store_once(tc_store_t *store, tc_work_t *w, tc_store_outcome_t *outcome)
{
    const tc_envelope_t *env = w->env;
    const char *key = w->key[0] ? w->key : NULL;
    int rc;
    w->job_terminal = false;
    switch (env->body_case) {
    case TRAINCAST__V1__ENVELOPE__BODY_JOB_PROGRESS:
        return tc_store_job_progress(store, env, key, outcome, &w->job_terminal);
    case TRAINCAST__V1__ENVELOPE__BODY_HELLO:
        rc = tc_store_put_from(store, env, key, outcome);
        if (rc == 0)
            rc = tc_store_set_accepts_jobs(store, env->agent_id, env->hello->accepts_jobs);
        return rc;
    default:
        return tc_store_put_from(store, env, key, outcome);
    }
}

/* Store the items of `list` that are still pending, in one transaction
 * when there are several; an item whose key left the allowlist is not
 * stored. The caller holds the gate. Returns 0 when done (each item has its outcome),
 * TC_EDB when the database failed and nothing of this attempt counts. */
static int s_attempt(struct tc_workers *pool, tc_store_t *store, tc_work_t *list, bool batch)
{
    int rc = 0;
    if (batch) {
        size_t n = 0;
        for (tc_work_t *w = list; w; w = w->next)
            n++;
        const char **ids = calloc(n, sizeof *ids);
        if (!ids)
            return tc_fail(TC_EDB, "out of memory"); /* held and tried again */
        n = 0;
        for (tc_work_t *w = list; w; w = w->next)
            ids[n++] = w->env->agent_id;
        rc = tc_store_batch_begin(store, ids, n);
        free(ids);
    }
    for (tc_work_t *w = list; rc == 0 && w; w = w->next) {
        bool heartbeat = w->env->body_case == TRAINCAST__V1__ENVELOPE__BODY_HEARTBEAT;
        if (pool->allowed && w->key[0] && !pool->allowed(pool->allowed_arg, w->key)) {
            w->outcome = heartbeat ? TC_WORK_DROPPED : TC_WORK_REVOKED;
            continue;
        }
        tc_store_outcome_t outcome = TC_STORE_STORED;
        int r = s_store_once(store, w, &outcome);
        if (r == 0) {
            w->outcome = heartbeat ? TC_WORK_DROPPED
                         : outcome == TC_STORE_DUPLICATE ? TC_WORK_DUPLICATE
                                                         : TC_WORK_STORED;
            continue;
        }
        snprintf(w->reason, sizeof w->reason, "%s", *tc_errmsg() ? tc_errmsg() : tc_strerror(r));
        s_one_line(w->reason);
        if (r == TC_EDB) {
            rc = r;
            break;
        }
        /* Undone alone (its savepoint); the others go on. */
        w->outcome = heartbeat                                ? TC_WORK_DROPPED
                     : r == TC_EINVAL || r == TC_EVERSION ? TC_WORK_REJECTED
                                                          : TC_WORK_DEFERRED;
    }
    if (batch) {
        if (rc == 0)
            rc = tc_store_batch_commit(store);
        if (rc < 0) {
            char why[1024];
            snprintf(why, sizeof why, "%s", tc_errmsg());
            s_one_line(why);
            tc_store_batch_rollback(store);
            for (tc_work_t *w = list; w; w = w->next)
                snprintf(w->reason, sizeof w->reason, "%s", why);
        }
    }
    return rc;
}

static void s_process(s_worker_t *me, tc_store_t **store_p, tc_work_t *list)
{
    struct tc_workers *pool = me->pool;
    bool batch = list->next != NULL;
    bool heartbeat = list->env->body_case == TRAINCAST__V1__ENVELOPE__BODY_HEARTBEAT;
    int backoff = S_BACKOFF_MIN_MS;
    bool waited = false;
    int64_t t0 = tc_server_now_ms();
    size_t n = 0;
    for (tc_work_t *w = list; w; w = w->next)
        n++;
    for (;;) {
        int rc = 0;
        if (!*store_p && tc_store_open(pool->dsn, store_p) < 0)
            rc = TC_EDB; /* whatever kept us out, try again later */
        if (rc == 0) {
            s_gate_enter(pool);
            rc = s_attempt(pool, *store_p, list, batch);
            s_gate_leave(pool);
        }
        if (rc == 0)
            break;
        if (rc == TC_EINVAL && batch) {
            /* The batch's COPY refused a row for its content: one message at a
             * time, so that only the one that carried it is refused. */
            tc_log_info("worker %d: the batch's conv results were refused (%s); storing its "
                         "messages one at a time",
                         me->index, list->reason);
            batch = false;
            continue;
        }
        /* The database failed: hold the messages and try again. */
        if (heartbeat || atomic_load(&pool->stop)) {
            for (tc_work_t *w = list; w; w = w->next)
                w->outcome = TC_WORK_DROPPED;
            break;
        }
        if (!waited) {
            waited = true;
            if (atomic_fetch_add(&pool->down, 1) == 0) {
                atomic_store(&pool->down_since_ms, tc_server_now_ms());
                tc_log_warn("storing failed (%s); holding the messages unacknowledged and "
                            "retrying until the database takes them",
                            list->reason);
            }
        }
        s_sleep_ms(pool, backoff);
        backoff = backoff * 2 > S_BACKOFF_MAX_MS ? S_BACKOFF_MAX_MS : backoff * 2;
        if (*store_p && tc_store_ensure_connected(*store_p) < 0)
            tc_log_debug("worker %d: still no database: %s", me->index, tc_errmsg());
    }
    if (waited && atomic_fetch_sub(&pool->down, 1) == 1 && list->outcome != TC_WORK_DROPPED)
        tc_log_info("storing again after %.1f s",
                    (double)(tc_server_now_ms() - atomic_load(&pool->down_since_ms)) / 1000.0);
    tc_log_debug("worker %d: %zu message%s (first %s %s from %s) in %lld ms", me->index, n,
                 n == 1 ? "" : "s", tc_body_name(list->env), list->env->message_id,
                 list->env->agent_id, (long long)(tc_server_now_ms() - t0));
}

static void *s_thread(void *arg)
{
    s_worker_t *me = arg;
    struct tc_workers *pool = me->pool;
    tc_store_t *store = NULL;
    void *push = zmq_socket(pool->ctx, ZMQ_PUSH);
    int linger = -1;
    if (!push || zmq_setsockopt(push, ZMQ_LINGER, &linger, sizeof linger) != 0 ||
        zmq_connect(push, pool->done_endpoint) != 0) {
        tc_log_error("store worker %d cannot reach the server loop: %s", me->index,
                     zmq_strerror(zmq_errno()));
        if (push)
            zmq_close(push);
        return NULL;
    }
    if (tc_store_open(pool->dsn, &store) < 0)
        tc_log_warn("store worker %d: %s (retrying when a message arrives)", me->index,
                    tc_errmsg());
    tc_work_t *list;
    while ((list = s_pop(me, pool->batch)) != NULL) {
        /* Heartbeats and unknown bodies go alone, outside any batch. */
        while (list) {
            tc_work_t *group = list, *last = list;
            if (s_batchable(list)) {
                while (last->next && s_batchable(last->next))
                    last = last->next;
            }
            list = last->next;
            last->next = NULL;
            s_process(me, &store, group);
            while (group) {
                tc_work_t *w = group;
                group = w->next;
                w->next = NULL;
                /* The pointer itself is the message; the server loop owns it now. */
                if (zmq_send(push, &w, sizeof w, 0) != sizeof w) {
                    tc_log_error("store worker %d: cannot hand a result back: %s", me->index,
                                 zmq_strerror(zmq_errno()));
                    tc_work_free(w);
                }
            }
        }
    }
    tc_store_destroy(&store);
    zmq_close(push);
    return NULL;
}

int tc_workers_start(void *ctx, const char *dsn, unsigned n, unsigned batch,
                     const char *done_endpoint, tc_workers_t **out)
{
    *out = NULL;
    struct tc_workers *self = calloc(1, sizeof *self);
    if (!self)
        return tc_fail(TC_ENOMEM, "out of memory");
    self->ctx = ctx;
    self->n = n;
    self->batch = batch ? batch : 1;
    self->dsn = strdup(dsn);
    self->done_endpoint = strdup(done_endpoint);
    self->workers = calloc(n, sizeof *self->workers);
    pthread_mutex_init(&self->lock, NULL);
    pthread_mutex_init(&self->gate_lock, NULL);
    pthread_cond_init(&self->gate_cond, NULL);
    for (unsigned i = 0; self->workers && i < n; i++)
        pthread_cond_init(&self->workers[i].cond, NULL);
    if (!self->dsn || !self->done_endpoint || !self->workers) {
        tc_workers_stop(&self);
        return tc_fail(TC_ENOMEM, "out of memory");
    }
    for (unsigned i = 0; i < n; i++) {
        self->workers[i].pool = self;
        self->workers[i].index = (int)i;
        if (pthread_create(&self->workers[i].thread, NULL, s_thread, &self->workers[i]) != 0) {
            tc_workers_stop(&self);
            return tc_fail(TC_ENOMEM, "cannot start store worker %u", i);
        }
        self->workers[i].started = true;
    }
    *out = self;
    return 0;
}

static bool s_alone(const tc_work_t *w)
{
    return w->env->body_case == TRAINCAST__V1__ENVELOPE__BODY_CONV_RESULTS;
}

/* Hand one item to a worker: its agent's own, but conv results to an idle
 * one when S_SPILL_AT wait at home. */
static void s_hand_out(tc_workers_t *self, tc_work_t *w)
{
    w->next = NULL;
    pthread_mutex_lock(&self->lock);
    unsigned home = tc_fnv1a32_str(w->env->agent_id) % self->n, pick = home;
    /* Away from home only when home is behind and another worker idles;
     * such a message is stored in a transaction of its own, so that it
     * never holds other agents' rows while it waits on its own agent's
     * (which its home worker's batch may hold): the agent's own worker
     * keeps its rows and recently-seen upserts on one connection. */
    if (s_alone(w) && self->workers[home].queued >= S_SPILL_AT) {
        for (unsigned i = 0; i < self->n && pick == home; i++) {
            if (self->workers[i].queued == 0) {
                pick = i;
                w->spilled = true;
            }
        }
    }
    s_worker_t *me = &self->workers[pick];
    if (me->tail)
        me->tail->next = w;
    else
        me->head = w;
    me->tail = w;
    me->queued++;
    self->queued++;
    pthread_cond_signal(&me->cond);
    pthread_mutex_unlock(&self->lock);
}

static s_order_t **s_order_slot(tc_workers_t *self, const char *agent_id)
{
    s_order_t **slot = &self->order[tc_fnv1a32_str(agent_id) % S_ORDER_BUCKETS];
    while (*slot && strcmp((*slot)->agent_id, agent_id) != 0)
        slot = &(*slot)->next;
    return slot;
}

static void s_hold(tc_workers_t *self, s_order_t *o, tc_work_t *w)
{
    w->next = NULL;
    if (o->held_tail)
        o->held_tail->next = w;
    else
        o->held = w;
    o->held_tail = w;
    pthread_mutex_lock(&self->lock);
    self->held++;
    pthread_mutex_unlock(&self->lock);
}

/* Hand out the agent's held messages that may go now: conv results at
 * once, anything else when nothing of the agent's is outstanding. */
static void s_release(tc_workers_t *self, s_order_t *o)
{
    while (o->held && (s_alone(o->held) || o->outstanding == 0)) {
        tc_work_t *w = o->held;
        o->held = w->next;
        if (!o->held)
            o->held_tail = NULL;
        pthread_mutex_lock(&self->lock);
        self->held--;
        pthread_mutex_unlock(&self->lock);
        o->outstanding++;
        w->ordered = true;
        s_hand_out(self, w);
    }
}

void tc_workers_push(tc_workers_t *self, tc_work_t *w)
{
    s_order_t **slot = s_order_slot(self, w->env->agent_id);
    if (*slot && !(*slot)->held && (s_alone(w) || (*slot)->outstanding == 0)) {
        (*slot)->outstanding++; /* may go now: nothing of its agent's waits */
        w->ordered = true;
        s_hand_out(self, w);
        return;
    }
    if (!*slot) {
        s_order_t *o = calloc(1, sizeof *o);
        if (o)
            o->agent_id = strdup(w->env->agent_id);
        if (!o || !o->agent_id) { /* no memory to track it: its agent's worker keeps the order */
            free(o);
            s_hand_out(self, w);
            return;
        }
        *slot = o;
    }
    s_hold(self, *slot, w);
    s_release(self, *slot);
}

void tc_workers_done(tc_workers_t *self, const tc_work_t *w)
{
    if (!w->ordered)
        return; /* handed out untracked */
    s_order_t **slot = s_order_slot(self, w->env->agent_id);
    s_order_t *o = *slot;
    if (!o || o->outstanding == 0)
        return;
    o->outstanding--;
    s_release(self, o);
    if (o->outstanding == 0 && !o->held) {
        *slot = o->next;
        free(o->agent_id);
        free(o);
    }
}

size_t tc_workers_queued(tc_workers_t *self)
{
    pthread_mutex_lock(&self->lock);
    size_t n = self->queued + self->held;
    pthread_mutex_unlock(&self->lock);
    return n;
}

bool tc_workers_db_down(tc_workers_t *self)
{
    return atomic_load(&self->down) > 0;
}

tc_work_t *tc_workers_stop(tc_workers_t **self_p)
{
    if (!self_p || !*self_p)
        return NULL;
    struct tc_workers *self = *self_p;
    pthread_mutex_lock(&self->lock);
    atomic_store(&self->stop, 1);
    for (unsigned i = 0; self->workers && i < self->n; i++)
        pthread_cond_broadcast(&self->workers[i].cond);
    pthread_mutex_unlock(&self->lock);
    tc_workers_resume(self);
    tc_work_t *left = NULL;
    for (unsigned i = 0; self->workers && i < self->n; i++) {
        s_worker_t *me = &self->workers[i];
        if (me->started)
            pthread_join(me->thread, NULL);
        pthread_cond_destroy(&me->cond);
        if (me->tail) {
            me->tail->next = left;
            left = me->head;
        }
    }
    for (unsigned b = 0; b < S_ORDER_BUCKETS; b++) {
        while (self->order[b]) {
            s_order_t *o = self->order[b];
            self->order[b] = o->next;
            if (o->held_tail) {
                o->held_tail->next = left;
                left = o->held;
            }
            free(o->agent_id);
            free(o);
        }
    }
    pthread_mutex_destroy(&self->lock);
    pthread_mutex_destroy(&self->gate_lock);
    pthread_cond_destroy(&self->gate_cond);
    free(self->workers);
    free(self->dsn);
    free(self->done_endpoint);
    free(self);
    *self_p = NULL;
    return left;
}
