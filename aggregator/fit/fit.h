/* Per-device regression of the non-conv part of a training iteration.
 *
 *     measured iteration time = conv benchmark sum + f(non-conv features)
 *
 * The residual (measured - conv sum) of every traced (model, batch) point of a
 * device is regressed on named features of the model at that batch (see
 * tc_fit_feature_value). Leave-one-CNN-out cross-validation chooses the model
 * form, the weighting and the feature subset (fit_cv.c); the chosen fit is
 * stored (store_fit.h) and predicts unseen models (tc_fit_predict).
 *
 * Only aggregator/fit*.c include GSL; no GSL type crosses this header. All
 * matrices are plain row-major double arrays. Functions return 0 or a
 * negative TC_E* code with a message (tc_errmsg). */
#ifndef TC_FIT_H
#define TC_FIT_H

#include "tc_features.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TC_FIT_MAX_FEATURES 16
#define TC_FIT_NAME_LEN 64  /* feature names */
#define TC_FIT_LABEL_LEN 256 /* device, framework, policy, dtype */
#define TC_FIT_SETTINGS_LEN 4096 /* the settings key of a fit's traces */

/* ---- model forms and weighting ----------------------------------------- */

typedef enum {
    TC_FIT_OLS = 0, /* ordinary least squares (truncated SVD) */
    TC_FIT_NNLS,    /* non-negative least squares (Lawson-Hanson) */
    TC_FIT_RIDGE,   /* ridge on standardized columns, lambda by GCV */
    TC_FIT_ROBUST,  /* bisquare M-estimator (gsl_multifit_robust) */
    TC_FIT_FORM_COUNT
} tc_fit_form_t;

typedef enum {
    TC_FIT_W_NONE = 0,  /* every point weighs the same: absolute error in ms */
    TC_FIT_W_RELATIVE,  /* weight 1 / measured^2: relative error */
    TC_FIT_WEIGHTING_COUNT
} tc_fit_weighting_t;

/* How repeated measurements of one thing become its time, the same on both
 * sides of a fit: over a conv's repeats (its TC_FIT_RECENT most recent
 * benchmarks taken within 6 hours of the newest, each its own median over
 * repetitions; older ones are superseded) and over a point's successful
 * traces (each its own median over iterations). */
typedef enum {
    TC_FIT_STAT_GEOMEAN = 0, /* their geometric mean (the default) */
    TC_FIT_STAT_MEDIAN,      /* their median */
    TC_FIT_STAT_P10,         /* their 10th percentile (linear interpolation) */
    TC_FIT_STAT_MIN,         /* the fastest repeat */
    TC_FIT_STAT_COUNT
} tc_fit_stat_t;
#define TC_FIT_RECENT 5
#define TC_FIT_SUPERSEDED_US (6 * 3600 * INT64_C(1000000)) /* older than the newest by this */

/* One benchmark of a conv measurement (config, batch, direction) on a
 * device: its own median over its repetitions, its standard deviation (NaN:
 * not recorded), when it was measured (microseconds on any fixed epoch;
 * TC_FIT_TIME_UNKNOWN: not recorded) and the id it was stored under. */
typedef struct {
    double median_ms, stddev_ms;
    int64_t measured_us;
    int64_t id;
} tc_fit_repeat_t;
#define TC_FIT_TIME_UNKNOWN INT64_MIN

/* The time of a conv measurement from its benchmarks: the one rule that fit
 * and predict both apply (fit_stat.c). Its TC_FIT_RECENT most recent
 * benchmarks (by measured time, unknown times last, then the later stored
 * first), less those measured more than 6 hours before the newest (a later
 * run supersedes them); of those `stat` of the medians and the median of
 * the standard deviations that were recorded. Percentiles interpolate
 * between the two nearest ranks as SQL's percentile_cont does. Reorders
 * r[0..n); *median_ms is NaN when n is 0, *stddev_ms when none is recorded. */
void tc_fit_conv_time(tc_fit_repeat_t *r, size_t n, tc_fit_stat_t stat, double *median_ms,
                      double *stddev_ms);

