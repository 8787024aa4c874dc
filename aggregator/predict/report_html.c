#include "report_html.h"

#include "predict_output.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static const char s_css[] =
    "body{font:14px/1.45 system-ui,sans-serif;margin:1.5em auto;max-width:1200px;"
    "padding:0 1em;color:#222}"
    "h1{font-size:1.5em;margin:.2em 0}h2{font-size:1.2em;margin-top:1.8em;"
    "border-bottom:1px solid #ccc}h3{font-size:1em;margin:1.2em 0 .3em}"
    "table{border-collapse:collapse;margin:.4em 0}"
    "th,td{border:1px solid #ddd;padding:.2em .5em;text-align:right;white-space:nowrap}"
    "th{background:#f3f3f3}td.dev,th.dev{text-align:left;white-space:normal;max-width:26em}"
    ".sw{display:inline-block;width:.8em;height:.8em;border-radius:2px;margin-right:.4em}"
    ".iv{color:#777;font-size:.85em}.np{color:#999;font-style:italic}"
    ".clamp{background:#fff3cd}.oom{background:#f8d7da}.best{font-weight:bold}"
    ".faster{color:#006d2c}.slower{color:#a50f15}.overlap{color:#777}"
    ".warn{color:#8a4b00}.muted{color:#666}.legend{list-style:none;padding:0;margin:.3em 0}"
    ".legend li{display:inline-block;margin-right:1.5em}"
    "svg{max-width:100%;height:auto;border:1px solid #eee}"
    "#pick{background:#f7f7fb;border:1px solid #dde;padding:.5em 1em;border-radius:4px}"
    "select{font-size:1em}";

/* Shows the tables and cells of the chosen reference device only. */
static const char s_js[] =
    "(function(){var s=document.getElementById('ref');"
    "function show(){var v=s.value;"
    "document.querySelectorAll('[data-ref]').forEach(function(e){"
    "e.hidden=e.getAttribute('data-ref')!==v;});"
    "var name=s.options[s.selectedIndex].text;"
    "document.querySelectorAll('.refname').forEach(function(e){e.textContent=name;});}"
    "s.addEventListener('change',show);show();})();";

void tc_report_esc(tc_buf_t *b, const char *s)
{
    for (; s && *s; s++) {
        switch (*s) {
        case '<': tc_buf_puts(b, "&lt;"); break;
        case '>': tc_buf_puts(b, "&gt;"); break;
        case '&': tc_buf_puts(b, "&amp;"); break;
        case '"': tc_buf_puts(b, "&quot;"); break;
        case '\'': tc_buf_puts(b, "&#39;"); break;
        default: tc_buf_putc(b, *s);
        }
    }
}

const char *tc_report_colour(size_t i)
{
    static const char *const palette[] = {"#0072b2", "#d55e00", "#009e73", "#cc79a7",
                                          "#e69f00", "#56b4e9", "#000000", "#999999"};
    return palette[i % (sizeof palette / sizeof palette[0])];
}

const tc_measured_point_t *tc_report_measured(const tc_report_t *r, const char *device,
                                              unsigned batch)
{
    for (size_t i = 0; i < r->n_measured; i++) {
        if (r->measured[i].batch == batch && !strcmp(r->measured[i].device, device))
            return &r->measured[i];
    }
    return NULL;
}

static const char *s_status_text(tc_pred_point_status_t s)
{
    switch (s) {
    case TC_PT_MISSING: return "missing benchmarks";
    case TC_PT_NO_FIT: return "no fit";
    case TC_PT_OUT_OF_RANGE: return "outside the fit's batches";
    default: return "";
    }
}

/* A device's name with its colour swatch, in a table's first cell. */
static void s_dev_cell(tc_buf_t *b, const tc_report_t *r, size_t i)
{
    tc_buf_printf(b, "<td class=\"dev\"><span class=\"sw\" style=\"background:%s\"></span>",
                  tc_report_colour(i));
    tc_report_esc(b, r->devs[i].device.name);
    tc_buf_puts(b, "</td>");
}

/* The chosen device's name, which the script changes with the choice. */
static void s_refname(tc_buf_t *b, const tc_report_t *r)
{
    tc_buf_puts(b, "<span class=\"refname\">");
    if (r->reference < r->n)
        tc_report_esc(b, r->devs[r->reference].device.name);
    tc_buf_puts(b, "</span>");
}

