#include "predict.h"

#include "store_fit.h"
#include "store_predict.h"
#include "tc_conv_step.h"
#include "tc_matmul_step.h"
#include "tc_error.h"
#include "tc_wire.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The layout of a model's step: its conv usages in the model's order. */
static int s_model_step(const tc_model_t *m, tc_conv_step_layout_t *l)
{
    size_t n = tc_model_conv_count(m);
    tc_conv_use_t *uses = calloc(n ? n : 1, sizeof *uses);
    if (!uses)
        return tc_fail(TC_ENOMEM, "out of memory for %zu conv usages", n);
    for (size_t j = 0; j < n; j++)
        uses[j] = (tc_conv_use_t){.first_layer = tc_model_conv(m, j)->first_layer,
                                  .multiplicity = tc_model_conv(m, j)->multiplicity};
    int rc = tc_conv_step_layout_init(l, uses, n);
    free(uses);
    return rc;
}

size_t tc_predict_lookups_per_batch(const tc_model_t *m)
{
    tc_conv_step_layout_t l;
    size_t n = s_model_step(m, &l) == 0 ? l.size : 0;
    tc_conv_step_layout_free(&l);
    return n;
}

/* The lookups of the request's b-th batch: d->per_batch of them. */
static tc_conv_lookup_t *s_batch_lookups(const tc_pred_device_t *d, size_t b)
{
    return &d->lookups[b * d->per_batch];
}

/* The matmul lookups a model's step needs per batch where the fit
 * benchmarks matmuls: every usage's directions. */
static size_t s_matmul_items(const tc_model_t *m, const tc_fit_t *fit)
{
    if (!fit->matmuls)
        return 0;
    size_t n = 0;
    for (size_t j = 0; j < tc_model_matmul_count(m); j++) {
        Traincast__V1__Direction dirs[TC_MATMUL_STEP_MAX_DIRS];
        n += tc_matmul_step_directions(&tc_model_matmul(m, j)->use, dirs);
    }
    return n;
}

static bool s_out_of_range(const tc_pred_request_t *req, const tc_pred_device_t *d,
                           unsigned batch, char *reason, size_t size);

/* The lookups a device needs at every batch, into d->lookups. */
static int s_build_lookups(const tc_pred_request_t *req, tc_pred_device_t *d)
{
    const tc_model_t *m = req->model;
    tc_conv_step_layout_free(&d->step);
    free(d->lookups);
    d->lookups = NULL;
    d->n_lookups = 0;
    int rc = s_model_step(m, &d->step);
    if (rc < 0)
        return rc;
    d->n_mm_items = s_matmul_items(m, &d->fit);
    d->per_batch = d->step.size + d->n_mm_items;
    size_t total = d->per_batch * req->n_batches;
    d->lookups = calloc(total ? total : 1, sizeof *d->lookups);
    if (!d->lookups)
        return tc_fail(TC_ENOMEM, "out of memory for %zu conv lookups", total);
    d->n_lookups = total;
    /* The convs ran in the AMP mode's type under AMP, else in the fit's. */
    Traincast__V1__DType dtype = TRAINCAST__V1__DTYPE__DTYPE_FP32;
    if (*d->fit.amp)
        tc_dtype_parse(d->fit.amp, &dtype);
    else if (*d->fit.dtype)
        tc_dtype_parse(d->fit.dtype, &dtype);
    for (size_t b = 0; b < req->n_batches; b++) {
        /* A batch the fit does not reach is not predicted: not looked up. */
        char why[8];
        bool skip = s_out_of_range(req, d, (unsigned)req->batches[b], why, sizeof why);
        tc_conv_lookup_t *batch = s_batch_lookups(d, b);
        for (size_t j = 0; j < d->step.n_uses; j++) {
            for (size_t i = d->step.first[j]; i < d->step.first[j + 1]; i++) {
                tc_conv_lookup_t *l = &batch[i];
                l->config = tc_model_conv(m, j)->config;
                l->config.n = (uint32_t)req->batches[b];
                l->config.dtype = dtype;
                l->direction = tc_conv_step_direction(&d->step, j, i - d->step.first[j]);
                l->skip = skip;
            }
        }
        tc_conv_lookup_t *mm = batch + d->step.size;
        for (size_t j = 0; d->n_mm_items && j < tc_model_matmul_count(m); j++) {
            const tc_matmul_usage_t *u = tc_model_matmul(m, j);
            Traincast__V1__Direction dirs[TC_MATMUL_STEP_MAX_DIRS];
            size_t n_dirs = tc_matmul_step_directions(&u->use, dirs);
            for (size_t k = 0; k < n_dirs; k++, mm++) {
                mm->kind = TC_OP_MATMUL;
                mm->matmul = u->config;
                mm->matmul.minibatch = (uint32_t)req->batches[b];
                mm->matmul.dtype = dtype;
                mm->direction = dirs[k];
                mm->skip = skip;
            }
        }
    }
    return 0;
}

