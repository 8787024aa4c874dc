#include "tc_test_msg.h"

#include <stdlib.h>
#include <string.h>

static void *s_new(size_t size)
{
    void *p = calloc(1, size);
    if (!p)
        abort();
    return p;
}

#define NEW(type, init)                                                                            \
    ({                                                                                             \
        type *p_ = s_new(sizeof(type));                                                            \
        type init_ = init;                                                                         \
        *p_ = init_;                                                                               \
        p_;                                                                                        \
    })

Traincast__V1__Device *tc_test_device(const char *name, const char *uuid)
{
    Traincast__V1__Device *d = NEW(Traincast__V1__Device, TRAINCAST__V1__DEVICE__INIT);
    d->kind = TRAINCAST__V1__DEVICE_KIND__DEVICE_KIND_CPU;
    d->name = strdup(name);
    d->uuid = strdup(uuid);
    d->multiprocessors = 2;
    d->threads = 2;
    d->memory_bytes = 24ull << 30;
    d->clock_mhz = 2450;
    d->library = strdup("onednn");
    d->library_version = strdup("2.6.3");
    d->host = strdup("testhost");
    return d;
}

static Traincast__V1__ConvConfig *s_config(uint32_t n, uint32_t c, uint32_t hw, uint32_t k)
{
    Traincast__V1__ConvConfig *cfg =
        NEW(Traincast__V1__ConvConfig, TRAINCAST__V1__CONV_CONFIG__INIT);
    cfg->n = n;
    cfg->c = c;
    cfg->h = cfg->w = hw;
    cfg->k = k;
    cfg->r = cfg->s = 3;
    cfg->pad_h = cfg->pad_w = 1;
    cfg->stride_h = cfg->stride_w = 1;
    cfg->dilation_h = cfg->dilation_w = 1;
    cfg->groups = 1;
    cfg->dtype = TRAINCAST__V1__DTYPE__DTYPE_FP32;
    cfg->layout = TRAINCAST__V1__LAYOUT__LAYOUT_NCHW;
    return cfg;
}

Traincast__V1__ConvResults *tc_test_conv_results(const char *device_uuid, size_t n)
{
    Traincast__V1__ConvResults *cr =
        NEW(Traincast__V1__ConvResults, TRAINCAST__V1__CONV_RESULTS__INIT);
    cr->device = tc_test_device("Test CPU (2 threads)", device_uuid);
    cr->backend = strdup("onednn");
    cr->n_results = n;
    cr->results = s_new(n * sizeof *cr->results);
    for (size_t i = 0; i < n; i++) {
        Traincast__V1__ConvResult *r =
            NEW(Traincast__V1__ConvResult, TRAINCAST__V1__CONV_RESULT__INIT);
        r->config = s_config(8, 16 + (uint32_t)i, 28, 32);
        r->direction = (Traincast__V1__Direction)(1 + i % 3);
        r->policy = TRAINCAST__V1__POLICY__POLICY_HEURISTIC;
        r->algo = strdup("jit:avx2");
        r->algo_id = 1;
        r->median_ms = 1.5 + (double)i;
        r->min_ms = 1.0 + (double)i;
        r->max_ms = 2.0 + (double)i;
        r->stddev_ms = 0.25;
        r->repetitions = 3;
        r->workspace_bytes = 4096;
        r->measured_at_us = 1700000000000000LL + (int64_t)i;
        r->n_samples_ms = 3;
        r->samples_ms = s_new(3 * sizeof(double));
        r->samples_ms[0] = r->min_ms;
        r->samples_ms[1] = r->median_ms;
        r->samples_ms[2] = r->max_ms;
        r->n_sample_offsets_us = 3;
        r->sample_offsets_us = s_new(3 * sizeof(int64_t));
        r->sample_offsets_us[1] = 1000;
        r->sample_offsets_us[2] = 2500;
        r->n_candidates = 2;
        r->candidates = s_new(2 * sizeof *r->candidates);
        for (int j = 0; j < 2; j++) {
            Traincast__V1__AlgoTiming *a =
                NEW(Traincast__V1__AlgoTiming, TRAINCAST__V1__ALGO_TIMING__INIT);
            a->algo = strdup(j ? "gemm:ref" : "jit:avx2");
            a->algo_id = j;
            a->time_ms = j ? 0 : r->median_ms;
            a->status = j ? TRAINCAST__V1__ALGO_STATUS__ALGO_STATUS_SKIPPED
                          : TRAINCAST__V1__ALGO_STATUS__ALGO_STATUS_OK;
            a->message = strdup(j ? "heuristic policy\tstops at the first fit" : "");
            r->candidates[j] = a;
        }
        cr->results[i] = r;
    }
    return cr;
}

