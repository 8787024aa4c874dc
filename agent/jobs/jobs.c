#include "jobs.h"

#include "tc_error.h"
#include "tc_log.h"
#include "tc_progress.h"
#include "tc_validate.h"

#include <ctype.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define S_JOB_ID_MAX TC_MAX_JOB_ID_LEN
#define S_PROGRESS_EVERY_MS 2000

struct tc_job {
    tc_jobs_t *owner;
    char id[S_JOB_ID_MAX + 1];
    bool remote;
    tc_job_kind_t kind;
    tc_envelope_t *request;                  /* remote jobs: owned copy */
    Traincast__V1__TraceRequest *local_req;  /* local jobs: owned copy */
    uint64_t emitted;
    int64_t last_progress_ms;
    uint32_t done, total;
    tc_progress_t *bar;
};

struct tc_jobs {
    const tc_job_handlers_t *h;
    tc_journal_t *journal;
    char *agent_id;
    pthread_mutex_t lock;
    pthread_t thread;
    bool joinable;  /* a thread was started and not yet joined */
    bool running;
    tc_job_t *job;
    char last_id[S_JOB_ID_MAX + 1];           /* the last remote job */
    char final_msg[TC_MSGID_LEN + 1];         /* its final JobProgress */
    bool have_result;
    int result_status;
    char result_msg[1024];
    atomic_int cancel;
};

static int64_t s_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void s_copy_text(char *dst, size_t size, const char *src)
{
    snprintf(dst, size, "%s", src ? src : "");
}

/* ---- the handler's side ---- */

int tc_job_emit(tc_job_t *job, tc_envelope_t *env)
{
    char id[TC_MSGID_LEN + 1];
    tc_envelope_stamp(env, job->owner->agent_id, id);
    int rc = tc_journal_put_envelope(job->owner->journal, env);
    env->message_id = NULL; /* id[] goes out of scope */
    env->agent_id = NULL;
    if (rc == 0)
        job->emitted++;
    return rc;
}

int tc_job_keep(tc_job_t *job, const char *name, const tc_envelope_t *env)
{
    tc_envelope_t copy = *env;
    if (!copy.agent_id || !*copy.agent_id)
        copy.agent_id = job->owner->agent_id;
    if (!tc_msgid_valid(copy.message_id))
        return tc_fail(TC_EINVAL, "internal: a result record without a valid message id");
    bool added = false;
    int rc = tc_journal_append(job->owner->journal, name, &copy, &added);
    if (rc == 0 && added)
        job->emitted++;
    return rc;
}

int tc_job_emit_record(tc_job_t *job, const tc_envelope_t *env)
{
    return tc_job_keep(job, "", env);
}

int tc_job_each_kept(tc_job_t *job, const char *name, tc_resultfile_fn fn, void *arg)
{
    return tc_journal_each(job->owner->journal, name, fn, arg);
}

int tc_job_emit_file(tc_job_t *job, const char *path)
{
    size_t added = 0;
    int rc = tc_journal_import(job->owner->journal, path, job->owner->agent_id, NULL, &added);
    job->emitted += added;
    return rc;
}

void tc_job_results_name(char *out, size_t size, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(out, size, fmt, ap);
    va_end(ap);
    for (char *p = out; *p; p++) {
        if (!isalnum((unsigned char)*p) && *p != '-' && *p != '.' && *p != '_')
            *p = '_';
    }
}

const char *tc_job_agent_id(const tc_job_t *job)
{
    return job->owner->agent_id;
}

bool tc_job_cancelled(const tc_job_t *job)
{
    return atomic_load(&job->owner->cancel) != 0;
}

const char *tc_job_id(const tc_job_t *job)
{
    return job->id;
}

uint64_t tc_job_emitted(const tc_job_t *job)
{
    return job->emitted;
}

/* Put a JobProgress for a remote job in the journal. `final_id` (may be NULL) gets its
 * message id. */