/* A batch the fit does not reach is not predicted whatever is measured:
 * its convs are not missing (nobody is asked to benchmark them). */
static void s_unreached_not_missing(const tc_pred_request_t *req, tc_pred_device_t *d)
{
    for (size_t b = 0; b < req->n_batches; b++) {
        char why[8];
        if (!s_out_of_range(req, d, (unsigned)req->batches[b], why, sizeof why))
            continue;
        tc_conv_lookup_t *batch = s_batch_lookups(d, b);
        for (size_t i = 0; i < d->per_batch; i++) {
            if (!isfinite(batch[i].median_ms)) {
                batch[i].median_ms = batch[i].stddev_ms = 0;
                d->missing -= !batch[i].skip;
            }
        }
    }
}

int tc_predict_lookup_all(tc_store_t *s, const tc_pred_request_t *req, tc_pred_device_t *devs,
                          size_t n, const bool *only)
{
    tc_conv_lookup_set_t *sets = calloc(n ? n : 1, sizeof *sets);
    size_t *which = calloc(n ? n : 1, sizeof *which);
    size_t n_sets = 0;
    int rc = sets && which ? 0 : tc_fail(TC_ENOMEM, "out of memory");
    for (size_t i = 0; rc == 0 && i < n; i++) {
        tc_pred_device_t *d = &devs[i];
        if (d->status != TC_PRED_OK || (only && !only[i]))
            continue;
        rc = s_build_lookups(req, d);
        sets[n_sets] = (tc_conv_lookup_set_t){
            .device = d->device.name,
            .policy = *d->fit.conv_policy ? d->fit.conv_policy : "heuristic",
            .library_version = d->fit.library_version,
            .stat = d->fit.stat,
            .items = d->lookups,
            .n = d->n_lookups,
        };
        which[n_sets++] = i;
    }
    if (rc == 0)
        rc = tc_store_conv_lookup(s, sets, n_sets);
    for (size_t k = 0; rc == 0 && k < n_sets; k++) {
        tc_pred_device_t *d = &devs[which[k]];
        d->missing = sets[k].missing;
        s_unreached_not_missing(req, d);
    }
    free(sets);
    free(which);
    return rc;
}

int tc_predict_lookup(tc_store_t *s, const tc_pred_request_t *req, tc_pred_device_t *d)
{
    return tc_predict_lookup_all(s, req, d, 1, NULL);
}

const char *tc_pred_point_status_name(tc_pred_point_status_t s)
{
    switch (s) {
    case TC_PT_OK: return "ok";
    case TC_PT_MISSING: return "missing_benchmarks";
    case TC_PT_NO_FIT: return "no_fit";
    case TC_PT_OUT_OF_RANGE: return "out_of_range";
    }
    return "unknown";
}

/* Points for every batch, none predicted yet. */
static int s_points(const tc_pred_request_t *req, tc_pred_device_t *d)
{
    free(d->points);
    d->points = calloc(req->n_batches ? req->n_batches : 1, sizeof *d->points);
    if (!d->points)
        return tc_fail(TC_ENOMEM, "out of memory");
    d->n_points = req->n_batches;
    for (size_t b = 0; b < req->n_batches; b++) {
        tc_pred_point_t *p = &d->points[b];
        p->batch = (unsigned)req->batches[b];
        p->conv_bench_ms = p->conv_ms = p->conv_sd_ms = p->nonconv_ms = p->total_ms = NAN;
        p->matmul_bench_ms = p->matmul_ms = NAN;
        p->sd_ms = p->lo_ms = p->hi_ms = p->images_per_s = p->epoch_s = p->cost = NAN;
        p->peak_bytes = p->energy_kj = NAN;
        p->fits = -1;
    }
    return 0;
}

