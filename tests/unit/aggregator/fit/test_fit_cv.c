/* Features, leave-one-CNN-out bookkeeping and feature selection on
 * synthetic data, predictions from a fit, and prediction intervals. The
 * solvers themselves are tested in test_fit.c. */
#include "fit.h"
#include "predict.h"

#include "tc_error.h"
#include "tc_test.h"
#include "tc_test_proc.h"
#include "tc_test_rng.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- features ---------------------------------------------------------------- */

Test(fit_features, composite_features_add_up, .timeout = 10)
{
    const tc_layer_summary_t layers[] = {
        {TC_OPC_CONV, 1728, 1e6, 3000, 64000},   {TC_OPC_BN, 128, 0, 64000, 64000},
        {TC_OPC_ACT, 0, 0, 64000, 64000},        {TC_OPC_POOL, 0, 0, 64000, 16000},
        {TC_OPC_ELTWISE, 0, 0, 32000, 16000},    {TC_OPC_GEMM, 10010, 20000, 1000, 10},
    };
    tc_features_t f;
    tc_features_from_layers(layers, 6, 8, &f);
    double v;
    cr_assert_eq(tc_fit_feature_value(&f, "nonconv.layers", &v), 0);
    cr_expect_eq(v, 5.0);
    cr_assert_eq(tc_fit_feature_value(&f, "kernel.layers", &v), 0);
    cr_expect_eq(v, 5.0, "no view among the layers");
    cr_assert_eq(tc_fit_feature_value(&f, "memory.elems", &v), 0);
    cr_expect_eq(v, 8.0 * (128000 + 80000 + 48000));
    cr_assert_eq(tc_fit_feature_value(&f, "bn.elems", &v), 0);
    cr_expect_eq(v, 8.0 * 128000);
    cr_assert_eq(tc_fit_feature_value(&f, "total.params", &v), 0);
    cr_expect_eq(v, 1728.0 + 128 + 10010);
    cr_expect_eq(tc_fit_feature_value(&f, "bogus.elems", &v), TC_EINVAL);
    const char *const *names;
    size_t n = tc_fit_default_candidates(&names);
    for (size_t i = 0; i < n; i++)
        cr_expect_eq(tc_fit_feature_at(&f, 42.0, names[i], &v), 0, "default candidate %s: %s",
                     names[i], tc_errmsg());
    cr_assert_eq(tc_fit_feature_at(&f, 42.0, "conv.ms", &v), 0);
    cr_expect_eq(v, 42.0, "conv.ms is the point's conv sum");
    cr_expect_eq(tc_fit_feature_value(&f, "conv.ms", &v), TC_EINVAL,
                 "conv.ms needs the conv sum");
    /* A CNN has no layer norm, softmax or copy: zero columns. */
    cr_assert_eq(tc_fit_feature_value(&f, "norm.elems", &v), 0);
    cr_expect_eq(v, 0.0);
    cr_assert_eq(tc_fit_feature_value(&f, "copy.elems", &v), 0);
    cr_expect_eq(v, 0.0);
}

/* memory.elems is the sum it was before norm, softmax and copy were classes
 * of their own: they were parts of reduce and shape, and count in it. */
Test(fit_features, memory_elems_counts_the_new_classes, .timeout = 10)
{
    const tc_layer_summary_t layers[] = {
        {TC_OPC_NORM, 16, 0, 400, 400},     {TC_OPC_SOFTMAX, 0, 0, 250, 250},
        {TC_OPC_COPY, 0, 0, 100, 100},      {TC_OPC_SHAPE, 0, 0, 10, 10},
        {TC_OPC_REDUCE, 0, 0, 20, 1},       {TC_OPC_BN, 16, 0, 1000, 1000},
    };
    tc_features_t f;
    tc_features_from_layers(layers, 6, 2, &f);
    double v;
    cr_assert_eq(tc_fit_feature_value(&f, "memory.elems", &v), 0);
    cr_expect_eq(v, 2.0 * (800 + 500 + 200 + 20 + 21), "batch norm is not in it");
    cr_assert_eq(tc_fit_feature_value(&f, "nonconv.layers", &v), 0);
    cr_expect_eq(v, 6.0);
    cr_assert_eq(tc_fit_feature_value(&f, "kernel.layers", &v), 0);
    cr_expect_eq(v, 5.0, "the view runs no kernel; the copy does");
}