static int s_send_progress(tc_jobs_t *self, const char *job_id, Traincast__V1__JobState state,
                           uint32_t done, uint32_t total, const char *what,
                           char final_id[TC_MSGID_LEN + 1])
{
    Traincast__V1__JobProgress p = TRAINCAST__V1__JOB_PROGRESS__INIT;
    char msg[TC_MAX_TEXT_LEN];
    s_copy_text(msg, sizeof msg, what);
    p.job_id = (char *)job_id;
    p.state = state;
    p.done = done;
    p.total = total;
    p.message = msg;
    tc_envelope_t env = TRAINCAST__V1__ENVELOPE__INIT;
    env.body_case = TRAINCAST__V1__ENVELOPE__BODY_JOB_PROGRESS;
    env.job_progress = &p;
    char id[TC_MSGID_LEN + 1];
    tc_envelope_stamp(&env, self->agent_id, id);
    int rc = tc_journal_put_envelope(self->journal, &env);
    if (rc == 0 && final_id)
        memcpy(final_id, id, sizeof id);
    if (rc < 0)
        tc_log_error("job %s: cannot keep its progress in the journal: %s", job_id, tc_errmsg());
    return rc;
}

void tc_job_progress(tc_job_t *job, uint32_t done, uint32_t total, const char *what)
{
    job->done = done;
    job->total = total;
    if (!job->remote) {
        if (!job->bar && total)
            job->bar = tc_progress_new(job->kind == TC_JOB_TRACE ? "tracing" : "benchmarking",
                                       total);
        if (job->bar)
            tc_progress_update(job->bar, done, what);
        return;
    }
    int64_t now = s_now_ms();
    if (now - job->last_progress_ms < S_PROGRESS_EVERY_MS && done < total)
        return;
    job->last_progress_ms = now;
    s_send_progress(job->owner, job->id, TRAINCAST__V1__JOB_STATE__JOB_STATE_RUNNING, done, total,
                    what, NULL);
}

/* ---- the runner ---- */

int tc_jobs_new(const tc_job_handlers_t *handlers, tc_journal_t *journal, const char *agent_id,
                tc_jobs_t **out)
{
    *out = NULL;
    tc_jobs_t *self = calloc(1, sizeof *self);
    if (!self || !(self->agent_id = strdup(agent_id))) {
        free(self);
        return tc_fail(TC_ENOMEM, "out of memory");
    }
    self->h = handlers;
    self->journal = journal;
    pthread_mutex_init(&self->lock, NULL);
    *out = self;
    return 0;
}

static void s_job_free(tc_job_t **job_p)
{
    tc_job_t *job = *job_p;
    if (!job)
        return;
    tc_progress_destroy(&job->bar);
    tc_envelope_free(&job->request);
    if (job->local_req)
        traincast__v1__trace_request__free_unpacked(job->local_req, NULL);
    free(job);
    *job_p = NULL;
}

static void s_join(tc_jobs_t *self)
{
    if (self->joinable) {
        pthread_join(self->thread, NULL);
        self->joinable = false;
    }
    s_job_free(&self->job);
}

void tc_jobs_destroy(tc_jobs_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    tc_jobs_t *self = *self_p;
    tc_jobs_cancel(self);
    s_join(self);
    pthread_mutex_destroy(&self->lock);
    free(self->agent_id);
    free(self);
    *self_p = NULL;
}

void tc_jobs_cancel(tc_jobs_t *self)
{
    atomic_store(&self->cancel, 1);
}

static const char *s_kind_name(tc_job_kind_t k)
{
    switch (k) {
    case TC_JOB_BENCH: return "conv benchmark";
    case TC_JOB_BENCH_MODELS: return "conv benchmark of models";
    case TC_JOB_TRACE: return "training trace";
    }
    return "job";
}

static int s_device_known(tc_jobs_t *self, const char *uuid)
{
    if (!uuid || !*uuid || !self->h->devices)
        return 0;
    Traincast__V1__Device *const *devs = NULL;
    size_t n = 0;
    int rc = self->h->devices(self->h->ctx, &devs, &n);
    if (rc < 0)
        return rc;
    for (size_t i = 0; i < n; i++) {
        if (devs[i]->uuid && !strcmp(devs[i]->uuid, uuid))
            return 0;
    }
    return tc_fail(TC_EINVAL, "device %s is not on this agent (it has %zu device%s)", uuid, n,
                   n == 1 ? "" : "s");
}