int tc_predict_no_fit(const tc_pred_request_t *req, tc_pred_device_t *d)
{
    int rc = s_points(req, d);
    for (size_t b = 0; rc == 0 && b < d->n_points; b++) {
        d->points[b].status = TC_PT_NO_FIT;
        snprintf(d->points[b].reason, sizeof d->points[b].reason,
                 "no fit (%ld traces stored)", d->device.traces);
    }
    return rc;
}

void tc_predict_count(const tc_pred_device_t *devs, size_t n, size_t *ok, size_t *not_ok)
{
    *ok = *not_ok = 0;
    for (size_t i = 0; i < n; i++) {
        for (size_t j = 0; j < devs[i].n_points; j++) {
            if (devs[i].points[j].status == TC_PT_OK)
                (*ok)++;
            else
                (*not_ok)++;
        }
    }
}

/* A batch the fit may not be extrapolated to: the reason, or false. */
static bool s_out_of_range(const tc_pred_request_t *req, const tc_pred_device_t *d,
                           unsigned batch, char *reason, size_t size)
{
    double f = req->extrapolate;
    if (!(f > 0) || !d->fit.batch_min || !d->fit.batch_max)
        return false;
    if ((double)batch * f >= d->fit.batch_min && (double)batch <= d->fit.batch_max * f)
        return false;
    snprintf(reason, size,
             "batch %u is outside the fit's batches %u..%u extrapolated %gx (--extrapolate); "
             "trace models at batch %u on it and run 'aggregator fit' again",
             batch, d->fit.batch_min, d->fit.batch_max, f, batch);
    return true;
}

/* The conv sum of the b-th batch from its looked-up benchmarks, by the
 * rule (tc_conv_step_time), and its variance; ms and sd are scratch of
 * d->step.size. */
static double s_conv_sum(const tc_pred_device_t *d, size_t b, double *ms, double *sd,
                         double *conv_var)
{
    const tc_conv_lookup_t *batch = s_batch_lookups(d, b);
    for (size_t i = 0; i < d->step.size; i++) {
        ms[i] = batch[i].median_ms;
        sd[i] = batch[i].stddev_ms;
    }
    return tc_conv_step_time(&d->step, ms, sd, conv_var);
}

/* The matmul sum of the b-th batch by the step rule (tc_matmul_step_ms,
 * per usage), and its variance; 0 where the fit benchmarks none. */
static double s_matmul_sum(const tc_pred_request_t *req, const tc_pred_device_t *d, size_t b,
                           double *var)
{
    *var = 0;
    if (!d->n_mm_items)
        return 0;
    const tc_conv_lookup_t *it = s_batch_lookups(d, b) + d->step.size;
    double sum = 0;
    for (size_t j = 0; j < tc_model_matmul_count(req->model); j++) {
        const tc_matmul_use_t *use = &tc_model_matmul(req->model, j)->use;
        Traincast__V1__Direction dirs[TC_MATMUL_STEP_MAX_DIRS];
        size_t n_dirs = tc_matmul_step_directions(use, dirs);
        double ms[TC_MATMUL_STEP_MAX_DIRS] = {0};
        for (size_t k = 0; k < n_dirs; k++, it++) {
            ms[k] = it->median_ms;
            if (isfinite(it->stddev_ms))
                *var += (double)use->multiplicity * use->multiplicity * it->stddev_ms *
                        it->stddev_ms;
        }
        sum += tc_matmul_step_ms(use, ms);
    }
    return sum;
}

/* A point the fit cannot predict: outside its batch range (unless
 * extrapolating), or lacking benchmarks at the b-th batch. */
