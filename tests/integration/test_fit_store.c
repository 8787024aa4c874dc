/* aggregator fit and validate against a real PostgreSQL: the synthetic
 * world of tc_test_synth.h stored through tc_store_put, the commands run as
 * a user would, their numbers checked against a hand computation, and
 * repeated measurements reduced by each statistic. Bad input is tested in
 * test_fit_store_bad.c. */
#include "fit.h"
#include "store.h"
#include "store_fit.h"
#include "tc_error.h"
#include "tc_test.h"
#include "tc_test_synth.h"
#include "tc_wire.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the hand computation ------------------------------------------------------ */

typedef struct {
    double b0, b1;        /* residual = b0 + b1 * bn.elems */
    double cov[4];        /* sigma^2 (X'X)^-1 */
    double rse;
} ols2_t;

#define ALL_CNNS ((1u << TC_SYNTH_N_CNNS) - 1)

/* OLS of the residual on (1, bn.elems) over points of the CNNs in `set` (a
 * bit per CNN) other than `skip` (-1: none), by the 2 x 2 normal equations. */
static ols2_t s_ols2_of(int skip, unsigned set)
{
    double s11 = 0, s12 = 0, s22 = 0, t1 = 0, t2 = 0;
    int n = 0;
    for (int k = 0; k < TC_SYNTH_N_CNNS; k++) {
        if (k == skip || !(set & 1u << k))
            continue;
        for (int bi = 0; bi < TC_SYNTH_N_BATCHES; bi++) {
            double x = tc_synth_bn_elems(k, tc_synth_batches[bi]);
            double r = tc_synth_truth(k, bi) - tc_synth_conv_sum(k, tc_synth_batches[bi]);
            s11 += 1;
            s12 += x;
            s22 += x * x;
            t1 += r;
            t2 += x * r;
            n++;
        }
    }
    double det = s11 * s22 - s12 * s12;
    ols2_t o;
    o.b0 = (s22 * t1 - s12 * t2) / det;
    o.b1 = (s11 * t2 - s12 * t1) / det;
    double rss = 0;
    for (int k = 0; k < TC_SYNTH_N_CNNS; k++) {
        if (k == skip || !(set & 1u << k))
            continue;
        for (int bi = 0; bi < TC_SYNTH_N_BATCHES; bi++) {
            double x = tc_synth_bn_elems(k, tc_synth_batches[bi]);
            double r = tc_synth_truth(k, bi) - tc_synth_conv_sum(k, tc_synth_batches[bi]);
            double e = r - o.b0 - o.b1 * x;
            rss += e * e;
        }
    }
    double sigma2 = rss / (n - 2);
    o.rse = sqrt(sigma2);
    o.cov[0] = sigma2 * s22 / det;
    o.cov[1] = o.cov[2] = -sigma2 * s12 / det;
    o.cov[3] = sigma2 * s11 / det;
    return o;
}

static ols2_t s_ols2(int skip)
{
    return s_ols2_of(skip, ALL_CNNS);
}

static double s_held_out_ape(int k, int bi, unsigned set)
{
    ols2_t o = s_ols2_of(k, set);
    unsigned b = tc_synth_batches[bi];
    double pred = tc_synth_conv_sum(k, b) + o.b0 + o.b1 * tc_synth_bn_elems(k, b);
    double m = tc_synth_truth(k, bi);
    return 100.0 * fabs(pred - m) / m;
}

static int s_cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* MAPE, median and max over CNN `only` (-1: every CNN of `set`), each held
 * out of a fit on the others of `set`. */
static void s_hand_stats_of(int only, unsigned set, double *mape, double *median, double *max)
{
    double ape[TC_SYNTH_N_CNNS * TC_SYNTH_N_BATCHES];
    int n = 0;
    for (int k = 0; k < TC_SYNTH_N_CNNS; k++) {
        if ((only >= 0 && k != only) || !(set & 1u << k))
            continue;
        for (int bi = 0; bi < TC_SYNTH_N_BATCHES; bi++)
            ape[n++] = s_held_out_ape(k, bi, set);
    }
    qsort(ape, (size_t)n, sizeof *ape, s_cmp);
    double sum = 0;
    for (int i = 0; i < n; i++)
        sum += ape[i];
    *mape = sum / n;
    *median = n % 2 ? ape[n / 2] : 0.5 * (ape[n / 2 - 1] + ape[n / 2]);
    *max = ape[n - 1];
}

