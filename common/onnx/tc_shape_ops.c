/* Shape rules for element-wise ops and the constant shape arithmetic that
 * exporters emit (Constant, Shape, Gather, Concat, Cast, Div, ...). Values
 * of small integer tensors are folded as b*batch + c so that reshapes
 * computed from Shape nodes resolve at import time. Data movement
 * (Reshape, Transpose, Slice, Pad, ...) is in tc_shape_move.c. */
#include "tc_shape_rules.h"

#include "tc_error.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define S_BOOL ONNX__TENSOR_PROTO__DATA_TYPE__BOOL
#define S_INT64 ONNX__TENSOR_PROTO__DATA_TYPE__INT64

static int s_all_outputs_like(tc_graph_t *g, tc_gnode_t *n, const tc_value_t *src)
{
    for (int k = 0; k < n->n_out; k++) {
        int rc = tc_set_like(g, n, k, src);
        if (rc < 0)
            return rc;
    }
    return 0;
}

int tc_infer_unary(tc_graph_t *g, tc_gnode_t *n, const tc_op_rule_t *r)
{
    tc_value_t *x = NULL;
    int rc = tc_node_need(g, n, 0, &x);
    return rc < 0 ? rc : s_all_outputs_like(g, n, x);
}

int tc_infer_aten(tc_graph_t *g, tc_gnode_t *n, const tc_op_rule_t *r)
{
    static const char *const shape_keeping[] = {"zero"};
    char op[64];
    int rc = tc_attr_str(n, "operator", "", op, sizeof op);
    if (rc < 0)
        return rc;
    for (size_t i = 0; i < sizeof shape_keeping / sizeof shape_keeping[0]; i++) {
        if (!strcmp(op, shape_keeping[i]))
            return tc_infer_unary(g, n, r);
    }
    return tc_node_fail(n, TC_EUNSUPPORTED,
                        "ATen fallback of the PyTorch op '%s' is not supported (only: zero); "
                        "--allow-unknown counts such nodes as generic element-wise layers",
                        op);
}

/* Identity and friends: same shape, same folded values. */
int tc_infer_identity(tc_graph_t *g, tc_gnode_t *n, const tc_op_rule_t *r)
{
    tc_value_t *x = NULL;
    int rc = tc_node_need(g, n, 0, &x);
    if (rc == 0)
        rc = tc_set_like(g, n, 0, x);
    if (rc == 0 && x->n_data >= 0)
        rc = tc_set_data(g, n, 0, x->data, x->n_data);
    return rc;
}

int tc_infer_cast(tc_graph_t *g, tc_gnode_t *n, const tc_op_rule_t *r)
{
    int64_t to = 0;
    int rc = tc_attr_int(n, "to", 0, &to);
    if (rc == 0)
        rc = tc_infer_identity(g, n, r);
    tc_value_t *out = tc_node_out(g, n, 0);
    if (rc == 0 && out) {
        if (!strcmp(n->op, "CastLike")) {
            const tc_value_t *like = tc_node_in(g, n, 1);
            to = like ? like->elem_type : 0;
        }
        out->elem_type = (int32_t)to;
    }
    return rc;
}

int tc_infer_dropout(tc_graph_t *g, tc_gnode_t *n, const tc_op_rule_t *r)
{
    tc_value_t *x = NULL;
    int rc = tc_node_need(g, n, 0, &x);
    if (rc == 0)
        rc = s_all_outputs_like(g, n, x);
    tc_value_t *mask = tc_node_out(g, n, 1);
    if (rc == 0 && mask)
        mask->elem_type = S_BOOL;
    return rc;
}

/* ---- folding of element-wise integer arithmetic ---- */

static bool s_is_int_type(int32_t t)
{
    return t == S_INT64 || t == ONNX__TENSOR_PROTO__DATA_TYPE__INT32 ||
           t == ONNX__TENSOR_PROTO__DATA_TYPE__INT16 || t == ONNX__TENSOR_PROTO__DATA_TYPE__INT8 ||
           t == ONNX__TENSOR_PROTO__DATA_TYPE__UINT8 || t == ONNX__TENSOR_PROTO__DATA_TYPE__UINT16 ||
           t == ONNX__TENSOR_PROTO__DATA_TYPE__UINT32 || t == ONNX__TENSOR_PROTO__DATA_TYPE__UINT64 ||
           t == S_BOOL;
}

