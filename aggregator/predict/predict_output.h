/* Printing and plotting predictions; and filling in missing conv
 * benchmarks before predicting. */
#ifndef TC_PREDICT_OUTPUT_H
#define TC_PREDICT_OUTPUT_H

#include "predict.h"

#include <stdio.h>

typedef enum { TC_PRED_TABLE = 0, TC_PRED_CSV, TC_PRED_JSON } tc_pred_format_t;

int tc_pred_format_parse(const char *s, tc_pred_format_t *out);

/* The predictions of every device (notes for those without), then the
 * fastest and the cheapest device per epoch with the batch achieving it,
 * and at each batch whether the fastest device can be told from the next
 * (`cmps`, tc_predict_compare). */
int tc_pred_print(FILE *out, tc_pred_format_t fmt, const tc_model_t *model,
                  const tc_pred_request_t *req, const tc_pred_device_t *devs, size_t n,
                  const tc_pred_compare_t *cmps, size_t n_cmps);

/* A chart of iteration (or epoch) time against batch, a line per device. */
int tc_pred_plot(const char *path, bool epoch, const tc_model_t *model,
                 const tc_pred_device_t *devs, size_t n);

/* A duration as the table prints it: 42.0s, 3m07s, 2h05m, 1d04h ("?" when
 * not finite). */
void tc_pred_duration(double seconds, char *buf, size_t size);

/* For devices whose conv lookups are incomplete: ask connected agents of
 * that device to benchmark the missing configs and wait up to `wait_s`
 * seconds with progress; a device still incomplete afterwards gets a note
 * naming how many configs it lacks and the exact `agent bench` command
 * that fills the gap (its batches that lack some are then not predicted,
 * tc_predict_device). */
int tc_predict_fill_missing(tc_store_t *s, const tc_pred_request_t *req, tc_pred_device_t *devs,
                            size_t n, unsigned wait_s, const char *model_spec);

/* The `agent bench` command line that measures what `d` lacks. */
void tc_predict_bench_command(const tc_pred_device_t *d, const tc_pred_request_t *req,
                              const char *model_spec, char *buf, size_t size);

#endif
