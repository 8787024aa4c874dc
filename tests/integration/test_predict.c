/* aggregator predict against a stored fixture database.
 *
 * The fixture: two device classes, five CNNs (the committed ONNX exports)
 * benchmarked and traced at three batch sizes, where every conv time and
 * every trace follows a known law:
 *
 *   conv(config, direction) = speed * (1e-9 ms * MACs * dirfactor + 0.01 ms)
 *   trace = conv sum + speed * (0.4 ms + 3e-7 ms * bn.elems)
 *   peak memory = 2e8 + 16 * parameters + 4 * activation elements (bytes)
 *
 * After `aggregator fit`, predicting a CNN that was never traced must give
 * the law's value: the conv sum from the benchmarks and the rest from the
 * fit. */
#include "predict.h"
#include "store.h"
#include "store_fit.h"
#include "tc_error.h"
#include "tc_model.h"
#include "tc_test.h"
#include "tc_test_law.h"
#include "tc_test_msg.h"
#include "tc_test_proc.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char s_dsn[1024];

static void s_build_fixture(void)
{
    tc_law_build("predict", s_dsn, sizeof s_dsn);
}

static void s_aggregator(const char *args, int want_status, char *out, size_t size)
{
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "cd %s && TRAINCAST_LOG=warn %s/aggregator/aggregator %s --db '%s'",
             TC_SOURCE_DIR, TC_BINARY_DIR, args, s_dsn);
    int st = tc_test_run(cmd, out, size);
    cr_assert_eq(st, want_status, "'%s' exited %d, want %d:\n%s", args, st, want_status, out);
}

/* Split one CSV line into fields (quotes removed; no embedded commas in
 * the fields read here except inside quoted notes, which come last). */
static int s_fields(const char *line, char fields[24][512])
{
    int n = 0;
    const char *p = line;
    while (n < 24) {
        char *f = fields[n++];
        size_t k = 0;
        if (*p == '"') {
            p++;
            while (*p && !(*p == '"' && p[1] != '"')) {
                if (*p == '"')
                    p++;
                if (k < 511)
                    f[k++] = *p;
                p++;
            }
            if (*p == '"')
                p++;
        } else {
            while (*p && *p != ',' && *p != '\n') {
                if (k < 511)
                    f[k++] = *p;
                p++;
            }
        }
        f[k] = '\0';
        if (*p != ',')
            break;
        p++;
    }
    return n;
}

/* The csv row of (device, batch): iteration, lo, hi, conv, nonconv, peak;
 * `status` gets the row's status and `reason` (may be NULL) its reason.
 * Returns 0 when there is no such row. */
static int s_row(const char *csv, const char *device, unsigned batch, double v[6], char *status,
                 size_t status_size)
{
    static char f[24][512];
    for (const char *line = csv; line && *line;) {
        int n = s_fields(line, f);
        const char *nl = strchr(line, '\n');
        line = nl ? nl + 1 : NULL;
        if (n < 20 || strcmp(f[1], device) != 0 || (unsigned)atoi(f[4]) != batch)
            continue;
        snprintf(status, status_size, "%s", f[3]);
        v[0] = atof(f[5]);
        v[1] = atof(f[6]);
        v[2] = atof(f[7]);
        v[3] = atof(f[8]);
        v[4] = atof(f[10]); /* after matmul_ms */
        v[5] = atof(f[14]);
        return 1;
    }
    return 0;
}