static bool s_unpredictable(const tc_pred_request_t *req, const tc_pred_device_t *d,
                            tc_pred_point_t *p, size_t b)
{
    const tc_conv_lookup_t *batch = s_batch_lookups(d, b);
    size_t lacking = 0, lacking_mm = 0;
    for (size_t i = 0; i < d->per_batch; i++) {
        bool lack = !isfinite(batch[i].median_ms);
        lacking += lack;
        lacking_mm += lack && i >= d->step.size;
    }
    if (s_out_of_range(req, d, p->batch, p->reason, sizeof p->reason)) {
        p->status = TC_PT_OUT_OF_RANGE;
        return true;
    }
    if (lacking && !d->n_mm_items) {
        p->status = TC_PT_MISSING;
        snprintf(p->reason, sizeof p->reason,
                 "lacks %zu of its %zu conv measurements at batch %u (one per conv config and "
                 "pass)",
                 lacking, d->per_batch, p->batch);
        return true;
    }
    if (lacking) {
        p->status = TC_PT_MISSING;
        snprintf(p->reason, sizeof p->reason,
                 "lacks %zu of its %zu conv and %zu of its %zu matmul measurements at batch %u "
                 "(one per config and pass)",
                 lacking - lacking_mm, d->step.size, lacking_mm, d->n_mm_items, p->batch);
        return true;
    }
    return false;
}

/* The point's columns from the benchmark sums (conv, matmul) and the fit's
 * prediction. A factor on the benchmarked sum (the feature conv.ms) belongs
 * with the benchmarks: the conv and matmul columns show their sums
 * corrected by it, the non-conv column what the rest of the fit adds.
 * Nothing takes negative time: a fit extrapolated below zero is shown at
 * zero and flagged, never passed off as a prediction. */
static void s_split(const tc_fit_t *fit, tc_pred_point_t *p, double conv, double mm,
                    double nonconv)
{
    double factor = 0;
    for (size_t j = 0; j < fit->p; j++) {
        if (!strcmp(fit->features[j], "conv.ms"))
            factor = fit->coef[j];
    }
    p->conv_bench_ms = conv;
    p->matmul_bench_ms = mm;
    p->conv_ms = conv * (1 + factor);
    p->matmul_ms = mm * (1 + factor);
    nonconv -= factor * (conv + mm);
    p->clamped = p->conv_ms < 0 || p->matmul_ms < 0 || nonconv < 0;
    if (p->conv_ms < 0)
        p->conv_ms = 0;
    if (p->matmul_ms < 0)
        p->matmul_ms = 0;
    if (nonconv < 0)
        nonconv = 0;
    p->nonconv_ms = nonconv;
    p->total_ms = p->conv_ms + p->matmul_ms + nonconv;
}

/* The interval, throughput, epoch time, cost, energy and memory of a point
 * whose times are set; sd_ms its standard deviation, t the fit's quantile. */
static void s_derive(const tc_pred_request_t *req, const tc_pred_device_t *d,
                     const tc_features_t *f, double t, tc_pred_point_t *p)
{
    if (isfinite(d->fit.interval_lo) && isfinite(d->fit.interval_hi)) {
        /* Calibrated on how far this device's model missed CNNs it had not
         * seen (fit_interval.c). */
        p->lo_ms = p->total_ms * d->fit.interval_lo;
        p->hi_ms = p->total_ms * d->fit.interval_hi;
    } else {
        p->lo_ms = fmax(p->total_ms - t * p->sd_ms, 0);
        p->hi_ms = p->total_ms + t * p->sd_ms;
    }
    p->images_per_s = p->total_ms > 0 ? p->batch / (p->total_ms / 1000.0) : NAN;
    double iters = ceil(req->dataset_size / p->batch);
    p->epoch_s = iters * p->total_ms / 1000.0;
    p->cost = isfinite(d->price) ? p->epoch_s / 3600.0 * d->price : NAN;
    p->energy_kj = isfinite(d->watts) ? p->epoch_s * d->watts / 1000.0 : NAN;
    p->peak_bytes = tc_memory_predict(&d->memory, f);
    p->fits = tc_memory_fits(&d->memory, d->mem, d->n_mem, tc_model_id(req->model), p->batch,
                             p->peak_bytes);
}

