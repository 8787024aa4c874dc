/* What predict (and fit, validate, alias) tell a user, against the stored
 * fixture of tc_test_law.h: lines that fit a terminal with long device
 * names, aliases and prices by part of a name, table, CSV and JSON saying
 * the same, no device "told apart" on an uncalibrated interval or a
 * clamped time, and the conv sum alone stored when the regression
 * validates worse. */
#include "tc_error.h"
#include "tc_json.h"
#include "tc_model.h"
#include "tc_test.h"
#include "tc_test_law.h"
#include "tc_test_proc.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char s_dsn[1024];

#define S_LONG_FAST                                                                            \
    "AMD EPYC 7B13 64-Core Processor (1 thread) [tcmalloc 2.10 | OpenBLAS 0.3.21 openmp | "   \
    "pytorch 1.13.0a0]"
#define S_LONG_SLOW                                                                            \
    "AMD EPYC 7B13 64-Core Processor (2 threads) [tcmalloc 2.10 | OpenBLAS 0.3.21 openmp | "  \
    "pytorch 1.13.0a0]"

static void s_aggregator(const char *args, int want_status, char *out, size_t size)
{
    char cmd[4096];
    snprintf(cmd, sizeof cmd,
             "cd %s && TRAINCAST_LOG=warn TRAINCAST_PROGRESS=none %s/aggregator/aggregator %s "
             "--db '%s'",
             TC_SOURCE_DIR, TC_BINARY_DIR, args, s_dsn);
    int st = tc_test_run(cmd, out, size);
    cr_assert_eq(st, want_status, "'%s' exited %d, want %d:\n%s", args, st, want_status, out);
}

/* A file `name` holding `text` in this test's scratch directory; its path
 * into `path` (of S_PATH). */
#define S_PATH 1200
static void s_file(char *path, const char *name, const char *text)
{
    char dir[1024];
    tc_test_tmpdir("predict_out", dir, sizeof dir);
    snprintf(path, S_PATH, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f, "%s", path);
    fputs(text, f);
    fclose(f);
}

/* The longest line of `text`, and the first line longer than `limit`. */
static size_t s_widest(const char *text, size_t limit, char *first_over, size_t size)
{
    size_t widest = 0;
    first_over[0] = '\0';
    for (const char *p = text; *p;) {
        size_t n = strcspn(p, "\n");
        if (n > limit && !first_over[0])
            snprintf(first_over, size, "%.*s", (int)n, p);
        widest = n > widest ? n : widest;
        p += n + (p[n] == '\n');
    }
    return widest;
}

/* The fixture with the two devices under long names, as CPU devices are
 * named (so their default aliases are "EPYC 7B13 1t" and "EPYC 7B13 2t"),
 * fitted. */
static void s_long_names(void)
{
    tc_law_build("predict_out_long", s_dsn, sizeof s_dsn);
    tc_test_sql(s_dsn, "UPDATE devices SET name = '" S_LONG_FAST "' WHERE name = 'Fast Device'");
    tc_test_sql(s_dsn, "UPDATE devices SET name = '" S_LONG_SLOW "' WHERE name = 'Slow Device'");
    static char out[1 << 16];
    s_aggregator("fit", 0, out, sizeof out);
}

