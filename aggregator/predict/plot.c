#include "plot.h"

#include "tc_error.h"

#include <errno.h>
#include <math.h>
#include <plplot/plplot.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* Colour-blind friendly palette (Okabe-Ito), index 1.. for series. */
static const int s_palette[][3] = {{0, 114, 178},  {213, 94, 0},   {0, 158, 115},
                                   {204, 121, 167}, {230, 159, 0}, {86, 180, 233},
                                   {240, 228, 66},  {0, 0, 0}};
#define PALETTE_N (sizeof s_palette / sizeof s_palette[0])
#define COL_AXIS 9
#define COL_GRID 10

static void s_label_pow2(PLINT axis, PLFLT value, char *label, PLINT length, PLPointer data)
{
    int log_y = *(const int *)data;
    if (axis == PL_X_AXIS) {
        snprintf(label, (size_t)length, "%.0f", pow(2.0, value));
    } else if (log_y) {
        double v = pow(10.0, value);
        snprintf(label, (size_t)length, v >= 1 ? "%.0f" : "%.2g", v);
    } else {
        snprintf(label, (size_t)length, "%g", value);
    }
}

/* A log value axis labelled at 1, 2 and 5 times each power of ten, with
 * grid lines, so short ranges still get several readable labels. */
static void s_log_ticks(double xmin, double xmax, double ymin, double ymax)
{
    static const double mult[] = {1, 2, 5};
    char text[32];
    for (int d = (int)floor(ymin) - 1; d <= (int)ceil(ymax); d++) {
        for (int m = 0; m < 3; m++) {
            double v = mult[m] * pow(10.0, d);
            double ly = log10(v);
            if (ly < ymin || ly > ymax)
                continue;
            plcol0(COL_GRID);
            pljoin(xmin, ly, xmax, ly);
            plcol0(COL_AXIS);
            snprintf(text, sizeof text, v >= 1 ? "%.0f" : "%.2g", v);
            plmtex("lv", 0.8, (ly - ymin) / (ymax - ymin), 1.0, text);
        }
    }
}

static int s_exit_handler(PLCHAR_VECTOR message)
{
    /* PLplot calls exit() after this returns; nothing better is possible
     * here, so say clearly what happened first. */
    fprintf(stderr, "plot: PLplot failed: %s\n", message);
    return 1;
}

/* What the chart drew, for its legend. */
typedef struct {
    bool band, oom, clamped;
    bool skip[128]; /* letters used at the foot */
    size_t foot_rows;
} s_drawn_t;

static void s_survey(const tc_plot_series_t *series, size_t n_series, s_drawn_t *dr)
{
    memset(dr, 0, sizeof *dr);
    for (size_t i = 0; i < n_series; i++) {
        const tc_plot_series_t *s = &series[i];
        dr->band |= s->lo && s->hi && s->n >= 2;
        for (size_t j = 0; j < s->n; j++) {
            dr->oom |= s->fits && !s->fits[j];
            dr->clamped |= s->clamped && s->clamped[j];
        }
        for (size_t j = 0; j < s->n_skipped; j++)
            dr->skip[(unsigned char)s->skipped_code[j] & 127] = true;
        dr->foot_rows += s->n_skipped > 0;
    }
}

/* The legend: a line per series that has one (a series with only letters
 * at the foot shows its first letter), then one entry per kind of mark
 * that was drawn. */
typedef struct {
    size_t n;
    PLINT opts[64], text_colors[64], box_colors[64], box_patterns[64], line_colors[64];
    PLINT line_styles[64], symbol_colors[64], symbol_numbers[64];
    PLFLT box_scales[64], box_widths[64], line_widths[64], symbol_scales[64];
    const char *text[64], *symbols[64];
    char letters[64][2];
} s_legend_t;

static void s_legend_add(s_legend_t *lg, PLINT opt, PLINT col, const char *text, const char *sym)
{
    if (lg->n >= 64)
        return;
    size_t k = lg->n++;
    lg->opts[k] = opt;
    lg->text_colors[k] = COL_AXIS;
    lg->box_colors[k] = col;
    lg->box_patterns[k] = 0;
    lg->box_scales[k] = 0.6;
    lg->box_widths[k] = 1.0;
    lg->line_colors[k] = col;
    lg->line_styles[k] = 1;
    lg->line_widths[k] = 2.0;
    lg->symbol_colors[k] = col;
    lg->symbol_scales[k] = 1.0;
    lg->symbol_numbers[k] = 1;
    lg->text[k] = text;
    lg->symbols[k] = sym ? sym : "";
}