Test(fit_features, families_of_torchvision_cnns, .timeout = 10)
{
    /* By architecture: relatives that share their block are one family. */
    static const char *const cases[][2] = {
        {"resnet18", "resnet"},          {"resnet152", "resnet"},
        {"resnext50_32x4d", "resnet"},   {"wide_resnet50_2", "resnet"},
        {"vgg11", "vgg"},                {"vgg16_bn", "vgg"},
        {"mobilenet_v2", "mbconv"},      {"mobilenet_v3_small", "mbconv"},
        {"mnasnet0_5", "mbconv"},        {"efficientnet_b1", "mbconv"},
        {"efficientnet_v2_s", "mbconv"}, {"regnet_x_400mf", "regnet"},
        {"regnet_y_400mf", "regnet"},    {"googlenet", "inception"},
        {"inception_v3", "inception"},   {"shufflenet_v2_x0_5", "shufflenet"},
        {"densenet161", "densenet"},     {"torchvision:squeezenet1_1@112", "squeezenet"},
        {"convnext_tiny", "convnext"},   {"vit_b_16", "vit"},
        {"swin_v2_t", "swin"},           {"maxvit_t", "maxvit"},
        {"my_cnn", "my_cnn"},            {"onnx:abc@64", "abc"},
    };
    char buf[64];
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        cr_expect_str_eq(tc_fit_family(cases[i][0], buf, sizeof buf), cases[i][1], "%s",
                         cases[i][0]);
}

/* ---- cross-validation ------------------------------------------------------- */

/* A synthetic data set: n_cnns CNNs at 4 batches, candidate features with
 * known effects on the residual, relative noise. */
static void s_make_data(tc_fit_data_t *d, size_t n_cnns, const double *beta, size_t p,
                        double rel_noise)
{
    memset(d, 0, sizeof *d);
    d->n = n_cnns * 4;
    d->p = p;
    d->n_cnns = n_cnns;
    d->x = calloc(d->n * p, sizeof *d->x);
    d->measured = calloc(d->n, sizeof *d->measured);
    d->conv = calloc(d->n, sizeof *d->conv);
    d->cnn = calloc(d->n, sizeof *d->cnn);
    d->cnn_names = calloc(n_cnns, sizeof *d->cnn_names);
    for (size_t j = 0; j < p; j++)
        snprintf(d->names[j], TC_FIT_NAME_LEN, "f%zu", j);
    for (size_t c = 0; c < n_cnns; c++) {
        char name[16];
        snprintf(name, sizeof name, "cnn%zu", c);
        d->cnn_names[c] = strdup(name);
        double per_sample[TC_FIT_MAX_FEATURES];
        for (size_t j = 0; j < p; j++)
            per_sample[j] = 0.2 + tc_test_uniform();
        for (size_t b = 0; b < 4; b++) {
            size_t i = c * 4 + b;
            double batch = (double)(8u << b);
            d->cnn[i] = c;
            d->x[i * p] = 1;
            for (size_t j = 1; j < p; j++)
                d->x[i * p + j] = per_sample[j] * (j % 2 ? batch : 1.0);
            double resid = 0;
            for (size_t j = 0; j < p; j++)
                resid += beta[j] * d->x[i * p + j];
            d->conv[i] = 3.0 * batch * (0.5 + tc_test_uniform());
            d->measured[i] = (d->conv[i] + resid) * (1 + rel_noise * tc_test_normal());
        }
    }
}

typedef struct {
    const tc_fit_data_t *d;
    size_t folds;
    bool seen[64];
} fold_check_t;

static void s_check_fold(size_t held_out, const bool *train, size_t n, void *ctx)
{
    fold_check_t *fc = ctx;
    fc->folds++;
    fc->seen[held_out] = true;
    for (size_t i = 0; i < n; i++) {
        if (fc->d->cnn[i] == held_out)
            cr_assert(!train[i], "row %zu of held-out CNN %zu is in its training set", i,
                      held_out);
        else
            cr_assert(train[i], "row %zu of CNN %zu is missing from the fold without %zu", i,
                      fc->d->cnn[i], held_out);
    }
}

