/* Shared by the fit and validate commands: options and group analysis. */
#include "fit_run.h"

#include "tc_error.h"
#include "tc_log.h"
#include "tc_progress.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int s_parse_mask(const char *text, const char *what, int count,
                        int (*parse)(const char *, int *), uint32_t *mask)
{
    char **v = NULL;
    size_t n = 0;
    int rc = tc_parse_name_list(text, what, &v, &n);
    *mask = 0;
    for (size_t i = 0; rc == 0 && i < n; i++) {
        int k = -1;
        rc = parse(v[i], &k);
        if (rc < 0)
            rc = tc_err_context(TC_EUSAGE, "%s", what);
        else if (k >= 0 && k < count)
            *mask |= 1u << k;
    }
    tc_free_strv(v, n);
    return rc;
}

static int s_form(const char *s, int *out)
{
    tc_fit_form_t f;
    int rc = tc_fit_form_parse(s, &f);
    *out = (int)f;
    return rc;
}

static int s_weighting(const char *s, int *out)
{
    tc_fit_weighting_t w;
    int rc = tc_fit_weighting_parse(s, &w);
    *out = (int)w;
    return rc;
}

void tc_fit_run_plan_free(tc_fit_run_plan_t *plan)
{
    tc_free_strv(plan->devices, plan->n_devices);
    tc_free_strv(plan->features, plan->p);
    tc_free_strv(plan->models, plan->n_models);
    memset(plan, 0, sizeof *plan);
}

/* The simple form: a fixed cost per iteration and one per element the
 * non-conv layers move, the aggregate the method's authors regress on. */
static const char *const s_simple[] = {"total.one", "memory.elems"};

int tc_fit_run_plan_init(const tc_fit_run_cli_t *cli, tc_fit_run_plan_t *plan)
{
    memset(plan, 0, sizeof *plan);
    int rc = 0;
    plan->forms = (1u << TC_FIT_FORM_COUNT) - 1;
    plan->weightings = (1u << TC_FIT_WEIGHTING_COUNT) - 1;
    plan->select = true;
    plan->min_gain = cli->min_gain;
    plan->include_disturbed = cli->include_disturbed;
    plan->regress_matmuls = cli->regress_matmuls;
    if (!(plan->min_gain >= 0 && plan->min_gain < 1))
        return tc_fail(TC_EUSAGE, "--min-gain must be at least 0 and below 1 (got %g)",
                       plan->min_gain);
    if (cli->stat && tc_fit_stat_parse(cli->stat, &plan->stat) < 0)
        return tc_err_context(TC_EUSAGE, "--stat");
    if (cli->devices)
        TC_TRY(tc_parse_name_list(cli->devices, "--device", &plan->devices, &plan->n_devices));
    if (cli->forms)
        TC_TRY(s_parse_mask(cli->forms, "--forms", TC_FIT_FORM_COUNT, s_form, &plan->forms));
    if (cli->weightings)
        TC_TRY(s_parse_mask(cli->weightings, "--weightings", TC_FIT_WEIGHTING_COUNT, s_weighting,
                            &plan->weightings));
    if (cli->features && cli->candidates)
        TC_FAIL_GOTO(TC_EUSAGE, "give --features (fixed) or --candidates (selected from), not "
                                "both");
    if (cli->features || cli->candidates) {
        const char *list = cli->features ? cli->features : cli->candidates;
        const char *what = cli->features ? "--features" : "--candidates";
        TC_TRY(tc_parse_name_list(list, what, &plan->features, &plan->p));
        plan->select = !cli->features;
    } else {
        const char *const *names;
        size_t n = tc_fit_default_candidates(&names);
        plan->features = calloc(n, sizeof *plan->features);
        if (!plan->features)
            TC_FAIL_GOTO(TC_ENOMEM, "out of memory");
        for (size_t i = 0; i < n; i++) {
            if (!(plan->features[i] = strdup(names[i])))
                TC_FAIL_GOTO(TC_ENOMEM, "out of memory");
            plan->p++;
        }
    }
    plan->n_candidates = plan->p;
    /* The simple form's features (tc_fit_select falls back on it), as
     * columns beyond the candidates when they are not among them. */
    for (size_t k = 0; plan->select && k < sizeof s_simple / sizeof s_simple[0]; k++) {
        bool have = false;
        for (size_t j = 0; j < plan->p && !have; j++)
            have = !strcmp(plan->features[j], s_simple[k]);
        if (have)
            continue;
        char **v = realloc(plan->features, (plan->p + 1) * sizeof *v);
        if (!v)
            TC_FAIL_GOTO(TC_ENOMEM, "out of memory");
        plan->features = v;
        if (!(plan->features[plan->p] = strdup(s_simple[k])))
            TC_FAIL_GOTO(TC_ENOMEM, "out of memory");
        plan->p++;
    }
    if (plan->p > TC_FIT_MAX_FEATURES)
        TC_FAIL_GOTO(TC_EUSAGE, "%zu features given; at most %zu", plan->n_candidates,
                     TC_FIT_MAX_FEATURES - (plan->p - plan->n_candidates));
    /* Reject unknown feature names now, not after reading the data. */
    tc_features_t zero = {0};
    for (size_t j = 0; j < plan->p; j++) {
        double v;
        TC_TRY(tc_fit_feature_at(&zero, 0, plan->features[j], &v));
    }
    return 0;
err:
    tc_fit_run_plan_free(plan);
    return rc;
}