static int s_run(tc_job_t *job)
{
    tc_jobs_t *self = job->owner;
    const tc_job_handlers_t *h = self->h;
    switch (job->kind) {
    case TC_JOB_BENCH: {
        const Traincast__V1__BenchRequest *req = job->request->bench_request;
        if (!h->bench)
            return tc_fail(TC_EUNSUPPORTED, "this agent build has no conv benchmark backend, so "
                                            "it cannot run bench jobs");
        int rc = tc_validate_bench_request(req, "bench_request");
        if (rc == 0)
            rc = s_device_known(self, req->device_uuid);
        return rc < 0 ? rc : h->bench(h->ctx, req, job);
    }
    case TC_JOB_BENCH_MODELS:
        if (!h->bench_models)
            return tc_fail(TC_EUNSUPPORTED, "this agent build has no conv benchmark backend "
                                            "(agent bench) yet");
        return h->bench_models(h->ctx, job->local_req, job);
    case TC_JOB_TRACE: {
        const Traincast__V1__TraceRequest *req =
            job->remote ? job->request->trace_request : job->local_req;
        if (!h->trace)
            return tc_fail(TC_EUNSUPPORTED, "this agent build has no trace runner (agent trace) "
                                            "yet, so it cannot run trace jobs");
        if (job->remote) {
            int rc = tc_validate_trace_request(req, "trace_request");
            if (rc == 0)
                rc = s_device_known(self, req->device_uuid);
            if (rc < 0)
                return rc;
        }
        return h->trace(h->ctx, req, job);
    }
    }
    return tc_fail(TC_EINVAL, "internal: unknown job kind %d", (int)job->kind);
}

static void *s_thread(void *arg)
{
    tc_job_t *job = arg;
    tc_jobs_t *self = job->owner;
    tc_err_clear();
    if (job->remote)
        s_send_progress(self, job->id, TRAINCAST__V1__JOB_STATE__JOB_STATE_RUNNING, 0, 0,
                        "started", NULL);
    int64_t t0 = s_now_ms();
    int rc = s_run(job);
    char msg[1024];
    if (rc < 0)
        s_copy_text(msg, sizeof msg, *tc_errmsg() ? tc_errmsg() : tc_strerror(rc));
    else
        snprintf(msg, sizeof msg, "%llu result message%s in %.1f s",
                 (unsigned long long)job->emitted, job->emitted == 1 ? "" : "s",
                 (double)(s_now_ms() - t0) / 1000.0);
    tc_progress_destroy(&job->bar);
    /* Stopped because this agent is shutting down: no verdict; the
     * aggregator gives the job out again once this agent is gone. */
    bool interrupted = rc < 0 && tc_job_cancelled(job);
    const char *sep = job->id[0] ? " " : "";
    if (interrupted)
        tc_log_warn("%s job%s%s interrupted: %s", s_kind_name(job->kind), sep, job->id, msg);
    else if (rc < 0)
        tc_log_error("%s job%s%s failed: %s", s_kind_name(job->kind), sep, job->id, msg);
    else
        tc_log_info("%s job%s%s done: %s", s_kind_name(job->kind), sep, job->id, msg);
    char final_id[TC_MSGID_LEN + 1] = "";
    if (job->remote && !interrupted)
        s_send_progress(self, job->id,
                        rc < 0 ? TRAINCAST__V1__JOB_STATE__JOB_STATE_FAILED
                               : TRAINCAST__V1__JOB_STATE__JOB_STATE_DONE,
                        rc < 0 ? job->done : job->total, job->total, msg, final_id);
    pthread_mutex_lock(&self->lock);
    memcpy(self->final_msg, final_id, sizeof final_id);
    self->running = false;
    self->have_result = true;
    self->result_status = rc;
    s_copy_text(self->result_msg, sizeof self->result_msg, msg);
    pthread_mutex_unlock(&self->lock);
    return NULL;
}

static int s_start(tc_jobs_t *self, tc_job_t *job)
{
    pthread_mutex_lock(&self->lock);
    bool busy = self->running;
    pthread_mutex_unlock(&self->lock);
    if (busy) {
        s_job_free(&job);
        return tc_fail(TC_EINVAL, "busy with job %s", self->job ? self->job->id : "?");
    }
    s_join(self);
    atomic_store(&self->cancel, 0);
    pthread_mutex_lock(&self->lock);
    self->job = job;
    self->running = true;
    self->have_result = false;
    if (job->remote) {
        s_copy_text(self->last_id, sizeof self->last_id, job->id);
        self->final_msg[0] = '\0';
    }
    pthread_mutex_unlock(&self->lock);
    if (pthread_create(&self->thread, NULL, s_thread, job) != 0) {
        pthread_mutex_lock(&self->lock);
        self->running = false;
        self->job = NULL;
        pthread_mutex_unlock(&self->lock);
        s_job_free(&job);
        return tc_fail(TC_ENOMEM, "cannot start a job thread");
    }
    self->joinable = true;
    return 0;
}