void tc_test_add_matmul_results(Traincast__V1__ConvResults *cr, size_t n)
{
    cr->n_matmul_results = n;
    cr->matmul_results = s_new(n * sizeof *cr->matmul_results);
    for (size_t i = 0; i < n; i++) {
        Traincast__V1__ConvResult *r =
            NEW(Traincast__V1__ConvResult, TRAINCAST__V1__CONV_RESULT__INIT);
        Traincast__V1__MatmulConfig *c =
            NEW(Traincast__V1__MatmulConfig, TRAINCAST__V1__MATMUL_CONFIG__INIT);
        c->minibatch = 8;
        c->batch = 1;
        c->m = 50;
        c->n = 3072 + (uint32_t)i;
        c->k = 768;
        c->minibatch_in = 1;
        c->trans_b = c->weight = c->bias = 1;
        c->dtype = TRAINCAST__V1__DTYPE__DTYPE_FP32;
        r->matmul = c;
        r->direction = (Traincast__V1__Direction)(1 + i % 3);
        r->policy = TRAINCAST__V1__POLICY__POLICY_HEURISTIC;
        r->algo = strdup("sgemm");
        r->algo_id = -1;
        r->route = strdup("blas");
        r->median_ms = 2.5 + (double)i;
        r->min_ms = 2.0 + (double)i;
        r->max_ms = 3.0 + (double)i;
        r->stddev_ms = 0.25;
        r->repetitions = 3;
        r->measured_at_us = 1700000000000000LL + (int64_t)i;
        r->n_samples_ms = 3;
        r->samples_ms = s_new(3 * sizeof(double));
        r->samples_ms[0] = r->min_ms;
        r->samples_ms[1] = r->median_ms;
        r->samples_ms[2] = r->max_ms;
        cr->matmul_results[i] = r;
    }
}

Traincast__V1__ModelGraph *tc_test_model_graph(const char *model_id)
{
    Traincast__V1__ModelGraph *g =
        NEW(Traincast__V1__ModelGraph, TRAINCAST__V1__MODEL_GRAPH__INIT);
    g->model_id = strdup(model_id);
    g->name = strdup("tinynet");
    g->input_c = 3;
    g->input_h = g->input_w = 32;
    g->params = 3 * 16 * 9 + 16 * 2 + 16 * 10 + 10;
    g->flops = 1e6;
    g->source_sha256 = strdup(model_id);
    static const char *ops[][2] = {{"Conv", "conv"},  {"BatchNormalization", "bn"},
                                   {"Relu", "act"},   {"GlobalAveragePool", "pool"},
                                   {"Flatten", "shape"}, {"Gemm", "gemm"}};
    g->n_layers = 6;
    g->layers = s_new(6 * sizeof *g->layers);
    for (size_t i = 0; i < 6; i++) {
        Traincast__V1__Layer *l = NEW(Traincast__V1__Layer, TRAINCAST__V1__LAYER__INIT);
        l->name = strdup(ops[i][0]);
        l->op = strdup(ops[i][0]);
        l->op_class = strdup(ops[i][1]);
        l->params = i == 0 ? 432 : i == 1 ? 32 : i == 5 ? 170 : 0;
        l->flops = 1000.0 * (double)(i + 1);
        l->elems_in = 16384;
        l->elems_out = 16384;
        l->n_out_shape = 3;
        l->out_shape = s_new(3 * sizeof(int64_t));
        l->out_shape[0] = 16;
        l->out_shape[1] = 32;
        l->out_shape[2] = 32;
        g->layers[i] = l;
    }
    g->n_convs = 2;
    g->convs = s_new(2 * sizeof *g->convs);
    for (size_t i = 0; i < 2; i++) {
        Traincast__V1__ConvUsage *u =
            NEW(Traincast__V1__ConvUsage, TRAINCAST__V1__CONV_USAGE__INIT);
        u->config = s_config(0, i ? 16 : 3, 32, 16);
        u->multiplicity = i ? 3 : 1;
        u->first_layer = i == 0;
        g->convs[i] = u;
    }
    return g;
}

