/* Named regression features and the design matrix of a device group. */
#include "fit.h"

#include "tc_error.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const s_default_candidates[] = {
    "total.one",      /* constant per-iteration overhead: loss, optimizer launch, framework */
    /* kernel.layers, the same without the views, was tried in its place
     * (docs/fitting.md, "Views are not layers"). */
    "nonconv.layers", /* per-layer dispatch and launch overhead */
    "conv.layers",    /* framework work around each conv call */
    "bn.elems",       /* batch norm: several passes over its tensors, fwd and bwd */
    /* The other memory-bound classes each apart (bytes moved): the accuracy
     * study (docs/fitting.md) found them better apart than summed in
     * memory.elems, on both CPU devices. */
    "act.elems",      /* activations */
    "pool.elems",     /* pooling */
    "eltwise.elems",  /* element-wise: residual adds, multiplies */
    "concat.elems",   /* concatenation */
    "total.params",   /* optimizer step and gradient zeroing over every parameter */
    "gemm.flops",     /* the classifier's matrix products */
    "conv.ms",        /* a factor on the conv benchmarks' sum */
    /* Transformer blocks (zero for CNNs without them, so never chosen there). */
    "norm.elems",     /* layer norm: a mean and variance pass per token, fwd and bwd */
    "softmax.elems",  /* attention's softmax: max, exp-sum and scale passes per row */
    "copy.elems",     /* token reshapes that materialise a permuted or sliced tensor */
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
    if (!strcmp(name, "kernel.layers")) {
        /* A view (reshape, transpose, flatten) is a dispatcher call and an
         * autograd node, no kernel: it costs a fraction of a layer that runs one. */
        *out = f->total_layers - f->conv_layers - f->cls[TC_OPC_SHAPE].layers;
        return 0;
    }
    if (!strcmp(name, "memory.elems")) {
        /* norm, softmax and copy were parts of reduce and shape: the sum is
         * the same as before they were classes of their own. */
        static const tc_op_class_t classes[] = {
            TC_OPC_ACT,   TC_OPC_POOL,   TC_OPC_ELTWISE, TC_OPC_CONCAT, TC_OPC_DROPOUT,
            TC_OPC_SHAPE, TC_OPC_REDUCE, TC_OPC_OTHER,   TC_OPC_NORM,   TC_OPC_SOFTMAX,
            TC_OPC_COPY};
        double v = 0;
        for (size_t i = 0; i < sizeof classes / sizeof classes[0]; i++)
            v += f->cls[classes[i]].elems_in + f->cls[classes[i]].elems_out;
        *out = v;
        return 0;
    }
    int rc = tc_feature_value(f, name, out);
    if (rc < 0)
        return tc_err_context(rc, "fit feature (also nonconv.layers, kernel.layers, "
                                  "memory.elems, conv.ms)");
    return 0;
}

int tc_fit_feature_at(const tc_features_t *f, double conv_ms, const char *name, double *out)
{
    if (!strcmp(name, "conv.ms")) {
        *out = conv_ms;
        return 0;
    }
    return tc_fit_feature_value(f, name, out);
}

static const char *const s_holdout_names[TC_FIT_HOLD_COUNT] = {"cnn", "family", "batch"};

const char *tc_fit_holdout_name(tc_fit_holdout_t h)
{
    return (unsigned)h < TC_FIT_HOLD_COUNT ? s_holdout_names[h] : "cnn";
}

const char *tc_fit_holdout_unit(tc_fit_holdout_t h, bool plural)
{
    static const char *const one[] = {"CNN", "family", "batch-size"};
    static const char *const many[] = {"CNNs", "families", "batch sizes"};
    unsigned k = (unsigned)h < TC_FIT_HOLD_COUNT ? (unsigned)h : 0;
    return plural ? many[k] : one[k];
}

int tc_fit_holdout_parse(const char *s, tc_fit_holdout_t *out)
{
    for (int i = 0; i < TC_FIT_HOLD_COUNT; i++) {
        if (s && !strcmp(s, s_holdout_names[i])) {
            *out = (tc_fit_holdout_t)i;
            return 0;
        }
    }
    return tc_fail(TC_EINVAL, "unknown hold-out '%s' (use cnn, family or batch)", s ? s : "");
}