static void s_hand_stats(int only, double *mape, double *median, double *max)
{
    s_hand_stats_of(only, ALL_CNNS, mape, median, max);
}


#define FIXED "--features total.one,bn.elems --forms ols --weightings none"

/* The CSV row of `cnn` ("" for the device row), split into fields. */
static bool s_csv_row(char *csv, const char *cnn, char **fields, int max)
{
    for (char *line = strtok(csv, "\n"); line; line = strtok(NULL, "\n")) {
        int n = 0;
        char *p = line;
        fields[n++] = p;
        while (*p && n < max) {
            if (*p == '"') { /* a quoted last field */
                break;
            }
            if (*p == ',') {
                *p = '\0';
                fields[n++] = p + 1;
            }
            p++;
        }
        if (n >= 16 && !strcmp(fields[0], "synth-a") && !strcmp(fields[5], cnn))
            return true;
    }
    return false;
}

static void s_expect_row(const char *csv_text, const char *cnn, int k)
{
    char csv[65536];
    snprintf(csv, sizeof csv, "%s", csv_text);
    char *f[20];
    cr_assert(s_csv_row(csv, cnn, f, 20), "no CSV row for '%s' in:\n%s", cnn, csv_text);
    double mape, median, max;
    s_hand_stats(k, &mape, &median, &max);
    cr_expect(fabs(atof(f[9]) - mape) < 2e-4, "%s MAPE %s, hand %.6f", cnn, f[9], mape);
    cr_expect(fabs(atof(f[10]) - median) < 2e-4, "%s median %s, hand %.6f", cnn, f[10], median);
    cr_expect(fabs(atof(f[11]) - max) < 2e-4, "%s max %s, hand %.6f", cnn, f[11], max);
    cr_expect_eq(atoi(f[6]), k < 0 ? TC_SYNTH_N_CNNS * TC_SYNTH_N_BATCHES : TC_SYNTH_N_BATCHES,
                 "%s points %s", cnn, f[6]);
}

