/* aggregator report --html, devices and models against the stored fixture
 * database of the predict tests (tc_test_law.h): the page is built from a
 * real fit and rendered by a real headless browser (chromium), which must
 * draw it without a console error and run its script; the listings name
 * what the database holds in every format. */
#include "store.h"
#include "tc_error.h"
#include "tc_model.h"
#include "tc_test.h"
#include "tc_test_law.h"
#include "tc_test_proc.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static char s_dsn[1024];

static void s_aggregator(const char *args, int want_status, char *out, size_t size)
{
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "cd %s && TRAINCAST_LOG=warn %s/aggregator/aggregator %s --db '%s'",
             TC_SOURCE_DIR, TC_BINARY_DIR, args, s_dsn);
    int st = tc_test_run(cmd, out, size);
    cr_assert_eq(st, want_status, "'%s' exited %d, want %d:\n%s", args, st, want_status, out);
}

static size_t s_slurp(const char *path, char *buf, size_t size)
{
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "%s was not written", path);
    size_t n = fread(buf, 1, size - 1, f);
    buf[n] = '\0';
    fclose(f);
    return n;
}

static unsigned s_be32(const unsigned char *p)
{
    return (unsigned)p[0] << 24 | (unsigned)p[1] << 16 | (unsigned)p[2] << 8 | p[3];
}

/* The browser the suite renders with (deploy/setup.sh installs it). */
static const char *s_chromium(void)
{
    static const char *const names[] = {"chromium", "chromium-browser", "google-chrome"};
    static char found[256];
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        char cmd[300], out[256];
        snprintf(cmd, sizeof cmd, "command -v %s", names[i]);
        if (tc_test_run(cmd, out, sizeof out) == 0) {
            out[strcspn(out, "\n")] = '\0';
            snprintf(found, sizeof found, "%s", out);
            return found;
        }
    }
    cr_assert_fail("no chromium to render the page in: install it (deploy/setup.sh does, "
                   "or apt-get install chromium)");
    return NULL;
}

/* Run the headless browser on `page` with `what` (--screenshot=... or
 * --dump-dom) and a profile of its own in `dir`; its stdout into out, its
 * log (stderr, console messages included) into log. */
static void s_browse(const char *dir, const char *page, const char *what, const char *out,
                     const char *log)
{
    char cmd[4096], text[4096];
    snprintf(cmd, sizeof cmd,
             "HOME='%s' timeout 120 '%s' --headless --disable-gpu --no-sandbox "
             "--no-first-run --disable-extensions --disable-background-networking "
             "--user-data-dir='%s/profile' --enable-logging=stderr --v=0 "
             "--window-size=1280,2400 %s 'file://%s' >'%s' 2>'%s'",
             dir, s_chromium(), dir, what, page, out, log);
    int st = tc_test_run(cmd, text, sizeof text);
    static char logtext[1 << 18];
    s_slurp(log, logtext, sizeof logtext);
    cr_assert_eq(st, 0, "chromium exited %d:\n%s\n%s", st, text, logtext);
    /* The page logs nothing: any console message is an error it hit. */
    cr_assert_null(strstr(logtext, "CONSOLE"), "the page wrote to the console:\n%s", logtext);
    cr_assert_null(strstr(logtext, "Uncaught"), "the page's script failed:\n%s", logtext);
}