Test(predict, untraced_cnn_follows_the_law, .timeout = 600)
{
    s_build_fixture();
    static char out[1 << 20];
    s_aggregator("fit", 0, out, sizeof out);
    /* The slow device lacks resnet34's benchmarks at batch 64: that row says
     * so, the others are predicted, and the exit status says a row is
     * missing. */
    s_aggregator("predict --gpu all --model tests/data/resnet34.onnx --batch 16,64 --format csv "
                 "--wait 0",
                 3, out, sizeof out);
    tc_model_t *m = tc_law_load("resnet34");
    const unsigned batches[] = {16, 64};
    for (size_t b = 0; b < 2; b++) {
        double v[6] = {NAN, NAN, NAN, NAN, NAN, NAN};
        char status[64] = "";
        cr_assert(s_row(out, "Fast Device", batches[b], v, status, sizeof status),
                  "no row for batch %u:\n%s", batches[b], out);
        cr_assert_str_eq(status, "ok", "%s", out);
        double conv = tc_law_conv_sum(m, batches[b], 1.0);
        double other = tc_law_other_ms(m, batches[b], 1.0);
        cr_assert_float_eq(v[3], conv, conv * 1e-6, "conv sum %g, want %g", v[3], conv);
        cr_assert_float_eq(v[4], other, other * 0.01 + 0.01, "non-conv %g, want %g", v[4], other);
        cr_assert_float_eq(v[0], conv + other, (conv + other) * 0.01, "total %g", v[0]);
        cr_assert(v[1] <= v[0] && v[0] <= v[2], "interval %g..%g around %g", v[1], v[2], v[0]);
        cr_assert_float_eq(v[5], tc_law_peak(m, batches[b]), tc_law_peak(m, batches[b]) * 0.02,
                           "peak memory %g want %g", v[5], tc_law_peak(m, batches[b]));
    }
    /* The slow device has a fit but only some resnet34 benchmarks: its batch
     * 16 is predicted (resnet34's convs at batch 16 share their shapes with
     * resnet18's, which it measured), its batch 64 is not, and that row says
     * what is missing and the command to run. */
    double v[6];
    char status[64] = "";
    cr_assert(s_row(out, "Slow Device", 16, v, status, sizeof status), "%s", out);
    cr_assert_str_eq(status, "ok", "%s", out);
    cr_assert(s_row(out, "Slow Device", 64, v, status, sizeof status), "%s", out);
    cr_assert_str_eq(status, "missing_benchmarks", "%s", out);
    /* Configs and measurements told apart: 11 configs, 32 measurements (a
     * config's passes at a batch); the file must be where the command runs. */
    cr_assert(strstr(out, "lacks 32 of its 32 conv measurements at batch 64 (one per conv "
                          "config and pass)"),
              "%s", out);
    cr_assert(strstr(out, "11 conv configs lack benchmarks: 32 measurements in all (one per "
                          "config, pass and batch)"),
              "%s", out);
    cr_assert(strstr(out, "on testhost (with tests/data/resnet34.onnx copied there at that path "
                          "first) run: agent bench --models tests/data/resnet34.onnx "
                          "--batches 64 "),
              "%s", out);
    tc_model_destroy(&m);

    /* A traced model, table format with prices and a plot: fastest and
     * cheapest device named. */
    const char price_list[] = "# per hour\nFast Device = 10\nSlow Device = 1.5\n";
    char prices[64];
    tc_test_temp_file("prices", price_list, strlen(price_list), prices, sizeof prices);
    char args[1024];
    snprintf(args, sizeof args,
             "predict --gpu all --model tests/data/resnet18.onnx --batch 8..32 --prices %s "
             "--plot /tmp/tc_predict_test.svg",
             prices);
    s_aggregator(args, 0, out, sizeof out);
    cr_assert(strstr(out, "fastest:  Fast Device at batch 32"), "%s", out);
    cr_assert(strstr(out, "cheapest: Slow Device"), "%s", out);
    FILE *svg = fopen("/tmp/tc_predict_test.svg", "r");
    cr_assert_not_null(svg, "no plot written");
    fclose(svg);
    remove("/tmp/tc_predict_test.svg");
    remove(prices);

    s_aggregator("predict --gpu 'fast device' --model tests/data/resnet18.onnx --batch 8 "
                 "--format json",
                 0, out, sizeof out);
    cr_assert(strstr(out, "\"name\":\"Fast Device\"") && !strstr(out, "Slow Device"), "%s", out);
    cr_assert(strstr(out, "\"nonconv_clamped\":false"), "%s", out);
    /* Energy per epoch: the epoch time at the device's training power (to
     * the digits JSON carries, the same as CSV's: epoch_s to 0.1 s). */
    cr_assert(strstr(out, "\"training_power_w\":150,") && strstr(out, "\"energy_source\":\"nvml\""),
              "%s", out);
    const char *e = strstr(out, "\"epoch_s\":"), *k = strstr(out, "\"energy_kj_per_epoch\":");
    cr_assert(e && k, "%s", out);
    cr_assert_float_eq(atof(k + 22), atof(e + 10) * TC_LAW_TRAINING_WATTS / 1000.0,
                       0.05 * TC_LAW_TRAINING_WATTS / 1000.0 + 0.001, "%s", out);
    s_aggregator("predict --gpu 'slow device' --model tests/data/resnet18.onnx --batch 8 "
                 "--format json",
                 0, out, sizeof out);
    cr_assert(strstr(out, "\"training_power_w\":null") && strstr(out, "\"energy_kj_per_epoch\":null"),
              "%s", out);
    s_aggregator("predict --gpu all --model tests/data/resnet18.onnx --batch 8", 0, out,
                 sizeof out);
    cr_assert(strstr(out, "kJ/epoch"), "%s", out);

    /* A fit whose coefficients extrapolate below zero: the non-conv time is
     * shown as 0 and flagged, never printed as a negative time. */
    tc_store_t *s = NULL;
    cr_assert_eq(tc_store_open(s_dsn, &s), 0, "%s", tc_errmsg());
    cr_assert_eq(tc_store_exec(s,
                               "UPDATE fits SET coefficients = array_fill(-1e6::float8, "
                               "ARRAY[cardinality(coefficients)]) WHERE device = 'Fast Device'",
                               NULL, 0),
                 0, "%s", tc_errmsg());
    tc_store_destroy(&s);
    s_aggregator("predict --gpu 'Fast Device' --model tests/data/resnet18.onnx --batch 8 "
                 "--format csv",
                 0, out, sizeof out);
    cr_assert(s_row(out, "Fast Device", 8, v, status, sizeof status), "%s", out);
    cr_assert_float_eq(v[4], 0.0, 1e-12, "clamped non-conv time %g", v[4]);
    cr_assert_float_eq(v[0], v[3], 1e-6, "total = conv sum when clamped");
    cr_assert(strstr(out, "clamped at 0"), "%s", out);
}

