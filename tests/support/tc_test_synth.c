/* The synthetic world of the fit tests (tc_test_synth.h): its times and
 * the messages that store it. */
#include "tc_test_synth.h"

#include "tc_error.h"
#include "tc_test.h"
#include "tc_wire.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

const unsigned tc_synth_batches[TC_SYNTH_N_BATCHES] = {4, 8, 16};
#define AGENT "agent-fit-test"

/* Model k: a first conv (config A, shared), conv B_k (k channels vary) used
 * 1 + k % 2 times, two batch norms, two activations and a classifier. */
static const uint64_t s_bn_elems_per_sample = 16384; /* each bn: in = out = this * (k+1) */
#define NONCONV_CONST 5.0                             /* ms */
#define NONCONV_PER_BN_ELEM 2e-5                      /* ms per bn element */

static double s_noise(int k, int bi)
{
    return 0.3 * (double)((k * 3 + bi * 7) % 5 - 2);
}

double tc_synth_bn_elems(int k, unsigned batch)
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

double tc_synth_conv_sum(int k, unsigned batch)
{
    /* A is the first layer: no bwd_data (its benchmark is stored, and huge). */
    double a = s_a_fwd + s_a_bwd_filter;
    double b = s_b_time(k, TRAINCAST__V1__DIRECTION__DIRECTION_FWD) +
               s_b_time(k, TRAINCAST__V1__DIRECTION__DIRECTION_BWD_DATA) +
               s_b_time(k, TRAINCAST__V1__DIRECTION__DIRECTION_BWD_FILTER);
    return batch * (a + (1 + k % 2) * b);
}

double tc_synth_measured(int k, int bi)
{
    unsigned b = tc_synth_batches[bi];
    return tc_synth_conv_sum(k, b) + NONCONV_CONST + NONCONV_PER_BN_ELEM * tc_synth_bn_elems(k, b) +
           s_noise(k, bi);
}

double tc_synth_truth(int k, int bi)
{
    double m = tc_synth_measured(k, bi);
    return k == TC_SYNTH_REPEAT_K && bi == TC_SYNTH_REPEAT_BI ? sqrt(m * m - 0.25) : m;
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

void tc_synth_model_id(int k, char *buf, size_t size)
{
    snprintf(buf, size, "test:cnn%d@32", k);
}

void tc_synth_put_model(tc_store_t *st, int k)
{
    char id[64], name[16];
    tc_synth_model_id(k, id, sizeof id);
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
void tc_synth_put_convs(tc_store_t *st, const char *device, int n_b, const unsigned *batches,
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

void tc_synth_put_trace(tc_store_t *st, const char *device, const char *model_id, unsigned batch,
                        Traincast__V1__TraceStatus status, double median, double spread)
{
    s_put_trace_on(st, device, NULL, model_id, batch, status, median, spread);
}

double tc_synth_spread(int k)
{
    return 0.01 * (k + 1);
}

/* Device name synth-a (two physical devices): everything a fit needs, plus a
 * stale conv benchmark, an out-of-memory point and a failed point. */
void tc_synth_populate(tc_store_t *st)
{
    for (int k = 0; k < TC_SYNTH_N_CNNS; k++)
        tc_synth_put_model(st, k);
    int64_t now = tc_now_us();
    /* A stale, absurd measurement (a day old) that a newer one replaces. */
    tc_synth_put_convs(st, "synth-a", TC_SYNTH_N_CNNS, tc_synth_batches, TC_SYNTH_N_BATCHES,
                       now - 24 * 3600 * 1000000LL, 50.0);
    tc_synth_put_convs(st, "synth-a", TC_SYNTH_N_CNNS, tc_synth_batches, TC_SYNTH_N_BATCHES,
                       now, 1.0);
    char id[64];
    for (int k = 0; k < TC_SYNTH_N_CNNS; k++) {
        tc_synth_model_id(k, id, sizeof id);
        for (int bi = 0; bi < TC_SYNTH_N_BATCHES; bi++) {
            double m = tc_synth_measured(k, bi);
            if (k == TC_SYNTH_REPEAT_K && bi == TC_SYNTH_REPEAT_BI) {
                tc_synth_put_trace(st, "synth-a", id, tc_synth_batches[bi],
                                   TRAINCAST__V1__TRACE_STATUS__TRACE_STATUS_OK, m - 0.5,
                                   tc_synth_spread(k));
                tc_synth_put_trace(st, "synth-a", id, tc_synth_batches[bi],
                                   TRAINCAST__V1__TRACE_STATUS__TRACE_STATUS_OK, m + 0.5,
                                   tc_synth_spread(k));
            } else {
                /* Odd CNNs run on a second device of the same name: one fit for both,
                 * with the conv benchmarks of the first. */
                s_put_trace_on(st, "synth-a", k % 2 ? "synth-a-second" : NULL, id,
                               tc_synth_batches[bi], TRAINCAST__V1__TRACE_STATUS__TRACE_STATUS_OK,
                               m, tc_synth_spread(k));
            }
        }
    }
    /* cnn1 batch 4 also failed once, but has an ok trace: not excluded. */
    tc_synth_model_id(1, id, sizeof id);
    tc_synth_put_trace(st, "synth-a", id, 4,
                       TRAINCAST__V1__TRACE_STATUS__TRACE_STATUS_FAILED, 0, 0);
    tc_synth_put_trace(st, "synth-a", id, 32,
                       TRAINCAST__V1__TRACE_STATUS__TRACE_STATUS_FAILED, 0, 0);
    tc_synth_model_id(0, id, sizeof id);
    tc_synth_put_trace(st, "synth-a", id, 32, TRAINCAST__V1__TRACE_STATUS__TRACE_STATUS_OOM, 0, 0);
}

tc_store_t *tc_synth_fresh_db(const char *name)
{
    static char dsn[1024];
    tc_store_t *st = tc_test_fresh_store(name, dsn, sizeof dsn);
    setenv("TRAINCAST_DB", dsn, 1);
    return st;
}

long tc_synth_count(tc_store_t *st, const char *sql)
{
    char v[64];
    cr_assert_eq(tc_store_exec(st, sql, v, sizeof v), 0, "%s: %s", sql, tc_errmsg());
    return strtol(v, NULL, 10);
}

int tc_synth_aggregator(const char *args, char *out, size_t size)
{
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "TRAINCAST_PROGRESS=plain %s/aggregator/aggregator %s",
             TC_BINARY_DIR, args);
    return tc_test_run(cmd, out, size);
}
