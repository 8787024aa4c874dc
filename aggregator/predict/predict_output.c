#include "predict_output.h"

#include "plot.h"
#include "tc_buf.h"
#include "tc_error.h"
#include "tc_progress.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

int tc_pred_format_parse(const char *s, tc_pred_format_t *out)
{
    if (!strcmp(s, "table"))
        *out = TC_PRED_TABLE;
    else if (!strcmp(s, "csv"))
        *out = TC_PRED_CSV;
    else if (!strcmp(s, "json"))
        *out = TC_PRED_JSON;
    else
        return TC_EUSAGE;
    return 0;
}

static void s_bytes(double b, char *buf, size_t size)
{
    if (!isfinite(b))
        snprintf(buf, size, "?");
    else if (b >= 1024.0 * 1024 * 1024)
        snprintf(buf, size, "%.1f GiB", b / (1024.0 * 1024 * 1024));
    else
        snprintf(buf, size, "%.0f MiB", b / (1024.0 * 1024));
}

static const char *s_fits(int fits)
{
    return fits > 0 ? "yes" : fits == 0 ? "no" : "?";
}

/* Fastest and cheapest (device, point) per epoch among points that fit or
 * may fit. */
static void s_best(const tc_pred_device_t *devs, size_t n, const tc_pred_device_t **fast_d,
                   const tc_pred_point_t **fast_p, const tc_pred_device_t **cheap_d,
                   const tc_pred_point_t **cheap_p)
{
    *fast_d = *cheap_d = NULL;
    *fast_p = *cheap_p = NULL;
    for (size_t i = 0; i < n; i++) {
        if (devs[i].status != TC_PRED_OK)
            continue;
        for (size_t j = 0; j < devs[i].n_points; j++) {
            const tc_pred_point_t *p = &devs[i].points[j];
            if (p->status != TC_PT_OK || p->fits == 0 || !isfinite(p->epoch_s))
                continue;
            if (!*fast_p || p->epoch_s < (*fast_p)->epoch_s) {
                *fast_d = &devs[i];
                *fast_p = p;
            }
            if (isfinite(p->cost) && (!*cheap_p || p->cost < (*cheap_p)->cost)) {
                *cheap_d = &devs[i];
                *cheap_p = p;
            }
        }
    }
}

static void s_duration(double s, char *buf, size_t size)
{
    if (!isfinite(s))
        snprintf(buf, size, "?");
    else if (s >= 86400)
        snprintf(buf, size, "%.0fd%02.0fh", floor(s / 86400), floor(fmod(s, 86400) / 3600));
    else if (s >= 3600)
        snprintf(buf, size, "%.0fh%02.0fm", floor(s / 3600), floor(fmod(s, 3600) / 60));
    else if (s >= 60)
        snprintf(buf, size, "%.0fm%02.0fs", floor(s / 60), floor(fmod(s, 60)));
    else
        snprintf(buf, size, "%.1fs", s);
}

