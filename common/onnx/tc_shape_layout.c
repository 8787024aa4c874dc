/* Which data-movement nodes copy, as PyTorch runs them (tc_graph_layout).
 *
 * ONNX has no notion of a view: PyTorch's transpose, permute, a slice of a
 * chunk, a select, expand, squeeze and a reshape that the strides allow are
 * views (no data moves), while a reshape or view after `.contiguous()` of a
 * permuted or sliced tensor, index_select, pad and repeat copy. The exported
 * graph shows the same ops either way, so this pass follows the strides
 * PyTorch would give every value and marks the nodes that move data as class
 * `copy`:
 *
 *   - a Reshape or Flatten whose input's strides cannot be viewed in the new
 *     shape (PyTorch's `computeStride`, aten/src/ATen/TensorUtils.cpp): the
 *     `.contiguous().view()` and `.reshape()` of a permuted or sliced tensor;
 *   - a Gather with an index tensor (index_select; a scalar index is a
 *     select, a view), Pad (F.pad; not the Pad the exporter writes before a
 *     pooling node for the pool's own padding) and Tile;
 *   - a view op (Transpose, Slice, Expand, ...) whose strided output is read
 *     by a LayerNormalization, Softmax or LogSoftmax node: their CPU kernels
 *     make their input contiguous first (`expect_contiguous`), a copy the
 *     graph does not show, counted at the view that needs it.
 *
 * Element-wise ops and matmuls read strided inputs without a copy. Ops
 * that allocate their output lay it out as PyTorch does:
 *
 *   - element-wise ops and activations (TensorIterator) after their inputs'
 *     strides: `compute_fast_setup_type` and `reorder_dimensions` in
 *     aten/src/ATen/TensorIterator.cpp (the first input that orders two
 *     dimensions decides, broadcast dimensions do not vote);
 *   - a conv, batch norm or pooling node channels-last when its input
 *     suggests channels-last (`suggest_memory_format`, with
 *     `is_channels_last_strides_2d_s4` of c10/core/MemoryFormat.h; the conv's
 *     rule is `mkldnn_conv_use_channels_last` in
 *     aten/src/ATen/native/ConvUtils.h, its weights being plain
 *     parameters), and such a conv is benchmarked in layout nhwc: the
 *     depthwise convs of a ConvNeXt block read the residual sum of a branch
 *     permuted back from channels-last, and run channels-last;
 *   - every other op contiguous.
 *
 * The batch is taken as 2 (any size above 1 gives the same answer; 1 would
 * make the batch axis free). */
#include "tc_error.h"
#include "tc_graph.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#define LAYOUT_BATCH 2

typedef struct {
    bool set;                          /* strides computed (else contiguous) */
    bool strided;                      /* a view whose strides are not contiguous */
    int64_t strides[TC_MODEL_MAX_RANK];
} s_layout_t;

static void s_sizes(const tc_value_t *v, int64_t *sizes)
{
    for (int k = 0; k < v->rank; k++)
        sizes[k] = k == v->batch_axis ? v->dims[k] * LAYOUT_BATCH : v->dims[k];
}

static void s_contiguous(int rank, const int64_t *sizes, int64_t *strides)
{
    int64_t s = 1;
    for (int k = rank - 1; k >= 0; k--) {
        strides[k] = s;
        s *= sizes[k] > 1 ? sizes[k] : 1;
    }
}

/* Whether strides are those of a contiguous tensor (size-1 axes ignored). */
static bool s_is_contiguous(int rank, const int64_t *sizes, const int64_t *strides)
{
    int64_t s = 1;
    for (int k = rank - 1; k >= 0; k--) {
        if (sizes[k] == 1)
            continue;
        if (strides[k] != s)
            return false;
        s *= sizes[k];
    }
    return true;
}

/* PyTorch's computeStride: the strides of a view of (osize, ostride) as
 * nsize, or false when no view exists and reshape copies. */
