/* Shape rules for data movement: Unsqueeze, Squeeze, Split, Slice,
 * Transpose, Reshape, Flatten, Expand, Tile and Pad. Folded values (small
 * integer tensors held as b*batch + c, see tc_shape_ops.c) move with the
 * elements where the op keeps or rearranges them. */
#include "tc_shape_rules.h"

#include "tc_error.h"

#include <inttypes.h>
#include <string.h>

/* Output 0 holds x's elements rearranged into `dims`: its shape, x's type,
 * and x's folded values when it has them (same flat order). */
static int s_set_moved(tc_graph_t *g, tc_gnode_t *n, const tc_value_t *x, int rank,
                       const int64_t *dims, int batch)
{
    int rc = tc_set_shape(g, n, 0, rank, dims, batch);
    tc_set_type(g, n, 0, x->elem_type);
    if (rc == 0 && x->n_data >= 0)
        rc = tc_set_data(g, n, 0, x->data, x->n_data);
    return rc;
}

static int s_axes(tc_graph_t *g, tc_gnode_t *n, int input, int64_t *axes, int *count)
{
    int rc = tc_attr_ints(n, "axes", axes, TC_MODEL_MAX_RANK, count);
    if (rc < 0 || *count >= 0)
        return rc;
    if (tc_node_in(g, n, input))
        return tc_node_ints(g, n, input, axes, TC_MODEL_MAX_RANK, count);
    return 0;
}

int tc_infer_unsqueeze(tc_graph_t *g, tc_gnode_t *n, const tc_op_rule_t *r)
{
    tc_value_t *x = NULL;
    int64_t axes[TC_MODEL_MAX_RANK];
    int count, rc = tc_node_need(g, n, 0, &x);
    if (rc == 0)
        rc = s_axes(g, n, 1, axes, &count);
    if (rc < 0)
        return rc;
    if (count < 0)
        return tc_node_fail(n, TC_EPARSE, "Unsqueeze needs axes");
    int rank = x->rank + count;
    if (rank > TC_MODEL_MAX_RANK)
        return tc_node_fail(n, TC_ELIMIT, "output rank %d (at most %d)", rank, TC_MODEL_MAX_RANK);
    bool ins[TC_MODEL_MAX_RANK] = {false};
    for (int k = 0; k < count; k++) {
        int a;
        rc = tc_axis(n, axes[k], rank, &a);
        if (rc < 0)
            return rc;
        if (ins[a])
            return tc_node_fail(n, TC_EPARSE, "axis %d given twice", a);
        ins[a] = true;
    }
    int64_t dims[TC_MODEL_MAX_RANK];
    int batch = -1;
    for (int k = 0, j = 0; k < rank; k++) {
        if (ins[k]) {
            dims[k] = 1;
            continue;
        }
        if (j == x->batch_axis)
            batch = k;
        dims[k] = x->dims[j++];
    }
    return s_set_moved(g, n, x, rank, dims, batch);
}

int tc_infer_squeeze(tc_graph_t *g, tc_gnode_t *n, const tc_op_rule_t *r)
{
    tc_value_t *x = NULL;
    int64_t axes[TC_MODEL_MAX_RANK];
    int count, rc = tc_node_need(g, n, 0, &x);
    if (rc == 0)
        rc = s_axes(g, n, 1, axes, &count);
    if (rc < 0)
        return rc;
    bool drop[TC_MODEL_MAX_RANK] = {false};
    if (count < 0) {
        for (int k = 0; k < x->rank; k++)
            drop[k] = x->dims[k] == 1 && k != x->batch_axis;
    }
    for (int k = 0; k < count; k++) {
        int a;
        rc = tc_axis(n, axes[k], x->rank, &a);
        if (rc < 0)
            return rc;
        if (a == x->batch_axis)
            return tc_node_fail(n, TC_EUNSUPPORTED, "squeezes the batch axis");
        if (x->dims[a] != 1)
            return tc_node_fail(n, TC_EPARSE, "squeezes axis %d of size %" PRId64, a,
                                x->dims[a]);
        drop[a] = true;
    }
    int64_t dims[TC_MODEL_MAX_RANK];
    int rank = 0, batch = -1;
    for (int k = 0; k < x->rank; k++) {
        if (drop[k])
            continue;
        if (k == x->batch_axis)
            batch = rank;
        dims[rank++] = x->dims[k];
    }
    return s_set_moved(g, n, x, rank, dims, batch);
}

