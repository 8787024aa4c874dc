/* aggregator validate: leave-one-CNN-out accuracy per device and per CNN,
 * next to the run-to-run variability of the same traces. */
#include "cli_db.h"
#include "commands.h"
#include "fit_run.h"
#include "store_fit.h"

#include "tc_buf.h"
#include "tc_cli.h"
#include "tc_error.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef enum { FMT_TABLE, FMT_CSV, FMT_JSON } format_t;

/* One line of the report: a whole device group (cnn NULL) or one CNN. */
typedef struct {
    const char *cnn;
    size_t points, oom, failed;
    tc_fit_ape_t ape;
    tc_fit_ape_t conv_only;
    double spread_within;  /* mean over points, percent; NaN if none */
    double spread_between; /* mean over points with repeated traces, percent; NaN if none */
    /* The noise floor: mean over points with repeated traces of their
     * truth's own error (tc_fit_point_t.noise_floor), percent; NaN if none. */
    double floor;
    /* The standard error of the MAPE across the held-out groups (the
     * device line; NaN on a group's line and with fewer than two). */
    double mape_se;
    char model[512];       /* the spec its fold chose ("" for the device line) */
} row_t;

typedef enum { S_WITHIN, S_BETWEEN, S_FLOOR } s_spread_t;

static double s_mean_pct(const tc_fit_group_t *g, const bool *rows, s_spread_t which)
{
    double sum = 0;
    size_t n = 0;
    for (size_t i = 0; i < g->n_points; i++) {
        const tc_fit_point_t *pt = &g->points[i];
        double v = which == S_WITHIN    ? pt->spread_within
                   : which == S_BETWEEN ? pt->spread_between
                                        : pt->noise_floor;
        if ((!rows || rows[i]) && isfinite(v)) {
            sum += v;
            n++;
        }
    }
    return n ? 100.0 * sum / (double)n : NAN;
}

static void s_fill_row(row_t *r, const tc_fit_group_t *g, const tc_fit_run_analysis_t *a,
                       const char *cnn, const bool *rows)
{
    memset(r, 0, sizeof *r);
    r->cnn = cnn;
    tc_fit_ape(a->data.measured, a->held_out, rows, a->data.n, &r->ape);
    tc_fit_ape(a->data.measured, a->data.conv, rows, a->data.n, &r->conv_only);
    r->points = r->ape.n;
    r->spread_within = s_mean_pct(g, rows, S_WITHIN);
    r->spread_between = s_mean_pct(g, rows, S_BETWEEN);
    r->floor = s_mean_pct(g, rows, S_FLOOR);
    r->mape_se = NAN;
    for (size_t i = 0; i < g->n_excluded; i++) {
        if (cnn && strcmp(g->excluded[i].cnn, cnn) != 0)
            continue;
        if (g->excluded[i].oom)
            r->oom++;
        else
            r->failed++;
    }
}

/* The device line first, then every CNN (those with only excluded points
 * too). Returns the count; *out is malloc'ed. */
static int s_rows(const tc_fit_group_t *g, const tc_fit_run_analysis_t *a, row_t **out,
                  size_t *n_out)
{
    const tc_fit_data_t *d = &a->data;
    row_t *rows = calloc(1 + d->n_cnns + g->n_excluded, sizeof *rows);
    bool *mask = calloc(d->n + 1, sizeof *mask);
    if (!rows || !mask) {
        free(rows);
        free(mask);
        return tc_fail(TC_ENOMEM, "out of memory");
    }
    size_t n = 0;
    s_fill_row(&rows[n++], g, a, NULL, NULL);
    for (size_t c = 0; c < d->n_cnns; c++) {
        for (size_t i = 0; i < d->n; i++)
            mask[i] = d->cnn[i] == c;
        row_t *r = &rows[n++];
        s_fill_row(r, g, a, d->cnn_names[c], mask);
        tc_fit_run_spec_describe(d, &a->fold_specs[c], r->model, sizeof r->model);
    }
    /* The device line's MAPE is a mean over points; its standard error is
     * taken across the held-out groups (points of one group are not
     * independent): the spread of the groups' MAPEs over sqrt(groups). */
    size_t groups = 0;
    double mean = 0, m2 = 0;
    for (size_t i = 1; i < n; i++) {
        double v = rows[i].ape.mape;
        if (!isfinite(v))
            continue;
        groups++;
        double delta = v - mean;
        mean += delta / (double)groups;
        m2 += delta * (v - mean);
    }
    if (groups >= 2)
        rows[0].mape_se = sqrt(m2 / (double)(groups - 1)) / sqrt((double)groups);
    for (size_t e = 0; e < g->n_excluded; e++) {
        bool seen = false;
        for (size_t k = 1; k < n && !seen; k++)
            seen = !strcmp(rows[k].cnn, g->excluded[e].cnn);
        if (!seen) {
            memset(mask, 0, d->n * sizeof *mask);
            s_fill_row(&rows[n++], g, a, g->excluded[e].cnn, mask);
        }
    }
    free(mask);
    *out = rows;
    *n_out = n;
    return 0;
}