Test(predict, bad_input_exits_2, .timeout = 300)
{
    tc_store_t *s = tc_test_fresh_store("predict_bad", s_dsn, sizeof s_dsn);
    /* One device with benchmarks but no traces: no fit. */
    tc_model_t *m = tc_law_load("squeezenet1_1");
    tc_law_put_benchmarks(s, m, &tc_law_devices[0], tc_law_batches, 1);
    tc_model_destroy(&m);
    tc_store_destroy(&s);

    char bad_onnx[] = "/tmp/tc_bad_XXXXXX.onnx";
    FILE *f = fdopen(mkstemps(bad_onnx, 5), "w");
    fprintf(f, "this is not an onnx file");
    fclose(f);
    static char out[65536];
    struct {
        const char *args;
        const char *says;
    } cases[] = {
        {"predict --gpu 'No Such GPU' --model tests/data/alexnet.onnx --batch 8", "unknown device"},
        {"predict --gpu all --model torchvision:no_such_net --batch 8", "no_such_net"},
        {"predict --gpu all --model torchvision:resnt18 --batch 8",
         "did you mean torchvision:resnet18?"},
        {"predict --gpu all --modle torchvision:resnet18 --batch 8", "did you mean --model?"},
        {"predict --gpu all --model tests/data/alexnet.onnx --batch 8,,16", "--batch"},
        {"predict --gpu all --model tests/data/alexnet.onnx --batch 0..8", "--batch"},
        {"predict --gpu all --model tests/data/alexnet.onnx --batch 8 --format xml", "--format"},
        {"predict --gpu all --model tests/data/alexnet.onnx --batch 8 --plot out.pdf", ".svg or .png"},
        {"predict --gpu all --model tests/data/alexnet.onnx", "--batch is required"},
        {NULL, NULL},
    };
    for (int i = 0; cases[i].args; i++) {
        s_aggregator(cases[i].args, 2, out, sizeof out);
        cr_assert(strstr(out, cases[i].says), "'%s' should say '%s':\n%s", cases[i].args,
                  cases[i].says, out);
    }
    /* The database is checked before the model is read: an unreachable one
     * is named (exit 1) even with a model that could not be loaded. */
    char cmd[2048];
    snprintf(cmd, sizeof cmd,
             "cd %s && TRAINCAST_LOG=warn %s/aggregator/aggregator predict --gpu all --model %s "
             "--batch 8 --db 'host=127.0.0.1 port=1 dbname=x connect_timeout=2'",
             TC_SOURCE_DIR, TC_BINARY_DIR, bad_onnx);
    cr_assert_eq(tc_test_run(cmd, out, sizeof out), 1, "%s", out);
    cr_assert(strstr(out, "127.0.0.1") && !strstr(out, bad_onnx), "%s", out);
    char args[512];
    snprintf(args, sizeof args, "predict --gpu all --model %s --batch 8", bad_onnx);
    s_aggregator(args, 2, out, sizeof out);
    cr_assert(strstr(out, bad_onnx), "%s", out);
    remove(bad_onnx);

    /* An inference export is predicted, with a warning that says so and how
     * to export for training. */
    s_aggregator("predict --gpu 'Fast Device' --model "
                 "tests/data/forms/resnet18_eval_params_as_inputs.onnx --batch 8",
                 3, out, sizeof out);
    cr_assert(strstr(out, "warn: --model tests/data/forms/resnet18_eval_params_as_inputs.onnx: "
                          "no BatchNormalization or Dropout node") &&
                  strstr(out, "TrainingMode.TRAINING"),
              "%s", out);

    /* A device without a fit is no bad input: its rows say no_fit, in every
     * format, and the exit status says rows are missing. */
    s_aggregator("predict --gpu 'Fast Device' --model tests/data/alexnet.onnx --batch 8,16", 3,
                 out, sizeof out);
    cr_assert(strstr(out, "no_fit: no fit (") && strstr(out, "aggregator fit"), "%s", out);
    s_aggregator("predict --gpu 'Fast Device' --model tests/data/alexnet.onnx --batch 8,16 "
                 "--format csv",
                 3, out, sizeof out);
    cr_assert(strstr(out, "\"Fast Device\",\"Fast Device\",no_fit,8,") &&
                  strstr(out, "\"Fast Device\",\"Fast Device\",no_fit,16,"),
              "%s", out);
    s_aggregator("predict --gpu 'Fast Device' --model tests/data/alexnet.onnx --batch 8 "
                 "--format json",
                 3, out, sizeof out);
    cr_assert(strstr(out, "{\"batch\":8,\"status\":\"no_fit\",\"iteration_ms\":null"), "%s",
              out);
    /* An ambiguous part of a name lists the devices it matches. */
    tc_store_t *s2 = NULL;
    cr_assert_eq(tc_store_open(s_dsn, &s2), 0, "%s", tc_errmsg());
    m = tc_law_load("squeezenet1_1");
    tc_law_put_benchmarks(s2, m, &tc_law_devices[1], tc_law_batches, 1);
    tc_model_destroy(&m);
    tc_store_destroy(&s2);
    s_aggregator("predict --gpu device --model tests/data/alexnet.onnx --batch 8", 2, out,
                 sizeof out);
    cr_assert(strstr(out, "'device' matches 2 devices: 'Fast Device', 'Slow Device'"), "%s", out);
}

