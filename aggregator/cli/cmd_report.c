/* aggregator report --html: the comparison page of a model over batch sizes,
 * predicted as `aggregator predict` predicts it. */
#include "cli_db.h"
#include "cmd_predict.h"
#include "commands.h"
#include "device_match.h"
#include "report_html.h"
#include "store_report.h"

#include "tc_buf.h"
#include "tc_cli.h"
#include "tc_error.h"
#include "tc_log.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* The device relative speeds start from: the one named (its name or a
 * unique part of it, as --gpu takes them), else the first with a
 * prediction. */
static int s_reference(const tc_predict_run_t *r, const char *name, size_t *out)
{
    *out = 0;
    if (name) {
        tc_device_class_t *classes = calloc(r->n_devs + 1, sizeof *classes);
        if (!classes)
            return tc_fail(TC_ENOMEM, "out of memory");
        for (size_t i = 0; i < r->n_devs; i++)
            classes[i] = r->devs[i].device;
        int rc = tc_device_match(classes, r->n_devs, name, "--relative-to", out);
        free(classes);
        return rc;
    }
    for (size_t i = 0; i < r->n_devs; i++) {
        for (size_t j = 0; j < r->devs[i].n_points; j++) {
            if (r->devs[i].points[j].status == TC_PT_OK) {
                *out = i;
                return 0;
            }
        }
    }
    return 0;
}

/* Write the whole page next to `path` and rename it there: a reader never
 * sees half a page. */
static int s_write(const char *path, const tc_buf_t *page)
{
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    if (!f)
        return tc_fail(TC_EIO, "--html: cannot write %s: %s", tmp, strerror(errno));
    size_t len = strlen(tc_buf_str(page));
    bool ok = fwrite(tc_buf_str(page), 1, len, f) == len;
    ok &= fclose(f) == 0;
    if (!ok || rename(tmp, path) != 0) {
        int e = errno;
        remove(tmp);
        return tc_fail(TC_EIO, "--html: cannot write %s: %s", path, strerror(e));
    }
    return 0;
}

/* The model's traces and each device's spread, then the page. */
static int s_report(const tc_predict_args_t *a, const char *html, const char *relative_to,
                    const tc_predict_run_t *r)
{
    const char **names = calloc(r->n_devs + 1, sizeof *names);
    tc_device_spread_t *spread = calloc(r->n_devs + 1, sizeof *spread);
    tc_measured_point_t *measured = NULL;
    size_t n_measured = 0;
    tc_buf_t page = {0};
    int rc = 0;
    if (!names || !spread)
        TC_FAIL_GOTO(TC_ENOMEM, "out of memory");
    for (size_t i = 0; i < r->n_devs; i++)
        names[i] = r->devs[i].device.name;
    TC_TRY(tc_store_measured_points(r->store, tc_model_id(r->model), names, r->n_devs,
                                    a->framework, a->dtype, r->req.amp, &measured, &n_measured));
    TC_TRY(tc_store_device_spread_each(r->store, names, r->n_devs, a->framework, a->dtype,
                                       spread));
    size_t reference;
    TC_TRY(s_reference(r, relative_to, &reference));
    char when[64];
    time_t now = time(NULL);
    struct tm tm;
    strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", gmtime_r(&now, &tm));
    tc_report_t rep = {.model = r->model,
                       .req = &r->req,
                       .devs = r->devs,
                       .n = r->n_devs,
                       .cmps = r->cmps,
                       .n_cmps = r->n_cmps,
                       .measured = measured,
                       .n_measured = n_measured,
                       .spread = spread,
                       .reference = reference,
                       .generated = when};
    tc_report_html(&page, &rep);
    if (page.failed)
        TC_FAIL_GOTO(TC_ENOMEM, "out of memory writing the page");
    TC_TRY(s_write(html, &page));
    tc_log_info("wrote %s: %s on %zu devices at %zu batch sizes", html, tc_model_name(r->model),
                r->n_devs, r->req.n_batches);
err:
    tc_buf_free(&page);
    free(measured);
    free(spread);
    free(names);
    return rc;
}