static void s_pct(char *buf, size_t size, double v)
{
    if (isfinite(v))
        snprintf(buf, size, "%.1f%%", v);
    else
        snprintf(buf, size, "-");
}

static void s_print_table(const tc_fit_group_t *g, const tc_fit_run_analysis_t *a,
                          const row_t *rows, size_t n, tc_fit_holdout_t holdout)
{
    char label[3 * TC_FIT_LABEL_LEN], model[1024];
    tc_fit_run_group_label(g, label, sizeof label);
    tc_fit_run_spec_describe(&a->data, &a->spec, model, sizeof model);
    printf("%s\n", label);
    char settings[TC_FIT_SETTINGS_LEN];
    tc_fit_run_settings_shown(g->settings, settings, sizeof settings);
    if (*settings)
        printf("  settings: %s\n", settings);
    static const char *const what[] = {"CNN", "family", "batch size"};
    static const char *const whats[] = {"CNNs", "families", "batch sizes"};
    printf("  %zu %s, %zu points; excluded %zu (out of memory %zu, failed %zu); statistic %s\n",
           a->data.n_cnns, whats[holdout], a->data.n, rows[0].oom + rows[0].failed, rows[0].oom,
           rows[0].failed, tc_fit_stat_name(a->fit.stat));
    if (g->disturbed_traces || g->disturbed_benchmarks)
        printf("  taken while the machine was busy (disturbed): %zu traces (%s), %zu conv "
               "benchmarks (used only where a measurement has no quiet one)\n",
               g->disturbed_traces, g->include_disturbed ? "kept: --include-disturbed" : "left out",
               g->disturbed_benchmarks);
    char benchmarked[640];
    tc_fit_run_benchmarked(g, benchmarked, sizeof benchmarked);
    if (*benchmarked)
        printf("  benchmarked: %s\n", benchmarked);
    printf("  model chosen on every %s: %s\n", what[holdout], model);
    printf("  why: %s\n", a->choice.why);
    printf("  errors are leave-one-%s-out: each %s's model was chosen and fitted without it\n",
           holdout == TC_FIT_HOLD_BATCH ? "batch-size" : what[holdout], what[holdout]);
    if (a->with_interval)
        printf("  95%% intervals: %zu of %zu held-out truths inside (%.1f%%), median width "
               "%.1f%% of the prediction\n\n",
               a->covered, a->with_interval, 100.0 * (double)a->covered / (double)a->with_interval,
               100.0 * a->width_median);
    else
        printf("  95%% intervals: too few points to calibrate them (%zu needed)\n\n",
               tc_fit_interval_min_points(TC_FIT_ALPHA));
    printf("  %-24s %6s %7s %7s %7s %9s %8s %8s %8s %8s\n", what[holdout], "points", "MAPE",
           "median", "max", "conv-only", "spread", "between", "floor", "excluded");
    for (size_t k = 0; k < n; k++) {
        const row_t *r = &rows[k];
        char m[16], md[16], mx[16], co[16], sw[16], sb[16], fl[16];
        s_pct(m, sizeof m, r->ape.mape);
        s_pct(md, sizeof md, r->ape.median);
        s_pct(mx, sizeof mx, r->ape.max);
        s_pct(co, sizeof co, r->conv_only.mape);
        s_pct(sw, sizeof sw, r->spread_within);
        s_pct(sb, sizeof sb, r->spread_between);
        s_pct(fl, sizeof fl, r->floor);
        printf("  %-24s %6zu %7s %7s %7s %9s %8s %8s %8s %8zu\n", r->cnn ? r->cnn : "all",
               r->points, m, md, mx, co, sw, sb, fl, r->oom + r->failed);
    }
    if (isfinite(rows[0].mape_se))
        printf("\n  MAPE %.1f%% with a standard error of %.1f points over %zu %s",
               rows[0].ape.mape, rows[0].mape_se, a->data.n_cnns, whats[holdout]);
    else
        printf("\n  MAPE %s (no standard error with fewer than two %s)",
               isfinite(rows[0].ape.mape) ? "as above" : "-", whats[holdout]);
    if (isfinite(rows[0].floor))
        printf("; noise floor %.1f%%: a model that predicted every true time exactly would still "
               "be this far from these truths\n",
               rows[0].floor);
    else
        printf("; no noise floor: no point was traced twice\n");
    printf("  spread: mean within-trace spread (max - min) / median of repeat medians;\n"
           "  between: mean (max - min) / median across repeated traces of a point;\n"
           "  floor: the truths' own error, |a - b| / (2 x truth) for the statistic (--stat) a\n"
           "  and b of each point's odd- and even-numbered traces in the order they were taken.\n\n");
}