int tc_jobs_submit(tc_jobs_t *self, const tc_envelope_t *env)
{
    const char *job_id = NULL;
    tc_job_kind_t kind;
    if (env->body_case == TRAINCAST__V1__ENVELOPE__BODY_BENCH_REQUEST) {
        kind = TC_JOB_BENCH;
        job_id = env->bench_request->job_id;
    } else if (env->body_case == TRAINCAST__V1__ENVELOPE__BODY_TRACE_REQUEST) {
        kind = TC_JOB_TRACE;
        job_id = env->trace_request->job_id;
    } else {
        tc_log_warn("ignored a %s message: not a job", tc_body_name(env));
        return 0;
    }
    if (!job_id || !*job_id || strlen(job_id) > S_JOB_ID_MAX) {
        tc_log_warn("ignored a %s without a usable job id", tc_body_name(env));
        return 0;
    }
    tc_job_t *job = calloc(1, sizeof *job);
    uint8_t *buf = NULL;
    size_t len = 0;
    int rc = job ? tc_envelope_pack(env, &buf, &len) : tc_fail(TC_ENOMEM, "out of memory");
    if (rc == 0)
        rc = tc_envelope_unpack(buf, len, 0, &job->request);
    free(buf);
    if (rc < 0) {
        free(job);
        return s_send_progress(self, job_id, TRAINCAST__V1__JOB_STATE__JOB_STATE_FAILED, 0, 0,
                               tc_errmsg(), NULL);
    }
    job->owner = self;
    job->remote = true;
    job->kind = kind;
    s_copy_text(job->id, sizeof job->id, job_id);
    tc_log_info("received %s job %s", s_kind_name(kind), job->id);
    rc = s_start(self, job);
    if (rc < 0) {
        tc_log_warn("refused job %s: %s", job_id, tc_errmsg());
        return s_send_progress(self, job_id, TRAINCAST__V1__JOB_STATE__JOB_STATE_FAILED, 0, 0,
                               tc_errmsg(), NULL);
    }
    return 0;
}

int tc_jobs_submit_local(tc_jobs_t *self, tc_job_kind_t kind,
                         const Traincast__V1__TraceRequest *req)
{
    tc_job_t *job = calloc(1, sizeof *job);
    if (!job)
        return tc_fail(TC_ENOMEM, "out of memory");
    size_t n = traincast__v1__trace_request__get_packed_size(req);
    uint8_t *buf = malloc(n ? n : 1);
    if (buf) {
        traincast__v1__trace_request__pack(req, buf);
        job->local_req = traincast__v1__trace_request__unpack(NULL, n, buf);
    }
    free(buf);
    if (!job->local_req) {
        free(job);
        return tc_fail(TC_ENOMEM, "out of memory copying a job request");
    }
    job->owner = self;
    job->kind = kind;
    return s_start(self, job);
}

void tc_jobs_current(tc_jobs_t *self, char *out, size_t size)
{
    pthread_mutex_lock(&self->lock);
    bool running = self->running && self->job && self->job->remote;
    char id[S_JOB_ID_MAX + 1], fin[TC_MSGID_LEN + 1];
    memcpy(id, running ? self->job->id : self->last_id, sizeof id);
    memcpy(fin, self->final_msg, sizeof fin);
    pthread_mutex_unlock(&self->lock);
    if (!running && !(fin[0] && tc_journal_is_waiting(self->journal, fin)))
        id[0] = '\0';
    snprintf(out, size, "%s", id);
}

bool tc_jobs_busy(tc_jobs_t *self)
{
    pthread_mutex_lock(&self->lock);
    bool busy = self->running;
    pthread_mutex_unlock(&self->lock);
    return busy;
}

int tc_jobs_take_result(tc_jobs_t *self, int *status, char *msg, size_t size)
{
    pthread_mutex_lock(&self->lock);
    int have = self->have_result;
    if (have) {
        *status = self->result_status;
        s_copy_text(msg, size, self->result_msg);
        self->have_result = false;
    }
    pthread_mutex_unlock(&self->lock);
    return have;
}

void tc_job_handlers_release(tc_job_handlers_t *h)
{
    if (h->destroy)
        h->destroy(h->ctx);
    memset(h, 0, sizeof *h);
}