Test(predict_output, lines_fit_120_columns_with_long_names, .timeout = 600)
{
    s_long_names();
    static char out[1 << 17];
    char over[4096], prices[S_PATH];
    /* Every column (prices and energy too), a row not predicted (out of
     * range) with its long reason. */
    s_file(prices, "prices.txt",
           "1 thread = 2.50   # a part of the name\nEPYC 7B13 2t = 1.25  # an alias\n");
    char args[2048];
    snprintf(args, sizeof args,
             "predict --gpu all --model tests/data/resnet18.onnx --batch 8,16,32,1024 --wait 0 "
             "--prices %s",
             prices);
    s_aggregator(args, 3, out, sizeof out);
    size_t widest = s_widest(out, 120, over, sizeof over);
    cr_expect_leq(widest, 120, "a line of %zu characters:\n%s\n\n%s", widest, over, out);
    cr_expect(strstr(out, "\nEPYC 7B13 1t ") && strstr(out, "\nEPYC 7B13 2t "),
              "rows by alias:\n%s", out);
    cr_expect(strstr(out, "cost/epoch") && strstr(out, "kJ/epoch"), "%s", out);
    cr_expect(strstr(out, "cheapest: EPYC 7B13 1t at batch 32"), "%s", out);
    /* The full names are said once each, as the legend of the aliases. */
    cr_expect(strstr(out, "EPYC 7B13 1t: AMD EPYC 7B13 64-Core Processor (1 thread)"), "%s",
              out);

    /* --wide: full names in the rows, lines as long as they are. */
    snprintf(args, sizeof args,
             "predict --gpu all --model tests/data/resnet18.onnx --batch 8,16,32,1024 --wait 0 "
             "--prices %s --wide",
             prices);
    s_aggregator(args, 3, out, sizeof out);
    cr_expect_gt(s_widest(out, 120, over, sizeof over), 120, "%s", out);
    cr_expect(strstr(out, "\n" S_LONG_FAST " "), "%s", out);

    /* Without prices no cost column, and no --wide: no line over 120. */
    s_aggregator("predict --gpu all --model tests/data/resnet18.onnx --batch 8,16,32 --wait 0",
                 0, out, sizeof out);
    widest = s_widest(out, 120, over, sizeof over);
    cr_expect_leq(widest, 120, "%s\n\n%s", over, out);
    cr_expect_null(strstr(out, "cost/epoch"), "an empty column:\n%s", out);
    cr_expect(strstr(out, "cheapest: give --prices"), "%s", out);

    /* resnet34 is benchmarked on the fast device only (the slow one has
     * its convs at 16 from the traced CNNs, not at 64): the slow device's
     * advice (what lacks, the command that measures it) is said once, on
     * standard output, within the width, the command continued across
     * lines ending in a backslash. */
    s_aggregator("predict --gpu all --model tests/data/resnet34.onnx --batch 16,64 --wait 0", 3,
                 out, sizeof out);
    widest = s_widest(out, 120, over, sizeof over);
    cr_expect_leq(widest, 120, "%s\n\n%s", over, out);
    size_t advice = 0;
    for (const char *p = out; (p = strstr(p, "agent bench --models")); p++)
        advice++;
    cr_expect_eq(advice, 1, "the command once, not again on stderr:\n%s", out);
    cr_expect(strstr(out, " \\\n      "), "a command continued:\n%s", out);

    /* CSV: the prices went to the devices their entries name. */
    snprintf(args, sizeof args,
             "predict --gpu all --model tests/data/resnet18.onnx --batch 8 --wait 0 --prices %s "
             "--format json",
             prices);
    s_aggregator(args, 0, out, sizeof out);
    cr_expect(strstr(out, "\"alias\":\"EPYC 7B13 1t\"") && strstr(out, "\"price_per_hour\":2.5") &&
                  strstr(out, "\"price_per_hour\":1.25"),
              "%s", out);
    remove(prices);

    /* A price for a device nobody knows is an error naming the entry and
     * the devices known, with their aliases. */
    s_file(prices, "unknown.txt", "1 thread = 2.5\nA100 = 3\n");
    snprintf(args, sizeof args,
             "predict --gpu all --model tests/data/resnet18.onnx --batch 8 --wait 0 --prices %s",
             prices);
    s_aggregator(args, 2, out, sizeof out);
    cr_expect(strstr(out, ":2: --prices: unknown device 'A100'") &&
                  strstr(out, "'" S_LONG_FAST "' (EPYC 7B13 1t)"),
              "%s", out);
    remove(prices);
    /* An entry matching both devices is one too. */
    s_file(prices, "ambiguous.txt", "EPYC = 2.5\n");
    snprintf(args, sizeof args,
             "predict --gpu all --model tests/data/resnet18.onnx --batch 8 --wait 0 --prices %s",
             prices);
    s_aggregator(args, 2, out, sizeof out);
    cr_expect(strstr(out, "'EPYC' matches 2 devices"), "%s", out);
    remove(prices);
}

