/* aggregator fit: fit and store a model of the non-conv time per device. */
#include "cli_db.h"
#include "commands.h"
#include "fit_run.h"
#include "store_fit.h"

#include "tc_cli.h"
#include "tc_error.h"
#include "tc_table.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void s_print_fit(const tc_fit_group_t *g, const tc_fit_run_analysis_t *a)
{
    const tc_fit_t *fit = &a->fit;
    char label[3 * TC_FIT_LABEL_LEN], model[1024];
    tc_fit_run_group_label(g, label, sizeof label);
    tc_fit_run_spec_describe(&a->data, &a->spec, model, sizeof model);
    printf("%s: stored as fit %lld\n", label, fit->fit_id);
    printf("  data: %zu CNNs, %zu points, batches %u..%u; excluded %zu (out of memory %zu, "
           "failed %zu)\n",
           fit->n_cnns, fit->n_points, fit->batch_min, fit->batch_max,
           fit->excluded_oom + fit->excluded_failed, fit->excluded_oom, fit->excluded_failed);
    if (g->disturbed_traces || g->disturbed_benchmarks)
        printf("  taken while the machine was busy (disturbed): %zu traces (%s), %zu conv "
               "benchmarks (used only where a measurement has no quiet one)\n",
               g->disturbed_traces, g->include_disturbed ? "kept: --include-disturbed" : "left out",
               g->disturbed_benchmarks);
    char benchmarked[640];
    tc_fit_run_benchmarked(g, benchmarked, sizeof benchmarked);
    if (*benchmarked)
        printf("  benchmarked: %s\n", benchmarked);
    printf("  model: %s\n", model);
    printf("  why: %s\n", a->choice.why);
    if (a->nested)
        printf("  leave-one-CNN-out (model choice included): MAPE %.2f %%, median %.2f %%, "
               "max %.2f %%\n",
               fit->cv_mape, fit->cv_median_ape, fit->cv_max_ape);
    printf("  while choosing: MAPE %.2f %%; conv sum alone: MAPE %.2f %%\n", fit->selection_mape,
           fit->conv_only_mape);
    if (fit->p)
        printf("  non-conv ms =\n");
    for (size_t j = 0; j < fit->p; j++) {
        double se = sqrt(fmax(fit->cov[j * fit->p + j], 0));
        printf("    %+14.6g (se %10.3g) x %s\n", fit->coef[j], se, fit->features[j]);
    }
    if (fit->weighting == TC_FIT_W_RELATIVE)
        printf("  residual standard error: %.2f %% of the measured time (%.1f degrees of "
               "freedom)\n",
               100 * fit->rse, fit->dof);
    else
        printf("  residual standard error: %.4g ms (%.1f degrees of freedom)\n", fit->rse,
               fit->dof);
    if (fit->form == TC_FIT_RIDGE)
        printf("  ridge lambda (standardized design): %.4g\n", fit->lambda);
}

/* The machine-readable form (--format csv|json): a row per fit, and a row
 * per coefficient. */
static const tc_col_t s_fit_cols[] = {
    {"fit_id", TC_COL_INT},          {"device", TC_COL_TEXT},
    {"framework", TC_COL_TEXT},      {"policy", TC_COL_TEXT},
    {"dtype", TC_COL_TEXT},          {"conv_policy", TC_COL_TEXT},
    {"form", TC_COL_TEXT},           {"weighting", TC_COL_TEXT},
    {"stat", TC_COL_TEXT},           {"model", TC_COL_TEXT},
    {"n_cnns", TC_COL_INT},          {"n_points", TC_COL_INT},
    {"batch_min", TC_COL_INT},       {"batch_max", TC_COL_INT},
    {"excluded_oom", TC_COL_INT},    {"excluded_failed", TC_COL_INT},
    {"cv_mape", TC_COL_NUM},         {"cv_median_ape", TC_COL_NUM},
    {"cv_max_ape", TC_COL_NUM},      {"selection_mape", TC_COL_NUM},
    {"conv_only_mape", TC_COL_NUM},  {"rse", TC_COL_NUM},
    {"dof", TC_COL_NUM},             {"ridge_lambda", TC_COL_NUM},
    {"interval_lo", TC_COL_NUM},     {"interval_hi", TC_COL_NUM},
    {"benchmarked", TC_COL_TEXT},    {"why", TC_COL_TEXT},
};
#define S_FIT_COLS (sizeof s_fit_cols / sizeof s_fit_cols[0])
static const tc_col_t s_coef_cols[] = {
    {"fit_id", TC_COL_INT},      {"device", TC_COL_TEXT}, {"feature", TC_COL_TEXT},
    {"coefficient", TC_COL_NUM}, {"se", TC_COL_NUM},
};