static void s_head_batches(tc_buf_t *b, const tc_report_t *r, const char *corner)
{
    tc_buf_printf(b, "<table><tr><th class=\"dev\">%s</th>", corner);
    for (size_t j = 0; j < r->req->n_batches; j++)
        tc_buf_printf(b, "<th>%lu</th>", r->req->batches[j]);
    tc_buf_puts(b, "</tr>\n");
}

/* A cell that was not predicted: what it lacks, the reason on hover. */
static void s_np_cell(tc_buf_t *b, const tc_pred_point_t *p)
{
    tc_buf_puts(b, "<td class=\"np\" title=\"");
    tc_report_esc(b, p->reason);
    tc_buf_puts(b, "\">");
    tc_report_esc(b, s_status_text(p->status));
    tc_buf_puts(b, "</td>");
}

/* The class of a predicted cell: clamped, does not fit, or plain. */
static const char *s_cell_class(const tc_pred_point_t *p)
{
    return p->clamped ? " class=\"clamp\"" : p->fits == 0 ? " class=\"oom\"" : "";
}

typedef enum { S_ITER, S_IMAGES, S_EPOCH, S_COST } s_metric_t;

static void s_matrix(tc_buf_t *b, const tc_report_t *r, s_metric_t m)
{
    static const char *const titles[] = {
        "Time per iteration (ms, 95 % interval below)", "Images per second",
        "Epoch time", "Cost per epoch"};
    tc_buf_printf(b, "<h3>%s</h3>\n", titles[m]);
    s_head_batches(b, r, "device");
    for (size_t i = 0; i < r->n; i++) {
        const tc_pred_device_t *d = &r->devs[i];
        tc_buf_puts(b, "<tr>");
        s_dev_cell(b, r, i);
        for (size_t j = 0; j < d->n_points; j++) {
            const tc_pred_point_t *p = &d->points[j];
            if (p->status != TC_PT_OK) {
                s_np_cell(b, p);
                continue;
            }
            tc_buf_printf(b, "<td%s>", s_cell_class(p));
            char text[64];
            switch (m) {
            case S_ITER:
                tc_buf_printf(b, "%.2f%s<br><span class=\"iv\">%.2f&ndash;%.2f</span>",
                              p->total_ms, p->clamped ? " !" : "", p->lo_ms, p->hi_ms);
                break;
            case S_IMAGES:
                tc_buf_printf(b, "%.1f", p->images_per_s);
                break;
            case S_EPOCH:
                tc_pred_duration(p->epoch_s, text, sizeof text);
                tc_report_esc(b, text);
                break;
            case S_COST:
                if (isfinite(p->cost))
                    tc_buf_printf(b, "%.2f", p->cost);
                else
                    tc_buf_puts(b, "<span class=\"muted\">no price</span>");
                break;
            }
            tc_buf_puts(b, "</td>");
        }
        tc_buf_puts(b, "</tr>\n");
    }
    tc_buf_puts(b, "</table>\n");
}

/* Speed of `p` relative to the reference's point `q` (ref time / time),
 * with its class: told apart by the intervals or not. */
static void s_relative(tc_buf_t *b, const tc_pred_point_t *p, const tc_pred_point_t *q)
{
    if (!q || q->status != TC_PT_OK || p->status != TC_PT_OK) {
        tc_buf_puts(b, "<td class=\"np\">&ndash;</td>");
        return;
    }
    const char *cls = p->hi_ms < q->lo_ms ? "faster" : p->lo_ms > q->hi_ms ? "slower" : "overlap";
    tc_buf_printf(b, "<td class=\"%s\">%.2f&times;</td>", cls, q->total_ms / p->total_ms);
}

