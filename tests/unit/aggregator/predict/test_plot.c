/* Prediction charts: both formats are written and carry the series. */
#include "plot.h"
#include "tc_error.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const double s_x[] = {8, 16, 32, 64};
static const double s_y[] = {10, 19, 37, 75};
static const double s_lo[] = {9, 17, 34, 70};
static const double s_hi[] = {11, 21, 40, 80};
static const int s_fits[] = {1, 1, 1, 0};

static size_t s_slurp(const char *path, char *buf, size_t size)
{
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "%s was not written", path);
    size_t n = fread(buf, 1, size - 1, f);
    buf[n] = '\0';
    fclose(f);
    return n;
}

Test(plot, svg_and_png, .timeout = 30)
{
    tc_plot_series_t s[] = {{"Device A", 4, s_x, s_y, s_lo, s_hi, s_fits},
                            {"Device B", 4, s_x, s_hi, NULL, NULL, NULL}};
    tc_plot_opts_t o = {.title = "tinynet", .ylabel = "ms per iteration", .log_y = 1};
    char svg[] = "/tmp/tc_plot_XXXXXX.svg", png[] = "/tmp/tc_plot_XXXXXX.png";
    close(mkstemps(svg, 4));
    close(mkstemps(png, 4));
    cr_assert_eq(tc_plot_write(svg, &o, s, 2), 0, "%s", tc_errmsg());
    cr_assert_eq(tc_plot_write(png, &o, s, 2), 0, "%s", tc_errmsg());
    static char buf[1 << 20];
    size_t n = s_slurp(svg, buf, sizeof buf);
    cr_assert_gt(n, 1000);
    cr_assert_not_null(strstr(buf, "<svg"));
    n = s_slurp(png, buf, sizeof buf);
    cr_assert_gt(n, 1000);
    cr_assert_eq(memcmp(buf, "\x89PNG", 4), 0, "not a PNG");
    unlink(svg);
    unlink(png);
}

Test(plot, bad_requests, .timeout = 10)
{
    tc_plot_series_t s[] = {{"A", 4, s_x, s_y, NULL, NULL, NULL}};
    tc_plot_opts_t o = {0};
    cr_assert_eq(tc_plot_write("/tmp/chart.pdf", &o, s, 1), TC_EINVAL);
    cr_assert(strstr(tc_errmsg(), ".svg or .png"), "%s", tc_errmsg());
    cr_assert_eq(tc_plot_write("/nonexistent/dir/chart.svg", &o, s, 1), TC_EIO);
    cr_assert_eq(tc_plot_write("/tmp/chart.svg", &o, s, 0), TC_EINVAL);
}

/* PLplot's SVG writes text as character references (&#x41;): decode
 * those in place so the text can be searched. */
static void s_decode(char *buf)
{
    char *w = buf;
    for (const char *r = buf; *r;) {
        unsigned c;
        int used = 0;
        if (sscanf(r, "&#x%x;%n", &c, &used) == 1 && used > 0 && c < 128) {
            *w++ = (char)c;
            r += used;
        } else {
            *w++ = *r++;
        }
    }
    *w = '\0';
}

/* The legend explains each kind of mark the chart drew and no other; the
 * title is the caller's. */
Test(plot, legend_only_what_is_drawn, .timeout = 30)
{
    static const tc_plot_skip_t skips[] = {{'m', "not predicted: conv benchmarks missing"},
                                           {'r', "not predicted: outside the fit's batch sizes"},
                                           {'n', "not predicted: the device has no fit"}};
    static const int clamped[] = {0, 1, 0, 0};
    static const double skipped_x[] = {128, 256};
    tc_plot_series_t s[] = {{"Device A", 4, s_x, s_y, s_lo, s_hi, s_fits, clamped, 2, skipped_x,
                             "mr"},
                            {"Device B", 0, NULL, NULL, NULL, NULL, NULL, NULL, 1, skipped_x,
                             "n"}};
    tc_plot_opts_t o = {.title = "tinynet at 64x64", .ylabel = "ms per iteration", .log_y = 1,
                        .skips = skips, .n_skips = 3};
    char svg[] = "/tmp/tc_plot_XXXXXX.svg";
    close(mkstemps(svg, 4));
    cr_assert_eq(tc_plot_write(svg, &o, s, 2), 0, "%s", tc_errmsg());
    static char buf[1 << 20];
    s_slurp(svg, buf, sizeof buf);
    s_decode(buf);
    cr_assert(strstr(buf, "tinynet at 64x64"), "no title");
    cr_assert(strstr(buf, "95% prediction interval"));
    cr_assert(strstr(buf, "does not fit in memory"));
    cr_assert(strstr(buf, "clamped at 0"));
    cr_assert(strstr(buf, "conv benchmarks missing"));
    cr_assert(strstr(buf, "outside the fit"));
    cr_assert(strstr(buf, "the device has no fit"));
    cr_assert(strstr(buf, "Device B"), "a series with only skipped batches is not in the legend");

    /* Nothing but plain points: no band, no cross, no ring, no letters,
     * and none of their explanations. */
    tc_plot_series_t plain[] = {{"Device A", 4, s_x, s_y, NULL, NULL, NULL, NULL, 0, NULL, NULL}};
    cr_assert_eq(tc_plot_write(svg, &o, plain, 1), 0, "%s", tc_errmsg());
    s_slurp(svg, buf, sizeof buf);
    s_decode(buf);
    cr_assert(strstr(buf, "Device A"));
    cr_assert_null(strstr(buf, "prediction interval"));
    cr_assert_null(strstr(buf, "does not fit in memory"));
    cr_assert_null(strstr(buf, "clamped"));
    cr_assert_null(strstr(buf, "not predicted"));
    unlink(svg);
}
