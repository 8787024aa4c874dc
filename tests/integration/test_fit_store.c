/* aggregator fit and validate against a real PostgreSQL: synthetic conv
 * results, model graphs and traces stored through tc_store_put, the
 * commands run as a user would, their numbers checked against a hand
 * computation; and every bad-input path. */
#include "fit.h"
#include "store.h"
#include "store_fit.h"
#include "tc_error.h"
#include "tc_test.h"
#include "tc_wire.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N_CNNS 5
#define N_BATCHES 3
static const unsigned s_batches[N_BATCHES] = {4, 8, 16};
#define AGENT "agent-fit-test"

/* ---- the synthetic world --------------------------------------------------- */

/* Model k: a first conv (config A, shared), conv B_k (k channels vary) used
 * 1 + k % 2 times, two batch norms, two activations and a classifier. */
static const uint64_t s_bn_elems_per_sample = 16384; /* each bn: in = out = this * (k+1) */
#define NONCONV_CONST 5.0                             /* ms */
#define NONCONV_PER_BN_ELEM 2e-5                      /* ms per bn element */

static double s_noise(int k, int bi)
{
    return 0.3 * (double)((k * 3 + bi * 7) % 5 - 2);
}

static double s_bn_elems(int k, unsigned batch)
{
    /* two bn layers, each reading and writing 16384 (k+1) elements per sample */
    return (double)batch * 2.0 * 2.0 * (double)(s_bn_elems_per_sample * (uint64_t)(k + 1));
}

/* Conv times per sample (ms); a benchmark at batch b takes b times this. */
static const double s_a_fwd = 0.010, s_a_bwd_filter = 0.012, s_a_bwd_data = 100.0;
static double s_b_time(int k, Traincast__V1__Direction dir)
{
    double f = dir == TRAINCAST__V1__DIRECTION__DIRECTION_FWD        ? 0.020
               : dir == TRAINCAST__V1__DIRECTION__DIRECTION_BWD_DATA ? 0.025
                                                                      : 0.030;
    return f * (k + 1);
}

static double s_conv_sum(int k, unsigned batch)
{
    /* A is the first layer: no bwd_data (its benchmark is stored, and huge). */
    double a = s_a_fwd + s_a_bwd_filter;
    double b = s_b_time(k, TRAINCAST__V1__DIRECTION__DIRECTION_FWD) +
               s_b_time(k, TRAINCAST__V1__DIRECTION__DIRECTION_BWD_DATA) +
               s_b_time(k, TRAINCAST__V1__DIRECTION__DIRECTION_BWD_FILTER);
    return batch * (a + (1 + k % 2) * b);
}

static double s_measured(int k, int bi)
{
    unsigned b = s_batches[bi];
    return s_conv_sum(k, b) + NONCONV_CONST + NONCONV_PER_BN_ELEM * s_bn_elems(k, b) +
           s_noise(k, bi);
}

static void s_config(Traincast__V1__ConvConfig *c, int which, unsigned n)
{
    Traincast__V1__ConvConfig init = TRAINCAST__V1__CONV_CONFIG__INIT;
    *c = init;
    c->n = n;
    c->c = which < 0 ? 3 : 16;
    c->h = c->w = 32;
    c->k = which < 0 ? 16 : 16 * (unsigned)(which + 1);
    c->r = c->s = 3;
    c->pad_h = c->pad_w = 1;
    c->stride_h = c->stride_w = c->dilation_h = c->dilation_w = 1;
    c->groups = 1;
    c->dtype = TRAINCAST__V1__DTYPE__DTYPE_FP32;
    c->layout = TRAINCAST__V1__LAYOUT__LAYOUT_NCHW;
}

/* `uuid` NULL: the name (one physical device of that name). */
static void s_device(Traincast__V1__Device *d, const char *name, const char *uuid)
{
    Traincast__V1__Device init = TRAINCAST__V1__DEVICE__INIT;
    *d = init;
    d->kind = TRAINCAST__V1__DEVICE_KIND__DEVICE_KIND_CPU;
    d->name = (char *)name;
    d->uuid = (char *)(uuid ? uuid : name);
    d->threads = 2;
    d->library = "onednn";
}

