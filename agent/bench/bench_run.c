#include "bench_run.h"

#include "conv_bench.h"
#include "matmul_bench.h"
#include "tc_buf.h"
#include "tc_error.h"
#include "tc_log.h"
#include "tc_progress.h"
#include "tc_resultfile.h"
#include "tc_validate.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double s_now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Measured results not yet handed to the sink. */
typedef struct {
    Traincast__V1__ConvResult *r[TC_BENCH_BATCH_RESULTS];
    size_t n;
    double first_s; /* when the first of them was measured */
} s_batch_t;

/* Wrap results of one kind (matmul or not) in an envelope, check it and
 * hand it to the sink, counting them in *written. */
static int s_emit(Traincast__V1__ConvResult **r, size_t n, bool matmul,
                  const tc_result_sink_t *sink, Traincast__V1__Device *dev, const char *backend,
                  const char *agent_id, size_t *written)
{
    if (!n)
        return 0;
    Traincast__V1__ConvResults cr = TRAINCAST__V1__CONV_RESULTS__INIT;
    cr.device = dev;
    cr.backend = (char *)backend;
    if (matmul) {
        cr.n_matmul_results = n;
        cr.matmul_results = r;
    } else {
        cr.n_results = n;
        cr.results = r;
    }
    tc_envelope_t env = TRAINCAST__V1__ENVELOPE__INIT;
    env.body_case = TRAINCAST__V1__ENVELOPE__BODY_CONV_RESULTS;
    env.conv_results = &cr;
    char id[TC_MSGID_LEN + 1];
    tc_envelope_stamp(&env, agent_id, id);
    int rc = tc_validate_envelope(&env);
    if (rc < 0)
        return tc_err_context(rc, "refusing to write an invalid result");
    rc = sink->emit(&env, sink->arg);
    if (rc == 0)
        *written += n;
    return rc;
}

/* Hand the batch to the sink: its convs in one envelope, its matmuls in
 * another (an aggregator that predates matmul results refuses theirs
 * alone), each list in the order measured; the batch is empty afterwards
 * whatever happened. */
static int s_flush(s_batch_t *batch, const tc_result_sink_t *sink, Traincast__V1__Device *dev,
                   const char *backend, const char *agent_id, size_t *written)
{
    if (!batch->n)
        return 0;
    Traincast__V1__ConvResult *convs[TC_BENCH_BATCH_RESULTS], *mms[TC_BENCH_BATCH_RESULTS];
    size_t n_convs = 0, n_mms = 0;
    for (size_t i = 0; i < batch->n; i++) {
        if (batch->r[i]->matmul)
            mms[n_mms++] = batch->r[i];
        else
            convs[n_convs++] = batch->r[i];
    }
    int rc = s_emit(convs, n_convs, false, sink, dev, backend, agent_id, written);
    if (rc == 0)
        rc = s_emit(mms, n_mms, true, sink, dev, backend, agent_id, written);
    for (size_t i = 0; i < batch->n; i++)
        tc_conv_result_proto_free(&batch->r[i]);
    batch->n = 0;
    return rc;
}

/* The canary around the block, where one was read: its reading over the
 * fastest of the run so far, and whether that marked a slow phase. */
static void s_json_canary(tc_buf_t *b, const tc_samples_t *s)
{
    if (!(s->canary_ms > 0))
        return;
    tc_buf_puts(b, ", \"canary_ms\": ");
    tc_buf_json_num(b, s->canary_ms);
    tc_buf_printf(b, ", \"host_slow\": %s", s->host_slow ? "true" : "false");
}

/* One measured item as a JSON line (agent bench --json). */
static void s_json_item(FILE *f, const tc_conv_outcome_t *o)
{
    const tc_conv_config_t *c = &o->spec.config;
    const tc_stats_t *st = &o->samples.stats;
    tc_buf_t b = {0};
    tc_buf_printf(&b, "{\"n\": %u, ", c->n);
    tc_conv_key_json(&b, c);
    tc_buf_printf(&b, ", \"direction\": \"%s\", \"route\": ",
                  tc_direction_name(o->spec.direction));
    tc_buf_json_str(&b, o->route);
    tc_buf_puts(&b, ", \"algo\": ");
    tc_buf_json_str(&b, o->algos[o->chosen].info.name);
    tc_buf_puts(&b, ", \"median_ms\": ");
    tc_buf_json_num(&b, st->median);
    tc_buf_puts(&b, ", \"min_ms\": ");
    tc_buf_json_num(&b, st->min);
    tc_buf_printf(&b, ", \"repetitions\": %zu, \"workspace_bytes\": %llu, "
                      "\"sm_clock_mhz\": %u, \"power_w\": ",
                  o->samples.n, (unsigned long long)o->algos[o->chosen].info.workspace_bytes,
                  o->telemetry.sm_clock_mhz);
    tc_buf_json_num(&b, o->telemetry.power_w);
    if (o->samples.load.known) {
        tc_buf_puts(&b, ", \"load_others_pct\": ");
        tc_buf_json_num(&b, o->samples.load.others_pct);
        tc_buf_printf(&b, ", \"remeasured\": %u, \"disturbed\": %s", o->samples.remeasured,
                      o->samples.disturbed ? "true" : "false");
    }
    s_json_canary(&b, &o->samples);
    tc_buf_puts(&b, "}\n");
    fputs(tc_buf_str(&b), f);
    fflush(f);
    tc_buf_free(&b);
}