/* The value of CSV cell `cell` and JSON value `v` agree: empty and null,
 * true/false and booleans, numbers to 1e-9, text. */
static void s_agree(const char *what, const char *cell, const tc_json_value_t *v)
{
    cr_assert_not_null(v, "%s: in CSV but not in JSON", what);
    switch (tc_json_type(v)) {
    case TC_JSON_NULL:
        cr_expect_str_eq(cell, "", "%s: CSV '%s', JSON null", what, cell);
        break;
    case TC_JSON_BOOL:
        cr_expect_str_eq(cell, tc_json_bool(v) ? "true" : "false", "%s", what);
        break;
    case TC_JSON_NUMBER:
        cr_expect(*cell && fabs(atof(cell) - tc_json_number(v)) <=
                               1e-9 * fabs(tc_json_number(v)) + 1e-12,
                  "%s: CSV '%s', JSON %.10g", what, cell, tc_json_number(v));
        break;
    case TC_JSON_STRING:
        cr_expect_str_eq(cell, tc_json_string(v), "%s", what);
        break;
    default:
        cr_expect(false, "%s: JSON %s", what, tc_json_type_name(tc_json_type(v)));
    }
}

/* Split a CSV line (quoted cells with "" inside) into cells. */
static size_t s_cells(const char *line, char cells[32][2048])
{
    size_t n = 0;
    const char *p = line;
    for (;;) {
        char *c = cells[n++];
        size_t k = 0;
        if (*p == '"') {
            for (p++; *p && !(*p == '"' && p[1] != '"'); p++) {
                if (*p == '"')
                    p++;
                if (k < 2047)
                    c[k++] = *p;
            }
            p += *p == '"';
        } else {
            for (; *p && *p != ',' && *p != '\n'; p++)
                if (k < 2047)
                    c[k++] = *p;
        }
        c[k] = '\0';
        if (*p != ',' || n == 32)
            return n;
        p++;
    }
}

/* Every CSV row of predict against its JSON prediction, field by field;
 * returns the rows compared, and how many were clamped and had an
 * uncalibrated interval. */
static size_t s_csv_json_agree(const char *csv, const char *json, size_t *clamped,
                               size_t *uncalibrated)
{
    tc_json_t *doc = NULL;
    cr_assert_eq(tc_json_parse(json, strlen(json), NULL, &doc), 0, "%s\n%s", tc_errmsg(), json);
    const tc_json_value_t *devs = tc_json_get(tc_json_root(doc), "devices");
    static char head[32][2048], row[32][2048];
    size_t nh = s_cells(csv, head), rows = 0;
    *clamped = *uncalibrated = 0;
    for (const char *line = strchr(csv, '\n'); line && line[1]; line = strchr(line + 1, '\n')) {
        size_t nr = s_cells(line + 1, row);
        cr_assert_eq(nr, nh, "a row of %zu cells under %zu names: %s", nr, nh, line + 1);
        const tc_json_value_t *dev = NULL, *pred = NULL;
        for (size_t i = 0; i < tc_json_len(devs) && !dev; i++) {
            const tc_json_value_t *d = tc_json_at(devs, i);
            if (!strcmp(tc_json_string(tc_json_get(d, "name")), row[1]))
                dev = d;
        }
        cr_assert_not_null(dev, "device %s not in JSON", row[1]);
        s_agree("alias", row[2], tc_json_get(dev, "alias"));
        const tc_json_value_t *preds = tc_json_get(dev, "predictions");
        for (size_t j = 0; j < tc_json_len(preds) && !pred; j++) {
            const tc_json_value_t *p = tc_json_at(preds, j);
            if ((long)tc_json_number(tc_json_get(p, "batch")) == atol(row[4]))
                pred = p;
        }
        cr_assert_not_null(pred, "%s batch %s not in JSON", row[1], row[4]);
        for (size_t c = 3; c < nh; c++) {
            char what[256];
            snprintf(what, sizeof what, "%s at batch %s: %s", row[2], row[4], head[c]);
            s_agree(what, row[c], tc_json_get(pred, head[c]));
            if (!strcmp(head[c], "nonconv_clamped"))
                *clamped += !strcmp(row[c], "true");
            if (!strcmp(head[c], "interval_calibrated") && !strcmp(row[3], "ok"))
                *uncalibrated += !strcmp(row[c], "false");
        }
        rows++;
    }
    tc_json_destroy(&doc);
    return rows;
}