Test(fit_store, fit_and_validate_match_the_hand_computation, .timeout = 300)
{
    tc_store_t *st = tc_synth_fresh_db("fit_hand");
    char out[65536];
    /* An empty store is bad input. */
    cr_expect_eq(tc_synth_aggregator("fit", out, sizeof out), 2, "%s", out);
    cr_expect(strstr(out, "no traces are stored") != NULL, "%s", out);

    tc_synth_populate(st);

    /* validate, CSV, fixed model: every number against the hand computation. */
    int rc = tc_synth_aggregator("validate " FIXED " --format csv", out, sizeof out);
    cr_assert_eq(rc, 0, "validate failed:\n%s", out);
    s_expect_row(out, "", -1);
    for (int k = 0; k < TC_SYNTH_N_CNNS; k++) {
        char name[16];
        snprintf(name, sizeof name, "cnn%d", k);
        s_expect_row(out, name, k);
    }
    /* Exclusions and variability. */
    char csv[65536], *f[20];
    snprintf(csv, sizeof csv, "%s", out);
    cr_assert(s_csv_row(csv, "", f, 20));
    cr_expect_eq(atoi(f[7]), 1, "device excluded_oom %s", f[7]);
    cr_expect_eq(atoi(f[8]), 1, "device excluded_failed %s", f[8]);
    double mean_spread = 0;
    for (int k = 0; k < TC_SYNTH_N_CNNS; k++)
        mean_spread += 100 * tc_synth_spread(k) * TC_SYNTH_N_BATCHES;
    mean_spread /= TC_SYNTH_N_CNNS * TC_SYNTH_N_BATCHES;
    cr_expect(fabs(atof(f[13]) - mean_spread) < 1e-3, "spread_within %s, hand %g", f[13],
              mean_spread);
    double m = tc_synth_measured(TC_SYNTH_REPEAT_K, TC_SYNTH_REPEAT_BI);
    cr_expect(fabs(atof(f[14]) - 100.0 / m) < 1e-3, "spread_between %s, hand %g", f[14],
              100.0 / m);
    snprintf(csv, sizeof csv, "%s", out);
    cr_assert(s_csv_row(csv, "cnn0", f, 20));
    cr_expect_eq(atoi(f[7]), 1, "cnn0 excluded_oom %s", f[7]);
    cr_expect_eq(atoi(f[8]), 0);
    snprintf(csv, sizeof csv, "%s", out);
    cr_assert(s_csv_row(csv, "cnn1", f, 20));
    cr_expect_eq(atoi(f[8]), 1, "cnn1 excluded_failed %s", f[8]);
    /* conv-only MAPE of the device line */
    double co = 0;
    for (int k = 0; k < TC_SYNTH_N_CNNS; k++)
        for (int bi = 0; bi < TC_SYNTH_N_BATCHES; bi++)
            co += 100 * (tc_synth_truth(k, bi) - tc_synth_conv_sum(k, tc_synth_batches[bi])) /
                  tc_synth_truth(k, bi);
    co /= TC_SYNTH_N_CNNS * TC_SYNTH_N_BATCHES;
    snprintf(csv, sizeof csv, "%s", out);
    cr_assert(s_csv_row(csv, "", f, 20));
    cr_expect(fabs(atof(f[12]) - co) < 2e-4, "conv-only %s, hand %g", f[12], co);

    /* fit with the same fixed model: stored coefficients, covariance, data range. */
    rc = tc_synth_aggregator("fit " FIXED, out, sizeof out);
    cr_assert_eq(rc, 0, "fit failed:\n%s", out);
    cr_expect(strstr(out, "stored as fit") != NULL, "%s", out);
    tc_fit_t fit;
    cr_assert_eq(tc_store_fit_latest(st, "synth-a", NULL, NULL, NULL, NULL, &fit), 0, "%s",
                 tc_errmsg());
    ols2_t o = s_ols2(-1);
    cr_assert_eq(fit.p, 2u);
    cr_expect_str_eq(fit.features[0], "total.one");
    cr_expect_str_eq(fit.features[1], "bn.elems");
    cr_expect_eq(fit.form, TC_FIT_OLS);
    cr_expect_eq(fit.weighting, TC_FIT_W_NONE);
    cr_expect(fabs(fit.coef[0] - o.b0) < 1e-8 * fabs(o.b0), "b0 %.12g, hand %.12g", fit.coef[0],
              o.b0);
    cr_expect(fabs(fit.coef[1] - o.b1) < 1e-8 * fabs(o.b1), "b1 %.12g, hand %.12g", fit.coef[1],
              o.b1);
    for (int i = 0; i < 4; i++)
        cr_expect(fabs(fit.cov[i] - o.cov[i]) < 1e-6 * sqrt(fabs(o.cov[0] * o.cov[3])) ||
                      fabs(fit.cov[i] - o.cov[i]) < 1e-6 * fabs(o.cov[i]),
                  "cov[%d] %.12g, hand %.12g", i, fit.cov[i], o.cov[i]);
    cr_expect(fabs(fit.rse - o.rse) < 1e-8 * o.rse, "rse %g, hand %g", fit.rse, o.rse);
    cr_expect_eq(fit.n_points, (size_t)(TC_SYNTH_N_CNNS * TC_SYNTH_N_BATCHES));
    cr_expect_eq(fit.n_cnns, (size_t)TC_SYNTH_N_CNNS);
    cr_expect_eq(fit.batch_min, 4u);
    cr_expect_eq(fit.batch_max, 16u);
    cr_expect_eq(fit.excluded_oom, 1u);
    cr_expect_eq(fit.excluded_failed, 1u);
    double mape, median, max;
    s_hand_stats(-1, &mape, &median, &max);
    cr_expect(fabs(fit.cv_mape - mape) < 1e-9, "cv_mape %.9g, hand %.9g", fit.cv_mape, mape);
    cr_expect(fabs(fit.cv_max_ape - max) < 1e-9, "cv_max %.9g, hand %.9g", fit.cv_max_ape, max);
    cr_expect_str_eq(fit.conv_policy, "heuristic");
    cr_expect_str_eq(fit.policy, "");
    char v[256];
    cr_assert_eq(tc_store_exec(st,
                               "SELECT array_to_string(models, ',') || ' ' || "
                               "array_to_string(batches, ',') || ' ' || "
                               "(SELECT count(*) FROM fit_points p WHERE p.fit_id = f.fit_id) "
                               "FROM latest_fit f WHERE device = 'synth-a'",
                               v, sizeof v),
                 0, "%s", tc_errmsg());
    cr_expect_str_eq(v, "test:cnn0@32,test:cnn1@32,test:cnn2@32,test:cnn3@32,test:cnn4@32 "
                        "4,8,16 15");

    /* The stored fit predicts a point as stored (what predict will do). */
    tc_fit_t again;
    cr_assert_eq(tc_store_fit_get(st, fit.fit_id, &again), 0, "%s", tc_errmsg());
    tc_fit_group_t *groups = NULL;
    size_t n_groups = 0;
    char *dev[] = {"synth-a"};
    cr_assert_eq(tc_store_fit_groups(st, dev, 1, TC_FIT_STAT_MEDIAN, false, &groups, &n_groups), 0, "%s", tc_errmsg());
    cr_assert_eq(n_groups, 1u);
    cr_assert_eq(groups[0].n_points, (size_t)(TC_SYNTH_N_CNNS * TC_SYNTH_N_BATCHES));
    for (size_t i = 0; i < groups[0].n_points; i++) {
        const tc_fit_point_t *pt = &groups[0].points[i];
        int k = pt->model_id[8] - '0', bi = pt->batch == 4 ? 0 : pt->batch == 8 ? 1 : 2;
        cr_expect(fabs(pt->conv_ms - tc_synth_conv_sum(k, pt->batch)) < 1e-9 * pt->conv_ms,
                  "%s b%u: conv sum %.12g, hand %.12g", pt->model_id, pt->batch, pt->conv_ms,
                  tc_synth_conv_sum(k, pt->batch));
        cr_expect(fabs(pt->measured_ms - tc_synth_measured(k, bi)) < 1e-9 * pt->measured_ms,
                  "%s b%u: measured %.12g, hand %.12g", pt->model_id, pt->batch, pt->measured_ms,
                  tc_synth_measured(k, bi));
        double nonconv, var;
        cr_assert_eq(tc_fit_predict(&again, &pt->features, pt->conv_ms, &nonconv, &var), 0, "%s",
                     tc_errmsg());
        double hand = o.b0 + o.b1 * tc_synth_bn_elems(k, pt->batch);
        cr_expect(fabs(nonconv - hand) < 1e-7 * fabs(hand), "%s b%u: predicted %.10g, hand %.10g",
                  pt->model_id, pt->batch, nonconv, hand);
        double x = tc_synth_bn_elems(k, pt->batch);
        double hvar = o.cov[0] + 2 * x * o.cov[1] + x * x * o.cov[3] + o.rse * o.rse;
        cr_expect(fabs(var - hvar) < 1e-6 * hvar, "variance %.10g, hand %.10g", var, hvar);
    }
    tc_fit_groups_free(&groups, n_groups);

    /* The default selection runs end to end and stores its choice. */
    rc = tc_synth_aggregator("fit --device synth-a", out, sizeof out);
    cr_assert_eq(rc, 0, "default fit failed:\n%s", out);
    rc = tc_synth_aggregator("validate --device synth-a --format json", out, sizeof out);
    cr_assert_eq(rc, 0, "default validate failed:\n%s", out);
    cr_expect(strstr(out, "\"per_cnn\"") && strstr(out, "\"cnn\": \"cnn4\""), "%s", out);
    rc = tc_synth_aggregator("validate --device synth-a", out, sizeof out);
    cr_assert_eq(rc, 0, "%s", out);
    cr_expect(strstr(out, "leave-one-CNN-out") != NULL, "%s", out);
    tc_store_destroy(&st);
}