static void s_csv_field(const char *v, bool last)
{
    bool quote = strpbrk(v, ",\"\n") != NULL;
    if (quote) {
        putchar('"');
        for (const char *c = v; *c; c++) {
            if (*c == '"')
                putchar('"');
            putchar(*c);
        }
        putchar('"');
    } else {
        fputs(v, stdout);
    }
    putchar(last ? '\n' : ',');
}

static void s_csv_num(double v, bool last)
{
    char buf[40] = "";
    if (isfinite(v))
        snprintf(buf, sizeof buf, "%.4f", v);
    s_csv_field(buf, last);
}

static void s_print_csv(const tc_fit_group_t *g, const row_t *rows, size_t n)
{
    for (size_t k = 0; k < n; k++) {
        const row_t *r = &rows[k];
        char buf[32];
        s_csv_field(g->device, false);
        s_csv_field(g->framework, false);
        s_csv_field(g->policy, false);
        s_csv_field(g->dtype, false);
        s_csv_field(r->cnn ? "cnn" : "device", false);
        s_csv_field(r->cnn ? r->cnn : "", false);
        snprintf(buf, sizeof buf, "%zu", r->points);
        s_csv_field(buf, false);
        snprintf(buf, sizeof buf, "%zu", r->oom);
        s_csv_field(buf, false);
        snprintf(buf, sizeof buf, "%zu", r->failed);
        s_csv_field(buf, false);
        s_csv_num(r->ape.mape, false);
        s_csv_num(r->ape.median, false);
        s_csv_num(r->ape.max, false);
        s_csv_num(r->conv_only.mape, false);
        s_csv_num(r->spread_within, false);
        s_csv_num(r->spread_between, false);
        s_csv_field(r->model, false);
        s_csv_num(r->floor, false);
        s_csv_num(r->mape_se, true);
    }
}

/* A row's figures; `count` false leaves out the count of points (a device's
 * object carries its points themselves under that name). */
static void s_json_row(tc_buf_t *b, const row_t *r, bool count)
{
    if (count)
        tc_buf_printf(b, "\"points\": %zu, ", r->points);
    tc_buf_printf(b, "\"excluded_oom\": %zu, \"excluded_failed\": %zu, ", r->oom, r->failed);
    tc_buf_puts(b, "\"mape\": ");
    tc_buf_json_num(b, r->ape.mape);
    tc_buf_puts(b, ", \"median_ape\": ");
    tc_buf_json_num(b, r->ape.median);
    tc_buf_puts(b, ", \"max_ape\": ");
    tc_buf_json_num(b, r->ape.max);
    tc_buf_puts(b, ", \"conv_only_mape\": ");
    tc_buf_json_num(b, r->conv_only.mape);
    tc_buf_puts(b, ", \"spread_within\": ");
    tc_buf_json_num(b, r->spread_within);
    tc_buf_puts(b, ", \"spread_between\": ");
    tc_buf_json_num(b, r->spread_between);
    tc_buf_puts(b, ", \"noise_floor\": ");
    tc_buf_json_num(b, r->floor);
    tc_buf_puts(b, ", \"mape_se\": ");
    tc_buf_json_num(b, r->mape_se);
}

