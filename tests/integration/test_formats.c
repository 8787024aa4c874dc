/* Every aggregator command that prints data says the same thing in each
 * format: run status, fit and predict on a real database in table, csv and
 * json, and compare the field names and the values field by field (CSV
 * cells against JSON values: the same text, the same number, null where
 * empty), times ISO 8601 in UTC, integers written as integers. */
#include "tc_error.h"
#include "tc_json.h"
#include "tc_test.h"
#include "tc_test_law.h"

#include <criterion/criterion.h>
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char s_dsn[1024];

#define S_MAX_COLS 48
#define S_MAX_ROWS 256

/* One CSV table: its header and rows (RFC 4180: quoted cells may hold
 * commas, doubled quotes, newlines). NULL cells are empty ones. */
typedef struct {
    char *cols[S_MAX_COLS];
    size_t ncols;
    char *cells[S_MAX_ROWS][S_MAX_COLS];
    size_t nrows;
} s_csv_t;

/* The output of `aggregator ARGS` (stdout only), into a static buffer. */
static const char *s_run(const char *args)
{
    static char out[1 << 20];
    char cmd[4096];
    snprintf(cmd, sizeof cmd,
             "cd %s && TRAINCAST_LOG=error TRAINCAST_PROGRESS=none %s/aggregator/aggregator %s "
             "--db '%s' 2>/dev/null",
             TC_SOURCE_DIR, TC_BINARY_DIR, args, s_dsn);
    int st = tc_test_run(cmd, out, sizeof out);
    cr_assert_eq(st, 0, "'%s' exited %d:\n%s", args, st, out);
    return out;
}

/* One CSV field at *p; advances past it and its separator; *end_of_line
 * when the record ended. Returns a malloc'd string. */
static char *s_csv_field(const char **p, bool *end_of_line)
{
    char buf[1 << 14];
    size_t n = 0;
    const char *s = *p;
    if (*s == '"') {
        s++;
        for (;;) {
            cr_assert(*s, "unterminated quoted CSV cell");
            if (*s == '"' && s[1] == '"') {
                buf[n++] = '"';
                s += 2;
            } else if (*s == '"') {
                s++;
                break;
            } else {
                buf[n++] = *s++;
            }
            cr_assert_lt(n, sizeof buf - 1);
        }
    } else {
        while (*s && *s != ',' && *s != '\n') {
            buf[n++] = *s++;
            cr_assert_lt(n, sizeof buf - 1);
        }
    }
    buf[n] = '\0';
    *end_of_line = *s != ',';
    if (*s)
        s++;
    *p = s;
    return strdup(buf);
}

/* Parse the CSV table that starts at `text` and ends at a blank line or
 * the end. Returns where it ended. */
static const char *s_csv_parse(const char *text, s_csv_t *t)
{
    memset(t, 0, sizeof *t);
    const char *p = text;
    bool eol = false;
    while (!eol) {
        cr_assert_lt(t->ncols, S_MAX_COLS);
        t->cols[t->ncols++] = s_csv_field(&p, &eol);
    }
    while (*p && *p != '\n') {
        cr_assert_lt(t->nrows, S_MAX_ROWS);
        size_t c = 0;
        eol = false;
        while (!eol) {
            cr_assert_lt(c, t->ncols, "a row with more cells than the header");
            t->cells[t->nrows][c++] = s_csv_field(&p, &eol);
        }
        cr_assert_eq(c, t->ncols, "a row with %zu cells, the header has %zu", c, t->ncols);
        t->nrows++;
    }
    return *p == '\n' ? p + 1 : p;
}

static void s_csv_free(s_csv_t *t)
{
    for (size_t c = 0; c < t->ncols; c++)
        free(t->cols[c]);
    for (size_t r = 0; r < t->nrows; r++)
        for (size_t c = 0; c < t->ncols; c++)
            free(t->cells[r][c]);
}

static int s_col(const s_csv_t *t, const char *name)
{
    for (size_t c = 0; c < t->ncols; c++)
        if (!strcmp(t->cols[c], name))
            return (int)c;
    return -1;
}

static bool s_is_iso_utc(const char *v)
{
    static const char pattern[] = "dddd-dd-ddTdd:dd:ddZ";
    if (strlen(v) != sizeof pattern - 1)
        return false;
    for (size_t i = 0; pattern[i]; i++)
        if (pattern[i] == 'd' ? !isdigit((unsigned char)v[i]) : v[i] != pattern[i])
            return false;
    return true;
}