static void s_legend_build(s_legend_t *lg, const tc_plot_opts_t *opts,
                           const tc_plot_series_t *series, size_t n_series, const s_drawn_t *dr)
{
    lg->n = 0;
    for (size_t i = 0; i < n_series && lg->n < 56; i++) {
        PLINT col = (PLINT)(1 + i % PALETTE_N);
        if (series[i].n > 0) {
            s_legend_add(lg, PL_LEGEND_LINE, col, series[i].label, NULL);
        } else if (series[i].n_skipped > 0) {
            char *l = lg->letters[lg->n];
            l[0] = series[i].skipped_code[0];
            l[1] = '\0';
            s_legend_add(lg, PL_LEGEND_SYMBOL, col, series[i].label, l);
        }
    }
    if (dr->band)
        s_legend_add(lg, PL_LEGEND_COLOR_BOX, COL_GRID, "95% prediction interval", NULL);
    if (dr->oom)
        s_legend_add(lg, PL_LEGEND_SYMBOL, COL_AXIS, "does not fit in memory", "x");
    if (dr->clamped)
        s_legend_add(lg, PL_LEGEND_SYMBOL, COL_AXIS,
                     "o!: clamped at 0, the fit extrapolates beyond its data", "o");
    for (size_t k = 0; k < opts->n_skips; k++) {
        if (!dr->skip[(unsigned char)opts->skips[k].code & 127])
            continue;
        char *l = lg->letters[lg->n < 64 ? lg->n : 63];
        l[0] = opts->skips[k].code;
        l[1] = '\0';
        s_legend_add(lg, PL_LEGEND_SYMBOL, COL_AXIS, opts->skips[k].text, l);
    }
}