static bool s_view_strides(int orank, const int64_t *osize, const int64_t *ostride, int nrank,
                           const int64_t *nsize, int64_t *nstride)
{
    int64_t numel = 1;
    for (int k = 0; k < orank; k++)
        numel *= osize[k];
    if (numel == 0)
        return false;
    int view_d = nrank - 1;
    int64_t chunk_base_stride = orank > 0 ? ostride[orank - 1] : 1;
    int64_t tensor_numel = 1, view_numel = 1, span;
    for (int d = orank - 1; d >= 0; d--) {
        tensor_numel *= osize[d];
        if (__builtin_mul_overflow(tensor_numel, chunk_base_stride, &span))
            return false;
        if (d == 0 || (osize[d - 1] != 1 && ostride[d - 1] != span)) {
            while (view_d >= 0 && (view_numel < tensor_numel || nsize[view_d] == 1)) {
                nstride[view_d] = view_numel * chunk_base_stride;
                view_numel *= nsize[view_d];
                view_d--;
            }
            if (view_numel != tensor_numel)
                return false;
            if (d > 0) {
                chunk_base_stride = ostride[d - 1];
                tensor_numel = 1;
                view_numel = 1;
            }
        }
    }
    return view_d == -1;
}

/* Small integer constants of input i (NULL-safe; false when unknown). */
static bool s_ints(tc_graph_t *g, const tc_gnode_t *n, int i, int64_t *out, int *count)
{
    const tc_value_t *v = tc_node_in(g, n, i);
    if (!v || v->n_data < 0 || v->n_data > TC_MODEL_MAX_RANK)
        return false;
    for (int k = 0; k < v->n_data; k++) {
        if (v->data[k].b != 0)
            return false;
        out[k] = v->data[k].c;
    }
    *count = v->n_data;
    return true;
}

static bool s_is(const tc_gnode_t *n, const char *op)
{
    return !*n->domain && !strcmp(n->op, op);
}

/* The layout of node n's output 0 from its input 0's; sets *copies when the
 * node itself moves data. */
static void s_node(tc_graph_t *g, const tc_gnode_t *n, const s_layout_t *in, s_layout_t *out,
                   bool *copies)
{
    const tc_value_t *x = tc_node_in(g, n, 0), *y = tc_node_out(g, n, 0);
    int64_t xs[TC_MODEL_MAX_RANK], ys[TC_MODEL_MAX_RANK];
    s_sizes(x, xs);
    s_sizes(y, ys);
    *copies = false;
    out->strided = false;
    s_contiguous(y->rank, ys, out->strides);
    if (s_is(n, "Identity")) {
        memcpy(out->strides, in->strides, sizeof out->strides);
        out->strided = in->strided;
    } else if (s_is(n, "Transpose")) {
        int64_t perm[TC_MODEL_MAX_RANK];
        int count = -1;
        if (tc_attr_ints(n, "perm", perm, TC_MODEL_MAX_RANK, &count) < 0 || count != x->rank ||
            y->rank != x->rank)
            return;
        for (int k = 0; k < count; k++) {
            if (perm[k] < 0 || perm[k] >= x->rank)
                return;
            out->strides[k] = in->strides[perm[k]];
        }
        out->strided = !s_is_contiguous(y->rank, ys, out->strides);
    } else if (s_is(n, "Slice") && y->rank == x->rank) {
        int64_t axes[TC_MODEL_MAX_RANK], steps[TC_MODEL_MAX_RANK];
        int na = 0, ns = 0;
        memcpy(out->strides, in->strides, sizeof out->strides);
        if (s_ints(g, n, 4, steps, &ns)) {
            if (!s_ints(g, n, 3, axes, &na)) {
                na = ns;
                for (int k = 0; k < na; k++)
                    axes[k] = k;
            }
            for (int k = 0; k < na && k < ns; k++) {
                int64_t a = axes[k] < 0 ? axes[k] + x->rank : axes[k];
                int64_t step = steps[k] < 0 ? -steps[k] : steps[k];
                /* A step past the axis leaves one element: its stride is moot. */
                if (a >= 0 && a < x->rank && step > 1 && step < xs[a])
                    out->strides[a] *= step;
            }
        }
        out->strided = !s_is_contiguous(y->rank, ys, out->strides);
    } else if (s_is(n, "Expand") && y->rank >= x->rank) {
        int off = y->rank - x->rank;
        for (int k = 0; k < y->rank; k++) {
            int j = k - off;
            out->strides[k] = j < 0 || (xs[j] == 1 && ys[k] != 1) ? 0 : in->strides[j];
        }
        out->strided = !s_is_contiguous(y->rank, ys, out->strides);
    } else if (s_is(n, "Gather")) {
        const tc_value_t *idx = tc_node_in(g, n, 1);
        int64_t axis = 0;
        if (tc_attr_int(n, "axis", 0, &axis) < 0 || !idx)
            return;
        if (axis < 0)
            axis += x->rank;
        if (idx->rank != 0 || axis < 0 || axis >= x->rank || y->rank != x->rank - 1) {
            *copies = true; /* index_select */
            return;
        }
        for (int k = 0, o = 0; k < x->rank; k++) {
            if (k != axis)
                out->strides[o++] = in->strides[k];
        }
        out->strided = !s_is_contiguous(y->rank, ys, out->strides);
    } else if (s_is(n, "Reshape") || s_is(n, "Flatten") || s_is(n, "Squeeze") ||
               s_is(n, "Unsqueeze")) {
        if (!in->strided)
            return;
        if (s_view_strides(x->rank, xs, in->strides, y->rank, ys, out->strides))
            out->strided = !s_is_contiguous(y->rank, ys, out->strides);
        else {
            s_contiguous(y->rank, ys, out->strides);
            *copies = true; /* .contiguous().view(), or reshape's own copy */
        }
    } else if (s_is(n, "Pad") || s_is(n, "Tile")) {
        *copies = true;
    }
}