static void s_num(char *buf, size_t size, double v, bool have)
{
    if (have && isfinite(v))
        snprintf(buf, size, "%.10g", v);
    else
        buf[0] = '\0';
}

static int s_fit_rows(tc_table_t *fits, tc_table_t *coefs, const tc_fit_group_t *g,
                      const tc_fit_run_analysis_t *a)
{
    const tc_fit_t *fit = &a->fit;
    char model[1024], v[S_FIT_COLS][64];
    tc_fit_run_spec_describe(&a->data, &a->spec, model, sizeof model);
    snprintf(v[0], sizeof v[0], "%lld", fit->fit_id);
    snprintf(v[10], sizeof v[10], "%zu", fit->n_cnns);
    snprintf(v[11], sizeof v[11], "%zu", fit->n_points);
    snprintf(v[12], sizeof v[12], "%u", fit->batch_min);
    snprintf(v[13], sizeof v[13], "%u", fit->batch_max);
    snprintf(v[14], sizeof v[14], "%zu", fit->excluded_oom);
    snprintf(v[15], sizeof v[15], "%zu", fit->excluded_failed);
    s_num(v[16], sizeof v[16], fit->cv_mape, a->nested);
    s_num(v[17], sizeof v[17], fit->cv_median_ape, a->nested);
    s_num(v[18], sizeof v[18], fit->cv_max_ape, a->nested);
    s_num(v[19], sizeof v[19], fit->selection_mape, true);
    s_num(v[20], sizeof v[20], fit->conv_only_mape, true);
    s_num(v[21], sizeof v[21], fit->rse, true);
    s_num(v[22], sizeof v[22], fit->dof, true);
    s_num(v[23], sizeof v[23], fit->lambda, fit->form == TC_FIT_RIDGE);
    s_num(v[24], sizeof v[24], fit->interval_lo, true);
    s_num(v[25], sizeof v[25], fit->interval_hi, true);
    snprintf(v[26], sizeof v[26], "%s", fit->matmuls ? "conv,matmul" : "conv");
    const char *cells[S_FIT_COLS] = {
        v[0], g->device, g->framework, *g->policy ? g->policy : NULL, g->dtype, g->conv_policy,
        tc_fit_form_name(fit->form), tc_fit_weighting_name(fit->weighting),
        tc_fit_stat_name(fit->stat), model};
    for (size_t i = 10; i < S_FIT_COLS - 1; i++)
        cells[i] = *v[i] ? v[i] : NULL;
    cells[S_FIT_COLS - 1] = a->choice.why;
    int rc = tc_table_add_row(fits, cells);
    for (size_t j = 0; rc == 0 && j < fit->p; j++) {
        char c[64], se[64];
        snprintf(c, sizeof c, "%.10g", fit->coef[j]);
        snprintf(se, sizeof se, "%.10g", sqrt(fmax(fit->cov[j * fit->p + j], 0)));
        const char *row[] = {v[0], g->device, fit->features[j], c, se};
        rc = tc_table_add_row(coefs, row);
    }
    return rc;
}

/* Open the database db names, check its schema and read the fit groups of
 * the plan's devices (*store and *groups are the caller's to free, also on
 * failure). */
static int s_load_groups(const char *db, const tc_fit_run_plan_t *plan, tc_store_t **store,
                         tc_fit_group_t **groups, size_t *n_groups)
{
    int rc = tc_store_open(tc_default_dsn(db), store);
    if (rc == 0)
        rc = tc_store_check_schema(*store);
    if (rc == 0)
        rc = tc_store_fit_groups(*store, plan->devices, plan->n_devices, plan->stat,
                                 plan->include_disturbed, groups, n_groups);
    if (rc == 0)
        rc = tc_fit_run_plan_groups(plan, *groups, n_groups);
    return rc;
}

/* Analyse every group (into *an, n_groups + 1 of them, zeroed first: the
 * caller frees each and the array, also on failure). */
static int s_analyze_all(const tc_fit_group_t *groups, size_t n_groups,
                         const tc_fit_run_plan_t *plan, bool no_validate,
                         tc_fit_run_analysis_t **an)
{
    int rc = 0;
    if (!(*an = calloc(n_groups + 1, sizeof **an)))
        rc = tc_fail(TC_ENOMEM, "out of memory");
    for (size_t i = 0; rc == 0 && i < n_groups; i++)
        rc = tc_fit_run_analyze(&groups[i], plan,
                                no_validate ? TC_FIT_RUN_NESTED_OFF
                                            : TC_FIT_RUN_NESTED_IF_POSSIBLE,
                                &(*an)[i]);
    return rc;
}