static void s_relative_tables(tc_buf_t *b, const tc_report_t *r)
{
    tc_buf_puts(b, "<h3>Speed relative to ");
    s_refname(b, r);
    tc_buf_puts(b, "</h3>\n<p class=\"muted\">Time per iteration of the chosen device divided by "
                   "each device's: above 1 is faster. <span class=\"faster\">Green</span>: "
                   "faster and the 95 % intervals do not overlap; <span class=\"slower\">red"
                   "</span>: slower, likewise; <span class=\"overlap\">grey</span>: the "
                   "intervals overlap, so the two are not told apart.</p>\n");
    for (size_t k = 0; k < r->n; k++) {
        tc_buf_printf(b, "<div data-ref=\"%zu\"%s>", k, k == r->reference ? "" : " hidden");
        s_head_batches(b, r, "device");
        for (size_t i = 0; i < r->n; i++) {
            const tc_pred_device_t *d = &r->devs[i];
            tc_buf_puts(b, "<tr>");
            s_dev_cell(b, r, i);
            for (size_t j = 0; j < d->n_points; j++)
                s_relative(b, &d->points[j],
                           j < r->devs[k].n_points ? &r->devs[k].points[j] : NULL);
            tc_buf_puts(b, "</tr>\n");
        }
        tc_buf_puts(b, "</table></div>\n");
    }
}

/* The device's fastest epoch among rows that may fit in memory, or NULL. */
static const tc_pred_point_t *s_best_point(const tc_pred_device_t *d)
{
    const tc_pred_point_t *best = NULL;
    for (size_t j = 0; j < d->n_points; j++) {
        const tc_pred_point_t *p = &d->points[j];
        if (p->status == TC_PT_OK && p->fits != 0 && (!best || p->epoch_s < best->epoch_s))
            best = p;
    }
    return best;
}

static bool s_any_price(const tc_report_t *r)
{
    for (size_t i = 0; i < r->n; i++) {
        if (isfinite(r->devs[i].price))
            return true;
    }
    return false;
}

/* How far the device's numbers can be trusted, in a few words. */
static void s_trust(tc_buf_t *b, const tc_pred_device_t *d)
{
    if (d->status != TC_PRED_OK) {
        tc_buf_puts(b, "<span class=\"warn\">no fit</span>");
        return;
    }
    const tc_fit_t *f = &d->fit;
    bool clamped = false;
    for (size_t j = 0; j < d->n_points; j++)
        clamped |= d->points[j].status == TC_PT_OK && d->points[j].clamped;
    const char *sep = "";
    if (!isfinite(f->cv_mape)) {
        tc_buf_puts(b, "<span class=\"warn\">fit not validated</span>");
        sep = "; ";
    } else if (isfinite(f->conv_only_mape) && f->cv_mape > f->conv_only_mape) {
        tc_buf_printf(b, "<span class=\"warn\">fit worse than the conv sum alone "
                         "(%.1f %% vs %.1f %%)</span>",
                      f->cv_mape, f->conv_only_mape);
        sep = "; ";
    }
    if (!isfinite(f->interval_lo)) {
        tc_buf_printf(b, "%s<span class=\"warn\">intervals not calibrated</span>", sep);
        sep = "; ";
    }
    if (clamped) {
        tc_buf_printf(b, "%s<span class=\"warn\">clamped rows (!)</span>", sep);
        sep = "; ";
    }
    if (*d->unseen) {
        tc_buf_printf(b, "%s<span class=\"warn\">unseen layer classes</span>", sep);
        sep = "; ";
    }
    if (!*sep)
        tc_buf_puts(b, "validated, calibrated");
}

/* The fastest epoch over every device and batch that may fit in memory,
 * and the cheapest where there are prices. */
static void s_fastest_cheapest(tc_buf_t *b, const tc_report_t *r)
{
    size_t fd = 0, cd = 0;
    const tc_pred_point_t *fp = NULL, *cp = NULL;
    for (size_t i = 0; i < r->n; i++) {
        for (size_t j = 0; j < r->devs[i].n_points; j++) {
            const tc_pred_point_t *p = &r->devs[i].points[j];
            if (p->status != TC_PT_OK || p->fits == 0)
                continue;
            if (!fp || p->epoch_s < fp->epoch_s) {
                fp = p;
                fd = i;
            }
            if (isfinite(p->cost) && (!cp || p->cost < cp->cost)) {
                cp = p;
                cd = i;
            }
        }
    }
    char epoch[32];
    if (fp) {
        tc_pred_duration(fp->epoch_s, epoch, sizeof epoch);
        tc_buf_puts(b, "<p><b>Fastest</b>: ");
        tc_report_esc(b, r->devs[fd].device.name);
        tc_buf_printf(b, " at batch %u, ", fp->batch);
        tc_report_esc(b, epoch);
        tc_buf_printf(b, " per epoch (%.1f images/s)", fp->images_per_s);
        if (fp->clamped)
            tc_buf_puts(b, " <span class=\"warn\">(clamped: an extrapolation)</span>");
        tc_buf_puts(b, ".");
        if (cp) {
            tc_pred_duration(cp->epoch_s, epoch, sizeof epoch);
            tc_buf_puts(b, " <b>Cheapest</b>: ");
            tc_report_esc(b, r->devs[cd].device.name);
            tc_buf_printf(b, " at batch %u, %.2f per epoch (", cp->batch, cp->cost);
            tc_report_esc(b, epoch);
            tc_buf_puts(b, ").");
        }
        tc_buf_puts(b, "</p>\n");
    }
}