/* c10's is_channels_last_strides_2d_s4 (c10/core/MemoryFormat.h): whether
 * a 4-D tensor's strides suggest channels-last; ambiguous cases (a trivial
 * C, N111 shapes) fall back to NCHW as PyTorch does. */
static bool s_suggests_channels_last(int rank, const int64_t *sizes, const int64_t *strides)
{
    if (rank != 4 || strides[1] == 0)
        return false;
    int64_t min = 0;
    static const int order[] = {1, 3, 2, 0};
    for (int i = 0; i < 4; i++) {
        int d = order[i];
        if (sizes[d] == 0 || strides[d] < min)
            return false;
        if (d == 0 && min == strides[1])
            return false;
        min = strides[d];
        if (sizes[d] > 1)
            min *= sizes[d];
    }
    return true;
}

/* c10's get_channels_last_strides_2d. */
static void s_channels_last(const int64_t *sizes, int64_t *strides)
{
    strides[1] = 1;
    strides[3] = sizes[1];
    strides[2] = strides[3] * sizes[3];
    strides[0] = strides[2] * sizes[2];
}

/* The strides of input i of n seen from the output (sizes ys, rank yr):
 * broadcast dimensions get stride 0, as TensorIterator's compute_strides
 * sets them. False when the input is absent or cannot broadcast. */
static bool s_operand(tc_graph_t *g, const tc_gnode_t *n, const s_layout_t *lay, int i, int yr,
                     const int64_t *ys, int64_t *st, bool *same_shape)
{
    const tc_value_t *v = tc_node_in(g, n, i);
    /* Values known at import time (ConstantOfShape's shape) are shape
     * arithmetic, not operands of the element-wise kernel. */
    if (!v || !v->known || v->rank > yr || (v->n_data >= 0 && v->batch_axis < 0))
        return false;
    int64_t vs[TC_MODEL_MAX_RANK], vst[TC_MODEL_MAX_RANK];
    s_sizes(v, vs);
    if (lay[n->in[i]].set)
        memcpy(vst, lay[n->in[i]].strides, sizeof vst);
    else
        s_contiguous(v->rank, vs, vst);
    int off = yr - v->rank;
    *same_shape = off == 0;
    for (int k = 0; k < yr; k++) {
        int j = k - off;
        if (j >= 0 && vs[j] != ys[k] && vs[j] != 1)
            return false;
        if (j >= 0 && vs[j] != ys[k])
            *same_shape = false;
        st[k] = j < 0 || (vs[j] == 1 && ys[k] != 1) ? 0 : vst[j];
    }
    return true;
}