static void s_put(tc_store_t *st, tc_envelope_t *env)
{
    char id[TC_MSGID_LEN + 1];
    tc_envelope_stamp(env, AGENT, id);
    tc_store_outcome_t out;
    int rc = tc_store_put(st, env, &out);
    cr_assert_eq(rc, 0, "tc_store_put: %s", tc_errmsg());
}

static void s_model_id(int k, char *buf, size_t size)
{
    snprintf(buf, size, "test:cnn%d@32", k);
}

static void s_put_model(tc_store_t *st, int k)
{
    char id[64], name[16];
    s_model_id(k, id, sizeof id);
    snprintf(name, sizeof name, "cnn%d", k);
    Traincast__V1__Layer layers[8], *lp[8];
    const struct {
        const char *op, *cls;
        uint64_t params, in, out;
        double flops;
    } spec[8] = {
        {"Conv", "conv", 432, 3072, 16384, 884736},
        {"BatchNormalization", "bn", 32, 16384 * (uint64_t)(k + 1), 16384 * (uint64_t)(k + 1), 0},
        {"Relu", "act", 0, 16384, 16384, 0},
        {"Conv", "conv", 2304, 16384, 16384, 4718592},
        {"BatchNormalization", "bn", 32, 16384 * (uint64_t)(k + 1), 16384 * (uint64_t)(k + 1), 0},
        {"Relu", "act", 0, 16384, 16384, 0},
        {"GlobalAveragePool", "pool", 0, 16384, 16, 0},
        {"Gemm", "gemm", 170 * (uint64_t)(k + 1), 16, 10, 320},
    };
    for (int i = 0; i < 8; i++) {
        Traincast__V1__Layer init = TRAINCAST__V1__LAYER__INIT;
        layers[i] = init;
        layers[i].name = (char *)spec[i].op;
        layers[i].op = (char *)spec[i].op;
        layers[i].op_class = (char *)spec[i].cls;
        layers[i].params = spec[i].params;
        layers[i].flops = spec[i].flops;
        layers[i].elems_in = spec[i].in;
        layers[i].elems_out = spec[i].out;
        lp[i] = &layers[i];
    }
    Traincast__V1__ConvConfig cfg[2];
    Traincast__V1__ConvUsage use[2], *up[2];
    for (int i = 0; i < 2; i++) {
        Traincast__V1__ConvUsage init = TRAINCAST__V1__CONV_USAGE__INIT;
        use[i] = init;
        s_config(&cfg[i], i == 0 ? -1 : k, 0);
        use[i].config = &cfg[i];
        use[i].first_layer = i == 0;
        use[i].multiplicity = i == 0 ? 1 : 1 + (unsigned)k % 2;
        up[i] = &use[i];
    }
    Traincast__V1__ModelGraph g = TRAINCAST__V1__MODEL_GRAPH__INIT;
    g.model_id = id;
    g.name = name;
    g.input_c = 3;
    g.input_h = g.input_w = 32;
    g.params = 3000;
    g.flops = 5.6e6;
    g.n_layers = 8;
    g.layers = lp;
    g.n_convs = 2;
    g.convs = up;
    g.source_sha256 = name;
    tc_envelope_t env = TRAINCAST__V1__ENVELOPE__INIT;
    env.body_case = TRAINCAST__V1__ENVELOPE__BODY_MODEL_GRAPH;
    env.model_graph = &g;
    s_put(st, &env);
}

/* Benchmarks of configs A and B_0..B_{n_b - 1} at `batches`, every direction,
 * measured at `at_us`; `scale` multiplies every time (stale results). */