static void s_summary(tc_buf_t *b, const tc_report_t *r)
{
    bool prices = s_any_price(r);
    tc_buf_puts(b, "<h2 id=\"choose\">Choosing a device</h2>\n<div id=\"pick\"><label>Compare "
                   "against <select id=\"ref\">");
    for (size_t i = 0; i < r->n; i++) {
        tc_buf_printf(b, "<option value=\"%zu\"%s>", i, i == r->reference ? " selected" : "");
        tc_report_esc(b, r->devs[i].device.name);
        tc_buf_puts(b, "</option>");
    }
    tc_buf_puts(b, "</select></label> <span class=\"muted\">(the relative speeds below follow "
                   "this choice)</span></div>\n");
    tc_buf_printf(b, "<p>Each device at the batch size that trains an epoch fastest among "
                     "those that fit in memory. The fit error is leave-one-CNN-out: the "
                     "prediction's error on CNNs the fit never saw.</p>\n<table><tr>"
                     "<th class=\"dev\">device</th><th>best batch</th><th>ms/iteration</th>"
                     "<th>images/s</th><th>epoch</th>%s<th>vs ",
                  prices ? "<th>cost/epoch</th>" : "");
    s_refname(b, r);
    tc_buf_puts(b, "</th><th>fit error</th><th class=\"dev\">trust</th></tr>\n");
    for (size_t i = 0; i < r->n; i++) {
        const tc_pred_device_t *d = &r->devs[i];
        const tc_pred_point_t *p = s_best_point(d);
        tc_buf_puts(b, "<tr>");
        s_dev_cell(b, r, i);
        if (p) {
            char epoch[32];
            tc_pred_duration(p->epoch_s, epoch, sizeof epoch);
            tc_buf_printf(b, "<td>%u</td><td%s>%.2f%s</td><td>%.1f</td><td>", p->batch,
                          s_cell_class(p), p->total_ms, p->clamped ? " !" : "",
                          p->images_per_s);
            tc_report_esc(b, epoch);
            tc_buf_puts(b, "</td>");
            if (prices && isfinite(p->cost))
                tc_buf_printf(b, "<td>%.2f</td>", p->cost);
            else if (prices)
                tc_buf_puts(b, "<td class=\"muted\">no price</td>");
            tc_buf_puts(b, "<td>");
            for (size_t k = 0; k < r->n; k++) {
                const tc_pred_point_t *q = s_best_point(&r->devs[k]);
                tc_buf_printf(b, "<span data-ref=\"%zu\"%s>", k,
                              k == r->reference ? "" : " hidden");
                if (q)
                    tc_buf_printf(b, "%.2f&times; per epoch", q->epoch_s / p->epoch_s);
                else
                    tc_buf_puts(b, "&ndash;");
                tc_buf_puts(b, "</span>");
            }
            tc_buf_puts(b, "</td>");
        } else {
            tc_buf_printf(b, "<td class=\"np\" colspan=\"%d\">nothing predicted</td>",
                          prices ? 6 : 5);
        }
        if (d->status == TC_PRED_OK && isfinite(d->fit.cv_mape))
            tc_buf_printf(b, "<td>%.1f %%</td><td class=\"dev\">", d->fit.cv_mape);
        else
            tc_buf_puts(b, "<td class=\"np\">&ndash;</td><td class=\"dev\">");
        s_trust(b, d);
        tc_buf_puts(b, "</td></tr>\n");
    }
    tc_buf_puts(b, "</table>\n");
    s_fastest_cheapest(b, r);
}