/* A CSV cell and a JSON value say the same: empty and null; equal text;
 * the same number (to the CSV's printed precision, `tol` relative); the
 * same truth value. Column names ending in _bytes, and counts, must be
 * JSON integers. */
static void s_same_value(const char *where, const char *col, const char *cell,
                         const tc_json_value_t *v, double tol)
{
    cr_assert_not_null(v, "%s: json lacks %s", where, col);
    tc_json_type_t type = tc_json_type(v);
    if (!*cell) {
        cr_expect_eq(type, TC_JSON_NULL, "%s.%s: csv empty, json %s", where, col,
                     tc_json_type_name(type));
        return;
    }
    switch (type) {
    case TC_JSON_STRING:
        cr_expect_str_eq(tc_json_string(v), cell, "%s.%s", where, col);
        return;
    case TC_JSON_NUMBER: {
        char *end = NULL;
        double d = strtod(cell, &end);
        cr_expect(end != cell && !*end, "%s.%s: csv '%s' is no number, json is", where, col,
                  cell);
        double j = tc_json_number(v);
        cr_expect_leq(fabs(d - j), tol * fmax(1.0, fabs(d)), "%s.%s: csv %s, json %.17g",
                      where, col, cell, j);
        int64_t i;
        if (strstr(col, "bytes") || !strncmp(col, "n_", 2) || !strcmp(col, "batch") ||
            !strcmp(col, "count") || !strcmp(col, "ago_s"))
            cr_expect(tc_json_int(v, &i), "%s.%s: %s must be a JSON integer", where, col, cell);
        return;
    }
    case TC_JSON_BOOL: {
        bool t = !strcmp(cell, "true") || !strcmp(cell, "yes") || !strcmp(cell, "t");
        bool f = !strcmp(cell, "false") || !strcmp(cell, "no") || !strcmp(cell, "f");
        cr_expect(t || f, "%s.%s: csv '%s' is no truth value, json is", where, col, cell);
        cr_expect_eq(tc_json_bool(v), t, "%s.%s: csv %s", where, col, cell);
        return;
    }
    default:
        cr_expect_fail("%s.%s: csv '%s', json %s", where, col, cell, tc_json_type_name(type));
    }
}

static tc_json_t *s_json(const char *text)
{
    tc_json_t *doc = NULL;
    tc_json_limits_t lim = {.max_bytes = 1 << 20, .max_depth = 8, .max_values = 1 << 20};
    cr_assert_eq(tc_json_parse(text, strlen(text), &lim, &doc), 0, "%s\n%s", tc_errmsg(), text);
    return doc;
}

/* The table format: a table's header line is its CSV column names, in
 * order, and each non-empty CSV cell appears on the table's row. */
static void s_same_table(const char *table, const char *name, const s_csv_t *t)
{
    char head[64];
    snprintf(head, sizeof head, "%s (%zu)\n", name, t->nrows);
    const char *p = strstr(table, head);
    cr_assert_not_null(p, "table lacks '%s':\n%s", head, table);
    p += strlen(head);
    if (!t->nrows)
        return;
    const char *line = p;
    for (size_t c = 0; c < t->ncols; c++) {
        while (*line == ' ')
            line++;
        size_t n = strlen(t->cols[c]);
        cr_assert(!strncmp(line, t->cols[c], n), "table %s: column %zu is not %s:\n%s", name, c,
                  t->cols[c], p);
        line += n;
    }
    for (size_t r = 0; r < t->nrows; r++) {
        line = strchr(line, '\n') + 1;
        size_t len = strcspn(line, "\n");
        for (size_t c = 0; c < t->ncols; c++) {
            const char *cell = t->cells[r][c];
            if (!*cell || !strcmp(t->cols[c], "ago_s"))
                continue;
            char *row = strndup(line, len);
            cr_expect(strstr(row, cell), "table %s row %zu lacks %s = '%s':\n%s", name, r,
                      t->cols[c], cell, row);
            free(row);
        }
    }
}

