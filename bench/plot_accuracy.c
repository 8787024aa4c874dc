/* tc-plot-accuracy: predicted against measured training iteration time, one
 * point per (device, CNN, batch), drawn with PLplot (bench/accuracy.sh).
 *
 * Input (--in FILE, tab-separated, '#' comments):
 *   device  cnn  batch  measured_ms  predicted_ms
 * Output: --out FILE.svg or FILE.png; log-log axes, the line of perfect
 * prediction and the +-10 % lines, one colour and marker per device, the
 * device's MAPE over all its points in the legend (a prediction <= 0 cannot be
 * drawn on a log axis; it is counted there). */
#include "tc_cli.h"
#include "tc_error.h"

#include <errno.h>
#include <math.h>
#include <plplot/plplot.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define MAX_DEVICES 8
#define MAX_POINTS 20000

static const int s_palette[MAX_DEVICES][3] = {{0, 114, 178},  {213, 94, 0},   {0, 158, 115},
                                              {204, 121, 167}, {230, 159, 0}, {86, 180, 233},
                                              {120, 120, 120}, {0, 0, 0}};
static const char *s_markers[MAX_DEVICES] = {"#(840)", "#(841)", "#(842)", "#(843)",
                                             "#(844)", "#(850)", "#(851)", "#(852)"};
#define COL_AXIS 9
#define COL_GRID 10
#define COL_REF 11

typedef struct {
    char name[128];
    size_t n;     /* points drawn */
    size_t n_all; /* points read, predictions <= 0 included */
    PLFLT *x, *y;
    double ape_sum;
} s_device_t;

/* What the axes and the footnote say (the accuracy study's by default). */
typedef struct {
    const char *title, *x, *y, *note;
} s_labels_t;

static int s_exit_handler(PLCHAR_VECTOR message)
{
    fprintf(stderr, "tc-plot-accuracy: PLplot failed: %s\n", message);
    return 1;
}

/* Grid lines and labels at 1, 2 and 5 times each power of ten on both
 * (log) axes, so that short ranges still get several readable labels. */
static void s_log_ticks(double lo, double hi)
{
    static const double mult[] = {1, 2, 5};
    char text[32];
    for (int d = (int)floor(lo) - 1; d <= (int)ceil(hi); d++) {
        for (int m = 0; m < 3; m++) {
            double v = mult[m] * pow(10.0, d);
            double lv = log10(v);
            if (lv < lo || lv > hi)
                continue;
            plcol0(COL_GRID);
            pljoin(lo, lv, hi, lv);
            pljoin(lv, lo, lv, hi);
            plcol0(COL_AXIS);
            snprintf(text, sizeof text, v >= 1 ? "%.0f" : "%.2g", v);
            plmtex("lv", 0.8, (lv - lo) / (hi - lo), 1.0, text);
            plmtex("b", 1.6, (lv - lo) / (hi - lo), 0.5, text);
        }
    }
}