/* The conv time fit subtracts from a measured iteration and the conv time
 * predict adds for the same model, device and batch come from one rule
 * (tc_conv_step.h): they must be equal, or every prediction carries the
 * difference as a silent bias. Then the rule's inputs change (every
 * backward-data benchmark three times slower, every forward one half as
 * fast again) and both must move, together. */
static size_t s_compare_conv_sums(tc_store_t *s, double *sums, bool law)
{
    size_t compared = 0;
    for (size_t dv = 0; dv < 2; dv++) {
        char *names[] = {(char *)tc_law_devices[dv].name};
        tc_fit_group_t *groups = NULL;
        size_t n_groups = 0;
        cr_assert_eq(tc_store_fit_groups(s, names, 1, TC_FIT_STAT_MEDIAN, false, &groups, &n_groups), 0, "%s", tc_errmsg());
        cr_assert_eq(n_groups, 1);
        tc_pred_device_t d;
        memset(&d, 0, sizeof d);
        snprintf(d.device.name, sizeof d.device.name, "%s", tc_law_devices[dv].name);
        cr_assert_eq(tc_store_fit_latest(s, d.device.name, NULL, NULL, NULL, NULL, &d.fit), 0, "%s",
                     tc_errmsg());
        for (size_t i = 0; i < sizeof tc_law_traced / sizeof tc_law_traced[0]; i++) {
            tc_model_t *m = tc_law_load(tc_law_traced[i]);
            for (size_t p = 0; p < groups[0].n_points; p++) {
                const tc_fit_point_t *pt = &groups[0].points[p];
                if (strcmp(pt->model_id, tc_model_id(m)) != 0)
                    continue;
                unsigned long batch = pt->batch;
                tc_pred_request_t req = {.model = m, .batches = &batch, .n_batches = 1,
                                         .dataset_size = 1000};
                cr_assert_eq(tc_predict_lookup(s, &req, &d), 0, "%s", tc_errmsg());
                cr_assert_eq(d.missing, 0, "%s b%lu: %zu conv lookups missing", tc_law_traced[i],
                             batch, d.missing);
                cr_assert_eq(tc_predict_device(s, &req, &d), 0, "%s", tc_errmsg());
                cr_expect(fabs(d.points[0].conv_bench_ms - pt->conv_ms) <= 1e-12 * pt->conv_ms,
                          "%s on %s at batch %lu: fit subtracts %.15g ms of convs, predict "
                          "adds %.15g ms",
                          tc_law_traced[i], d.device.name, batch, pt->conv_ms,
                          d.points[0].conv_bench_ms);
                /* And both are the law's conv sum. */
                if (law)
                    cr_expect(fabs(pt->conv_ms - tc_law_conv_sum(m, pt->batch,
                                                                 tc_law_devices[dv].speed)) <=
                                  1e-9 * pt->conv_ms,
                              "%s b%lu: %.15g", tc_law_traced[i], batch, pt->conv_ms);
                sums[compared++] = pt->conv_ms;
            }
            tc_model_destroy(&m);
        }
        tc_pred_device_free(&d);
        tc_fit_groups_free(&groups, n_groups);
    }
    return compared;
}