static void s_put_convs(tc_store_t *st, const char *device, int n_b, const unsigned *batches,
                        size_t n_batches, int64_t at_us, double scale)
{
    enum { MAX = 64 };
    Traincast__V1__ConvResult res[MAX], *rp[MAX];
    Traincast__V1__ConvConfig cfg[MAX];
    size_t n = 0;
    for (int which = -1; which < n_b; which++) {
        for (size_t bi = 0; bi < n_batches; bi++) {
            for (int dir = 1; dir <= 3; dir++) {
                cr_assert(n < MAX);
                Traincast__V1__ConvResult init = TRAINCAST__V1__CONV_RESULT__INIT;
                res[n] = init;
                s_config(&cfg[n], which, batches[bi]);
                Traincast__V1__Direction d = (Traincast__V1__Direction)dir;
                double per = which < 0 ? (d == TRAINCAST__V1__DIRECTION__DIRECTION_FWD ? s_a_fwd
                                          : d == TRAINCAST__V1__DIRECTION__DIRECTION_BWD_DATA
                                              ? s_a_bwd_data
                                              : s_a_bwd_filter)
                                       : s_b_time(which, d);
                double t = scale * per * batches[bi];
                res[n].config = &cfg[n];
                res[n].direction = d;
                res[n].policy = TRAINCAST__V1__POLICY__POLICY_HEURISTIC;
                res[n].algo = "direct";
                res[n].median_ms = res[n].min_ms = res[n].max_ms = t;
                res[n].repetitions = 5;
                res[n].measured_at_us = at_us;
                rp[n] = &res[n];
                n++;
            }
        }
    }
    Traincast__V1__Device dev;
    s_device(&dev, device, NULL);
    Traincast__V1__ConvResults cr = TRAINCAST__V1__CONV_RESULTS__INIT;
    cr.device = &dev;
    cr.backend = "onednn";
    cr.n_results = n;
    cr.results = rp;
    tc_envelope_t env = TRAINCAST__V1__ENVELOPE__INIT;
    env.body_case = TRAINCAST__V1__ENVELOPE__BODY_CONV_RESULTS;
    env.conv_results = &cr;
    s_put(st, &env);
}

static void s_put_trace_on(tc_store_t *st, const char *device, const char *uuid,
                           const char *model_id, unsigned batch,
                           Traincast__V1__TraceStatus status, double median, double spread)
{
    Traincast__V1__Device dev;
    s_device(&dev, device, uuid);
    Traincast__V1__Iteration it[3], *ip[3];
    for (int i = 0; i < 3; i++) {
        Traincast__V1__Iteration init = TRAINCAST__V1__ITERATION__INIT;
        it[i] = init;
        it[i].index = (uint32_t)i;
        it[i].ms = median > 0 ? median : 1.0;
        ip[i] = &it[i];
    }
    Traincast__V1__TrainTrace t = TRAINCAST__V1__TRAIN_TRACE__INIT;
    t.device = &dev;
    t.framework = "pytorch";
    t.model_id = (char *)model_id;
    t.batch = batch;
    t.input_size = 32;
    t.dtype = TRAINCAST__V1__DTYPE__DTYPE_FP32;
    t.status = status;
    t.started_at_us = tc_now_us();
    if (status == TRAINCAST__V1__TRACE_STATUS__TRACE_STATUS_OK) {
        t.n_iterations = 3;
        t.iterations = ip;
        t.median_ms = median;
        t.spread = spread;
    } else {
        t.reason = status == TRAINCAST__V1__TRACE_STATUS__TRACE_STATUS_OOM ? "CUDA out of memory"
                                                                            : "runner crashed";
    }
    tc_envelope_t env = TRAINCAST__V1__ENVELOPE__INIT;
    env.body_case = TRAINCAST__V1__ENVELOPE__BODY_TRAIN_TRACE;
    env.train_trace = &t;
    s_put(st, &env);
}

static void s_put_trace(tc_store_t *st, const char *device, const char *model_id, unsigned batch,
                        Traincast__V1__TraceStatus status, double median, double spread)
{
    s_put_trace_on(st, device, NULL, model_id, batch, status, median, spread);
}