static void s_pct(tc_buf_t *b, double v)
{
    if (isfinite(v))
        tc_buf_printf(b, "<td>%.1f %%</td>", 100 * v);
    else
        tc_buf_puts(b, "<td class=\"np\">&ndash;</td>");
}

static void s_quality(tc_buf_t *b, const tc_report_t *r)
{
    tc_buf_puts(b, "<h2 id=\"trust\">Fit quality and measured variability</h2>\n"
                   "<p class=\"muted\">Fit error: leave-one-CNN-out mean absolute percentage "
                   "error of the whole fitting procedure; conv sum alone: the same for "
                   "predicting the conv benchmarks' sum without the fit. Intervals are "
                   "calibrated when there were enough held-out points to measure them. "
                   "Variability: how much a device's measured training time moves from one "
                   "trace to the next (over all its traced points); the noise floor is the "
                   "error the measured times themselves carry (two halves of each point's "
                   "traces, against each other), which even a perfect prediction would "
                   "show.</p>\n<table><tr>"
                   "<th class=\"dev\">device</th><th>fit</th><th>CNNs</th><th>batches</th>"
                   "<th>fit error</th><th>conv sum alone</th><th>intervals</th>"
                   "<th>traced points</th><th>run-to-run spread (median)</th>"
                   "<th>(max)</th><th>within a trace</th><th>noise floor</th></tr>\n");
    for (size_t i = 0; i < r->n; i++) {
        const tc_pred_device_t *d = &r->devs[i];
        const tc_device_spread_t *sp = &r->spread[i];
        tc_buf_puts(b, "<tr>");
        s_dev_cell(b, r, i);
        if (d->status == TC_PRED_OK) {
            const tc_fit_t *f = &d->fit;
            tc_buf_printf(b, "<td>%s</td><td>%zu</td><td>%u&ndash;%u</td>",
                          tc_fit_form_name(f->form), f->n_cnns, f->batch_min, f->batch_max);
            if (isfinite(f->cv_mape))
                tc_buf_printf(b, "<td>%.1f %%</td>", f->cv_mape);
            else
                tc_buf_puts(b, "<td class=\"warn\">not validated</td>");
            if (isfinite(f->conv_only_mape))
                tc_buf_printf(b, "<td>%.1f %%</td>", f->conv_only_mape);
            else
                tc_buf_puts(b, "<td class=\"np\">&ndash;</td>");
            if (isfinite(f->interval_lo))
                tc_buf_printf(b, "<td>calibrated (&times;%.2f&ndash;%.2f)</td>", f->interval_lo,
                              f->interval_hi);
            else
                tc_buf_puts(b, "<td class=\"warn\">not calibrated</td>");
        } else {
            tc_buf_puts(b, "<td class=\"np\" colspan=\"6\">no fit</td>");
        }
        tc_buf_printf(b, "<td>%ld (%ld repeated)</td>", sp->points, sp->repeated);
        s_pct(b, sp->between_median);
        s_pct(b, sp->between_max);
        s_pct(b, sp->within_median);
        s_pct(b, sp->noise_floor);
        tc_buf_puts(b, "</tr>\n");
    }
    tc_buf_puts(b, "</table>\n");
}