/* Whether strides lay the tensor out densely, without gaps or overlap, in
 * some order of its dimensions (size-1 dimensions ignored). */
static bool s_is_dense(int rank, const int64_t *sizes, const int64_t *strides)
{
    bool used[TC_MODEL_MAX_RANK] = {false};
    int64_t expect = 1;
    for (int step = 0; step < rank; step++) {
        int best = -1;
        for (int k = 0; k < rank; k++)
            if (!used[k] && sizes[k] > 1 && (best < 0 || strides[k] < strides[best]))
                best = k;
        if (best < 0)
            return true;
        if (strides[best] != expect)
            return false;
        used[best] = true;
        expect *= sizes[best];
    }
    return true;
}

/* The strides TensorIterator gives the output of element-wise node n (sizes
 * ys, rank yr) from its inputs' (aten/src/ATen/TensorIterator.cpp:
 * compute_fast_setup_type, then reorder_dimensions and
 * allocate_or_resize_outputs). */
static void s_iter_strides(tc_graph_t *g, const tc_gnode_t *n, const s_layout_t *lay, int yr,
                           const int64_t *ys, int64_t *out)
{
    int64_t st[8][TC_MODEL_MAX_RANK];
    int nops = 0;
    bool all_same = true;
    for (int i = 0; i < n->n_in && nops < 8; i++) {
        bool same = false;
        if (s_operand(g, n, lay, i, yr, ys, st[nops], &same)) {
            all_same = all_same && same;
            nops++;
        }
    }
    s_contiguous(yr, ys, out);
    if (nops == 0)
        return;
    if (all_same) { /* the fast setup: every operand of the output's shape */
        bool contiguous = true, channels_last = yr == 4, dense_alike = true;
        int64_t cl[4];
        if (channels_last)
            s_channels_last(ys, cl);
        for (int o = 0; o < nops; o++) {
            contiguous = contiguous && s_is_contiguous(yr, ys, st[o]);
            for (int k = 0; channels_last && k < 4; k++)
                channels_last = ys[k] == 1 || st[o][k] == cl[k];
            dense_alike = dense_alike && s_is_dense(yr, ys, st[o]) &&
                          !memcmp(st[o], st[0], (size_t)yr * sizeof st[0][0]);
        }
        if (contiguous)
            return;
        if (channels_last) {
            memcpy(out, cl, sizeof cl);
            return;
        }
        if (dense_alike) {
            memcpy(out, st[0], (size_t)yr * sizeof *out);
            return;
        }
    }
    /* perm[0] is the fastest-moving dimension; insertion sort with
     * ambiguous comparisons (should_swap). */
    int perm[TC_MODEL_MAX_RANK];
    for (int k = 0; k < yr; k++)
        perm[k] = yr - 1 - k;
    for (int i = 1; i < yr; i++) {
        int d1 = i;
        for (int d0 = i - 1; d0 >= 0; d0--) {
            int a = perm[d0], b = perm[d1], cmp = 0;
            for (int o = 0; o < nops && cmp == 0; o++) {
                int64_t s0 = st[o][a], s1 = st[o][b];
                if (s0 == 0 || s1 == 0)
                    continue;
                if (s0 != s1)
                    cmp = s0 < s1 ? -1 : 1;
                else if (ys[a] > ys[b])
                    cmp = 1;
            }
            if (cmp > 0) {
                perm[d0] = b;
                perm[d1] = a;
                d1 = d0;
            } else if (cmp < 0) {
                break;
            }
        }
    }
    int64_t s = 1;
    for (int j = 0; j < yr; j++) {
        out[perm[j]] = s;
        s *= ys[perm[j]];
    }
}

/* The layout of the output of a node that allocates it (not a view):
 * TensorIterator's for element-wise ops, channels-last or contiguous for a
 * conv, batch norm or pool after its input's suggested memory format. A
 * conv that runs channels-last is benchmarked as nhwc. */