/* a op b on folded values; -1 when the result is not b*B + c (or, with
 * `exact`, when an integer division would round). */
static int s_sym_op(const char *op, tc_sym_t a, tc_sym_t b, bool exact, tc_sym_t *out)
{
    tc_sym_t r = {0, 0};
    bool consts = !a.b && !b.b;
    if (!strcmp(op, "Add")) {
        if (tc_add64(a.b, b.b, &r.b) || tc_add64(a.c, b.c, &r.c))
            return -1;
    } else if (!strcmp(op, "Sub")) {
        if (__builtin_sub_overflow(a.b, b.b, &r.b) || __builtin_sub_overflow(a.c, b.c, &r.c))
            return -1;
    } else if (!strcmp(op, "Mul")) {
        if (a.b && b.b)
            return -1;
        tc_sym_t s = a.b ? a : b, k = a.b ? b : a; /* s symbolic (or both constant) */
        if (tc_mul64(s.b, k.c, &r.b) || tc_mul64(s.c, k.c, &r.c))
            return -1;
    } else if (!strcmp(op, "Div")) {
        if (b.b || b.c == 0 || (b.c == -1 && a.c == INT64_MIN) || a.b % b.c ||
            (exact && a.c % b.c))
            return -1;
        r.b = a.b / b.c;
        r.c = a.c / b.c;
    } else if (consts && !strcmp(op, "Mod")) {
        if (b.c == 0 || b.c == -1)
            return -1;
        r.c = a.c % b.c;
        if (r.c && (r.c < 0) != (b.c < 0))
            r.c += b.c;
    } else if (consts && !strcmp(op, "Max")) {
        r.c = a.c > b.c ? a.c : b.c;
    } else if (consts && !strcmp(op, "Min")) {
        r.c = a.c < b.c ? a.c : b.c;
    } else if (!strcmp(op, "Equal")) {
        /* a - b = d.b B + d.c with B >= 1 (torch.onnx's expand(n, -1, -1)
         * compares a shape holding the batch with -1): decided where every
         * batch size gives the same answer. */
        tc_sym_t d;
        if (__builtin_sub_overflow(a.b, b.b, &d.b) || __builtin_sub_overflow(a.c, b.c, &d.c))
            return -1;
        if (!d.b)
            r.c = d.c == 0;
        else if ((d.b > 0 && d.c > -d.b) || (d.b < 0 && d.c < -d.b))
            r.c = 0;
        else
            return -1;
    } else if (consts && !strcmp(op, "Less")) {
        r.c = a.c < b.c;
    } else if (consts && !strcmp(op, "LessOrEqual")) {
        r.c = a.c <= b.c;
    } else if (consts && !strcmp(op, "Greater")) {
        r.c = a.c > b.c;
    } else if (consts && !strcmp(op, "GreaterOrEqual")) {
        r.c = a.c >= b.c;
    } else if (consts && !strcmp(op, "And")) {
        r.c = a.c && b.c;
    } else if (consts && !strcmp(op, "Or")) {
        r.c = a.c || b.c;
    } else {
        return -1;
    }
    *out = r;
    return 0;
}

static bool s_is_compare(const char *op)
{
    return !strcmp(op, "Equal") || !strcmp(op, "Less") || !strcmp(op, "LessOrEqual") ||
           !strcmp(op, "Greater") || !strcmp(op, "GreaterOrEqual") || !strcmp(op, "And") ||
           !strcmp(op, "Or") || !strcmp(op, "Xor") || !strcmp(op, "Not");
}

/* Flat index into `in` for flat index `i` of the broadcast output. */
static int64_t s_bcast_index(int64_t i, const tc_value_t *out, const tc_value_t *in)
{
    int64_t idx = 0, stride = 1;
    for (int k = out->rank - 1, a = in->rank - 1; k >= 0; k--, a--) {
        int64_t coord = i % out->dims[k];
        i /= out->dims[k];
        if (a < 0)
            continue;
        if (in->dims[a] != 1)
            idx += coord * stride;
        stride *= in->dims[a];
    }
    return idx;
}

/* Fold output 0 from inputs [0, count) when all their values are known;
 * `where` selects Where(cond, x, y) semantics. */
