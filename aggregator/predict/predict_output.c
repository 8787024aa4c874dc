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

/* `text` after `first` (already counted in `col`), broken between words so
 * that no line passes `width` (0: one line); continuation lines start with
 * `indent` spaces. A word longer than a line stays whole. */
static void s_wrap(FILE *out, int width, int col, int indent, const char *text)
{
    bool first = true;
    for (const char *p = text; *p;) {
        size_t wl = strcspn(p, " ");
        if (!first && width && col + 1 + (int)wl > width) {
            fprintf(out, "\n%*s", indent, "");
            col = indent;
        } else if (!first) {
            fputc(' ', out);
            col++;
        }
        fwrite(p, 1, wl, out);
        col += (int)wl;
        first = false;
        p += wl;
        while (*p == ' ')
            p++;
    }
    fputc('\n', out);
}

/* A line of prose: `head` then `text`, wrapped. */
static void s_say(FILE *out, int width, int indent, const char *head, const char *text)
{
    fputs(head, out);
    s_wrap(out, width, (int)strlen(head), indent, text);
}

/* A shell command on lines of at most `width` (0: one line), broken between
 * words with a trailing backslash, continuation lines indented. */
static void s_command(FILE *out, int width, int indent, const char *cmd)
{
    fprintf(out, "%*s", indent, "");
    int col = indent;
    for (const char *p = cmd; *p;) {
        size_t wl = strcspn(p, " ");
        if (width && col > indent && col + 1 + (int)wl + 2 > width) {
            fprintf(out, " \\\n%*s", indent + 4, "");
            col = indent + 4;
        } else if (col > indent) {
            fputc(' ', out);
            col++;
        }
        fwrite(p, 1, wl, out);
        col += (int)wl;
        p += wl;
        while (*p == ' ')
            p++;
    }
    fputc('\n', out);
}

/* A time in ms with about four significant digits. */
static void s_ms(double v, char *buf, size_t size)
{
    if (!isfinite(v))
        snprintf(buf, size, "?");
    else if (v >= 1000)
        snprintf(buf, size, "%.0f", v);
    else if (v >= 100)
        snprintf(buf, size, "%.1f", v);
    else
        snprintf(buf, size, "%.2f", v);
}

/* The name a table gives a device: its alias, or with --wide its name. */
static const char *s_label(const tc_pred_device_t *d, bool wide)
{
    return !wide && *d->device.alias ? d->device.alias : d->device.name;
}

/* Why an ok row needs reading with care (clamped, the device's warning,
 * layers its fit never saw),
 * or why a row was not predicted (and the device's note): the `reason` of
 * every format. */
static void s_row_reason(const tc_pred_device_t *d, const tc_pred_point_t *p, char *buf,
                         size_t size)
{
    if (p->status == TC_PT_OK) {
        const char *clamp = p->clamped ? "non-conv time clamped at 0 (the fit extrapolates "
                                         "below zero)"
                                       : "";
        char unseen[600] = "";
        if (*d->unseen)
            snprintf(unseen, sizeof unseen, "layers of classes the fit never saw: %s", d->unseen);
        snprintf(buf, size, "%s%s%s%s%s", clamp, *clamp && *d->warning ? "; " : "", d->warning,
                 (*clamp || *d->warning) && *unseen ? "; " : "", unseen);
    } else {
        snprintf(buf, size, "%s%s%s", p->reason, *d->note ? "; " : "", d->note);
    }
}

/* The note of a device lacking benchmarks ends in the command that
 * measures them ("...; on HOST run: agent bench ..."): the prose wrapped,
 * the command on lines of its own. */
static void s_print_note(FILE *out, int width, const tc_pred_device_t *d, bool wide)
{
    char head[512];
    snprintf(head, sizeof head, "%s: ", s_label(d, wide));
    const char *run = strstr(d->note, " run: ");
    if (!run || width == 0) {
        s_say(out, width, 2, head, d->note);
        return;
    }
    char prose[sizeof d->note];
    snprintf(prose, sizeof prose, "%.*s run:", (int)(run - d->note), d->note);
    s_say(out, width, 2, head, prose);
    s_command(out, width, 2, run + 6);
}

