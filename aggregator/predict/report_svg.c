/* The comparison page's charts: inline SVG on log axes, drawn from the
 * predicted rows as they are, every mark explained by a legend of only
 * what was drawn. */
#include "report_html.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define S_W 900.0
#define S_H 440.0
#define S_LEFT 70.0
#define S_RIGHT 20.0
#define S_TOP 15.0
#define S_BOTTOM 45.0
#define S_FOOT 14.0 /* per device: a row of not-predicted marks under the lines */

typedef struct {
    double xmin, xmax, ymin, ymax; /* log2 batch, log10 value */
    double foot;                   /* height of the not-predicted rows */
} s_frame_t;

static double s_px(const s_frame_t *f, double batch)
{
    double span = f->xmax - f->xmin;
    return S_LEFT + (S_W - S_LEFT - S_RIGHT) * (log2(batch) - f->xmin) / span;
}

static double s_py(const s_frame_t *f, double v)
{
    double top = S_TOP, bottom = S_H - S_BOTTOM - f->foot;
    return bottom - (bottom - top) * (log10(v) - f->ymin) / (f->ymax - f->ymin);
}

/* The value drawn for a predicted point: ms, or minutes per epoch. */
static double s_scale(const tc_pred_point_t *p, bool epoch)
{
    return epoch ? p->epoch_s / 60.0 / p->total_ms : 1.0;
}

/* Minutes per epoch of `ms` per iteration at `batch`. */
static double s_epoch_min(const tc_report_t *r, unsigned batch, double ms)
{
    return ceil(r->req->dataset_size / batch) * ms / 1000.0 / 60.0;
}

static double s_measured_value(const tc_report_t *r, const tc_measured_point_t *m, double ms,
                               bool epoch)
{
    return epoch ? s_epoch_min(r, m->batch, ms) : ms;
}

/* What the chart holds, to size it and write its legend. */
typedef struct {
    bool band, oom, clamped, measured, not_predicted[4];
    size_t points, foot_rows;
} s_drawn_t;

static void s_bounds(const tc_report_t *r, bool epoch, s_frame_t *f, s_drawn_t *dr)
{
    double ymin = INFINITY, ymax = -INFINITY;
    memset(dr, 0, sizeof *dr);
    f->xmin = INFINITY;
    f->xmax = -INFINITY;
    for (size_t j = 0; j < r->req->n_batches; j++) {
        f->xmin = fmin(f->xmin, log2((double)r->req->batches[j]));
        f->xmax = fmax(f->xmax, log2((double)r->req->batches[j]));
    }
    for (size_t i = 0; i < r->n; i++) {
        const tc_pred_device_t *d = &r->devs[i];
        bool foot = false;
        for (size_t j = 0; j < d->n_points; j++) {
            const tc_pred_point_t *p = &d->points[j];
            const tc_measured_point_t *m = tc_report_measured(r, d->device.name, p->batch);
            if (m && m->min_ms > 0 && isfinite(m->max_ms)) {
                ymin = fmin(ymin, s_measured_value(r, m, m->min_ms, epoch));
                ymax = fmax(ymax, s_measured_value(r, m, m->max_ms, epoch));
                dr->measured = true;
            }
            if (p->status != TC_PT_OK) {
                dr->not_predicted[p->status] = true;
                foot = true;
                continue;
            }
            double k = s_scale(p, epoch);
            double lo = p->lo_ms > 0 ? p->lo_ms : p->total_ms;
            if (!(p->total_ms > 0))
                continue;
            ymin = fmin(ymin, fmin(lo, p->total_ms) * k);
            ymax = fmax(ymax, fmax(p->hi_ms, p->total_ms) * k);
            dr->points++;
            dr->band |= isfinite(p->lo_ms) && isfinite(p->hi_ms);
            dr->oom |= p->fits == 0;
            dr->clamped |= p->clamped;
        }
        dr->foot_rows += foot;
    }
    if (!isfinite(ymin) || !(ymin > 0)) {
        ymin = 1;
        ymax = 10;
    }
    f->ymin = log10(ymin) - 0.05;
    f->ymax = log10(ymax) + 0.05;
    if (f->ymax - f->ymin < 0.3) {
        f->ymin -= 0.15;
        f->ymax += 0.15;
    }
    if (f->xmax - f->xmin < 1) {
        f->xmin -= 0.5;
        f->xmax += 0.5;
    } else {
        f->xmin -= 0.25;
        f->xmax += 0.25;
    }
    f->foot = S_FOOT * (double)dr->foot_rows + (dr->foot_rows ? 6 : 0);
}

