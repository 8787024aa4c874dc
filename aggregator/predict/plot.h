/* Charts of predictions against batch size, drawn with PLplot: one line per
 * series with its interval band, marks on points that do not fit in memory
 * or were clamped, a letter at the foot for every batch a series could not
 * predict, log2 batch axis, and a legend of only what was drawn. */
#ifndef TC_PLOT_H
#define TC_PLOT_H

#include <stddef.h>

typedef struct {
    const char *label;   /* legend text, e.g. a device name */
    size_t n;
    const double *x;     /* batch sizes, ascending, > 0 */
    const double *y;     /* predicted value */
    const double *lo;    /* lower end of the interval (may be NULL) */
    const double *hi;    /* upper end of the interval (may be NULL) */
    const int *fits;     /* per point: 0 = does not fit in memory (drawn as x); may be NULL */
    const int *clamped;  /* per point: 1 = a part of it was clamped at 0 (drawn as an open
                            ring with "!"); may be NULL */
    /* Batches the series could not predict, each drawn at the foot of the
     * chart as its letter in the series' colour (m, r, n, ...); the legend
     * says what each letter present means (`why`, the same order). */
    size_t n_skipped;
    const double *skipped_x;
    const char *skipped_code; /* one letter per skipped batch */
} tc_plot_series_t;

/* What a letter at the foot means, for the legend ("m", "conv benchmarks
 * missing"). */
typedef struct {
    char code;
    const char *text;
} tc_plot_skip_t;

typedef struct {
    const char *title;
    const char *xlabel;
    const char *ylabel;
    int log_y;           /* logarithmic value axis */
    int width, height;   /* pixels (PNG) or points (SVG); 0: 1000 x 650 */
    const tc_plot_skip_t *skips; /* the letters series may use (NULL: none) */
    size_t n_skips;
} tc_plot_opts_t;

/* Write the chart to `path`; the format follows its extension (.svg or
 * .png). Errors: TC_EINVAL (unknown extension, no data), TC_EIO. */
int tc_plot_write(const char *path, const tc_plot_opts_t *opts, const tc_plot_series_t *series,
                  size_t n_series);

#endif