static void s_alloc(tc_graph_t *g, tc_gnode_t *n, const s_layout_t *lay, s_layout_t *out)
{
    const tc_value_t *y = tc_node_out(g, n, 0), *x = tc_node_in(g, n, 0);
    int64_t ys[TC_MODEL_MAX_RANK];
    s_sizes(y, ys);
    s_contiguous(y->rank, ys, out->strides);
    switch (n->info.op_class) {
    case TC_OPC_ELTWISE:
    case TC_OPC_ACT:
    case TC_OPC_DROPOUT:
        s_iter_strides(g, n, lay, y->rank, ys, out->strides);
        break;
    case TC_OPC_CONV:
    case TC_OPC_BN:
    case TC_OPC_POOL: {
        if (!x || !x->known || x->batch_axis != 0 || x->rank != 4 || y->rank != 4 ||
            !lay[n->in[0]].set)
            break;
        int64_t xs[TC_MODEL_MAX_RANK];
        s_sizes(x, xs);
        if (!s_suggests_channels_last(4, xs, lay[n->in[0]].strides))
            break;
        s_channels_last(ys, out->strides);
        if (n->info.is_conv)
            n->info.conv.layout = TRAINCAST__V1__LAYOUT__LAYOUT_NHWC;
        break;
    }
    default:
        break;
    }
    out->strided = !s_is_contiguous(y->rank, ys, out->strides);
    out->set = true;
}

/* Ops whose CPU kernels make a strided input contiguous first (layer norm's
 * and softmax's last-axis kernels). A conv or pool takes a permuted NCHW
 * tensor as channels-last instead, without a copy. */
static bool s_needs_contiguous(const tc_gnode_t *n)
{
    return n->info.op_class == TC_OPC_NORM || n->info.op_class == TC_OPC_SOFTMAX;
}

int tc_graph_layout(tc_graph_t *g)
{
    s_layout_t *lay = calloc(g->n_values ? g->n_values : 1, sizeof *lay);
    if (!lay)
        return tc_fail(TC_ENOMEM, "out of memory for the layout of %zu values", g->n_values);
    for (size_t i = 0; i < g->n_nodes; i++) {
        tc_gnode_t *n = &g->nodes[g->order[i]];
        if (n->folded || n->unknown || n->n_in < 1 || n->n_out < 1 || n->in[0] < 0 ||
            n->out[0] < 0)
            continue;
        tc_value_t *x = &g->values[n->in[0]], *y = &g->values[n->out[0]];
        if (!y->known)
            continue;
        if (n->info.op_class != TC_OPC_SHAPE && y->batch_axis >= 0)
            s_alloc(g, n, lay, &lay[n->out[0]]);
        if (!x->known || x->batch_axis < 0)
            continue;
        if (s_needs_contiguous(n) && lay[n->in[0]].strided && x->producer >= 0) {
            tc_gnode_t *p = &g->nodes[x->producer];
            if (p->info.op_class == TC_OPC_SHAPE)
                p->info.op_class = TC_OPC_COPY;
        }
        if (n->info.op_class == TC_OPC_POOL && x->producer >= 0) {
            /* The exporter writes a pool's own padding as a Pad before it
             * (torch.onnx's avg_pool2d): PyTorch copies nothing. */
            tc_gnode_t *p = &g->nodes[x->producer];
            if (p->info.op_class == TC_OPC_COPY && s_is(p, "Pad"))
                p->info.op_class = TC_OPC_SHAPE;
        }
        if (n->info.op_class != TC_OPC_SHAPE)
            continue; /* an output of its own (s_alloc) */
        s_layout_t *in = &lay[n->in[0]];
        if (!in->set) {
            int64_t xs[TC_MODEL_MAX_RANK];
            s_sizes(x, xs);
            s_contiguous(x->rank, xs, in->strides);
        }
        bool copies = false;
        s_node(g, n, in, &lay[n->out[0]], &copies);
        lay[n->out[0]].set = true;
        if (copies)
            n->info.op_class = TC_OPC_COPY;
    }
    free(lay);
    return 0;
}