int tc_infer_split(tc_graph_t *g, tc_gnode_t *n, const tc_op_rule_t *r)
{
    tc_value_t *x = NULL;
    int64_t axis64, split[TC_GRAPH_MAX_NODE_IO];
    int axis, count = -1, rc = tc_node_need(g, n, 0, &x);
    if (rc == 0)
        rc = tc_attr_int(n, "axis", 0, &axis64);
    if (rc == 0)
        rc = tc_axis(n, axis64, x->rank, &axis);
    if (rc == 0)
        rc = tc_attr_ints(n, "split", split, TC_GRAPH_MAX_NODE_IO, &count);
    if (rc == 0 && count < 0 && tc_node_in(g, n, 1))
        rc = tc_node_ints(g, n, 1, split, TC_GRAPH_MAX_NODE_IO, &count);
    if (rc < 0)
        return rc;
    if (axis == x->batch_axis)
        return tc_node_fail(n, TC_EUNSUPPORTED, "splits along the batch axis");
    int64_t total = x->dims[axis];
    if (count < 0) {
        int64_t parts = n->n_out, num;
        rc = tc_attr_int(n, "num_outputs", parts, &num);
        if (rc < 0)
            return rc;
        if (num <= 0 || num != n->n_out)
            return tc_node_fail(n, TC_EPARSE, "num_outputs %" PRId64 " for %d outputs", num,
                                n->n_out);
        int64_t each = (total + parts - 1) / parts;
        for (int k = 0; k < n->n_out; k++) {
            int64_t left = total - each * k;
            split[k] = left < each ? (left > 0 ? left : 0) : each;
        }
        count = n->n_out;
    }
    if (count != n->n_out)
        return tc_node_fail(n, TC_EPARSE, "%d split sizes for %d outputs", count, n->n_out);
    int64_t sum = 0;
    for (int k = 0; k < count; k++) {
        if (split[k] < 0 || tc_add64(sum, split[k], &sum) < 0)
            return tc_node_fail(n, TC_EPARSE, "invalid split size %" PRId64, split[k]);
    }
    if (sum != total)
        return tc_node_fail(n, TC_EPARSE, "split sizes add up to %" PRId64 ", axis has %" PRId64,
                            sum, total);
    for (int k = 0; k < n->n_out; k++) {
        int64_t dims[TC_MODEL_MAX_RANK];
        memcpy(dims, x->dims, sizeof dims);
        dims[axis] = split[k];
        rc = tc_set_shape(g, n, k, x->rank, dims, x->batch_axis);
        if (rc < 0)
            return rc;
        tc_set_type(g, n, k, x->elem_type);
    }
    return 0;
}

/* ONNX Slice clamping for one axis of size `dim`. */
static int64_t s_clamp(int64_t v, int64_t dim, int64_t lo, int64_t hi)
{
    if (v < 0)
        v = v < -dim ? lo : v + dim;
    return v < lo ? lo : v > hi ? hi : v;
}

/* Fold output 0 of a data movement of known values: output element at
 * coordinates c (over out->dims) is input element base + sum c[k] mult[k]
 * (mult in the input's flat units). A no-op when x has no known values or
 * the output carries the batch. */
static int s_move_data(tc_graph_t *g, tc_gnode_t *n, const tc_value_t *x, int64_t base,
                       const int64_t *mult)
{
    tc_value_t *out = tc_node_out(g, n, 0);
    if (!out || x->n_data < 0 || out->batch_axis >= 0)
        return 0;
    int64_t elems = tc_value_elems(out);
    if (elems > TC_GRAPH_MAX_DATA)
        return 0;
    tc_sym_t buf[TC_GRAPH_MAX_DATA];
    for (int64_t i = 0; i < elems; i++) {
        int64_t rest = i, at = base;
        for (int k = out->rank - 1; k >= 0; k--) {
            at += rest % out->dims[k] * mult[k];
            rest /= out->dims[k];
        }
        if (at < 0 || at >= x->n_data)
            return 0;
        buf[i] = x->data[at];
    }
    return tc_set_data(g, n, 0, buf, (int)elems);
}

/* The flat stride of each axis of x. */
static void s_strides(const tc_value_t *x, int64_t *stride)
{
    int64_t s = 1;
    for (int k = x->rank - 1; k >= 0; k--) {
        stride[k] = s;
        s *= x->dims[k];
    }
}

