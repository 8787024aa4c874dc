/* aggregator predict: compare device classes for a model over batch sizes. */
#include "cli_db.h"
#include "cmd_predict.h"
#include "commands.h"
#include "device_match.h"
#include "plot.h"
#include "predict.h"
#include "predict_output.h"
#include "store.h"
#include "store_fit.h"
#include "store_predict.h"

#include "tc_buf.h"
#include "tc_cli.h"
#include "tc_error.h"
#include "tc_validate.h"
#include "tc_log.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* Prices: `DEVICE = PRICE` per line (per device-hour; '#' comments), the
 * device named as --gpu names one (its full name, its alias, or a part of
 * the name that matches one device only) among every device the store
 * knows; a device not being predicted is no error, one unknown is. */
static int s_read_prices(const char *path, const tc_device_class_t *all, size_t n_all,
                         tc_pred_device_t *devs, size_t n)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return tc_fail(TC_EINVAL, "--prices: cannot open %s: %s", path, strerror(errno));
    char line[1024];
    int lineno = 0, rc = 0;
    while (rc == 0 && fgets(line, sizeof line, f)) {
        lineno++;
        char *hash = strchr(line, '#');
        if (hash)
            *hash = '\0';
        char *eq = strrchr(line, '=');
        char *s = line;
        while (isspace((unsigned char)*s))
            s++;
        if (!*s)
            continue;
        if (!eq) {
            rc = tc_fail(TC_EINVAL, "%s:%d: expected 'DEVICE = PRICE PER HOUR'", path, lineno);
            break;
        }
        *eq = '\0';
        char *name = s, *end = eq;
        while (end > name && isspace((unsigned char)end[-1]))
            *--end = '\0';
        char *num_end = NULL;
        double price = strtod(eq + 1, &num_end);
        while (num_end && isspace((unsigned char)*num_end))
            num_end++;
        if (!num_end || num_end == eq + 1 || *num_end || !isfinite(price) || price < 0) {
            rc = tc_fail(TC_EINVAL, "%s:%d: the price of '%s' must be a number >= 0", path,
                         lineno, name);
            break;
        }
        size_t hit = 0;
        rc = tc_device_match(all, n_all, name, "--prices", &hit);
        if (rc < 0) {
            tc_err_context(rc, "%s:%d", path, lineno);
            break;
        }
        for (size_t i = 0; i < n; i++) {
            if (!strcmp(devs[i].device.name, all[hit].name))
                devs[i].price = price;
        }
    }
    fclose(f);
    return rc;
}

/* Select device classes: "all" or a comma-separated list of names; *all
 * gets every class the store knows, aliases filled in (caller frees). */
static int s_select_devices(tc_store_t *s, const char *gpu, tc_device_class_t **all_out,
                            size_t *n_all_out, tc_pred_device_t **out, size_t *n_out)
{
    tc_device_class_t *all = NULL;
    size_t n_all = 0, *idx = NULL, n = 0;
    int rc = tc_store_device_classes(s, &all, &n_all);
    if (rc == 0)
        tc_device_alias_defaults(all, n_all);
    if (rc == 0)
        rc = tc_device_select(all, n_all, gpu, "--gpu", &idx, &n);
    tc_pred_device_t *devs = NULL;
    if (rc == 0 && !(devs = calloc(n + 1, sizeof *devs)))
        rc = tc_fail(TC_ENOMEM, "out of memory");
    for (size_t i = 0; rc == 0 && i < n; i++) {
        devs[i].device = all[idx[i]];
        devs[i].price = devs[i].watts = NAN;
    }
    free(idx);
    if (rc < 0) {
        free(all);
        free(devs);
        return rc;
    }
    *all_out = all;
    *n_all_out = n_all;
    *out = devs;
    *n_out = n;
    return 0;
}

/* Each device's latest fit of the request's kind, its routing warning and
 * its training power, one statement each for all devices; a device without
 * a fit gets its no_fit rows. */