void tc_fit_run_analysis_free(tc_fit_run_analysis_t *a)
{
    tc_fit_data_free(&a->data);
    free(a->fitted);
    free(a->held_out);
    free(a->held_lo);
    free(a->held_hi);
    free(a->loco);
    free(a->fold_specs);
    memset(a, 0, sizeof *a);
}

void tc_fit_run_spec_describe(const tc_fit_data_t *d, const tc_fit_spec_t *spec, char *buf,
                          size_t size)
{
    size_t len = (size_t)snprintf(buf, size, "%s, %s weights:", tc_fit_form_name(spec->form),
                                  spec->weighting == TC_FIT_W_RELATIVE ? "relative" : "no");
    bool any = false;
    for (size_t j = 0; j < d->p && len < size; j++) {
        if (spec->mask & (1u << j)) {
            len += (size_t)snprintf(buf + len, size - len, "%s%s", any ? " + " : " ", d->names[j]);
            any = true;
        }
    }
    if (!any && len < size)
        snprintf(buf + len, size - len, " no features (conv sum only)");
}

/* PyTorch's defaults of the flags the harness records (agent/harness/
 * gpu_env.py, conv_settings). */
static const char *const s_setting_defaults[] = {
    "torch.are_deterministic_algorithms_enabled=False",
    "torch.backends.cuda.matmul.allow_tf32=False",
    "torch.backends.cudnn.allow_tf32=True",
    "torch.backends.cudnn.benchmark=False",
    "torch.backends.cudnn.benchmark_limit=10",
    "torch.backends.cudnn.deterministic=False",
    "torch.backends.cudnn.enabled=True",
    "torch.backends.mkldnn.enabled=True",
    "torch.get_float32_matmul_precision=highest",
};

void tc_fit_run_settings_shown(const char *key, char *buf, size_t size)
{
    size_t len = 0;
    if (size)
        buf[0] = '\0';
    for (const char *p = key; *p && len < size;) {
        const char *end = strstr(p, "; ");
        size_t n = end ? (size_t)(end - p) : strlen(p);
        bool shown = n > 0 && !(n > 4 && !strncmp(p, "env.", 4) && p[n - 1] == '=' &&
                                memchr(p, '=', n) == p + n - 1);
        for (size_t k = 0; shown && k < sizeof s_setting_defaults / sizeof *s_setting_defaults;
             k++)
            shown = !(strlen(s_setting_defaults[k]) == n && !strncmp(s_setting_defaults[k], p, n));
        if (shown)
            len += (size_t)snprintf(buf + len, size - len, "%s%.*s", len ? "; " : "", (int)n, p);
        p += n + (end ? 2 : 0);
    }
}

static bool s_listed(const tc_fit_run_plan_t *plan, const char *cnn, const char *model_id,
                     bool *seen)
{
    bool in = false;
    for (size_t k = 0; k < plan->n_models; k++) {
        if (!strcmp(plan->models[k], cnn) || !strcmp(plan->models[k], model_id)) {
            seen[k] = in = true;
        }
    }
    return in;
}

/* Keep the points (and excluded points) of the listed CNNs in g. */
static void s_keep_listed(const tc_fit_run_plan_t *plan, tc_fit_group_t *g, bool *seen)
{
    size_t kept = 0;
    for (size_t j = 0; j < g->n_points; j++) {
        tc_fit_point_t *pt = &g->points[j];
        if (s_listed(plan, pt->cnn, pt->model_id, seen)) {
            g->points[kept++] = *pt;
        } else {
            free(pt->model_id);
            free(pt->cnn);
        }
    }
    g->n_points = kept;
    kept = 0;
    for (size_t j = 0; j < g->n_excluded; j++) {
        tc_fit_excluded_t *ex = &g->excluded[j];
        if (s_listed(plan, ex->cnn, ex->model_id, seen)) {
            g->excluded[kept++] = *ex;
        } else {
            free(ex->model_id);
            free(ex->cnn);
        }
    }
    g->n_excluded = kept;
}