/* Store each group's fit, and print its report (table) or add its rows to
 * the tables fits and coefficients (csv, json). */
static int s_store_fits(tc_store_t *store, const tc_fit_group_t *groups, size_t n_groups,
                        tc_fit_run_analysis_t *an, const tc_fit_run_plan_t *plan, tc_format_t fmt,
                        tc_table_t *tables[2])
{
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < n_groups; i++) {
        tc_fit_held_out_t held = {an[i].held_out, an[i].held_lo, an[i].held_hi};
        rc = tc_store_fit_put(store, &an[i].fit, &groups[i], an[i].fitted,
                              an[i].nested ? &held : NULL, (const char *const *)plan->features,
                              plan->p);
        if (rc == 0 && fmt == TC_FMT_TABLE) {
            s_print_fit(&groups[i], &an[i]);
            fflush(stdout);
        } else if (rc == 0) {
            rc = s_fit_rows(tables[0], tables[1], &groups[i], &an[i]);
        }
    }
    return rc;
}

int tc_cmd_fit(int argc, char **argv)
{
    tc_fit_run_cli_t cli = {.min_gain = 0.01};
    bool no_validate = false;
    const char *format = "table";
    const tc_opt_t opts[] = {
        TC_FIT_RUN_OPTS(&cli),
        {"format", TC_OPT_STR, &format, "table|csv|json",
         "output format (default: table, a report per fit; csv and json: the tables fits and "
         "coefficients)"},
        {"no-validate", TC_OPT_FLAG, &no_validate, NULL,
         "skip the leave-one-CNN-out of the whole procedure (faster; the stored cv error "
         "stays empty)"},
        {0},
    };
    const tc_cmd_spec_t spec = {
        .prog = "aggregator fit",
        .summary = "Fit a model of the non-conv training time per device name (and framework, "
                   "policy, dtype)\nfrom the stored traces and conv benchmarks, and store it.",
        .max_positional = 0,
        .config_file = true,
        .epilog = "For each traced (model, batch): residual = measured iteration time - sum of "
                  "the model's conv\nbenchmarks at that batch. The residual is regressed on "
                  "non-conv features of the model;\nleave-one-CNN-out cross-validation chooses "
                  "the form, the weighting and the features\n(forward selection). The stored "
                  "cv error holds out each CNN from the whole procedure.\nSee docs/fitting.md.",
        .opts = opts,
    };
    tc_cli_result_t res;
    int rc = tc_cli_begin(&spec, argc, argv, &res);
    if (rc < 0 || res.help_shown)
        return rc;
    tc_fit_run_plan_t plan;
    tc_store_t *store = NULL;
    tc_fit_group_t *groups = NULL;
    size_t n_groups = 0;
    tc_format_t fmt;
    rc = tc_format_parse(format, &fmt);
    if (rc == 0)
        rc = tc_fit_run_plan_init(&cli, &plan);
    if (rc < 0) {
        tc_cli_result_free(&res);
        return rc;
    }
    tc_table_t *tables[2] = {tc_table_new("fits", s_fit_cols, S_FIT_COLS),
                             tc_table_new("coefficients", s_coef_cols, 5)};
    if (!tables[0] || !tables[1])
        rc = tc_fail(TC_ENOMEM, "out of memory");
    if (rc == 0)
        rc = s_load_groups(cli.db, &plan, &store, &groups, &n_groups);
    /* Analyse every group before storing any, so bad input stores nothing. */
    tc_fit_run_analysis_t *an = NULL;
    if (rc == 0)
        rc = s_analyze_all(groups, n_groups, &plan, no_validate, &an);
    if (rc == 0)
        rc = s_store_fits(store, groups, n_groups, an, &plan, fmt, tables);
    if (rc == 0 && fmt != TC_FMT_TABLE)
        rc = tc_table_print(stdout, fmt, tables, 2);
    tc_table_destroy(&tables[0]);
    tc_table_destroy(&tables[1]);
    for (size_t i = 0; an && i < n_groups; i++)
        tc_fit_run_analysis_free(&an[i]);
    free(an);
    tc_fit_groups_free(&groups, n_groups);
    tc_store_destroy(&store);
    tc_fit_run_plan_free(&plan);
    tc_cli_result_free(&res);
    return rc;
}