/* A measured matmul as a JSON line (agent bench --json). */
static void s_json_matmul(FILE *f, const tc_matmul_outcome_t *o)
{
    const tc_stats_t *st = &o->samples.stats;
    tc_buf_t b = {0};
    tc_buf_printf(&b, "{\"op\": \"matmul\", \"minibatch\": %u, ", o->spec.config.minibatch);
    tc_matmul_key_json(&b, &o->spec.config);
    tc_buf_printf(&b, ", \"direction\": \"%s\", \"route\": ",
                  tc_direction_name(o->spec.direction));
    tc_buf_json_str(&b, o->route);
    tc_buf_puts(&b, ", \"algo\": ");
    tc_buf_json_str(&b, tc_matmul_call_name(&o->spec.config));
    tc_buf_puts(&b, ", \"median_ms\": ");
    tc_buf_json_num(&b, st->median);
    tc_buf_puts(&b, ", \"min_ms\": ");
    tc_buf_json_num(&b, st->min);
    tc_buf_printf(&b, ", \"repetitions\": %zu, \"remeasured\": %u, \"disturbed\": %s",
                  o->samples.n, o->samples.remeasured, o->samples.disturbed ? "true" : "false");
    s_json_canary(&b, &o->samples);
    tc_buf_puts(&b, "}\n");
    fputs(tc_buf_str(&b), f);
    fflush(f);
    tc_buf_free(&b);
}

/* Measure one item of either kind into *r (NULL on error); *st its
 * measurement's statistics and stop, *disturbed its load, *canary_ms the
 * canary around it (0: none). */
static int s_measure_item(tc_device_t *dev, const tc_bench_item_t *it,
                          const tc_bench_run_opts_t *o, const Traincast__V1__Device *d,
                          Traincast__V1__ConvResult **r, tc_stats_t *st, size_t *reps,
                          tc_stop_reason_t *stop, bool *disturbed, double *canary_ms)
{
    int rc;
    if (it->kind == TC_OP_MATMUL) {
        tc_matmul_spec_t spec = {.config = it->matmul, .direction = it->direction,
                                 .seed = o->seed};
        tc_matmul_outcome_t out;
        rc = tc_matmul_bench(dev, &spec, &o->measure, &out);
        if (rc == 0)
            rc = tc_matmul_outcome_to_proto(&out, o->policy, r);
        if (rc == 0) {
            if (o->json)
                s_json_matmul(o->json, &out);
            *st = out.samples.stats, *reps = out.samples.n, *stop = out.samples.stop;
            *disturbed = out.samples.disturbed;
            *canary_ms = out.samples.canary_ms;
        }
        tc_matmul_outcome_free(&out);
        return rc;
    }
    tc_conv_spec_t spec = {.config = it->config,
                           .direction = it->direction,
                           .policy = o->policy,
                           .workspace_limit = tc_bench_workspace_limit(o, d->memory_bytes,
                                                                       it->config.n),
                           .seed = o->seed};
    tc_conv_outcome_t out;
    rc = tc_conv_bench(dev, &spec, &o->measure, &out);
    if (rc == 0)
        rc = tc_conv_outcome_to_proto(&out, r);
    if (rc == 0) {
        if (o->json)
            s_json_item(o->json, &out);
        *st = out.samples.stats, *reps = out.samples.n, *stop = out.samples.stop;
        *disturbed = out.samples.disturbed;
        *canary_ms = out.samples.canary_ms;
    }
    tc_conv_outcome_free(&out);
    return rc;
}

/* Measure item `it` into the batch (sent when full or due), marked as
 * superseding the result of the same item measured at `supersedes_us` (0
 * none; the plan's end measuring again); *m what the end needs of it. A
 * failed item is counted and logged, not an error. */