/* torchvision's CNNs by architecture, not by name: relatives that share
 * their building block are one family, so that holding out a family holds
 * out every CNN whose structure would teach the model about it. Name
 * prefixes, longest first where one prefix starts another. */
static const struct {
    const char *prefix, *family;
} s_families[] = {
    /* residual bottlenecks: ResNeXt groups them, wide ResNets widen them */
    {"wide_resnet", "resnet"},
    {"resnext", "resnet"},
    {"resnet", "resnet"},
    /* plain stacks of 3x3 convs, with batch norm or without */
    {"vgg", "vgg"},
    /* inverted residuals (MBConv), with squeeze-and-excitation or without */
    {"mobilenet", "mbconv"},
    {"mnasnet", "mbconv"},
    {"efficientnet", "mbconv"},
    /* RegNetY is RegNetX with squeeze-and-excitation */
    {"regnet", "regnet"},
    /* GoogLeNet is Inception v1 */
    {"googlenet", "inception"},
    {"inception", "inception"},
    {"shufflenet", "shufflenet"},
    {"squeezenet", "squeezenet"},
    {"densenet", "densenet"},
    {"convnext", "convnext"},
    {"alexnet", "alexnet"},
    {"vit_", "vit"},
    {"swin", "swin"},
    {"maxvit", "maxvit"},
};

const char *tc_fit_family(const char *cnn, char *buf, size_t size)
{
    const char *name = cnn ? cnn : "";
    const char *colon = strchr(name, ':');
    if (colon)
        name = colon + 1; /* torchvision:NAME */
    size_t len = strcspn(name, "@");
    for (size_t i = 0; i < sizeof s_families / sizeof s_families[0]; i++) {
        size_t pl = strlen(s_families[i].prefix);
        if (len >= pl && !strncmp(name, s_families[i].prefix, pl)) {
            snprintf(buf, size, "%s", s_families[i].family);
            return buf;
        }
    }
    snprintf(buf, size, "%.*s", (int)len, name);
    return buf;
}

int tc_fit_data_regroup(tc_fit_data_t *d, const tc_fit_group_t *g, tc_fit_holdout_t by)
{
    if (by == TC_FIT_HOLD_CNN)
        return 0;
    if (d->n != g->n_points)
        return tc_fail(TC_EINVAL, "regrouping: %zu rows for %zu points", d->n, g->n_points);
    char **names = calloc(d->n + 1, sizeof *names);
    size_t *idx = calloc(d->n + 1, sizeof *idx);
    size_t n_groups = 0;
    int rc = 0;
    if (!names || !idx)
        rc = tc_fail(TC_ENOMEM, "out of memory");
    for (size_t i = 0; rc == 0 && i < d->n; i++) {
        char name[TC_FIT_LABEL_LEN];
        if (by == TC_FIT_HOLD_FAMILY)
            tc_fit_family(g->points[i].cnn, name, sizeof name);
        else
            snprintf(name, sizeof name, "batch %u", g->points[i].batch);
        size_t c = 0;
        while (c < n_groups && strcmp(names[c], name) != 0)
            c++;
        if (c == n_groups && !(names[n_groups++] = strdup(name)))
            rc = tc_fail(TC_ENOMEM, "out of memory");
        idx[i] = c;
    }
    if (rc == 0) {
        for (size_t i = 0; i < d->n_cnns; i++)
            free(d->cnn_names[i]);
        free(d->cnn_names);
        free(d->cnn);
        d->cnn_names = names;
        d->cnn = idx;
        d->n_cnns = n_groups;
        d->grouped_by = by;
        return 0;
    }
    for (size_t i = 0; names && i < n_groups; i++)
        free(names[i]);
    free(names);
    free(idx);
    return rc;
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
        out->conv[i] = pt->conv_ms + (g->matmuls ? pt->matmul_ms : 0);
        for (size_t j = 0; j < p; j++)
            TC_TRY(tc_fit_feature_at(&pt->features, out->conv[i], features[j],
                                     &out->x[i * p + j]));
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