Test(predict, fit_subtracts_the_conv_sum_predict_adds, .timeout = 600)
{
    s_build_fixture();
    static char out[1 << 16];
    s_aggregator("fit", 0, out, sizeof out);
    tc_store_t *s = NULL;
    cr_assert_eq(tc_store_open(s_dsn, &s), 0, "%s", tc_errmsg());
    enum { MAX = 1024 };
    static double before[MAX], after[MAX];
    size_t want = 2 * 3 * (sizeof tc_law_traced / sizeof tc_law_traced[0]);
    cr_assert_leq(want, MAX);
    cr_assert_eq(s_compare_conv_sums(s, before, true), want,
                 "every traced (model, batch) on both devices compared");

    cr_assert_eq(tc_store_exec(s,
                               "UPDATE conv_results SET median_ms = median_ms * CASE direction "
                               "WHEN 'bwd_data' THEN 3 WHEN 'fwd' THEN 1.5 ELSE 1 END",
                               NULL, 0),
                 0, "%s", tc_errmsg());
    cr_assert_eq(s_compare_conv_sums(s, after, false), want);
    size_t moved = 0;
    for (size_t i = 0; i < want; i++)
        moved += after[i] > before[i] * 1.2;
    cr_expect_eq(moved, want, "only %zu of %zu conv sums moved with their benchmarks", moved,
                 want);
    tc_store_destroy(&s);
}

/* A CNN with layers of a class no traced CNN of the fit had gets a warning
 * naming the class; one whose classes were all seen gets none. And at each
 * batch the fastest device is compared with the next. */