int tc_predict_device(tc_store_t *s, const tc_pred_request_t *req, tc_pred_device_t *d)
{
    const tc_model_t *m = req->model;
    if (d->n_lookups != d->per_batch * req->n_batches)
        return tc_fail(TC_EINVAL, "predict: device '%s' has no conv lookups for this request "
                                  "(look them up first: tc_predict_lookup_all)",
                       d->device.name);
    int prc = s_points(req, d);
    if (prc < 0)
        return prc;

    int rc = 0;
    if (!d->mem_loaded) {
        rc = tc_store_memory_points(s, d->device.name, &d->mem, &d->n_mem);
        d->mem_loaded = rc == 0;
    }
    if (rc == 0)
        rc = tc_memory_fit(d->mem, d->n_mem, (double)d->device.memory_bytes, &d->memory);
    double t = tc_fit_t_quantile(0.975, d->fit.dof);
    double *ms = calloc(2 * d->step.size + 1, sizeof *ms);
    if (rc == 0 && !ms)
        rc = tc_fail(TC_ENOMEM, "out of memory");

    for (size_t b = 0; rc == 0 && b < req->n_batches; b++) {
        tc_pred_point_t *p = &d->points[b];
        if (s_unpredictable(req, d, p, b))
            continue;
        double conv_var, mm_var;
        double conv = s_conv_sum(d, b, ms, ms + d->step.size, &conv_var);
        double mm = s_matmul_sum(req, d, b, &mm_var);
        conv_var += mm_var;
        tc_features_t f;
        tc_model_features(m, p->batch, &f);
        double nonconv = NAN, var = NAN;
        rc = tc_fit_predict(&d->fit, &f, conv + mm, &nonconv, &var);
        if (rc < 0)
            break;
        s_split(&d->fit, p, conv, mm, nonconv);
        p->conv_sd_ms = sqrt(conv_var);
        p->sd_ms = sqrt(var + conv_var);
        s_derive(req, d, &f, t, p);
    }
    free(ms);
    return rc;
}

int tc_predict_record(tc_store_t *s, const char *request_id, const tc_pred_request_t *req,
                      const tc_pred_device_t *devs, size_t n, size_t *stored)
{
    *stored = 0;
    size_t cap = 0;
    for (size_t i = 0; i < n; i++)
        cap += devs[i].n_points;
    tc_store_prediction_t *rows = calloc(cap ? cap : 1, sizeof *rows);
    if (!rows)
        return tc_fail(TC_ENOMEM, "recording predictions: out of memory");
    uint32_t c, h, w;
    tc_model_input(req->model, &c, &h, &w);
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        const tc_pred_device_t *d = &devs[i];
        if (d->status != TC_PRED_OK)
            continue;
        for (size_t j = 0; j < d->n_points; j++) {
            const tc_pred_point_t *p = &d->points[j];
            if (p->status != TC_PT_OK)
                continue;
            rows[k++] = (tc_store_prediction_t){
                .model_id = tc_model_id(req->model),
                .model_name = tc_model_name(req->model),
                .model_sha256 = tc_model_sha256(req->model),
                .input_size = h,
                .device = d->device.name,
                .framework = *d->fit.framework ? d->fit.framework : req->framework,
                .dtype = *d->fit.dtype ? d->fit.dtype : req->dtype,
                .batch = p->batch,
                .iteration_ms = p->total_ms,
                .lo_ms = p->lo_ms,
                .hi_ms = p->hi_ms,
                .conv_ms = p->conv_ms,
                .nonconv_ms = p->nonconv_ms,
                .epoch_s = p->epoch_s,
                .dataset_size = req->dataset_size,
                .peak_memory_bytes = p->peak_bytes,
                .energy_kj = p->energy_kj,
                .fits_memory = p->fits,
                .fit_id = d->fit.fit_id,
            };
        }
    }
    int rc = tc_store_predictions_put(s, request_id, rows, k, stored);
    free(rows);
    return rc;
}

/* d->unseen from the classes its fit saw ("bn,act,..."; "" a fit without
 * stored models: nothing to compare with). */