static int s_fold_bcast(tc_graph_t *g, tc_gnode_t *n, int count, bool where)
{
    tc_value_t *out = tc_node_out(g, n, 0);
    if (!out || out->batch_axis >= 0 || count > 16 || count < 1)
        return 0;
    int64_t elems = tc_value_elems(out);
    if (elems > TC_GRAPH_MAX_DATA)
        return 0;
    const tc_value_t *in[16];
    for (int k = 0; k < count; k++) {
        in[k] = tc_node_in(g, n, k);
        if (!in[k] || in[k]->n_data < 0)
            return 0;
    }
    bool exact = !s_is_int_type(out->elem_type);
    tc_sym_t buf[TC_GRAPH_MAX_DATA];
    for (int64_t i = 0; i < elems; i++) {
        tc_sym_t a = in[0]->data[s_bcast_index(i, out, in[0])];
        if (where) {
            tc_sym_t x = in[1]->data[s_bcast_index(i, out, in[1])];
            tc_sym_t y = in[2]->data[s_bcast_index(i, out, in[2])];
            if (a.b)
                return 0;
            buf[i] = a.c ? x : y;
            continue;
        }
        for (int k = 1; k < count; k++) {
            tc_sym_t b = in[k]->data[s_bcast_index(i, out, in[k])];
            if (s_sym_op(n->op, a, b, exact, &a) < 0)
                return 0; /* not representable: leave the value unknown */
        }
        buf[i] = a;
    }
    return tc_set_data(g, n, 0, buf, (int)elems);
}

int tc_infer_binary(tc_graph_t *g, tc_gnode_t *n, const tc_op_rule_t *r)
{
    int rc = tc_broadcast(g, n, n->n_in);
    if (rc < 0)
        return rc;
    if (s_is_compare(n->op))
        tc_set_type(g, n, 0, S_BOOL);
    if (strcmp(n->op, "PRelu") != 0)
        rc = s_fold_bcast(g, n, n->n_in, false);
    if (rc == 0 && !strcmp(n->op, "Add"))
        tc_matmul_take_bias(g, n);
    return rc;
}

int tc_infer_where(tc_graph_t *g, tc_gnode_t *n, const tc_op_rule_t *r)
{
    if (n->n_in != 3)
        return tc_node_fail(n, TC_EPARSE, "Where takes 3 inputs, not %d", n->n_in);
    int rc = tc_broadcast(g, n, 3);
    tc_value_t *out = tc_node_out(g, n, 0);
    const tc_value_t *x = tc_node_in(g, n, 1);
    if (rc == 0 && out && x)
        out->elem_type = x->elem_type;
    return rc < 0 ? rc : s_fold_bcast(g, n, 3, true);
}

/* ---- constants and shape values ---- */

int tc_infer_constant(tc_graph_t *g, tc_gnode_t *n, const tc_op_rule_t *r)
{
    tc_value_t *out = tc_node_out(g, n, 0);
    if (!out)
        return tc_node_fail(n, TC_EPARSE, "Constant has no output");
    const Onnx__AttributeProto *a;
    if ((a = tc_attr(n, "value"))) {
        if (!a->t)
            return tc_node_fail(n, TC_EPARSE, "attribute 'value' must be a tensor");
        char what[300];
        snprintf(what, sizeof what, "node '%.200s' (Constant) value", n->name);
        return tc_tensor_to_value(g, a->t, out, what);
    }
    int64_t ints[TC_GRAPH_MAX_DATA];
    int count, rc;
    if ((a = tc_attr(n, "value_int"))) {
        rc = tc_attr_int(n, "value_int", 0, &ints[0]);
        if (rc == 0)
            rc = tc_set_shape(g, n, 0, 0, NULL, -1);
        out->elem_type = S_INT64;
        tc_sym_t v = {0, ints[0]};
        return rc < 0 ? rc : tc_set_data(g, n, 0, &v, 1);
    }
    if ((a = tc_attr(n, "value_ints"))) {
        rc = tc_attr_ints(n, "value_ints", ints, TC_GRAPH_MAX_DATA, &count);
        int64_t dims[1] = {count};
        if (rc == 0)
            rc = tc_set_shape(g, n, 0, 1, dims, -1);
        out->elem_type = S_INT64;
        tc_sym_t v[TC_GRAPH_MAX_DATA];
        for (int k = 0; k < count; k++)
            v[k] = (tc_sym_t){0, ints[k]};
        return rc < 0 ? rc : tc_set_data(g, n, 0, v, count);
    }
    if ((a = tc_attr(n, "value_float")) || (a = tc_attr(n, "value_string"))) {
        out->elem_type = tc_attr(n, "value_float") ? ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT
                                                   : ONNX__TENSOR_PROTO__DATA_TYPE__STRING;
        return tc_set_shape(g, n, 0, 0, NULL, -1);
    }
    if ((a = tc_attr(n, "value_floats")) || (a = tc_attr(n, "value_strings"))) {
        int64_t dims[1] = {(int64_t)(a->n_floats + a->n_strings)};
        return tc_set_shape(g, n, 0, 1, dims, -1);
    }
    return tc_node_fail(n, TC_EUNSUPPORTED, "Constant without a value attribute this importer "
                                            "understands");
}