static int s_read(const char *path, s_device_t *dev, size_t *n_dev)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return tc_fail(TC_ENOTFOUND, "cannot read %s: %s", path, strerror(errno));
    char line[1024];
    size_t lineno = 0, total = 0;
    int rc = 0;
    while (rc == 0 && fgets(line, sizeof line, f)) {
        lineno++;
        if (line[0] == '#' || line[0] == '\n')
            continue;
        char *fields[5];
        char *save = NULL, *p = line;
        int k = 0;
        for (; k < 5; k++, p = NULL) {
            fields[k] = strtok_r(p, "\t\n", &save);
            if (!fields[k])
                break;
        }
        double measured = k == 5 ? strtod(fields[3], NULL) : NAN;
        double predicted = k == 5 ? strtod(fields[4], NULL) : NAN;
        if (k < 5 || !(measured > 0) || !isfinite(predicted)) {
            rc = tc_fail(TC_EPARSE, "%s:%zu: want 'device cnn batch measured_ms predicted_ms' "
                         "with a measured time > 0", path, lineno);
            break;
        }
        size_t d = 0;
        while (d < *n_dev && strcmp(dev[d].name, fields[0]) != 0)
            d++;
        if (d == *n_dev) {
            if (d == MAX_DEVICES) {
                rc = tc_fail(TC_EINVAL, "%s: more than %d devices", path, MAX_DEVICES);
                break;
            }
            snprintf(dev[d].name, sizeof dev[d].name, "%s", fields[0]);
            dev[d].x = calloc(MAX_POINTS, sizeof *dev[d].x);
            dev[d].y = calloc(MAX_POINTS, sizeof *dev[d].y);
            if (!dev[d].x || !dev[d].y) {
                rc = tc_fail(TC_ENOMEM, "out of memory");
                break;
            }
            (*n_dev)++;
        }
        if (dev[d].n == MAX_POINTS || ++total > MAX_POINTS) {
            rc = tc_fail(TC_EINVAL, "%s: more than %d points", path, MAX_POINTS);
            break;
        }
        dev[d].ape_sum += fabs(predicted - measured) / measured;
        dev[d].n_all++;
        if (predicted > 0) { /* a log axis cannot show the others; they are counted */
            dev[d].x[dev[d].n] = log10(measured);
            dev[d].y[dev[d].n] = log10(predicted);
            dev[d].n++;
        }
    }
    fclose(f);
    if (rc == 0 && total == 0)
        rc = tc_fail(TC_EINVAL, "%s: no points", path);
    return rc;
}

static void s_draw(const char *path, const s_labels_t *lab, s_device_t *dev, size_t n_dev)
{
    double lo = INFINITY, hi = -INFINITY;
    size_t drawn = 0;
    for (size_t d = 0; d < n_dev; d++) {
        for (size_t i = 0; i < dev[d].n; i++) {
            lo = fmin(lo, fmin(dev[d].x[i], dev[d].y[i]));
            hi = fmax(hi, fmax(dev[d].x[i], dev[d].y[i]));
        }
        drawn += dev[d].n;
    }
    if (drawn == 0) { /* nothing positive: an empty chart around 1..1000 ms */
        lo = 0;
        hi = 3;
    }
    lo -= 0.08;
    hi += 0.08;
    if (hi - lo < 0.5) {
        lo -= 0.25;
        hi += 0.25;
    }
    const char *ext = strrchr(path, '.');
    plsexit(s_exit_handler);
    plsdev(!strcasecmp(ext, ".svg") ? "svg" : "pngcairo");
    plsfnam(path);
    plsetopt("geometry", "900x880");
    plscolbg(255, 255, 255);
    plinit();
    plscol0(COL_AXIS, 40, 40, 40);
    plscol0(COL_GRID, 220, 220, 220);
    plscol0(COL_REF, 150, 150, 150);
    for (int i = 0; i < MAX_DEVICES; i++)
        plscol0(i + 1, s_palette[i][0], s_palette[i][1], s_palette[i][2]);
    pladv(0);
    plvpor(0.12, 0.92, 0.26, 0.92);
    plwind(lo, hi, lo, hi);
    plwidth(0.5);
    s_log_ticks(lo, hi);
    plcol0(COL_AXIS);
    plwidth(1.0);
    plbox("bcstl", 0.0, 0, "bcstl", 0.0, 0);
    pllab("", lab->y, lab->title);
    plmtex("b", 3.4, 0.5, 0.5, lab->x);

    /* perfect prediction, and +-10 % */
    PLFLT lx[2] = {lo, hi}, ly[2] = {lo, hi};
    plcol0(COL_REF);
    plwidth(1.5);
    plline(2, lx, ly);
    pllsty(2);
    plwidth(1.0);
    for (int s = -1; s <= 1; s += 2) {
        PLFLT off = log10(1.0 + 0.1 * s);
        PLFLT ry[2] = {lo + off, hi + off};
        plline(2, lx, ry);
    }
    pllsty(1);

    for (size_t d = 0; d < n_dev; d++) {
        plcol0((PLINT)(d + 1));
        if (dev[d].n)
            plstring((PLINT)dev[d].n, dev[d].x, dev[d].y, s_markers[d]);
    }
    /* The legend under the chart: marker and label in the device's colour. */
    plschr(0, 0.8);
    for (size_t d = 0; d < n_dev; d++) {
        char text[256];
        if (dev[d].n == dev[d].n_all)
            snprintf(text, sizeof text, "%s  %s: MAPE %.1f %% (%zu points)", s_markers[d],
                     dev[d].name, 100.0 * dev[d].ape_sum / (double)dev[d].n_all, dev[d].n_all);
        else
            snprintf(text, sizeof text, "%s  %s: MAPE %.1f %% (%zu points; %zu predicted <= 0, not drawn)",
                     s_markers[d], dev[d].name, 100.0 * dev[d].ape_sum / (double)dev[d].n_all,
                     dev[d].n_all, dev[d].n_all - dev[d].n);
        plcol0((PLINT)(d + 1));
        plmtex("b", 6.2 + 1.6 * (double)d, 0.0, 0.0, text);
    }
    plcol0(COL_AXIS);
    plschr(0, 0.75);
    plmtex("b", (6.2 + 1.6 * (double)n_dev) * 0.8 / 0.75 + 0.6, 0.0, 0.0,
           lab->note);
    plend();
}