int tc_plot_write(const char *path, const tc_plot_opts_t *opts, const tc_plot_series_t *series,
                  size_t n_series)
{
    const char *ext = strrchr(path, '.');
    const char *dev = NULL;
    if (ext && !strcasecmp(ext, ".svg"))
        dev = "svg";
    else if (ext && !strcasecmp(ext, ".png"))
        dev = "pngcairo";
    if (!dev)
        return tc_fail(TC_EINVAL, "--plot %s: the file name must end in .svg or .png", path);

    double xmin = INFINITY, xmax = -INFINITY, ymin = INFINITY, ymax = -INFINITY;
    size_t points = 0;
    for (size_t i = 0; i < n_series; i++) {
        for (size_t j = 0; j < series[i].n; j++) {
            double x = series[i].x[j];
            double lo = series[i].lo ? series[i].lo[j] : series[i].y[j];
            double hi = series[i].hi ? series[i].hi[j] : series[i].y[j];
            if (!(x > 0) || !isfinite(series[i].y[j]))
                continue;
            points++;
            xmin = fmin(xmin, log2(x));
            xmax = fmax(xmax, log2(x));
            ymin = fmin(ymin, fmin(lo, series[i].y[j]));
            ymax = fmax(ymax, fmax(hi, series[i].y[j]));
        }
        for (size_t j = 0; j < series[i].n_skipped; j++) {
            if (series[i].skipped_x[j] > 0) {
                xmin = fmin(xmin, log2(series[i].skipped_x[j]));
                xmax = fmax(xmax, log2(series[i].skipped_x[j]));
            }
        }
    }
    if (points == 0)
        return tc_fail(TC_EINVAL, "nothing to plot: no finite predictions");
    s_drawn_t drawn;
    s_survey(series, n_series, &drawn);
    int log_y = opts->log_y && ymin > 0;
    if (log_y) {
        ymin = log10(ymin) - 0.05;
        ymax = log10(ymax) + 0.05;
    } else {
        ymin = ymin > 0 ? 0 : ymin;
        ymax *= 1.08;
    }
    if (xmax - xmin < 1) {
        xmin -= 0.5;
        xmax += 0.5;
    } else {
        xmin -= 0.2;
        xmax += 0.2;
    }
    if (ymax <= ymin)
        ymax = ymin + 1;
    /* Room under the lines for a row of letters per series that skipped
     * batches. */
    double row_h = 0.06 * (ymax - ymin);
    double foot = (double)drawn.foot_rows * row_h;
    ymin -= foot > 0 ? foot + 0.02 * (ymax - ymin) : 0;

    /* PLplot exits the process on an unwritable file: check first. */
    FILE *probe = fopen(path, "wb");
    if (!probe)
        return tc_fail(TC_EIO, "cannot write %s: %s", path, strerror(errno));
    fclose(probe);

    s_legend_t *lg = calloc(1, sizeof *lg);
    PLFLT *xs = calloc(4096, sizeof *xs), *ys = calloc(4096, sizeof *ys);
    if (!lg || !xs || !ys) {
        free(lg);
        free(xs);
        free(ys);
        return tc_fail(TC_ENOMEM, "out of memory drawing %s", path);
    }
    s_legend_build(lg, opts, series, n_series, &drawn);

    int w = opts->width > 0 ? opts->width : 1000;
    int h = opts->height > 0 ? opts->height : 650;
    char geometry[32];
    snprintf(geometry, sizeof geometry, "%dx%d", w, h);

    plsexit(s_exit_handler);
    plsdev(dev);
    plsfnam(path);
    plsetopt("geometry", geometry);
    plscolbg(255, 255, 255);
    plinit();
    plscol0(COL_AXIS, 40, 40, 40);
    plscol0(COL_GRID, 215, 215, 215);
    for (size_t i = 0; i < PALETTE_N && i < 8; i++)
        plscol0((PLINT)(i + 1), s_palette[i][0], s_palette[i][1], s_palette[i][2]);
    /* The legend goes under the chart, across its width, an entry per
     * series and per kind of mark drawn (two columns from five entries
     * on): the chart keeps the whole width, and long device names (a CPU
     * device names its allocator, BLAS and framework) are not cut. */
    int legend_cols = lg->n > 4 ? 2 : 1;
    int legend_rows = (int)((lg->n + (size_t)legend_cols - 1) / (size_t)legend_cols);
    double legend_h = 0.034 * legend_rows * 650.0 / h;
    double bottom = 0.05 + legend_h + 0.12;
    pladv(0);
    plvpor(0.11, 0.97, bottom, 0.92);
    plwind(xmin, xmax, ymin, ymax);
    plslabelfunc(s_label_pow2, &log_y);

    plcol0(COL_GRID);
    plwidth(0.5);
    plbox("g", 1.0, 0, log_y ? "" : "g", 0.0, 0);
    if (log_y)
        s_log_ticks(xmin, xmax, ymin + (foot > 0 ? foot : 0), ymax);
    plcol0(COL_AXIS);
    plwidth(1.0);
    plbox("bcnto", 1.0, 0, log_y ? "bc" : "bcnstov", 0.0, 0);
    plschr(0, 1.1);
    pllab(opts->xlabel ? opts->xlabel : "batch size", opts->ylabel ? opts->ylabel : "",
          opts->title ? opts->title : "");
    plschr(0, 1.0);

    for (size_t i = 0, row = 0; i < n_series; i++) {
        const tc_plot_series_t *s = &series[i];
        PLINT col = (PLINT)(1 + i % PALETTE_N);
        size_t n = s->n < 2048 ? s->n : 2048;
        if (s->lo && s->hi && n >= 2) {
            /* The band: lower edge forwards, upper edge backwards. */
            size_t k = 0;
            for (size_t j = 0; j < n; j++, k++) {
                xs[k] = log2(s->x[j]);
                ys[k] = log_y ? log10(fmax(s->lo[j], 1e-12)) : s->lo[j];
            }
            for (size_t j = n; j-- > 0; k++) {
                xs[k] = log2(s->x[j]);
                ys[k] = log_y ? log10(fmax(s->hi[j], 1e-12)) : s->hi[j];
            }
            plscol0a(col, s_palette[col - 1][0], s_palette[col - 1][1], s_palette[col - 1][2],
                     0.18);
            plcol0(col);
            plfill((PLINT)k, xs, ys);
            plscol0a(col, s_palette[col - 1][0], s_palette[col - 1][1], s_palette[col - 1][2],
                     1.0);
        }
        for (size_t j = 0; j < n; j++) {
            xs[j] = log2(s->x[j]);
            ys[j] = log_y ? log10(fmax(s->y[j], 1e-12)) : s->y[j];
        }
        plcol0(col);
        plwidth(2.0);
        if (n)
            plline((PLINT)n, xs, ys);
        for (size_t j = 0; j < n; j++) {
            bool clamped = s->clamped && s->clamped[j];
            if (clamped) {
                plstring(1, &xs[j], &ys[j], "o");
                plptex(xs[j], ys[j] + 0.035 * (ymax - ymin), 1, 0, 0.5, "!");
            } else if (s->fits && !s->fits[j]) {
                plstring(1, &xs[j], &ys[j], "x");
            } else {
                plpoin(1, &xs[j], &ys[j], 17);
            }
        }
        if (s->n_skipped) {
            double y = ymin + row_h * ((double)row + 0.5);
            for (size_t j = 0; j < s->n_skipped; j++) {
                char letter[2] = {s->skipped_code[j], '\0'};
                plptex(log2(s->skipped_x[j]), y, 1, 0, 0.5, letter);
            }
            row++;
        }
    }
    if (lg->n) {
        PLFLT lw, lh;
        plwidth(1.0);
        plcol0(COL_AXIS);
        /* Below the axis title: y is measured down from the viewport's
         * bottom edge, in viewport heights. */
        double below = 0.11 / (0.92 - bottom);
        pllegend(&lw, &lh, PL_LEGEND_ROW_MAJOR,
                 PL_POSITION_BOTTOM | PL_POSITION_OUTSIDE | PL_POSITION_VIEWPORT, 0.0, below,
                 0.04, 0, COL_AXIS, 1, (PLINT)legend_rows, (PLINT)legend_cols, (PLINT)lg->n,
                 lg->opts, 0.6, 0.65, 1.2, 0.0, lg->text_colors, lg->text, lg->box_colors,
                 lg->box_patterns, lg->box_scales, lg->box_widths, lg->line_colors,
                 lg->line_styles, lg->line_widths, lg->symbol_colors, lg->symbol_scales,
                 lg->symbol_numbers, lg->symbols);
    }
    plend();
    free(lg);
    free(xs);
    free(ys);
    return 0;
}
