/* What `aggregator predict` computes, for the commands that show it in
 * other forms (`aggregator report`): the model loaded, the devices
 * selected, their fits, conv look-ups (asking agents for missing ones),
 * their rows and the comparisons between them, exactly as predict prints
 * them. */
#ifndef TC_CMD_PREDICT_H
#define TC_CMD_PREDICT_H

#include "predict.h"
#include "store.h"

#include <stdbool.h>
#include <stddef.h>

/* What the command line asked for (predict's options; a command that
 * does not print, plot or record leaves those fields NULL or false). */
typedef struct {
    const char *db, *gpu, *model_spec, *batch_text, *prices;
    const char *format, *plot, *plot_metric;
    const char *framework, *dtype, *amp;
    unsigned long input_size, wait_s;
    double dataset, extrapolate;
    bool allow_unknown, no_store;
} tc_predict_args_t;

/* Everything one prediction produced; owns all of it. */
typedef struct {
    tc_model_t *model;
    tc_store_t *store;
    tc_pred_request_t req;  /* its batches are the caller's */
    tc_pred_device_t *devs;
    size_t n_devs;
    tc_pred_compare_t *cmps;
    size_t n_cmps;
    size_t ok, not_ok;      /* rows predicted and not */
} tc_predict_run_t;

/* Check the options predict checks (format and plot only where set) and
 * parse --batch into *batches (malloc'ed). TC_EUSAGE / TC_EINVAL naming
 * the option. */
int tc_predict_check_args(const tc_predict_args_t *a, unsigned long **batches,
                          size_t *n_batches);

/* Predict as `aggregator predict` does, without printing: `a`'s checked
 * options and the parsed `batches` (which must outlive *r). *r is set even
 * on failure; free it with tc_predict_run_free. Errors as predict's:
 * TC_EINVAL for a bad model, store errors, ... */
int tc_predict_compute(const tc_predict_args_t *a, const unsigned long *batches,
                       size_t n_batches, tc_predict_run_t *r);
void tc_predict_run_free(tc_predict_run_t *r);

#endif
