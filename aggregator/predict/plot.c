#include "plot.h"

#include "tc_error.h"

#include <errno.h>
#include <math.h>
#include <plplot/plplot.h>
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
    }
    if (points == 0)
        return tc_fail(TC_EINVAL, "nothing to plot: no finite predictions");
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

    /* PLplot exits the process on an unwritable file: check first. */
    FILE *probe = fopen(path, "wb");
    if (!probe)
        return tc_fail(TC_EIO, "cannot write %s: %s", path, strerror(errno));
    fclose(probe);

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
    /* The legend goes under the chart, across its width, a line per series
     * (two columns from five series on): the chart keeps the whole width,
     * and long device names (a CPU device names its allocator, BLAS and
     * framework) are not cut. */
    int legend_cols = n_series > 4 ? 2 : 1;
    int legend_rows = (int)((n_series + (size_t)legend_cols - 1) / (size_t)legend_cols);
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
        s_log_ticks(xmin, xmax, ymin, ymax);
    plcol0(COL_AXIS);
    plwidth(1.0);
    plbox("bcnto", 1.0, 0, log_y ? "bc" : "bcnstov", 0.0, 0);
    plschr(0, 1.1);
    pllab(opts->xlabel ? opts->xlabel : "batch size", opts->ylabel ? opts->ylabel : "",
          opts->title ? opts->title : "");
    plschr(0, 1.0);

    PLINT *leg_opts = calloc(n_series, sizeof *leg_opts);
    PLINT *leg_colors = calloc(n_series, sizeof *leg_colors);
    PLINT *leg_styles = calloc(n_series, sizeof *leg_styles);
    PLFLT *leg_widths = calloc(n_series, sizeof *leg_widths);
    const char **leg_text = calloc(n_series, sizeof *leg_text);
    PLFLT *xs = calloc(4096, sizeof *xs), *ys = calloc(4096, sizeof *ys);
    int rc = 0;
    if (!leg_opts || !leg_colors || !leg_styles || !leg_widths || !leg_text || !xs || !ys) {
        rc = tc_fail(TC_ENOMEM, "out of memory drawing %s", path);
        n_series = 0;
    }

    for (size_t i = 0; i < n_series; i++) {
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
        plline((PLINT)n, xs, ys);
        for (size_t j = 0; j < n; j++) {
            int fits = !s->fits || s->fits[j];
            plpoin(1, &xs[j], &ys[j], fits ? 17 : 5);
        }
        leg_opts[i] = PL_LEGEND_LINE;
        leg_colors[i] = col;
        leg_styles[i] = 1;
        leg_widths[i] = 2.0;
        leg_text[i] = s->label;
    }
    if (n_series) {
        PLFLT lw, lh;
        plwidth(1.0);
        plcol0(COL_AXIS);
        /* Below the axis title: y is measured down from the viewport's
         * bottom edge, in viewport heights. */
        double below = 0.11 / (0.92 - bottom);
        pllegend(&lw, &lh, PL_LEGEND_ROW_MAJOR,
                 PL_POSITION_BOTTOM | PL_POSITION_OUTSIDE | PL_POSITION_VIEWPORT,
                 0.0, below, 0.04, 0, COL_AXIS, 1, (PLINT)legend_rows, (PLINT)legend_cols,
                 (PLINT)n_series, leg_opts, 0.6, 0.65, 1.2, 0.0, leg_colors, leg_text, NULL,
                 NULL, NULL, NULL, leg_colors, leg_styles, leg_widths, NULL, NULL, NULL, NULL);
        plschr(0, 0.7);
        plmtex("t", 1.0, 1.0, 1.0, "bands: 95% prediction interval; x: does not fit in memory");
    }
    plend();
    free(leg_opts);
    free(leg_colors);
    free(leg_styles);
    free(leg_widths);
    free(leg_text);
    free(xs);
    free(ys);
    return rc;
}