static int s_load_fits(tc_store_t *store, const tc_pred_request_t *req, tc_pred_device_t *devs,
                       size_t n_devs)
{
    const char **names = calloc(n_devs + 1, sizeof *names);
    tc_fit_t *fits = calloc(n_devs + 1, sizeof *fits);
    bool *found = calloc(n_devs + 1, sizeof *found);
    char **warnings = calloc(n_devs + 1, sizeof *warnings);
    tc_power_query_t *power = calloc(n_devs + 1, sizeof *power);
    size_t *which = calloc(n_devs + 1, sizeof *which), k = 0;
    int rc = 0;
    if (!names || !fits || !found || !warnings || !power || !which)
        TC_FAIL_GOTO(TC_ENOMEM, "out of memory");
    for (size_t i = 0; i < n_devs; i++)
        names[i] = devs[i].device.name;
    TC_TRY(tc_store_fit_latest_each(store, names, n_devs, req->framework, NULL, req->dtype,
                                    req->amp, fits, found));
    for (size_t i = 0; i < n_devs; i++) {
        tc_pred_device_t *d = &devs[i];
        if (!found[i]) {
            d->status = TC_PRED_NO_FIT;
            snprintf(d->note, sizeof d->note,
                     "no fit: trace models on it with 'agent trace' or 'agent run', then run "
                     "'aggregator fit'");
            TC_TRY(tc_predict_no_fit(req, d));
            continue;
        }
        d->fit = fits[i];
        names[k] = d->device.name;
        warnings[k] = d->warning;
        power[k] = (tc_power_query_t){.device = d->device.name,
                                      .framework = d->fit.framework,
                                      .dtype = d->fit.dtype,
                                      .amp = d->fit.amp};
        which[k++] = i;
    }
    TC_TRY(tc_store_routing_warnings(store, names, k, warnings, sizeof devs[0].warning));
    TC_TRY(tc_store_device_power_each(store, power, k));
    for (size_t j = 0; j < k; j++) {
        tc_pred_device_t *d = &devs[which[j]];
        d->watts = power[j].watts;
        snprintf(d->energy_source, sizeof d->energy_source, "%s", power[j].source);
    }
err:
    free(names);
    free(fits);
    free(found);
    free(warnings);
    free(power);
    free(which);
    return rc;
}

/* The rows of every device with a fit (its conv look-ups done); the op
 * classes its fit never saw are said with them (d->unseen). */
static int s_predict_devices(tc_store_t *store, const tc_pred_request_t *req,
                             tc_pred_device_t *devs, size_t n_devs)
{
    int rc = 0;
    TC_TRY(tc_predict_prepare_all(store, req, devs, n_devs));
    for (size_t i = 0; i < n_devs; i++) {
        tc_pred_device_t *d = &devs[i];
        if (d->status != TC_PRED_OK)
            continue;
        TC_TRY(tc_predict_device(store, req, d));
    }
err:
    return rc;
}

/* Record the predicted rows (table predictions); a failure is a warning. */
static void s_record(tc_store_t *store, const tc_pred_request_t *req,
                     const tc_pred_device_t *devs, size_t n_devs)
{
    char request_id[TC_MSGID_LEN + 1];
    tc_msgid_new(request_id);
    size_t stored = 0;
    if (tc_predict_record(store, request_id, req, devs, n_devs, &stored) < 0)
        tc_log_warn("the predictions were not recorded in the database: %s", tc_errmsg());
    else
        tc_log_info("recorded %zu predictions as request %s (table predictions)", stored,
                    request_id);
}

/* The options' values checked; the output format and batch list parsed. */
static int s_check_args(const tc_predict_args_t *a, tc_pred_format_t *fmt,
                        unsigned long **batches, size_t *n_batches)
{
    Traincast__V1__DType dtype;
    if (a->format && tc_pred_format_parse(a->format, fmt) < 0)
        return tc_fail(TC_EUSAGE, "--format must be table, csv or json (got '%s')", a->format);
    if (a->plot_metric && strcmp(a->plot_metric, "iteration") &&
        strcmp(a->plot_metric, "epoch"))
        return tc_fail(TC_EUSAGE, "--plot-metric must be iteration or epoch (got '%s')",
                       a->plot_metric);
    if (!(a->dataset >= 1))
        return tc_fail(TC_EUSAGE, "--dataset-size must be at least 1 (got %g)", a->dataset);
    if (!(a->extrapolate == 0 || (a->extrapolate >= 1 && isfinite(a->extrapolate))))
        return tc_fail(TC_EUSAGE, "--extrapolate must be 0 (any batch) or a factor of at least 1 "
                                  "(got %g)",
                       a->extrapolate);
    int rc = tc_dtype_parse(a->dtype, &dtype);
    if (rc < 0)
        return rc;
    if (strcmp(a->amp, "none") && strcmp(a->amp, "fp16") && strcmp(a->amp, "bf16"))
        return tc_fail(TC_EUSAGE, "--amp must be none, fp16 or bf16 (got '%s')", a->amp);
    if (a->plot) {
        const char *ext = strrchr(a->plot, '.');
        if (!ext || (strcasecmp(ext, ".svg") && strcasecmp(ext, ".png")))
            return tc_fail(TC_EUSAGE, "--plot %s: the file name must end in .svg or .png",
                           a->plot);
    }
    return tc_parse_uint_list(a->batch_text, "--batch", 1, TC_MAX_BATCH, batches, n_batches);
}