/* status: four tables, each the same in csv, json and table. */
Test(formats, status_agrees_in_every_format, .timeout = 600)
{
    tc_law_build("formats_status", s_dsn, sizeof s_dsn);
    char *csv = strdup(s_run("status --format csv"));
    char *table = strdup(s_run("status"));
    tc_json_t *doc = s_json(s_run("status --format json"));
    const tc_json_value_t *root = tc_json_root(doc);
    const char *sections[] = {"agents", "devices", "stored", "jobs"};
    const char *p = csv;
    for (size_t k = 0; k < 4; k++) {
        s_csv_t t;
        p = s_csv_parse(p, &t);
        const tc_json_value_t *arr = tc_json_get(root, sections[k]);
        cr_assert_not_null(arr, "json lacks %s", sections[k]);
        cr_assert_eq(tc_json_len(arr), t.nrows, "%s: %zu json rows, %zu csv rows", sections[k],
                     tc_json_len(arr), t.nrows);
        if (k < 3)
            cr_assert_gt(t.nrows, 0, "the fixture has %s", sections[k]);
        for (size_t r = 0; r < t.nrows; r++) {
            const tc_json_value_t *o = tc_json_at(arr, r);
            cr_assert_eq(tc_json_len(o), t.ncols, "%s row %zu: json has %zu fields, csv %zu",
                         sections[k], r, tc_json_len(o), t.ncols);
            size_t c = 0;
            for (const tc_json_member_t *m = tc_json_first(o); m; m = tc_json_next(o, m), c++)
                cr_expect_str_eq(tc_json_member_key(m), t.cols[c], "%s: field %zu",
                                 sections[k], c);
            for (c = 0; c < t.ncols; c++) {
                char where[64];
                snprintf(where, sizeof where, "%s[%zu]", sections[k], r);
                const tc_json_value_t *v = tc_json_get(o, t.cols[c]);
                if (!strcmp(t.cols[c], "ago_s")) {
                    /* seconds pass between the two runs */
                    int64_t a = 0;
                    cr_assert(tc_json_int(v, &a), "ago_s must be an integer");
                    cr_expect_leq(llabs(a - atoll(t.cells[r][c])), 60);
                    continue;
                }
                s_same_value(where, t.cols[c], t.cells[r][c], v, 0);
                if (!strcmp(t.cols[c], "last_seen") || !strcmp(t.cols[c], "latest"))
                    cr_expect(s_is_iso_utc(t.cells[r][c]), "%s.%s is not ISO 8601 UTC: %s",
                              where, t.cols[c], t.cells[r][c]);
            }
        }
        s_same_table(table, sections[k], &t);
        s_csv_free(&t);
    }
    tc_json_destroy(&doc);
    free(csv);
    free(table);
}

/* fit: the tables fits and coefficients, the same in csv and json (two
 * runs store two fits: their ids differ by one, nothing else). */
Test(formats, fit_agrees_in_csv_and_json, .timeout = 600)
{
    tc_law_build("formats_fit", s_dsn, sizeof s_dsn);
    char *csv = strdup(s_run("fit --no-validate --format csv"));
    tc_json_t *doc = s_json(s_run("fit --no-validate --format json"));
    const tc_json_value_t *root = tc_json_root(doc);
    const char *names[] = {"fits", "coefficients"};
    const char *p = csv;
    size_t n_fits = 0;
    for (size_t k = 0; k < 2; k++) {
        s_csv_t t;
        p = s_csv_parse(p, &t);
        if (k == 0)
            n_fits = t.nrows;
        const tc_json_value_t *arr = tc_json_get(root, names[k]);
        cr_assert_eq(tc_json_len(arr), t.nrows, "%s", names[k]);
        cr_assert_gt(t.nrows, 0);
        for (size_t r = 0; r < t.nrows; r++) {
            const tc_json_value_t *o = tc_json_at(arr, r);
            cr_assert_eq(tc_json_len(o), t.ncols, "%s row %zu", names[k], r);
            for (size_t c = 0; c < t.ncols; c++) {
                char where[64];
                snprintf(where, sizeof where, "%s[%zu]", names[k], r);
                const tc_json_value_t *v = tc_json_get(o, t.cols[c]);
                if (!strcmp(t.cols[c], "fit_id")) {
                    int64_t id = 0;
                    cr_assert(tc_json_int(v, &id));
                    cr_expect_eq(id, atoll(t.cells[r][c]) + (long long)n_fits,
                                 "%s: the second run's fits follow the first's", where);
                    continue;
                }
                s_same_value(where, t.cols[c], t.cells[r][c], v, 1e-9);
            }
        }
        s_csv_free(&t);
    }
    tc_json_destroy(&doc);
    free(csv);
}