const char *tc_fit_stat_name(tc_fit_stat_t s); /* geomean, median, p10, min */
int tc_fit_stat_parse(const char *s, tc_fit_stat_t *out);

const char *tc_fit_form_name(tc_fit_form_t f);           /* ols, nnls, ridge, robust */
const char *tc_fit_weighting_name(tc_fit_weighting_t w); /* none, relative */
int tc_fit_form_parse(const char *s, tc_fit_form_t *out);
int tc_fit_weighting_parse(const char *s, tc_fit_weighting_t *out);

/* ---- the solver on a plain design matrix (fit_linear.c) ----------------- */

typedef struct {
    size_t p;
    double coef[TC_FIT_MAX_FEATURES];
    /* Covariance of coef, p x p row-major. For NNLS, rows and columns of
     * coefficients held at zero by the constraint are zero. */
    double cov[TC_FIT_MAX_FEATURES * TC_FIT_MAX_FEATURES];
    /* Residual standard error of the weighted problem: in ms without
     * weights, a fraction of the measured time with relative weights. */
    double rse;
    double dof;    /* residual degrees of freedom (n - effective parameters) */
    double lambda; /* ridge: the GCV choice, on the standardized design; else 0 */
    size_t rank;   /* numerical rank used (OLS, ridge), active set size (NNLS) */
} tc_fit_solution_t;

/* Fit y ~ X b with optional weights (NULL: all 1). x is n x p row-major;
 * needs n > p and p <= TC_FIT_MAX_FEATURES. Columns that are zero on every
 * row get a zero coefficient. Internally the weighted design is scaled to
 * unit RMS columns, solved, and the coefficients scaled back, so the
 * result is in the units of x and y. TC_EINVAL on too few rows or
 * non-finite input, TC_ELIB when GSL fails. */
int tc_fit_linear(tc_fit_form_t form, const double *x, const double *y, const double *w, size_t n,
                  size_t p, tc_fit_solution_t *out);

/* Generalized cross-validation score of ridge regression at `lambda` on the
 * standardized design that tc_fit_linear(TC_FIT_RIDGE, ...) uses:
 * ||r||^2 / (n - trace(H))^2. For tests and diagnostics. */
int tc_fit_ridge_gcv(const double *x, const double *y, const double *w, size_t n, size_t p,
                     double lambda, double *score);

/* ---- features ----------------------------------------------------------- */

/* A named scalar of a model's features at its batch: everything
 * tc_feature_value knows ("bn.elems", "total.params", ...) plus
 *   nonconv.layers  layers other than conv (per-layer dispatch overhead)
 *   kernel.layers   layers other than conv that run a kernel: nonconv.layers
 *                   without the views (shape class)
 *   memory.elems    elements read + written by memory-bound layers other
 *                   than batch norm (act, pool, eltwise, concat, dropout,
 *                   shape, reduce, other, norm, softmax, copy), times the batch
 * Returns 0 or TC_EINVAL naming the feature. */
int tc_fit_feature_value(const tc_features_t *f, const char *name, double *out);

/* As tc_fit_feature_value, and also
 *   conv.ms         the point's conv sum (a coefficient on it corrects the
 *                   benchmarks' sum by a factor: framework work that scales
 *                   with the conv time itself)
 * which needs the point's conv sum. */
int tc_fit_feature_at(const tc_features_t *f, double conv_ms, const char *name, double *out);

/* The default candidate set, physically motivated (docs/fitting.md):
 * total.one (constant per-iteration overhead), nonconv.layers,
 * conv.layers (framework work around each conv call), the memory-bound
 * classes' elements each apart (bn, act, pool, eltwise, concat, norm, softmax,
 * copy), total.params (optimizer step), gemm.flops (classifier), conv.ms.
 * Returns the count; *names points to static storage. */
size_t tc_fit_default_candidates(const char *const **names);

/* ---- training data ------------------------------------------------------ */