int tc_cmd_report(int argc, char **argv)
{
    tc_predict_args_t a = {.framework = "pytorch",
                           .dtype = "fp32",
                           .amp = "none",
                           .wait_s = 0,
                           .dataset = 1281167,
                           .extrapolate = 2,
                           .no_store = true};
    const char *html = NULL, *relative_to = NULL;
    const tc_opt_t opts[] = {
        {"html", TC_OPT_STR, &html, "FILE", "write the comparison page to FILE", true},
        {"model", TC_OPT_STR, &a.model_spec, "SPEC",
         "torchvision:NAME, FILE.py:FUNC or FILE.onnx", true},
        {"batch", TC_OPT_STR, &a.batch_text, "LIST",
         "batch sizes: 8,16,32 or 8..512 (powers of two) or 8..64:8", true},
        {"gpu", TC_OPT_STR, &a.gpu, "all|NAME,...", "device classes to compare (default: all)"},
        {"relative-to", TC_OPT_STR, &relative_to, "DEVICE",
         "the device speeds are first shown relative to (default: the first predicted; the "
         "page lets the reader choose)"},
        {"input-size", TC_OPT_UINT, &a.input_size, "PX", "input height and width (default: the model's)"},
        {"dataset-size", TC_OPT_DOUBLE, &a.dataset, "N", "images per epoch (default: 1281167, ImageNet)"},
        {"prices", TC_OPT_STR, &a.prices, "FILE", "'DEVICE NAME = PRICE' per device-hour, one per line"},
        {"framework", TC_OPT_STR, &a.framework, "NAME", "framework whose fits to use (default: pytorch)"},
        {"dtype", TC_OPT_STR, &a.dtype, "fp32|fp32_strict|tf32|fp16|bf16",
         "data type of the fits (default: fp32)"},
        {"amp", TC_OPT_STR, &a.amp, "none|fp16|bf16",
         "automatic mixed precision of the fits (default: none)"},
        {"wait", TC_OPT_UINT, &a.wait_s, "SECONDS",
         "wait for agents to benchmark missing convs and matmuls (default: 0, do not ask)"},
        {"extrapolate", TC_OPT_DOUBLE, &a.extrapolate, "F",
         "predict batches down to the fit's smallest / F and up to its largest * F (default: "
         "2; 0: any)"},
        {"allow-unknown", TC_OPT_FLAG, &a.allow_unknown, NULL,
         "treat ONNX ops traincast does not know as element-wise layers"},
        TC_DB_OPT(&a.db),
        {0},
    };
    const tc_cmd_spec_t spec = {
        .prog = "aggregator report",
        .summary = "Write one self-contained HTML page (inline CSS and SVG, nothing fetched) "
                   "comparing the\ndevices for a model over batch sizes, as aggregator predict "
                   "predicts it: time per iteration,\nimages/s, epoch time and cost per "
                   "device and batch, speed relative to a device chosen on\nthe page, "
                   "charts with the 95 % intervals, each device's fit error and measured\n"
                   "variability, and the prediction against the model's own traces where "
                   "there are some.",
        .max_positional = 0,
        .config_file = true,
        .epilog = "Rows that cannot be predicted are shown with why (missing_benchmarks, "
                  "no_fit, out_of_range),\nas in aggregator predict; the page is written all "
                  "the same. Nothing is recorded in the\ntable predictions.\n"
                  "Exit status: 0 the page was written; 2 bad usage or input; 1 a runtime "
                  "failure.",
        .opts = opts,
    };
    tc_cli_result_t cli;
    int rc = tc_cli_begin(&spec, argc, argv, &cli);
    if (rc < 0 || cli.help_shown)
        return rc;
    if (!a.gpu)
        a.gpu = "all";
    unsigned long *batches = NULL;
    size_t n_batches = 0;
    tc_predict_run_t r = {0};
    TC_TRY(tc_predict_check_args(&a, &batches, &n_batches));
    TC_TRY(tc_predict_compute(&a, batches, n_batches, &r));
    TC_TRY(s_report(&a, html, relative_to, &r));
err:
    tc_predict_run_free(&r);
    free(batches);
    tc_cli_result_free(&cli);
    return rc;
}