/* How often a digit is followed by `mark` and a space in the table's rows:
 * the '!' of a clamped time and the '?' of an uncalibrated interval. */
static size_t s_marks(const char *table, char mark)
{
    size_t n = 0;
    for (const char *p = table + 1; *p; p++)
        n += *p == mark && p[1] == ' ' && p[-1] >= '0' && p[-1] <= '9';
    return n;
}

static void s_predict_all(char *csv, char *json, char *table, size_t size)
{
    const char *base = "predict --gpu all --model tests/data/resnet18.onnx --batch 8,16,32 "
                       "--wait 0 --no-store";
    char args[512];
    snprintf(args, sizeof args, "%s --format csv", base);
    s_aggregator(args, 0, csv, size);
    snprintf(args, sizeof args, "%s --format json", base);
    s_aggregator(args, 0, json, size);
    s_aggregator(base, 0, table, size);
}

/* The fixture has 15 points a device: too few to calibrate an interval
 * (39), so no device is told apart by them; calibrated, they are; a
 * clamped time never is. CSV, JSON and the table's marks agree each time. */
Test(predict_output, trust_told_apart_and_formats_agree, .timeout = 600)
{
    tc_law_build("predict_out_trust", s_dsn, sizeof s_dsn);
    static char csv[1 << 16], json[1 << 16], table[1 << 16];
    s_aggregator("fit", 0, table, sizeof table);
    cr_assert_eq(tc_test_sql_count(s_dsn, "SELECT count(*) FROM latest_fit "
                                          "WHERE cardinality(features) > 0"),
                 2, "the law's regression validates better than the conv sum alone");
    size_t clamped, uncal;

    s_predict_all(csv, json, table, sizeof csv);
    cr_expect_eq(s_csv_json_agree(csv, json, &clamped, &uncal), 6);
    cr_expect_eq(clamped, 0);
    cr_expect_eq(uncal, 6, "%s", csv);
    cr_expect_eq(s_marks(table, '?'), 6, "%s", table);
    cr_expect(strstr(table, "intervals not calibrated (?)"), "%s", table);
    cr_expect(strstr(table, "validated error "), "%s", table);
    cr_expect_null(strstr(table, " faster than "), "no claim on uncalibrated intervals:\n%s",
                   table);
    cr_expect(strstr(table, "not compared: predicted 2.50x, but the intervals are not "
                            "calibrated"),
              "%s", table);
    cr_expect(strstr(json, "\"apart\":false,\"method\":\"intervals\"") &&
                  strstr(json, "\"caveat\":\"uncalibrated\""),
              "%s", json);
    cr_expect_null(strstr(json, "\"apart\":true"), "%s", json);

    /* Calibrated (as a fit with enough held-out points would be): told
     * apart, no '?'. */
    tc_test_sql(s_dsn, "UPDATE fits SET interval_lo = 0.95, interval_hi = 1.05");
    s_predict_all(csv, json, table, sizeof csv);
    cr_expect_eq(s_csv_json_agree(csv, json, &clamped, &uncal), 6);
    cr_expect_eq(uncal, 0, "%s", csv);
    cr_expect_eq(s_marks(table, '?'), 0, "%s", table);
    cr_expect(strstr(table, "Fast Device is 2.50x faster than Slow Device"), "%s", table);
    cr_expect(strstr(json, "\"apart\":true"), "%s", json);

    /* The slow device's fit extrapolates below zero: its times are clamped
     * and flagged in every format, with the reason in JSON too, and it is
     * told apart from nothing. */
    tc_test_sql(s_dsn, "UPDATE fits SET coefficients = array_fill(-1e6::float8, "
                       "ARRAY[cardinality(coefficients)]) WHERE device = 'Slow Device'");
    s_predict_all(csv, json, table, sizeof csv);
    cr_expect_eq(s_csv_json_agree(csv, json, &clamped, &uncal), 6);
    cr_expect_eq(clamped, 3, "%s", csv);
    cr_expect_eq(s_marks(table, '!'), 3, "%s", table);
    cr_expect(strstr(json, "\"nonconv_clamped\":true,\"interval_calibrated\":true,"
                           "\"fit_cv_mape_pct\":") &&
                  strstr(json, "\"reason\":\"non-conv time clamped at 0"),
              "%s", json);
    cr_expect_null(strstr(table, " faster than "), "%s", table);
    cr_expect(strstr(table, "not compared: predicted") && strstr(table, "clamped at 0 (!)"), "%s",
              table);
    cr_expect(strstr(json, "\"caveat\":\"clamped\""), "%s", json);
    cr_expect_null(strstr(json, "\"apart\":true"), "%s", json);
}

