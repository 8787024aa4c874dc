/* What a fit is made of, against a real PostgreSQL: traces are grouped by
 * AMP mode, settings and (on a GPU) cuDNN version besides framework,
 * policy and dtype; a conv layer with a bias only finds benchmarks of
 * convs with a bias; AMP traces sum the benchmarks of the AMP dtype; GPU
 * traces only those measured with their cuDNN, and a mismatch is named with
 * both versions; a device whose routing was not checked makes predict warn. */
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

#define AGENT "01TESTVARIANTS00000000000"
#define N_CNNS 3
#define BATCH 8

static char s_dsn[1024];

static tc_store_t *s_fresh(const char *name)
{
    tc_store_t *st = tc_test_fresh_store(name, s_dsn, sizeof s_dsn);
    return st;
}

static void s_put(tc_store_t *st, tc_envelope_t *env)
{
    char id[TC_MSGID_LEN + 1];
    tc_envelope_stamp(env, AGENT, id);
    tc_store_outcome_t out;
    cr_assert_eq(tc_store_put(st, env, &out), 0, "tc_store_put: %s", tc_errmsg());
}

static void s_device(Traincast__V1__Device *d, const char *cudnn, const char *routing)
{
    Traincast__V1__Device init = TRAINCAST__V1__DEVICE__INIT;
    *d = init;
    d->kind = TRAINCAST__V1__DEVICE_KIND__DEVICE_KIND_CUDA;
    d->name = "gpu-x";
    d->uuid = "GPU-00000000-0000-0000-0000-000000000001";
    d->library = "cudnn";
    d->library_version = (char *)cudnn;
    d->framework = "pytorch 2.11.0";
    d->routing = (char *)(routing ? routing : "pytorch-2");
}

/* The conv of CNN k: 3x3, 16 -> 16 (k + 1) channels, a bias for k == 0. */
static void s_config(Traincast__V1__ConvConfig *c, int k, unsigned n, Traincast__V1__DType dt,
                     bool bias)
{
    Traincast__V1__ConvConfig init = TRAINCAST__V1__CONV_CONFIG__INIT;
    *c = init;
    c->n = n;
    c->c = 16, c->h = c->w = 32, c->k = 16 * (unsigned)(k + 1), c->r = c->s = 3;
    c->pad_h = c->pad_w = 1;
    c->stride_h = c->stride_w = c->dilation_h = c->dilation_w = 1;
    c->groups = 1;
    c->dtype = dt;
    c->layout = TRAINCAST__V1__LAYOUT__LAYOUT_NCHW;
    c->bias = bias;
}

static void s_put_model(tc_store_t *st, int k)
{
    char id[64], name[16];
    snprintf(id, sizeof id, "test:var%d@32", k);
    snprintf(name, sizeof name, "var%d", k);
    Traincast__V1__Layer l[2], *lp[2];
    const char *ops[2] = {"Conv", "Relu"}, *cls[2] = {"conv", "act"};
    for (int i = 0; i < 2; i++) {
        Traincast__V1__Layer init = TRAINCAST__V1__LAYER__INIT;
        l[i] = init;
        l[i].name = (char *)ops[i];
        l[i].op = (char *)ops[i];
        l[i].op_class = (char *)cls[i];
        l[i].elems_in = l[i].elems_out = 16384;
        lp[i] = &l[i];
    }
    Traincast__V1__ConvConfig cfg;
    s_config(&cfg, k, 0, TRAINCAST__V1__DTYPE__DTYPE_FP32, k == 0);
    Traincast__V1__ConvUsage u = TRAINCAST__V1__CONV_USAGE__INIT, *up = &u;
    u.config = &cfg;
    u.multiplicity = 1;
    u.first_layer = false;
    Traincast__V1__ModelGraph g = TRAINCAST__V1__MODEL_GRAPH__INIT;
    g.model_id = id;
    g.name = name;
    g.input_c = 3, g.input_h = g.input_w = 32;
    g.n_layers = 2, g.layers = lp;
    g.n_convs = 1, g.convs = &up;
    g.source_sha256 = name;
    tc_envelope_t env = TRAINCAST__V1__ENVELOPE__INIT;
    env.body_case = TRAINCAST__V1__ENVELOPE__BODY_MODEL_GRAPH;
    env.model_graph = &g;
    s_put(st, &env);
}