/* Range(start, limit, delta) of scalars known at import time (torch's
 * arange in index arithmetic, e.g. swin's shifted-window mask). */
int tc_infer_range(tc_graph_t *g, tc_gnode_t *n, const tc_op_rule_t *r)
{
    int64_t v[3];
    for (int i = 0; i < 3; i++) {
        int count;
        int rc = tc_node_ints(g, n, i, &v[i], 1, &count);
        if (rc < 0)
            return rc;
        if (count != 1)
            return tc_node_fail(n, TC_EPARSE, "input %d has %d values, not a scalar", i, count);
    }
    if (v[2] == 0)
        return tc_node_fail(n, TC_EPARSE, "delta 0");
    if (v[0] < -TC_GRAPH_MAX_DIM || v[0] > TC_GRAPH_MAX_DIM || v[1] < -TC_GRAPH_MAX_DIM ||
        v[1] > TC_GRAPH_MAX_DIM)
        return tc_node_fail(n, TC_EPARSE, "start or limit out of range");
    int64_t span = v[1] - v[0], len = 0; /* |span| <= 2^32 */
    if (span > 0 && v[2] > 0)
        len = (span - 1) / v[2] + 1;
    else if (span < 0 && v[2] < 0)
        len = (span + 1) / v[2] + 1;
    int rc = tc_set_shape(g, n, 0, 1, &len, -1);
    const tc_value_t *start = tc_node_in(g, n, 0);
    tc_set_type(g, n, 0, start ? start->elem_type : S_INT64);
    if (rc < 0 || len > TC_GRAPH_MAX_DATA)
        return rc;
    tc_sym_t buf[TC_GRAPH_MAX_DATA];
    for (int64_t i = 0; i < len; i++)
        buf[i] = (tc_sym_t){0, v[0] + i * v[2]};
    return tc_set_data(g, n, 0, buf, (int)len);
}

int tc_infer_constant_of_shape(tc_graph_t *g, tc_gnode_t *n, const tc_op_rule_t *r)
{
    const tc_sym_t *shape;
    int count, rc = tc_node_const(g, n, 0, &shape, &count);
    if (rc < 0)
        return rc;
    rc = tc_set_shape_sym(g, n, 0, count, shape);
    if (rc < 0)
        return rc;
    tc_value_t *out = tc_node_out(g, n, 0);
    const Onnx__AttributeProto *a = tc_attr(n, "value");
    if (a && a->t && out) {
        tc_value_t tmp;
        memset(&tmp, 0, sizeof tmp);
        tmp.n_data = -1;
        char what[300];
        snprintf(what, sizeof what, "node '%.200s' (ConstantOfShape) value", n->name);
        rc = tc_tensor_to_value(g, a->t, &tmp, what);
        char attr_name[] = "value";
        if (rc == 0 && tmp.ext) {
            tmp.name = attr_name;
            rc = tc_value_read_external(g, &tmp);
            if (rc < 0)
                rc = tc_err_context(rc, "node '%.200s' (%.60s)", n->name, n->op);
        }
        out->elem_type = tmp.elem_type;
        if (rc == 0 && tmp.n_data == 1 && out->batch_axis < 0 &&
            tc_value_elems(out) <= TC_GRAPH_MAX_DATA) {
            int64_t e = tc_value_elems(out);
            tc_sym_t buf[TC_GRAPH_MAX_DATA];
            for (int64_t i = 0; i < e; i++)
                buf[i] = tmp.data[0];
            rc = tc_set_data(g, n, 0, buf, (int)e);
        }
        free(tmp.data);
    } else if (out) {
        out->elem_type = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT;
    }
    return rc;
}

