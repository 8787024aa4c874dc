/* The rows a stored message becomes, in PostgreSQL's COPY text format:
 * values escaped (backslash, tab, newline, carriage return), tab between
 * columns, newline after each row, \N for NULL. No libpq here, so that the
 * wire fuzz target (tests/fuzz/fuzz_wire.c) runs the same code as `serve`.
 * Each builder appends to its buffers; the caller checks `failed` and
 * frees them. The messages must have passed tc_validate_envelope. */
#ifndef TC_STORE_ROWS_H
#define TC_STORE_ROWS_H

#include "tc_buf.h"
#include "tc_conv_key.h"
#include "tc_wire.h"

#include <stddef.h>

/* Columns of each row kind, for checks. */
#define TC_ROWS_RESULT_COLS (1 + TC_CONV_KEY_FIELDS + 17) /* tc_stage_results */
#define TC_ROWS_CAND_COLS 7     /* tc_stage_cands */
#define TC_ROWS_LAYER_COLS 10   /* model_layers */
#define TC_ROWS_CONV_COLS (TC_CONV_KEY_FIELDS + 2)       /* tc_stage_convs */
#define TC_ROWS_ITER_COLS 6     /* trace_iterations */
#define TC_ROWS_OP_COLS 3       /* trace_op_times */

/* One value followed by a tab (or a newline when `last`). NULL text is \N. */
void tc_copy_text(tc_buf_t *b, const char *v, int last);
void tc_copy_int(tc_buf_t *b, long long v, int last);
void tc_copy_double(tc_buf_t *b, double v, int last);
void tc_copy_bool(tc_buf_t *b, int v, int last);
/* A unix-microsecond time as timestamptz; 0 (or less) is NULL. */
void tc_copy_time_us(tc_buf_t *b, long long us, int last);
void tc_copy_double_array(tc_buf_t *b, const double *v, size_t n, int last);
void tc_copy_int_array(tc_buf_t *b, const long long *v, size_t n, int last);

/* The conv key's columns (tc_conv_key.h), each followed by a tab. */
void tc_copy_conv_key(tc_buf_t *b, const Traincast__V1__ConvConfig *c);

/* Format a unix-microsecond time for a timestamptz parameter. */
void tc_store_time_param(long long us, char *buf, size_t size);

/* A ConvResults' results (one row each, numbered by `seq`) and their
 * candidate algorithms (keyed by the same seq). */
void tc_rows_conv_results(const Traincast__V1__ConvResults *cr, tc_buf_t *results,
                          tc_buf_t *cands);
/* A trace's settings as a JSON object of strings (for the jsonb column) and
 * as the canonical key fits group by: "name=value" in the trace's order
 * (sorted by name, as validated), joined by "; ". */
void tc_rows_settings(const Traincast__V1__TrainTrace *t, tc_buf_t *json, tc_buf_t *key);
/* A model's layers and its conv usage. */
void tc_rows_model_graph(const Traincast__V1__ModelGraph *g, tc_buf_t *layers, tc_buf_t *convs);
/* A trace's iterations and op class times, under `trace_id`. */
void tc_rows_trace(long long trace_id, const Traincast__V1__TrainTrace *t, tc_buf_t *iters,
                   tc_buf_t *ops);

#endif
