/* The comparison page (aggregator report --html): one self-contained HTML
 * file (inline CSS and SVG, a few lines of inline script, nothing fetched)
 * of a model's predictions on every device over batch sizes, as `aggregator
 * predict` computes them: the device x batch matrices of time per
 * iteration, images/s, epoch time and cost, speed relative to a device the
 * reader picks, charts with the intervals, each device's fit quality and
 * measured variability, and the prediction against the model's traces
 * where there are some. */
#ifndef TC_REPORT_HTML_H
#define TC_REPORT_HTML_H

#include "predict.h"
#include "store_report.h"
#include "tc_buf.h"

#include <stddef.h>

typedef struct {
    const tc_model_t *model;
    const tc_pred_request_t *req;
    const tc_pred_device_t *devs;
    size_t n;
    const tc_pred_compare_t *cmps;
    size_t n_cmps;
    const tc_measured_point_t *measured; /* the model's traces, any device */
    size_t n_measured;
    const tc_device_spread_t *spread;    /* one per device */
    size_t reference;                    /* the device relative speeds start from */
    const char *generated;               /* when, as text (UTC) */
} tc_report_t;

/* Append the page to `b` (b->failed on out of memory). */
void tc_report_html(tc_buf_t *b, const tc_report_t *r);

/* Inline SVG of iteration time (or epoch time in minutes, `epoch`) against
 * batch on log axes: a line and a 95 % interval band per device, marks for
 * rows that do not fit in memory and clamped rows, the traces measured,
 * and every batch that was not predicted with why; then an HTML legend of
 * what was drawn (report_svg.c). */
void tc_report_svg(tc_buf_t *b, const tc_report_t *r, bool epoch);

/* Text escaped for HTML (element content and quoted attributes). */
void tc_report_esc(tc_buf_t *b, const char *s);

/* The Okabe-Ito colour of device i, "#rrggbb". */
const char *tc_report_colour(size_t i);

/* The measured point of (device, batch), or NULL. */
const tc_measured_point_t *tc_report_measured(const tc_report_t *r, const char *device,
                                              unsigned batch);

#endif