static void s_print_table(FILE *out, const tc_model_t *model, const tc_pred_request_t *req,
                          const tc_pred_device_t *devs, size_t n, const tc_pred_compare_t *cmps,
                          size_t n_cmps)
{
    uint32_t c, h, w;
    tc_model_input(model, &c, &h, &w);
    fprintf(out, "%s (%s): %.2f M parameters, %.2f GFLOPs forward per image at %ux%u; "
                 "epoch of %.0f images\n\n",
            tc_model_name(model), tc_model_id(model), tc_model_params(model) / 1e6,
            tc_model_flops(model) / 1e9, h, w, req->dataset_size);
    bool clamped = false;
    /* The device column is as wide as the longest name: a CPU device's name
     * says its allocator, BLAS and framework, which tell devices apart. */
    int dw = 30;
    for (size_t i = 0; i < n; i++) {
        int len = (int)strlen(devs[i].device.name);
        dw = len > dw ? len : dw;
    }
    /* An energy column when some device has measured its training power. */
    bool energy = false;
    for (size_t i = 0; i < n; i++)
        energy |= isfinite(devs[i].watts);
    fprintf(out, "%-*s %6s %10s %21s %9s %9s %9s %9s %10s %9s %4s%s\n", dw, "device", "batch",
            "iter ms", "95% interval", "conv ms", "other ms", "img/s", "epoch", "cost/epoch",
            "memory", "fits", energy ? "  kJ/epoch" : "");
    for (size_t i = 0; i < n; i++) {
        const tc_pred_device_t *d = &devs[i];
        for (size_t j = 0; j < d->n_points; j++) {
            const tc_pred_point_t *p = &d->points[j];
            if (p->status != TC_PT_OK) {
                fprintf(out, "%-*s %6u  -- %s: %s\n", dw, j == 0 ? d->device.name : "", p->batch,
                        tc_pred_point_status_name(p->status), p->reason);
                continue;
            }
            char interval[48], epoch[24], cost[24], mem[24];
            snprintf(interval, sizeof interval, "%.2f..%.2f", p->lo_ms, p->hi_ms);
            s_duration(p->epoch_s, epoch, sizeof epoch);
            if (isfinite(p->cost))
                snprintf(cost, sizeof cost, "%.2f", p->cost);
            else
                snprintf(cost, sizeof cost, "-");
            s_bytes(p->peak_bytes, mem, sizeof mem);
            char kj[24] = "";
            if (energy && isfinite(p->energy_kj))
                snprintf(kj, sizeof kj, " %10.1f", p->energy_kj);
            else if (energy)
                snprintf(kj, sizeof kj, " %10s", "-");
            fprintf(out, "%-*s %6u %10.2f %21s %9.2f %8.2f%s %9.1f %9s %10s %9s %4s%s\n", dw,
                    j == 0 ? d->device.name : "", p->batch, p->total_ms, interval, p->conv_ms,
                    p->nonconv_ms, p->clamped ? "!" : " ", p->images_per_s, epoch, cost, mem,
                    s_fits(p->fits), kj);
            clamped |= p->clamped;
        }
        if (*d->warning)
            fprintf(out, "%-*s  warning: %s\n", dw, "", d->warning);
    }
    const tc_pred_device_t *fd, *cd;
    const tc_pred_point_t *fp, *cp;
    s_best(devs, n, &fd, &fp, &cd, &cp);
    bool notes = false;
    for (size_t i = 0; i < n; i++) {
        if (!*devs[i].note)
            continue;
        fprintf(out, "%s%s: %s\n", notes ? "" : "\n", devs[i].device.name, devs[i].note);
        notes = true;
    }
    if (clamped)
        fprintf(out, "\n! the fit predicts a negative non-conv time here (it extrapolates "
                     "beyond its data): shown as 0;\n  trace models like this one on that "
                     "device and fit again\n");
    fputc('\n', out);
    if (fd) {
        char epoch[24];
        s_duration(fp->epoch_s, epoch, sizeof epoch);
        fprintf(out, "fastest:  %s at batch %u: %s per epoch (%.1f images/s)\n", fd->device.name,
                fp->batch, epoch, fp->images_per_s);
    }
    if (cd) {
        char epoch[24];
        s_duration(cp->epoch_s, epoch, sizeof epoch);
        fprintf(out, "cheapest: %s at batch %u: %.2f per epoch (%s)\n", cd->device.name,
                cp->batch, cp->cost, epoch);
    } else if (fd) {
        fprintf(out, "cheapest: give --prices FILE (DEVICE NAME = PRICE per device-hour) to "
                     "compare cost\n");
    }
    if (n_cmps)
        fprintf(out, "\ntold apart (95 %%): at each batch, the fastest device against the next\n");
    for (size_t k = 0; k < n_cmps; k++) {
        const tc_pred_compare_t *cm = &cmps[k];
        if (cm->apart)
            fprintf(out, "  batch %-6u %s is %.2fx faster than %s (%.2f..%.2f, %s)\n", cm->batch,
                    devs[cm->faster].device.name, cm->ratio, devs[cm->slower].device.name,
                    cm->lo, cm->hi, cm->method);
        else if (isfinite(cm->hi))
            fprintf(out, "  batch %-6u %s and %s cannot be told apart: predicted %.2fx, but "
                         "%.2f..%.2f (%s)\n",
                    cm->batch, devs[cm->faster].device.name, devs[cm->slower].device.name,
                    cm->ratio, cm->lo, cm->hi, cm->method);
        else
            fprintf(out, "  batch %-6u %s and %s cannot be told apart: predicted %.2fx, but the "
                         "intervals overlap (%s)\n",
                    cm->batch, devs[cm->faster].device.name, devs[cm->slower].device.name,
                    cm->ratio, cm->method);
    }
    fputc('\n', out);
    for (size_t i = 0; i < n; i++) {
        if (devs[i].status != TC_PRED_OK)
            continue;
        const tc_fit_t *f = &devs[i].fit;
        if (isfinite(f->cv_mape))
            fprintf(out, "fit of %s: %s, leave-one-CNN-out MAPE %.1f %% over %zu CNNs, "
                         "batches %u..%u\n",
                    devs[i].device.name, tc_fit_form_name(f->form), f->cv_mape, f->n_cnns,
                    f->batch_min, f->batch_max);
        else
            fprintf(out, "fit of %s: %s over %zu CNNs, batches %u..%u; not validated (fitted "
                         "with --no-validate or on fewer than 4 CNNs), so its error is unknown "
                         "and its interval reads narrower than its errors: run aggregator fit "
                         "without --no-validate\n",
                    devs[i].device.name, tc_fit_form_name(f->form), f->n_cnns, f->batch_min,
                    f->batch_max);
        if (*devs[i].unseen)
            fprintf(out, "  warning: layers of classes this fit never saw: %s; the prediction "
                         "extrapolates there\n",
                    devs[i].unseen);
    }
}

