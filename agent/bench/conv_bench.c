#include "conv_bench.h"

#include "tc_buf.h"
#include "tc_error.h"
#include "tc_log.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The plan's run, and every TELEMETRY_EVERY runs the device's clock and
 * power (read between runs, outside the timed region). */
#define TELEMETRY_EVERY 8
#define TELEMETRY_MAX 64

typedef struct {
    tc_device_t *dev;
    tc_conv_plan_t *plan;
    unsigned runs, n;
    double mhz[TELEMETRY_MAX], watts[TELEMETRY_MAX];
} s_run_t;

static int s_run_cb(void *arg, double *ms)
{
    s_run_t *r = arg;
    int rc = tc_conv_plan_run(r->plan, ms);
    if (rc == 0 && r->dev && r->runs++ % TELEMETRY_EVERY == 0 && r->n < TELEMETRY_MAX) {
        tc_telemetry_t t;
        tc_device_telemetry(r->dev, &t);
        if (t.sm_clock_mhz || t.power_w > 0) {
            r->mhz[r->n] = t.sm_clock_mhz;
            r->watts[r->n] = t.power_w;
            r->n++;
        }
    }
    return rc;
}

static int s_dcmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double s_median(double *v, size_t n)
{
    if (n == 0)
        return 0;
    qsort(v, n, sizeof *v, s_dcmp);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static bool s_runnable(const tc_algo_result_t *a)
{
    return a->info.status == TRAINCAST__V1__ALGO_STATUS__ALGO_STATUS_OK;
}

static void s_mark(tc_algo_result_t *a, Traincast__V1__AlgoStatus st, const char *msg)
{
    a->info.status = st;
    snprintf(a->info.message, sizeof a->info.message, "%s", msg);
}

/* Select and measure candidate i; on failure it is marked FAILED. With
 * `telemetry`, the device's median clock and power while measuring go there. */
static int s_measure(tc_device_t *dev, tc_conv_plan_t *plan, tc_algo_result_t *a, size_t i,
                     const tc_measure_opts_t *mo, tc_samples_t *out, tc_telemetry_t *telemetry)
{
    s_run_t run = {.dev = telemetry ? dev : NULL, .plan = plan};
    int rc = tc_conv_plan_select(plan, i);
    if (rc == 0)
        rc = tc_measure(s_run_cb, &run, mo, out);
    if (rc == 0 && telemetry) {
        telemetry->sm_clock_mhz = (unsigned)(s_median(run.mhz, run.n) + 0.5);
        telemetry->power_w = s_median(run.watts, run.n);
    }
    if (rc < 0) {
        s_mark(a, TRAINCAST__V1__ALGO_STATUS__ALGO_STATUS_FAILED, tc_errmsg());
        tc_log_warn("algorithm %s failed: %s", a->info.name, tc_errmsg());
        return rc;
    }
    a->timed = true;
    a->stats = out->stats;
    return 0;
}

static int s_none_ran(const tc_conv_outcome_t *o)
{
    tc_buf_t b = {0};
    for (size_t i = 0; i < o->n_algos; i++)
        tc_buf_printf(&b, "%s%s: %s%s%s", i ? "; " : "", o->algos[i].info.name,
                      tc_algo_status_name(o->algos[i].info.status),
                      o->algos[i].info.message[0] ? " - " : "", o->algos[i].info.message);
    char label[128];
    tc_conv_config_label(&o->spec.config, label, sizeof label);
    int rc = tc_fail(TC_EUNSUPPORTED, "no algorithm could run %s %s (%s): %s", label,
                     tc_direction_name(o->spec.direction), tc_dtype_name(o->spec.config.dtype),
                     o->n_algos ? tc_buf_str(&b) : "the library lists none");
    tc_buf_free(&b);
    return rc;
}

int tc_conv_bench(tc_device_t *dev, const tc_conv_spec_t *spec, const tc_measure_opts_t *mo,
                  tc_conv_outcome_t *out)
{
    int rc = 0;
    tc_conv_plan_t *plan = NULL;
    memset(out, 0, sizeof *out);
    out->spec = *spec;
    out->chosen = -1;
    out->spec_quiet_pct = mo->quiet.threshold_pct;
    TC_TRY(tc_measure_opts_check(mo));
    TC_TRY(tc_conv_plan_create(dev, spec, &plan));
    snprintf(out->route, sizeof out->route, "%s", tc_conv_plan_route(plan));
    out->n_algos = tc_conv_plan_algo_count(plan);
    out->algos = calloc(out->n_algos ? out->n_algos : 1, sizeof *out->algos);
    if (!out->algos)
        TC_FAIL_GOTO(TC_ENOMEM, "out of memory listing algorithms");
    size_t runnable = 0;
    for (size_t i = 0; i < out->n_algos; i++) {
        out->algos[i].info = *tc_conv_plan_algo(plan, i);
        runnable += s_runnable(&out->algos[i]);
    }

    if (spec->policy == TRAINCAST__V1__POLICY__POLICY_HEURISTIC) {
        for (size_t i = 0; i < out->n_algos; i++) {
            tc_algo_result_t *a = &out->algos[i];
            if (!s_runnable(a))
                continue;
            if (out->chosen >= 0) {
                s_mark(a, TRAINCAST__V1__ALGO_STATUS__ALGO_STATUS_SKIPPED,
                       "not timed: the heuristic policy runs the first algorithm that fits");
                continue;
            }
            if (s_measure(dev, plan, a, i, mo, &out->samples, &out->telemetry) == 0)
                out->chosen = (int)i;
        }
    } else {
        /* Screen every runnable candidate with an equal share of half the
         * budget, then measure the fastest with the other half. */
        tc_measure_opts_t screen = *mo;
        screen.budget_ms = mo->budget_ms / 2 / (double)(runnable ? runnable : 1);
        double best = INFINITY;
        for (size_t i = 0; i < out->n_algos; i++) {
            tc_algo_result_t *a = &out->algos[i];
            if (!s_runnable(a))
                continue;
            tc_samples_t s;
            if (s_measure(dev, plan, a, i, &screen, &s, NULL) < 0)
                continue;
            if (s.stats.median < best) {
                best = s.stats.median;
                out->chosen = (int)i;
            }
            tc_samples_free(&s);
        }
        if (out->chosen >= 0) {
            tc_measure_opts_t final = *mo;
            final.budget_ms = mo->budget_ms / 2;
            tc_algo_result_t *a = &out->algos[out->chosen];
            if (s_measure(dev, plan, a, (size_t)out->chosen, &final, &out->samples,
                          &out->telemetry) < 0)
                out->chosen = -1;
        }
    }
    if (out->chosen < 0)
        TC_TRY(s_none_ran(out));
    tc_conv_plan_destroy(&plan);
    return 0;
err:
    tc_conv_plan_destroy(&plan);
    tc_conv_outcome_free(out);
    return rc;
}

void tc_conv_outcome_free(tc_conv_outcome_t *o)
{
    if (!o)
        return;
    free(o->algos);
    tc_samples_free(&o->samples);
    o->algos = NULL;
    o->n_algos = 0;
    o->chosen = -1;
}

void tc_conv_result_proto_free(Traincast__V1__ConvResult **r_p)
{
    if (!r_p || !*r_p)
        return;
    Traincast__V1__ConvResult *r = *r_p;
    free(r->config);
    free(r->matmul);
    free(r->algo);
    free(r->route);
    for (size_t i = 0; i < r->n_candidates; i++) {
        if (!r->candidates[i])
            continue;
        free(r->candidates[i]->algo);
        free(r->candidates[i]->message);
        free(r->candidates[i]);
    }
    free(r->candidates);
    free(r->samples_ms);
    free(r->sample_offsets_us);
    free(r->load);
    free(r);
    *r_p = NULL;
}

int tc_conv_outcome_to_proto(const tc_conv_outcome_t *o, Traincast__V1__ConvResult **out)
{
    *out = NULL;
    if (o->chosen < 0 || (size_t)o->chosen >= o->n_algos || o->samples.n == 0)
        return tc_fail(TC_EINVAL, "conv outcome has no measured algorithm");
    Traincast__V1__ConvResult *r = calloc(1, sizeof *r);
    if (!r)
        return tc_fail(TC_ENOMEM, "out of memory building a conv result");
    traincast__v1__conv_result__init(r);
    const tc_algo_result_t *ch = &o->algos[o->chosen];
    const tc_stats_t *st = &o->samples.stats;
    if (tc_samples_to_result(&o->samples, o->spec_quiet_pct, r) < 0)
        goto nomem;
    r->config = calloc(1, sizeof *r->config);
    r->algo = strdup(ch->info.name);
    r->route = strdup(o->route);
    r->sm_clock_mhz = o->telemetry.sm_clock_mhz;
    r->power_w = o->telemetry.power_w;
    r->candidates = calloc(o->n_algos ? o->n_algos : 1, sizeof *r->candidates);
    if (!r->config || !r->algo || !r->route || !r->candidates)
        goto nomem;
    traincast__v1__conv_config__init(r->config);
    tc_conv_config_to_proto(&o->spec.config, r->config);
    r->direction = o->spec.direction;
    r->policy = o->spec.policy;
    r->algo_id = ch->info.id;
    r->workspace_bytes = ch->info.workspace_bytes;
    for (size_t i = 0; i < o->n_algos; i++) {
        const tc_algo_result_t *a = &o->algos[i];
        Traincast__V1__AlgoTiming *t = calloc(1, sizeof *t);
        if (!t)
            goto nomem;
        r->candidates[r->n_candidates++] = t;
        traincast__v1__algo_timing__init(t);
        t->algo = strdup(a->info.name);
        t->message = strdup(a->info.message);
        if (!t->algo || !t->message)
            goto nomem;
        t->algo_id = a->info.id;
        t->workspace_bytes = a->info.workspace_bytes;
        t->status = a->info.status;
        t->time_ms = (int)i == o->chosen ? st->median : a->timed ? a->stats.median : 0;
    }
    *out = r;
    return 0;
nomem:
    tc_conv_result_proto_free(&r);
    return tc_fail(TC_ENOMEM, "out of memory building a conv result");
}