Test(predict_output, aliases_set_and_used, .timeout = 600)
{
    tc_law_build("predict_out_alias", s_dsn, sizeof s_dsn);
    static char out[1 << 16];
    s_aggregator("fit", 0, out, sizeof out);
    s_aggregator("alias --format csv", 0, out, sizeof out);
    cr_expect(strstr(out, "device,alias,alias_set\nFast Device,Fast Device,false\n"),
              "defaults from the names:\n%s", out);
    s_aggregator("alias fast speedy", 0, out, sizeof out);
    cr_expect(strstr(out, "'Fast Device' is now 'speedy'"), "%s", out);
    cr_expect_eq(tc_test_sql_count(s_dsn, "SELECT count(*) FROM device_aliases "
                                          "WHERE device = 'Fast Device' AND alias = 'speedy'"),
                 1);
    /* Taken (case ignored), a default of another device, malformed. */
    s_aggregator("alias slow SPEEDY", 2, out, sizeof out);
    cr_expect(strstr(out, "'SPEEDY' is the alias of 'Fast Device'"), "%s", out);
    s_aggregator("alias speedy 'slow device'", 2, out, sizeof out);
    cr_expect(strstr(out, "the default alias of 'Slow Device'"), "%s", out);
    s_aggregator("alias slow 'Fast device'", 2, out, sizeof out);
    cr_expect(strstr(out, "is the name of another device"), "%s", out);
    s_aggregator("alias slow 'a,b'", 2, out, sizeof out);
    s_aggregator("alias slow 'a name longer than sixteen'", 2, out, sizeof out);
    s_aggregator("alias nosuch x", 2, out, sizeof out);
    cr_expect(strstr(out, "unknown device 'nosuch'"), "%s", out);
    s_aggregator("alias slow", 2, out, sizeof out);

    /* predict: --gpu, --prices, the table and the plot by alias. */
    char prices[S_PATH], args[2048], svg[S_PATH];
    s_file(prices, "alias.txt", "SPEEDY = 4\n");
    snprintf(svg, sizeof svg, "%.*s/alias.svg", (int)(strrchr(prices, '/') - prices), prices);
    snprintf(args, sizeof args,
             "predict --gpu speedy,slow --model tests/data/resnet18.onnx --batch 8 --wait 0 "
             "--prices %s --plot %s",
             prices, svg);
    s_aggregator(args, 0, out, sizeof out);
    cr_expect(strstr(out, "\nspeedy ") && strstr(out, "cheapest: speedy at batch 8"), "%s", out);
    /* PLplot writes each character as a reference. */
    cr_expect(tc_test_file_contains(svg, "&#x73;&#x70;&#x65;&#x65;&#x64;&#x79;"),
              "the plot's legend by alias: speedy");
    cr_expect_not(tc_test_file_contains(svg, "&#x46;&#x61;&#x73;&#x74;"), "not by name: Fast");
    remove(svg);

    snprintf(args, sizeof args,
             "predict --gpu speedy --model tests/data/resnet18.onnx --batch 8 --wait 0 "
             "--prices %s --format csv",
             prices);
    s_aggregator(args, 0, out, sizeof out);
    cr_expect(strstr(out, "\"Fast Device\",\"speedy\",ok,8,"), "%s", out);
    remove(prices);

    s_aggregator("alias speedy --reset", 0, out, sizeof out);
    cr_expect(strstr(out, "'Fast Device' is 'Fast Device' again"), "%s", out);
    cr_expect_eq(tc_test_sql_count(s_dsn, "SELECT count(*) FROM device_aliases"), 0);
    s_aggregator("predict --gpu speedy --model tests/data/resnet18.onnx --batch 8 --wait 0", 2,
                 out, sizeof out);
}

