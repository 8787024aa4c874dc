/* Jobs the agent runs: conv benchmarks and training traces, sent by the
 * aggregator (agent serve) or asked for on the command line (agent run).
 *
 * The measuring code plugs in through tc_job_handlers_t, a table of
 * functions plus a context (agent/cli/jobs_builtin.c fills it with what this
 * build has). A handler runs on the job thread; it hands every result to
 * tc_job_emit or tc_job_keep, which put it in the journal (so it survives a
 * crash and is sent by the link), and reports progress with tc_job_progress. It returns 0
 * or a negative TC_E* code after tc_fail(); the message becomes the job's
 * failure reason.
 *
 * For a job from the aggregator the runner reports JobProgress through the
 * journal: running when it starts, progress at most every few seconds, done or
 * failed (with the reason) at the end. A job cancelled because the agent
 * stops gets no final word: the aggregator requeues it once the agent is
 * gone. One job runs at a time; a request that arrives while one runs is
 * answered with a failed JobProgress ("busy"). */
#ifndef TC_JOBS_H
#define TC_JOBS_H

#include "journal.h"
#include "tc_wire.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct tc_job tc_job_t;

/* Stamp `env` (protocol version, a new message id, this agent's id, time)
 * and put it in the journal. The caller owns the body; it is packed before returning.
 * Bodies: conv_results, train_trace, model_graph. */
int tc_job_emit(tc_job_t *job, tc_envelope_t *env);
/* Put an envelope that is stamped already (a record of a result file, or
 * one the journal holds) in the journal to be delivered, keeping its
 * message id; a missing agent id is filled in. A message waiting already is
 * left alone; one delivered before is sent again. */
int tc_job_emit_record(tc_job_t *job, const tc_envelope_t *env);
/* Put every record of a result file (what `agent bench --out` and `agent
 * trace --out` write) in the journal, keeping its message ids. */
int tc_job_emit_file(tc_job_t *job, const char *path);
/* Keep a stamped envelope in the journal as a result of `name` (see
 * tc_job_results_name) and deliver it: a later job resumes from the
 * results of its name. */
int tc_job_keep(tc_job_t *job, const char *name, const tc_envelope_t *env);
/* Every result kept under `name`, in the order kept. */
int tc_job_each_kept(tc_job_t *job, const char *name, tc_resultfile_fn fn, void *arg);
/* The name of a handler's results from free text (a device uuid, a
 * policy): letters, digits, '-', '.' and '_' kept, anything else replaced
 * by '_'. */
void tc_job_results_name(char *out, size_t size, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Report that `done` of `total` items are finished; `what` (may be NULL)
 * names the current one. Cheap to call often. */
void tc_job_progress(tc_job_t *job, uint32_t done, uint32_t total, const char *what);
/* True once the job should stop (agent shutting down): return TC_EINTR. */
bool tc_job_cancelled(const tc_job_t *job);
/* The agent id the job's messages carry. */
const char *tc_job_agent_id(const tc_job_t *job);
/* The job id ("" for a job from the command line). */
const char *tc_job_id(const tc_job_t *job);
/* Messages emitted so far. */
uint64_t tc_job_emitted(const tc_job_t *job);

typedef struct {
    void *ctx;
    /* The devices this agent measures, for its Hello (owned by ctx). NULL:
     * the agent announces no device and the aggregator sends it no job. */
    int (*devices)(void *ctx, Traincast__V1__Device *const **devices, size_t *n);
    /* Benchmark the conv configs (n set) and matmul configs (minibatch
     * set) of a BenchRequest on req->device_uuid. */
    int (*bench)(void *ctx, const Traincast__V1__BenchRequest *req, tc_job_t *job);
    /* Benchmark every conv of req->models at req->batches (agent run; the
     * request's trace settings are ignored). */
    int (*bench_models)(void *ctx, const Traincast__V1__TraceRequest *req, tc_job_t *job);
    /* Trace training of req->models at req->batches. */
    int (*trace)(void *ctx, const Traincast__V1__TraceRequest *req, tc_job_t *job);
    /* Free ctx (may be NULL). */
    void (*destroy)(void *ctx);
} tc_job_handlers_t;

/* Settings the built-in handlers take from the command line (`agent run`
 * and `agent serve` list them with TC_JOB_SETTINGS_OPTS, agent/link/session.h). */
typedef struct {
    const char *device;     /* "cpu", "cuda:0", ...; NULL: every device */
    unsigned long threads;  /* threads of the cpu device; 0: every logical CPU */
    const char *policy;     /* conv algorithm policy of benchmarks (and of traces:
                               exhaustive = cudnn.benchmark on); NULL: heuristic */
    double budget_ms;       /* measurement budget per conv item; 0: default */
    unsigned long max_reps; /* repetitions per conv item at most; 0: default */
    const char *runner;     /* trace runner command; NULL: the PyTorch harness */
    /* Keep what the handlers measure in the journal under a name per
     * device (tc_job_keep), and resume from it: the same job again measures
     * nothing new. False: results are only delivered. */
    bool keep_results;
    /* Conv results per message at most (0: TC_BENCH_BATCH_RESULTS); tests
     * that follow each result set 1. */
    unsigned results_per_message;
} tc_job_settings_t;

/* Fill `out` with what this build can do (agent/cli/jobs_builtin.c). Entries
 * this build lacks stay NULL. */
int tc_job_handlers_builtin(const tc_job_settings_t *settings, tc_job_handlers_t *out);
/* Call the handlers' destroy and clear the table. */
void tc_job_handlers_release(tc_job_handlers_t *h);

typedef struct tc_jobs tc_jobs_t;

typedef enum {
    TC_JOB_BENCH = 1,        /* BenchRequest */
    TC_JOB_BENCH_MODELS = 2, /* TraceRequest's models x batches, benchmarked */
    TC_JOB_TRACE = 3,        /* TraceRequest */
} tc_job_kind_t;

/* A runner for one job at a time. `handlers` and `journal` are borrowed. */
int tc_jobs_new(const tc_job_handlers_t *handlers, tc_journal_t *journal, const char *agent_id,
                tc_jobs_t **out);
/* Cancel a running job, wait for it, free. Accepts NULL; nulls the pointer. */
void tc_jobs_destroy(tc_jobs_t **self_p);

/* Start a job from an aggregator's bench_request / trace_request. A request
 * that cannot run (busy, invalid, unsupported by this build) is answered with
 * a failed JobProgress. Returns 0 unless the journal fails. */
int tc_jobs_submit(tc_jobs_t *self, const tc_envelope_t *env);
/* Start a job from the command line (no JobProgress is sent; progress goes
 * to the terminal). TC_EINVAL when one is running. */
int tc_jobs_submit_local(tc_jobs_t *self, tc_job_kind_t kind,
                         const Traincast__V1__TraceRequest *req);

/* The id of the job running, or whose final JobProgress still waits in the journal
 * (for heartbeats); "" when idle. */
void tc_jobs_current(tc_jobs_t *self, char *out, size_t size);
bool tc_jobs_busy(tc_jobs_t *self);
/* After a job ended: 1 and its status and message once (then 0 until the
 * next one ends). */
int tc_jobs_take_result(tc_jobs_t *self, int *status, char *msg, size_t size);
/* Ask the running job to stop. */
void tc_jobs_cancel(tc_jobs_t *self);

#endif
