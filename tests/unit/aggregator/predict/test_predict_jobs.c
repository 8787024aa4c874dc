/* What predict asks agents for when benchmarks are missing: the
 * BenchRequest of each direction (convs in configs, matmuls in matmuls),
 * the note that counts configs and measurements per op kind, and the
 * `agent bench` command (with --ops all when matmuls are missing). */
#include "predict_output.h"
#include "tc_error.h"
#include "tc_validate.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FWD TRAINCAST__V1__DIRECTION__DIRECTION_FWD
#define BWD_DATA TRAINCAST__V1__DIRECTION__DIRECTION_BWD_DATA
#define BWD_FILTER TRAINCAST__V1__DIRECTION__DIRECTION_BWD_FILTER

static tc_conv_lookup_t s_conv(uint32_t batch, uint32_t c, Traincast__V1__Direction dir,
                               bool found)
{
    tc_conv_lookup_t l = {.kind = TC_OP_CONV, .direction = dir};
    l.config = tc_conv_config_default();
    l.config.n = batch;
    l.config.c = l.config.k = c;
    l.config.h = l.config.w = 8;
    l.config.r = l.config.s = 3;
    l.config.pad_h = l.config.pad_w = 1;
    l.median_ms = l.stddev_ms = found ? 1.0 : NAN;
    return l;
}

/* A Linear k -> n on 50 tokens per sample. */
static tc_conv_lookup_t s_matmul(uint32_t batch, uint32_t n, Traincast__V1__Direction dir,
                                 bool found)
{
    tc_conv_lookup_t l = {.kind = TC_OP_MATMUL, .direction = dir};
    l.matmul = tc_matmul_config_default();
    l.matmul.minibatch = batch;
    l.matmul.m = 50;
    l.matmul.n = n;
    l.matmul.k = 768;
    l.matmul.trans_b = l.matmul.weight = l.matmul.bias = true;
    l.median_ms = l.stddev_ms = found ? 1.0 : NAN;
    return l;
}

static tc_pred_device_t *s_device(tc_conv_lookup_t *l, size_t n)
{
    tc_pred_device_t *d = calloc(1, sizeof *d);
    cr_assert_not_null(d);
    snprintf(d->device.name, sizeof d->device.name, "Test CPU (2 threads)");
    snprintf(d->device.kind, sizeof d->device.kind, "cpu");
    snprintf(d->device.hosts, sizeof d->device.hosts, "testhost");
    d->device.threads = 2;
    d->lookups = l;
    d->n_lookups = n;
    return d;
}

/* The request of one direction, unpacked and checked as the agent checks
 * it (job id and device are filled in when it is dispatched). */
static Traincast__V1__BenchRequest *s_request(const tc_pred_device_t *d,
                                              Traincast__V1__Direction dir, size_t convs,
                                              size_t matmuls)
{
    uint8_t *buf = NULL;
    size_t len = 0, nc = 0, nm = 0;
    cr_assert_eq(tc_predict_bench_request(d, dir, &buf, &len, &nc, &nm), 0, "%s", tc_errmsg());
    cr_assert_eq(nc, convs, "%s: %zu convs, want %zu", tc_direction_name(dir), nc, convs);
    cr_assert_eq(nm, matmuls, "%s: %zu matmuls, want %zu", tc_direction_name(dir), nm, matmuls);
    if (!convs && !matmuls) {
        cr_assert_null(buf, "nothing missing in %s: no request", tc_direction_name(dir));
        return NULL;
    }
    cr_assert_not_null(buf);
    Traincast__V1__BenchRequest *r = traincast__v1__bench_request__unpack(NULL, len, buf);
    free(buf);
    cr_assert_not_null(r);
    r->job_id = strdup("job-1");
    r->device_uuid = strdup("cpu-1");
    cr_assert_eq(tc_validate_bench_request(r, "bench_request"), 0, "%s", tc_errmsg());
    cr_assert_eq(r->n_configs, convs);
    cr_assert_eq(r->n_matmuls, matmuls);
    cr_assert_eq(r->n_directions, 1);
    cr_assert_eq(r->directions[0], dir);
    cr_assert_eq(r->policy, TRAINCAST__V1__POLICY__POLICY_HEURISTIC);
    return r;
}