static void s_axes(tc_buf_t *b, const tc_report_t *r, const s_frame_t *f, bool epoch)
{
    double bottom = S_H - S_BOTTOM;
    tc_buf_printf(b, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"none\" "
                     "stroke=\"#444\"/>\n",
                  S_LEFT, S_TOP, S_W - S_LEFT - S_RIGHT, bottom - S_TOP);
    for (size_t j = 0; j < r->req->n_batches; j++) {
        double x = s_px(f, (double)r->req->batches[j]);
        tc_buf_printf(b, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#e4e4e4\"/>"
                         "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%lu</text>\n",
                      x, S_TOP, x, bottom, x, bottom + 16, r->req->batches[j]);
    }
    /* Labels at 1, 2 and 5 times the powers of ten; at every multiple
     * where that gives fewer than three. */
    static const double mult[] = {1, 2, 5, 3, 4, 6, 7, 8, 9};
    int labels = 0, n_mult = 3;
    for (int e = (int)floor(f->ymin) - 1; e <= (int)ceil(f->ymax); e++) {
        for (int k = 0; k < 3; k++)
            labels += log10(mult[k]) + e >= f->ymin && log10(mult[k]) + e <= f->ymax;
    }
    if (labels < 3)
        n_mult = 9;
    for (int e = (int)floor(f->ymin) - 1; e <= (int)ceil(f->ymax); e++) {
        for (int k = 0; k < n_mult; k++) {
            double v = mult[k] * pow(10.0, e), ly = log10(v);
            if (ly < f->ymin || ly > f->ymax)
                continue;
            double y = s_py(f, v);
            tc_buf_printf(b, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
                             "stroke=\"#e4e4e4\"/><text x=\"%.1f\" y=\"%.1f\" "
                             "text-anchor=\"end\">%g</text>\n",
                          S_LEFT, y, S_W - S_RIGHT, y, S_LEFT - 6, y + 4, v);
        }
    }
    tc_buf_printf(b, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">batch size</text>\n"
                     "<text transform=\"translate(16 %.1f) rotate(-90)\" "
                     "text-anchor=\"middle\">%s</text>\n",
                  (S_LEFT + S_W - S_RIGHT) / 2, S_H - 8, (S_TOP + bottom) / 2,
                  epoch ? "minutes per epoch" : "ms per iteration");
}

/* The band and the line of device i over each run of consecutive predicted
 * batches. */
static void s_device_lines(tc_buf_t *b, const tc_report_t *r, const s_frame_t *f, size_t i,
                           bool epoch)
{
    const tc_pred_device_t *d = &r->devs[i];
    const char *col = tc_report_colour(i);
    for (size_t from = 0, to; from < d->n_points; from = to) {
        while (from < d->n_points && d->points[from].status != TC_PT_OK)
            from++;
        for (to = from; to < d->n_points && d->points[to].status == TC_PT_OK; to++)
            ;
        if (from == to)
            break;
        bool band = true;
        for (size_t j = from; j < to; j++)
            band &= isfinite(d->points[j].lo_ms) && isfinite(d->points[j].hi_ms) &&
                    d->points[j].lo_ms > 0;
        if (band) {
            tc_buf_printf(b, "<polygon fill=\"%s\" fill-opacity=\"0.18\" points=\"", col);
            for (size_t j = from; j < to; j++) {
                const tc_pred_point_t *p = &d->points[j];
                tc_buf_printf(b, "%.1f,%.1f ", s_px(f, p->batch),
                              s_py(f, p->lo_ms * s_scale(p, epoch)));
            }
            for (size_t j = to; j-- > from;) {
                const tc_pred_point_t *p = &d->points[j];
                tc_buf_printf(b, "%.1f,%.1f ", s_px(f, p->batch),
                              s_py(f, p->hi_ms * s_scale(p, epoch)));
            }
            tc_buf_puts(b, "\"/>\n");
        }
        tc_buf_printf(b, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\" points=\"",
                      col);
        for (size_t j = from; j < to; j++) {
            const tc_pred_point_t *p = &d->points[j];
            if (p->total_ms > 0)
                tc_buf_printf(b, "%.1f,%.1f ", s_px(f, p->batch),
                              s_py(f, p->total_ms * s_scale(p, epoch)));
        }
        tc_buf_puts(b, "\"/>\n");
    }
}

/* Device i's marks: a dot per predicted row (a cross when it does not fit
 * in memory, an open ring and "!" when clamped), the traces measured (a
 * black diamond on its range), and under the lines a letter for every
 * batch not predicted, its reason on hover. */