static void s_csv_text(FILE *out, const char *s)
{
    fputc('"', out);
    for (; *s; s++) {
        if (*s == '"')
            fputc('"', out);
        fputc(*s, out);
    }
    fputc('"', out);
}

static void s_csv_num(FILE *out, double v, const char *fmt)
{
    fputc(',', out);
    if (isfinite(v))
        fprintf(out, fmt, v);
}

static void s_csv_reason(FILE *out, const tc_pred_device_t *d, const tc_pred_point_t *p)
{
    char reason[2048];
    if (p->status == TC_PT_OK) {
        const char *clamp = p->clamped ? "non-conv time clamped at 0 (negative extrapolation)"
                                       : "";
        snprintf(reason, sizeof reason, "%s%s%s", clamp, *clamp && *d->warning ? "; " : "",
                 d->warning);
    } else
        snprintf(reason, sizeof reason, "%s%s%s", p->reason, *d->note ? "; " : "", d->note);
    fputc(',', out);
    if (*reason)
        s_csv_text(out, reason);
}

static void s_print_csv(FILE *out, const tc_model_t *model, const tc_pred_device_t *devs,
                        size_t n)
{
    fprintf(out, "model,device,status,batch,iteration_ms,lo_ms,hi_ms,conv_ms,nonconv_ms,"
                 "images_per_s,epoch_s,cost_per_epoch,peak_memory_bytes,fits,nonconv_clamped,"
                 "energy_kj_per_epoch,reason\n");
    for (size_t i = 0; i < n; i++) {
        const tc_pred_device_t *d = &devs[i];
        for (size_t j = 0; j < d->n_points; j++) {
            const tc_pred_point_t *p = &d->points[j];
            s_csv_text(out, tc_model_id(model));
            fputc(',', out);
            s_csv_text(out, d->device.name);
            fprintf(out, ",%s,%u", tc_pred_point_status_name(p->status), p->batch);
            s_csv_num(out, p->total_ms, "%.4f");
            s_csv_num(out, p->lo_ms, "%.4f");
            s_csv_num(out, p->hi_ms, "%.4f");
            s_csv_num(out, p->conv_ms, "%.4f");
            s_csv_num(out, p->nonconv_ms, "%.4f");
            s_csv_num(out, p->images_per_s, "%.3f");
            s_csv_num(out, p->epoch_s, "%.1f");
            s_csv_num(out, p->cost, "%.4f");
            s_csv_num(out, p->peak_bytes, "%.0f");
            if (p->status == TC_PT_OK)
                fprintf(out, ",%s,%s", s_fits(p->fits), p->clamped ? "true" : "false");
            else
                fputs(",,", out);
            s_csv_num(out, p->energy_kj, "%.3f");
            s_csv_reason(out, d, p);
            fputc('\n', out);
        }
    }
}