/* One traced (model, batch) point of a device group. */
typedef struct {
    char *model_id;        /* owned */
    char *cnn;             /* owned: the CNN's name; leave-one-CNN-out holds out
                              every model id (input size) of one name */
    unsigned batch;
    unsigned traces;       /* successful traces summarized */
    double measured_ms;    /* the group's statistic of the traces' medians */
    double conv_ms;        /* sum of the conv benchmarks at this batch (same statistic) */
    /* Sum of the matmul benchmarks by their step rule (tc_matmul_step.h, the
     * same statistic) where the group benchmarks matmuls, else 0. The fit's
     * benchmarked part is conv_ms + matmul_ms. */
    double matmul_ms;
    double spread_within;  /* largest within-trace spread, fraction; NaN if unknown */
    double spread_between; /* (max - min) / median across traces; NaN with one trace */
    /* The truth's own error, from two halves of its traces in the order they
     * were taken (odd- and even-numbered): |a - b| / (2 x measured), a and b
     * the fit's statistic of each (schema/012_noise_floor.sql,
     * 017_geometric_mean.sql); NaN with one trace. */
    double noise_floor;
    tc_features_t features;
} tc_fit_point_t;

/* A traced point left out because no trace of it succeeded. */
typedef struct {
    char *model_id; /* owned */
    char *cnn;      /* owned */
    unsigned batch;
    bool oom;       /* ran out of memory (else failed) */
} tc_fit_excluded_t;

/* Everything traced on one device name with one framework, policy, dtype,
 * AMP mode, settings key and (on a GPU) cuDNN version: what one fit is made
 * from. */
typedef struct {
    char device[TC_FIT_LABEL_LEN];
    char framework[TC_FIT_LABEL_LEN];
    char policy[TC_FIT_LABEL_LEN]; /* "" when the traces carry none */
    char dtype[TC_FIT_LABEL_LEN];
    char amp[TC_FIT_LABEL_LEN];             /* "" off, else "fp16" or "bf16" */
    char library_version[TC_FIT_LABEL_LEN]; /* on a GPU the traces' cuDNN; else "" */
    char settings[TC_FIT_SETTINGS_LEN];     /* the traces' settings key */
    /* The conv benchmarks' policy summed for these traces: the traces'
     * policy, or heuristic (the libraries' default) when they carry none. */
    char conv_policy[TC_FIT_LABEL_LEN];
    char data_through[64]; /* newest trace start among the points ("" if unknown) */
    tc_fit_stat_t stat;    /* how repeated measurements became the points' times */
    tc_fit_point_t *points;
    size_t n_points;
    tc_fit_excluded_t *excluded;
    size_t n_excluded;
    /* Measurements taken while the machine was busy (schema/011_load.sql):
     * successful traces of the group marked disturbed (left out unless
     * include_disturbed), and conv benchmarks of the device name marked so
     * (each counts only where its measurement has no quiet one). */
    bool include_disturbed;
    size_t disturbed_traces, disturbed_benchmarks;
    /* Whether the points' matmuls are benchmarked (every model's matmul list
     * stored and every matmul measurement found on the device), and so
     * subtracted with the convs; else they are regressed with the rest, and
     * matmuls_why says why ("" when the device has no matmul benchmarks). */
    bool matmuls;
    char matmuls_why[512];
} tc_fit_group_t;

void tc_fit_group_clear(tc_fit_group_t *g);
void tc_fit_groups_free(tc_fit_group_t **groups_p, size_t n);

/* What a fold holds out. The data's groups (cnn, cnn_names) are CNNs when
 * built; regrouping makes them families of CNNs (resnet, vgg, mbconv,
 * ...: tc_fit_family) or batch sizes, so that selection, leave-one-out and
 * the nested run hold out a whole family, or a batch size of every CNN. */
typedef enum {
    TC_FIT_HOLD_CNN = 0,
    TC_FIT_HOLD_FAMILY,
    TC_FIT_HOLD_BATCH,
    TC_FIT_HOLD_COUNT
} tc_fit_holdout_t;