Test(predict, unseen_classes_and_telling_devices_apart, .timeout = 600)
{
    s_build_fixture();
    static char out[1 << 16];
    s_aggregator("fit", 0, out, sizeof out);
    tc_store_t *s = NULL;
    cr_assert_eq(tc_store_open(s_dsn, &s), 0, "%s", tc_errmsg());
    tc_pred_device_t d;
    memset(&d, 0, sizeof d);
    snprintf(d.device.name, sizeof d.device.name, "%s", tc_law_devices[0].name);
    cr_assert_eq(tc_store_fit_latest(s, d.device.name, NULL, NULL, NULL, NULL, &d.fit), 0, "%s",
                 tc_errmsg());
    tc_model_t *seen = tc_law_load("resnet34"), *unseen = tc_law_load("convnext_tiny");
    cr_assert_eq(tc_predict_unseen_classes(s, seen, &d), 0, "%s", tc_errmsg());
    cr_expect_str_eq(d.unseen, "", "resnet34's classes were all traced");
    cr_assert_eq(tc_predict_unseen_classes(s, unseen, &d), 0, "%s", tc_errmsg());
    cr_expect(strstr(d.unseen, "norm (23 layers)"), "convnext's layer norms: '%s'", d.unseen);
    cr_expect(strstr(d.unseen, "copy ("), "convnext's permutes before them: '%s'", d.unseen);
    tc_model_destroy(&seen);
    tc_model_destroy(&unseen);
    tc_store_destroy(&s);

    s_aggregator("predict --gpu all --model tests/data/resnet18.onnx --batch 8,32 --wait 0", 0,
                 out, sizeof out);
    cr_expect(strstr(out, "told apart (95 %)"), "%s", out);
    cr_expect(strstr(out, "batch 8 ") && strstr(out, "batch 32 "), "%s", out);
    s_aggregator("predict --gpu all --model tests/data/resnet18.onnx --batch 8 --wait 0 "
                 "--format json",
                 0, out, sizeof out);
    cr_expect(strstr(out, "\"told_apart\":[{\"batch\":8,\"faster\":\"Fast Device\""), "%s", out);
}

/* Batches far outside the fitted range (8..32) are not predicted by
 * default: each such row says out_of_range in every format, the rows that
 * can be predicted are, and the exit status is 3 (0 when every row is
 * predicted). --extrapolate 0 allows any batch. */
Test(predict, partial_answers_per_device_and_batch, .timeout = 600)
{
    s_build_fixture();
    static char out[1 << 16];
    s_aggregator("fit", 0, out, sizeof out);
    s_aggregator("predict --gpu all --model tests/data/resnet18.onnx --batch 8,1024 --wait 0 "
                 "--format csv",
                 3, out, sizeof out);
    double v[6];
    char status[64] = "";
    for (size_t d = 0; d < 2; d++) {
        cr_assert(s_row(out, tc_law_devices[d].name, 8, v, status, sizeof status), "%s", out);
        cr_expect_str_eq(status, "ok", "%s", out);
        cr_assert(s_row(out, tc_law_devices[d].name, 1024, v, status, sizeof status), "%s", out);
        cr_expect_str_eq(status, "out_of_range", "%s", out);
    }
    cr_assert(strstr(out, "batch 1024 is outside the fit's batches 8..32"), "%s", out);
    s_aggregator("predict --gpu all --model tests/data/resnet18.onnx --batch 8,1024 --wait 0", 3,
                 out, sizeof out);
    cr_assert(strstr(out, "1024  -- out_of_range: batch 1024"), "%s", out);
    cr_assert(strstr(out, "2 of 4 rows could not be predicted"), "%s", out);
    cr_assert(strstr(out, "fastest:  Fast Device at batch 8"), "%s", out);
    s_aggregator("predict --gpu all --model tests/data/resnet18.onnx --batch 8,1024 --wait 0 "
                 "--format json",
                 3, out, sizeof out);
    cr_assert(strstr(out, "{\"batch\":1024,\"status\":\"out_of_range\""), "%s", out);
    cr_assert(strstr(out, "{\"batch\":8,\"status\":\"ok\",\"iteration_ms\":"), "%s", out);
    /* Allowed any batch, 1024 is no longer out of range, but nothing was
     * benchmarked there. */
    s_aggregator("predict --gpu all --model tests/data/resnet18.onnx --batch 8,1024 --wait 0 "
                 "--extrapolate 0 --format csv",
                 3, out, sizeof out);
    cr_assert(s_row(out, "Slow Device", 1024, v, status, sizeof status), "%s", out);
    cr_expect_str_eq(status, "missing_benchmarks", "%s", out);
    s_aggregator("predict --gpu all --model tests/data/resnet18.onnx --batch 8,16 --wait 0 "
                 "--format csv",
                 0, out, sizeof out);
    s_aggregator("predict --gpu all --model tests/data/resnet18.onnx --batch 8 --extrapolate 0.5",
                 2, out, sizeof out);
    cr_assert(strstr(out, "--extrapolate must be"), "%s", out);
}