static void s_json_point(tc_buf_t *b, const tc_pred_point_t *p)
{
    tc_buf_printf(b, "{\"batch\":%u,\"status\":\"%s\",\"iteration_ms\":", p->batch,
                  tc_pred_point_status_name(p->status));
    tc_buf_json_num(b, p->total_ms);
    tc_buf_puts(b, ",\"lo_ms\":");
    tc_buf_json_num(b, p->lo_ms);
    tc_buf_puts(b, ",\"hi_ms\":");
    tc_buf_json_num(b, p->hi_ms);
    tc_buf_puts(b, ",\"conv_ms\":");
    tc_buf_json_num(b, p->conv_ms);
    tc_buf_puts(b, ",\"nonconv_ms\":");
    tc_buf_json_num(b, p->nonconv_ms);
    tc_buf_puts(b, ",\"images_per_s\":");
    tc_buf_json_num(b, p->images_per_s);
    tc_buf_puts(b, ",\"epoch_s\":");
    tc_buf_json_num(b, p->epoch_s);
    tc_buf_puts(b, ",\"cost_per_epoch\":");
    tc_buf_json_num(b, p->cost);
    tc_buf_puts(b, ",\"peak_memory_bytes\":");
    if (isfinite(p->peak_bytes))
        tc_buf_printf(b, "%.0f", p->peak_bytes); /* whole bytes, as in csv */
    else
        tc_buf_puts(b, "null");
    tc_buf_puts(b, ",\"energy_kj_per_epoch\":");
    tc_buf_json_num(b, p->energy_kj);
    if (p->status == TC_PT_OK)
        tc_buf_printf(b, ",\"fits\":%s,\"nonconv_clamped\":%s,\"reason\":null}",
                      p->fits > 0 ? "true" : p->fits == 0 ? "false" : "null",
                      p->clamped ? "true" : "false");
    else {
        tc_buf_puts(b, ",\"fits\":null,\"nonconv_clamped\":null,\"reason\":");
        tc_buf_json_str(b, p->reason);
        tc_buf_putc(b, '}');
    }
}

