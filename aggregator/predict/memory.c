#include "memory.h"

#include "fit.h"
#include "tc_error.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

double tc_memory_activations(const tc_features_t *f)
{
    double act = 0;
    for (int c = 0; c < TC_OPC_COUNT; c++)
        act += f->cls[c].elems_out;
    return act;
}

static void s_row(const tc_features_t *f, double *x)
{
    x[0] = 1.0;
    x[1] = f->total_params;
    x[2] = tc_memory_activations(f);
}

double tc_memory_predict(const tc_memory_model_t *m, const tc_features_t *f)
{
    if (!m->valid)
        return NAN;
    double x[3];
    s_row(f, x);
    return m->coef[0] * x[0] + m->coef[1] * x[1] + m->coef[2] * x[2];
}

int tc_memory_fit(const tc_mem_point_t *points, size_t n, double capacity,
                  tc_memory_model_t *out)
{
    memset(out, 0, sizeof *out);
    out->capacity = capacity;
    out->usable = capacity;
    size_t ok = 0;
    for (size_t i = 0; i < n; i++)
        ok += !points[i].oom && isfinite(points[i].peak_bytes) && points[i].peak_bytes > 0;
    if (ok < 4)
        return 0;
    double *x = calloc(ok * 3, sizeof *x), *y = calloc(ok, sizeof *y), *w = calloc(ok, sizeof *w);
    if (!x || !y || !w) {
        free(x);
        free(y);
        free(w);
        return tc_fail(TC_ENOMEM, "out of memory");
    }
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        const tc_mem_point_t *p = &points[i];
        if (p->oom || !isfinite(p->peak_bytes) || p->peak_bytes <= 0)
            continue;
        s_row(&p->features, &x[3 * k]);
        y[k] = p->peak_bytes;
        w[k] = 1.0 / (p->peak_bytes * p->peak_bytes); /* relative error */
        k++;
    }
    tc_fit_solution_t sol;
    int rc = tc_fit_linear(TC_FIT_NNLS, x, y, w, ok, 3, &sol);
    if (rc == 0) {
        memcpy(out->coef, sol.coef, sizeof out->coef);
        out->valid = true;
        out->n_points = ok;
        for (size_t i = 0; i < ok; i++) {
            double pred = out->coef[0] + out->coef[1] * x[3 * i + 1] + out->coef[2] * x[3 * i + 2];
            out->max_rel_err = fmax(out->max_rel_err, fabs(pred - y[i]) / y[i]);
        }
        for (size_t i = 0; i < n; i++) {
            if (!points[i].oom)
                continue;
            double pred = tc_memory_predict(out, &points[i].features);
            if (isfinite(pred) && (out->usable <= 0 || pred * 0.99 < out->usable))
                out->usable = pred * 0.99;
        }
    } else if (rc == TC_EINVAL) {
        /* Too little variety to separate the terms: no memory model. */
        rc = 0;
    }
    free(x);
    free(y);
    free(w);
    return rc;
}

int tc_memory_fits(const tc_memory_model_t *m, const tc_mem_point_t *points, size_t n,
                   const char *model_id, unsigned batch, double predicted)
{
    int evidence = -1;
    for (size_t i = 0; i < n; i++) {
        const tc_mem_point_t *p = &points[i];
        if (strcmp(p->model_id, model_id) != 0)
            continue;
        if (p->oom && p->batch <= batch)
            return 0;
        if (!p->oom && p->batch >= batch)
            evidence = 1;
    }
    if (evidence == 1)
        return 1;
    if (!isfinite(predicted) || m->usable <= 0)
        return -1;
    return predicted <= m->usable ? 1 : 0;
}