static double s_spread(int k)
{
    return 0.01 * (k + 1);
}

/* The repeated point: cnn2 at batch 8 traced twice, 0.5 ms either side. */
#define REPEAT_K 2
#define REPEAT_BI 1

/* Device name synth-a (two physical devices): everything a fit needs, plus a
 * stale conv benchmark, an out-of-memory point and a failed point. */
static void s_populate(tc_store_t *st)
{
    for (int k = 0; k < N_CNNS; k++)
        s_put_model(st, k);
    int64_t now = tc_now_us();
    /* A stale, absurd measurement (a day old) that a newer one replaces. */
    s_put_convs(st, "synth-a", N_CNNS, s_batches, N_BATCHES, now - 24 * 3600 * 1000000LL, 50.0);
    s_put_convs(st, "synth-a", N_CNNS, s_batches, N_BATCHES, now, 1.0);
    char id[64];
    for (int k = 0; k < N_CNNS; k++) {
        s_model_id(k, id, sizeof id);
        for (int bi = 0; bi < N_BATCHES; bi++) {
            double m = s_measured(k, bi);
            if (k == REPEAT_K && bi == REPEAT_BI) {
                s_put_trace(st, "synth-a", id, s_batches[bi],
                            TRAINCAST__V1__TRACE_STATUS__TRACE_STATUS_OK, m - 0.5, s_spread(k));
                s_put_trace(st, "synth-a", id, s_batches[bi],
                            TRAINCAST__V1__TRACE_STATUS__TRACE_STATUS_OK, m + 0.5, s_spread(k));
            } else {
                /* Odd CNNs run on a second device of the same name: one fit for both,
                 * with the conv benchmarks of the first. */
                s_put_trace_on(st, "synth-a", k % 2 ? "synth-a-second" : NULL, id,
                               s_batches[bi], TRAINCAST__V1__TRACE_STATUS__TRACE_STATUS_OK, m,
                               s_spread(k));
            }
        }
    }
    /* cnn1 batch 4 also failed once, but has an ok trace: not excluded. */
    s_model_id(1, id, sizeof id);
    s_put_trace(st, "synth-a", id, 4, TRAINCAST__V1__TRACE_STATUS__TRACE_STATUS_FAILED, 0, 0);
    s_put_trace(st, "synth-a", id, 32, TRAINCAST__V1__TRACE_STATUS__TRACE_STATUS_FAILED, 0, 0);
    s_model_id(0, id, sizeof id);
    s_put_trace(st, "synth-a", id, 32, TRAINCAST__V1__TRACE_STATUS__TRACE_STATUS_OOM, 0, 0);
}

/* ---- the hand computation ------------------------------------------------------ */

typedef struct {
    double b0, b1;        /* residual = b0 + b1 * bn.elems */
    double cov[4];        /* sigma^2 (X'X)^-1 */
    double rse;
} ols2_t;

/* OLS of the residual on (1, bn.elems) over points of CNNs other than `skip`
 * (-1: all), by the 2 x 2 normal equations. */