/* Repeated measurements become one time by the fit's statistic, the same
 * on both sides: three rounds of conv benchmarks (scaled 1, 2, 4, within
 * the hour, after a day-old stale one) and two traces of one point. */
Test(fit_store, statistics_of_repeated_measurements, .timeout = 300)
{
    tc_store_t *st = tc_synth_fresh_db("fit_stats");
    tc_synth_populate(st); /* stale x50 a day ago, then x1 now */
    int64_t now = tc_now_us();
    tc_synth_put_convs(st, "synth-a", TC_SYNTH_N_CNNS, tc_synth_batches, TC_SYNTH_N_BATCHES,
                       now - 600 * 1000000LL, 2.0);
    tc_synth_put_convs(st, "synth-a", TC_SYNTH_N_CNNS, tc_synth_batches, TC_SYNTH_N_BATCHES,
                       now - 1200 * 1000000LL, 4.0);
    char *dev[] = {"synth-a"};
    /* Over (1, 2, 4): geometric mean 2, median 2, p10 1.2, min 1. The
     * repeated point's traces are m - 0.5 and m + 0.5: their geometric mean
     * is tc_synth_truth, the other statistics m + trace_offset. */
    const struct {
        tc_fit_stat_t stat;
        double conv_factor;
        double trace_offset;
    } cases[] = {{TC_FIT_STAT_GEOMEAN, 2.0, 0.0},
                 {TC_FIT_STAT_MEDIAN, 2.0, 0.0},
                 {TC_FIT_STAT_P10, 1.2, -0.4},
                 {TC_FIT_STAT_MIN, 1.0, -0.5}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        tc_fit_group_t *groups = NULL;
        size_t n_groups = 0;
        cr_assert_eq(tc_store_fit_groups(st, dev, 1, cases[c].stat, false, &groups, &n_groups), 0,
                     "%s", tc_errmsg());
        cr_assert_eq(groups[0].stat, cases[c].stat);
        for (size_t i = 0; i < groups[0].n_points; i++) {
            const tc_fit_point_t *pt = &groups[0].points[i];
            int k = pt->model_id[8] - '0', bi = pt->batch == 4 ? 0 : pt->batch == 8 ? 1 : 2;
            double conv = cases[c].conv_factor * tc_synth_conv_sum(k, pt->batch);
            cr_expect(fabs(pt->conv_ms - conv) < 1e-9 * conv, "%s: %s b%u conv %.12g, want %.12g",
                      tc_fit_stat_name(cases[c].stat), pt->model_id, pt->batch, pt->conv_ms,
                      conv);
            double m = cases[c].stat == TC_FIT_STAT_GEOMEAN ? tc_synth_truth(k, bi)
                       : k == TC_SYNTH_REPEAT_K && bi == TC_SYNTH_REPEAT_BI
                           ? tc_synth_measured(k, bi) + cases[c].trace_offset
                           : tc_synth_measured(k, bi);
            cr_expect(fabs(pt->measured_ms - m) < 1e-9 * m, "%s: %s b%u measured %.12g, want %.12g",
                      tc_fit_stat_name(cases[c].stat), pt->model_id, pt->batch, pt->measured_ms,
                      m);
        }
        tc_fit_groups_free(&groups, n_groups);
    }
    /* A fit remembers its statistic, and predict looks convs up by it. */
    char out[65536];
    int rc = tc_synth_aggregator("fit --device synth-a --stat min " FIXED, out, sizeof out);
    cr_assert_eq(rc, 0, "%s", out);
    tc_fit_t fit;
    cr_assert_eq(tc_store_fit_latest(st, "synth-a", NULL, NULL, NULL, NULL, &fit), 0, "%s",
                 tc_errmsg());
    cr_expect_eq(fit.stat, TC_FIT_STAT_MIN);
    rc = tc_synth_aggregator("validate --stat nosuch", out, sizeof out);
    cr_expect_eq(rc, 2, "%s", out);
    cr_expect(strstr(out, "--stat") && strstr(out, "geomean, median, p10 or min"), "%s", out);
    tc_store_destroy(&st);
}