/* Benchmarks of every CNN's conv in `dt` at BATCH, each direction taking
 * `ms`, measured with cuDNN `cudnn`. The conv of CNN 0 with a bias only
 * when `bias0`. */
static void s_put_convs(tc_store_t *st, Traincast__V1__DType dt, double ms, const char *cudnn,
                        bool bias0)
{
    Traincast__V1__ConvResult r[3 * N_CNNS], *rp[3 * N_CNNS];
    Traincast__V1__ConvConfig cfg[3 * N_CNNS];
    size_t n = 0;
    for (int k = 0; k < N_CNNS; k++)
        for (int d = 1; d <= 3; d++) {
            Traincast__V1__ConvResult init = TRAINCAST__V1__CONV_RESULT__INIT;
            r[n] = init;
            s_config(&cfg[n], k, BATCH, dt, k == 0 && bias0);
            r[n].config = &cfg[n];
            r[n].direction = (Traincast__V1__Direction)d;
            r[n].policy = TRAINCAST__V1__POLICY__POLICY_HEURISTIC;
            r[n].algo = "eng0";
            r[n].route = "cudnn-v8";
            r[n].median_ms = r[n].min_ms = r[n].max_ms = ms;
            r[n].repetitions = 5;
            r[n].measured_at_us = tc_now_us();
            rp[n] = &r[n];
            n++;
        }
    Traincast__V1__Device dev;
    s_device(&dev, cudnn, NULL);
    Traincast__V1__ConvResults cr = TRAINCAST__V1__CONV_RESULTS__INIT;
    cr.device = &dev;
    cr.backend = "cudnn";
    cr.n_results = n;
    cr.results = rp;
    tc_envelope_t env = TRAINCAST__V1__ENVELOPE__INIT;
    env.body_case = TRAINCAST__V1__ENVELOPE__BODY_CONV_RESULTS;
    env.conv_results = &cr;
    s_put(st, &env);
}

static void s_put_trace(tc_store_t *st, int k, const char *amp, const char *cudnn,
                        const char *tf32, double ms)
{
    char id[64];
    snprintf(id, sizeof id, "test:var%d@32", k);
    Traincast__V1__Device dev;
    s_device(&dev, cudnn, NULL);
    Traincast__V1__Iteration it = TRAINCAST__V1__ITERATION__INIT, *ip = &it;
    it.ms = ms;
    Traincast__V1__Setting s[2], *sp[2];
    const char *names[2] = {"env.TORCH_CUDNN_V8_API_DISABLED", "torch.backends.cudnn.allow_tf32"};
    const char *values[2] = {"", tf32};
    for (int i = 0; i < 2; i++) {
        Traincast__V1__Setting init = TRAINCAST__V1__SETTING__INIT;
        s[i] = init;
        s[i].name = (char *)names[i];
        s[i].value = (char *)values[i];
        sp[i] = &s[i];
    }
    Traincast__V1__TrainTrace t = TRAINCAST__V1__TRAIN_TRACE__INIT;
    t.device = &dev;
    t.framework = "pytorch";
    t.framework_version = "2.11.0";
    t.library_version = (char *)cudnn;
    t.model_id = id;
    t.batch = BATCH;
    t.input_size = 32;
    t.dtype = TRAINCAST__V1__DTYPE__DTYPE_FP32;
    t.amp = (char *)amp;
    t.policy = TRAINCAST__V1__POLICY__POLICY_HEURISTIC;
    t.status = TRAINCAST__V1__TRACE_STATUS__TRACE_STATUS_OK;
    t.n_iterations = 1;
    t.iterations = &ip;
    t.median_ms = ms;
    t.n_settings = 2;
    t.settings = sp;
    t.sm_clock_mhz = 1755;
    t.power_w = 400;
    t.started_at_us = tc_now_us();
    tc_envelope_t env = TRAINCAST__V1__ENVELOPE__INIT;
    env.body_case = TRAINCAST__V1__ENVELOPE__BODY_TRAIN_TRACE;
    env.train_trace = &t;
    s_put(st, &env);
}