int tc_infer_slice(tc_graph_t *g, tc_gnode_t *n, const tc_op_rule_t *r)
{
    tc_value_t *x = NULL;
    int rc = tc_node_need(g, n, 0, &x);
    if (rc < 0)
        return rc;
    const int M = TC_MODEL_MAX_RANK;
    tc_sym_t starts[TC_MODEL_MAX_RANK], ends[TC_MODEL_MAX_RANK];
    int64_t axes[TC_MODEL_MAX_RANK], steps[TC_MODEL_MAX_RANK];
    int ns, ne, na = -1, nst = -1;
    int64_t tmp[TC_MODEL_MAX_RANK];
    if (tc_attr(n, "starts")) { /* opset < 10 */
        rc = tc_attr_ints(n, "starts", tmp, M, &ns);
        for (int k = 0; rc == 0 && k < ns; k++)
            starts[k] = (tc_sym_t){0, tmp[k]};
        if (rc == 0)
            rc = tc_attr_ints(n, "ends", tmp, M, &ne);
        for (int k = 0; rc == 0 && k < ne; k++)
            ends[k] = (tc_sym_t){0, tmp[k]};
        if (rc == 0)
            rc = tc_attr_ints(n, "axes", axes, M, &na);
    } else {
        const tc_sym_t *d;
        rc = tc_node_const(g, n, 1, &d, &ns);
        if (rc == 0 && ns > M)
            rc = tc_node_fail(n, TC_ELIMIT, "%d starts", ns);
        if (rc == 0)
            memcpy(starts, d, (size_t)ns * sizeof *d);
        if (rc == 0)
            rc = tc_node_const(g, n, 2, &d, &ne);
        if (rc == 0 && ne > M)
            rc = tc_node_fail(n, TC_ELIMIT, "%d ends", ne);
        if (rc == 0)
            memcpy(ends, d, (size_t)ne * sizeof *d);
        if (rc == 0 && tc_node_in(g, n, 3))
            rc = tc_node_ints(g, n, 3, axes, M, &na);
        if (rc == 0 && tc_node_in(g, n, 4))
            rc = tc_node_ints(g, n, 4, steps, M, &nst);
    }
    if (rc < 0)
        return rc;
    if (ns < 0 || ne != ns || (na >= 0 && na != ns) || (nst >= 0 && nst != ns))
        return tc_node_fail(n, TC_EPARSE, "starts, ends, axes and steps differ in length");
    int64_t dims[TC_MODEL_MAX_RANK], first[TC_MODEL_MAX_RANK], step[TC_MODEL_MAX_RANK];
    memcpy(dims, x->dims, sizeof dims);
    for (int k = 0; k < x->rank; k++) {
        first[k] = 0;
        step[k] = 1;
    }
    bool seen[TC_MODEL_MAX_RANK] = {false};
    for (int k = 0; k < ns; k++) {
        int a;
        rc = tc_axis(n, na >= 0 ? axes[k] : k, x->rank, &a);
        if (rc < 0)
            return rc;
        if (seen[a])
            return tc_node_fail(n, TC_EPARSE, "axis %d sliced twice", a);
        seen[a] = true;
        int64_t st = nst >= 0 ? steps[k] : 1;
        if (st == 0)
            return tc_node_fail(n, TC_EPARSE, "step 0");
        if (a == x->batch_axis) {
            /* Only the whole batch: start 0 and an end at or past B. */
            bool whole = !starts[k].b && starts[k].c == 0 && st == 1 &&
                         ((ends[k].b >= x->dims[a] && ends[k].c >= 0) ||
                          (!ends[k].b && ends[k].c >= INT32_MAX));
            if (!whole)
                return tc_node_fail(n, TC_EUNSUPPORTED, "slices the batch axis");
            continue;
        }
        if (starts[k].b || ends[k].b)
            return tc_node_fail(n, TC_EUNSUPPORTED, "slice bounds depend on the batch size");
        int64_t dim = x->dims[a], s, e;
        if (st > 0) {
            s = s_clamp(starts[k].c, dim, 0, dim);
            e = s_clamp(ends[k].c, dim, 0, dim);
            dims[a] = e > s ? (e - s - 1) / st + 1 : 0;
        } else {
            s = s_clamp(starts[k].c, dim, -1, dim - 1);
            e = s_clamp(ends[k].c, dim, -1, dim - 1);
            dims[a] = s > e ? (s - e - 1) / -st + 1 : 0;
        }
        first[a] = s;
        step[a] = st;
    }
    rc = tc_set_shape(g, n, 0, x->rank, dims, x->batch_axis);
    tc_value_t *out = tc_node_out(g, n, 0);
    if (rc < 0 || !out)
        return rc;
    out->elem_type = x->elem_type;
    /* Shape arithmetic slices small known tensors (torch's F.pad reverses
     * its pads with a step of -1 over a [pairs, 2] view). */
    int64_t stride[TC_MODEL_MAX_RANK], mult[TC_MODEL_MAX_RANK], base = 0;
    s_strides(x, stride);
    for (int k = 0; k < x->rank; k++) {
        base += first[k] * stride[k]; /* inside the tensor */
        if (__builtin_mul_overflow(step[k], stride[k], &mult[k]))
            return 0; /* a hostile step: leave the values unknown */
    }
    return s_move_data(g, n, x, base, mult);
}