static void s_json_points(tc_buf_t *b, const tc_fit_group_t *g, const tc_fit_run_analysis_t *a)
{
    const tc_fit_data_t *d = &a->data;
    tc_buf_puts(b, ", \"points\": [");
    for (size_t i = 0; i < d->n; i++) {
        const tc_fit_point_t *pt = &g->points[i];
        char family[TC_FIT_LABEL_LEN];
        tc_buf_puts(b, i ? ", {\"model_id\": " : "{\"model_id\": ");
        tc_buf_json_str(b, pt->model_id);
        tc_buf_puts(b, ", \"cnn\": ");
        tc_buf_json_str(b, pt->cnn);
        tc_buf_puts(b, ", \"family\": ");
        tc_buf_json_str(b, tc_fit_family(pt->cnn, family, sizeof family));
        tc_buf_puts(b, ", \"held_out_group\": ");
        tc_buf_json_str(b, d->cnn_names[d->cnn[i]]);
        tc_buf_printf(b, ", \"batch\": %u, \"traces\": %u, \"measured_ms\": ", pt->batch,
                      pt->traces);
        tc_buf_json_num(b, d->measured[i]);
        tc_buf_puts(b, ", \"conv_ms\": ");
        tc_buf_json_num(b, pt->conv_ms);
        tc_buf_puts(b, ", \"matmul_ms\": ");
        tc_buf_json_num(b, g->matmuls ? pt->matmul_ms : NAN);
        tc_buf_puts(b, ", \"bench_ms\": "); /* what the regression did not predict */
        tc_buf_json_num(b, d->conv[i]);
        tc_buf_puts(b, ", \"held_out_ms\": ");
        tc_buf_json_num(b, a->held_out[i]);
        tc_buf_puts(b, ", \"lo_ms\": ");
        tc_buf_json_num(b, a->held_lo[i]);
        tc_buf_puts(b, ", \"hi_ms\": ");
        tc_buf_json_num(b, a->held_hi[i]);
        tc_buf_puts(b, ", \"spread_between\": ");
        tc_buf_json_num(b, pt->spread_between);
        tc_buf_puts(b, ", \"noise_floor\": ");
        tc_buf_json_num(b, pt->noise_floor);
        tc_buf_puts(b, "}");
    }
    tc_buf_puts(b, "]");
}

