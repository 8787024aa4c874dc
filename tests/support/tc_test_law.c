/* The law fixture (tc_test_law.h). */
#include "tc_test_law.h"

#include "tc_error.h"
#include "tc_test.h"
#include "tc_test_msg.h"
#include "tc_matmul_step.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const tc_law_traced[5] = {"alexnet", "resnet18", "squeezenet1_1", "mobilenet_v2",
                                      "vgg11"};
const unsigned tc_law_batches[3] = {8, 16, 32};
static const double s_dirfactor[] = {1.0, 1.2, 1.1}; /* fwd, bwd_filter, bwd_data */
static const Traincast__V1__Direction s_dirs[] = {TRAINCAST__V1__DIRECTION__DIRECTION_FWD,
                                                  TRAINCAST__V1__DIRECTION__DIRECTION_BWD_FILTER,
                                                  TRAINCAST__V1__DIRECTION__DIRECTION_BWD_DATA};

const tc_law_device_t tc_law_devices[2] = {{"Fast Device", "uuid-fast", 1.0},
                                           {"Slow Device", "uuid-slow", 2.5}};

tc_model_t *tc_law_load(const char *name)
{
    char rel[256], path[1024];
    snprintf(rel, sizeof rel, "tests/data/%s.onnx", name);
    tc_test_source_path(rel, path, sizeof path);
    tc_model_t *m = NULL;
    tc_model_opts_t o = {0};
    cr_assert_eq(tc_model_load_file(path, &o, &m), 0, "%s: %s", path, tc_errmsg());
    return m;
}

static double s_conv_ms(const tc_conv_config_t *c, int dir, double speed)
{
    return speed * (1e-9 * tc_conv_macs(c) * s_dirfactor[dir] + 0.01);
}

/* The law's conv sum of a model at a batch on a device. */
double tc_law_conv_sum(const tc_model_t *m, unsigned batch, double speed)
{
    double sum = 0;
    for (size_t j = 0; j < tc_model_conv_count(m); j++) {
        const tc_conv_usage_t *u = tc_model_conv(m, j);
        tc_conv_config_t c = u->config;
        c.n = batch;
        for (int d = 0; d < (u->first_layer ? 2 : 3); d++)
            sum += u->multiplicity * s_conv_ms(&c, d, speed);
    }
    return sum;
}

double tc_law_other_ms(const tc_model_t *m, unsigned batch, double speed)
{
    tc_features_t f;
    tc_model_features(m, batch, &f);
    double bn = 0;
    cr_assert_eq(tc_feature_value(&f, "bn.elems", &bn), 0);
    return speed * (0.4 + 3e-7 * bn);
}

double tc_law_peak(const tc_model_t *m, unsigned batch)
{
    tc_features_t f;
    tc_model_features(m, batch, &f);
    double act = 0;
    for (int c = 0; c < TC_OPC_COUNT; c++)
        act += f.cls[c].elems_out;
    return 2e8 + 16.0 * f.total_params + 4.0 * act;
}

void tc_law_put(tc_store_t *s, tc_envelope_t *env)
{
    tc_store_outcome_t out;
    cr_assert_eq(tc_store_put(s, env, &out), 0, "%s", tc_errmsg());
}

