#include "tc_table.h"

#include "tc_buf.h"
#include "tc_error.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

struct tc_table {
    char *name;
    const tc_col_t *cols;
    size_t ncols;
    char **cells; /* row-major; NULL cells are SQL NULL */
    size_t nrows, cap;
};

int tc_format_parse(const char *text, tc_format_t *out)
{
    if (!strcmp(text, "table"))
        *out = TC_FMT_TABLE;
    else if (!strcmp(text, "csv"))
        *out = TC_FMT_CSV;
    else if (!strcmp(text, "json"))
        *out = TC_FMT_JSON;
    else
        return tc_fail(TC_EUSAGE, "--format must be table, csv or json (got '%s')", text);
    return 0;
}

tc_table_t *tc_table_new(const char *name, const tc_col_t *cols, size_t ncols)
{
    tc_table_t *self = calloc(1, sizeof *self);
    if (!self)
        return NULL;
    self->cols = cols;
    self->ncols = ncols;
    if (!(self->name = strdup(name ? name : ""))) {
        free(self);
        return NULL;
    }
    return self;
}

void tc_table_destroy(tc_table_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    tc_table_t *self = *self_p;
    for (size_t i = 0; i < self->nrows * self->ncols; i++)
        free(self->cells[i]);
    free(self->cells);
    free(self->name);
    free(self);
    *self_p = NULL;
}

int tc_table_add_row(tc_table_t *self, const char *const *cells)
{
    if (self->nrows == self->cap) {
        size_t cap = self->cap ? self->cap * 2 : 16;
        char **c = realloc(self->cells, cap * (self->ncols ? self->ncols : 1) * sizeof *c);
        if (!c)
            return tc_fail(TC_ENOMEM, "out of memory");
        self->cells = c;
        self->cap = cap;
    }
    char **row = &self->cells[self->nrows * self->ncols];
    for (size_t i = 0; i < self->ncols; i++) {
        row[i] = NULL;
        if (cells[i] && !(row[i] = strdup(cells[i]))) {
            for (size_t j = 0; j < i; j++)
                free(row[j]);
            return tc_fail(TC_ENOMEM, "out of memory");
        }
    }
    self->nrows++;
    return 0;
}

size_t tc_table_rows(const tc_table_t *self)
{
    return self->nrows;
}

static void s_print_aligned(FILE *out, const tc_table_t *t)
{
    fprintf(out, "%s (%zu)\n", t->name, t->nrows);
    if (!t->nrows)
        return;
    size_t *w = calloc(t->ncols + 1, sizeof *w);
    if (!w)
        return;
    for (size_t c = 0; c < t->ncols; c++) {
        w[c] = strlen(t->cols[c].name);
        for (size_t r = 0; r < t->nrows; r++) {
            const char *v = t->cells[r * t->ncols + c];
            size_t n = strlen(v ? v : "-");
            w[c] = n > w[c] ? n : w[c];
        }
    }
    for (size_t c = 0; c < t->ncols; c++)
        fprintf(out, "  %-*s", c + 1 < t->ncols ? (int)w[c] : 0, t->cols[c].name);
    fputc('\n', out);
    for (size_t r = 0; r < t->nrows; r++) {
        for (size_t c = 0; c < t->ncols; c++) {
            const char *v = t->cells[r * t->ncols + c];
            fprintf(out, "  %-*s", c + 1 < t->ncols ? (int)w[c] : 0, v ? v : "-");
        }
        fputc('\n', out);
    }
    free(w);
}

static void s_csv_cell(FILE *out, const char *v)
{
    if (!v)
        return;
    if (!strpbrk(v, ",\"\r\n") && v[0] != ' ' && (!*v || v[strlen(v) - 1] != ' ')) {
        fputs(v, out);
        return;
    }
    fputc('"', out);
    for (const char *p = v; *p; p++) {
        if (*p == '"')
            fputc('"', out);
        fputc(*p, out);
    }
    fputc('"', out);
}

static void s_print_csv(FILE *out, const tc_table_t *t)
{
    for (size_t c = 0; c < t->ncols; c++) {
        if (c)
            fputc(',', out);
        s_csv_cell(out, t->cols[c].name);
    }
    fputc('\n', out);
    for (size_t r = 0; r < t->nrows; r++) {
        for (size_t c = 0; c < t->ncols; c++) {
            if (c)
                fputc(',', out);
            s_csv_cell(out, t->cells[r * t->ncols + c]);
        }
        fputc('\n', out);
    }
}

static bool s_is_int(const char *v)
{
    const char *p = v + (*v == '-');
    if (!*p || (p[0] == '0' && p[1]))
        return false;
    for (; *p; p++) {
        if (*p < '0' || *p > '9')
            return false;
    }
    return strlen(v) < 20;
}

static void s_json_cell(tc_buf_t *b, tc_col_type_t type, const char *v)
{
    if (!v) {
        tc_buf_puts(b, "null");
        return;
    }
    switch (type) {
    case TC_COL_INT:
        tc_buf_puts(b, s_is_int(v) ? v : "null");
        return;
    case TC_COL_NUM: {
        char *end = NULL;
        errno = 0;
        double d = strtod(v, &end);
        if (end == v || *end || errno || !isfinite(d))
            tc_buf_puts(b, "null");
        else if (s_is_int(v))
            tc_buf_puts(b, v);
        else
            tc_buf_printf(b, "%.17g", d);
        return;
    }
    case TC_COL_BOOL:
        if (!strcmp(v, "t") || !strcmp(v, "true") || !strcmp(v, "yes") || !strcmp(v, "1"))
            tc_buf_puts(b, "true");
        else if (!strcmp(v, "f") || !strcmp(v, "false") || !strcmp(v, "no") || !strcmp(v, "0"))
            tc_buf_puts(b, "false");
        else
            tc_buf_puts(b, "null");
        return;
    default:
        tc_buf_json_str(b, v);
    }
}

static void s_json_table(tc_buf_t *b, const tc_table_t *t)
{
    tc_buf_json_str(b, t->name);
    tc_buf_puts(b, ": [");
    for (size_t r = 0; r < t->nrows; r++) {
        tc_buf_puts(b, r ? ",\n    {" : "\n    {");
        for (size_t c = 0; c < t->ncols; c++) {
            if (c)
                tc_buf_puts(b, ", ");
            tc_buf_json_str(b, t->cols[c].name);
            tc_buf_puts(b, ": ");
            s_json_cell(b, t->cols[c].type, t->cells[r * t->ncols + c]);
        }
        tc_buf_putc(b, '}');
    }
    tc_buf_puts(b, t->nrows ? "\n  ]" : "]");
}

int tc_table_print(FILE *out, tc_format_t fmt, tc_table_t *const *tables, size_t n)
{
    if (fmt == TC_FMT_JSON) {
        tc_buf_t b = {0};
        tc_buf_puts(&b, "{");
        for (size_t i = 0; i < n; i++) {
            tc_buf_puts(&b, i ? ",\n  " : "\n  ");
            s_json_table(&b, tables[i]);
        }
        tc_buf_puts(&b, "\n}\n");
        int rc = b.failed ? tc_fail(TC_ENOMEM, "out of memory writing JSON") : 0;
        if (rc == 0)
            fputs(tc_buf_str(&b), out);
        tc_buf_free(&b);
        return rc;
    }
    for (size_t i = 0; i < n; i++) {
        if (i)
            fputc('\n', out);
        if (fmt == TC_FMT_CSV)
            s_print_csv(out, tables[i]);
        else
            s_print_aligned(out, tables[i]);
    }
    return 0;
}