Test(fit_cv, each_fold_trains_on_every_other_cnn_and_never_the_held_out_one, .timeout = 30)
{
    const double beta[4] = {5, 0.02, 3, 0.001};
    tc_fit_data_t d;
    tc_test_seed(20);
    s_make_data(&d, 7, beta, 4, 0.01);
    fold_check_t fc = {.d = &d};
    tc_fit_spec_t spec = {TC_FIT_OLS, TC_FIT_W_RELATIVE, 0xf};
    double pred[28];
    cr_assert_eq(tc_fit_loco(&d, &spec, NULL, pred, s_check_fold, &fc), 0, "%s", tc_errmsg());
    cr_expect_eq(fc.folds, 7);
    for (size_t c = 0; c < 7; c++)
        cr_expect(fc.seen[c], "CNN %zu was never held out", c);
    for (size_t i = 0; i < d.n; i++)
        cr_expect(isfinite(pred[i]), "row %zu has no held-out prediction", i);

    fold_check_t nested = {.d = &d};
    tc_fit_select_opts_t o;
    tc_fit_select_opts_default(&d, &o);
    o.forms = 1u << TC_FIT_OLS;
    cr_assert_eq(tc_fit_nested_loco(&d, &o, &(tc_fit_held_out_t){.ms = pred}, NULL, s_check_fold, NULL,
                                    &nested), 0, "%s",
                 tc_errmsg());
    cr_expect_eq(nested.folds, 7);
    tc_fit_data_free(&d);
}

/* Whatever the held-out CNN's measurements are, its predictions must not
 * change: they come from the other CNNs only (selection included). */
Test(fit_cv, held_out_measurements_do_not_reach_their_own_prediction, .timeout = 60)
{
    const double beta[4] = {5, 0.02, 3, 0.001};
    tc_fit_data_t d;
    tc_test_seed(21);
    s_make_data(&d, 6, beta, 4, 0.02);
    tc_fit_select_opts_t o;
    tc_fit_select_opts_default(&d, &o);
    tc_fit_spec_t spec = {TC_FIT_ROBUST, TC_FIT_W_NONE, 0xf};
    double loco[24], nested[24], loco2[24], nested2[24];
    cr_assert_eq(tc_fit_loco(&d, &spec, NULL, loco, NULL, NULL), 0, "%s", tc_errmsg());
    cr_assert_eq(tc_fit_nested_loco(&d, &o, &(tc_fit_held_out_t){.ms = nested}, NULL, NULL, NULL, NULL), 0, "%s",
                 tc_errmsg());
    for (size_t c = 0; c < d.n_cnns; c++) {
        double saved[4];
        for (size_t b = 0; b < 4; b++) {
            saved[b] = d.measured[c * 4 + b];
            d.measured[c * 4 + b] *= 7.5 + b; /* wildly wrong */
        }
        cr_assert_eq(tc_fit_loco(&d, &spec, NULL, loco2, NULL, NULL), 0, "%s", tc_errmsg());
        cr_assert_eq(tc_fit_nested_loco(&d, &o, &(tc_fit_held_out_t){.ms = nested2}, NULL, NULL, NULL,
                                        NULL), 0, "%s",
                     tc_errmsg());
        for (size_t b = 0; b < 4; b++) {
            size_t i = c * 4 + b;
            cr_expect_eq(loco2[i], loco[i], "cnn %zu row %zu: loco %g became %g", c, i, loco[i],
                         loco2[i]);
            cr_expect_eq(nested2[i], nested[i], "cnn %zu row %zu: nested %g became %g", c, i,
                         nested[i], nested2[i]);
            d.measured[i] = saved[b];
        }
        /* Other CNNs' predictions do depend on it (the check has teeth). */
        size_t other = ((c + 1) % d.n_cnns) * 4;
        cr_expect_neq(loco2[other], loco[other], "perturbing cnn %zu left cnn %zu unchanged", c,
                      (c + 1) % d.n_cnns);
    }
    tc_fit_data_free(&d);
}

Test(fit_cv, forward_selection_finds_the_true_features, .timeout = 60)
{
    /* Features 0 (constant) and 3 matter; 1, 2 and 4 are noise. Ten CNNs
     * allow three features. */
    const double beta[5] = {20, 0, 0, 4, 0};
    tc_fit_data_t d;
    tc_test_seed(22);
    s_make_data(&d, 10, beta, 5, 0.002);
    tc_fit_select_opts_t o;
    tc_fit_select_opts_default(&d, &o);
    tc_fit_choice_t c;
    cr_assert_eq(tc_fit_select(&d, NULL, &o, &c), 0, "%s", tc_errmsg());
    cr_expect_eq(c.max_features, 3u);
    cr_expect_eq(c.spec.mask, (1u << 0) | (1u << 3), "selected mask 0x%x (%s)", c.spec.mask,
                 c.why);
    cr_expect(c.mape < 1.0, "MAPE %g %% on 0.2 %% noise", c.mape);
    cr_expect(strstr(c.why, "at most 3 features for 10 CNNs") != NULL, "%s", c.why);
    /* Without selection the mask is exactly the candidates. */
    o.select = false;
    o.candidates = 0x3;
    cr_assert_eq(tc_fit_select(&d, NULL, &o, &c), 0, "%s", tc_errmsg());
    cr_expect_eq(c.spec.mask, 0x3u);
    tc_fit_data_free(&d);
}

