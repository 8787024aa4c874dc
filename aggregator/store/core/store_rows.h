/* The rows a stored message becomes, in PostgreSQL's COPY text format
 * (conv results and their timings: its binary format, below):
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
#define TC_ROWS_RESULT_COLS 32 /* conv_results (TC_ROWS_RESULT_COLUMNS) */
#define TC_ROWS_CAND_COLS 7     /* conv_algo_timings (TC_ROWS_CAND_COLUMNS) */
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

/* The columns of those rows, for the COPY statements. */
#define TC_ROWS_RESULT_COLUMNS                                                                     \
    "result_id, message_id, seq, device_id, config_id, batch, direction, policy, backend, algo, " \
    "algo_id, median_ms, min_ms, max_ms, stddev_ms, repetitions, workspace_bytes, measured_at, "   \
    "samples_ms, sample_offsets_us, route, library_version, sm_clock_mhz, power_w, "            \
    "load_others_pct, load_steal_pct, gpu_other_processes, load_threshold_pct, remeasured, "     \
    "disturbed, canary_ms, supersedes_at"
#define TC_ROWS_CAND_COLUMNS                                                                       \
    "result_id, algo, algo_id, time_ms, workspace_bytes, status, message"

/* What the store resolved for a ConvResults: the message and device, and
 * per result (in message order) its new result id and its config's id. */
typedef struct {
    const char *message_id;
    const char *device_id;
    const long long *result_ids;
    const long long *config_ids;
} tc_rows_conv_ids_t;

/* A ConvResults' rows of conv_results (one per result, `seq` its position)
 * and of conv_algo_timings (its candidate algorithms), appended in COPY's
 * binary format (store_rows_bin.c): the rows only, so that the rows of
 * several messages can go in one `COPY ... FROM STDIN (FORMAT binary)`
 * between tc_bin_begin's header and tc_bin_end's trailer. Binary, unlike
 * the other rows: these are the bulk of what is stored, and their numbers
 * then need no printing here nor parsing in the server. */
void tc_rows_conv_results(const Traincast__V1__ConvResults *cr, const tc_rows_conv_ids_t *ids,
                          tc_buf_t *results, tc_buf_t *cands);

/* The binary COPY stream's signature (with the literal's terminating NUL:
 * 11 bytes), its header (signature, flags, extension length) and trailer. */
#define TC_BIN_SIGNATURE "PGCOPY\n\377\r\n"
#define TC_BIN_SIGNATURE_LEN 11
void tc_bin_begin(tc_buf_t *b);
void tc_bin_end(tc_buf_t *b);
/* Whether `b` holds binary COPY rows of `cols` columns and nothing else (0,
 * with the number of rows) or not (-1). */
int tc_bin_check(const tc_buf_t *b, int cols, size_t *rows);
/* The conv key's members as JSON object members, each followed by a comma
 * ("c":64,...,"bias":false,), for json_populate_recordset. */
void tc_json_conv_key(tc_buf_t *b, const Traincast__V1__ConvConfig *c);
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