static void s_print_table(FILE *out, bool wide, const tc_model_t *model,
                          const tc_pred_request_t *req, const tc_pred_device_t *devs, size_t n,
                          const tc_pred_compare_t *cmps, size_t n_cmps)
{
    int width = wide ? 0 : TC_PRED_TABLE_WIDTH;
    uint32_t c, h, w;
    tc_model_input(model, &c, &h, &w);
    char line[1024];
    snprintf(line, sizeof line,
             "%s (%s): %.2f M parameters, %.2f GFLOPs forward per image at %ux%u; epoch of "
             "%.0f images",
             tc_model_name(model), tc_model_id(model), tc_model_params(model) / 1e6,
             tc_model_flops(model) / 1e9, h, w, req->dataset_size);
    s_say(out, width, 2, "", line);
    fputc('\n', out);
    /* Columns no device fills are left out (all of them with --wide). */
    bool energy = wide, cost = wide, matmul = wide, clamped = false, uncalibrated = false;
    int dw = 6;
    for (size_t i = 0; i < n; i++) {
        matmul |= devs[i].status == TC_PRED_OK && devs[i].fit.matmuls;
        energy |= isfinite(devs[i].watts);
        cost |= isfinite(devs[i].price);
        int len = (int)strlen(s_label(&devs[i], wide));
        dw = len > dw ? len : dw;
    }
    fprintf(out, "%-*s %5s %8s %15s %8s%s %8s  %8s %8s%s %9s %4s%s\n", dw, "device", "batch",
            "iter ms", "95% interval", "conv ms", matmul ? "    mm ms" : "", "other ms",
            "img/s", "epoch", cost ? " cost/epoch" : "", "memory", "fits",
            energy ? "  kJ/epoch" : "");
    for (size_t i = 0; i < n; i++) {
        const tc_pred_device_t *d = &devs[i];
        bool calibrated = tc_pred_calibrated(d);
        for (size_t j = 0; j < d->n_points; j++) {
            const tc_pred_point_t *p = &d->points[j];
            const char *label = j == 0 ? s_label(d, wide) : "";
            if (p->status != TC_PT_OK) {
                char head[256];
                snprintf(head, sizeof head, "%-*s %5u  -- %s: ", dw, label, p->batch,
                         tc_pred_point_status_name(p->status));
                s_say(out, width, dw + 11, head, p->reason);
                continue;
            }
            char iter[24], lo[24], hi[24], interval[64], conv[24], other[24], epoch[24];
            char costs[24] = "", mem[24], kj[24] = "", mms[24] = "";
            s_ms(p->total_ms, iter, sizeof iter);
            s_ms(p->lo_ms, lo, sizeof lo);
            s_ms(p->hi_ms, hi, sizeof hi);
            snprintf(interval, sizeof interval, "%s..%s%s", lo, hi, calibrated ? " " : "?");
            s_ms(p->conv_ms, conv, sizeof conv);
            s_ms(p->nonconv_ms, other, sizeof other);
            if (matmul) {
                char v[24] = "-";
                if (d->fit.matmuls)
                    s_ms(p->matmul_ms, v, sizeof v);
                snprintf(mms, sizeof mms, " %8s", v);
            }
            s_duration(p->epoch_s, epoch, sizeof epoch);
            if (cost)
                snprintf(costs, sizeof costs, " %10s", "-");
            if (cost && isfinite(p->cost))
                snprintf(costs, sizeof costs, " %10.2f", p->cost);
            s_bytes(p->peak_bytes, mem, sizeof mem);
            if (energy)
                snprintf(kj, sizeof kj, " %9s", "-");
            if (energy && isfinite(p->energy_kj))
                snprintf(kj, sizeof kj, " %9.1f", p->energy_kj);
            fprintf(out, "%-*s %5u %8s %15s %8s%s %8s%s %8.1f %8s%s %9s %4s%s\n", dw, label,
                    p->batch, iter, interval, conv, mms, other, p->clamped ? "!" : " ",
                    p->images_per_s, epoch, costs, mem, s_fits(p->fits), kj);
            clamped |= p->clamped;
            uncalibrated |= !calibrated;
        }
        if (*d->warning) {
            char head[256];
            snprintf(head, sizeof head, "%-*s  warning: ", dw, "");
            s_say(out, width, dw + 4, head, d->warning);
        }
    }
    if (clamped || uncalibrated)
        fputc('\n', out);
    if (clamped)
        s_say(out, width, 2, "! ",
              "the fit predicts a negative non-conv time here (it extrapolates beyond its "
              "data): shown as 0, and the row's time and interval are not to be trusted; trace "
              "models like this one on that device and fit again");
    if (uncalibrated)
        s_say(out, width, 2, "? ",
              "the interval is not calibrated (the fit was not validated, or had too few "
              "held-out points): it reads narrower than the fit's errors; see each fit below");
    bool notes = false;
    for (size_t i = 0; i < n; i++) {
        if (!*devs[i].note)
            continue;
        if (!notes)
            fputc('\n', out);
        s_print_note(out, width, &devs[i], wide);
        notes = true;
    }
    const tc_pred_device_t *fd, *cd;
    const tc_pred_point_t *fp, *cp;
    s_best(devs, n, &fd, &fp, &cd, &cp);
    fputc('\n', out);
    if (fd) {
        char epoch[24];
        s_duration(fp->epoch_s, epoch, sizeof epoch);
        snprintf(line, sizeof line, "%s at batch %u: %s per epoch (%.1f images/s)",
                 s_label(fd, wide), fp->batch, epoch, fp->images_per_s);
        s_say(out, width, 10, "fastest:  ", line);
    }
    if (cd) {
        char epoch[24];
        s_duration(cp->epoch_s, epoch, sizeof epoch);
        snprintf(line, sizeof line, "%s at batch %u: %.2f per epoch (%s)", s_label(cd, wide),
                 cp->batch, cp->cost, epoch);
        s_say(out, width, 10, "cheapest: ", line);
    } else if (fd) {
        s_say(out, width, 10, "cheapest: ",
              "give --prices FILE (a device's name, part of it or alias = price per "
              "device-hour) to compare cost");
    }
    if (n_cmps)
        fprintf(out, "\ntold apart (95 %%): at each batch, the fastest device against the next\n");
    for (size_t k = 0; k < n_cmps; k++) {
        const tc_pred_compare_t *cm = &cmps[k];
        const char *a = s_label(&devs[cm->faster], wide), *b = s_label(&devs[cm->slower], wide);
        char head[32];
        snprintf(head, sizeof head, "  batch %-6u ", cm->batch);
        if (cm->caveat && !strcmp(cm->caveat, "clamped"))
            snprintf(line, sizeof line, "%s and %s: not compared: predicted %.2fx, but a time "
                                        "was clamped at 0 (!)",
                     a, b, cm->ratio);
        else if (cm->caveat)
            snprintf(line, sizeof line, "%s and %s: not compared: predicted %.2fx, but the "
                                        "intervals are not calibrated (?)",
                     a, b, cm->ratio);
        else if (cm->apart)
            snprintf(line, sizeof line, "%s is %.2fx faster than %s (%.2f..%.2f, %s)", a,
                     cm->ratio, b, cm->lo, cm->hi, cm->method);
        else if (isfinite(cm->hi))
            snprintf(line, sizeof line, "%s and %s cannot be told apart: predicted %.2fx, but "
                                        "%.2f..%.2f (%s)",
                     a, b, cm->ratio, cm->lo, cm->hi, cm->method);
        else
            snprintf(line, sizeof line, "%s and %s cannot be told apart: predicted %.2fx, but "
                                        "the intervals overlap (%s)",
                     a, b, cm->ratio, cm->method);
        s_say(out, width, 15, head, line);
    }
    fputc('\n', out);
    for (size_t i = 0; i < n; i++) {
        const tc_pred_device_t *d = &devs[i];
        char head[300];
        snprintf(head, sizeof head, "%s: ", s_label(d, wide));
        if (d->status != TC_PRED_OK) {
            if (strcmp(s_label(d, wide), d->device.name))
                s_say(out, width, 2, head, d->device.name);
            continue;
        }
        const tc_fit_t *f = &d->fit;
        char form[64], err[160], cal[200];
        snprintf(form, sizeof form, "%s", f->p ? tc_fit_form_name(f->form) : "the conv sum alone");
        if (isfinite(f->cv_mape))
            snprintf(err, sizeof err,
                     "validated error %.1f %% (leave-one-CNN-out MAPE; the conv sum alone: "
                     "%.1f %%)",
                     f->cv_mape, f->conv_only_mape);
        else
            snprintf(err, sizeof err, "not validated (fitted with --no-validate or on fewer "
                                      "than 4 CNNs), so its error is unknown");
        if (tc_pred_calibrated(d))
            snprintf(cal, sizeof cal, "intervals calibrated on its held-out errors");
        else
            snprintf(cal, sizeof cal, "intervals not calibrated (?)%s",
                     isfinite(f->cv_mape) ? ": fewer held-out points than 39" : "");
        /* The full name after the alias it stands for (once). */
        bool legend = strcmp(s_label(d, wide), d->device.name) != 0;
        snprintf(line, sizeof line, "%s%sfit: %s over %zu CNNs, batches %u..%u; %s; %s",
                 legend ? d->device.name : "", legend ? "; " : "", form, f->n_cnns,
                 f->batch_min, f->batch_max, err, cal);
        s_say(out, width, 2, head, line);
        if (*d->unseen) {
            snprintf(line, sizeof line,
                     "layers of classes this fit never saw: %s; the prediction extrapolates "
                     "there",
                     d->unseen);
            s_say(out, width, 4, "  warning: ", line);
        }
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

static void s_print_csv(FILE *out, const tc_model_t *model, const tc_pred_device_t *devs,
                        size_t n)
{
    fprintf(out, "model,device,alias,status,batch,iteration_ms,lo_ms,hi_ms,conv_ms,matmul_ms,"
                 "nonconv_ms,"
                 "images_per_s,epoch_s,cost_per_epoch,peak_memory_bytes,fits,nonconv_clamped,"
                 "energy_kj_per_epoch,interval_calibrated,fit_cv_mape_pct,reason\n");
    for (size_t i = 0; i < n; i++) {
        const tc_pred_device_t *d = &devs[i];
        for (size_t j = 0; j < d->n_points; j++) {
            const tc_pred_point_t *p = &d->points[j];
            s_csv_text(out, tc_model_id(model));
            fputc(',', out);
            s_csv_text(out, d->device.name);
            fputc(',', out);
            s_csv_text(out, d->device.alias);
            fprintf(out, ",%s,%u", tc_pred_point_status_name(p->status), p->batch);
            s_csv_num(out, p->total_ms, "%.4f");
            s_csv_num(out, p->lo_ms, "%.4f");
            s_csv_num(out, p->hi_ms, "%.4f");
            s_csv_num(out, p->conv_ms, "%.4f");
            s_csv_num(out, p->matmul_ms, "%.4f");
            s_csv_num(out, p->nonconv_ms, "%.4f");
            s_csv_num(out, p->images_per_s, "%.3f");
            s_csv_num(out, p->epoch_s, "%.1f");
            s_csv_num(out, p->cost, "%.4f");
            s_csv_num(out, p->peak_bytes, "%.0f");
            if (p->status == TC_PT_OK)
                fprintf(out, ",%s,%s", p->fits > 0 ? "true" : p->fits == 0 ? "false" : "",
                        p->clamped ? "true" : "false");
            else
                fputs(",,", out);
            s_csv_num(out, p->energy_kj, "%.3f");
            if (d->status == TC_PRED_OK)
                fprintf(out, ",%s", tc_pred_calibrated(d) ? "true" : "false");
            else
                fputc(',', out);
            s_csv_num(out, d->status == TC_PRED_OK ? d->fit.cv_mape : NAN, "%.2f");
            char reason[2048];
            s_row_reason(d, p, reason, sizeof reason);
            fputc(',', out);
            if (*reason)
                s_csv_text(out, reason);
            fputc('\n', out);
        }
    }
}

/* A number as CSV writes it (the same digits), or null. */
static void s_json_fixed(tc_buf_t *b, double v, const char *fmt)
{
    if (isfinite(v))
        tc_buf_printf(b, fmt, v);
    else
        tc_buf_puts(b, "null");
}

static void s_json_point(tc_buf_t *b, const tc_pred_device_t *d, const tc_pred_point_t *p)
{
    tc_buf_printf(b, "{\"batch\":%u,\"status\":\"%s\",\"iteration_ms\":", p->batch,
                  tc_pred_point_status_name(p->status));
    s_json_fixed(b, p->total_ms, "%.4f");
    tc_buf_puts(b, ",\"lo_ms\":");
    s_json_fixed(b, p->lo_ms, "%.4f");
    tc_buf_puts(b, ",\"hi_ms\":");
    s_json_fixed(b, p->hi_ms, "%.4f");
    tc_buf_puts(b, ",\"conv_ms\":");
    s_json_fixed(b, p->conv_ms, "%.4f");
    tc_buf_puts(b, ",\"matmul_ms\":");
    s_json_fixed(b, p->matmul_ms, "%.4f");
    tc_buf_puts(b, ",\"nonconv_ms\":");
    s_json_fixed(b, p->nonconv_ms, "%.4f");
    tc_buf_puts(b, ",\"images_per_s\":");
    s_json_fixed(b, p->images_per_s, "%.3f");
    tc_buf_puts(b, ",\"epoch_s\":");
    s_json_fixed(b, p->epoch_s, "%.1f");
    tc_buf_puts(b, ",\"cost_per_epoch\":");
    s_json_fixed(b, p->cost, "%.4f");
    tc_buf_puts(b, ",\"peak_memory_bytes\":");
    s_json_fixed(b, p->peak_bytes, "%.0f"); /* whole bytes, as in csv */
    tc_buf_puts(b, ",\"energy_kj_per_epoch\":");
    s_json_fixed(b, p->energy_kj, "%.3f");
    if (p->status == TC_PT_OK)
        tc_buf_printf(b, ",\"fits\":%s,\"nonconv_clamped\":%s",
                      p->fits > 0 ? "true" : p->fits == 0 ? "false" : "null",
                      p->clamped ? "true" : "false");
    else
        tc_buf_puts(b, ",\"fits\":null,\"nonconv_clamped\":null");
    tc_buf_printf(b, ",\"interval_calibrated\":%s,\"fit_cv_mape_pct\":",
                  d->status != TC_PRED_OK ? "null" : tc_pred_calibrated(d) ? "true" : "false");
    s_json_fixed(b, d->status == TC_PRED_OK ? d->fit.cv_mape : NAN, "%.2f");
    char reason[2048];
    s_row_reason(d, p, reason, sizeof reason);
    tc_buf_puts(b, ",\"reason\":");
    if (*reason)
        tc_buf_json_str(b, reason);
    else
        tc_buf_puts(b, "null");
    tc_buf_putc(b, '}');
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
        tc_buf_puts(&b, ",\"alias\":");
        tc_buf_json_str(&b, d->device.alias);
        tc_buf_puts(&b, ",\"status\":");
        tc_buf_json_str(&b, d->status == TC_PRED_OK ? "ok" : "no_fit");
        tc_buf_puts(&b, ",\"note\":");
        if (*d->note)
            tc_buf_json_str(&b, d->note);
        else
            tc_buf_puts(&b, "null");
        if (d->status != TC_PRED_OK) {
            tc_buf_puts(&b, ",\"fit\":null,\"unseen_classes\":null,\"interval_calibrated\":null");
        } else {
            if (*d->warning) {
                tc_buf_puts(&b, ",\"warning\":");
                tc_buf_json_str(&b, d->warning);
            }
            tc_buf_printf(&b, ",\"fit\":{\"id\":%lld,\"form\":", d->fit.fit_id);
            tc_buf_json_str(&b, d->fit.p ? tc_fit_form_name(d->fit.form) : "conv_sum_only");
            tc_buf_puts(&b, ",\"cv_mape_pct\":");
            s_json_fixed(&b, d->fit.cv_mape, "%.2f");
            tc_buf_puts(&b, ",\"conv_only_mape_pct\":");
            s_json_fixed(&b, d->fit.conv_only_mape, "%.2f");
            tc_buf_printf(&b, ",\"n_cnns\":%zu,\"batch_min\":%u,\"batch_max\":%u,\"stat\":",
                          d->fit.n_cnns, d->fit.batch_min, d->fit.batch_max);
            tc_buf_json_str(&b, tc_fit_stat_name(d->fit.stat));
            tc_buf_puts(&b, "},\"unseen_classes\":");
            if (*d->unseen)
                tc_buf_json_str(&b, d->unseen);
            else
                tc_buf_puts(&b, "null");
            tc_buf_printf(&b, ",\"interval_calibrated\":%s",
                          tc_pred_calibrated(d) ? "true" : "false");
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
            s_json_point(&b, d, &d->points[j]);
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
        s_json_fixed(&b, fp->epoch_s, "%.1f");
        tc_buf_putc(&b, '}');
    } else {
        tc_buf_puts(&b, "null");
    }
    tc_buf_puts(&b, ",\"cheapest\":");
    if (cd) {
        tc_buf_puts(&b, "{\"device\":");
        tc_buf_json_str(&b, cd->device.name);
        tc_buf_printf(&b, ",\"batch\":%u,\"cost_per_epoch\":", cp->batch);
        s_json_fixed(&b, cp->cost, "%.4f");
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
        tc_buf_printf(&b, "],\"apart\":%s,\"method\":\"%s\",\"pairs\":%zu,\"caveat\":",
                      c->apart ? "true" : "false", c->method, c->pairs);
        if (c->caveat)
            tc_buf_json_str(&b, c->caveat);
        else
            tc_buf_puts(&b, "null");
        tc_buf_putc(&b, '}');
    }
    tc_buf_puts(&b, "]}}\n");
    int rc = b.failed ? tc_fail(TC_ENOMEM, "out of memory") : 0;
    if (rc == 0)
        fputs(tc_buf_str(&b), out);
    tc_buf_free(&b);
    return rc;
}

int tc_pred_print(FILE *out, tc_pred_format_t fmt, bool wide, const tc_model_t *model,
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
        s_print_table(out, wide, model, req, devs, n, cmps, n_cmps);
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
        *s = (tc_plot_series_t){.label = *d->device.alias ? d->device.alias : d->device.name,
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