int tc_infer_transpose(tc_graph_t *g, tc_gnode_t *n, const tc_op_rule_t *r)
{
    tc_value_t *x = NULL;
    int64_t perm[TC_MODEL_MAX_RANK];
    int count, rc = tc_node_need(g, n, 0, &x);
    if (rc == 0)
        rc = tc_attr_ints(n, "perm", perm, TC_MODEL_MAX_RANK, &count);
    if (rc < 0)
        return rc;
    if (count < 0) {
        count = x->rank;
        for (int k = 0; k < count; k++)
            perm[k] = count - 1 - k;
    }
    if (count != x->rank)
        return tc_node_fail(n, TC_EPARSE, "perm has %d entries for rank %d", count, x->rank);
    bool used[TC_MODEL_MAX_RANK] = {false};
    int64_t dims[TC_MODEL_MAX_RANK];
    int batch = -1;
    for (int k = 0; k < count; k++) {
        if (perm[k] < 0 || perm[k] >= x->rank || used[perm[k]])
            return tc_node_fail(n, TC_EPARSE, "perm is not a permutation of 0..%d", x->rank - 1);
        used[perm[k]] = true;
        dims[k] = x->dims[perm[k]];
        if (perm[k] == x->batch_axis)
            batch = k;
    }
    rc = tc_set_shape(g, n, 0, x->rank, dims, batch);
    tc_set_type(g, n, 0, x->elem_type);
    if (rc == 0 && x->n_data >= 0) {
        int64_t stride[TC_MODEL_MAX_RANK], mult[TC_MODEL_MAX_RANK];
        s_strides(x, stride);
        for (int k = 0; k < count; k++)
            mult[k] = stride[perm[k]];
        rc = s_move_data(g, n, x, 0, mult);
    }
    return rc;
}