int tc_fit_run_plan_groups(const tc_fit_run_plan_t *plan, tc_fit_group_t *groups, size_t *n)
{
    for (size_t i = 0; plan->regress_matmuls && i < *n; i++) {
        tc_fit_group_t *g = &groups[i];
        if (!g->matmuls)
            continue;
        g->matmuls = false;
        for (size_t j = 0; j < g->n_points; j++)
            g->points[j].matmul_ms = 0;
        snprintf(g->matmuls_why, sizeof g->matmuls_why,
                 "--regress-matmuls (every one is benchmarked)");
    }
    if (!plan->n_models)
        return 0;
    bool *seen = calloc(plan->n_models, sizeof *seen);
    if (!seen)
        return tc_fail(TC_ENOMEM, "out of memory");
    size_t kept = 0;
    for (size_t i = 0; i < *n; i++) {
        s_keep_listed(plan, &groups[i], seen);
        if (groups[i].n_points + groups[i].n_excluded)
            groups[kept++] = groups[i];
        else
            tc_fit_group_clear(&groups[i]);
    }
    for (size_t i = kept; i < *n; i++)
        memset(&groups[i], 0, sizeof groups[i]);
    *n = kept;
    int rc = 0;
    for (size_t k = 0; rc == 0 && k < plan->n_models; k++) {
        if (!seen[k])
            rc = tc_fail(TC_EUSAGE, "--models: no traces of '%s' on the devices read (a CNN's "
                                    "name as validate prints it, e.g. resnet18, or its model "
                                    "id; validate without --models lists every traced CNN)",
                         plan->models[k]);
    }
    free(seen);
    return rc;
}

void tc_fit_run_benchmarked(const tc_fit_group_t *g, char *buf, size_t size)
{
    if (g->matmuls)
        snprintf(buf, size, "convs and matmuls (their benchmark sums subtracted from the "
                            "traces)");
    else if (*g->matmuls_why)
        snprintf(buf, size, "convs; matmuls regressed with the rest: %s", g->matmuls_why);
    else
        buf[0] = '\0';
}

void tc_fit_run_group_label(const tc_fit_group_t *g, char *buf, size_t size)
{
    snprintf(buf, size, "%s (%s, %s, %s%s%s%s%s)", g->device, g->framework,
             *g->policy ? g->policy : "no policy", g->dtype, *g->amp ? ", amp " : "", g->amp,
             *g->library_version ? ", cuDNN " : "", g->library_version);
}

static void s_progress(size_t done, size_t total, void *ctx)
{
    tc_progress_update(ctx, done, NULL);
    (void)total;
}

static int s_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* How many held-out truths fall inside their interval, and how wide the
 * intervals are. */
static void s_coverage(const tc_fit_data_t *d, tc_fit_run_analysis_t *a)
{
    double *w = calloc(d->n + 1, sizeof *w);
    size_t m = 0;
    a->covered = a->with_interval = 0;
    for (size_t i = 0; i < d->n; i++) {
        if (!isfinite(a->held_lo[i]) || !isfinite(a->held_hi[i]) || !(a->held_out[i] > 0))
            continue;
        a->with_interval++;
        a->covered += d->measured[i] >= a->held_lo[i] && d->measured[i] <= a->held_hi[i];
        if (w)
            w[m++] = (a->held_hi[i] - a->held_lo[i]) / a->held_out[i];
    }
    if (w && m) {
        qsort(w, m, sizeof *w, s_cmp_double);
        a->width_median = m % 2 ? w[m / 2] : 0.5 * (w[m / 2 - 1] + w[m / 2]);
    }
    free(w);
}

/* A regression that predicts held-out CNNs worse than the conv sum alone
 * does (nested MAPE above the conv sum's) is not worth having: the conv sum
 * alone takes its place, and choice.why says so. The conv sum has no
 * parameters, so its error on every point is a held-out error already; its
 * interval comes from its ratios measured / conv sum like any other. */
