/* What `aggregator fit` and `aggregator validate` share: the model-choice
 * options and the analysis of one device group (select on every CNN, fit,
 * and the nested leave-one-CNN-out of the whole procedure). */
#ifndef TC_FIT_RUN_H
#define TC_FIT_RUN_H

#include "cli_db.h"
#include "fit.h"
#include "tc_cli.h"

/* Option values as given on the command line (NULL: default). */
typedef struct {
    const char *db;
    const char *devices;
    const char *forms;
    const char *weightings;
    const char *candidates;
    const char *features;
    const char *stat;
    double min_gain;
    bool include_disturbed;
    bool regress_matmuls;
} tc_fit_run_cli_t;

/* The options both commands take, for their tc_opt_t tables. */
#define TC_FIT_RUN_OPTS(c)                                                                     \
    {"device", TC_OPT_STR, &(c)->devices, "NAME,...",                                         \
     "device names (default: every device with traces)"},                              \
        {"forms", TC_OPT_STR, &(c)->forms, "LIST",                                            \
         "model forms to choose from: ols,nnls,ridge,robust (default: all)"},                 \
        {"weightings", TC_OPT_STR, &(c)->weightings, "LIST",                                  \
         "point weightings to choose from: none (absolute error), relative (error as a "      \
         "fraction of the measured time) (default: both)"},                                   \
        {"candidates", TC_OPT_STR, &(c)->candidates, "LIST",                                  \
         "features that forward selection may use (default: total.one, nonconv.layers, "      \
         "conv.layers, bn.elems, act.elems, pool.elems, eltwise.elems, concat.elems, "        \
         "total.params, gemm.flops, conv.ms, norm.elems, softmax.elems, copy.elems)"},        \
        {"features", TC_OPT_STR, &(c)->features, "LIST",                                      \
         "use exactly these features, without selection (instead of --candidates)"},          \
        {"stat", TC_OPT_STR, &(c)->stat, "S",                                                 \
         "how repeated measurements become one time, for convs and traces alike: geomean "   \
         "(their geometric mean, the default), median, p10 or min"},                          \
        {"min-gain", TC_OPT_DOUBLE, &(c)->min_gain, "FRACTION",                               \
         "relative drop in leave-one-CNN-out MAPE that admits a feature or a more complex "   \
         "form (default: 0.01)"},                                                             \
        {"include-disturbed", TC_OPT_FLAG, &(c)->include_disturbed, NULL,                     \
         "also fit the traces taken while other processes used the machine (left out by "    \
         "default; the agent marks them disturbed)"},                                         \
        {"regress-matmuls", TC_OPT_FLAG, &(c)->regress_matmuls, NULL,                         \
         "regress the matmuls with the rest even where every one is benchmarked (by "         \
         "default their benchmarks are subtracted with the convs'), to compare the two"},     \
        TC_DB_OPT(&(c)->db)

/* The options resolved. */
typedef struct {
    char **devices;
    size_t n_devices;
    char **features; /* candidate (or fixed) feature names, then those of the
                        simple form that are not among them */
    size_t p;
    size_t n_candidates; /* the first n_candidates of features are candidates */
    uint32_t forms, weightings;
    bool select;
    double min_gain;
    tc_fit_stat_t stat;
    tc_fit_holdout_t holdout; /* what the folds hold out (validate --holdout) */
    bool include_disturbed;
    bool regress_matmuls;
    /* validate --models: only these CNNs' points, by name or model id
     * (NULL: every traced CNN). */
    char **models;
    size_t n_models;
} tc_fit_run_plan_t;

int tc_fit_run_plan_init(const tc_fit_run_cli_t *cli, tc_fit_run_plan_t *plan);
/* What the plan changes in groups as read: --regress-matmuls, and with
 * models, every other CNN's points left out (a group left without points
 * dropped, *n updated). Bad input when a model has no point in any group. */
int tc_fit_run_plan_groups(const tc_fit_run_plan_t *plan, tc_fit_group_t *groups, size_t *n);
/* "convs and matmuls", or "convs" and why the matmuls are regressed (""
 * when the group has no matmul benchmarks), into buf. */
void tc_fit_run_benchmarked(const tc_fit_group_t *g, char *buf, size_t size);
void tc_fit_run_plan_free(tc_fit_run_plan_t *plan);

/* One group analysed. */
typedef struct {
    tc_fit_data_t data;
    tc_fit_select_opts_t opts;
    tc_fit_spec_t spec;        /* chosen on every CNN */
    double selection_mape;     /* its leave-one-CNN-out MAPE while choosing */
    tc_fit_choice_t choice;    /* the choice, with why */
    tc_fit_solution_t sol;     /* fitted on every point */
    double *fitted;            /* n: in-sample prediction */
    double *held_out;          /* n: nested leave-one-CNN-out prediction (NaN if not run) */
    double *held_lo, *held_hi; /* n: its 95 % interval (NaN where none) */
    double *loco;              /* n: leave-one-CNN-out of the chosen spec (its interval) */
    tc_fit_spec_t *fold_specs; /* per CNN: the spec its fold chose */
    bool nested;               /* held_out was computed */
    tc_fit_ape_t cv;           /* of held_out */
    size_t covered, with_interval; /* held-out truths inside their interval, of those with one */
    double width_median;       /* median of (hi - lo) / held_out, fraction; NaN if none */
    tc_fit_ape_t conv_only;    /* predicting the conv sum alone */
    /* The regression validated worse than the conv sum alone (the nested
     * held-out MAPE of the chosen model above conv_only's): the conv sum
     * alone was taken instead (spec without features); regression_spec and
     * regression_cv say what was set aside. */
    bool conv_sum_chosen;
    tc_fit_spec_t regression_spec;
    tc_fit_ape_t regression_cv;
    tc_fit_t fit;              /* ready to store */
} tc_fit_run_analysis_t;

typedef enum {
    TC_FIT_RUN_NESTED_OFF = 0,
    TC_FIT_RUN_NESTED_IF_POSSIBLE, /* skipped with a warning below 4 CNNs */
    TC_FIT_RUN_NESTED_REQUIRED,    /* below 4 CNNs is bad input */
} tc_fit_run_nested_t;

/* Analyse group `g`: choose on every CNN and fit; unless `nested` is off,
 * also the leave-one-CNN-out of the whole procedure (progress on stderr).
 * When that run finds the chosen regression worse on held-out CNNs than
 * the conv sum alone, the conv sum alone is the fit (conv_sum_chosen, and
 * choice.why says so). */
int tc_fit_run_analyze(const tc_fit_group_t *g, const tc_fit_run_plan_t *plan,
                       tc_fit_run_nested_t nested, tc_fit_run_analysis_t *out);
void tc_fit_run_analysis_free(tc_fit_run_analysis_t *a);

/* "ols, relative weights: total.one + bn.elems" into buf. */
void tc_fit_run_spec_describe(const tc_fit_data_t *d, const tc_fit_spec_t *spec, char *buf,
                          size_t size);

/* The settings of a settings key ("name=value; ..." as traces store it)
 * that differ from the defaults: an environment variable left unset
 * ("env.X=") and a framework flag at PyTorch's default are left out. Into
 * buf ("" when every setting is the default). */
void tc_fit_run_settings_shown(const char *key, char *buf, size_t size);

/* "device (framework, policy, dtype)" into buf. */
void tc_fit_run_group_label(const tc_fit_group_t *g, char *buf, size_t size);

#endif