int tc_infer_reshape(tc_graph_t *g, tc_gnode_t *n, const tc_op_rule_t *r)
{
    tc_value_t *x = NULL;
    const tc_sym_t *shape;
    int count, rc = tc_node_need(g, n, 0, &x);
    int64_t allowzero = 0, tmp[TC_MODEL_MAX_RANK];
    tc_sym_t attr_shape[TC_MODEL_MAX_RANK];
    if (rc == 0)
        rc = tc_attr_int(n, "allowzero", 0, &allowzero);
    if (rc == 0 && tc_attr(n, "shape")) { /* opset < 5 */
        rc = tc_attr_ints(n, "shape", tmp, TC_MODEL_MAX_RANK, &count);
        for (int k = 0; k < count; k++)
            attr_shape[k] = (tc_sym_t){0, tmp[k]};
        shape = attr_shape;
    } else if (rc == 0) {
        rc = tc_node_const(g, n, 1, &shape, &count);
    }
    if (rc < 0)
        return rc;
    if (count > TC_MODEL_MAX_RANK)
        return tc_node_fail(n, TC_ELIMIT, "target rank %d (at most %d)", count,
                            TC_MODEL_MAX_RANK);
    tc_sym_t dims[TC_MODEL_MAX_RANK];
    int infer = -1;
    bool batch = false;
    int64_t known = 1;
    for (int k = 0; k < count; k++) {
        tc_sym_t s = shape[k];
        if (!s.b && s.c == 0 && !allowzero) {
            if (k >= x->rank)
                return tc_node_fail(n, TC_EPARSE, "0 at position %d copies a missing dimension",
                                    k);
            s = k == x->batch_axis ? (tc_sym_t){x->dims[k], 0} : (tc_sym_t){0, x->dims[k]};
        }
        if (!s.b && s.c == -1) {
            if (infer >= 0)
                return tc_node_fail(n, TC_EPARSE, "more than one -1 in the target shape");
            infer = k;
            dims[k] = s;
            continue;
        }
        if (s.b >= 1 && s.c == 0) {
            /* The batch, or heads folded into it (b*B): b counts per sample. */
            if (batch)
                return tc_node_fail(n, TC_EUNSUPPORTED, "the batch appears twice in the target");
            batch = true;
            if (tc_mul64(known, s.b, &known) < 0)
                return tc_node_fail(n, TC_ELIMIT, "target shape overflows");
        } else if (s.b || s.c < 0) {
            return tc_node_fail(n, TC_EUNSUPPORTED, "target dimension %d is %" PRId64
                                                    "*batch%+" PRId64,
                                k, s.b, s.c);
        } else if (tc_mul64(known, s.c, &known) < 0) {
            return tc_node_fail(n, TC_ELIMIT, "target shape overflows");
        }
        dims[k] = s;
    }
    int64_t elems = tc_value_elems(x);
    bool in_batch = x->batch_axis >= 0;
    if (infer >= 0) {
        if (in_batch && !batch) {
            /* The -1 takes the batch with what the rest leaves of a
             * sample (T*B when a sequence-first [T, B, C] is flattened). */
            if (known == 0 || elems % known)
                return tc_node_fail(n, TC_EUNSUPPORTED,
                                    "-1 would merge the batch with %" PRId64 "/%" PRId64,
                                    elems, known);
            dims[infer] = (tc_sym_t){elems / known, 0};
            batch = true;
        } else {
            if (known == 0 || elems % known)
                return tc_node_fail(n, TC_EPARSE, "cannot reshape %" PRId64
                                                  " elements with a -1 into %" PRId64,
                                    elems, known);
            dims[infer] = (tc_sym_t){0, elems / known};
            known = elems;
        }
    } else if (known != elems) {
        return tc_node_fail(n, TC_EPARSE, "cannot reshape %" PRId64 " elements into %" PRId64,
                            elems, known);
    }
    if (batch != in_batch)
        return tc_node_fail(n, TC_EUNSUPPORTED, "the reshape %s the batch dimension",
                            in_batch ? "drops" : "invents");
    rc = tc_set_shape_sym(g, n, 0, count, dims);
    tc_set_type(g, n, 0, x->elem_type);
    if (rc == 0 && x->n_data >= 0)
        rc = tc_set_data(g, n, 0, x->data, x->n_data);
    return rc;
}

int tc_infer_flatten(tc_graph_t *g, tc_gnode_t *n, const tc_op_rule_t *r)
{
    tc_value_t *x = NULL;
    int64_t axis64;
    int rc = tc_node_need(g, n, 0, &x);
    if (rc == 0)
        rc = tc_attr_int(n, "axis", 1, &axis64);
    if (rc < 0)
        return rc;
    if (axis64 < -(int64_t)x->rank || axis64 > x->rank)
        return tc_node_fail(n, TC_EPARSE, "axis %" PRId64 " outside rank %d", axis64, x->rank);
    int axis = (int)(axis64 < 0 ? axis64 + x->rank : axis64);
    int64_t dims[2] = {1, 1};
    int batch = -1;
    for (int k = 0; k < x->rank; k++)
        dims[k >= axis] *= x->dims[k]; /* bounded by the input's element count */
    if (x->batch_axis >= 0) {
        int side = x->batch_axis >= axis;
        if (dims[side] != 1)
            return tc_node_fail(n, TC_EUNSUPPORTED, "flattening merges the batch with other "
                                                    "dimensions");
        batch = side;
    }
    return s_set_moved(g, n, x, 2, dims, batch);
}