static void s_device_marks(tc_buf_t *b, const tc_report_t *r, const s_frame_t *f, size_t i,
                           size_t foot_row, bool epoch)
{
    static const char letters[] = {' ', 'm', 'n', 'r'};
    const tc_pred_device_t *d = &r->devs[i];
    const char *col = tc_report_colour(i);
    for (size_t j = 0; j < d->n_points; j++) {
        const tc_pred_point_t *p = &d->points[j];
        double x = s_px(f, p->batch);
        if (p->status != TC_PT_OK) {
            double y = S_H - S_BOTTOM - f->foot + 6 + S_FOOT * ((double)foot_row + 0.75);
            tc_buf_printf(b, "<text x=\"%.1f\" y=\"%.1f\" fill=\"%s\" text-anchor=\"middle\" "
                             "font-weight=\"bold\"><title>",
                          x, y, col);
            tc_report_esc(b, d->device.name);
            tc_buf_printf(b, ", batch %u: ", p->batch);
            tc_report_esc(b, p->reason);
            tc_buf_printf(b, "</title>%c</text>\n", letters[p->status & 3]);
        } else if (p->total_ms > 0) {
            double k = s_scale(p, epoch), y = s_py(f, p->total_ms * k);
            tc_buf_puts(b, "<g><title>");
            tc_report_esc(b, d->device.name);
            tc_buf_printf(b, ", batch %u: %.2f (%.2f&#8211;%.2f) %s%s%s</title>", p->batch,
                          p->total_ms * k, p->lo_ms * k, p->hi_ms * k,
                          epoch ? "minutes per epoch" : "ms per iteration",
                          p->clamped ? "; clamped" : "",
                          p->fits == 0 ? "; does not fit in memory" : "");
            if (p->clamped)
                tc_buf_printf(b, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"5\" fill=\"#fff\" "
                                 "stroke=\"%s\" stroke-width=\"2\"/><text x=\"%.1f\" "
                                 "y=\"%.1f\" fill=\"%s\" text-anchor=\"middle\" "
                                 "font-weight=\"bold\">!</text>\n",
                              x, y, col, x, y - 8, col);
            else if (p->fits == 0)
                tc_buf_printf(b, "<path d=\"M%.1f %.1fl8 8m0 -8l-8 8\" stroke=\"%s\" "
                                 "stroke-width=\"2.5\"/>\n",
                              x - 4, y - 4, col);
            else
                tc_buf_printf(b, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3.5\" fill=\"%s\"/>\n", x,
                              y, col);
            tc_buf_puts(b, "</g>\n");
        }
        const tc_measured_point_t *m = tc_report_measured(r, d->device.name, p->batch);
        if (m && m->min_ms > 0 && isfinite(m->max_ms)) {
            double y = s_py(f, s_measured_value(r, m, m->measured_ms, epoch));
            tc_buf_printf(b, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
                             "stroke=\"#000\"/><path d=\"M%.1f %.1fl5 5l-5 5l-5 -5z\" "
                             "fill=\"#000\" stroke=\"%s\"><title>measured: %.2f ms "
                             "(%ld traces)</title></path>\n",
                          x, s_py(f, s_measured_value(r, m, m->min_ms, epoch)), x,
                          s_py(f, s_measured_value(r, m, m->max_ms, epoch)), x, y - 5, col,
                          m->measured_ms, m->traces);
        }
    }
}

static void s_legend(tc_buf_t *b, const tc_report_t *r, const s_drawn_t *dr)
{
    tc_buf_puts(b, "<ul class=\"legend\">");
    for (size_t i = 0; i < r->n; i++) {
        tc_buf_printf(b, "<li><span class=\"sw\" style=\"background:%s\"></span>",
                      tc_report_colour(i));
        tc_report_esc(b, r->devs[i].device.name);
        tc_buf_puts(b, "</li>");
    }
    tc_buf_puts(b, "</ul>\n<ul class=\"legend muted\">");
    if (dr->band)
        tc_buf_puts(b, "<li>band: 95 % prediction interval</li>");
    if (dr->oom)
        tc_buf_puts(b, "<li>&times;: does not fit in memory</li>");
    if (dr->clamped)
        tc_buf_puts(b, "<li>&#9675;!: conv or non-conv time clamped at 0 (the fit "
                       "extrapolates)</li>");
    if (dr->measured)
        tc_buf_puts(b, "<li>&#9670;: measured (geometric mean of the traces, line: their "
                       "range)</li>");
    if (dr->not_predicted[TC_PT_MISSING])
        tc_buf_puts(b, "<li>m: not predicted, conv benchmarks missing</li>");
    if (dr->not_predicted[TC_PT_OUT_OF_RANGE])
        tc_buf_puts(b, "<li>r: not predicted, outside the fit's batch sizes</li>");
    if (dr->not_predicted[TC_PT_NO_FIT])
        tc_buf_puts(b, "<li>n: not predicted, the device has no fit</li>");
    tc_buf_puts(b, "</ul>\n");
}

void tc_report_svg(tc_buf_t *b, const tc_report_t *r, bool epoch)
{
    s_frame_t f;
    s_drawn_t dr;
    s_bounds(r, epoch, &f, &dr);
    tc_buf_printf(b, "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 %.0f %.0f\" "
                     "width=\"%.0f\" height=\"%.0f\" font-size=\"12\" role=\"img\" "
                     "aria-label=\"%s against batch size\">\n",
                  S_W, S_H, S_W, S_H, epoch ? "epoch time" : "iteration time");
    s_axes(b, r, &f, epoch);
    for (size_t i = 0; i < r->n; i++)
        s_device_lines(b, r, &f, i, epoch);
    for (size_t i = 0, row = 0; i < r->n; i++) {
        s_device_marks(b, r, &f, i, row, epoch);
        for (size_t j = 0; j < r->devs[i].n_points; j++) {
            if (r->devs[i].points[j].status != TC_PT_OK) {
                row++;
                break;
            }
        }
    }
    tc_buf_puts(b, "</svg>\n");
    s_legend(b, r, &dr);
}