static double s_honest(tc_fit_data_t *d, const tc_fit_select_opts_t *o, tc_fit_spec_t *folds,
                       double *ms)
{
    cr_assert_eq(tc_fit_nested_loco(d, o, &(tc_fit_held_out_t){.ms = ms}, folds, NULL, NULL,
                                    NULL),
                 0, "%s", tc_errmsg());
    tc_fit_ape_t ape;
    tc_fit_ape(d->measured, ms, NULL, d->n, &ape);
    return ape.mape;
}

/* As many candidates as the defaults (14), the last three zero on every
 * point, as norm.elems, softmax.elems and copy.elems are for CNNs without
 * layer norm, softmax or copies: selection and the nested run choose and
 * predict exactly as without them. */
Test(fit_cv, zero_columns_change_no_choice, .timeout = 120)
{
    const double beta[14] = {20, 0, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
    tc_fit_data_t d;
    tc_test_seed(23);
    s_make_data(&d, 8, beta, 14, 0.01);
    for (size_t i = 0; i < d.n; i++)
        for (size_t j = 11; j < 14; j++)
            d.x[i * d.p + j] = 0;
    tc_fit_select_opts_t o;
    tc_fit_select_opts_default(&d, &o);
    cr_assert_eq(o.candidates, (1u << 14) - 1);
    tc_fit_choice_t all, some;
    cr_assert_eq(tc_fit_select(&d, NULL, &o, &all), 0, "%s", tc_errmsg());
    double ms_all[32], ms_some[32];
    tc_fit_spec_t folds_all[8], folds_some[8];
    double honest_all = s_honest(&d, &o, folds_all, ms_all);
    o.candidates = (1u << 11) - 1;
    cr_assert_eq(tc_fit_select(&d, NULL, &o, &some), 0, "%s", tc_errmsg());
    double honest_some = s_honest(&d, &o, folds_some, ms_some);
    cr_expect_eq(all.spec.mask, some.spec.mask, "0x%x (%s) against 0x%x (%s)", all.spec.mask,
                 all.why, some.spec.mask, some.why);
    cr_expect_eq(all.spec.form, some.spec.form);
    cr_expect_eq(all.spec.weighting, some.spec.weighting);
    cr_expect_eq(all.spec.mask & ~((1u << 11) - 1), 0u, "a zero column chosen: %s", all.why);
    cr_expect_float_eq(all.mape, some.mape, 1e-9);
    for (size_t f = 0; f < 8; f++)
        cr_expect_eq(folds_all[f].mask, folds_some[f].mask, "fold %zu", f);
    cr_expect_float_eq(honest_all, honest_some, 1e-9);
    for (size_t i = 0; i < d.n; i++)
        cr_expect_float_eq(ms_all[i], ms_some[i], 1e-9 * ms_some[i], "row %zu", i);
    tc_fit_data_free(&d);
}

/* Five CNNs and the way a small set goes wrong: the non-conv time is a
 * constant plus a cost per element of f1; f2 costs nothing, but the four
 * CNNs with small f2 happen to run slower the smaller their f2 (the noise
 * of a few CNNs lines up with some candidate), and the fifth has twenty
 * times their f2 (squeezenet's concatenations against the others'). A
 * selection free to use f2 with a negative coefficient, or to spend every
 * candidate on four CNNs, predicts the fifth at a negative non-conv time.
 * Within the budget (two features for five CNNs) and with non-negative
 * coefficients, every fold's model is small, no prediction has a negative
 * non-conv time, and the honest error stays near the noise. */
Test(fit_cv, few_cnns_cannot_make_the_selection_explode, .timeout = 120)
{
    tc_fit_data_t d;
    const double beta[6] = {30, 2, 0, 0, 0, 0};
    tc_test_seed(41);
    s_make_data(&d, 5, beta, 6, 0.0);
    for (size_t c = 0; c < 5; c++) {
        double f2 = c == 4 ? 20.0 : 0.4 + 0.2 * (double)c;
        for (size_t b = 0; b < 4; b++) {
            size_t i = c * 4 + b;
            d.x[i * d.p + 2] = f2;
            double resid = 30 + 2 * d.x[i * d.p + 1];
            /* Slower the smaller f2, for the first four only. */
            double drift = c == 4 ? 0 : 12.0 * (1.0 - f2);
            d.measured[i] = (d.conv[i] + resid + drift) * (1 + 0.02 * tc_test_normal());
        }
    }
    tc_fit_select_opts_t o;
    tc_fit_select_opts_default(&d, &o);
    /* An unconstrained least-squares fit of the first four with f2 takes
     * the drift for a negative cost of f2 and predicts the fifth negative. */
    tc_fit_spec_t ols = {TC_FIT_OLS, TC_FIT_W_NONE, 0x7};
    bool train[20];
    for (size_t i = 0; i < 20; i++)
        train[i] = d.cnn[i] != 4;
    tc_fit_solution_t sol;
    cr_assert_eq(tc_fit_spec_solve(&d, &ols, train, &sol), 0, "%s", tc_errmsg());
    cr_assert_lt(tc_fit_spec_predict(&d, &ols, &sol, 16) - d.conv[16], 0,
                 "the data do not trap an unconstrained fit");
    tc_fit_choice_t c;
    cr_assert_eq(tc_fit_select(&d, NULL, &o, &c), 0, "%s", tc_errmsg());
    cr_expect_eq(c.max_features, 2u);
    cr_expect_leq(__builtin_popcount(c.spec.mask), 2, "%s", c.why);
    double ms[20];
    tc_fit_spec_t folds[5];
    double honest = s_honest(&d, &o, folds, ms);
    for (size_t f = 0; f < 5; f++)
        cr_expect_leq(__builtin_popcount(folds[f].mask), 2, "fold %zu: mask 0x%x", f,
                      folds[f].mask);
    for (size_t i = 0; i < d.n; i++)
        cr_expect_geq(ms[i] - d.conv[i], 0, "row %zu: a negative non-conv time", i);
    cr_expect(honest < 40, "honest MAPE %.1f %%", honest);
    tc_fit_data_free(&d);
}

/* The non-conv time falls with a feature (a negative effect no cost can
 * have): an unconstrained least-squares fit would use it with a negative
 * coefficient and predict a negative non-conv time beyond the data. No
 * chosen model has a negative coefficient, so no prediction is negative,
 * however large the features of a CNN to predict. */
Test(fit_cv, no_chosen_model_has_a_negative_coefficient, .timeout = 120)
{
    const double beta[3] = {40, 3, -2.5};
    tc_fit_data_t d;
    tc_test_seed(43);
    s_make_data(&d, 12, beta, 3, 0.01);
    tc_fit_select_opts_t o;
    tc_fit_select_opts_default(&d, &o);
    tc_fit_choice_t c;
    cr_assert_eq(tc_fit_select(&d, NULL, &o, &c), 0, "%s", tc_errmsg());
    tc_fit_solution_t sol;
    cr_assert_eq(tc_fit_spec_solve(&d, &c.spec, NULL, &sol), 0, "%s", tc_errmsg());
    for (size_t a = 0; a < (size_t)__builtin_popcount(c.spec.mask); a++)
        cr_expect_geq(sol.coef[a], -1e-9, "coefficient %zu is %g (%s)", a, sol.coef[a], c.why);
    /* The unconstrained fit of the same features would have one. */
    tc_fit_spec_t ols = {TC_FIT_OLS, TC_FIT_W_NONE, 0x7};
    cr_assert_eq(tc_fit_spec_solve(&d, &ols, NULL, &sol), 0, "%s", tc_errmsg());
    cr_expect_lt(sol.coef[2], 0, "the data do have a negative effect (%g)", sol.coef[2]);
    cr_expect(strstr(c.why, "left out for a negative coefficient") != NULL, "%s", c.why);
    tc_fit_data_free(&d);
}

/* Two features that both help, the second by less than the first's error
 * spread across CNNs: the one-standard-error rule keeps the smaller model
 * and says why. */
Test(fit_cv, one_standard_error_rule_prefers_the_smaller_model, .timeout = 120)
{
    const double beta[4] = {30, 1.5, 0, 0.02};
    tc_fit_data_t d;
    tc_test_seed(47);
    s_make_data(&d, 12, beta, 4, 0.06);
    tc_fit_select_opts_t o;
    tc_fit_select_opts_default(&d, &o);
    o.forms = 1u << TC_FIT_NNLS;
    o.weightings = 1u << TC_FIT_W_RELATIVE;
    tc_fit_choice_t c;
    cr_assert_eq(tc_fit_select(&d, NULL, &o, &c), 0, "%s", tc_errmsg());
    /* Without the rule (a budget of one with the rule off is the same as
     * forcing the smallest): the smallest model kept is within its SE. */
    cr_expect(isfinite(c.se) && c.se > 0, "se %g", c.se);
    if (strstr(c.why, "the simplest within one standard error")) {
        cr_expect_lt(__builtin_popcount(c.spec.mask), 3, "%s", c.why);
    } else {
        cr_expect(strstr(c.why, "the lowest leave-one-CNN-out MAPE") != NULL, "%s", c.why);
    }
    tc_fit_data_free(&d);
}

Test(fit_cv, too_few_cnns_take_the_simple_form_or_are_bad_input, .timeout = 10)
{
    const double beta[2] = {5, 1};
    tc_fit_data_t d;
    s_make_data(&d, 2, beta, 2, 0);
    tc_fit_select_opts_t o;
    tc_fit_select_opts_default(&d, &o);
    tc_fit_choice_t c;
    double pred[8];
    /* No simple form to fall back on: the error says what selection needs. */
    cr_expect_eq(tc_fit_select(&d, NULL, &o, &c), TC_EINVAL);
    cr_expect(strstr(tc_errmsg(), "at least 3 CNNs; there are 2") != NULL, "%s", tc_errmsg());
    /* With one: two CNNs are enough for it, and it says so. */
    o.simple = 0x3;
    cr_assert_eq(tc_fit_select(&d, NULL, &o, &c), 0, "%s", tc_errmsg());
    cr_expect(c.simple);
    cr_expect_eq(c.spec.form, TC_FIT_NNLS);
    cr_expect_eq(c.spec.mask, 0x3u);
    cr_expect(strstr(c.why, "the simple form nnls relative [f0, f1]: choosing a model by "
                            "leave-one-CNN-out needs traces of at least 3 CNNs") != NULL,
              "%s", c.why);
    cr_expect_eq(tc_fit_nested_loco(&d, &o, &(tc_fit_held_out_t){.ms = pred}, NULL, NULL, NULL, NULL), TC_EINVAL);
    tc_fit_data_free(&d);
    /* One CNN: even the simple form cannot be had. */
    s_make_data(&d, 1, beta, 2, 0);
    cr_expect_eq(tc_fit_select(&d, NULL, &o, &c), TC_EINVAL);
    cr_expect(strstr(tc_errmsg(), "needs traces of at least 3 CNNs; there is 1, and even the "
                                  "simplest model needs traces of 2 CNNs") != NULL,
              "%s", tc_errmsg());
    tc_fit_data_free(&d);
}

Test(fit_cv, ape_statistics, .timeout = 10)
{
    const double measured[5] = {100, 200, 50, 10, 1};
    const double pred[5] = {110, 190, 50, NAN, 1.5};
    tc_fit_ape_t a;
    tc_fit_ape(measured, pred, NULL, 5, &a);
    cr_expect_eq(a.n, 4u);
    cr_expect(fabs(a.mape - (10 + 5 + 0 + 50) / 4.0) < 1e-12, "mape %g", a.mape);
    cr_expect(fabs(a.median - 7.5) < 1e-12, "median %g", a.median);
    cr_expect(fabs(a.max - 50) < 1e-12, "max %g", a.max);
}

/* ---- predictions from a fit -------------------------------------------------- */

Test(fit_model, predict_combines_coefficient_and_noise_variance, .timeout = 10)
{
    tc_fit_t fit = {0};
    fit.p = 2;
    snprintf(fit.features[0], TC_FIT_NAME_LEN, "total.one");
    snprintf(fit.features[1], TC_FIT_NAME_LEN, "bn.elems");
    fit.coef[0] = 4;
    fit.coef[1] = 1e-6;
    fit.cov[0] = 0.25;
    fit.cov[1] = fit.cov[2] = 1e-7;
    fit.cov[3] = 1e-14;
    fit.rse = 0.5;
    fit.weighting = TC_FIT_W_NONE;
    const tc_layer_summary_t layers[] = {{TC_OPC_BN, 128, 0, 500000, 500000}};
    tc_features_t f;
    tc_features_from_layers(layers, 1, 2, &f); /* bn.elems = 2e6 */
    double mean, var;
    cr_assert_eq(tc_fit_predict(&fit, &f, 30, &mean, &var), 0, "%s", tc_errmsg());
    cr_expect(fabs(mean - 6) < 1e-12, "mean %g", mean);
    double xcx = 0.25 + 2 * 2e6 * 1e-7 + 4e12 * 1e-14;
    cr_expect(fabs(var - (xcx + 0.25)) < 1e-12, "var %g", var);
    fit.weighting = TC_FIT_W_RELATIVE;
    fit.rse = 0.02;
    cr_assert_eq(tc_fit_predict(&fit, &f, 30, &mean, &var), 0, "%s", tc_errmsg());
    cr_expect(fabs(var - (xcx + 0.02 * 0.02 * 36 * 36)) < 1e-9, "relative var %g", var);
    snprintf(fit.features[1], TC_FIT_NAME_LEN, "nope.elems");
    cr_expect_eq(tc_fit_predict(&fit, &f, 30, &mean, &var), TC_EINVAL);
}

Test(fit_interval, conformal_ranks_and_too_few_points, .timeout = 10)
{
    cr_expect_eq(tc_fit_interval_min_points(0.05), 39);
    /* 79 ratios 0.80, 0.805, ..., 1.19: ranks floor(80 * 0.025) = 2 and
     * ceil(80 * 0.975) = 78. */
    double measured[79], pred[79];
    for (int i = 0; i < 79; i++) {
        pred[i] = 10.0;
        measured[i] = 10.0 * (0.80 + 0.005 * i);
    }
    double lo, hi;
    cr_assert_eq(tc_fit_interval(measured, pred, NULL, 79, 0.05, &lo, &hi), 0);
    cr_expect(fabs(lo - 0.805) < 1e-12, "lo %g", lo);
    cr_expect(fabs(hi - 1.185) < 1e-12, "hi %g", hi);
    /* Rows outside the mask do not count: 38 points are too few. */
    bool rows[79] = {0};
    for (int i = 0; i < 38; i++)
        rows[i] = true;
    cr_assert_eq(tc_fit_interval(measured, pred, rows, 79, 0.05, &lo, &hi), 0);
    cr_expect(isnan(lo) && isnan(hi), "38 points gave %g..%g", lo, hi);
    /* Every prediction too high: the interval still contains the prediction. */
    for (int i = 0; i < 79; i++)
        measured[i] = 10.0 * (0.5 + 0.001 * i);
    cr_assert_eq(tc_fit_interval(measured, pred, NULL, 79, 0.05, &lo, &hi), 0);
    cr_expect(hi == 1.0 && lo < 0.6, "%g..%g", lo, hi);
    cr_expect_eq(tc_fit_interval(measured, pred, NULL, 79, 1.5, &lo, &hi), TC_EINVAL);
}

/* On data whose error is what the intervals assume (exchangeable CNNs), the
 * nested intervals cover about 95 % of held-out truths; each CNN's interval
 * is calibrated on the other CNNs' held-out errors, so a CNN measured far
 * off does not widen its own interval to cover itself. */
Test(fit_interval, nested_intervals_cover_and_ignore_the_held_out_truth, .timeout = 120)
{
    const double beta[4] = {5, 0.02, 3, 0.001};
    tc_fit_data_t d;
    tc_test_seed(33);
    s_make_data(&d, 48, beta, 4, 0.05);
    tc_fit_select_opts_t o;
    tc_fit_select_opts_default(&d, &o);
    o.forms = 1u << TC_FIT_OLS;
    o.weightings = 1u << TC_FIT_W_RELATIVE;
    o.select = false;
    double ms[192], lo[192], hi[192];
    tc_fit_held_out_t held = {ms, lo, hi};
    cr_assert_eq(tc_fit_nested_loco(&d, &o, &held, NULL, NULL, NULL, NULL), 0, "%s",
                 tc_errmsg());
    size_t covered = 0;
    for (size_t i = 0; i < d.n; i++) {
        cr_assert(isfinite(lo[i]) && isfinite(hi[i]) && lo[i] <= ms[i] && ms[i] <= hi[i],
                  "row %zu: %g in %g..%g", i, ms[i], lo[i], hi[i]);
        covered += d.measured[i] >= lo[i] && d.measured[i] <= hi[i];
    }
    double share = (double)covered / (double)d.n;
    cr_expect(share >= 0.88 && share <= 0.995, "coverage %.3f", share);
    /* CNN 5 measured 3 to 6 times slower than it is: its prediction stays,
     * its interval is what the other CNNs' held-out errors give, and its
     * far-off truth stays outside. */
    double ms2[192], lo2[192], hi2[192];
    for (size_t b = 0; b < 4; b++)
        d.measured[5 * 4 + b] *= 3.0 + b;
    tc_fit_held_out_t held2 = {ms2, lo2, hi2};
    cr_assert_eq(tc_fit_nested_loco(&d, &o, &held2, NULL, NULL, NULL, NULL), 0, "%s",
                 tc_errmsg());
    bool others[192];
    for (size_t i = 0; i < d.n; i++)
        others[i] = d.cnn[i] != 5;
    double flo, fhi;
    cr_assert_eq(tc_fit_interval(d.measured, ms2, others, d.n, TC_FIT_ALPHA, &flo, &fhi), 0);
    for (size_t b = 0; b < 4; b++) {
        size_t i = 5 * 4 + b;
        cr_expect(ms2[i] == ms[i], "row %zu: the prediction moved with its own truth", i);
        cr_expect(fabs(lo2[i] - ms2[i] * flo) < 1e-9 * ms2[i] &&
                      fabs(hi2[i] - ms2[i] * fhi) < 1e-9 * ms2[i],
                  "row %zu: %g..%g, the other CNNs give %g..%g", i, lo2[i], hi2[i],
                  ms2[i] * flo, ms2[i] * fhi);
        cr_expect(d.measured[i] > hi2[i], "row %zu: its own truth %g widened its interval to %g",
                  i, d.measured[i], hi2[i]);
    }
    tc_fit_data_free(&d);
}

/* Two devices whose errors on each CNN move together: the interval of the
 * ratio of their times is much narrower than either device's own. */
Test(fit_interval, paired_ratio_interval_cancels_shared_error, .timeout = 10)
{
    double ra[79], rb[79], pa[79], pb[79];
    tc_test_seed(77);
    for (int i = 0; i < 79; i++) {
        double shared = 0.15 * tc_test_normal(); /* what both fits miss about the CNN */
        ra[i] = exp(shared + 0.01 * tc_test_normal());
        rb[i] = exp(shared + 0.01 * tc_test_normal());
        pa[i] = pb[i] = 1.0; /* as measured / predicted with predictions of 1 */
    }
    double lo_a, hi_a, qlo, qhi;
    size_t pairs;
    cr_assert_eq(tc_fit_interval(ra, pa, NULL, 79, 0.05, &lo_a, &hi_a), 0);
    cr_assert_eq(tc_predict_ratio_interval(ra, rb, 79, &qlo, &qhi, &pairs), 0);
    cr_expect_eq(pairs, (size_t)79);
    cr_expect(qlo < 1 && qhi > 1, "%g..%g", qlo, qhi);
    cr_expect((qhi - qlo) < 0.25 * (hi_a - lo_a), "paired %g..%g against one device %g..%g",
              qlo, qhi, lo_a, hi_a);
    (void)pb;
    cr_assert_eq(tc_predict_ratio_interval(ra, rb, 38, &qlo, &qhi, &pairs), 0);
    cr_expect(isnan(qlo) && isnan(qhi) && pairs == 38);
    ra[3] = NAN;
    rb[5] = 0;
    cr_assert_eq(tc_predict_ratio_interval(ra, rb, 79, &qlo, &qhi, &pairs), 0);
    cr_expect_eq(pairs, (size_t)79 - 2, "unusable pairs are skipped");
}

/* `--help` names the default candidates the fit really uses. */
Test(fit_features, help_lists_the_default_candidates, .timeout = 30)
{
    char bin[1024], cmd[1200], out[16384];
    tc_test_binary("aggregator", bin, sizeof bin);
    snprintf(cmd, sizeof cmd, "%s fit --help 2>&1", bin);
    cr_assert_eq(tc_test_run(cmd, out, sizeof out), 0, "%s", out);
    const char *line = strstr(out, "--candidates");
    cr_assert_not_null(line, "%s", out);
    const char *end = strstr(line, "--features");
    cr_assert_not_null(end);
    const char *const *names = NULL;
    size_t n = tc_fit_default_candidates(&names);
    char help[4096];
    snprintf(help, sizeof help, "%.*s", (int)(end - line), line);
    for (size_t i = 0; i < n; i++)
        cr_expect(strstr(help, names[i]) != NULL, "--help does not name %s: %s", names[i], help);
    cr_expect(strstr(help, "memory.elems") == NULL, "memory.elems is not a default: %s", help);
}
