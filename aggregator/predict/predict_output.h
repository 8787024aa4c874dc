/* Printing and plotting predictions; and filling in missing benchmarks
 * (convs and matmuls) before predicting. */
#ifndef TC_PREDICT_OUTPUT_H
#define TC_PREDICT_OUTPUT_H

#include "predict.h"

#include <stdio.h>

typedef enum { TC_PRED_TABLE = 0, TC_PRED_CSV, TC_PRED_JSON } tc_pred_format_t;

int tc_pred_format_parse(const char *s, tc_pred_format_t *out);

/* The default table fits this many columns. */
#define TC_PRED_TABLE_WIDTH 120

/* The predictions of every device (notes for those without), then the
 * fastest and the cheapest device per epoch with the batch achieving it,
 * and at each batch whether the fastest device can be told from the next
 * (`cmps`, tc_predict_compare); each device's fit with its validated error
 * and whether its intervals are calibrated. The table names devices by
 * alias, leaves out columns no device fills (cost without prices, energy
 * without measurements) and keeps every line within TC_PRED_TABLE_WIDTH
 * columns; `wide` gives full names, every column and unwrapped lines. CSV
 * and JSON carry the same facts under the same names. */
int tc_pred_print(FILE *out, tc_pred_format_t fmt, bool wide, const tc_model_t *model,
                  const tc_pred_request_t *req, const tc_pred_device_t *devs, size_t n,
                  const tc_pred_compare_t *cmps, size_t n_cmps);

/* A chart of iteration (or epoch) time against batch, a line per device
 * labelled with its alias. */
int tc_pred_plot(const char *path, bool epoch, const tc_model_t *model,
                 const tc_pred_device_t *devs, size_t n);

/* A duration as the table prints it: 42.0s, 3m07s, 2h05m, 1d04h ("?" when
 * not finite). */
void tc_pred_duration(double seconds, char *buf, size_t size);

/* For devices whose lookups (convs, matmuls) are incomplete: ask connected
 * agents of that device to benchmark the missing configs and wait up to `wait_s`
 * seconds with progress; a device still incomplete afterwards gets a note
 * naming how many configs it lacks and the exact `agent bench` command
 * that fills the gap (its batches that lack some are then not predicted,
 * tc_predict_device). */
int tc_predict_fill_missing(tc_store_t *s, const tc_pred_request_t *req, tc_pred_device_t *devs,
                            size_t n, unsigned wait_s, const char *model_spec);

/* What `d` lacks (its lookups neither found nor skipped), by op kind:
 * distinct configs (apart from batch and direction) and measurements. */
typedef struct {
    size_t conv_configs, matmul_configs;
    size_t conv_items, matmul_items;
} tc_pred_missing_t;
int tc_predict_missing_count(const tc_pred_device_t *d, tc_pred_missing_t *out);

/* The `agent bench` command line that measures what `d` lacks (with
 * `--ops all` when matmuls are missing). */
int tc_predict_bench_command(const tc_pred_device_t *d, const tc_pred_request_t *req,
                             const char *model_spec, char *buf, size_t size);

/* The note of a device that still lacks benchmarks: how many configs and
 * measurements of each kind, `why` (appended as it is, may be NULL), where
 * and what to run. */
int tc_predict_missing_note(const tc_pred_device_t *d, const tc_pred_request_t *req,
                            const char *model_spec, const char *why, char *buf, size_t size);

/* The BenchRequest (packed, *buf malloc'ed; NULL when nothing is missing)
 * that measures what `d` lacks in direction `dir`: its convs in configs,
 * its matmuls in matmuls, under the fit's conv policy; *n_convs and
 * *n_matmuls count them. */
int tc_predict_bench_request(const tc_pred_device_t *d, Traincast__V1__Direction dir,
                             uint8_t **buf, size_t *len, size_t *n_convs, size_t *n_matmuls);

#endif