static void s_unseen(const tc_model_t *m, const char *seen, tc_pred_device_t *d)
{
    d->unseen[0] = '\0';
    if (!*seen)
        return;
    tc_features_t f;
    tc_model_features(m, 1, &f);
    size_t len = 0;
    for (int c = 0; c < TC_OPC_COUNT; c++) {
        if (c == TC_OPC_CONV || f.cls[c].layers <= 0)
            continue;
        const char *name = tc_op_class_name((tc_op_class_t)c);
        bool known = false;
        for (const char *p = seen; *p && !known;) {
            size_t l = strcspn(p, ",");
            known = l == strlen(name) && !strncmp(p, name, l);
            p += l + (p[l] == ',');
        }
        if (!known && len < sizeof d->unseen)
            len += (size_t)snprintf(d->unseen + len, sizeof d->unseen - len, "%s%s (%.0f layer%s)",
                                    len ? ", " : "", name, f.cls[c].layers,
                                    f.cls[c].layers == 1 ? "" : "s");
    }
}

int tc_predict_unseen_classes(tc_store_t *s, const tc_model_t *m, tc_pred_device_t *d)
{
    char seen[1024], *buf = seen;
    int rc = tc_store_fit_classes_each(s, &d->fit.fit_id, 1, &buf, sizeof seen);
    if (rc == 0)
        s_unseen(m, seen, d);
    return rc;
}

int tc_predict_prepare_all(tc_store_t *s, const tc_pred_request_t *req, tc_pred_device_t *devs,
                           size_t n)
{
    const char **names = calloc(n + 1, sizeof *names);
    long long *fit_ids = calloc(n + 1, sizeof *fit_ids);
    tc_mem_point_t **mem = calloc(n + 1, sizeof *mem);
    size_t *n_mem = calloc(n + 1, sizeof *n_mem), *which = calloc(n + 1, sizeof *which);
    char **seen = calloc(n + 1, sizeof *seen);
    char *seen_text = calloc(n + 1, 1024);
    int rc = names && fit_ids && mem && n_mem && which && seen && seen_text
                 ? 0
                 : tc_fail(TC_ENOMEM, "out of memory");
    size_t k = 0;
    for (size_t i = 0; rc == 0 && i < n; i++) {
        if (devs[i].status != TC_PRED_OK)
            continue;
        names[k] = devs[i].device.name;
        fit_ids[k] = devs[i].fit.fit_id;
        seen[k] = seen_text + k * 1024;
        which[k++] = i;
    }
    if (rc == 0)
        rc = tc_store_memory_points_each(s, names, k, mem, n_mem);
    if (rc == 0)
        rc = tc_store_fit_classes_each(s, fit_ids, k, seen, 1024);
    for (size_t j = 0; j < k && mem; j++) {
        tc_pred_device_t *d = &devs[which[j]];
        if (rc == 0) {
            free(d->mem);
            d->mem = mem[j];
            d->n_mem = n_mem[j];
            d->mem_loaded = true;
            s_unseen(req->model, seen[j], d);
        } else {
            free(mem[j]);
        }
    }
    free(names);
    free(fit_ids);
    free(mem);
    free(n_mem);
    free(which);
    free(seen);
    free(seen_text);
    return rc;
}

static int s_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int tc_predict_ratio_interval(const double *ra, const double *rb, size_t n, double *qlo,
                              double *qhi, size_t *pairs)
{
    *qlo = *qhi = NAN;
    *pairs = 0;
    double *q = malloc((n ? n : 1) * sizeof *q);
    if (!q)
        return tc_fail(TC_ENOMEM, "out of memory");
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        if (isfinite(ra[i]) && isfinite(rb[i]) && ra[i] > 0 && rb[i] > 0)
            q[m++] = ra[i] / rb[i];
    }
    *pairs = m;
    qsort(q, m, sizeof *q, s_cmp_double);
    double k_lo = floor((double)(m + 1) * TC_FIT_ALPHA / 2.0);
    double k_hi = ceil((double)(m + 1) * (1.0 - TC_FIT_ALPHA / 2.0));
    if (m && k_lo >= 1 && k_hi <= (double)m) {
        *qlo = q[(size_t)k_lo - 1];
        *qhi = q[(size_t)k_hi - 1];
    }
    free(q);
    return 0;
}