Test(predict_jobs, missing_matmuls_go_in_the_request_beside_the_convs, .timeout = 10)
{
    /* Batch 8: one conv found, one missing in fwd and bwd_data; a Linear
     * missing in fwd and bwd_filter, another found. Batch 16: the second
     * Linear missing in fwd. A skipped item is not asked for. */
    tc_conv_lookup_t l[] = {
        s_conv(8, 16, FWD, true),          s_conv(8, 32, FWD, false),
        s_conv(8, 32, BWD_DATA, false),    s_matmul(8, 3072, FWD, false),
        s_matmul(8, 3072, BWD_FILTER, false), s_matmul(8, 768, FWD, true),
        s_matmul(16, 768, FWD, false),     s_conv(16, 16, FWD, true),
        s_matmul(32, 768, FWD, false),
    };
    l[8].skip = true;
    tc_pred_device_t *d = s_device(l, sizeof l / sizeof l[0]);

    Traincast__V1__BenchRequest *r = s_request(d, FWD, 1, 2);
    cr_assert_eq(r->configs[0]->n, 8);
    cr_assert_eq(r->configs[0]->c, 32);
    cr_assert_eq(r->matmuls[0]->minibatch, 8);
    cr_assert_eq(r->matmuls[0]->n, 3072);
    cr_assert_eq(r->matmuls[0]->k, 768);
    cr_assert_eq(r->matmuls[0]->m, 50);
    cr_assert(r->matmuls[0]->trans_b && r->matmuls[0]->weight && r->matmuls[0]->bias);
    cr_assert_eq(r->matmuls[0]->minibatch_in, 1, "the mini-batch in the rows");
    cr_assert_eq(r->matmuls[1]->minibatch, 16);
    cr_assert_eq(r->matmuls[1]->n, 768);
    traincast__v1__bench_request__free_unpacked(r, NULL);

    r = s_request(d, BWD_FILTER, 0, 1);
    cr_assert_eq(r->matmuls[0]->n, 3072);
    traincast__v1__bench_request__free_unpacked(r, NULL);
    r = s_request(d, BWD_DATA, 1, 0);
    cr_assert_eq(r->configs[0]->c, 32);
    traincast__v1__bench_request__free_unpacked(r, NULL);

    /* The fit's policy goes with the request. */
    snprintf(d->fit.conv_policy, sizeof d->fit.conv_policy, "exhaustive");
    uint8_t *buf = NULL;
    size_t len = 0, nc = 0, nm = 0;
    cr_assert_eq(tc_predict_bench_request(d, FWD, &buf, &len, &nc, &nm), 0);
    r = traincast__v1__bench_request__unpack(NULL, len, buf);
    cr_assert_eq(r->policy, TRAINCAST__V1__POLICY__POLICY_EXHAUSTIVE);
    traincast__v1__bench_request__free_unpacked(r, NULL);
    free(buf);
    free(d);
}

Test(predict_jobs, the_note_counts_each_kind_and_the_command_asks_for_matmuls, .timeout = 10)
{
    /* Two conv configs (one at two batches) and one matmul config at two
     * batches and two directions. */
    tc_conv_lookup_t l[] = {
        s_conv(8, 32, FWD, false),         s_conv(8, 64, FWD, false),
        s_matmul(8, 3072, FWD, false),     s_matmul(8, 3072, BWD_FILTER, false),
        s_conv(64, 32, FWD, false),        s_matmul(64, 3072, FWD, false),
    };
    tc_pred_device_t *d = s_device(l, sizeof l / sizeof l[0]);
    tc_pred_request_t req = {0};
    tc_pred_missing_t m;
    cr_assert_eq(tc_predict_missing_count(d, &m), 0);
    cr_assert_eq(m.conv_configs, 2);
    cr_assert_eq(m.conv_items, 3);
    cr_assert_eq(m.matmul_configs, 1);
    cr_assert_eq(m.matmul_items, 3);

    char note[1024];
    cr_assert_eq(tc_predict_missing_note(d, &req, "torchvision:vit_b_16", ", and so on", note,
                                         sizeof note),
                 0, "%s", tc_errmsg());
    cr_assert(strstr(note, "2 conv configs and 1 matmul config lack benchmarks: 3 conv and 3 "
                           "matmul measurements in all (one per config, pass and batch), and so "
                           "on; on testhost run: agent bench --models torchvision:vit_b_16 "
                           "--batches 8,64 --device cpu --threads 2 --ops all --policy "
                           "heuristic --out missing.tcr"),
              "%s", note);

    /* Matmuls alone. */
    for (size_t i = 0; i < sizeof l / sizeof l[0]; i++)
        if (l[i].kind == TC_OP_CONV)
            l[i].median_ms = 1.0;
    cr_assert_eq(tc_predict_missing_note(d, &req, "torchvision:vit_b_16", NULL, note,
                                         sizeof note),
                 0);
    cr_assert(strstr(note, "1 matmul config lacks benchmarks: 3 measurements in all"), "%s",
              note);
    cr_assert(strstr(note, "--batches 8,64 --device cpu --threads 2 --ops all "), "%s", note);

    /* Convs alone: the note as before matmuls, the command without --ops. */
    for (size_t i = 0; i < sizeof l / sizeof l[0]; i++)
        l[i].median_ms = l[i].kind == TC_OP_CONV && l[i].config.n == 64 ? NAN : 1.0;
    cr_assert_eq(tc_predict_missing_note(d, &req, "tests/data/resnet34.onnx", "", note,
                                         sizeof note),
                 0);
    cr_assert(strstr(note, "1 conv config lacks benchmarks: 1 measurement in all (one per "
                           "config, pass and batch); on testhost (with tests/data/resnet34.onnx "
                           "copied there at that path first) run: agent bench --models "
                           "tests/data/resnet34.onnx --batches 64 --device cpu --threads 2 "
                           "--policy heuristic "),
              "%s", note);
    cr_assert_null(strstr(note, "--ops"), "%s", note);
    free(d);
}