static void s_prefer_conv_sum(const tc_fit_data_t *d, tc_fit_run_analysis_t *a)
{
    if (!a->spec.mask || !isfinite(a->cv.mape) || !isfinite(a->conv_only.mape) ||
        a->cv.mape <= a->conv_only.mape)
        return;
    const tc_fit_spec_t conv_sum = {.form = TC_FIT_NNLS, .weighting = TC_FIT_W_RELATIVE};
    tc_fit_solution_t sol;
    /* No features to solve for: only memory can fail, and then the
     * regression stays, said aloud. */
    if (tc_fit_spec_solve(d, &conv_sum, NULL, &sol) < 0) {
        tc_log_warn("the regression validated worse (MAPE %.1f %%) than the conv sum alone "
                    "(%.1f %%), which could not be fitted instead: %s",
                    a->cv.mape, a->conv_only.mape, tc_errmsg());
        return;
    }
    char model[1024];
    tc_fit_run_spec_describe(d, &a->spec, model, sizeof model);
    a->conv_sum_chosen = true;
    a->regression_spec = a->spec;
    a->regression_cv = a->cv;
    a->spec = a->choice.spec = conv_sum;
    a->sol = sol;
    a->choice.mape = a->selection_mape = a->conv_only.mape;
    a->cv = a->conv_only;
    double lo = NAN, hi = NAN;
    tc_fit_interval(d->measured, d->conv, NULL, d->n, TC_FIT_ALPHA, &lo, &hi);
    for (size_t i = 0; i < d->n; i++) {
        a->fitted[i] = a->held_out[i] = d->conv[i];
        a->held_lo[i] = d->conv[i] * lo;
        a->held_hi[i] = d->conv[i] * hi;
    }
    s_coverage(d, a);
    snprintf(a->choice.why, sizeof a->choice.why,
             "the conv sum alone: the regression chosen (%.200s) validated worse on held-out "
             "%s (MAPE %.1f %%) than the conv sum alone (%.1f %%)",
             model, tc_fit_holdout_unit(d->grouped_by, true), a->regression_cv.mape,
             a->conv_only.mape);
}

