/* aggregator fit: fit and store a model of the non-conv time per device. */
#include "commands.h"
#include "fit_run.h"
#include "store_fit.h"

#include "tc_cli.h"
#include "tc_error.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void s_print_fit(const tc_fit_group_t *g, const tc_fit_analysis_t *a)
{
    const tc_fit_t *fit = &a->fit;
    char label[3 * TC_FIT_LABEL_LEN], model[1024];
    tc_fit_group_label(g, label, sizeof label);
    tc_fit_spec_describe(&a->data, &a->spec, model, sizeof model);
    printf("%s: stored as fit %lld\n", label, fit->fit_id);
    printf("  data: %zu CNNs, %zu points, batches %u..%u; excluded %zu (out of memory %zu, "
           "failed %zu)\n",
           fit->n_cnns, fit->n_points, fit->batch_min, fit->batch_max,
           fit->excluded_oom + fit->excluded_failed, fit->excluded_oom, fit->excluded_failed);
    printf("  model: %s\n", model);
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

int tc_cmd_fit(int argc, char **argv)
{
    tc_fit_cli_t cli = {.min_gain = 0.01};
    bool no_validate = false;
    const tc_opt_t opts[] = {
        TC_FIT_CLI_OPTS(&cli),
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
    int rc = tc_cli_parse(&spec, argc, argv, &res);
    if (rc < 0 || res.help_shown) {
        tc_cli_result_free(&res);
        return rc;
    }
    tc_fit_plan_t plan;
    tc_store_t *store = NULL;
    tc_fit_group_t *groups = NULL;
    size_t n_groups = 0;
    rc = tc_fit_plan_init(&cli, &plan);
    if (rc < 0) {
        tc_cli_result_free(&res);
        return rc;
    }
    rc = tc_store_open(tc_default_dsn(cli.db), &store);
    if (rc == 0)
        rc = tc_store_fit_groups(store, plan.devices, plan.n_devices, plan.stat, &groups,
                                 &n_groups);
    /* Analyse every group before storing any, so bad input stores nothing. */
    tc_fit_analysis_t *an = NULL;
    if (rc == 0 && !(an = calloc(n_groups + 1, sizeof *an)))
        rc = tc_fail(TC_ENOMEM, "out of memory");
    for (size_t i = 0; rc == 0 && i < n_groups; i++)
        rc = tc_fit_analyze(&groups[i], &plan,
                            no_validate ? TC_FIT_NESTED_OFF : TC_FIT_NESTED_IF_POSSIBLE, &an[i]);
    for (size_t i = 0; rc == 0 && i < n_groups; i++) {
        tc_fit_held_out_t held = {an[i].held_out, an[i].held_lo, an[i].held_hi};
        rc = tc_store_fit_put(store, &an[i].fit, &groups[i], an[i].fitted,
                              an[i].nested ? &held : NULL, (const char *const *)plan.features,
                              plan.p);
        if (rc == 0) {
            s_print_fit(&groups[i], &an[i]);
            fflush(stdout);
        }
    }
    for (size_t i = 0; an && i < n_groups; i++)
        tc_fit_analysis_free(&an[i]);
    free(an);
    tc_fit_groups_free(&groups, n_groups);
    tc_store_destroy(&store);
    tc_fit_plan_free(&plan);
    tc_cli_result_free(&res);
    return rc;
}