int tc_infer_expand(tc_graph_t *g, tc_gnode_t *n, const tc_op_rule_t *r)
{
    tc_value_t *x = NULL;
    const tc_sym_t *shape;
    int count, rc = tc_node_need(g, n, 0, &x);
    if (rc == 0)
        rc = tc_node_const(g, n, 1, &shape, &count);
    if (rc < 0)
        return rc;
    int rank = count > x->rank ? count : x->rank;
    if (rank > TC_MODEL_MAX_RANK)
        return tc_node_fail(n, TC_ELIMIT, "output rank %d", rank);
    tc_sym_t dims[TC_MODEL_MAX_RANK];
    for (int k = 0; k < rank; k++) {
        int ai = k - (rank - x->rank), si = k - (rank - count);
        tc_sym_t a = ai < 0 ? (tc_sym_t){0, 1}
                            : ai == x->batch_axis ? (tc_sym_t){x->dims[ai], 0}
                                                  : (tc_sym_t){0, x->dims[ai]};
        tc_sym_t s = si < 0 ? (tc_sym_t){0, 1} : shape[si];
        if (!a.b && a.c == 1)
            dims[k] = s;
        else if ((!s.b && s.c == 1) || (s.b == a.b && s.c == a.c))
            dims[k] = a;
        else
            return tc_node_fail(n, TC_EPARSE, "cannot expand dimension %d", k);
    }
    rc = tc_set_shape_sym(g, n, 0, rank, dims);
    tc_set_type(g, n, 0, x->elem_type);
    return rc;
}

int tc_infer_tile(tc_graph_t *g, tc_gnode_t *n, const tc_op_rule_t *r)
{
    tc_value_t *x = NULL;
    int64_t rep[TC_MODEL_MAX_RANK];
    int count, rc = tc_node_need(g, n, 0, &x);
    if (rc == 0)
        rc = tc_node_ints(g, n, 1, rep, TC_MODEL_MAX_RANK, &count);
    if (rc < 0)
        return rc;
    if (count != x->rank)
        return tc_node_fail(n, TC_EPARSE, "%d repeats for rank %d", count, x->rank);
    int64_t dims[TC_MODEL_MAX_RANK];
    for (int k = 0; k < x->rank; k++) {
        if (rep[k] < 0 || (k == x->batch_axis && rep[k] != 1))
            return tc_node_fail(n, TC_EUNSUPPORTED, "repeat %" PRId64 " on axis %d", rep[k], k);
        if (tc_mul64(x->dims[k], rep[k], &dims[k]) < 0)
            return tc_node_fail(n, TC_ELIMIT, "tiled size overflows");
    }
    rc = tc_set_shape(g, n, 0, x->rank, dims, x->batch_axis);
    tc_set_type(g, n, 0, x->elem_type);
    return rc;
}

int tc_infer_pad(tc_graph_t *g, tc_gnode_t *n, const tc_op_rule_t *r)
{
    tc_value_t *x = NULL;
    int64_t pads[2 * TC_MODEL_MAX_RANK], axes[TC_MODEL_MAX_RANK];
    int count, na = -1, rc = tc_node_need(g, n, 0, &x);
    if (rc == 0)
        rc = tc_attr_ints(n, "pads", pads, 2 * TC_MODEL_MAX_RANK, &count);
    if (rc == 0 && count < 0)
        rc = tc_node_ints(g, n, 1, pads, 2 * TC_MODEL_MAX_RANK, &count);
    if (rc == 0 && tc_node_in(g, n, 3))
        rc = tc_node_ints(g, n, 3, axes, TC_MODEL_MAX_RANK, &na);
    if (rc < 0)
        return rc;
    int nax = na >= 0 ? na : x->rank;
    if (count != 2 * nax)
        return tc_node_fail(n, TC_EPARSE, "%d pads for %d axes", count, nax);
    int64_t dims[TC_MODEL_MAX_RANK];
    memcpy(dims, x->dims, sizeof dims);
    for (int k = 0; k < nax; k++) {
        int a;
        rc = tc_axis(n, na >= 0 ? axes[k] : k, x->rank, &a);
        if (rc < 0)
            return rc;
        int64_t b = pads[k], e = pads[k + nax];
        if (a == x->batch_axis) {
            if (b || e)
                return tc_node_fail(n, TC_EUNSUPPORTED, "pads the batch axis");
            continue;
        }
        if (b < -TC_GRAPH_MAX_DIM || b > TC_GRAPH_MAX_DIM || e < -TC_GRAPH_MAX_DIM ||
            e > TC_GRAPH_MAX_DIM)
            return tc_node_fail(n, TC_EPARSE, "pad out of range");
        dims[a] += b + e;
        if (dims[a] < 0)
            return tc_node_fail(n, TC_EPARSE, "negative padding larger than axis %d", a);
    }
    rc = tc_set_shape(g, n, 0, x->rank, dims, x->batch_axis);
    tc_set_type(g, n, 0, x->elem_type);
    return rc;
}