static const tc_fit_group_t *s_group(const tc_fit_group_t *g, size_t n, const char *amp,
                                     const char *settings_has)
{
    for (size_t i = 0; i < n; i++)
        if (!strcmp(g[i].amp, amp) && strstr(g[i].settings, settings_has))
            return &g[i];
    return NULL;
}

Test(fit_variants, groups_by_amp_settings_and_cudnn_and_sum_their_convs, .timeout = 300)
{
    tc_store_t *st = s_fresh("fit_variants_groups");
    for (int k = 0; k < N_CNNS; k++)
        s_put_model(st, k);
    /* fp32 convs take 1 ms per direction, fp16 ones 0.25 ms; all measured
     * with cuDNN 9.1.0, the conv of CNN 0 with its bias. */
    s_put_convs(st, TRAINCAST__V1__DTYPE__DTYPE_FP32, 1.0, "9.1.0", true);
    s_put_convs(st, TRAINCAST__V1__DTYPE__DTYPE_FP16, 0.25, "9.1.0", true);
    for (int k = 0; k < N_CNNS; k++) {
        s_put_trace(st, k, "", "9.1.0", "True", 10 + k);
        s_put_trace(st, k, "fp16", "9.1.0", "True", 5 + k);
        s_put_trace(st, k, "", "9.1.0", "False", 20 + k);
    }
    tc_fit_group_t *g = NULL;
    size_t n = 0;
    char *dev[] = {"gpu-x"};
    cr_assert_eq(tc_store_fit_groups(st, dev, 1, TC_FIT_STAT_MEDIAN, false, &g, &n), 0, "%s", tc_errmsg());
    cr_expect_eq(n, 3, "fp32 with and without TF32 allowed, and AMP fp16: three groups");
    const tc_fit_group_t *fp32 = s_group(g, n, "", "allow_tf32=True");
    const tc_fit_group_t *strict = s_group(g, n, "", "allow_tf32=False");
    const tc_fit_group_t *amp = s_group(g, n, "fp16", "allow_tf32=True");
    cr_assert_not_null(fp32);
    cr_assert_not_null(strict);
    cr_assert_not_null(amp);
    cr_expect_str_eq(fp32->library_version, "9.1.0");
    cr_expect_str_eq(fp32->dtype, "fp32");
    for (size_t i = 0; i < fp32->n_points; i++) {
        /* Three directions (not a first layer) of one conv per CNN. */
        cr_expect_float_eq(fp32->points[i].conv_ms, 3.0, 1e-9, "%s", fp32->points[i].model_id);
        cr_expect_float_eq(amp->points[i].conv_ms, 0.75, 1e-9, "AMP fp16 sums fp16 convs");
        cr_expect_float_eq(fp32->points[i].measured_ms, 10 + (double)i, 1e-9);
        cr_expect_float_eq(strict->points[i].measured_ms, 20 + (double)i, 1e-9);
    }
    tc_fit_groups_free(&g, n);
    tc_store_destroy(&st);
}

