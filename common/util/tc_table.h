/* Tabular output in the three formats every printing command offers:
 * `table` (aligned columns for people), `csv` (RFC 4180) and `json`, with
 * the same column names in each.
 *
 * A report is one or more named tables ("agents", "devices", ...):
 *   table  each as "NAME (ROWS)", a header line of the column names and the
 *          rows, aligned; a blank line between tables; NULL shows as "-".
 *   csv    each as a header line and its rows; a blank line between tables
 *          (a report of one table is one plain CSV document); NULL is empty.
 *   json   one object with a member per table, each an array of objects
 *          keyed by the column names; numbers and booleans typed, NULL null.
 * Cells are text; a column's type says how JSON writes it. */
#ifndef TC_TABLE_H
#define TC_TABLE_H

#include <stddef.h>
#include <stdio.h>

typedef enum { TC_FMT_TABLE = 0, TC_FMT_CSV, TC_FMT_JSON } tc_format_t;

/* "table", "csv" or "json". TC_EUSAGE with a message naming --format. */
int tc_format_parse(const char *text, tc_format_t *out);

typedef enum {
    TC_COL_TEXT = 0,
    TC_COL_INT,  /* an integer literal; anything else is written as null */
    TC_COL_NUM,  /* a finite number; anything else is written as null */
    TC_COL_BOOL, /* t/true/yes/1 or f/false/no/0 */
} tc_col_type_t;

typedef struct {
    const char *name; /* snake_case, as in every format */
    tc_col_type_t type;
} tc_col_t;

typedef struct tc_table tc_table_t;

/* A table called `name` with `ncols` columns (the array must outlive the
 * table). NULL when out of memory. */
tc_table_t *tc_table_new(const char *name, const tc_col_t *cols, size_t ncols);
/* Accepts NULL; nulls the caller's pointer. */
void tc_table_destroy(tc_table_t **self_p);

/* Append a row of `ncols` cells, copied; a NULL cell is SQL NULL. */
int tc_table_add_row(tc_table_t *self, const char *const *cells);
/* The same with printf-style cells is left to callers (snprintf first). */
size_t tc_table_rows(const tc_table_t *self);

/* Print the report of `n` tables in `fmt`. */
int tc_table_print(FILE *out, tc_format_t fmt, tc_table_t *const *tables, size_t n);

#endif