int tc_predict_check_args(const tc_predict_args_t *a, unsigned long **batches,
                          size_t *n_batches)
{
    tc_pred_format_t fmt;
    return s_check_args(a, &fmt, batches, n_batches);
}

/* Load the model the user named; anything wrong with it is bad input. */
static int s_load_model(const tc_predict_args_t *a, tc_model_t **model)
{
    tc_model_opts_t mopts = {.allow_unknown = a->allow_unknown,
                             .input_size = (uint32_t)a->input_size};
    int rc = tc_model_load_spec(a->model_spec, &mopts, model);
    if (rc < 0) {
        tc_err_context(rc, "--model %s", a->model_spec);
        rc = rc == TC_ENOMEM || rc == TC_EIO || rc == TC_ECHILD ? rc : TC_EINVAL;
    } else if (*tc_model_export_warning(*model)) {
        tc_log_warn("--model %s: %s", a->model_spec, tc_model_export_warning(*model));
    }
    return rc;
}

int tc_predict_compute(const tc_predict_args_t *a, const unsigned long *batches,
                       size_t n_batches, tc_predict_run_t *r)
{
    *r = (tc_predict_run_t){0};
    int rc = 0;
    /* The database first: a wrong --db is said before a torchvision model
     * is exported (seconds of PyTorch). */
    TC_TRY(tc_store_open(tc_default_dsn(a->db), &r->store));
    TC_TRY(tc_store_check_schema(r->store));
    TC_TRY(s_load_model(a, &r->model));
    TC_TRY(s_select_devices(r->store, a->gpu, &r->all, &r->n_all, &r->devs, &r->n_devs));
    /* A look-up large enough to be split over two connections: the second
     * one opens while the fits are read. */
    if (tc_store_lookup_splits(r->n_devs * tc_predict_lookups_per_batch(r->model)))
        tc_store_side_begin(r->store);
    if (a->prices)
        TC_TRY(s_read_prices(a->prices, r->all, r->n_all, r->devs, r->n_devs));

    r->req = (tc_pred_request_t){.model = r->model,
                                 .batches = batches,
                                 .n_batches = n_batches,
                                 .dataset_size = a->dataset,
                                 .framework = a->framework,
                                 .dtype = a->dtype,
                                 .amp = strcmp(a->amp, "none") ? a->amp : "",
                                 .input_size = (uint32_t)a->input_size,
                                 .extrapolate = a->extrapolate};
    TC_TRY(s_load_fits(r->store, &r->req, r->devs, r->n_devs));
    TC_TRY(tc_predict_lookup_all(r->store, &r->req, r->devs, r->n_devs, NULL));
    TC_TRY(tc_predict_fill_missing(r->store, &r->req, r->devs, r->n_devs, (unsigned)a->wait_s,
                                   a->model_spec));
    TC_TRY(s_predict_devices(r->store, &r->req, r->devs, r->n_devs));
    TC_TRY(tc_predict_compare(r->store, r->devs, r->n_devs, &r->cmps, &r->n_cmps));
    tc_predict_count(r->devs, r->n_devs, &r->ok, &r->not_ok);
err:
    return rc;
}

void tc_predict_run_free(tc_predict_run_t *r)
{
    for (size_t i = 0; i < r->n_devs; i++)
        tc_pred_device_free(&r->devs[i]);
    free(r->devs);
    free(r->all);
    free(r->cmps);
    tc_store_destroy(&r->store);
    tc_model_destroy(&r->model);
    *r = (tc_predict_run_t){0};
}

/* Predict every device's rows, print them, plot and record them; 3 when
 * some rows could not be predicted. */
static int s_run(const tc_predict_args_t *a, tc_pred_format_t fmt, const unsigned long *batches,
                 size_t n_batches)
{
    tc_predict_run_t r = {0};
    int rc = 0;
    TC_TRY(tc_predict_compute(a, batches, n_batches, &r));
    TC_TRY(tc_pred_print(stdout, fmt, a->wide, r.model, &r.req, r.devs, r.n_devs, r.cmps, r.n_cmps));
    fflush(stdout);
    if (a->plot && r.ok)
        TC_TRY(tc_pred_plot(a->plot, strcmp(a->plot_metric, "epoch") == 0, r.model, r.devs,
                            r.n_devs));
    else if (a->plot)
        tc_log_warn("--plot %s: no row could be predicted, so there is nothing to draw", a->plot);
    if (!a->no_store && r.ok)
        s_record(r.store, &r.req, r.devs, r.n_devs);
    if (r.not_ok) {
        fprintf(stderr, "aggregator predict: %zu of %zu rows could not be predicted (each "
                        "says why above); exit status 3\n",
                r.not_ok, r.ok + r.not_ok);
        rc = 3;
    }
err:
    tc_predict_run_free(&r);
    return rc;
}

