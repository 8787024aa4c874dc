/* Shape rules for the layers with arithmetic: Conv (groups, dilation, pads,
 * auto_pad), pooling (ceil_mode as PyTorch computes it), normalization,
 * reductions (Gemm and MatMul: tc_shape_matmul.c). They also set MACs and
 * FLOPs per sample. */
#include "tc_shape_rules.h"

#include "tc_error.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#define S_SPATIAL_MAX (TC_MODEL_MAX_RANK - 2)

/* Window attributes shared by Conv and the pooling ops, for `ns` spatial
 * axes. Pads come out resolved (auto_pad applied), begin and end. */
typedef struct {
    int ns;
    int64_t in[S_SPATIAL_MAX], kernel[S_SPATIAL_MAX], stride[S_SPATIAL_MAX];
    int64_t dilation[S_SPATIAL_MAX], pad_begin[S_SPATIAL_MAX], pad_end[S_SPATIAL_MAX];
    int64_t out[S_SPATIAL_MAX];
} s_window_t;

static int s_ints_or(const tc_gnode_t *n, const char *name, int64_t def, int ns, int64_t *out)
{
    int count;
    int rc = tc_attr_ints(n, name, out, S_SPATIAL_MAX, &count);
    if (rc < 0)
        return rc;
    if (count < 0) {
        for (int k = 0; k < ns; k++)
            out[k] = def;
        return 0;
    }
    if (count != ns)
        return tc_node_fail(n, TC_EPARSE, "attribute '%s' has %d values for %d spatial axes",
                            name, count, ns);
    for (int k = 0; k < ns; k++)
        if (out[k] < 1 || out[k] > TC_GRAPH_MAX_DIM)
            return tc_node_fail(n, TC_EPARSE, "attribute '%s' value %" PRId64 " out of range",
                                name, out[k]);
    return 0;
}

/* Fills w->out. `ceil` applies PyTorch's rule: the last window must start
 * inside the input or its left padding. */
static int s_window(const tc_gnode_t *n, s_window_t *w, bool ceil)
{
    char auto_pad[32];
    int64_t pads[2 * S_SPATIAL_MAX];
    int count;
    int rc = tc_attr_str(n, "auto_pad", "NOTSET", auto_pad, sizeof auto_pad);
    if (rc == 0)
        rc = s_ints_or(n, "strides", 1, w->ns, w->stride);
    if (rc == 0)
        rc = s_ints_or(n, "dilations", 1, w->ns, w->dilation);
    if (rc == 0)
        rc = tc_attr_ints(n, "pads", pads, 2 * S_SPATIAL_MAX, &count);
    if (rc < 0)
        return rc;
    if (count >= 0 && count != 2 * w->ns)
        return tc_node_fail(n, TC_EPARSE, "'pads' has %d values for %d spatial axes", count,
                            w->ns);
    for (int k = 0; k < w->ns; k++) {
        int64_t in = w->in[k], s = w->stride[k];
        int64_t eff = (w->kernel[k] - 1) * w->dilation[k] + 1; /* both < 2^31 */
        int64_t pb = count > 0 ? pads[k] : 0, pe = count > 0 ? pads[k + w->ns] : 0;
        int64_t out;
        if (!strcmp(auto_pad, "SAME_UPPER") || !strcmp(auto_pad, "SAME_LOWER")) {
            out = (in + s - 1) / s;
            int64_t total = (out - 1) * s + eff - in;
            total = total > 0 ? total : 0;
            pb = !strcmp(auto_pad, "SAME_UPPER") ? total / 2 : total - total / 2;
            pe = total - pb;
        } else if (!strcmp(auto_pad, "VALID")) {
            pb = pe = 0;
            if (in < eff)
                return tc_node_fail(n, TC_EPARSE, "the window (%" PRId64
                                                  ") is larger than the input (%" PRId64 ")",
                                    eff, in);
            out = (in - eff) / s + 1;
        } else if (!strcmp(auto_pad, "NOTSET")) {
            if (pb < 0 || pe < 0 || pb > TC_GRAPH_MAX_DIM || pe > TC_GRAPH_MAX_DIM)
                return tc_node_fail(n, TC_EPARSE, "pads out of range");
            int64_t span = in + pb + pe - eff;
            if (span < 0)
                return tc_node_fail(n, TC_EPARSE,
                                    "the window (%" PRId64 ") does not fit the padded input (%" PRId64
                                    ")",
                                    eff, in + pb + pe);
            out = (ceil ? (span + s - 1) / s : span / s) + 1;
            if (ceil && (out - 1) * s >= in + pb)
                out--;
        } else {
            return tc_node_fail(n, TC_EPARSE, "unknown auto_pad '%s'", auto_pad);
        }
        w->pad_begin[k] = pb;
        w->pad_end[k] = pe;
        w->out[k] = out;
    }
    return 0;
}