/* Four CNNs whose every trace is exactly their conv sum and one that takes
 * six times its conv sum: a regression on bn.elems learns from that one
 * CNN and misses the others whenever it is held in, so on held-out CNNs it
 * does worse than the conv sum alone; the conv sum alone is stored, and
 * everything says so. */
Test(predict_output, conv_sum_chosen_when_the_regression_validates_worse, .timeout = 600)
{
    tc_store_t *s = tc_test_fresh_store("predict_out_convsum", s_dsn, sizeof s_dsn);
    const tc_law_device_t *dev = &tc_law_devices[0];
    size_t n = sizeof tc_law_traced / sizeof tc_law_traced[0];
    for (size_t i = 0; i < n; i++) {
        tc_model_t *m = tc_law_load(tc_law_traced[i]);
        tc_law_put_benchmarks(s, m, dev, tc_law_batches, 3);
        for (size_t b = 0; b < 3; b++) {
            double conv = tc_law_conv_sum(m, tc_law_batches[b], dev->speed);
            tc_law_put_trace_ms(s, m, dev, tc_law_batches[b], i + 1 == n ? 6 * conv : conv);
        }
        tc_model_destroy(&m);
    }
    tc_store_destroy(&s);
    static char out[1 << 16];
    s_aggregator("fit --features bn.elems --forms ols --weightings none", 0, out, sizeof out);
    cr_expect(strstr(out, "why: the conv sum alone: the regression chosen (ols, no weights: "
                          "bn.elems) validated worse on held-out CNNs (MAPE "),
              "%s", out);
    cr_expect(strstr(out, "no features (conv sum only)"), "%s", out);
    cr_expect_eq(tc_test_sql_count(s_dsn, "SELECT count(*) FROM latest_fit WHERE "
                                          "cardinality(features) = 0 AND "
                                          "abs(cv_mape - conv_only_mape) < 1e-9"),
                 1, "the conv sum alone stored, its validated error the conv sum's");
    s_aggregator("validate --features bn.elems --forms ols --weightings none", 0, out,
                 sizeof out);
    cr_expect(strstr(out, "the conv sum alone: the regression chosen"), "%s", out);
    s_aggregator("predict --gpu all --model tests/data/resnet18.onnx --batch 16 --wait 0", 0,
                 out, sizeof out);
    cr_expect(strstr(out, "fit: the conv sum alone over 5 CNNs"), "%s", out);
    s_aggregator("predict --gpu all --model tests/data/resnet18.onnx --batch 16 --wait 0 "
                 "--format json",
                 0, out, sizeof out);
    cr_expect(strstr(out, "\"form\":\"conv_sum_only\""), "%s", out);
    cr_expect(strstr(out, "\"nonconv_ms\":0.0000"), "%s", out);
}

/* validate: every CSV row (a device's, a CNN's) against the JSON object of
 * the same device or CNN, column by column where JSON has the same name,
 * and the table's MAPE column against them. */