Test(report, page_renders_in_a_headless_browser, .timeout = 600)
{
    tc_law_build("report", s_dsn, sizeof s_dsn);
    static char out[1 << 20];
    s_aggregator("fit", 0, out, sizeof out);

    char dir[1024], page[1200], png[1200], dom[1200], log[1200];
    tc_test_tmpdir("report", dir, sizeof dir);
    snprintf(page, sizeof page, "%s/resnet18.html", dir);
    snprintf(png, sizeof png, "%s/page.png", dir);
    snprintf(dom, sizeof dom, "%s/dom.html", dir);
    snprintf(log, sizeof log, "%s/chromium.log", dir);
    char prices[1200];
    snprintf(prices, sizeof prices, "%s/prices.txt", dir);
    FILE *f = fopen(prices, "w");
    cr_assert_not_null(f);
    fputs("Fast Device = 3.5\nSlow Device = 1.25\n", f);
    fclose(f);

    /* A third device with resnet18's benchmarks but no traces: no fit. */
    static const tc_law_device_t third = {"Third Device", "uuid-third", 4.0};
    tc_store_t *store = NULL;
    cr_assert_eq(tc_store_open(s_dsn, &store), 0, "%s", tc_errmsg());
    tc_model_t *resnet18 = tc_law_load("resnet18");
    tc_law_put_benchmarks(store, resnet18, &third, tc_law_batches, 3);
    tc_model_destroy(&resnet18);
    tc_store_destroy(&store);

    /* resnet18 was traced at 8, 16 and 32 on both devices (measured points
     * to compare), its convs benchmarked there only: 64 lacks benchmarks,
     * 256 lies beyond twice the fit's largest batch. */
    char args[4096];
    snprintf(args, sizeof args,
             "report --html %s --model tests/data/resnet18.onnx --batch 8,16,32,64,256 "
             "--relative-to slow --prices %s",
             page, prices);
    s_aggregator(args, 0, out, sizeof out);

    static char html[1 << 21];
    size_t n = s_slurp(page, html, sizeof html);
    cr_assert_gt(n, 5000, "a page of %zu bytes", n);
    cr_assert(strstr(html, "<!DOCTYPE html>") == html);
    /* Self-contained: nothing fetched, no external script or style. */
    cr_assert_null(strstr(html, "src="), "the page loads something");
    cr_assert_null(strstr(html, "href=\"http"), "the page links out");
    cr_assert_null(strstr(html, "@import"));
    cr_assert_null(strstr(html, "url("));
    /* The matrices, the reference the reader chooses, the charts, the
     * fit's quality, the measured points, and why the rows lack. */
    cr_assert(strstr(html, "Fast Device") && strstr(html, "Slow Device"));
    cr_assert(strstr(html, "<select id=\"ref\">"));
    cr_assert(strstr(html, "<option value=\"1\" selected>Slow Device</option>"),
              "--relative-to slow did not choose the slow device");
    cr_assert(strstr(html, "Cost per epoch"), "prices given but no cost matrix");
    cr_assert(strstr(html, "<svg"));
    cr_assert(strstr(html, "band: 95 % prediction interval"));
    cr_assert(strstr(html, "m: not predicted, conv benchmarks missing"));
    cr_assert(strstr(html, "r: not predicted, outside the fit's batch sizes"));
    cr_assert(strstr(html, "n: not predicted, the device has no fit"));
    cr_assert(strstr(html, "Third Device") && strstr(html, "nothing predicted"));
    cr_assert_null(strstr(html, "&#9675;!"), "the legend explains a mark that is not drawn");
    cr_assert(strstr(html, "<b>Fastest</b>: Fast Device at batch"), "no fastest device");
    cr_assert(strstr(html, "<b>Cheapest</b>: "), "prices given but no cheapest device");
    cr_assert(strstr(html, "missing benchmarks") && strstr(html, "outside the fit&#39;s batches"));
    cr_assert(strstr(html, "Fit quality and measured variability"));
    cr_assert(strstr(html, "<th>measured ms</th>"), "no predicted-against-measured table");
    cr_assert(strstr(html, "&#9670;: measured"), "the measured points are not drawn");

    /* The browser draws it: a real PNG of the window's size. */
    char arg[1300];
    snprintf(arg, sizeof arg, "--screenshot='%s'", png);
    s_browse(dir, page, arg, dom, log);
    struct stat st;
    cr_assert_eq(stat(png, &st), 0, "no screenshot at %s", png);
    cr_assert_gt(st.st_size, 20000, "a screenshot of %lld bytes", (long long)st.st_size);
    static unsigned char head[32];
    f = fopen(png, "rb");
    cr_assert_not_null(f);
    cr_assert_eq(fread(head, 1, sizeof head, f), sizeof head);
    fclose(f);
    cr_assert_eq(memcmp(head, "\x89PNG\r\n\x1a\n", 8), 0, "not a PNG");
    cr_assert_eq(s_be32(head + 16), 1280, "width %u", s_be32(head + 16));
    cr_assert_eq(s_be32(head + 20), 2400, "height %u", s_be32(head + 20));

    /* Its script ran: the chosen device's name fills the headings, and
     * only its relative table shows. */
    s_browse(dir, page, "--dump-dom", dom, log);
    static char rendered[1 << 21];
    s_slurp(dom, rendered, sizeof rendered);
    cr_assert(strstr(rendered, "<span class=\"refname\">Slow Device</span>"),
              "the script did not name the chosen device");
    cr_assert(strstr(rendered, "<div data-ref=\"1\">"), "the chosen device's table is hidden");
    cr_assert(strstr(rendered, "<div data-ref=\"0\" hidden=\"\">"),
              "another device's table shows");
    tc_test_remove_tree(dir);
}