const char *tc_fit_holdout_name(tc_fit_holdout_t h); /* cnn, family, batch */
int tc_fit_holdout_parse(const char *s, tc_fit_holdout_t *out);
/* "CNN", "family", "batch size" (plural with `plural`), for messages. */
const char *tc_fit_holdout_unit(tc_fit_holdout_t h, bool plural);

/* The design for cross-validation: candidate features evaluated at every
 * point, CNNs numbered. Built from a group; owns its arrays. */
typedef struct {
    size_t n;          /* points */
    size_t p;          /* candidate features */
    char names[TC_FIT_MAX_FEATURES][TC_FIT_NAME_LEN];
    double *x;         /* n x p row-major */
    double *measured;  /* n, ms */
    double *conv;      /* n, ms: the benchmarked part (convs, and matmuls where
                          the group benchmarks them) */
    size_t *cnn;       /* n, index into cnn_names */
    size_t n_cnns;
    char **cnn_names;  /* n_cnns, owned */
    tc_fit_holdout_t grouped_by; /* what cnn[] numbers: CNNs unless regrouped */
} tc_fit_data_t;

int tc_fit_data_build(const tc_fit_group_t *g, const char *const *features, size_t p,
                      tc_fit_data_t *out);


/* Regroup data built from `g` (rows are g's points, in order). */
int tc_fit_data_regroup(tc_fit_data_t *d, const tc_fit_group_t *g, tc_fit_holdout_t by);

/* The family of a CNN by its name: torchvision's CNNs grouped by
 * architecture, relatives together (resnet, resnext and wide_resnet ->
 * resnet; vgg and vgg_bn -> vgg; mobilenet_v2/v3, mnasnet and efficientnet
 * -> mbconv; regnet_x/y -> regnet; googlenet and inception -> inception,
 * ...); any other name is a family of its own. Into buf; returns buf. */
const char *tc_fit_family(const char *cnn, char *buf, size_t size);
void tc_fit_data_free(tc_fit_data_t *d);

/* ---- specs, folds and selection (fit_cv.c) ------------------------------- */

/* One candidate model: a form, a weighting and a subset of the data's
 * features (bit i = feature i). */
typedef struct {
    tc_fit_form_t form;
    tc_fit_weighting_t weighting;
    uint32_t mask;
} tc_fit_spec_t;

/* Fit `spec` on the rows where rows[i] is true (NULL: all). The solution's
 * coefficients follow the order of the set bits in spec->mask. */
int tc_fit_spec_solve(const tc_fit_data_t *d, const tc_fit_spec_t *spec, const bool *rows,
                      tc_fit_solution_t *out);

/* The predicted total time of row i: conv + non-conv from `sol`. */
double tc_fit_spec_predict(const tc_fit_data_t *d, const tc_fit_spec_t *spec,
                           const tc_fit_solution_t *sol, size_t i);

/* Called once per fold with the held-out CNN and the rows the fold trains
 * on (so a caller, or a test, can see the bookkeeping). May be NULL. */
typedef void (*tc_fit_fold_fn)(size_t held_out_cnn, const bool *train_rows, size_t n, void *ctx);

/* Leave-one-CNN-out with a fixed spec over the rows in `rows` (NULL: all):
 * for every CNN present, fit on the other CNNs' rows and predict its rows.
 * pred[i] gets the predicted total time (NaN for rows outside `rows`). */
int tc_fit_loco(const tc_fit_data_t *d, const tc_fit_spec_t *spec, const bool *rows, double *pred,
                tc_fit_fold_fn on_fold, void *ctx);

typedef struct {
    uint32_t forms;      /* bit per tc_fit_form_t that may be chosen */
    uint32_t weightings; /* bit per tc_fit_weighting_t */
    uint32_t candidates; /* feature bits the selection may use */
    bool select;         /* false: use exactly `candidates` */
    /* Forward selection adds a feature only when it lowers the
     * leave-one-CNN-out MAPE by this fraction of its value (0.01 = 1 %). */
    double min_gain;
    /* At most this many features; 0: one, and one more per
     * TC_FIT_CNNS_PER_FEATURE CNNs of the rows (2 for 4 to 7 CNNs, 8 for
     * 28 to 31). */
    size_t max_features;
    /* The simple form (nnls, relative weights, these feature bits) taken
     * when the data support no selection (fewer than 3 CNNs) or no
     * candidate passes; 0: none. */
    uint32_t simple;
} tc_fit_select_opts_t;