int tc_infer_shape(tc_graph_t *g, tc_gnode_t *n, const tc_op_rule_t *r)
{
    tc_value_t *x = NULL;
    int64_t start = 0, end = 0;
    int rc = tc_node_need(g, n, 0, &x);
    if (rc == 0)
        rc = tc_attr_int(n, "start", 0, &start);
    if (rc == 0)
        rc = tc_attr_int(n, "end", x->rank, &end);
    if (rc < 0)
        return rc;
    if (start < 0)
        start += x->rank;
    if (end < 0)
        end += x->rank;
    start = start < 0 ? 0 : start > x->rank ? x->rank : start;
    end = end < start ? start : end > x->rank ? x->rank : end;
    tc_sym_t v[TC_MODEL_MAX_RANK];
    int count = 0;
    for (int64_t k = start; k < end; k++)
        v[count++] = k == x->batch_axis ? (tc_sym_t){x->dims[k], 0} : (tc_sym_t){0, x->dims[k]};
    int64_t dims[1] = {count};
    rc = tc_set_shape(g, n, 0, 1, dims, -1);
    tc_set_type(g, n, 0, S_INT64);
    return rc < 0 ? rc : tc_set_data(g, n, 0, v, count);
}

int tc_infer_size(tc_graph_t *g, tc_gnode_t *n, const tc_op_rule_t *r)
{
    tc_value_t *x = NULL;
    int rc = tc_node_need(g, n, 0, &x);
    if (rc < 0)
        return rc;
    int64_t e = tc_value_elems(x);
    tc_sym_t v = x->batch_axis >= 0 ? (tc_sym_t){e, 0} : (tc_sym_t){0, e};
    rc = tc_set_shape(g, n, 0, 0, NULL, -1);
    tc_set_type(g, n, 0, S_INT64);
    return rc < 0 ? rc : tc_set_data(g, n, 0, &v, 1);
}

int tc_infer_gather(tc_graph_t *g, tc_gnode_t *n, const tc_op_rule_t *r)
{
    tc_value_t *x = NULL, *idx = NULL;
    int64_t axis64;
    int axis, rc = tc_node_need(g, n, 0, &x);
    if (rc == 0)
        rc = tc_node_need(g, n, 1, &idx);
    if (rc == 0)
        rc = tc_attr_int(n, "axis", 0, &axis64);
    if (rc == 0)
        rc = tc_axis(n, axis64, x->rank, &axis);
    if (rc < 0)
        return rc;
    if (axis == x->batch_axis)
        return tc_node_fail(n, TC_EUNSUPPORTED, "gathers along the batch axis");
    if (idx->batch_axis >= 0 && x->batch_axis >= 0)
        return tc_node_fail(n, TC_EUNSUPPORTED, "both data and indices carry the batch");
    int rank = x->rank - 1 + idx->rank;
    int64_t dims[TC_MODEL_MAX_RANK];
    int batch = -1;
    if (rank > TC_MODEL_MAX_RANK)
        return tc_node_fail(n, TC_ELIMIT, "output rank %d", rank);
    int o = 0;
    for (int k = 0; k < axis; k++, o++) {
        dims[o] = x->dims[k];
        if (k == x->batch_axis)
            batch = o;
    }
    for (int k = 0; k < idx->rank; k++, o++) {
        dims[o] = idx->dims[k];
        if (k == idx->batch_axis)
            batch = o;
    }
    for (int k = axis + 1; k < x->rank; k++, o++) {
        dims[o] = x->dims[k];
        if (k == x->batch_axis)
            batch = o;
    }
    rc = tc_set_shape(g, n, 0, rank, dims, batch);
    tc_value_t *out = tc_node_out(g, n, 0);
    if (rc < 0 || !out)
        return rc;
    out->elem_type = x->elem_type;
    /* Fold when data and indices are known. */
    if (x->n_data < 0 || idx->n_data < 0 || out->batch_axis >= 0)
        return 0;
    int64_t outer = 1, inner = 1, ax = x->dims[axis];
    for (int k = 0; k < axis; k++)
        outer *= x->dims[k];
    for (int k = axis + 1; k < x->rank; k++)
        inner *= x->dims[k];
    int64_t total = tc_value_elems(out);
    if (total > TC_GRAPH_MAX_DATA)
        return 0;
    tc_sym_t buf[TC_GRAPH_MAX_DATA];
    int64_t p = 0;
    for (int64_t a = 0; a < outer; a++) {
        for (int64_t j = 0; j < idx->n_data; j++) {
            tc_sym_t iv = idx->data[j];
            int64_t i = iv.c < 0 ? iv.c + ax : iv.c;
            if (iv.b || i < 0 || i >= ax)
                return tc_node_fail(n, TC_EPARSE, "index %" PRId64 " outside 0..%" PRId64,
                                    iv.c, ax - 1);
            for (int64_t b = 0; b < inner; b++)
                buf[p++] = x->data[(a * ax + i) * inner + b];
        }
    }
    return tc_set_data(g, n, 0, buf, (int)p);
}