static int s_print_json(FILE *out, const tc_model_t *model, const tc_pred_request_t *req,
                        const tc_pred_device_t *devs, size_t n, const tc_pred_compare_t *cmps,
                        size_t n_cmps)
{
    tc_buf_t b = {0};
    tc_buf_puts(&b, "{\"model\":{\"id\":");
    tc_buf_json_str(&b, tc_model_id(model));
    tc_buf_puts(&b, ",\"name\":");
    tc_buf_json_str(&b, tc_model_name(model));
    tc_buf_printf(&b, ",\"params\":%llu,\"flops_per_image\":",
                  (unsigned long long)tc_model_params(model));
    tc_buf_json_num(&b, tc_model_flops(model));
    tc_buf_puts(&b, "},\"dataset_size\":");
    tc_buf_json_num(&b, req->dataset_size);
    tc_buf_puts(&b, ",\"devices\":[");
    for (size_t i = 0; i < n; i++) {
        const tc_pred_device_t *d = &devs[i];
        tc_buf_puts(&b, i ? ",{\"name\":" : "{\"name\":");
        tc_buf_json_str(&b, d->device.name);
        tc_buf_puts(&b, ",\"status\":");
        tc_buf_json_str(&b, d->status == TC_PRED_OK ? "ok" : "no_fit");
        tc_buf_puts(&b, ",\"note\":");
        if (*d->note)
            tc_buf_json_str(&b, d->note);
        else
            tc_buf_puts(&b, "null");
        if (d->status != TC_PRED_OK) {
            tc_buf_puts(&b, ",\"fit\":null,\"unseen_classes\":null");
        } else {
            if (*d->warning) {
                tc_buf_puts(&b, ",\"warning\":");
                tc_buf_json_str(&b, d->warning);
            }
            tc_buf_printf(&b, ",\"fit\":{\"id\":%lld,\"form\":", d->fit.fit_id);
            tc_buf_json_str(&b, tc_fit_form_name(d->fit.form));
            tc_buf_puts(&b, ",\"cv_mape_pct\":");
            tc_buf_json_num(&b, d->fit.cv_mape);
            tc_buf_puts(&b, ",\"stat\":");
            tc_buf_json_str(&b, tc_fit_stat_name(d->fit.stat));
            tc_buf_printf(&b, ",\"n_cnns\":%zu,\"batch_min\":%u,\"batch_max\":%u",
                          d->fit.n_cnns, d->fit.batch_min, d->fit.batch_max);
            tc_buf_puts(&b, "},\"unseen_classes\":");
            if (*d->unseen)
                tc_buf_json_str(&b, d->unseen);
            else
                tc_buf_puts(&b, "null");
        }
        tc_buf_puts(&b, ",\"price_per_hour\":");
        tc_buf_json_num(&b, d->price);
        if (d->status == TC_PRED_OK) {
            tc_buf_puts(&b, ",\"training_power_w\":");
            tc_buf_json_num(&b, d->watts);
            tc_buf_puts(&b, ",\"energy_source\":");
            if (*d->energy_source)
                tc_buf_json_str(&b, d->energy_source);
            else
                tc_buf_puts(&b, "null");
        }
        tc_buf_puts(&b, ",\"predictions\":[");
        for (size_t j = 0; j < d->n_points; j++) {
            if (j)
                tc_buf_putc(&b, ',');
            s_json_point(&b, &d->points[j]);
        }
        tc_buf_puts(&b, "]}");
    }
    tc_buf_puts(&b, "],\"summary\":{");
    const tc_pred_device_t *fd, *cd;
    const tc_pred_point_t *fp, *cp;
    s_best(devs, n, &fd, &fp, &cd, &cp);
    tc_buf_puts(&b, "\"fastest\":");
    if (fd) {
        tc_buf_puts(&b, "{\"device\":");
        tc_buf_json_str(&b, fd->device.name);
        tc_buf_printf(&b, ",\"batch\":%u,\"epoch_s\":", fp->batch);
        tc_buf_json_num(&b, fp->epoch_s);
        tc_buf_putc(&b, '}');
    } else {
        tc_buf_puts(&b, "null");
    }
    tc_buf_puts(&b, ",\"cheapest\":");
    if (cd) {
        tc_buf_puts(&b, "{\"device\":");
        tc_buf_json_str(&b, cd->device.name);
        tc_buf_printf(&b, ",\"batch\":%u,\"cost_per_epoch\":", cp->batch);
        tc_buf_json_num(&b, cp->cost);
        tc_buf_putc(&b, '}');
    } else {
        tc_buf_puts(&b, "null");
    }
    tc_buf_puts(&b, ",\"told_apart\":[");
    for (size_t k = 0; k < n_cmps; k++) {
        const tc_pred_compare_t *c = &cmps[k];
        tc_buf_printf(&b, "%s{\"batch\":%u,\"faster\":", k ? "," : "", c->batch);
        tc_buf_json_str(&b, devs[c->faster].device.name);
        tc_buf_puts(&b, ",\"slower\":");
        tc_buf_json_str(&b, devs[c->slower].device.name);
        tc_buf_puts(&b, ",\"ratio\":");
        tc_buf_json_num(&b, c->ratio);
        tc_buf_puts(&b, ",\"ratio_interval\":[");
        tc_buf_json_num(&b, c->lo);
        tc_buf_putc(&b, ',');
        tc_buf_json_num(&b, c->hi);
        tc_buf_printf(&b, "],\"apart\":%s,\"method\":\"%s\",\"pairs\":%zu}",
                      c->apart ? "true" : "false", c->method, c->pairs);
    }
    tc_buf_puts(&b, "]}}\n");
    int rc = b.failed ? tc_fail(TC_ENOMEM, "out of memory") : 0;
    if (rc == 0)
        fputs(tc_buf_str(&b), out);
    tc_buf_free(&b);
    return rc;
}

