/* Charts of predictions against batch size, drawn with PLplot: one line per
 * series with its interval band, a legend, log2 batch axis. */
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
} tc_plot_series_t;

typedef struct {
    const char *title;
    const char *xlabel;
    const char *ylabel;
    int log_y;           /* logarithmic value axis */
    int width, height;   /* pixels (PNG) or points (SVG); 0: 1000 x 650 */
} tc_plot_opts_t;

/* Write the chart to `path`; the format follows its extension (.svg or
 * .png). Errors: TC_EINVAL (unknown extension, no data), TC_EIO. */
int tc_plot_write(const char *path, const tc_plot_opts_t *opts, const tc_plot_series_t *series,
                  size_t n_series);

#endif