Test(predict_output, validate_formats_agree, .timeout = 600)
{
    tc_law_build("predict_out_validate", s_dsn, sizeof s_dsn);
    static char csv[1 << 17], json[1 << 18], table[1 << 17];
    s_aggregator("validate --format csv", 0, csv, sizeof csv);
    s_aggregator("validate --format json", 0, json, sizeof json);
    s_aggregator("validate", 0, table, sizeof table);
    tc_json_t *doc = NULL;
    cr_assert_eq(tc_json_parse(json, strlen(json), NULL, &doc), 0, "%s\n%s", tc_errmsg(), json);
    const tc_json_value_t *devs = tc_json_get(tc_json_root(doc), "devices");
    cr_assert_eq(tc_json_len(devs), 2, "%s", json);
    static char head[32][2048], row[32][2048];
    size_t nh = s_cells(csv, head), rows = 0, compared = 0;
    cr_assert_str_eq(head[4], "scope");
    for (const char *line = strchr(csv, '\n'); line && line[1]; line = strchr(line + 1, '\n')) {
        size_t nr = s_cells(line + 1, row);
        cr_assert_eq(nr, nh, "%s", line + 1);
        const tc_json_value_t *obj = NULL;
        for (size_t i = 0; i < tc_json_len(devs) && !obj; i++) {
            const tc_json_value_t *d = tc_json_at(devs, i);
            if (strcmp(tc_json_string(tc_json_get(d, "device")), row[0]))
                continue;
            obj = d;
            if (!strcmp(row[4], "cnn")) {
                const tc_json_value_t *per = tc_json_get(d, "per_cnn"), *hit = NULL;
                for (size_t k = 0; k < tc_json_len(per) && !hit; k++)
                    if (!strcmp(tc_json_string(tc_json_get(tc_json_at(per, k), "cnn")), row[5]))
                        hit = tc_json_at(per, k);
                obj = hit;
            }
        }
        cr_assert_not_null(obj, "%s %s %s not in JSON", row[0], row[4], row[5]);
        for (size_t c = 6; c < nh; c++) {
            const tc_json_value_t *v = tc_json_get(obj, head[c]);
            if (!v || tc_json_type(v) == TC_JSON_ARRAY || tc_json_type(v) == TC_JSON_OBJECT)
                continue;
            char what[256];
            snprintf(what, sizeof what, "%s %s %s: %s", row[0], row[4], row[5], head[c]);
            if (tc_json_type(v) == TC_JSON_NUMBER) /* CSV has 4 decimals */
                cr_expect(fabs(atof(row[c]) - tc_json_number(v)) < 1e-4 && *row[c], "%s: %s %g",
                          what, row[c], tc_json_number(v));
            else
                s_agree(what, row[c], v);
            compared++;
        }
        /* The table's row of that CNN (or "all") shows the same MAPE. */
        char cell[64], mape[32];
        snprintf(mape, sizeof mape, "%.1f%%", atof(row[9]));
        snprintf(cell, sizeof cell, "\n  %-24s %6s %7s", !strcmp(row[4], "cnn") ? row[5] : "all",
                 row[6], mape);
        cr_expect(strstr(table, cell), "no table row '%s':\n%s", cell + 1, table);
        rows++;
    }
    tc_json_destroy(&doc);
    cr_expect_eq(rows, 12, "two devices: the device and five CNNs each:\n%s", csv);
    cr_expect_geq(compared, rows * 8, "columns compared");
}

/* validate's settings: only those that differ from the defaults. */
Test(predict_output, validate_settings_only_where_not_default, .timeout = 600)
{
    tc_law_build("predict_out_settings", s_dsn, sizeof s_dsn);
    tc_test_sql(s_dsn, "UPDATE traces SET settings_key = settings_key || "
                       "'; env.CUDA_LAUNCH_BLOCKING=; torch.backends.cudnn.enabled=True'");
    static char out[1 << 17];
    s_aggregator("validate --device 'Fast Device'", 0, out, sizeof out);
    cr_expect(strstr(out, "  settings: env.OMP_NUM_THREADS=1; torch.backends.mkldnn.enabled=true"
                          "\n"),
              "%s", out);
    cr_expect_null(strstr(out, "CUDA_LAUNCH_BLOCKING"), "%s", out);
    cr_expect_null(strstr(out, "cudnn.enabled"), "%s", out);
    s_aggregator("validate --device 'Fast Device' --format json", 0, out, sizeof out);
    cr_expect(strstr(out, "\"settings\": \"env.OMP_NUM_THREADS=1; "
                          "torch.backends.mkldnn.enabled=true\""),
              "%s", out);
}
