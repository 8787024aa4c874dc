/* The comparison page from rows made here: names and reasons (which come
 * from agents and files) are escaped, every kind of row is shown with its
 * mark, and the legends and keys explain only the marks the page holds. */
#include "report_html.h"
#include "tc_model.h"
#include "tc_test_law.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const unsigned long s_batches[] = {8, 16, 32};

static tc_pred_point_t s_ok(unsigned batch, double ms)
{
    return (tc_pred_point_t){.batch = batch,
                             .status = TC_PT_OK,
                             .conv_ms = ms / 2,
                             .nonconv_ms = ms / 2,
                             .total_ms = ms,
                             .lo_ms = ms * 0.9,
                             .hi_ms = ms * 1.1,
                             .images_per_s = batch / ms * 1000,
                             .epoch_s = ceil(1000.0 / batch) * ms / 1000,
                             .cost = NAN,
                             .energy_kj = NAN,
                             .peak_bytes = NAN,
                             .fits = 1};
}

static tc_pred_point_t s_not(unsigned batch, tc_pred_point_status_t st, const char *reason)
{
    tc_pred_point_t p = {.batch = batch, .status = st, .fits = -1};
    snprintf(p.reason, sizeof p.reason, "%s", reason);
    return p;
}

static size_t s_count(const char *hay, const char *needle)
{
    size_t n = 0;
    for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle))
        n++;
    return n;
}

/* Two devices: one with a hostile name whose rows are plain, clamped and
 * too big for memory; one without a fit, whose rows lack for three
 * reasons. */
Test(report_html, escapes_names_and_marks_every_row, .timeout = 30)
{
    tc_model_t *model = tc_law_load("alexnet");
    tc_pred_request_t req = {.model = model, .batches = s_batches, .n_batches = 3,
                             .dataset_size = 1000, .framework = "pytorch", .dtype = "fp32",
                             .amp = ""};
    tc_pred_device_t *devs = calloc(2, sizeof *devs);
    cr_assert_not_null(devs);
    snprintf(devs[0].device.name, sizeof devs[0].device.name,
             "Dev <script>alert(1)</script> & \"q\"");
    devs[0].status = TC_PRED_OK;
    devs[0].price = devs[0].watts = NAN;
    devs[0].fit.cv_mape = 12.5;
    devs[0].fit.conv_only_mape = 8.0; /* worse than the conv sum alone */
    devs[0].fit.interval_lo = devs[0].fit.interval_hi = NAN;
    devs[0].fit.n_cnns = 5;
    tc_pred_point_t a[3] = {s_ok(8, 10), s_ok(16, 19), s_ok(32, 37)};
    a[1].clamped = true;
    a[2].fits = 0;
    devs[0].points = a;
    devs[0].n_points = 3;
    snprintf(devs[1].device.name, sizeof devs[1].device.name, "Plain");
    devs[1].status = TC_PRED_NO_FIT;
    devs[1].price = devs[1].watts = NAN;
    snprintf(devs[1].note, sizeof devs[1].note, "no fit: run <aggregator fit>");
    tc_pred_point_t b[3] = {s_not(8, TC_PT_MISSING, "lacks <b>3</b> convs"),
                            s_not(16, TC_PT_NO_FIT, "no fit"),
                            s_not(32, TC_PT_OUT_OF_RANGE, "beyond 2 x 8")};
    devs[1].points = b;
    devs[1].n_points = 3;
    tc_device_spread_t spread[2] = {{4, 2, 0.03, 0.05, 0.01, 0.004},
                                    {0, 0, NAN, NAN, NAN, NAN}};
    tc_report_t r = {.model = model, .req = &req, .devs = devs, .n = 2, .spread = spread,
                     .reference = 0, .generated = "2026-01-01T00:00:00Z"};
    tc_buf_t page = {0};
    tc_report_html(&page, &r);
    cr_assert_not(page.failed);
    const char *html = tc_buf_str(&page);

    cr_assert_eq(s_count(html, "<script"), 1, "a script the page did not write:\n%s", html);
    cr_assert(strstr(html, "Dev &lt;script&gt;alert(1)&lt;/script&gt; &amp; &quot;q&quot;"));
    cr_assert(strstr(html, "lacks &lt;b&gt;3&lt;/b&gt; convs"), "a reason not escaped");
    cr_assert(strstr(html, "run &lt;aggregator fit&gt;"), "a note not escaped");
    /* Marks and their keys. */
    cr_assert(strstr(html, "19.00 !"), "the clamped row is not marked");
    cr_assert(strstr(html, "class=\"oom\""), "the row too big for memory is not marked");
    cr_assert(strstr(html, "&#9675;!: conv or non-conv time clamped"));
    cr_assert(strstr(html, "&times;: does not fit in memory"));
    cr_assert(strstr(html, "m: not predicted, conv benchmarks missing"));
    cr_assert(strstr(html, "n: not predicted, the device has no fit"));
    cr_assert(strstr(html, "r: not predicted, outside the fit's batch sizes"));
    cr_assert_null(strstr(html, "&#9670;: measured"), "no traces, yet a measured mark");
    cr_assert(strstr(html, "fit worse than the conv sum alone"), "an unsafe fit not flagged");
    cr_assert(strstr(html, "intervals not calibrated"));
    cr_assert(strstr(html, "No cost: give"), "no prices, yet no hint");
    cr_assert_null(strstr(html, "Cost per epoch"), "a cost matrix without prices");
    cr_assert(strstr(html, "not traced on these devices"));
    tc_buf_free(&page);

    /* Plain rows only, and a price: none of those keys, a cost matrix. */
    a[1].clamped = false;
    a[2].fits = 1;
    for (size_t j = 0; j < 3; j++)
        a[j].cost = a[j].epoch_s / 3600 * 2.0;
    devs[0].price = 2.0;
    r.n = 1;
    tc_report_html(&page, &r);
    html = tc_buf_str(&page);
    cr_assert_null(strstr(html, "&#9675;!"));
    cr_assert_null(strstr(html, "does not fit in memory"));
    cr_assert_null(strstr(html, "not predicted"));
    cr_assert_null(strstr(html, "class=\"np\" title"), "a row not predicted, yet all were");
    cr_assert(strstr(html, "Cost per epoch"));
    cr_assert(strstr(html, "band: 95 % prediction interval"));
    tc_buf_free(&page);
    free(devs);
    tc_model_destroy(&model);
}