static void s_json_group(tc_buf_t *b, const tc_fit_group_t *g, const tc_fit_run_analysis_t *a,
                         const row_t *rows, size_t n, tc_fit_holdout_t holdout)
{
    tc_buf_puts(b, "{\"device\": ");
    tc_buf_json_str(b, g->device);
    tc_buf_puts(b, ", \"framework\": ");
    tc_buf_json_str(b, g->framework);
    tc_buf_puts(b, ", \"policy\": ");
    if (*g->policy)
        tc_buf_json_str(b, g->policy);
    else
        tc_buf_puts(b, "null");
    tc_buf_puts(b, ", \"dtype\": ");
    tc_buf_json_str(b, g->dtype);
    tc_buf_puts(b, ", \"amp\": ");
    tc_buf_json_str(b, g->amp);
    tc_buf_puts(b, ", \"library_version\": ");
    tc_buf_json_str(b, g->library_version);
    char settings[TC_FIT_SETTINGS_LEN];
    tc_fit_run_settings_shown(g->settings, settings, sizeof settings);
    tc_buf_puts(b, ", \"settings\": ");
    tc_buf_json_str(b, settings);
    tc_buf_printf(b, ", \"cnns\": %zu, \"model\": {\"form\": \"%s\", \"weighting\": \"%s\", "
                     "\"features\": [",
                  a->data.n_cnns, tc_fit_form_name(a->spec.form),
                  tc_fit_weighting_name(a->spec.weighting));
    bool first = true;
    for (size_t j = 0; j < a->data.p; j++) {
        if (a->spec.mask & (1u << j)) {
            tc_buf_puts(b, first ? "" : ", ");
            tc_buf_json_str(b, a->data.names[j]);
            first = false;
        }
    }
    tc_buf_puts(b, "], \"why\": ");
    tc_buf_json_str(b, a->choice.why);
    tc_buf_puts(b, "}, ");
    tc_buf_printf(b, "\"disturbed_traces\": %zu, \"disturbed_benchmarks\": %zu, "
                     "\"include_disturbed\": %s, ",
                  g->disturbed_traces, g->disturbed_benchmarks,
                  g->include_disturbed ? "true" : "false");
    tc_buf_printf(b, "\"benchmarked\": \"%s\", ", g->matmuls ? "conv,matmul" : "conv");
    tc_buf_printf(b, "\"holdout\": \"%s\", \"stat\": \"%s\", \"groups\": %zu, ",
                  tc_fit_holdout_name(holdout), tc_fit_stat_name(a->fit.stat), a->data.n_cnns);
    tc_buf_printf(b, "\"interval_points\": %zu, \"interval_covered\": %zu, "
                     "\"interval_width_median\": ",
                  a->with_interval, a->covered);
    tc_buf_json_num(b, a->width_median);
    tc_buf_puts(b, ", ");
    s_json_row(b, &rows[0], false);
    s_json_points(b, g, a);
    tc_buf_puts(b, ", \"per_cnn\": [");
    for (size_t k = 1; k < n; k++) {
        tc_buf_puts(b, k > 1 ? ", {\"cnn\": " : "{\"cnn\": ");
        tc_buf_json_str(b, rows[k].cnn);
        tc_buf_puts(b, ", ");
        s_json_row(b, &rows[k], true);
        tc_buf_puts(b, ", \"fold_model\": ");
        tc_buf_json_str(b, rows[k].model);
        tc_buf_puts(b, "}");
    }
    tc_buf_puts(b, "]}");
}

/* Parse --format, --holdout and --models and make the fit plan (freed with
 * tc_fit_run_plan_free when this returns 0). */
static int s_plan(const tc_fit_run_cli_t *cli, const char *format, const char *holdout,
                  const char *models, format_t *fmt, tc_fit_run_plan_t *plan)
{
    if (!strcmp(format, "table"))
        *fmt = FMT_TABLE;
    else if (!strcmp(format, "csv"))
        *fmt = FMT_CSV;
    else if (!strcmp(format, "json"))
        *fmt = FMT_JSON;
    else
        return tc_fail(TC_EUSAGE, "--format must be table, csv or json (got '%s')", format);
    tc_fit_holdout_t hold;
    if (tc_fit_holdout_parse(holdout, &hold) < 0)
        return tc_err_context(TC_EUSAGE, "--holdout");
    int rc = tc_fit_run_plan_init(cli, plan);
    if (rc < 0)
        return rc;
    plan->holdout = hold;
    if (models && (rc = tc_parse_name_list(models, "--models", &plan->models,
                                           &plan->n_models)) < 0)
        tc_fit_run_plan_free(plan);
    return rc;
}

/* Read the fit groups of the plan's devices from the database db names
 * (*groups is the caller's to free, also on failure). */
static int s_load_groups(const char *db, const tc_fit_run_plan_t *plan, tc_fit_group_t **groups,
                         size_t *n_groups)
{
    tc_store_t *store = NULL;
    int rc = tc_store_open(tc_default_dsn(db), &store);
    if (rc == 0)
        rc = tc_store_fit_groups(store, plan->devices, plan->n_devices, plan->stat,
                                 plan->include_disturbed, groups, n_groups);
    if (rc == 0)
        rc = tc_fit_run_plan_groups(plan, *groups, n_groups);
    tc_store_destroy(&store);
    return rc;
}

/* Validate group g (the i-th) and print its report as a table or csv, or
 * append it to json. */