/* Every predicted row is stored with its fit; prediction_vs_trace puts it
 * next to the traces of the same model, device and batch measured after it,
 * and only those. */
Test(predict, predictions_are_stored_next_to_later_traces, .timeout = 600)
{
    s_build_fixture();
    static char out[1 << 16];
    s_aggregator("fit", 0, out, sizeof out);
    s_aggregator("predict --gpu all --model tests/data/resnet18.onnx --batch 8,16,1024 --wait 0",
                 3, out, sizeof out);
    cr_assert_eq(tc_test_sql_count(s_dsn, "SELECT count(*) FROM predictions"), 4,
                 "two devices x two predictable batches");
    cr_assert_eq(tc_test_sql_count(s_dsn, "SELECT count(DISTINCT request_id) FROM predictions"), 1);
    cr_assert_eq(tc_test_sql_count(s_dsn,
                                   "SELECT count(*) FROM predictions p JOIN latest_fit f USING "
                                   "(fit_id) WHERE f.device = p.device AND p.model_name = "
                                   "'resnet18' AND p.model_sha256 IS NOT NULL AND "
                                   "p.lo_ms < p.iteration_ms AND p.iteration_ms < p.hi_ms"),
                 4, "each row names its fit, model and interval");
    s_aggregator("predict --gpu all --model tests/data/resnet18.onnx --batch 8 --wait 0 --no-store",
                 0, out, sizeof out);
    cr_assert_eq(tc_test_sql_count(s_dsn, "SELECT count(*) FROM predictions"), 4, "--no-store");
    /* The fixture's traces started before the prediction: nothing measured
     * later yet. */
    cr_assert_eq(tc_test_sql_count(s_dsn, "SELECT count(*) FROM prediction_vs_trace WHERE "
                                          "measured_ms IS NOT NULL"),
                 0);
    /* A trace of resnet18 at batch 16 on the fast device, started after the
     * prediction, 10 % slower than the law. */
    tc_store_t *s = NULL;
    cr_assert_eq(tc_store_open(s_dsn, &s), 0, "%s", tc_errmsg());
    tc_model_t *m = tc_law_load("resnet18");
    double ms = 1.1 * (tc_law_conv_sum(m, 16, 1.0) + tc_law_other_ms(m, 16, 1.0));
    tc_envelope_t *env = tc_test_envelope("agent-fixture");
    env->body_case = TRAINCAST__V1__ENVELOPE__BODY_TRAIN_TRACE;
    Traincast__V1__TrainTrace *t = tc_test_trace("uuid-fast", tc_model_id(m), 16, ms);
    t->device->name = (char *)"Fast Device";
    t->policy = TRAINCAST__V1__POLICY__POLICY_UNSPECIFIED;
    t->input_size = 224;
    t->started_at_us = tc_now_us() + 1000000;
    env->train_trace = t;
    tc_law_put(s, env);
    tc_model_destroy(&m);
    tc_store_destroy(&s);
    cr_assert_eq(tc_test_sql_count(s_dsn, "SELECT count(*) FROM prediction_vs_trace WHERE "
                                          "measured_ms IS NOT NULL"),
                 1, "only the fast device's batch 16 was traced later");
    long long err = tc_test_sql_count(s_dsn, "SELECT round(10 * error_pct) FROM prediction_vs_trace "
                                             "WHERE device = 'Fast Device' AND batch = 16");
    /* predicted = law, measured = 1.1 law: error -9.1 % (within the fit's
     * own small error). */
    cr_expect(err <= -85 && err >= -97, "error_pct * 10 = %lld", err);
}

/* Where every matmul of the traced CNNs is benchmarked, the fit subtracts
 * their step time from the traces with the convs' and predict adds it back:
 * with traces = conv sum + matmul sum + the law's rest, the untraced
 * resnet34 gets the law's matmul sum in its own column and the rest in the
 * non-conv one. A missing matmul benchmark, or a model stored without its
 * matmul list, leaves the matmuls regressed, and fit says why. */