/* Benchmarks of every conv of `m` at `batches` on a device. */
void tc_law_put_benchmarks(tc_store_t *s, const tc_model_t *m, const tc_law_device_t *dev,
                             const unsigned *batches, size_t n_batches)
{
    size_t n = 0;
    for (size_t j = 0; j < tc_model_conv_count(m); j++)
        n += tc_model_conv(m, j)->first_layer ? 2 : 3;
    n *= n_batches;
    tc_envelope_t *env = tc_test_envelope("agent-fixture");
    env->body_case = TRAINCAST__V1__ENVELOPE__BODY_CONV_RESULTS;
    Traincast__V1__ConvResults *cr = tc_test_conv_results(dev->uuid, n);
    cr->device->name = (char *)dev->name;
    cr->device->framework = (char *)"pytorch 1.13.1";
    cr->device->routing = (char *)"pytorch-1.13-cpu";
    size_t k = 0;
    for (size_t b = 0; b < n_batches; b++) {
        for (size_t j = 0; j < tc_model_conv_count(m); j++) {
            const tc_conv_usage_t *u = tc_model_conv(m, j);
            for (int d = 0; d < (u->first_layer ? 2 : 3); d++, k++) {
                Traincast__V1__ConvResult *r = cr->results[k];
                tc_conv_config_t c = u->config;
                c.n = batches[b];
                tc_conv_config_to_proto(&c, r->config);
                r->direction = s_dirs[d];
                double ms = s_conv_ms(&c, d, dev->speed);
                r->median_ms = ms;
                r->min_ms = ms * 0.99;
                r->max_ms = ms * 1.01;
                r->stddev_ms = ms * 0.005;
                r->samples_ms[0] = r->min_ms;
                r->samples_ms[1] = ms;
                r->samples_ms[2] = r->max_ms;
                r->candidates[0]->time_ms = ms;
                r->route = (char *)(d ? "onednn" : "onednn-direct");
                r->sm_clock_mhz = 1410;
                r->power_w = 212.5;
            }
        }
    }
    env->conv_results = cr;
    tc_law_put(s, env);
}

static double s_mm_ms(const tc_matmul_config_t *c, Traincast__V1__Direction d, double speed)
{
    tc_gemm_t g;
    cr_assert_eq(tc_matmul_step_gemm(c, d, &g), 0, "%s", tc_errmsg());
    return speed * (2e-8 * tc_gemm_macs(&g) + 0.02);
}

double tc_law_matmul_sum(const tc_model_t *m, unsigned batch, double speed)
{
    double sum = 0;
    for (size_t j = 0; j < tc_model_matmul_count(m); j++) {
        const tc_matmul_usage_t *u = tc_model_matmul(m, j);
        tc_matmul_config_t c = u->config;
        c.minibatch = batch;
        Traincast__V1__Direction dirs[TC_MATMUL_STEP_MAX_DIRS];
        double ms[TC_MATMUL_STEP_MAX_DIRS] = {0};
        size_t n = tc_matmul_step_directions(&u->use, dirs);
        for (size_t k = 0; k < n; k++)
            ms[k] = s_mm_ms(&c, dirs[k], speed);
        sum += tc_matmul_step_ms(&u->use, ms);
    }
    return sum;
}

void tc_law_put_matmul_benchmarks(tc_store_t *s, const tc_model_t *m,
                                  const tc_law_device_t *dev, const unsigned *batches,
                                  size_t n_batches)
{
    size_t n = 0;
    Traincast__V1__Direction dirs[TC_MATMUL_STEP_MAX_DIRS];
    for (size_t j = 0; j < tc_model_matmul_count(m); j++)
        n += tc_matmul_step_directions(&tc_model_matmul(m, j)->use, dirs);
    n *= n_batches;
    if (n == 0)
        return;
    tc_envelope_t *env = tc_test_envelope("agent-fixture");
    env->body_case = TRAINCAST__V1__ENVELOPE__BODY_CONV_RESULTS;
    Traincast__V1__ConvResults *cr = tc_test_conv_results(dev->uuid, 0);
    cr->device->name = (char *)dev->name;
    cr->device->framework = (char *)"pytorch 1.13.1";
    cr->device->routing = (char *)"pytorch-1.13-cpu";
    tc_test_add_matmul_results(cr, n);
    size_t k = 0;
    for (size_t b = 0; b < n_batches; b++) {
        for (size_t j = 0; j < tc_model_matmul_count(m); j++) {
            const tc_matmul_usage_t *u = tc_model_matmul(m, j);
            size_t nd = tc_matmul_step_directions(&u->use, dirs);
            for (size_t d = 0; d < nd; d++, k++) {
                Traincast__V1__ConvResult *r = cr->matmul_results[k];
                tc_matmul_config_t c = u->config;
                c.minibatch = batches[b];
                tc_matmul_config_to_proto(&c, r->matmul);
                r->direction = dirs[d];
                double ms = s_mm_ms(&c, dirs[d], dev->speed);
                r->median_ms = ms;
                r->min_ms = r->samples_ms[0] = ms * 0.99;
                r->samples_ms[1] = ms;
                r->max_ms = r->samples_ms[2] = ms * 1.01;
                r->stddev_ms = ms * 0.005;
            }
        }
    }
    env->conv_results = cr;
    tc_law_put(s, env);
}