int main(int argc, char **argv)
{
    const char *in = NULL, *out = NULL, *title = "predicted vs measured (leave-one-CNN-out)";
    s_labels_t lab = {NULL, "measured iteration time (ms)", "predicted iteration time (ms)",
                      "solid: perfect prediction; dashed: \u00b110 %; every point is "
                      "leave-one-CNN-out"};
    const tc_opt_t opts[] = {
        {"in", TC_OPT_STR, &in, "FILE", "points: device, cnn, batch, measured_ms, predicted_ms",
         true},
        {"out", TC_OPT_STR, &out, "FILE", "chart to write: .svg or .png", true},
        {"title", TC_OPT_STR, &title, "TEXT", "chart title"},
        {"xlabel", TC_OPT_STR, &lab.x, "TEXT", "x axis (default: measured iteration time (ms))"},
        {"ylabel", TC_OPT_STR, &lab.y, "TEXT", "y axis (default: predicted iteration time (ms))"},
        {"note", TC_OPT_STR, &lab.note, "TEXT", "footnote under the legend"},
        {0},
    };
    const tc_cmd_spec_t spec = {
        .prog = "tc-plot-accuracy",
        .summary = "Draw predicted against measured iteration time (log-log), one colour per "
                   "device.",
        .max_positional = 0,
        .opts = opts,
    };
    tc_cli_result_t cli;
    s_device_t dev[MAX_DEVICES];
    memset(dev, 0, sizeof dev);
    size_t n_dev = 0;
    int rc = tc_cli_parse(&spec, argc, argv, &cli);
    if (rc == 0 && !cli.help_shown) {
        const char *ext = strrchr(out, '.');
        if (!ext || (strcasecmp(ext, ".svg") && strcasecmp(ext, ".png")))
            rc = tc_fail(TC_EUSAGE, "--out %s: the file name must end in .svg or .png", out);
        FILE *probe = rc == 0 ? fopen(out, "wb") : NULL;
        if (rc == 0 && !probe)
            rc = tc_fail(TC_EIO, "cannot write %s: %s", out, strerror(errno));
        if (probe)
            fclose(probe);
        if (rc == 0)
            rc = s_read(in, dev, &n_dev);
        if (rc == 0)
        {
            lab.title = title;
            s_draw(out, &lab, dev, n_dev);
        }
    }
    for (size_t d = 0; d < n_dev; d++) {
        free(dev[d].x);
        free(dev[d].y);
    }
    tc_cli_result_free(&cli);
    if (rc < 0) {
        fprintf(stderr, "tc-plot-accuracy: error: %s\n", tc_errmsg());
        return tc_exit_status(rc);
    }
    return 0;
}