Traincast__V1__DType tc_dtype_of(int32_t t)
{
    switch (t) {
    case ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT16:
        return TRAINCAST__V1__DTYPE__DTYPE_FP16;
    case ONNX__TENSOR_PROTO__DATA_TYPE__BFLOAT16:
        return TRAINCAST__V1__DTYPE__DTYPE_BF16;
    default:
        return TRAINCAST__V1__DTYPE__DTYPE_FP32;
    }
}

int tc_infer_conv(tc_graph_t *g, tc_gnode_t *n, const tc_op_rule_t *r)
{
    tc_value_t *x = NULL, *wt = NULL;
    int64_t group;
    int rc = tc_node_need(g, n, 0, &x);
    if (rc == 0)
        rc = tc_node_need(g, n, 1, &wt);
    if (rc == 0)
        rc = tc_attr_int(n, "group", 1, &group);
    if (rc < 0)
        return rc;
    if (x->rank != 4 || x->batch_axis != 0)
        return tc_node_fail(n, TC_EUNSUPPORTED, "only 2-D convolutions of [N, C, H, W] inputs "
                                                "are supported (input rank %d)",
                            x->rank);
    if (wt->rank != 4 || wt->batch_axis >= 0)
        return tc_node_fail(n, TC_EPARSE, "the weight must be [K, C/groups, R, S] (rank %d)",
                            wt->rank);
    int64_t c = x->dims[1], k = wt->dims[0];
    if (group < 1 || group > c || c % group || k % group || wt->dims[1] * group != c)
        return tc_node_fail(n, TC_EPARSE, "weight [%" PRId64 ", %" PRId64 ", ...] with group %" PRId64
                                          " does not fit %" PRId64 " input channels",
                            k, wt->dims[1], group, c);
    s_window_t w = {.ns = 2};
    int64_t kernel[S_SPATIAL_MAX];
    rc = s_ints_or(n, "kernel_shape", 0, 2, kernel);
    if (rc < 0)
        return rc;
    for (int a = 0; a < 2; a++) {
        w.in[a] = x->dims[2 + a];
        w.kernel[a] = wt->dims[2 + a];
        if (tc_attr(n, "kernel_shape") && kernel[a] != w.kernel[a])
            return tc_node_fail(n, TC_EPARSE, "kernel_shape disagrees with the weight");
        if (w.kernel[a] < 1)
            return tc_node_fail(n, TC_EPARSE, "empty kernel");
    }
    rc = s_window(n, &w, false);
    if (rc < 0)
        return rc;
    const tc_value_t *bias = tc_node_in(g, n, 2);
    if (bias && (bias->rank != 1 || bias->dims[0] != k))
        return tc_node_fail(n, TC_EPARSE, "the bias must be [%" PRId64 "]", k);
    int64_t dims[4] = {1, k, w.out[0], w.out[1]};
    rc = tc_set_shape(g, n, 0, 4, dims, 0);
    if (rc < 0)
        return rc;
    tc_set_type(g, n, 0, x->elem_type);
    /* The benchmarked config. Asymmetric padding is a pad of the input plus
     * a symmetric conv, as frameworks run it. */
    tc_conv_config_t cc = tc_conv_config_default();
    cc.c = (uint32_t)c;
    cc.k = (uint32_t)k;
    cc.r = (uint32_t)w.kernel[0];
    cc.s = (uint32_t)w.kernel[1];
    int64_t ph = w.pad_begin[0] < w.pad_end[0] ? w.pad_begin[0] : w.pad_end[0];
    int64_t pw = w.pad_begin[1] < w.pad_end[1] ? w.pad_begin[1] : w.pad_end[1];
    int64_t h = w.in[0] + (w.pad_begin[0] + w.pad_end[0] - 2 * ph);
    int64_t wd = w.in[1] + (w.pad_begin[1] + w.pad_end[1] - 2 * pw);
    if (h > UINT32_MAX || wd > UINT32_MAX)
        return tc_node_fail(n, TC_ELIMIT, "input too large for a conv config");
    cc.h = (uint32_t)h;
    cc.w = (uint32_t)wd;
    cc.pad_h = (uint32_t)ph;
    cc.pad_w = (uint32_t)pw;
    cc.stride_h = (uint32_t)w.stride[0];
    cc.stride_w = (uint32_t)w.stride[1];
    cc.dilation_h = (uint32_t)w.dilation[0];
    cc.dilation_w = (uint32_t)w.dilation[1];
    cc.groups = (uint32_t)group;
    cc.dtype = tc_dtype_of(x->elem_type);
    cc.layout = TRAINCAST__V1__LAYOUT__LAYOUT_NCHW;
    cc.bias = bias != NULL;
    n->info.is_conv = true;
    n->info.conv = cc;
    n->info.first_layer = !x->grad;
    double out_elems = (double)k * (double)w.out[0] * (double)w.out[1];
    n->macs = out_elems * (double)(c / group) * (double)w.kernel[0] * (double)w.kernel[1];
    n->info.flops = 2.0 * n->macs + (bias ? out_elems : 0.0);
    return 0;
}