/* predict: each (device, batch) row of csv is the json prediction of that
 * device and batch, field for field; the fit each device used carries the
 * CNN count and batch range the table shows. */
Test(formats, predict_agrees_in_every_format, .timeout = 600)
{
    tc_law_build("formats_predict", s_dsn, sizeof s_dsn);
    s_run("fit --no-validate --format csv");
    const char *args = "predict --gpu all --model tests/data/resnet18.onnx --batch 8,16,32 "
                       "--no-store --wait 0";
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "%s --format csv", args);
    char *csv = strdup(s_run(cmd));
    char *table = strdup(s_run(args));
    snprintf(cmd, sizeof cmd, "%s --format json", args);
    tc_json_t *doc = s_json(s_run(cmd));
    const tc_json_value_t *devs = tc_json_get(tc_json_root(doc), "devices");
    cr_assert_eq(tc_json_len(devs), 2);
    s_csv_t t;
    s_csv_parse(csv, &t);
    cr_assert_eq(t.nrows, 6, "two devices, three batches");
    int dev_col = s_col(&t, "device"), batch_col = s_col(&t, "batch");
    cr_assert(dev_col >= 0 && batch_col >= 0 && s_col(&t, "peak_memory_bytes") >= 0);
    for (size_t r = 0; r < t.nrows; r++) {
        const tc_json_value_t *dev = NULL, *pt = NULL;
        for (size_t i = 0; i < tc_json_len(devs); i++)
            if (!strcmp(tc_json_string(tc_json_get(tc_json_at(devs, i), "name")),
                        t.cells[r][dev_col]))
                dev = tc_json_at(devs, i);
        cr_assert_not_null(dev, "json lacks device %s", t.cells[r][dev_col]);
        const tc_json_value_t *preds = tc_json_get(dev, "predictions");
        for (size_t j = 0; j < tc_json_len(preds); j++) {
            int64_t b = 0;
            tc_json_int(tc_json_get(tc_json_at(preds, j), "batch"), &b);
            if (b == atoll(t.cells[r][batch_col]))
                pt = tc_json_at(preds, j);
        }
        cr_assert_not_null(pt, "json lacks batch %s", t.cells[r][batch_col]);
        char where[128];
        snprintf(where, sizeof where, "%s@%s", t.cells[r][dev_col], t.cells[r][batch_col]);
        for (size_t c = 0; c < t.ncols; c++) {
            const char *col = t.cols[c];
            /* model and device are the json's enclosing objects; the reason
             * of a predicted row is the device's warning there. */
            if (!strcmp(col, "model") || !strcmp(col, "device") || !strcmp(col, "reason"))
                continue;
            const tc_json_value_t *v = tc_json_get(pt, col);
            if (!strcmp(col, "fits") && v && tc_json_type(v) == TC_JSON_NULL) {
                cr_expect(!*t.cells[r][c] || !strcmp(t.cells[r][c], "?"), "%s.fits", where);
                continue;
            }
            /* csv prints 4 decimals (3 for img/s, 1 for epochs) */
            s_same_value(where, col, t.cells[r][c], v, 1e-3);
        }
    }
    /* The fit's facts in json are the table's. */
    for (size_t i = 0; i < tc_json_len(devs); i++) {
        const tc_json_value_t *d = tc_json_at(devs, i);
        const tc_json_value_t *fit = tc_json_get(d, "fit");
        int64_t n = 0, lo = 0, hi = 0;
        cr_assert(tc_json_int(tc_json_get(fit, "n_cnns"), &n) &&
                      tc_json_int(tc_json_get(fit, "batch_min"), &lo) &&
                      tc_json_int(tc_json_get(fit, "batch_max"), &hi),
                  "fit lacks n_cnns, batch_min or batch_max");
        cr_expect_eq(n, 5);
        cr_expect_eq(lo, 8);
        cr_expect_eq(hi, 32);
        char line[256];
        snprintf(line, sizeof line, "fit of %s: %s over %lld CNNs, batches %lld..%lld",
                 tc_json_string(tc_json_get(d, "name")),
                 tc_json_string(tc_json_get(fit, "form")), (long long)n, (long long)lo,
                 (long long)hi);
        cr_expect(strstr(table, line), "table lacks '%s':\n%s", line, table);
    }
    s_csv_free(&t);
    tc_json_destroy(&doc);
    free(csv);
    free(table);
}
