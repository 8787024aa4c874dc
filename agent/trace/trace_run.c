#include "trace_run.h"

#include "allocator.h"

#include "hostinfo.h"
#include "tc_error.h"
#include "tc_log.h"
#include "trace_proc.h"

#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_ARGS 64
#define STDERR_LINES 4

static int s_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double tc_trace_median(double *v, size_t n)
{
    qsort(v, n, sizeof *v, s_cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

void tc_trace_result_free(tc_trace_result_t *r)
{
    free(r->samples);
    free(r->repeat_medians);
    r->samples = NULL;
    r->repeat_medians = NULL;
    r->n_samples = 0;
    r->n_repeats = 0;
}

/* Whether the runner is asked for its canary: on a CPU device of one
 * thread, with the canary on (the settings turn it off with the guard,
 * tc_quiet_get). (On more threads the
 * runner's torch.mm would split its products over them or not from call to
 * call, which reads as a phase where there is none; the agent's own canary
 * keeps to one thread, cpu_device.c.) */
static bool s_canary_on(const tc_trace_job_t *job)
{
    return job->quiet.canary_slow > 1 && strcmp(job->req.device, "cpu") == 0 &&
           job->req.threads == 1;
}

/* The fastest canary reading of the trace so far (0: none). */
static double s_canary_fastest(const tc_trace_result_t *r)
{
    double f = 0;
    for (size_t i = 0; i < r->n_samples; i++) {
        double c = r->samples[i].it.canary_ms;
        if (c > 0 && (f == 0 || c < f))
            f = c;
    }
    return f;
}

static bool s_iter_slow(const tc_trace_job_t *job, double fastest, const tc_trace_iter_t *it)
{
    return s_canary_on(job) && fastest > 0 && it->canary_ms > job->quiet.canary_slow * fastest;
}

/* Whether most timed iterations of the samples from `from` on were read
 * slow against the trace's fastest canary so far. */
static bool s_mostly_slow(const tc_trace_job_t *job, const tc_trace_result_t *r, size_t from)
{
    double fastest = s_canary_fastest(r);
    size_t timed = 0, slow = 0;
    for (size_t i = from; i < r->n_samples; i++) {
        if (r->samples[i].it.warmup)
            continue;
        timed++;
        slow += s_iter_slow(job, fastest, &r->samples[i].it);
    }
    return 2 * slow > timed;
}

/* Each repeat's median over its timed iterations, leaving out those the
 * canary read slow against the trace's fastest reading; a repeat with more
 * slow than fast ones keeps them all, and the trace is marked disturbed.
 * `timed` holds a repeat's iterations. */
static void s_repeat_medians(const tc_trace_job_t *job, tc_trace_result_t *r, double *timed)
{
    double fastest = s_canary_fastest(r);
    for (uint32_t k = 0; k < r->n_repeats; k++) {
        size_t n_all = 0, n = 0;
        for (size_t i = 0; i < r->n_samples; i++) {
            const tc_trace_sample_t *x = &r->samples[i];
            if (x->repeat != k || x->it.warmup)
                continue;
            n_all++;
            if (!s_iter_slow(job, fastest, &x->it))
                timed[n++] = x->it.ms;
        }
        if (2 * n < n_all) {
            r->disturbed = true;
            n = 0;
            for (size_t i = 0; i < r->n_samples; i++)
                if (r->samples[i].repeat == k && !r->samples[i].it.warmup)
                    timed[n++] = r->samples[i].it.ms;
        } else {
            r->slow_iters += (unsigned)(n_all - n);
        }
        r->repeat_medians[k] = tc_trace_median(timed, n);
    }
    if (r->slow_iters)
        tc_log_info("%s at batch %u: %u timed iteration%s read in a slow phase of the host (the "
                    "runner's canary over %.2f times its fastest) left out of the repeat medians",
                    job->req.model, job->req.batch, r->slow_iters, r->slow_iters == 1 ? "" : "s",
                    job->quiet.canary_slow);
}

/* The runner's command line: its words, then one flag per setting. The
 * same settings go into TRAINCAST_TRACE_* variables for runners that parse
 * their own arguments. */
typedef struct {
    char *argv[MAX_ARGS];
    char *env[16];
    char nums[8][24];
    char flags[16][32];
    char envbuf[16][320];
} s_cmdline_t;

static int s_cmdline(const tc_trace_job_t *job, bool profile, s_cmdline_t *c)
{
    const tc_trace_request_t *q = &job->req;
    size_t n = 0;
    while (job->runner[n] && n < MAX_ARGS - 32)
        c->argv[n] = job->runner[n], n++;
    if (job->runner[n])
        return tc_fail(TC_EINVAL, "the runner command has more than %d words", MAX_ARGS - 32);
    snprintf(c->nums[0], sizeof c->nums[0], "%u", q->batch);
    snprintf(c->nums[1], sizeof c->nums[1], "%u", q->input_size);
    snprintf(c->nums[2], sizeof c->nums[2], "%u", q->threads);
    snprintf(c->nums[3], sizeof c->nums[3], "%u", q->warmup);
    snprintf(c->nums[4], sizeof c->nums[4], "%u", q->iters);
    const char *set[][2] = {
        {"model", q->model},       {"batch", c->nums[0]},       {"input-size", c->nums[1]},
        {"device", q->device},     {"threads", c->nums[2]},     {"dtype", q->dtype},
        {"amp", q->amp},           {"optimizer", q->optimizer},
        {"cudnn-benchmark", q->cudnn_benchmark ? "1" : "0"},
        {"warmup", c->nums[3]},    {"iters", c->nums[4]},       {"profile", profile ? "1" : "0"},
    };
    size_t n_env = 0;
    for (size_t i = 0; i < sizeof set / sizeof set[0]; i++) {
        snprintf(c->flags[i], sizeof c->flags[i], "--%s", set[i][0]);
        c->argv[n++] = c->flags[i];
        c->argv[n++] = (char *)set[i][1];
        char *e = c->envbuf[n_env];
        int w = snprintf(e, sizeof c->envbuf[0], "TRAINCAST_TRACE_");
        for (const char *k = set[i][0]; *k && w < 64; k++)
            e[w++] = *k == '-' ? '_' : (char)(*k - ('a' <= *k && *k <= 'z' ? 32 : 0));
        snprintf(e + w, sizeof c->envbuf[0] - (size_t)w, "=%s", set[i][1]);
        c->env[n_env++] = e;
    }
    /* The allocator choice (allocator.h): the built-in runner starts with it
     * (it inherits the preload already; "system" keeps it as it is). */
    snprintf(c->envbuf[n_env], sizeof c->envbuf[0], "TRAINCAST_TRACE_ALLOCATOR=%s",
             tc_allocator_choice());
    c->env[n_env] = c->envbuf[n_env];
    n_env++;
    if (s_canary_on(job)) {
        snprintf(c->envbuf[n_env], sizeof c->envbuf[0], "TRAINCAST_TRACE_CANARY=1");
        c->env[n_env] = c->envbuf[n_env];
        n_env++;
    }
    c->argv[n] = NULL;
    c->env[n_env] = NULL;
    return 0;
}

static int s_feed(const char *data, size_t n, void *arg)
{
    return tc_trace_proto_feed(arg, data, n);
}

static void s_reason(tc_trace_result_t *r, Traincast__V1__TraceStatus status,
                     const char *prefix, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static void s_reason(tc_trace_result_t *r, Traincast__V1__TraceStatus status,
                     const char *prefix, const char *fmt, ...)
{
    int w = snprintf(r->reason, sizeof r->reason, "%s", prefix);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->reason + w, sizeof r->reason - (size_t)w, fmt, ap);
    va_end(ap);
    r->status = status;
}

static const char *s_lines(unsigned n, char *buf, size_t size)
{
    snprintf(buf, size, "%u line%s", n, n == 1 ? "" : "s");
    return buf;
}

/* Killed by SIGKILL (directly, or as a shell reports it) that nobody in
 * the agent sent, after the runner had grown to at least half the
 * machine's memory: the kernel's out-of-memory killer. */
static bool s_killed_for_memory(const tc_proc_result_t *pr, uint64_t mem_total)
{
    bool sigkill = (!pr->exited && pr->term_signal == SIGKILL) ||
                   (pr->exited && pr->exit_status == 128 + SIGKILL);
    return sigkill && !pr->timed_out && !pr->stopped && mem_total > 0 &&
           pr->peak_rss_bytes >= mem_total / 2;
}

/* Decide how one run ended. Returns true when it is usable. */
static bool s_outcome(const tc_trace_job_t *job, uint32_t repeat, tc_trace_proto_t *proto,
                      const tc_proc_result_t *pr, tc_trace_result_t *r)
{
    const tc_trace_output_t *o = tc_trace_proto_output(proto);
    char prefix[64] = "", tail[1024], n_lines[32];
    if (job->repeats > 1)
        snprintf(prefix, sizeof prefix, "repeat %u of %u: ", repeat + 1, job->repeats);
    tc_proc_tail_lines(pr->stderr_tail, STDERR_LINES, tail, sizeof tail);
    const char *sep = tail[0] ? "; stderr: " : "";
    int proto_rc = pr->stopped ? -1 : tc_trace_proto_finish(proto);
    uint64_t mem_total = tc_mem_total();
    const Traincast__V1__TraceStatus FAILED = TRAINCAST__V1__TRACE_STATUS__TRACE_STATUS_FAILED;
    if (pr->stopped) {
        s_reason(r, FAILED, prefix, "invalid runner output, %s", tc_trace_proto_error(proto));
    } else if (pr->timed_out) {
        s_reason(r, FAILED, prefix,
                 "hung: still running after the %g s timeout (killed) after %s of output%s%s",
                 job->timeout_s, s_lines(o->lines, n_lines, sizeof n_lines), sep, tail);
    } else if (o->oom || (pr->exited && pr->exit_status == TC_TRACE_EXIT_OOM)) {
        s_reason(r, TRAINCAST__V1__TRACE_STATUS__TRACE_STATUS_OOM, prefix,
                 "out of memory at batch %u: %s", job->req.batch,
                 o->oom && o->message[0] ? o->message : "the runner exited with status 3");
    } else if (o->error) {
        s_reason(r, FAILED, prefix, "the runner reported an error: %s", o->message);
    } else if (s_killed_for_memory(pr, mem_total)) {
        s_reason(r, TRAINCAST__V1__TRACE_STATUS__TRACE_STATUS_OOM, prefix,
                 "out of memory at batch %u: the runner was killed (SIGKILL) after reaching "
                 "%.1f GiB resident of the machine's %.1f GiB, which is what the kernel's "
                 "out-of-memory killer does", job->req.batch,
                 (double)pr->peak_rss_bytes / (1u << 30), (double)mem_total / (1u << 30));
    } else if (!pr->exited) {
        s_reason(r, FAILED, prefix, "crashed: the runner was killed by signal %d (%s) after "
                                    "%s of output%s%s%s",
                 pr->term_signal, strsignal(pr->term_signal),
                 s_lines(o->lines, n_lines, sizeof n_lines),
                 pr->term_signal == SIGKILL ? " (SIGKILL from outside: often a memory limit)" : "",
                 sep, tail);
    } else if (pr->exit_status > 128 && pr->exit_status < 128 + 65) {
        /* A shell reports its child's death by signal N as status 128 + N. */
        int sig = pr->exit_status - 128;
        s_reason(r, FAILED, prefix, "crashed: the runner exited with status %d (signal %d, %s, "
                                    "as a shell reports it) after %s of output%s%s",
                 pr->exit_status, sig, strsignal(sig), s_lines(o->lines, n_lines, sizeof n_lines),
                 sep, tail);
    } else if (pr->exit_status != 0) {
        s_reason(r, FAILED, prefix, "crashed: the runner exited with status %d after %s of "
                                    "output%s%s",
                 pr->exit_status, s_lines(o->lines, n_lines, sizeof n_lines), sep, tail);
    } else if (proto_rc < 0) {
        s_reason(r, FAILED, prefix, "invalid runner output, %s", tc_trace_proto_error(proto));
    } else {
        return true;
    }
    return false;
}

int tc_trace_measure(const tc_trace_job_t *job, tc_trace_progress_fn progress, void *arg,
                     tc_trace_result_t *r)
{
    memset(r, 0, sizeof *r);
    r->started_at_us = tc_now_us();
    const tc_trace_request_t *q = &job->req;
    size_t per_run = (size_t)q->warmup + q->iters;
    r->samples = calloc(per_run * job->repeats + 1, sizeof *r->samples);
    r->repeat_medians = calloc(job->repeats + 1, sizeof *r->repeat_medians);
    double *timed = calloc(q->iters + 1, sizeof *timed);
    s_cmdline_t *cmd = calloc(1, sizeof *cmd);
    tc_load_t *loads = NULL;
    int rc = 0;
    if (!r->samples || !r->repeat_medians || !timed || !cmd) {
        rc = tc_fail(TC_ENOMEM, "out of memory for %u repeats of %zu iterations", job->repeats,
                     per_run);
        goto done;
    }
    loads = calloc(job->repeats + 1, sizeof *loads);
    if (!loads) {
        rc = tc_fail(TC_ENOMEM, "out of memory");
        goto done;
    }
    unsigned attempt = 0;
    for (uint32_t rep = 0; rep < job->repeats; rep++) {
        if (progress)
            progress(rep, arg);
        size_t samples_before = r->n_samples;
        uint32_t repeats_before = r->n_repeats;
        tc_load_mark_t start;
        tc_load_mark(&start);
        if ((rc = s_cmdline(job, job->profile && rep == 0, cmd)) < 0)
            goto done;
        tc_trace_proto_t *proto = tc_trace_proto_new(q);
        if (!proto) {
            rc = tc_fail(TC_ENOMEM, "out of memory");
            goto done;
        }
        tc_proc_spec_t spec = {.argv = cmd->argv, .env_add = cmd->env,
                               .timeout_s = job->timeout_s, .on_stdout = s_feed, .arg = proto,
                               .cancelled = job->cancelled, .cancel_arg = job->cancel_arg};
        tc_proc_result_t pr;
        rc = tc_proc_run(&spec, &pr);
        bool usable = rc == 0 && s_outcome(job, rep, proto, &pr, r);
        if (usable) {
            const tc_trace_output_t *o = tc_trace_proto_output(proto);
            for (size_t i = 0; i < o->n_iters; i++)
                r->samples[r->n_samples++] = (tc_trace_sample_t){rep, o->iters[i]};
            r->n_repeats++; /* its median: s_repeat_medians, once all are in */
            if (o->peak_memory_bytes > r->peak_memory_bytes)
                r->peak_memory_bytes = o->peak_memory_bytes;
        }
        /* The header of the first run that had one says what ran, also
         * for a trace that failed later. */
        const tc_trace_output_t *o = tc_trace_proto_output(proto);
        if (!r->info.have_header && o->have_header) {
            r->info = *o;
            r->info.iters = NULL;
            r->info.n_iters = 0;
        }
        tc_trace_proto_destroy(&proto);
        if (rc < 0 || !usable)
            goto done;
        tc_load_since(&start, TC_LOAD_MIN_S, &loads[rep]);
        bool busy = tc_quiet_disturbed(&job->quiet, &loads[rep]);
        bool slow = s_mostly_slow(job, r, samples_before);
        if (busy || slow) {
            tc_load_t last;
            /* Run this repeat again once the machine is quiet (a slow phase
             * of the host passes by itself, in seconds); when it stays busy,
             * keep it, marked (slow: by s_repeat_medians). */
            if (attempt < job->quiet.retries &&
                (!busy || tc_quiet_wait(&job->quiet, "training traces", &last))) {
                attempt++;
                r->remeasured++;
                r->n_samples = samples_before;
                r->n_repeats = repeats_before;
                rep--;
                continue;
            }
            r->disturbed |= busy;
        }
        attempt = 0;
    }
    s_repeat_medians(job, r, timed);
    tc_load_combine(loads, job->repeats, &r->load);
    double *m = calloc(r->n_repeats, sizeof *m);
    if (!m) {
        rc = tc_fail(TC_ENOMEM, "out of memory");
        goto done;
    }
    memcpy(m, r->repeat_medians, r->n_repeats * sizeof *m);
    r->median_ms = tc_trace_median(m, r->n_repeats);
    r->spread = (m[r->n_repeats - 1] - m[0]) / r->median_ms;
    free(m);
    r->status = TRAINCAST__V1__TRACE_STATUS__TRACE_STATUS_OK;
done:
    free(loads);
    free(timed);
    free(cmd);
    if (rc < 0 || r->status != TRAINCAST__V1__TRACE_STATUS__TRACE_STATUS_OK) {
        /* Never half-used: a trace that did not finish keeps no measurements. */
        tc_trace_result_free(r);
        r->median_ms = r->spread = 0;
        r->peak_memory_bytes = 0;
    }
    return rc;
}