int tc_infer_pool(tc_graph_t *g, tc_gnode_t *n, const tc_op_rule_t *r)
{
    tc_value_t *x = NULL;
    int64_t ceil_mode = 0, cip = 0;
    int rc = tc_node_need(g, n, 0, &x);
    if (rc == 0)
        rc = tc_attr_int(n, "ceil_mode", 0, &ceil_mode);
    if (rc == 0)
        rc = tc_attr_int(n, "count_include_pad", 0, &cip);
    if (rc < 0)
        return rc;
    if (x->rank < 3 || x->batch_axis != 0)
        return tc_node_fail(n, TC_EUNSUPPORTED, "pooling needs an [N, C, spatial...] input");
    if ((ceil_mode != 0 && ceil_mode != 1) || (cip != 0 && cip != 1))
        return tc_node_fail(n, TC_EPARSE, "ceil_mode and count_include_pad must be 0 or 1");
    s_window_t w = {.ns = x->rank - 2};
    int count;
    rc = tc_attr_ints(n, "kernel_shape", w.kernel, S_SPATIAL_MAX, &count);
    if (rc < 0)
        return rc;
    if (count != w.ns)
        return tc_node_fail(n, TC_EPARSE, "kernel_shape has %d values for %d spatial axes",
                            count, w.ns);
    double area = 1;
    for (int a = 0; a < w.ns; a++) {
        if (w.kernel[a] < 1 || w.kernel[a] > TC_GRAPH_MAX_DIM)
            return tc_node_fail(n, TC_EPARSE, "kernel size %" PRId64 " out of range",
                                w.kernel[a]);
        w.in[a] = x->dims[2 + a];
        area *= (double)w.kernel[a];
    }
    rc = s_window(n, &w, ceil_mode != 0);
    if (rc < 0)
        return rc;
    int64_t dims[TC_MODEL_MAX_RANK] = {1, x->dims[1]};
    for (int a = 0; a < w.ns; a++)
        dims[2 + a] = w.out[a];
    for (int k = 0; k < n->n_out; k++) {
        rc = tc_set_shape(g, n, k, x->rank, dims, 0);
        if (rc < 0)
            return rc;
        tc_set_type(g, n, k, k ? ONNX__TENSOR_PROTO__DATA_TYPE__INT64 : x->elem_type);
    }
    n->info.flops = area * (double)tc_value_elems(tc_node_out(g, n, 0) ? tc_node_out(g, n, 0) : x);
    return 0;
}