/* Axes from the attribute or (newer opsets) input 1; *count -1 if absent. */
int tc_infer_concat(tc_graph_t *g, tc_gnode_t *n, const tc_op_rule_t *r)
{
    tc_value_t *x0 = NULL;
    int64_t axis64;
    int axis, rc = tc_node_need(g, n, 0, &x0);
    if (rc == 0)
        rc = tc_attr_int(n, "axis", INT64_MIN, &axis64);
    if (rc < 0)
        return rc;
    if (axis64 == INT64_MIN)
        return tc_node_fail(n, TC_EPARSE, "Concat needs an axis");
    rc = tc_axis(n, axis64, x0->rank, &axis);
    if (rc < 0)
        return rc;
    int64_t dims[TC_MODEL_MAX_RANK];
    memcpy(dims, x0->dims, sizeof dims);
    dims[axis] = 0;
    int batch = -1;
    bool fold = true;
    for (int k = 0; k < n->n_in; k++) {
        tc_value_t *v;
        rc = tc_node_need(g, n, k, &v);
        if (rc < 0)
            return rc;
        if (v->rank != x0->rank)
            return tc_node_fail(n, TC_EPARSE, "input %d has rank %d, input 0 rank %d", k,
                                v->rank, x0->rank);
        if (v->batch_axis >= 0) {
            if (v->batch_axis == axis)
                return tc_node_fail(n, TC_EUNSUPPORTED, "concatenates along the batch axis");
            if (batch >= 0 && batch != v->batch_axis)
                return tc_node_fail(n, TC_EPARSE, "inputs carry the batch on different axes");
            batch = v->batch_axis;
        }
        for (int a = 0; a < v->rank; a++) {
            if (a == axis || a == v->batch_axis || a == x0->batch_axis)
                continue;
            if (v->dims[a] != x0->dims[a])
                return tc_node_fail(n, TC_EPARSE, "input %d: dimension %d is %" PRId64
                                                  ", input 0 has %" PRId64,
                                    k, a, v->dims[a], x0->dims[a]);
        }
        if (tc_add64(dims[axis], v->dims[axis], &dims[axis]) < 0)
            return tc_node_fail(n, TC_ELIMIT, "concatenated size overflows");
        fold = fold && v->n_data >= 0;
    }
    for (int k = 0; k < n->n_in && batch >= 0; k++) {
        const tc_value_t *v = tc_node_in(g, n, k);
        if (v->batch_axis < 0 && v->dims[batch] != 1)
            return tc_node_fail(n, TC_EPARSE, "input %d has no batch but size %" PRId64
                                              " on the batch axis",
                                k, v->dims[batch]);
    }
    rc = tc_set_shape(g, n, 0, x0->rank, dims, batch);
    tc_value_t *out = tc_node_out(g, n, 0);
    if (rc < 0 || !out)
        return rc;
    out->elem_type = x0->elem_type;
    if (!fold || batch >= 0 || tc_value_elems(out) > TC_GRAPH_MAX_DATA)
        return 0;
    int64_t outer = 1, inner = 1;
    for (int k = 0; k < axis; k++)
        outer *= dims[k];
    for (int k = axis + 1; k < x0->rank; k++)
        inner *= dims[k];
    tc_sym_t buf[TC_GRAPH_MAX_DATA];
    int64_t p = 0;
    for (int64_t o = 0; o < outer; o++) {
        for (int k = 0; k < n->n_in; k++) {
            const tc_value_t *v = tc_node_in(g, n, k);
            int64_t chunk = v->dims[axis] * inner;
            memcpy(&buf[p], &v->data[o * chunk], (size_t)chunk * sizeof *buf);
            p += chunk;
        }
    }
    return tc_set_data(g, n, 0, buf, (int)p);
}