int tc_fit_run_analyze(const tc_fit_group_t *g, const tc_fit_run_plan_t *plan,
                       tc_fit_run_nested_t nested, tc_fit_run_analysis_t *out)
{
    memset(out, 0, sizeof *out);
    char label[3 * TC_FIT_LABEL_LEN];
    tc_fit_run_group_label(g, label, sizeof label);
    int rc = tc_fit_data_build(g, (const char *const *)plan->features, plan->p, &out->data);
    if (rc == 0)
        rc = tc_fit_data_regroup(&out->data, g, plan->holdout);
    if (rc < 0) {
        tc_fit_data_free(&out->data);
        return tc_err_context(rc, "%s", label);
    }
    tc_fit_data_t *d = &out->data;
    size_t n = d->n;
    if (n == 0 && g->disturbed_traces) {
        rc = tc_fail(TC_EINVAL, "%s: every trace was taken while other processes used the "
                                "machine (%zu disturbed): trace again on a quiet machine, or "
                                "fit with --include-disturbed",
                     label, g->disturbed_traces);
        goto err;
    }
    out->fitted = calloc(n + 1, sizeof *out->fitted);
    out->held_out = calloc(n + 1, sizeof *out->held_out);
    out->held_lo = calloc(n + 1, sizeof *out->held_lo);
    out->held_hi = calloc(n + 1, sizeof *out->held_hi);
    out->loco = calloc(n + 1, sizeof *out->loco);
    out->fold_specs = calloc(d->n_cnns + 1, sizeof *out->fold_specs);
    if (!out->fitted || !out->held_out || !out->held_lo || !out->held_hi || !out->loco ||
        !out->fold_specs)
        TC_FAIL_GOTO(TC_ENOMEM, "out of memory");
    for (size_t i = 0; i < n; i++)
        out->held_out[i] = out->held_lo[i] = out->held_hi[i] = NAN;
    out->width_median = NAN;

    tc_fit_select_opts_default(d, &out->opts);
    out->opts.forms = plan->forms;
    out->opts.weightings = plan->weightings;
    out->opts.select = plan->select;
    out->opts.min_gain = plan->min_gain;
    out->opts.candidates = (1u << plan->n_candidates) - 1;
    for (size_t j = 0; j < plan->p; j++)
        for (size_t k = 0; plan->select && k < sizeof s_simple / sizeof s_simple[0]; k++)
            if (!strcmp(plan->features[j], s_simple[k]))
                out->opts.simple |= 1u << j;
    rc = tc_fit_select(d, NULL, &out->opts, &out->choice);
    if (rc < 0) {
        tc_err_context(rc, "%s", label);
        goto err;
    }
    out->spec = out->choice.spec;
    out->selection_mape = out->choice.mape;
    rc = tc_fit_spec_solve(d, &out->spec, NULL, &out->sol);
    if (rc < 0) {
        tc_err_context(rc, "%s: fitting every point", label);
        goto err;
    }
    for (size_t i = 0; i < n; i++)
        out->fitted[i] = tc_fit_spec_predict(d, &out->spec, &out->sol, i);
    tc_fit_ape(d->measured, d->conv, NULL, n, &out->conv_only);
    if (nested == TC_FIT_RUN_NESTED_IF_POSSIBLE && d->n_cnns < 4) {
        tc_log_warn("%s: only %zu CNNs; leave-one-out of the model choice needs 4, so no "
                    "cv error is stored",
                    label, d->n_cnns);
        nested = TC_FIT_RUN_NESTED_OFF;
    }
    if (nested != TC_FIT_RUN_NESTED_OFF) {
        char what[3 * TC_FIT_LABEL_LEN + 32];
        snprintf(what, sizeof what, "leave-one-%s-out %s",
                 tc_fit_holdout_unit(d->grouped_by, false), g->device);
        tc_progress_t *progress = tc_progress_new(what, d->n_cnns);
        tc_fit_held_out_t held = {out->held_out, out->held_lo, out->held_hi};
        rc = tc_fit_nested_loco(d, &out->opts, &held, out->fold_specs, NULL,
                                progress ? s_progress : NULL, progress);
        tc_progress_destroy(&progress);
        if (rc < 0) {
            tc_err_context(rc, "%s", label);
            goto err;
        }
        out->nested = true;
        tc_fit_ape(d->measured, out->held_out, NULL, n, &out->cv);
        s_coverage(d, out);
    } else {
        out->cv.mape = out->cv.median = out->cv.max = NAN;
    }
    if (out->nested)
        s_prefer_conv_sum(d, out);
    /* The interval predict will use: the errors of the whole procedure on
     * CNNs it had not seen (the nested run); without that run, the chosen
     * spec's own leave-one-out over every CNN, which reads narrower
     * (selection chose the spec for making those errors small). */
    double ilo = NAN, ihi = NAN;
    const double *held = out->held_out;
    if (!out->nested) {
        rc = tc_fit_loco(d, &out->spec, NULL, out->loco, NULL, NULL);
        held = out->loco;
    }
    if (rc == 0)
        rc = tc_fit_interval(d->measured, held, NULL, n, TC_FIT_ALPHA, &ilo, &ihi);
    if (rc < 0) {
        tc_err_context(rc, "%s: the prediction interval", label);
        goto err;
    }

    tc_fit_t *fit = &out->fit;
    snprintf(fit->device, sizeof fit->device, "%s", g->device);
    snprintf(fit->framework, sizeof fit->framework, "%s", g->framework);
    snprintf(fit->policy, sizeof fit->policy, "%s", g->policy);
    snprintf(fit->dtype, sizeof fit->dtype, "%s", g->dtype);
    snprintf(fit->amp, sizeof fit->amp, "%s", g->amp);
    snprintf(fit->library_version, sizeof fit->library_version, "%s", g->library_version);
    snprintf(fit->settings, sizeof fit->settings, "%s", g->settings);
    snprintf(fit->conv_policy, sizeof fit->conv_policy, "%s", g->conv_policy);
    fit->matmuls = g->matmuls;
    fit->stat = g->stat;
    tc_fit_from_solution(fit, d, &out->spec, &out->sol);
    fit->interval_lo = ilo;
    fit->interval_hi = ihi;
    fit->n_points = n;
    fit->n_cnns = d->n_cnns;
    fit->batch_min = n ? g->points[0].batch : 0;
    for (size_t i = 0; i < n; i++) {
        fit->batch_min = g->points[i].batch < fit->batch_min ? g->points[i].batch : fit->batch_min;
        fit->batch_max = g->points[i].batch > fit->batch_max ? g->points[i].batch : fit->batch_max;
    }
    for (size_t i = 0; i < g->n_excluded; i++) {
        if (g->excluded[i].oom)
            fit->excluded_oom++;
        else
            fit->excluded_failed++;
    }
    fit->cv_mape = out->cv.mape;
    fit->cv_median_ape = out->cv.median;
    fit->cv_max_ape = out->cv.max;
    fit->selection_mape = out->selection_mape;
    fit->conv_only_mape = out->conv_only.mape;
    return 0;
err:
    tc_fit_run_analysis_free(out);
    return rc;
}
