/* Named regression features and the design matrix of a device group. */
#include "fit.h"

#include "tc_error.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const s_default_candidates[] = {
    "total.one",      /* constant per-iteration overhead: loss, optimizer launch, framework */
    "nonconv.layers", /* per-layer dispatch and launch overhead */
    "conv.layers",    /* framework work around each conv call */
    "bn.elems",       /* batch norm: several passes over its tensors, fwd and bwd */
    "memory.elems",   /* other memory-bound layers: bytes moved */
    "total.params",   /* optimizer step and gradient zeroing over every parameter */
    "gemm.flops",     /* the classifier's matrix products */
};

size_t tc_fit_default_candidates(const char *const **names)
{
    *names = s_default_candidates;
    return sizeof s_default_candidates / sizeof s_default_candidates[0];
}

int tc_fit_feature_value(const tc_features_t *f, const char *name, double *out)
{
    if (!strcmp(name, "nonconv.layers")) {
        *out = f->total_layers - f->conv_layers;
        return 0;
    }
    if (!strcmp(name, "memory.elems")) {
        static const tc_op_class_t classes[] = {TC_OPC_ACT,     TC_OPC_POOL,   TC_OPC_ELTWISE,
                                                TC_OPC_CONCAT,  TC_OPC_DROPOUT, TC_OPC_SHAPE,
                                                TC_OPC_REDUCE,  TC_OPC_OTHER};
        double v = 0;
        for (size_t i = 0; i < sizeof classes / sizeof classes[0]; i++)
            v += f->cls[classes[i]].elems_in + f->cls[classes[i]].elems_out;
        *out = v;
        return 0;
    }
    int rc = tc_feature_value(f, name, out);
    if (rc < 0)
        return tc_err_context(rc, "fit feature (also nonconv.layers, memory.elems)");
    return 0;
}

void tc_fit_group_clear(tc_fit_group_t *g)
{
    if (!g)
        return;
    for (size_t i = 0; i < g->n_points; i++) {
        free(g->points[i].model_id);
        free(g->points[i].cnn);
    }
    for (size_t i = 0; i < g->n_excluded; i++) {
        free(g->excluded[i].model_id);
        free(g->excluded[i].cnn);
    }
    free(g->points);
    free(g->excluded);
    memset(g, 0, sizeof *g);
}

void tc_fit_groups_free(tc_fit_group_t **groups_p, size_t n)
{
    if (!groups_p || !*groups_p)
        return;
    for (size_t i = 0; i < n; i++)
        tc_fit_group_clear(&(*groups_p)[i]);
    free(*groups_p);
    *groups_p = NULL;
}

void tc_fit_data_free(tc_fit_data_t *d)
{
    if (!d)
        return;
    for (size_t i = 0; i < d->n_cnns; i++)
        free(d->cnn_names[i]);
    free(d->cnn_names);
    free(d->x);
    free(d->measured);
    free(d->conv);
    free(d->cnn);
    memset(d, 0, sizeof *d);
}

int tc_fit_data_build(const tc_fit_group_t *g, const char *const *features, size_t p,
                      tc_fit_data_t *out)
{
    memset(out, 0, sizeof *out);
    int rc = 0;
    if (p > TC_FIT_MAX_FEATURES)
        return tc_fail(TC_EINVAL, "%zu features requested; a fit takes at most %d", p,
                       TC_FIT_MAX_FEATURES);
    size_t n = g->n_points;
    out->n = n;
    out->p = p;
    for (size_t j = 0; j < p; j++) {
        if (strlen(features[j]) >= TC_FIT_NAME_LEN)
            TC_FAIL_GOTO(TC_EINVAL, "feature name '%s' is too long", features[j]);
        for (size_t k = 0; k < j; k++) {
            if (!strcmp(features[k], features[j]))
                TC_FAIL_GOTO(TC_EINVAL, "feature '%s' is listed twice", features[j]);
        }
        snprintf(out->names[j], TC_FIT_NAME_LEN, "%s", features[j]);
    }
    out->x = calloc(n * p + 1, sizeof *out->x);
    out->measured = calloc(n + 1, sizeof *out->measured);
    out->conv = calloc(n + 1, sizeof *out->conv);
    out->cnn = calloc(n + 1, sizeof *out->cnn);
    out->cnn_names = calloc(n + 1, sizeof *out->cnn_names);
    if (!out->x || !out->measured || !out->conv || !out->cnn || !out->cnn_names)
        TC_FAIL_GOTO(TC_ENOMEM, "out of memory for %zu points", n);
    for (size_t i = 0; i < n; i++) {
        const tc_fit_point_t *pt = &g->points[i];
        if (!(pt->measured_ms > 0) || !isfinite(pt->measured_ms) || !isfinite(pt->conv_ms))
            TC_FAIL_GOTO(TC_EINVAL, "%s at batch %u: measured %g ms and conv sum %g ms must be "
                                    "finite, the measurement positive",
                         pt->model_id, pt->batch, pt->measured_ms, pt->conv_ms);
        out->measured[i] = pt->measured_ms;
        out->conv[i] = pt->conv_ms;
        for (size_t j = 0; j < p; j++)
            TC_TRY(tc_fit_feature_value(&pt->features, features[j], &out->x[i * p + j]));
        size_t c = 0;
        while (c < out->n_cnns && strcmp(out->cnn_names[c], pt->cnn) != 0)
            c++;
        if (c == out->n_cnns) {
            if (!(out->cnn_names[c] = strdup(pt->cnn)))
                TC_FAIL_GOTO(TC_ENOMEM, "out of memory");
            out->n_cnns++;
        }
        out->cnn[i] = c;
    }
    return 0;
err:
    tc_fit_data_free(out);
    return rc;
}