/* The device line's last two CSV fields (after the quoted model): the noise
 * floor and the MAPE's standard error. */
static void s_device_tail(const char *csv, double *floor_pct, double *se)
{
    const char *line = csv;
    for (; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
        if (!strncmp(line, "synth-a,", 8) && strstr(line, ",device,,") &&
            strstr(line, ",device,,") < strchr(line, '\n'))
            break;
    }
    cr_assert(line && *line, "no device row in:\n%s", csv);
    char buf[4096];
    size_t len = strcspn(line, "\n");
    snprintf(buf, sizeof buf, "%.*s", (int)len, line);
    char *last = strrchr(buf, ',');
    cr_assert_not_null(last);
    *last = '\0';
    char *before = strrchr(buf, ',');
    cr_assert_not_null(before);
    *floor_pct = *(before + 1) ? atof(before + 1) : NAN;
    *se = *(last + 1) ? atof(last + 1) : NAN;
}

/* Next to the error, what the data allow: the noise floor from two halves of
 * each point's traces (one point is traced twice, m - 0.5 and m + 0.5 ms: its
 * truth, their geometric mean g = sqrt(m^2 - 0.25), is off by about half their
 * difference, 1 / (2 g)), and the MAPE's standard error across CNNs (points of
 * one CNN are not independent). */