static int s_paired(tc_store_t *s, const tc_pred_device_t *fast, const tc_pred_device_t *slow,
                    double *qlo, double *qhi, size_t *pairs)
{
    double *ra = NULL, *rb = NULL;
    size_t n = 0;
    int rc = tc_store_fit_paired_ratios(s, slow->fit.fit_id, fast->fit.fit_id, &ra, &rb, &n);
    if (rc == 0)
        rc = tc_predict_ratio_interval(ra, rb, n, qlo, qhi, pairs);
    free(ra);
    free(rb);
    return rc;
}

int tc_predict_compare(tc_store_t *s, const tc_pred_device_t *devs, size_t n,
                       tc_pred_compare_t **out, size_t *n_out)
{
    *out = NULL;
    *n_out = 0;
    size_t n_batches = 0;
    for (size_t i = 0; i < n; i++) {
        if (devs[i].status == TC_PRED_OK && devs[i].n_points > n_batches)
            n_batches = devs[i].n_points;
    }
    tc_pred_compare_t *cmp = calloc(n_batches + 1, sizeof *cmp);
    if (!cmp)
        return tc_fail(TC_ENOMEM, "out of memory");
    size_t k = 0;
    int rc = 0;
    /* The paired interval depends on the two fits only: the same two
     * devices at another batch reuse it. */
    size_t memo_first = n, memo_second = n, memo_pairs = 0;
    double memo_lo = NAN, memo_hi = NAN;
    for (size_t b = 0; b < n_batches && rc == 0; b++) {
        size_t first = n, second = n;
        for (size_t i = 0; i < n; i++) {
            if (devs[i].status != TC_PRED_OK || b >= devs[i].n_points ||
                !isfinite(devs[i].points[b].total_ms) || devs[i].points[b].total_ms <= 0)
                continue;
            double t = devs[i].points[b].total_ms;
            if (first == n || t < devs[first].points[b].total_ms) {
                second = first;
                first = i;
            } else if (second == n || t < devs[second].points[b].total_ms) {
                second = i;
            }
        }
        if (second == n)
            continue;
        const tc_pred_point_t *pf = &devs[first].points[b], *ps = &devs[second].points[b];
        tc_pred_compare_t *c = &cmp[k++];
        c->batch = pf->batch;
        c->faster = first;
        c->slower = second;
        c->ratio = ps->total_ms / pf->total_ms;
        double qlo = memo_lo, qhi = memo_hi;
        c->pairs = memo_pairs;
        if (first != memo_first || second != memo_second) {
            rc = s_paired(s, &devs[first], &devs[second], &qlo, &qhi, &c->pairs);
            memo_first = first;
            memo_second = second;
            memo_lo = qlo;
            memo_hi = qhi;
            memo_pairs = c->pairs;
        }
        if (rc == 0 && isfinite(qlo) && isfinite(qhi)) {
            c->method = "paired";
            c->lo = c->ratio * qlo;
            c->hi = c->ratio * qhi;
            c->apart = c->lo > 1.0;
        } else if (rc == 0) {
            c->method = "intervals";
            c->lo = pf->hi_ms > 0 ? ps->lo_ms / pf->hi_ms : NAN;
            c->hi = pf->lo_ms > 0 ? ps->hi_ms / pf->lo_ms : NAN;
            c->apart = ps->lo_ms > pf->hi_ms;
            if (!tc_pred_calibrated(&devs[first]) || !tc_pred_calibrated(&devs[second]))
                c->caveat = "uncalibrated";
        }
        if (pf->clamped || ps->clamped)
            c->caveat = "clamped";
        if (c->caveat)
            c->apart = false;
    }
    if (rc < 0) {
        free(cmp);
        return rc;
    }
    *out = cmp;
    *n_out = k;
    return 0;
}

bool tc_pred_calibrated(const tc_pred_device_t *d)
{
    return d->status == TC_PRED_OK && isfinite(d->fit.cv_mape) &&
           isfinite(d->fit.interval_lo) && isfinite(d->fit.interval_hi);
}

void tc_pred_device_free(tc_pred_device_t *d)
{
    tc_conv_step_layout_free(&d->step);
    free(d->lookups);
    free(d->points);
    free(d->mem);
    d->mem = NULL;
    d->n_mem = 0;
    d->mem_loaded = false;
    d->lookups = NULL;
    d->points = NULL;
    d->n_lookups = d->n_points = 0;
}