/* The feature budget: points of one CNN are not independent, so the number
 * of CNNs, not of points, bounds how many features a fit can carry. */
#define TC_FIT_CNNS_PER_FEATURE 4
/* The simple form needs this many CNNs; selection needs 3. */
#define TC_FIT_SIMPLE_MIN_CNNS 2

/* Every form, both weightings, all features of `d`, selection on, 1 %,
 * the budget from the CNN count, no simple form. */
void tc_fit_select_opts_default(const tc_fit_data_t *d, tc_fit_select_opts_t *o);

/* What tc_fit_select chose, and why. */
typedef struct {
    tc_fit_spec_t spec;
    double mape;          /* its leave-one-CNN-out MAPE, percent (NaN: not estimable) */
    double se;            /* the standard error of that MAPE over CNNs */
    size_t max_features;  /* the budget applied */
    bool simple;          /* the simple form was taken */
    char why[480];        /* why this model: the budget, the one-standard-error
                             rule, candidates left out, the simple form */
} tc_fit_choice_t;

/* Choose a spec by leave-one-CNN-out over `rows` (NULL: all). For each
 * allowed form and weighting, forward selection from the empty model (conv
 * sum only) by MAPE, at most `max_features` deep. A candidate whose fit on
 * all the rows, or on any fold, has a negative coefficient is not
 * admissible: the features are costs, and with non-negative coefficients no
 * prediction of the non-conv time is ever negative, for the CNNs fitted on
 * or any other. Of the admissible models the simplest (fewest features,
 * then the lowest MAPE) whose MAPE is within one standard error (over
 * CNNs) of the lowest is chosen. With fewer than 3 CNNs, or no admissible
 * candidate, the simple form, if any (with at least
 * TC_FIT_SIMPLE_MIN_CNNS CNNs). */
int tc_fit_select(const tc_fit_data_t *d, const bool *rows, const tc_fit_select_opts_t *o,
                  tc_fit_choice_t *out);

/* Held-out predictions of every point, with their 95 % intervals (NaN where
 * none). Arrays of the data's n; any may be NULL. */
typedef struct {
    double *ms, *lo_ms, *hi_ms;
} tc_fit_held_out_t;

/* Honest leave-one-CNN-out of the whole procedure: for each CNN (for each
 * group of d->cnn, which may number families or batch sizes instead: see
 * tc_fit_data_regroup), run tc_fit_select on the others only, fit the
 * chosen spec on them and predict the held-out one. out->ms[i] gets the
 * predicted total time; out->lo_ms/hi_ms its interval, from the held-out
 * predictions of the other groups (tc_fit_interval over their ratios
 * measured / held-out): calibrated on errors of the whole procedure,
 * selection included, and never on the group's own ratio. (The fold
 * spec's own leave-one-out errors, used before, are optimistic: the spec
 * was chosen for making them small.) chosen (may be NULL) gets each fold's
 * spec. `progress` (may be NULL) is called after each fold. Needs at least
 * 4 groups. */
typedef void (*tc_fit_progress_fn)(size_t done, size_t total, void *ctx);
int tc_fit_nested_loco(const tc_fit_data_t *d, const tc_fit_select_opts_t *o,
                       const tc_fit_held_out_t *out, tc_fit_spec_t *chosen,
                       tc_fit_fold_fn on_fold, tc_fit_progress_fn progress, void *ctx);

/* The (1 - alpha) prediction interval as factors on a prediction (lo <= 1
 * <= hi) from held-out predictions `pred` of `measured` over `rows` (NULL:
 * all): split-conformal quantiles of measured / pred (fit_interval.c). NaN
 * both when there are too few points for the level
 * (tc_fit_interval_min_points: 39 for 95 %). */