Test(fit_variants, a_conv_with_a_bias_needs_benchmarks_with_one, .timeout = 300)
{
    tc_store_t *st = s_fresh("fit_variants_bias");
    for (int k = 0; k < N_CNNS; k++) {
        s_put_model(st, k);
        s_put_trace(st, k, "", "9.1.0", "True", 10);
    }
    /* CNN 0's conv has a bias; the benchmarks time it without. */
    s_put_convs(st, TRAINCAST__V1__DTYPE__DTYPE_FP32, 1.0, "9.1.0", false);
    tc_fit_group_t *g = NULL;
    size_t n = 0;
    char *dev[] = {"gpu-x"};
    cr_expect_eq(tc_store_fit_groups(st, dev, 1, TC_FIT_STAT_MEDIAN, false, &g, &n), TC_EINVAL);
    cr_expect(strstr(tc_errmsg(), "lacks conv benchmarks for 1 configs"), "%s", tc_errmsg());
    cr_expect(strstr(tc_errmsg(), "var0"), "%s", tc_errmsg());
    s_put_convs(st, TRAINCAST__V1__DTYPE__DTYPE_FP32, 1.0, "9.1.0", true);
    cr_expect_eq(tc_store_fit_groups(st, dev, 1, TC_FIT_STAT_MEDIAN, false, &g, &n), 0, "%s", tc_errmsg());
    tc_fit_groups_free(&g, n);
    tc_store_destroy(&st);
}

Test(fit_variants, benchmarks_of_another_cudnn_do_not_count_and_are_named, .timeout = 300)
{
    tc_store_t *st = s_fresh("fit_variants_cudnn");
    for (int k = 0; k < N_CNNS; k++) {
        s_put_model(st, k);
        s_put_trace(st, k, "", "9.1.0", "True", 10);
    }
    /* The agent measured with the system's cuDNN 9.19.0. */
    s_put_convs(st, TRAINCAST__V1__DTYPE__DTYPE_FP32, 1.0, "9.19.0", true);
    tc_fit_group_t *g = NULL;
    size_t n = 0;
    char *dev[] = {"gpu-x"};
    cr_expect_eq(tc_store_fit_groups(st, dev, 1, TC_FIT_STAT_MEDIAN, false, &g, &n), TC_EINVAL);
    cr_expect(strstr(tc_errmsg(), "cuDNN 9.1.0"), "%s", tc_errmsg());
    cr_expect(strstr(tc_errmsg(), "cuDNN 9.19.0"), "%s", tc_errmsg());
    s_put_convs(st, TRAINCAST__V1__DTYPE__DTYPE_FP32, 1.0, "9.1.0", true);
    cr_expect_eq(tc_store_fit_groups(st, dev, 1, TC_FIT_STAT_MEDIAN, false, &g, &n), 0, "%s", tc_errmsg());
    tc_fit_groups_free(&g, n);
    tc_store_destroy(&st);
}

Test(fit_variants, unverified_routing_makes_predictions_warn, .timeout = 300)
{
    tc_store_t *st = s_fresh("fit_variants_routing");
    char warning[512];
    cr_assert_eq(tc_store_routing_warning(st, "gpu-x", warning, sizeof warning), 0);
    cr_expect_str_eq(warning, "");
    Traincast__V1__Device d;
    s_device(&d, "9.1.0", NULL);
    Traincast__V1__Hello h = TRAINCAST__V1__HELLO__INIT;
    Traincast__V1__Device *dp = &d;
    h.agent_name = "a";
    h.n_devices = 1;
    h.devices = &dp;
    tc_envelope_t env = TRAINCAST__V1__ENVELOPE__INIT;
    env.body_case = TRAINCAST__V1__ENVELOPE__BODY_HELLO;
    env.hello = &h;
    s_put(st, &env);
    cr_assert_eq(tc_store_routing_warning(st, "gpu-x", warning, sizeof warning), 0);
    cr_expect_str_eq(warning, "", "a checked rule says nothing");
    s_device(&d, "9.1.0", "pytorch-2 unverified");
    d.framework = "pytorch 2.13.0";
    s_put(st, &env);
    cr_assert_eq(tc_store_routing_warning(st, "gpu-x", warning, sizeof warning), 0);
    cr_expect(strstr(warning, "routing unverified") && strstr(warning, "pytorch 2.13.0"), "%s",
              warning);
    tc_store_destroy(&st);
}