static void s_vs_measured(tc_buf_t *b, const tc_report_t *r)
{
    tc_buf_puts(b, "<h2 id=\"measured\">Predicted against measured</h2>\n");
    size_t rows = 0;
    for (size_t i = 0; i < r->n; i++) {
        const tc_pred_device_t *d = &r->devs[i];
        for (size_t j = 0; j < d->n_points; j++) {
            const tc_pred_point_t *p = &d->points[j];
            const tc_measured_point_t *m = tc_report_measured(r, d->device.name, p->batch);
            if (!m)
                continue;
            if (rows++ == 0)
                tc_buf_puts(b, "<p class=\"muted\">Where this model was traced: the geometric "
                               "mean of its traces (their range) next to the prediction. A model "
                               "that was traced on a device was part of that device's fit, "
                               "so these errors read smaller than those on an unseen CNN (see "
                               "the fit error).</p>\n<table><tr><th class=\"dev\">device</th>"
                               "<th>batch</th><th>predicted ms</th><th>95 % interval</th>"
                               "<th>measured ms</th><th>traces</th><th>range</th>"
                               "<th>error</th><th>in the interval</th></tr>\n");
            tc_buf_puts(b, "<tr>");
            s_dev_cell(b, r, i);
            tc_buf_printf(b, "<td>%u</td>", p->batch);
            if (p->status == TC_PT_OK) {
                bool in = m->measured_ms >= p->lo_ms && m->measured_ms <= p->hi_ms;
                tc_buf_printf(b, "<td%s>%.2f%s</td><td>%.2f&ndash;%.2f</td>", s_cell_class(p),
                              p->total_ms, p->clamped ? " !" : "", p->lo_ms, p->hi_ms);
                tc_buf_printf(b, "<td>%.2f</td><td>%ld</td><td>%.2f&ndash;%.2f</td>"
                                 "<td>%+.1f %%</td><td>%s</td>",
                              m->measured_ms, m->traces, m->min_ms, m->max_ms,
                              100 * (p->total_ms - m->measured_ms) / m->measured_ms,
                              in ? "yes" : "<span class=\"warn\">no</span>");
            } else {
                s_np_cell(b, p);
                tc_buf_printf(b, "<td class=\"np\">&ndash;</td><td>%.2f</td><td>%ld</td>"
                                 "<td>%.2f&ndash;%.2f</td><td class=\"np\">&ndash;</td>"
                                 "<td class=\"np\">&ndash;</td>",
                              m->measured_ms, m->traces, m->min_ms, m->max_ms);
            }
            tc_buf_puts(b, "</tr>\n");
        }
    }
    if (rows)
        tc_buf_puts(b, "</table>\n");
    else
        tc_buf_puts(b, "<p class=\"muted\">This model was not traced on these devices at these "
                       "batch sizes: every number above is a prediction from its structure."
                       "</p>\n");
}

static void s_apart(tc_buf_t *b, const tc_report_t *r)
{
    if (!r->n_cmps)
        return;
    tc_buf_puts(b, "<h2 id=\"apart\">Told apart (95 %)</h2>\n<p class=\"muted\">At each batch, "
                   "the fastest device against the next: whether the difference is larger "
                   "than the predictions' uncertainty.</p>\n<ul>\n");
    for (size_t k = 0; k < r->n_cmps; k++) {
        const tc_pred_compare_t *c = &r->cmps[k];
        tc_buf_printf(b, "<li>batch %u: ", c->batch);
        tc_report_esc(b, r->devs[c->faster].device.name);
        if (c->apart)
            tc_buf_printf(b, " is %.2f&times; faster than ", c->ratio);
        else
            tc_buf_puts(b, " and ");
        tc_report_esc(b, r->devs[c->slower].device.name);
        if (c->apart)
            tc_buf_printf(b, " (%.2f&ndash;%.2f, %s)</li>\n", c->lo, c->hi, c->method);
        else if (isfinite(c->hi))
            tc_buf_printf(b, " cannot be told apart: predicted %.2f&times;, but %.2f&ndash;%.2f "
                             "(%s)</li>\n",
                          c->ratio, c->lo, c->hi, c->method);
        else
            tc_buf_printf(b, " cannot be told apart: predicted %.2f&times;, but the intervals "
                             "overlap (%s)</li>\n",
                          c->ratio, c->method);
    }
    tc_buf_puts(b, "</ul>\n");
}

static void s_notes(tc_buf_t *b, const tc_report_t *r)
{
    bool any = false;
    for (size_t i = 0; i < r->n; i++) {
        const tc_pred_device_t *d = &r->devs[i];
        if (!*d->note && !*d->warning && !*d->unseen)
            continue;
        if (!any)
            tc_buf_puts(b, "<h2 id=\"notes\">Notes</h2>\n<ul>\n");
        any = true;
        tc_buf_puts(b, "<li><b>");
        tc_report_esc(b, d->device.name);
        tc_buf_puts(b, "</b>: ");
        const char *sep = "";
        if (*d->note) {
            tc_report_esc(b, d->note);
            sep = " ";
        }
        if (*d->warning) {
            tc_buf_printf(b, "%s<span class=\"warn\">", sep);
            tc_report_esc(b, d->warning);
            tc_buf_puts(b, "</span>");
            sep = " ";
        }
        if (*d->unseen) {
            tc_buf_printf(b, "%s<span class=\"warn\">Layers of classes its fit never saw: ", sep);
            tc_report_esc(b, d->unseen);
            tc_buf_puts(b, "; the prediction extrapolates there.</span>");
        }
        tc_buf_puts(b, "</li>\n");
    }
    if (any)
        tc_buf_puts(b, "</ul>\n");
}