Test(predict, benchmarked_matmuls_subtracted_and_added_back, .timeout = 600)
{
    tc_store_t *s = tc_test_fresh_store("predict_matmuls", s_dsn, sizeof s_dsn);
    const tc_law_device_t *dev = &tc_law_devices[0];
    for (size_t i = 0; i < sizeof tc_law_traced / sizeof tc_law_traced[0]; i++) {
        tc_model_t *m = tc_law_load(tc_law_traced[i]);
        tc_law_put_benchmarks(s, m, dev, tc_law_batches, 3);
        tc_law_put_matmul_benchmarks(s, m, dev, tc_law_batches, 3);
        for (size_t b = 0; b < 3; b++) {
            unsigned n = tc_law_batches[b];
            tc_law_put_trace_ms(s, m, dev, n,
                                tc_law_conv_sum(m, n, dev->speed) +
                                    tc_law_matmul_sum(m, n, dev->speed) +
                                    tc_law_other_ms(m, n, dev->speed));
        }
        tc_model_destroy(&m);
    }
    tc_model_t *r34 = tc_law_load("resnet34");
    const unsigned b16[] = {16};
    tc_law_put_benchmarks(s, r34, dev, b16, 1);
    tc_law_put_matmul_benchmarks(s, r34, dev, b16, 1);
    tc_store_destroy(&s);
    cr_assert_gt(tc_model_matmul_count(r34), 0, "resnet34 has a classifier");
    cr_assert_gt(tc_test_sql_count(s_dsn, "SELECT count(*) FROM model_matmuls"), 0);

    static char out[1 << 20];
    s_aggregator("fit", 0, out, sizeof out);
    cr_assert(strstr(out, "benchmarked: convs and matmuls"), "%s", out);
    cr_assert_eq(tc_test_sql_count(s_dsn, "SELECT count(*) FROM fits WHERE matmuls"), 1, "%s",
                 out);
    s_aggregator("predict --gpu all --model tests/data/resnet34.onnx --batch 16 --format csv "
                 "--wait 0",
                 0, out, sizeof out);
    static char f[24][512];
    const char *row = strchr(out, '\n');
    cr_assert(row && s_fields(row + 1, f) >= 20, "%s", out);
    cr_assert_str_eq(f[3], "ok", "%s", out);
    double conv = tc_law_conv_sum(r34, 16, 1.0), mm = tc_law_matmul_sum(r34, 16, 1.0),
           other = tc_law_other_ms(r34, 16, 1.0);
    cr_assert_float_eq(atof(f[8]), conv, conv * 1e-6, "conv %s, want %g", f[8], conv);
    cr_assert_float_eq(atof(f[9]), mm, mm * 1e-3, "matmul %s, want %g", f[9], mm);
    cr_assert_float_eq(atof(f[10]), other, other * 0.01 + 0.01, "rest %s, want %g", f[10], other);
    cr_assert_float_eq(atof(f[5]), conv + mm + other, (conv + mm + other) * 0.01, "%s", out);
    tc_model_destroy(&r34);

    /* One matmul benchmark fewer: regressed with the rest, and said why. */
    cr_assert_eq(tc_test_sql_count(s_dsn,
                                   "WITH d AS (DELETE FROM matmul_results WHERE result_id = "
                                   "(SELECT min(result_id) FROM matmul_results) RETURNING 1) "
                                   "SELECT count(*) FROM d"),
                 1);
    s_aggregator("fit", 0, out, sizeof out);
    cr_assert(strstr(out, "matmuls regressed with the rest") &&
                  strstr(out, "1 matmul measurement of the traced models lacks benchmarks"),
              "%s", out);
    cr_assert_eq(tc_test_sql_count(s_dsn, "SELECT count(*) FROM fits WHERE NOT matmuls"), 1);
    /* A model stored from an older agent's graph: its matmuls are unknown. */
    cr_assert_eq(tc_test_sql_count(s_dsn,
                                   "WITH u AS (UPDATE models SET matmuls_listed = false "
                                   "WHERE name = 'vgg11' RETURNING 1) SELECT count(*) FROM u"),
                 1);
    s_aggregator("fit --format json", 0, out, sizeof out);
    cr_assert(strstr(out, "\"benchmarked\": \"conv\""), "%s", out);
    s_aggregator("fit", 0, out, sizeof out);
    cr_assert(strstr(out, "came without a matmul list") && strstr(out, "vgg11"), "%s", out);
}
