#include "tc_features.h"

#include "tc_error.h"

#include <string.h>

static const char *s_names[] = {
#define TC_OPC_NAME(e, name) name,
    TC_OP_CLASS_MAP(TC_OPC_NAME)
#undef TC_OPC_NAME
};

const char *tc_op_class_name(tc_op_class_t c)
{
    return (unsigned)c < TC_OPC_COUNT ? s_names[c] : "other";
}

int tc_op_class_parse(const char *name)
{
    for (int i = 0; i < TC_OPC_COUNT; i++) {
        if (!strcmp(name, s_names[i]))
            return i;
    }
    return -1;
}

void tc_features_from_layers(const tc_layer_summary_t *layers, size_t n, unsigned batch,
                             tc_features_t *out)
{
    memset(out, 0, sizeof *out);
    out->batch = batch;
    double b = batch;
    for (size_t i = 0; i < n; i++) {
        const tc_layer_summary_t *l = &layers[i];
        tc_op_class_t c = (unsigned)l->op_class < TC_OPC_COUNT ? l->op_class : TC_OPC_OTHER;
        out->total_layers += 1;
        out->total_params += (double)l->params;
        if (c == TC_OPC_CONV) {
            out->conv_layers += 1;
            out->conv_flops += l->flops * b;
        }
        tc_class_features_t *f = &out->cls[c];
        f->layers += 1;
        f->elems_in += (double)l->elems_in * b;
        f->elems_out += (double)l->elems_out * b;
        f->params += (double)l->params;
        f->flops += l->flops * b;
    }
}

int tc_feature_value(const tc_features_t *f, const char *name, double *out)
{
    const char *dot = strchr(name, '.');
    if (!dot)
        return tc_fail(TC_EINVAL, "feature '%s' must look like CLASS.QUANTITY", name);
    size_t len = (size_t)(dot - name);
    const char *q = dot + 1;
    if (len == 5 && !strncmp(name, "total", 5)) {
        if (!strcmp(q, "params"))
            *out = f->total_params;
        else if (!strcmp(q, "layers"))
            *out = f->total_layers;
        else if (!strcmp(q, "batch"))
            *out = f->batch;
        else if (!strcmp(q, "one"))
            *out = 1.0;
        else
            return tc_fail(TC_EINVAL, "unknown feature '%s' (total.params, total.layers, "
                                      "total.batch, total.one)",
                           name);
        return 0;
    }
    for (int c = 0; c < TC_OPC_COUNT; c++) {
        if (strlen(s_names[c]) != len || strncmp(name, s_names[c], len) != 0)
            continue;
        const tc_class_features_t *cf = &f->cls[c];
        if (!strcmp(q, "layers"))
            *out = cf->layers;
        else if (!strcmp(q, "elems"))
            *out = cf->elems_in + cf->elems_out;
        else if (!strcmp(q, "elems_in"))
            *out = cf->elems_in;
        else if (!strcmp(q, "elems_out"))
            *out = cf->elems_out;
        else if (!strcmp(q, "params"))
            *out = cf->params;
        else if (!strcmp(q, "flops"))
            *out = cf->flops;
        else
            return tc_fail(TC_EINVAL, "unknown quantity in feature '%s' (layers, elems, elems_in, "
                                      "elems_out, params, flops)",
                           name);
        return 0;
    }
    return tc_fail(TC_EINVAL, "unknown op class in feature '%s'", name);
}