int tc_infer_global_pool(tc_graph_t *g, tc_gnode_t *n, const tc_op_rule_t *r)
{
    tc_value_t *x = NULL;
    int rc = tc_node_need(g, n, 0, &x);
    if (rc < 0)
        return rc;
    if (x->rank < 3 || x->batch_axis != 0)
        return tc_node_fail(n, TC_EUNSUPPORTED, "pooling needs an [N, C, spatial...] input");
    int64_t dims[TC_MODEL_MAX_RANK];
    for (int k = 0; k < x->rank; k++)
        dims[k] = k < 2 ? x->dims[k] : 1;
    rc = tc_set_shape(g, n, 0, x->rank, dims, 0);
    tc_set_type(g, n, 0, x->elem_type);
    n->info.flops = (double)tc_value_elems(x);
    return rc;
}

/* org.pytorch.aten adaptive_{avg,max}_pool2d(x, output_size). */
int tc_infer_adaptive_pool(tc_graph_t *g, tc_gnode_t *n, const tc_op_rule_t *r)
{
    tc_value_t *x = NULL;
    int64_t size[2];
    int count, rc = tc_node_need(g, n, 0, &x);
    if (rc == 0)
        rc = tc_node_ints(g, n, 1, size, 2, &count);
    if (rc < 0)
        return rc;
    if (x->rank != 4 || x->batch_axis != 0)
        return tc_node_fail(n, TC_EUNSUPPORTED, "needs an [N, C, H, W] input");
    if (count == 1)
        size[1] = size[0];
    else if (count != 2)
        return tc_node_fail(n, TC_EPARSE, "output_size has %d values", count);
    int64_t dims[4] = {1, x->dims[1], size[0], size[1]};
    /* PyTorch's bins: output i covers [floor(i*in/out), ceil((i+1)*in/out)),
     * so an output larger than the input repeats elements (alexnet and vgg
     * at small input sizes). Reads per axis: the sum of the bin sizes. */
    double reads = (double)x->dims[1];
    for (int a = 0; a < 2; a++) {
        int64_t in = x->dims[2 + a], out = size[a];
        if (out < 1 || out > TC_GRAPH_MAX_DIM / 64 || (double)out * (double)in > 1e12)
            return tc_node_fail(n, TC_EPARSE, "output size %" PRId64 " for an input of %" PRId64,
                                out, in);
        int64_t sum = 0;
        for (int64_t i = 0; i < out; i++)
            sum += ((i + 1) * in + out - 1) / out - (i * in) / out;
        reads *= (double)sum;
    }
    for (int k = 0; k < n->n_out; k++) {
        rc = tc_set_shape(g, n, k, 4, dims, 0);
        if (rc < 0)
            return rc;
        tc_set_type(g, n, k, k ? ONNX__TENSOR_PROTO__DATA_TYPE__INT64 : x->elem_type);
    }
    n->info.flops = reads;
    return 0;
}

/* BatchNormalization, InstanceNormalization, GroupNormalization: Y like X;
 * further outputs (running or saved statistics) are [C]. */
int tc_infer_batchnorm(tc_graph_t *g, tc_gnode_t *n, const tc_op_rule_t *r)
{
    tc_value_t *x = NULL;
    int rc = tc_node_need(g, n, 0, &x);
    if (rc < 0)
        return rc;
    if (x->rank < 2 || x->batch_axis != 0)
        return tc_node_fail(n, TC_EUNSUPPORTED, "normalization needs an [N, C, ...] input");
    int64_t c = x->dims[1];
    bool per_channel = strcmp(n->op, "GroupNormalization") != 0;
    for (int k = 1; k < n->n_in && per_channel; k++) {
        const tc_value_t *p = tc_node_in(g, n, k);
        if (p && (p->rank != 1 || p->dims[0] != c))
            return tc_node_fail(n, TC_EPARSE, "input %d must be [%" PRId64 "]", k, c);
    }
    rc = tc_set_like(g, n, 0, x);
    for (int k = 1; k < n->n_out && rc == 0; k++) {
        rc = tc_set_shape(g, n, k, 1, &c, -1);
        tc_set_type(g, n, k, x->elem_type);
    }
    return rc;
}