static int s_report_group(const tc_fit_group_t *g, size_t i, const tc_fit_run_plan_t *plan,
                          format_t fmt, tc_buf_t *json)
{
    tc_fit_run_analysis_t a;
    int rc = tc_fit_run_analyze(g, plan, TC_FIT_RUN_NESTED_REQUIRED, &a);
    if (rc < 0)
        return rc;
    row_t *rows = NULL;
    size_t n = 0;
    rc = s_rows(g, &a, &rows, &n);
    if (rc == 0) {
        if (fmt == FMT_TABLE)
            s_print_table(g, &a, rows, n, plan->holdout);
        else if (fmt == FMT_CSV)
            s_print_csv(g, rows, n);
        else {
            tc_buf_puts(json, i ? ", " : "");
            s_json_group(json, g, &a, rows, n, plan->holdout);
        }
        fflush(stdout);
    }
    free(rows);
    tc_fit_run_analysis_free(&a);
    return rc;
}

/* Validate every group in turn and print the report: a table or csv as it
 * goes, json whole at the end. */
static int s_report(const tc_fit_group_t *groups, size_t n_groups, const tc_fit_run_plan_t *plan,
                    format_t fmt)
{
    int rc = 0;
    tc_buf_t json = {0};
    if (fmt == FMT_CSV)
        printf("device,framework,policy,dtype,scope,cnn,points,excluded_oom,excluded_failed,mape,"
               "median_ape,max_ape,conv_only_mape,spread_within,spread_between,model,noise_floor,"
               "mape_se\n");
    tc_buf_puts(&json, "{\"devices\": [");
    for (size_t i = 0; rc == 0 && i < n_groups; i++)
        rc = s_report_group(&groups[i], i, plan, fmt, &json);
    tc_buf_puts(&json, "]}\n");
    if (rc == 0 && fmt == FMT_JSON) {
        if (json.failed)
            rc = tc_fail(TC_ENOMEM, "out of memory writing the report");
        else
            fputs(tc_buf_str(&json), stdout);
    }
    tc_buf_free(&json);
    return rc;
}

int tc_cmd_validate(int argc, char **argv)
{
    tc_fit_run_cli_t cli = {.min_gain = 0.01};
    const char *format = "table", *holdout = "cnn", *models = NULL;
    const tc_opt_t opts[] = {
        TC_FIT_RUN_OPTS(&cli),
        {"holdout", TC_OPT_STR, &holdout, "WHAT",
         "what each fold holds out: cnn (default), family (every CNN of an architectural "
         "family: resnet with resnext, mbconv, vgg, ...) or batch (one batch size of every CNN)"},
        {"models", TC_OPT_STR, &models, "LIST",
         "validate on these CNNs alone, by name as validate prints them (resnet18) or model "
         "id: the other CNNs' traces are left out of every fold, so that a subset (the CNNs, "
         "the transformers) is reported apart (default: every traced CNN)"},
        {"format", TC_OPT_STR, &format, "FMT", "table, csv or json (default: table)"},
        {0},
    };
    const tc_cmd_spec_t spec = {
        .prog = "aggregator validate",
        .summary = "Leave-one-CNN-out accuracy of the whole fitting procedure for every device: "
                   "MAPE, median and\nmax absolute percentage error per device and per CNN, "
                   "next to the traces' run-to-run spread.",
        .max_positional = 0,
        .config_file = true,
        .epilog = "Each CNN is predicted by a model whose form, weighting and features were "
                  "chosen and fitted\non the other CNNs only. Points whose traces all failed or "
                  "ran out of memory are excluded\nand counted. Nothing is stored.",
        .opts = opts,
    };
    tc_cli_result_t res;
    int rc = tc_cli_begin(&spec, argc, argv, &res);
    if (rc < 0 || res.help_shown)
        return rc;
    format_t fmt = FMT_TABLE;
    tc_fit_run_plan_t plan;
    rc = s_plan(&cli, format, holdout, models, &fmt, &plan);
    if (rc < 0) {
        tc_cli_result_free(&res);
        return rc;
    }
    tc_fit_group_t *groups = NULL;
    size_t n_groups = 0;
    rc = s_load_groups(cli.db, &plan, &groups, &n_groups);
    if (rc == 0)
        rc = s_report(groups, n_groups, &plan, fmt);
    tc_fit_groups_free(&groups, n_groups);
    tc_fit_run_plan_free(&plan);
    tc_cli_result_free(&res);
    return rc;
}