/* What the matrices' marks mean, for the marks they hold. */
static void s_matrix_key(tc_buf_t *b, const tc_report_t *r)
{
    bool clamped = false, oom = false, np = false;
    for (size_t i = 0; i < r->n; i++) {
        for (size_t j = 0; j < r->devs[i].n_points; j++) {
            const tc_pred_point_t *p = &r->devs[i].points[j];
            np |= p->status != TC_PT_OK;
            clamped |= p->status == TC_PT_OK && p->clamped;
            oom |= p->status == TC_PT_OK && p->fits == 0;
        }
    }
    if (!clamped && !oom && !np)
        return;
    tc_buf_puts(b, "<p class=\"muted\">");
    const char *sep = "";
    if (clamped) {
        tc_buf_puts(b, "<span class=\"clamp\">!</span> the fit predicted a negative conv or "
                       "non-conv time there (it extrapolates beyond its data), shown as 0");
        sep = "; ";
    }
    if (oom) {
        tc_buf_printf(b, "%s<span class=\"oom\">red</span>: predicted not to fit in the "
                         "device's memory",
                      sep);
        sep = "; ";
    }
    if (np)
        tc_buf_printf(b, "%sin grey: not predicted (hover for why; the notes below say what to "
                         "run)",
                      sep);
    tc_buf_puts(b, ".</p>\n");
}

void tc_report_html(tc_buf_t *b, const tc_report_t *r)
{
    uint32_t c, h, w;
    tc_model_input(r->model, &c, &h, &w);
    const char *name = tc_model_name(r->model);
    tc_buf_puts(b, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
                   "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
                   "<link rel=\"icon\" href=\"data:,\">\n<title>");
    tc_report_esc(b, name);
    tc_buf_printf(b, " at %ux%u: training time per device (traincast)</title>\n<style>%s</style>"
                     "\n</head>\n<body>\n<h1>",
                  h, w, s_css);
    tc_report_esc(b, name);
    tc_buf_printf(b, " at %ux%u: training time per device</h1>\n<p class=\"muted\">Model ", h, w);
    tc_report_esc(b, tc_model_id(r->model));
    tc_buf_printf(b, ": %.2f M parameters, %.2f GFLOPs forward per image; an epoch of %.0f "
                     "images; ",
                  tc_model_params(r->model) / 1e6, tc_model_flops(r->model) / 1e9,
                  r->req->dataset_size);
    tc_report_esc(b, r->req->framework ? r->req->framework : "any framework");
    tc_buf_puts(b, ", ");
    tc_report_esc(b, r->req->dtype ? r->req->dtype : "any dtype");
    tc_buf_puts(b, r->req->amp && *r->req->amp ? " with AMP " : "");
    tc_report_esc(b, r->req->amp);
    tc_buf_printf(b, ". Predicted by traincast %s, ", TRAINCAST_VERSION);
    tc_report_esc(b, r->generated);
    tc_buf_puts(b, ".</p>\n");

    s_summary(b, r);
    tc_buf_puts(b, "<h2 id=\"matrix\">Device &times; batch size</h2>\n");
    s_matrix_key(b, r);
    s_matrix(b, r, S_ITER);
    s_relative_tables(b, r);
    s_matrix(b, r, S_IMAGES);
    s_matrix(b, r, S_EPOCH);
    if (s_any_price(r))
        s_matrix(b, r, S_COST);
    else
        tc_buf_puts(b, "<p class=\"muted\">No cost: give <code>--prices FILE</code> (DEVICE "
                       "NAME = PRICE per device-hour) to compare cost per epoch.</p>\n");
    tc_buf_puts(b, "<h2 id=\"plots\">Charts</h2>\n<h3>Time per iteration</h3>\n");
    tc_report_svg(b, r, false);
    tc_buf_puts(b, "<h3>Epoch time</h3>\n");
    tc_report_svg(b, r, true);
    s_quality(b, r);
    s_vs_measured(b, r);
    s_apart(b, r);
    s_notes(b, r);
    tc_buf_printf(b, "<script>%s</script>\n</body>\n</html>\n", s_js);
}