static int s_item(tc_device_t *dev, const tc_bench_item_t *it, const char *item,
                  const tc_bench_run_opts_t *o, const tc_result_sink_t *sink,
                  Traincast__V1__Device *d, const char *backend, size_t max,
                  s_batch_t *batch, tc_bench_report_t *rep, int64_t supersedes_us,
                  tc_bench_mark_t *m)
{
    Traincast__V1__ConvResult *r = NULL;
    double item_t0 = s_now_s();
    *m = (tc_bench_mark_t){0};
    tc_stats_t st = {0};
    size_t reps = 0;
    tc_stop_reason_t stop = TC_STOP_CONVERGED;
    bool busy = false;
    int brc = s_measure_item(dev, it, o, d, &r, &st, &reps, &stop, &busy, &m->canary_ms);
    if (brc < 0) {
        tc_log_warn("%s: %s", item, tc_errmsg());
        rep->failed++;
    } else {
        rep->measured_ms += st.median;
        rep->repetitions += reps;
        rep->converged += stop == TC_STOP_CONVERGED;
        m->disturbed = busy;
        m->measured_at_us = r->measured_at_us;
        /* Where the load was read (a result without it is from a run
         * without the guard, which measures nothing again). */
        if (r->load && supersedes_us && supersedes_us < r->measured_at_us)
            r->load->supersedes_us = supersedes_us;
        if (!batch->n)
            batch->first_s = s_now_s();
        batch->r[batch->n++] = r;
    }
    /* Send when full, or when the next item, if it takes as long as this
     * one did, would hold the first result back past the bound (a slow
     * stream goes out item by item). */
    double now = s_now_s();
    if (batch->n >= max ||
        (batch->n && (now - batch->first_s + now - item_t0) * 1000.0 >= TC_BENCH_BATCH_MS))
        return s_flush(batch, sink, d, backend, o->agent_id, &rep->measured);
    return 0;
}

/* "n32 c64 56x56 k64 3x3/1 p1 fwd", "matmul n8 Nx50x3072 k768 tB weight
 * bwd_data". */
static void s_item_label(const tc_bench_item_t *it, char *buf, size_t size)
{
    char label[192];
    if (it->kind == TC_OP_MATMUL)
        tc_matmul_config_label(&it->matmul, label, sizeof label);
    else
        tc_conv_config_label(&it->config, label, sizeof label);
    snprintf(buf, size, "%s%s %s", it->kind == TC_OP_MATMUL ? "matmul " : "", label,
             tc_direction_name(it->direction));
}

/* An item the plan's end measures again, and the result it supersedes. */
typedef struct {
    const tc_bench_item_t *item;
    int64_t supersedes_us;
} s_again_t;

/* The plan's end: whether item `it`, measured as `m` says, is measured
 * again (appended to again[*n_again]): taken while the machine was busy
 * (under the guard), or in a slow phase by the plan's fastest canary
 * reading (`late`, counted in *n_late: a phase the run saw only later). */
static bool s_again(const tc_bench_item_t *it, const tc_bench_mark_t *m, bool guard,
                    const tc_canary_t *canary, s_again_t *again, size_t *n_again,
                    size_t *n_late)
{
    bool busy = m->disturbed && guard, late = !busy && tc_canary_slow(canary, m->canary_ms);
    if (busy || late)
        again[(*n_again)++] = (s_again_t){it, m->measured_at_us};
    *n_late += late;
    return busy || late;
}