/* LayerNormalization: Y like X; Mean and InvStdDev keep the leading axes. */
int tc_infer_layernorm(tc_graph_t *g, tc_gnode_t *n, const tc_op_rule_t *r)
{
    tc_value_t *x = NULL;
    int64_t axis64;
    int axis, rc = tc_node_need(g, n, 0, &x);
    if (rc == 0)
        rc = tc_attr_int(n, "axis", -1, &axis64);
    if (rc == 0)
        rc = tc_axis(n, axis64, x->rank, &axis);
    if (rc < 0)
        return rc;
    if (x->batch_axis >= axis)
        return tc_node_fail(n, TC_EUNSUPPORTED, "normalizes over the batch axis");
    rc = tc_set_like(g, n, 0, x);
    int64_t dims[TC_MODEL_MAX_RANK];
    for (int k = 0; k < x->rank; k++)
        dims[k] = k < axis ? x->dims[k] : 1;
    for (int k = 1; k < n->n_out && rc == 0; k++) {
        rc = tc_set_shape(g, n, k, x->rank, dims, x->batch_axis);
        tc_set_type(g, n, k, ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT);
    }
    return rc;
}

/* ReduceMean and friends: axes from the attribute or input 1. */
int tc_infer_reduce(tc_graph_t *g, tc_gnode_t *n, const tc_op_rule_t *r)
{
    tc_value_t *x = NULL;
    int64_t axes[TC_MODEL_MAX_RANK], keep, noop;
    int count, rc = tc_node_need(g, n, 0, &x);
    if (rc == 0)
        rc = tc_attr_int(n, "keepdims", 1, &keep);
    if (rc == 0)
        rc = tc_attr_int(n, "noop_with_empty_axes", 0, &noop);
    if (rc == 0)
        rc = tc_attr_ints(n, "axes", axes, TC_MODEL_MAX_RANK, &count);
    if (rc == 0 && count < 0 && tc_node_in(g, n, 1))
        rc = tc_node_ints(g, n, 1, axes, TC_MODEL_MAX_RANK, &count);
    if (rc < 0)
        return rc;
    bool red[TC_MODEL_MAX_RANK] = {false};
    if (count <= 0) {
        for (int k = 0; k < x->rank; k++)
            red[k] = !noop;
    }
    for (int k = 0; k < count; k++) {
        int a;
        rc = tc_axis(n, axes[k], x->rank, &a);
        if (rc < 0)
            return rc;
        red[a] = true;
    }
    int64_t dims[TC_MODEL_MAX_RANK];
    int rank = 0, batch = -1;
    for (int k = 0; k < x->rank; k++) {
        if (red[k] && !keep)
            continue;
        if (k == x->batch_axis && !red[k])
            batch = rank;
        dims[rank++] = red[k] ? 1 : x->dims[k];
    }
    rc = tc_set_shape(g, n, 0, rank, dims, batch);
    tc_set_type(g, n, 0, x->elem_type);
    n->info.flops = (double)tc_value_elems(x);
    return rc;
}

/* ArgMax, ArgMin: one axis. */
int tc_infer_argreduce(tc_graph_t *g, tc_gnode_t *n, const tc_op_rule_t *r)
{
    tc_value_t *x = NULL;
    int64_t axis64, keep;
    int axis, rc = tc_node_need(g, n, 0, &x);
    if (rc == 0)
        rc = tc_attr_int(n, "axis", 0, &axis64);
    if (rc == 0)
        rc = tc_attr_int(n, "keepdims", 1, &keep);
    if (rc == 0)
        rc = tc_axis(n, axis64, x->rank, &axis);
    if (rc < 0)
        return rc;
    int64_t dims[TC_MODEL_MAX_RANK];
    int rank = 0, batch = -1;
    for (int k = 0; k < x->rank; k++) {
        if (k == axis && !keep)
            continue;
        if (k == x->batch_axis && k != axis)
            batch = rank;
        dims[rank++] = k == axis ? 1 : x->dims[k];
    }
    rc = tc_set_shape(g, n, 0, rank, dims, batch);
    tc_set_type(g, n, 0, ONNX__TENSOR_PROTO__DATA_TYPE__INT64);
    n->info.flops = (double)tc_value_elems(x);
    return rc;
}