Test(fit_store, validate_reports_the_noise_floor_and_the_standard_error, .timeout = 300)
{
    tc_store_t *st = tc_synth_fresh_db("fit_floor");
    tc_synth_populate(st);
    char out[65536];
    int rc = tc_synth_aggregator("validate " FIXED " --format csv", out, sizeof out);
    cr_assert_eq(rc, 0, "validate failed:\n%s", out);
    double floor_pct, se;
    s_device_tail(out, &floor_pct, &se);
    double g = tc_synth_truth(TC_SYNTH_REPEAT_K, TC_SYNTH_REPEAT_BI);
    cr_expect(fabs(floor_pct - 100.0 / (2 * g)) < 1e-3, "noise floor %g, hand %g", floor_pct,
              100.0 / (2 * g));
    double mapes[TC_SYNTH_N_CNNS], mean = 0;
    for (int k = 0; k < TC_SYNTH_N_CNNS; k++) {
        double median, max;
        s_hand_stats(k, &mapes[k], &median, &max);
        mean += mapes[k] / TC_SYNTH_N_CNNS;
    }
    double ss = 0;
    for (int k = 0; k < TC_SYNTH_N_CNNS; k++)
        ss += (mapes[k] - mean) * (mapes[k] - mean);
    double hand_se = sqrt(ss / (TC_SYNTH_N_CNNS - 1)) / sqrt(TC_SYNTH_N_CNNS);
    cr_expect(fabs(se - hand_se) < 2e-4, "standard error %g, hand %g", se, hand_se);

    /* The table says both in words. */
    rc = tc_synth_aggregator("validate " FIXED, out, sizeof out);
    cr_assert_eq(rc, 0, "%s", out);
    cr_expect(strstr(out, "with a standard error of") != NULL, "%s", out);
    cr_expect(strstr(out, "noise floor") != NULL, "%s", out);
    tc_store_destroy(&st);
}

/* validate --models: the listed CNNs alone, every fold fitted on them only
 * (by name or model id), the others' excluded points gone too; a name with
 * no traces is bad input that names it. */
Test(fit_store, validate_on_a_subset_of_the_cnns, .timeout = 300)
{
    tc_store_t *st = tc_synth_fresh_db("fit_subset");
    tc_synth_populate(st);
    char out[65536];
    int rc = tc_synth_aggregator("validate " FIXED " --models cnn0,cnn2,cnn3,test:cnn4@32 "
                                 "--format csv", out, sizeof out);
    cr_assert_eq(rc, 0, "validate failed:\n%s", out);
    const unsigned set = 1u << 0 | 1u << 2 | 1u << 3 | 1u << 4;
    char csv[65536], *f[20];
    snprintf(csv, sizeof csv, "%s", out);
    cr_assert(s_csv_row(csv, "", f, 20), "no device row in:\n%s", out);
    double mape, median, max;
    s_hand_stats_of(-1, set, &mape, &median, &max);
    cr_expect(fabs(atof(f[9]) - mape) < 2e-4, "subset MAPE %s, hand %.6f", f[9], mape);
    cr_expect(fabs(atof(f[11]) - max) < 2e-4, "subset max %s, hand %.6f", f[11], max);
    cr_expect_eq(atoi(f[6]), 4 * TC_SYNTH_N_BATCHES, "points %s", f[6]);
    cr_expect_eq(atoi(f[7]), 1, "cnn0's out-of-memory point stays: %s", f[7]);
    cr_expect_eq(atoi(f[8]), 0, "cnn1's failed point goes with it: %s", f[8]);
    snprintf(csv, sizeof csv, "%s", out);
    cr_assert(s_csv_row(csv, "cnn2", f, 20), "no cnn2 row in:\n%s", out);
    s_hand_stats_of(2, set, &mape, &median, &max);
    cr_expect(fabs(atof(f[9]) - mape) < 2e-4, "cnn2 MAPE %s, hand %.6f", f[9], mape);
    snprintf(csv, sizeof csv, "%s", out);
    cr_expect(!s_csv_row(csv, "cnn1", f, 20), "cnn1 was left out:\n%s", out);

    rc = tc_synth_aggregator("validate " FIXED " --models cnn0,cnn2,cnn3,nosuch", out,
                             sizeof out);
    cr_expect_eq(rc, 2, "%s", out);
    cr_expect(strstr(out, "--models") && strstr(out, "'nosuch'"), "%s", out);
    tc_store_destroy(&st);
}