static ols2_t s_ols2(int skip)
{
    double s11 = 0, s12 = 0, s22 = 0, t1 = 0, t2 = 0;
    int n = 0;
    for (int k = 0; k < N_CNNS; k++) {
        if (k == skip)
            continue;
        for (int bi = 0; bi < N_BATCHES; bi++) {
            double x = s_bn_elems(k, s_batches[bi]);
            double r = s_measured(k, bi) - s_conv_sum(k, s_batches[bi]);
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
    for (int k = 0; k < N_CNNS; k++) {
        if (k == skip)
            continue;
        for (int bi = 0; bi < N_BATCHES; bi++) {
            double x = s_bn_elems(k, s_batches[bi]);
            double r = s_measured(k, bi) - s_conv_sum(k, s_batches[bi]);
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

static double s_held_out_ape(int k, int bi)
{
    ols2_t o = s_ols2(k);
    unsigned b = s_batches[bi];
    double pred = s_conv_sum(k, b) + o.b0 + o.b1 * s_bn_elems(k, b);
    double m = s_measured(k, bi);
    return 100.0 * fabs(pred - m) / m;
}

static int s_cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* MAPE, median and max over CNN k (-1: all). */
static void s_hand_stats(int only, double *mape, double *median, double *max)
{
    double ape[N_CNNS * N_BATCHES];
    int n = 0;
    for (int k = 0; k < N_CNNS; k++) {
        if (only >= 0 && k != only)
            continue;
        for (int bi = 0; bi < N_BATCHES; bi++)
            ape[n++] = s_held_out_ape(k, bi);
    }
    qsort(ape, (size_t)n, sizeof *ape, s_cmp);
    double sum = 0;
    for (int i = 0; i < n; i++)
        sum += ape[i];
    *mape = sum / n;
    *median = n % 2 ? ape[n / 2] : 0.5 * (ape[n / 2 - 1] + ape[n / 2]);
    *max = ape[n - 1];
}

/* ---- running the commands -------------------------------------------------- */

static char s_dsn[1024];

static tc_store_t *s_fresh(const char *name)
{
    tc_test_fresh_db(name, s_dsn, sizeof s_dsn);
    setenv("TRAINCAST_DB", s_dsn, 1);
    tc_store_t *st = NULL;
    cr_assert_eq(tc_store_open(s_dsn, &st), 0, "%s", tc_errmsg());
    int applied;
    cr_assert_eq(tc_store_migrate(st, &applied), 0, "%s", tc_errmsg());
    return st;
}

static int s_aggregator(const char *args, char *out, size_t size)
{
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "TRAINCAST_PROGRESS=plain %s/aggregator/aggregator %s",
             TC_BINARY_DIR, args);
    return tc_test_run(cmd, out, size);
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
    cr_expect_eq(atoi(f[6]), k < 0 ? N_CNNS * N_BATCHES : N_BATCHES, "%s points %s", cnn, f[6]);
}

Test(fit_store, fit_and_validate_match_the_hand_computation, .timeout = 300)
{
    tc_store_t *st = s_fresh("fit_hand");
    char out[65536];
    /* An empty store is bad input. */
    cr_expect_eq(s_aggregator("fit", out, sizeof out), 2, "%s", out);
    cr_expect(strstr(out, "no traces are stored") != NULL, "%s", out);

    s_populate(st);

    /* validate, CSV, fixed model: every number against the hand computation. */
    int rc = s_aggregator("validate " FIXED " --format csv", out, sizeof out);
    cr_assert_eq(rc, 0, "validate failed:\n%s", out);
    s_expect_row(out, "", -1);
    for (int k = 0; k < N_CNNS; k++) {
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
    for (int k = 0; k < N_CNNS; k++)
        mean_spread += 100 * s_spread(k) * N_BATCHES;
    mean_spread /= N_CNNS * N_BATCHES;
    cr_expect(fabs(atof(f[13]) - mean_spread) < 1e-3, "spread_within %s, hand %g", f[13],
              mean_spread);
    double m = s_measured(REPEAT_K, REPEAT_BI);
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
    for (int k = 0; k < N_CNNS; k++)
        for (int bi = 0; bi < N_BATCHES; bi++)
            co += 100 * (s_measured(k, bi) - s_conv_sum(k, s_batches[bi])) / s_measured(k, bi);
    co /= N_CNNS * N_BATCHES;
    snprintf(csv, sizeof csv, "%s", out);
    cr_assert(s_csv_row(csv, "", f, 20));
    cr_expect(fabs(atof(f[12]) - co) < 2e-4, "conv-only %s, hand %g", f[12], co);

    /* fit with the same fixed model: stored coefficients, covariance, data range. */
    rc = s_aggregator("fit " FIXED, out, sizeof out);
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
    cr_expect_eq(fit.n_points, (size_t)(N_CNNS * N_BATCHES));
    cr_expect_eq(fit.n_cnns, (size_t)N_CNNS);
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
    cr_assert_eq(tc_store_fit_groups(st, dev, 1, TC_FIT_STAT_MEDIAN, &groups, &n_groups), 0, "%s", tc_errmsg());
    cr_assert_eq(n_groups, 1u);
    cr_assert_eq(groups[0].n_points, (size_t)(N_CNNS * N_BATCHES));
    for (size_t i = 0; i < groups[0].n_points; i++) {
        const tc_fit_point_t *pt = &groups[0].points[i];
        int k = pt->model_id[8] - '0', bi = pt->batch == 4 ? 0 : pt->batch == 8 ? 1 : 2;
        cr_expect(fabs(pt->conv_ms - s_conv_sum(k, pt->batch)) < 1e-9 * pt->conv_ms,
                  "%s b%u: conv sum %.12g, hand %.12g", pt->model_id, pt->batch, pt->conv_ms,
                  s_conv_sum(k, pt->batch));
        cr_expect(fabs(pt->measured_ms - s_measured(k, bi)) < 1e-9 * pt->measured_ms,
                  "%s b%u: measured %.12g, hand %.12g", pt->model_id, pt->batch, pt->measured_ms,
                  s_measured(k, bi));
        double nonconv, var;
        cr_assert_eq(tc_fit_predict(&again, &pt->features, pt->conv_ms, &nonconv, &var), 0, "%s",
                     tc_errmsg());
        double hand = o.b0 + o.b1 * s_bn_elems(k, pt->batch);
        cr_expect(fabs(nonconv - hand) < 1e-7 * fabs(hand), "%s b%u: predicted %.10g, hand %.10g",
                  pt->model_id, pt->batch, nonconv, hand);
        double x = s_bn_elems(k, pt->batch);
        double hvar = o.cov[0] + 2 * x * o.cov[1] + x * x * o.cov[3] + o.rse * o.rse;
        cr_expect(fabs(var - hvar) < 1e-6 * hvar, "variance %.10g, hand %.10g", var, hvar);
    }
    tc_fit_groups_free(&groups, n_groups);

    /* The default selection runs end to end and stores its choice. */
    rc = s_aggregator("fit --device synth-a", out, sizeof out);
    cr_assert_eq(rc, 0, "default fit failed:\n%s", out);
    rc = s_aggregator("validate --device synth-a --format json", out, sizeof out);
    cr_assert_eq(rc, 0, "default validate failed:\n%s", out);
    cr_expect(strstr(out, "\"per_cnn\"") && strstr(out, "\"cnn\": \"cnn4\""), "%s", out);
    rc = s_aggregator("validate --device synth-a", out, sizeof out);
    cr_assert_eq(rc, 0, "%s", out);
    cr_expect(strstr(out, "leave-one-CNN-out") != NULL, "%s", out);
    tc_store_destroy(&st);
}

Test(fit_store, bad_input_names_the_problem_and_exits_2, .timeout = 300)
{
    tc_store_t *st = s_fresh("fit_bad");
    char id[64], out[16384];
    for (int k = 0; k < 4; k++)
        s_put_model(st, k);
    /* synth-b: traces of four CNNs at batch 8, benchmarks of A and B_0 only. */
    const unsigned b8[] = {8};
    s_put_convs(st, "synth-b", 1, b8, 1, tc_now_us(), 1.0);
    for (int k = 0; k < 4; k++) {
        s_model_id(k, id, sizeof id);
        s_put_trace(st, "synth-b", id, 8, TRAINCAST__V1__TRACE_STATUS__TRACE_STATUS_OK, 100, 0.01);
    }
    /* synth-c: known (it sent benchmarks) but never traced. */
    s_put_convs(st, "synth-c", 1, b8, 1, tc_now_us(), 1.0);
    /* synth-d: every trace failed. */
    s_model_id(0, id, sizeof id);
    s_put_trace(st, "synth-d", id, 8, TRAINCAST__V1__TRACE_STATUS__TRACE_STATUS_OOM, 0, 0);
    s_put_trace(st, "synth-d", id, 16, TRAINCAST__V1__TRACE_STATUS__TRACE_STATUS_FAILED, 0, 0);
    /* synth-e: a traced model whose graph was never stored. */
    s_put_trace(st, "synth-e", "test:ghost@32", 8, TRAINCAST__V1__TRACE_STATUS__TRACE_STATUS_OK,
                50, 0.01);

    const struct {
        const char *args;
        const char *expect;
    } cases[] = {
        {"fit --device nosuch", "unknown device 'nosuch'"},
        {"validate --device nosuch", "synth-a"}, /* nosuch is unknown; the message lists names */
        {"fit --device synth-b", "device 'synth-b' lacks conv benchmarks for 3 configs (9 "},
        {"validate --device synth-b",
         "agent bench --models cnn1,cnn2,cnn3 --input-size 32 --batches 8 --policy heuristic"},
        {"fit --device synth-c", "device 'synth-c' has no traces"},
        {"fit --device synth-d", "no successful traces (1 failed, 1 ran out of memory"},
        {"fit --device synth-e", "test:ghost@32 have no stored model graph"},
        {"fit --forms ols,lasso --device synth-b", "unknown model form 'lasso'"},
        {"fit --features total.one,bogus.elems", "bogus.elems"},
        {"fit --features total.one --candidates bn.elems", "not both"},
        {"validate --format xml", "--format must be table, csv or json"},
        {"fit --min-gain 2", "--min-gain"},
    };
    /* synth-a exists only so that the unknown-device message can list it. */
    s_put_convs(st, "synth-a", 1, b8, 1, tc_now_us(), 1.0);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int rc = s_aggregator(cases[i].args, out, sizeof out);
        cr_expect_eq(rc, 2, "'%s' exited %d:\n%s", cases[i].args, rc, out);
        cr_expect(strstr(out, cases[i].expect) != NULL, "'%s' should say \"%s\":\n%s",
                  cases[i].args, cases[i].expect, out);
    }
    /* Too few CNNs for validate (3 CNNs with complete benchmarks). */
    s_put_convs(st, "synth-f", 3, b8, 1, tc_now_us(), 1.0);
    for (int k = 0; k < 3; k++) {
        s_model_id(k, id, sizeof id);
        s_put_trace(st, "synth-f", id, 8, TRAINCAST__V1__TRACE_STATUS__TRACE_STATUS_OK,
                    100 + k, 0.01);
    }
    int rc = s_aggregator("validate --device synth-f", out, sizeof out);
    cr_expect_eq(rc, 2, "%s", out);
    cr_expect(strstr(out, "at least 4 CNNs") != NULL, "%s", out);
    /* More fixed features than a fold has points: says how many it has and
     * needs (3 CNNs of one point each: the smallest fold has 2). */
    rc = s_aggregator("fit --device synth-f --features total.one,bn.elems,total.params "
                      "--forms ols --weightings none",
                      out, sizeof out);
    cr_expect_eq(rc, 2, "%s", out);
    cr_expect(strstr(out, "3 features need more than 3 points in every leave-one-CNN-out fold; "
                          "the smallest fold here has 2 (3 points, 3 CNNs") != NULL,
              "%s", out);
    rc = s_aggregator("validate --device synth-f --holdout batch", out, sizeof out);
    cr_expect_eq(rc, 2, "%s", out);
    cr_expect(strstr(out, "at least 3 batch sizes; there is 1") != NULL, "%s", out);
    rc = s_aggregator("validate --holdout team", out, sizeof out);
    cr_expect_eq(rc, 2, "%s", out);
    cr_expect(strstr(out, "--holdout") && strstr(out, "cnn, family or batch"), "%s", out);
    /* Nothing was stored by the failed fits. */
    char v[64];
    cr_assert_eq(tc_store_exec(st, "SELECT count(*) FROM fits", v, sizeof v), 0);
    cr_expect_str_eq(v, "0");
    tc_fit_t fit;
    cr_expect_eq(tc_store_fit_latest(st, "synth-b", NULL, NULL, NULL, NULL, &fit), TC_ENOTFOUND);
    cr_expect(strstr(tc_errmsg(), "aggregator fit --device synth-b") != NULL, "%s", tc_errmsg());
    tc_store_destroy(&st);
}

/* Repeated measurements become one time by the fit's statistic, the same
 * on both sides: three rounds of conv benchmarks (scaled 1, 2, 4, within
 * the hour, after a day-old stale one) and two traces of one point. */
Test(fit_store, statistics_of_repeated_measurements, .timeout = 300)
{
    tc_store_t *st = s_fresh("fit_stats");
    s_populate(st); /* stale x50 a day ago, then x1 now */
    int64_t now = tc_now_us();
    s_put_convs(st, "synth-a", N_CNNS, s_batches, N_BATCHES, now - 600 * 1000000LL, 2.0);
    s_put_convs(st, "synth-a", N_CNNS, s_batches, N_BATCHES, now - 1200 * 1000000LL, 4.0);
    char *dev[] = {"synth-a"};
    /* percentile_cont over (1, 2, 4): median 2, p10 1.2, min 1. */
    const struct {
        tc_fit_stat_t stat;
        double conv_factor;
        double trace_offset; /* the repeated point's traces are m - 0.5, m + 0.5 */
    } cases[] = {{TC_FIT_STAT_MEDIAN, 2.0, 0.0},
                 {TC_FIT_STAT_P10, 1.2, -0.4},
                 {TC_FIT_STAT_MIN, 1.0, -0.5}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        tc_fit_group_t *groups = NULL;
        size_t n_groups = 0;
        cr_assert_eq(tc_store_fit_groups(st, dev, 1, cases[c].stat, &groups, &n_groups), 0,
                     "%s", tc_errmsg());
        cr_assert_eq(groups[0].stat, cases[c].stat);
        for (size_t i = 0; i < groups[0].n_points; i++) {
            const tc_fit_point_t *pt = &groups[0].points[i];
            int k = pt->model_id[8] - '0', bi = pt->batch == 4 ? 0 : pt->batch == 8 ? 1 : 2;
            double conv = cases[c].conv_factor * s_conv_sum(k, pt->batch);
            cr_expect(fabs(pt->conv_ms - conv) < 1e-9 * conv, "%s: %s b%u conv %.12g, want %.12g",
                      tc_fit_stat_name(cases[c].stat), pt->model_id, pt->batch, pt->conv_ms,
                      conv);
            double m = s_measured(k, bi) +
                       (k == REPEAT_K && bi == REPEAT_BI ? cases[c].trace_offset : 0.0);
            cr_expect(fabs(pt->measured_ms - m) < 1e-9 * m, "%s: %s b%u measured %.12g, want %.12g",
                      tc_fit_stat_name(cases[c].stat), pt->model_id, pt->batch, pt->measured_ms,
                      m);
        }
        tc_fit_groups_free(&groups, n_groups);
    }
    /* A fit remembers its statistic, and predict looks convs up by it. */
    char out[65536];
    int rc = s_aggregator("fit --device synth-a --stat min " FIXED, out, sizeof out);
    cr_assert_eq(rc, 0, "%s", out);
    tc_fit_t fit;
    cr_assert_eq(tc_store_fit_latest(st, "synth-a", NULL, NULL, NULL, NULL, &fit), 0, "%s",
                 tc_errmsg());
    cr_expect_eq(fit.stat, TC_FIT_STAT_MIN);
    rc = s_aggregator("validate --stat nosuch", out, sizeof out);
    cr_expect_eq(rc, 2, "%s", out);
    cr_expect(strstr(out, "--stat") && strstr(out, "median, p10 or min"), "%s", out);
    tc_store_destroy(&st);
}
