#include "measure.h"

#include "tc_error.h"
#include "tc_wire.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double s_mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

tc_measure_opts_t tc_measure_defaults(void)
{
    return (tc_measure_opts_t){
        .budget_ms = 1000,
        .min_reps = 5,
        .max_reps = 200,
        .ci_rel = 0.02,
        .warmup_min = 2,
        .warmup_max = 20,
        .settle_rel = 0.05,
        .quiet = {.threshold_pct = 100.0},
    };
}

int tc_measure_opts_check(const tc_measure_opts_t *o)
{
    if (!(o->budget_ms > 0) || !isfinite(o->budget_ms))
        return tc_fail(TC_EINVAL, "the time budget must be > 0 ms (got %g)", o->budget_ms);
    if (o->min_reps < 1 || o->max_reps < o->min_reps)
        return tc_fail(TC_EINVAL, "repetitions: need 1 <= min (%u) <= max (%u)", o->min_reps,
                       o->max_reps);
    if (!(o->ci_rel > 0) || o->ci_rel >= 1)
        return tc_fail(TC_EINVAL, "the CI target must be between 0 and 1 (got %g)", o->ci_rel);
    if (o->warmup_max < o->warmup_min)
        return tc_fail(TC_EINVAL, "warm-up: need min (%u) <= max (%u)", o->warmup_min,
                       o->warmup_max);
    if (!(o->settle_rel > 0))
        return tc_fail(TC_EINVAL, "the warm-up settle threshold must be > 0 (got %g)",
                       o->settle_rel);
    return tc_quiet_check(&o->quiet, "the quiet threshold");
}

const char *tc_stop_reason_name(tc_stop_reason_t r)
{
    switch (r) {
    case TC_STOP_CONVERGED: return "converged";
    case TC_STOP_BUDGET: return "budget";
    case TC_STOP_MAX_REPS: return "max_reps";
    }
    return "?";
}

void tc_samples_free(tc_samples_t *s)
{
    if (!s)
        return;
    free(s->ms);
    free(s->offset_us);
    memset(s, 0, sizeof *s);
}

/* One block: warm-up, then the timed repetitions and their load, with the
 * canary read before the warm-up (which warms the caches again after it)
 * and after the repetitions. */
static int s_block(tc_measure_fn fn, void *arg, const tc_measure_opts_t *o, tc_samples_t *out)
{
    int rc = 0;
    memset(out, 0, sizeof *out);
    double canary_before = tc_canary_read(o->canary);
    out->ms = malloc(o->max_reps * sizeof *out->ms);
    out->offset_us = malloc(o->max_reps * sizeof *out->offset_us);
    if (!out->ms || !out->offset_us)
        TC_FAIL_GOTO(TC_ENOMEM, "out of memory for %u samples", o->max_reps);

    double wall0 = s_mono_ms(), reported = 0, prev = -1, t = 0;
#define ELAPSED() fmax(s_mono_ms() - wall0, reported)
    while (out->warmups < o->warmup_max) {
        TC_TRY(fn(arg, &t));
        reported += t;
        out->warmups++;
        if (out->warmups >= o->warmup_min && prev >= 0 &&
            fabs(t - prev) <= o->settle_rel * fmin(t, prev)) {
            out->settled = true;
            break;
        }
        prev = t;
        if (out->warmups >= o->warmup_min && ELAPSED() >= o->budget_ms / 3)
            break;
    }

    out->stop = TC_STOP_MAX_REPS;
    tc_load_mark_t start;
    tc_load_mark(&start);
    while (out->n < o->max_reps) {
        int64_t at = tc_now_us();
        if (out->n == 0)
            out->started_at_us = at;
        TC_TRY(fn(arg, &t));
        reported += t;
        out->ms[out->n] = t;
        out->offset_us[out->n] = at - out->started_at_us;
        out->n++;
        if (out->n < o->min_reps)
            continue;
        TC_TRY(tc_stats_compute(out->ms, out->n, &out->stats));
        if (tc_stats_ci_rel(&out->stats) <= o->ci_rel) {
            out->stop = TC_STOP_CONVERGED;
            break;
        }
        if (ELAPSED() >= o->budget_ms) {
            out->stop = TC_STOP_BUDGET;
            break;
        }
    }
#undef ELAPSED
    tc_load_since(&start, TC_LOAD_MIN_S, &out->load);
    out->canary_ms = fmax(canary_before, tc_canary_read(o->canary));
    out->host_slow = tc_canary_slow(o->canary, out->canary_ms);
    TC_TRY(tc_stats_compute(out->ms, out->n, &out->stats));
    return 0;
err:
    tc_samples_free(out);
    return rc;
}

int tc_measure(tc_measure_fn fn, void *arg, const tc_measure_opts_t *o, tc_samples_t *out)
{
    memset(out, 0, sizeof *out);
    int rc = tc_measure_opts_check(o);
    if (rc < 0)
        return rc;
    for (unsigned attempt = 0;; attempt++) {
        if ((rc = s_block(fn, arg, o, out)) < 0)
            return rc;
        out->remeasured = attempt;
        bool busy = tc_quiet_disturbed(&o->quiet, &out->load);
        out->disturbed = busy || out->host_slow;
        if (!out->disturbed || attempt >= o->quiet.retries)
            return 0;
        /* Measure again once the machine is quiet and the host out of its
         * slow phase; when either lasts, keep this block, marked. */
        tc_load_t last;
        if (busy && !tc_quiet_wait(&o->quiet, "benchmarks", &last))
            return 0;
        if (out->host_slow && !tc_canary_wait(o->canary, "benchmarks", true))
            return 0;
        tc_samples_free(out);
    }
}

tc_measure_opts_t tc_measure_with_canary(const tc_measure_opts_t *o, tc_device_t *dev,
                                         tc_canary_t *c)
{
    tc_measure_opts_t with = *o;
    tc_canary_init(c, dev, &o->quiet);
    with.canary = c;
    return with;
}

int tc_samples_to_result(const tc_samples_t *s, double quiet_pct, Traincast__V1__ConvResult *r)
{
    if (s->n == 0)
        return tc_fail(TC_EINVAL, "no measured repetitions");
    if (s->load.known) {
        if (!(r->load = calloc(1, sizeof *r->load)))
            return tc_fail(TC_ENOMEM, "out of memory building a result");
        traincast__v1__load__init(r->load);
        r->load->others_pct = s->load.others_pct;
        r->load->steal_pct = s->load.steal_pct;
        r->load->threshold_pct = quiet_pct;
        r->load->remeasured = s->remeasured;
        r->load->disturbed = s->disturbed;
        r->load->canary_ms = s->canary_ms;
    }
    r->samples_ms = malloc(s->n * sizeof *r->samples_ms);
    r->sample_offsets_us = malloc(s->n * sizeof *r->sample_offsets_us);
    if (!r->samples_ms || !r->sample_offsets_us)
        return tc_fail(TC_ENOMEM, "out of memory building a result");
    r->median_ms = s->stats.median;
    r->min_ms = s->stats.min;
    r->max_ms = s->stats.max;
    r->stddev_ms = s->stats.stddev;
    r->repetitions = (uint32_t)s->n;
    r->measured_at_us = s->started_at_us;
    memcpy(r->samples_ms, s->ms, s->n * sizeof *r->samples_ms);
    memcpy(r->sample_offsets_us, s->offset_us, s->n * sizeof *r->sample_offsets_us);
    r->n_samples_ms = r->n_sample_offsets_us = s->n;
    return 0;
}