void tc_law_put_trace(tc_store_t *s, const tc_model_t *m, const tc_law_device_t *dev,
                        unsigned batch)
{
    tc_law_put_trace_ms(s, m, dev, batch,
                        tc_law_conv_sum(m, batch, dev->speed) +
                            tc_law_other_ms(m, batch, dev->speed));
}

void tc_law_put_trace_ms(tc_store_t *s, const tc_model_t *m, const tc_law_device_t *dev,
                         unsigned batch, double ms)
{
    Traincast__V1__ModelGraph *g = NULL;
    cr_assert_eq(tc_model_to_proto(m, &g), 0, "%s", tc_errmsg());
    tc_envelope_t *env = tc_test_envelope("agent-fixture");
    env->body_case = TRAINCAST__V1__ENVELOPE__BODY_TRAIN_TRACE;
    Traincast__V1__TrainTrace *t = tc_test_trace(dev->uuid, tc_model_id(m), batch, ms);
    t->device->name = (char *)dev->name;
    t->device->memory_bytes = 64ull << 30;
    t->policy = TRAINCAST__V1__POLICY__POLICY_UNSPECIFIED;
    t->input_size = 224;
    for (size_t i = 0; i < t->n_iterations; i++)
        t->iterations[i]->ms = ms;
    t->peak_memory_bytes = (uint64_t)tc_law_peak(m, batch);
    static Traincast__V1__Setting set[2] = {TRAINCAST__V1__SETTING__INIT,
                                            TRAINCAST__V1__SETTING__INIT};
    static Traincast__V1__Setting *sets[2] = {&set[0], &set[1]};
    set[0].name = (char *)"env.OMP_NUM_THREADS", set[0].value = (char *)"1";
    set[1].name = (char *)"torch.backends.mkldnn.enabled", set[1].value = (char *)"true";
    t->settings = sets;
    t->n_settings = 2;
    t->sm_clock_mhz = 1410;
    t->power_w = 230;
    /* The fast device measured its energy (150 W while training); the slow
     * one could not, and says why. */
    if (dev == &tc_law_devices[0]) {
        t->energy_j = ms / 1000.0 * TC_LAW_TRAINING_WATTS;
        t->energy_source = (char *)"nvml";
    } else {
        t->energy_absent = (char *)"nvmlDeviceGetTotalEnergyConsumption is not supported";
    }
    t->graph = g;
    env->train_trace = t;
    tc_law_put(s, env);
}

void tc_law_build(const char *name, char *dsn, size_t size)
{
    tc_store_t *s = tc_test_fresh_store(name, dsn, size);
    for (size_t i = 0; i < sizeof tc_law_traced / sizeof tc_law_traced[0]; i++) {
        tc_model_t *m = tc_law_load(tc_law_traced[i]);
        for (size_t d = 0; d < 2; d++) {
            tc_law_put_benchmarks(s, m, &tc_law_devices[d], tc_law_batches, 3);
            for (size_t b = 0; b < 3; b++)
                tc_law_put_trace(s, m, &tc_law_devices[d], tc_law_batches[b]);
        }
        tc_model_destroy(&m);
    }
    /* resnet34 is never traced; only its convs are benchmarked (batch 16
     * and 64), and only on the fast device. */
    tc_model_t *r34 = tc_law_load("resnet34");
    const unsigned b34[] = {16, 64};
    tc_law_put_benchmarks(s, r34, &tc_law_devices[0], b34, 2);
    tc_model_destroy(&r34);
    tc_store_destroy(&s);
}