Traincast__V1__TrainTrace *tc_test_trace(const char *device_uuid, const char *model_id,
                                         unsigned batch, double median_ms)
{
    Traincast__V1__TrainTrace *t =
        NEW(Traincast__V1__TrainTrace, TRAINCAST__V1__TRAIN_TRACE__INIT);
    t->device = tc_test_device("Test CPU (2 threads)", device_uuid);
    t->framework = strdup("pytorch");
    t->framework_version = strdup("1.13.1");
    t->library_version = strdup("onednn 2.6.3");
    t->model_id = strdup(model_id);
    t->batch = batch;
    t->input_size = 32;
    t->dtype = TRAINCAST__V1__DTYPE__DTYPE_FP32;
    t->optimizer = strdup("sgd");
    t->policy = TRAINCAST__V1__POLICY__POLICY_HEURISTIC;
    t->warmup = 1;
    t->iters = 3;
    t->repeats = 1;
    t->n_iterations = 4;
    t->iterations = s_new(4 * sizeof *t->iterations);
    for (uint32_t i = 0; i < 4; i++) {
        Traincast__V1__Iteration *it =
            NEW(Traincast__V1__Iteration, TRAINCAST__V1__ITERATION__INIT);
        it->repeat = 0;
        it->index = i;
        it->ms = median_ms * (i == 0 ? 2.0 : 1.0 + 0.01 * i);
        it->at_us = 1700000000000000LL + i * 100000;
        it->warmup = i == 0;
        t->iterations[i] = it;
    }
    t->median_ms = median_ms;
    t->spread = 0.02;
    t->peak_memory_bytes = 123456789;
    t->status = TRAINCAST__V1__TRACE_STATUS__TRACE_STATUS_OK;
    t->n_op_times = 1;
    t->op_times = s_new(sizeof *t->op_times);
    t->op_times[0] = NEW(Traincast__V1__OpClassTime, TRAINCAST__V1__OP_CLASS_TIME__INIT);
    t->op_times[0]->op_class = strdup("conv");
    t->op_times[0]->ms = median_ms / 2;
    t->graph = tc_test_model_graph(model_id);
    t->started_at_us = 1700000000000000LL;
    t->threads = 2;
    t->runner = strdup("trace_runner.py");
    return t;
}

Traincast__V1__Hello *tc_test_hello(const char *agent_name, const char *device_uuid)
{
    Traincast__V1__Hello *h = NEW(Traincast__V1__Hello, TRAINCAST__V1__HELLO__INIT);
    h->agent_name = strdup(agent_name);
    h->agent_version = strdup("0.1.0");
    h->host = strdup("testhost");
    h->n_devices = 1;
    h->devices = s_new(sizeof *h->devices);
    h->devices[0] = tc_test_device("Test CPU (2 threads)", device_uuid);
    return h;
}

tc_envelope_t *tc_test_envelope(const char *agent_id)
{
    tc_envelope_t *env = NEW(tc_envelope_t, TRAINCAST__V1__ENVELOPE__INIT);
    char *id = s_new(TC_MSGID_LEN + 1);
    tc_envelope_stamp(env, strdup(agent_id), id);
    return env;
}