int tc_fit_interval(const double *measured, const double *pred, const bool *rows, size_t n,
                    double alpha, double *lo, double *hi);
size_t tc_fit_interval_min_points(double alpha);
#define TC_FIT_ALPHA 0.05 /* 95 % intervals */

/* Absolute percentage errors over rows where pred is finite. */
typedef struct {
    size_t n;
    double mape;   /* mean, percent */
    double median; /* percent */
    double max;    /* percent */
} tc_fit_ape_t;

void tc_fit_ape(const double *measured, const double *pred, const bool *rows, size_t n,
                tc_fit_ape_t *out);

/* ---- a stored fit: what predict uses (fit_model.c) ---------------------- */

typedef struct {
    long long fit_id;      /* 0 until stored */
    int64_t fitted_at_us;
    char device[TC_FIT_LABEL_LEN];
    char framework[TC_FIT_LABEL_LEN];
    char policy[TC_FIT_LABEL_LEN]; /* "" when none */
    char dtype[TC_FIT_LABEL_LEN];
    char amp[TC_FIT_LABEL_LEN];             /* "" off */
    char library_version[TC_FIT_LABEL_LEN]; /* on a GPU the cuDNN of its traces */
    char settings[TC_FIT_SETTINGS_LEN];
    char conv_policy[TC_FIT_LABEL_LEN];
    /* The benchmarked part includes the matmuls (their step times subtracted
     * from the traces with the convs'): predict must add them too. */
    bool matmuls;
    tc_fit_form_t form;
    tc_fit_weighting_t weighting;
    size_t p;
    char features[TC_FIT_MAX_FEATURES][TC_FIT_NAME_LEN];
    double coef[TC_FIT_MAX_FEATURES]; /* ms per unit of each feature */
    double cov[TC_FIT_MAX_FEATURES * TC_FIT_MAX_FEATURES]; /* p x p row-major */
    double rse, dof, lambda;
    /* The data it was fitted on. */
    size_t n_points, n_cnns;
    unsigned batch_min, batch_max;
    size_t excluded_oom, excluded_failed;
    /* Leave-one-CNN-out of the whole procedure (nested), percent. */
    double cv_mape, cv_median_ape, cv_max_ape;
    double selection_mape; /* the chosen spec's score during selection */
    double conv_only_mape; /* predicting the conv sum alone */
    tc_fit_stat_t stat;    /* of repeated measurements, both sides */
    /* The 95 % prediction interval as factors on the predicted total time
     * (lo < 1 < hi): quantiles of measured / predicted over the
     * leave-one-CNN-out predictions of this model's spec (fit_interval.c).
     * NaN when there were too few points; predict then falls back on the
     * regression's own variance. */
    double interval_lo, interval_hi;
} tc_fit_t;

/* Fill the model part of `fit` (form, features, coefficients, covariance,
 * rse, dof, lambda) from a solution of `spec` on `d`. */
void tc_fit_from_solution(tc_fit_t *fit, const tc_fit_data_t *d, const tc_fit_spec_t *spec,
                          const tc_fit_solution_t *sol);

/* Predict the non-conv time (ms) of a model with features `f` on the fit's
 * device, and the variance (ms^2) of that prediction as a prediction of a
 * new measurement: x' Cov x + noise, where the noise is rse^2 without
 * weights and (rse * (conv_ms + nonconv))^2 with relative weights. `conv_ms`
 * is the model's conv sum at the same batch (only the relative noise term
 * uses it). Adding the conv sum's own variance is the caller's part. */
int tc_fit_predict(const tc_fit_t *fit, const tc_features_t *f, double conv_ms,
                   double *nonconv_ms, double *variance_ms2);

/* Quantile p of Student's t with `dof` degrees of freedom (the normal
 * quantile when dof is below 1 or not finite). */
double tc_fit_t_quantile(double p, double dof);

#endif