Test(report, bad_input_exits_2, .timeout = 300)
{
    tc_law_build("report_bad", s_dsn, sizeof s_dsn);
    static char out[1 << 16];
    s_aggregator("report --model tests/data/resnet18.onnx --batch 8", 2, out, sizeof out);
    cr_assert(strstr(out, "--html"), "%s", out);
    s_aggregator("fit", 0, out, sizeof out);
    s_aggregator("report --html /nonexistent/dir/page.html --model tests/data/resnet18.onnx "
                 "--batch 8",
                 1, out, sizeof out);
    cr_assert(strstr(out, "cannot write"), "%s", out);
    s_aggregator("report --html /tmp/tc_report_never.html --model tests/data/resnet18.onnx "
                 "--batch 8 --relative-to 'No Such Device'",
                 2, out, sizeof out);
    cr_assert(strstr(out, "--relative-to"), "%s", out);
}

Test(report, devices_and_models_list_the_database, .timeout = 300)
{
    tc_law_build("report_lists", s_dsn, sizeof s_dsn);
    static char out[1 << 18];
    s_aggregator("devices", 0, out, sizeof out);
    cr_assert(strstr(out, "Fast Device") && strstr(out, "Slow Device"), "%s", out);
    s_aggregator("devices --format csv", 0, out, sizeof out);
    cr_assert(strstr(out, "device,kind,devices,hosts,threads,memory_bytes,origin,conv_results,"
                          "traces,models_traced,fit_id,fit_mape_pct,last_seen\n") == out,
              "%s", out);
    /* No fit yet: fit_id empty; five models traced on each device. */
    cr_assert(strstr(out, ",5,,,"), "%s", out);
    s_aggregator("fit", 0, out, sizeof out);
    s_aggregator("devices --format json", 0, out, sizeof out);
    cr_assert(strstr(out, "\"devices\":") || strstr(out, "\"devices\" :"), "%s", out);
    cr_assert(strstr(out, "\"models_traced\":5") || strstr(out, "\"models_traced\": 5"), "%s",
              out);
    cr_assert_null(strstr(out, "\"fit_id\":null"), "a device without its fit: %s", out);
    cr_assert_null(strstr(out, "\"fit_id\": null"), "a device without its fit: %s", out);

    s_aggregator("models --format csv", 0, out, sizeof out);
    cr_assert(strstr(out, "model_id,name,input,params,gflops,layers,conv_configs,"
                          "devices_traced,traces,stored_at\n") == out,
              "%s", out);
    for (size_t i = 0; i < 5; i++)
        cr_assert(strstr(out, tc_law_traced[i]), "%s missing:\n%s", tc_law_traced[i], out);
    s_aggregator("models --format json", 0, out, sizeof out);
    cr_assert(strstr(out, "\"devices_traced\":2") || strstr(out, "\"devices_traced\": 2"),
              "%s", out);
    s_aggregator("models --format xml", 2, out, sizeof out);
}
