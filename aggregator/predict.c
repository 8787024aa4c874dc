#include "predict.h"

#include "store_fit.h"
#include "tc_conv_step.h"
#include "tc_error.h"
#include "tc_wire.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Lookups are laid out batch-major: for batch i, conv usage j, each
 * direction of its step time (tc_conv_step.h) in that rule's order. */
static size_t s_per_batch(const tc_model_t *m)
{
    size_t n = 0;
    Traincast__V1__Direction dirs[TC_CONV_STEP_MAX_DIRS];
    for (size_t j = 0; j < tc_model_conv_count(m); j++)
        n += tc_conv_step_directions(tc_model_conv(m, j)->first_layer, dirs);
    return n;
}

int tc_predict_lookup(tc_store_t *s, const tc_pred_request_t *req, tc_pred_device_t *d)
{
    const tc_model_t *m = req->model;
    size_t per = s_per_batch(m);
    size_t total = per * req->n_batches;
    free(d->lookups);
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
    size_t k = 0;
    for (size_t b = 0; b < req->n_batches; b++) {
        for (size_t j = 0; j < tc_model_conv_count(m); j++) {
            const tc_conv_usage_t *u = tc_model_conv(m, j);
            Traincast__V1__Direction dirs[TC_CONV_STEP_MAX_DIRS];
            size_t nd = tc_conv_step_directions(u->first_layer, dirs);
            for (size_t dir = 0; dir < nd; dir++) {
                tc_conv_lookup_t *l = &d->lookups[k++];
                l->config = u->config;
                l->config.n = (uint32_t)req->batches[b];
                l->config.dtype = dtype;
                l->direction = dirs[dir];
            }
        }
    }
    const char *policy = *d->fit.conv_policy ? d->fit.conv_policy : "heuristic";
    return tc_store_conv_lookup(s, d->device.name, policy, d->fit.library_version, d->lookups,
                                d->n_lookups, &d->missing);
}

int tc_predict_device(tc_store_t *s, const tc_pred_request_t *req, tc_pred_device_t *d)
{
    const tc_model_t *m = req->model;
    size_t per = s_per_batch(m);
    free(d->points);
    d->points = calloc(req->n_batches ? req->n_batches : 1, sizeof *d->points);
    if (!d->points)
        return tc_fail(TC_ENOMEM, "out of memory");
    d->n_points = req->n_batches;

    tc_mem_point_t *mem = NULL;
    size_t n_mem = 0;
    int rc = tc_store_memory_points(s, d->device.name, &mem, &n_mem);
    if (rc == 0)
        rc = tc_memory_fit(mem, n_mem, (double)d->device.memory_bytes, &d->memory);
    double t = tc_fit_t_quantile(0.975, d->fit.dof);

    for (size_t b = 0; rc == 0 && b < req->n_batches; b++) {
        tc_pred_point_t *p = &d->points[b];
        p->batch = (unsigned)req->batches[b];
        /* Each lookup is one measured conv; a layer used `multiplicity`
         * times costs that many calls of the same measured time. */
        double conv = 0, conv_var = 0;
        size_t k = b * per;
        for (size_t j = 0; j < tc_model_conv_count(m); j++) {
            const tc_conv_usage_t *u = tc_model_conv(m, j);
            Traincast__V1__Direction dirs[TC_CONV_STEP_MAX_DIRS];
            size_t nd = tc_conv_step_directions(u->first_layer, dirs);
            double ms[TC_CONV_STEP_MAX_DIRS] = {0};
            for (size_t dir = 0; dir < nd; dir++, k++) {
                const tc_conv_lookup_t *l = &d->lookups[k];
                ms[dir] = l->median_ms;
                double sd = isfinite(l->stddev_ms) ? l->stddev_ms : 0;
                conv_var += (u->multiplicity * sd) * (u->multiplicity * sd);
            }
            conv += tc_conv_step_ms(u->first_layer, u->multiplicity, ms);
        }
        tc_features_t f;
        tc_model_features(m, p->batch, &f);
        double nonconv = NAN, var = NAN;
        rc = tc_fit_predict(&d->fit, &f, conv, &nonconv, &var);
        if (rc < 0)
            break;
        p->conv_ms = conv;
        p->conv_sd_ms = sqrt(conv_var);
        /* Nothing takes negative time: a fit extrapolated below zero is
         * shown at zero and flagged, never passed off as a prediction. */
        p->clamped = nonconv < 0;
        if (p->clamped)
            nonconv = 0;
        p->nonconv_ms = nonconv;
        p->total_ms = conv + nonconv;
        p->sd_ms = sqrt(var + conv_var);
        p->lo_ms = fmax(p->total_ms - t * p->sd_ms, 0);
        p->hi_ms = p->total_ms + t * p->sd_ms;
        p->images_per_s = p->total_ms > 0 ? p->batch / (p->total_ms / 1000.0) : NAN;
        double iters = ceil(req->dataset_size / p->batch);
        p->epoch_s = iters * p->total_ms / 1000.0;
        p->cost = isfinite(d->price) ? p->epoch_s / 3600.0 * d->price : NAN;
        p->peak_bytes = tc_memory_predict(&d->memory, &f);
        p->fits = tc_memory_fits(&d->memory, mem, n_mem, tc_model_id(m), p->batch, p->peak_bytes);
    }
    free(mem);
    return rc;
}

void tc_pred_device_free(tc_pred_device_t *d)
{
    free(d->lookups);
    free(d->points);
    d->lookups = NULL;
    d->points = NULL;
    d->n_lookups = d->n_points = 0;
}