int tc_bench_run_sink(tc_device_t *dev, const tc_bench_item_t *items, size_t n_items,
                      const tc_bench_run_opts_t *opts, const tc_result_sink_t *sink,
                      tc_bench_report_t *rep)
{
    int rc = 0;
    double t0 = s_now_s();
    memset(rep, 0, sizeof *rep);
    s_batch_t *batch = calloc(1, sizeof *batch);
    /* Each item's first measurement, and the items taken while the machine
     * was busy or the host slow, measured again at the end once it is quiet
     * (the results they supersede stay, marked or superseded): this run's
     * and the held ones of the runs it resumes. */
    tc_bench_mark_t *first = calloc(n_items + 1, sizeof *first);
    s_again_t *again = calloc(n_items + opts->n_held + 1, sizeof *again);
    size_t n_again = 0, n_late = 0, n_resumed = 0;
    if (!batch || !again || !first) {
        free(batch);
        free(again);
        free(first);
        return tc_fail(TC_ENOMEM, "out of memory");
    }
    /* The options with the device's canary (canary.h). */
    tc_canary_t canary;
    tc_bench_run_opts_t run = *opts;
    const tc_bench_run_opts_t *o = &run;
    run.measure = tc_measure_with_canary(&opts->measure, dev, &canary);
    /* The fastest reading is the plan's: the held results' readings count. */
    for (size_t h = 0; h < o->n_held; h++)
        tc_canary_seen(&canary, o->held[h].mark.canary_ms);
    bool guard = o->measure.quiet.threshold_pct < 100 || tc_canary_on(&canary);
    Traincast__V1__Device d = TRAINCAST__V1__DEVICE__INIT;
    const char *backend = tc_device_library(dev);
    size_t max = o->batch_results && o->batch_results < TC_BENCH_BATCH_RESULTS
                     ? o->batch_results
                     : TC_BENCH_BATCH_RESULTS;
    TC_TRY(tc_device_describe(dev, &d));
    for (size_t i = 0; i < n_items; i++) {
        if (sink->cancelled && sink->cancelled(sink->arg))
            TC_FAIL_GOTO(TC_EINTR, "stopped after %zu of %zu benchmarks", i, n_items);
        char item[224];
        s_item_label(&items[i], item, sizeof item);
        if (sink->progress)
            sink->progress(i, n_items, item, sink->arg);
        TC_TRY(s_item(dev, &items[i], item, o, sink, &d, backend, max, batch, rep, 0,
                      &first[i]));
    }
    /* Against the fastest reading of the whole run, which also catches items
     * measured in a slow phase before the run first saw a fast one: their
     * results went out unmarked; the new ones supersede them
     * (supersedes_us), which makes them count as disturbed in the store.
     * Then the held items of a run cut off before its end, the same way. */
    for (size_t i = 0; i < n_items; i++)
        s_again(&items[i], &first[i], guard, &canary, again, &n_again, &n_late);
    for (size_t h = 0; h < o->n_held; h++)
        n_resumed += s_again(&o->held[h].item, &o->held[h].mark, guard, &canary, again,
                             &n_again, &n_late);
    tc_load_t last;
    if (n_again && tc_quiet_wait_again(&o->measure.quiet, "benchmarks", &last) &&
        tc_canary_wait(&canary, "benchmarks", false)) {
        tc_log_info("measuring %zu item%s again that %s taken while the machine was busy or the "
                    "host slow (%zu of them seen slow only against the run's fastest canary, "
                    "%zu measured by a run this one resumes)",
                    n_again, n_again == 1 ? "" : "s", n_again == 1 ? "was" : "were", n_late,
                    n_resumed);
        for (size_t a = 0; a < n_again; a++) {
            if (sink->cancelled && sink->cancelled(sink->arg))
                TC_FAIL_GOTO(TC_EINTR, "stopped while measuring disturbed items again");
            char item[224];
            s_item_label(again[a].item, item, sizeof item);
            tc_bench_mark_t m;
            TC_TRY(s_item(dev, again[a].item, item, o, sink, &d, backend, max, batch, rep,
                          again[a].supersedes_us, &m));
        }
    }
    if (tc_canary_on(&canary))
        tc_log_info("the canary read %u times (fastest %.3f ms)", canary.readings,
                    canary.fastest_ms);
    TC_TRY(s_flush(batch, sink, &d, backend, o->agent_id, &rep->measured));
    if (sink->progress)
        sink->progress(n_items, n_items, NULL, sink->arg);
err:
    /* Stopped (cancelled): what was measured still goes out. */
    if (batch->n)
        (void)s_flush(batch, sink, &d, backend, o->agent_id, &rep->measured);
    free(batch);
    free(again);
    free(first);
    rep->elapsed_s = s_now_s() - t0;
    return rc;
}

uint64_t tc_bench_workspace_limit(const tc_bench_run_opts_t *o, uint64_t memory_bytes,
                                  uint32_t batch)
{
    if (o->workspace_limit)
        return o->workspace_limit;
    for (size_t i = 0; i < o->n_peaks; i++)
        if (o->peaks[i].batch == batch && o->peaks[i].peak_bytes < memory_bytes)
            return memory_bytes - o->peaks[i].peak_bytes;
    return 0;
}

typedef struct {
    tc_resultfile_t *file;
    tc_progress_t *bar;
} s_file_sink_t;

static int s_file_emit(tc_envelope_t *env, void *arg)
{
    return tc_resultfile_append(((s_file_sink_t *)arg)->file, env);
}

static void s_file_progress(uint64_t done, uint64_t total, const char *what, void *arg)
{
    (void)total;
    tc_progress_update(((s_file_sink_t *)arg)->bar, done, what);
}

int tc_bench_run(tc_device_t *dev, const tc_bench_item_t *items, size_t n_items,
                 const tc_bench_run_opts_t *o, const char *out_path, tc_bench_report_t *rep)
{
    memset(rep, 0, sizeof *rep);
    s_file_sink_t fs = {0};
    int rc = tc_resultfile_open_append(out_path, &fs.file);
    if (rc < 0)
        return rc;
    fs.bar = tc_progress_new(o->progress_label ? o->progress_label : "bench", n_items);
    if (!fs.bar) {
        tc_resultfile_close(&fs.file);
        return tc_fail(TC_ENOMEM, "out of memory");
    }
    const tc_result_sink_t sink = {.emit = s_file_emit, .progress = s_file_progress, .arg = &fs};
    rc = tc_bench_run_sink(dev, items, n_items, o, &sink, rep);
    tc_progress_destroy(&fs.bar);
    tc_resultfile_close(&fs.file);
    return rc;
}