int tc_cmd_predict(int argc, char **argv)
{
    tc_predict_args_t a = {.format = "table",
                           .plot_metric = "iteration",
                           .framework = "pytorch",
                           .dtype = "fp32",
                           .amp = "none",
                           .wait_s = 300,
                           .dataset = 1281167,
                           .extrapolate = 2};
    const tc_opt_t opts[] = {
        {"gpu", TC_OPT_STR, &a.gpu, "all|NAME,...",
         "device classes to compare: all, or names, aliases or unique parts of names", true},
        {"model", TC_OPT_STR, &a.model_spec, "SPEC",
         "torchvision:NAME, FILE.py:FUNC or FILE.onnx (never-traced models are predicted "
         "from structure)",
         true},
        {"batch", TC_OPT_STR, &a.batch_text, "LIST",
         "batch sizes: 8,16,32 or 8..512 (powers of two) or 8..64:8", true},
        {"input-size", TC_OPT_UINT, &a.input_size, "PX", "input height and width (default: the model's)"},
        {"dataset-size", TC_OPT_DOUBLE, &a.dataset, "N", "images per epoch (default: 1281167, ImageNet)"},
        {"prices", TC_OPT_STR, &a.prices, "FILE",
         "'DEVICE = PRICE' per device-hour, one per line; DEVICE as --gpu takes it (name, "
         "alias or a unique part of the name)"},
        {"format", TC_OPT_STR, &a.format, "table|csv|json", "output format (default: table)"},
        {"plot", TC_OPT_STR, &a.plot, "FILE.svg|FILE.png", "write a chart of the predictions"},
        {"plot-metric", TC_OPT_STR, &a.plot_metric, "iteration|epoch",
         "what the chart shows against batch size (default: iteration)"},
        {"framework", TC_OPT_STR, &a.framework, "NAME", "framework whose fits to use (default: pytorch)"},
        {"dtype", TC_OPT_STR, &a.dtype, "fp32|fp32_strict|tf32|fp16|bf16",
         "data type of the fits (default: fp32, PyTorch's defaults)"},
        {"amp", TC_OPT_STR, &a.amp, "none|fp16|bf16",
         "automatic mixed precision of the fits (default: none)"},
        {"wait", TC_OPT_UINT, &a.wait_s, "SECONDS",
         "how long to wait for agents to benchmark missing convs and matmuls (default: 300; 0: "
         "do not ask)"},
        {"extrapolate", TC_OPT_DOUBLE, &a.extrapolate, "F",
         "predict batches down to the fit's smallest / F and up to its largest * F (default: "
         "2; 0: any); the others are out_of_range"},
        {"allow-unknown", TC_OPT_FLAG, &a.allow_unknown, NULL,
         "treat ONNX ops traincast does not know as element-wise layers"},
        {"wide", TC_OPT_FLAG, &a.wide, NULL,
         "the table with full device names, every column and unwrapped lines (default: "
         "aliases, columns no device fills left out, lines within 120 characters)"},
        {"no-store", TC_OPT_FLAG, &a.no_store, NULL,
         "do not record the predictions in the database (table predictions)"},
        TC_DB_OPT(&a.db),
        {0},
    };
    const tc_cmd_spec_t spec = {
        .prog = "aggregator predict",
        .summary = "Predict a model's (a CNN's or a transformer's) training iteration time on each "
                   "device class\nover batch sizes, with a 95 % prediction interval, throughput, "
                   "epoch time, cost and memory,\nand name the fastest and cheapest device.",
        .max_positional = 0,
        .config_file = true,
        .epilog = "Every (device, batch) row is predicted where it can be; a row that cannot "
                  "says why: missing_benchmarks\n(conv benchmarks missing on that device at "
                  "that batch), no_fit (the device has no fit) or\nout_of_range (the batch is "
                  "too far outside the fit's batches; --extrapolate). Predicted rows are\n"
                  "stored in the table predictions (view prediction_vs_trace).\n"
                  "Exit status: 0 every row predicted; 3 some or all rows could not be "
                  "predicted (the output\nsays why for each); 2 bad usage or input; 1 a "
                  "runtime failure (e.g. the database).",
        .opts = opts,
    };
    tc_cli_result_t cli;
    int rc = tc_cli_begin(&spec, argc, argv, &cli);
    if (rc < 0 || cli.help_shown)
        return rc;
    tc_pred_format_t fmt;
    unsigned long *batches = NULL;
    size_t n_batches = 0;
    rc = s_check_args(&a, &fmt, &batches, &n_batches);
    if (rc == 0)
        rc = s_run(&a, fmt, batches, n_batches);
    free(batches);
    tc_cli_result_free(&cli);
    return rc;
}