int tc_pred_print(FILE *out, tc_pred_format_t fmt, const tc_model_t *model,
                  const tc_pred_request_t *req, const tc_pred_device_t *devs, size_t n,
                  const tc_pred_compare_t *cmps, size_t n_cmps)
{
    switch (fmt) {
    case TC_PRED_CSV:
        s_print_csv(out, model, devs, n);
        return 0;
    case TC_PRED_JSON:
        return s_print_json(out, model, req, devs, n, cmps, n_cmps);
    default:
        s_print_table(out, model, req, devs, n, cmps, n_cmps);
        return 0;
    }
}

/* The letter at the foot of the chart for a row that was not predicted. */
static const tc_plot_skip_t s_skips[] = {
    {'m', "not predicted: conv benchmarks missing"},
    {'r', "not predicted: outside the fit's batch sizes"},
    {'n', "not predicted: the device has no fit"},
};

static char s_skip_code(tc_pred_point_status_t st)
{
    return st == TC_PT_MISSING ? 'm' : st == TC_PT_OUT_OF_RANGE ? 'r' : 'n';
}

int tc_pred_plot(const char *path, bool epoch, const tc_model_t *model,
                 const tc_pred_device_t *devs, size_t n)
{
    tc_plot_series_t *series = calloc(n + 1, sizeof *series);
    size_t total = 0;
    for (size_t i = 0; i < n; i++)
        total += devs[i].n_points;
    /* Per point: x, y, lo, hi and the x of a skipped batch; fits and
     * clamped; a skipped batch's letter. */
    double *vals = calloc(5 * total + 1, sizeof *vals);
    int *flags = calloc(2 * total + 1, sizeof *flags);
    char *codes = calloc(total + 1, 1);
    if (!series || !vals || !flags || !codes) {
        free(series);
        free(vals);
        free(flags);
        free(codes);
        return tc_fail(TC_ENOMEM, "out of memory");
    }
    size_t ns = 0, k = 0, ok = 0;
    for (size_t i = 0; i < n; i++) {
        const tc_pred_device_t *d = &devs[i];
        tc_plot_series_t *s = &series[ns++];
        double *x = &vals[k], *y = &vals[total + k], *lo = &vals[2 * total + k],
               *hi = &vals[3 * total + k], *sx = &vals[4 * total + k];
        int *fits = &flags[k], *clamped = &flags[total + k];
        char *code = &codes[k];
        size_t q = 0, skipped = 0;
        for (size_t j = 0; j < d->n_points; j++) {
            const tc_pred_point_t *p = &d->points[j];
            if (p->status != TC_PT_OK) {
                sx[skipped] = p->batch;
                code[skipped++] = s_skip_code(p->status);
                continue;
            }
            /* Epoch time in minutes scales the iteration interval. */
            double scale = epoch ? p->epoch_s / 60.0 / p->total_ms : 1.0;
            x[q] = p->batch;
            y[q] = p->total_ms * scale;
            lo[q] = p->lo_ms * scale;
            hi[q] = p->hi_ms * scale;
            fits[q] = p->fits != 0;
            clamped[q] = p->clamped;
            q++;
        }
        *s = (tc_plot_series_t){.label = d->device.name,
                                .n = q,
                                .x = x,
                                .y = y,
                                .lo = lo,
                                .hi = hi,
                                .fits = fits,
                                .clamped = clamped,
                                .n_skipped = skipped,
                                .skipped_x = sx,
                                .skipped_code = code};
        ok += q;
        k += d->n_points;
    }
    uint32_t c, h, w;
    tc_model_input(model, &c, &h, &w);
    char title[512];
    snprintf(title, sizeof title, "%s at %ux%u: predicted %s", tc_model_name(model), h, w,
             epoch ? "epoch time" : "training iteration time");
    tc_plot_opts_t o = {.title = title,
                        .xlabel = "batch size",
                        .ylabel = epoch ? "minutes per epoch" : "ms per iteration",
                        .log_y = 1,
                        .skips = s_skips,
                        .n_skips = sizeof s_skips / sizeof s_skips[0]};
    int rc = ok ? tc_plot_write(path, &o, series, ns)
                : tc_fail(TC_ENOTFOUND, "--plot: no device has predictions to draw");
    free(series);
    free(vals);
    free(flags);
    free(codes);
    return rc;
}

void tc_pred_duration(double seconds, char *buf, size_t size)
{
    s_duration(seconds, buf, size);
}
