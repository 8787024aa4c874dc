/* What the per-op shape rules call on a node: its inputs and outputs
 * (shapes, types, folded values), its attributes, axis normalization and
 * broadcasting. Failures naming a node are tc_graph.c's (tc_node_fail). */
#include "tc_graph.h"

#include "tc_error.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- inputs and outputs ---- */

tc_value_t *tc_node_in(tc_graph_t *g, const tc_gnode_t *n, int i)
{
    if (i < 0 || i >= n->n_in || n->in[i] < 0)
        return NULL;
    return &g->values[n->in[i]];
}

int tc_node_need(tc_graph_t *g, const tc_gnode_t *n, int i, tc_value_t **out)
{
    tc_value_t *v = tc_node_in(g, n, i);
    if (!v)
        return tc_node_fail(n, TC_EPARSE, "input %d is required", i);
    if (!v->known)
        return tc_node_fail(n, TC_EPARSE, "input %d ('%s') has no known shape", i, v->name);
    *out = v;
    return 0;
}

tc_value_t *tc_node_out(tc_graph_t *g, const tc_gnode_t *n, int i)
{
    if (i < 0 || i >= n->n_out || n->out[i] < 0)
        return NULL;
    return &g->values[n->out[i]];
}

int tc_set_shape(tc_graph_t *g, tc_gnode_t *n, int i, int rank, const int64_t *dims,
                 int batch_axis)
{
    tc_value_t *v = tc_node_out(g, n, i);
    if (!v)
        return 0;
    if (rank < 0 || rank > TC_MODEL_MAX_RANK)
        return tc_node_fail(n, TC_ELIMIT, "output %d would have rank %d (at most %d)", i, rank,
                            TC_MODEL_MAX_RANK);
    if (batch_axis >= rank)
        return tc_node_fail(n, TC_EPARSE, "output %d: batch axis %d outside rank %d", i,
                            batch_axis, rank);
    int64_t elems = 1;
    for (int k = 0; k < rank; k++) {
        /* The batch axis holds how many times the batch it is (1, or the
         * heads a reshape folded into it). */
        int64_t d = k == batch_axis && dims[k] < 1 ? 1 : dims[k];
        if (d < 0 || d > TC_GRAPH_MAX_DIM)
            return tc_node_fail(n, TC_EPARSE, "output %d: dimension %d would be %" PRId64, i,
                                k, d);
        if (tc_mul64(elems, d, &elems) < 0 || elems > TC_GRAPH_MAX_ELEMS)
            return tc_node_fail(n, TC_ELIMIT, "output %d would have more than 2^40 elements "
                                              "per sample",
                                i);
        v->dims[k] = d;
    }
    v->rank = rank;
    v->batch_axis = batch_axis < 0 ? -1 : batch_axis;
    v->known = true;
    return 0;
}

int tc_set_like(tc_graph_t *g, tc_gnode_t *n, int i, const tc_value_t *src)
{
    int rc = tc_set_shape(g, n, i, src->rank, src->dims, src->batch_axis);
    tc_value_t *v = tc_node_out(g, n, i);
    if (rc == 0 && v && !v->elem_type)
        v->elem_type = src->elem_type;
    return rc;
}

void tc_set_type(tc_graph_t *g, tc_gnode_t *n, int i, int32_t elem_type)
{
    tc_value_t *v = tc_node_out(g, n, i);
    if (v)
        v->elem_type = elem_type;
}

int tc_set_shape_sym(tc_graph_t *g, tc_gnode_t *n, int i, int rank, const tc_sym_t *dims)
{
    int64_t d[TC_MODEL_MAX_RANK];
    int batch = -1;
    if (rank > TC_MODEL_MAX_RANK)
        return tc_node_fail(n, TC_ELIMIT, "output %d would have rank %d", i, rank);
    for (int k = 0; k < rank; k++) {
        if (dims[k].b == 0) {
            d[k] = dims[k].c;
        } else if (dims[k].b >= 1 && dims[k].c == 0 && batch < 0) {
            batch = k;
            d[k] = dims[k].b;
        } else {
            return tc_node_fail(n, TC_EUNSUPPORTED,
                                "output %d: dimension %d would be %" PRId64 "*batch%+" PRId64
                                "; the batch must stay a dimension of its own",
                                i, k, dims[k].b, dims[k].c);
        }
    }
    return tc_set_shape(g, n, i, rank, d, batch);
}

int tc_set_data(tc_graph_t *g, tc_gnode_t *n, int i, const tc_sym_t *data, int count)
{
    tc_value_t *v = tc_node_out(g, n, i);
    if (!v)
        return 0;
    if (!v->known || v->batch_axis >= 0 || tc_value_elems(v) != count || count > TC_GRAPH_MAX_DATA)
        return 0; /* nothing to fold */
    tc_sym_t *d = malloc((count ? (size_t)count : 1) * sizeof *d);
    if (!d)
        return tc_fail(TC_ENOMEM, "out of memory");
    if (count)
        memcpy(d, data, (size_t)count * sizeof *d);
    free(v->data);
    v->data = d;
    v->n_data = count;
    return 0;
}

int tc_node_const(tc_graph_t *g, const tc_gnode_t *n, int i, const tc_sym_t **data, int *count)
{
    tc_value_t *v = tc_node_in(g, n, i);
    if (!v)
        return tc_node_fail(n, TC_EPARSE, "input %d is required", i);
    if (v->n_data < 0 || v->batch_axis >= 0)
        return tc_node_fail(n, TC_EUNSUPPORTED, "input %d ('%s') must be an integer tensor "
                                                "known at import time",
                            i, v->name);
    *data = v->data;
    *count = v->n_data;
    return 0;
}

int tc_node_ints(tc_graph_t *g, const tc_gnode_t *n, int i, int64_t *out, int max, int *count)
{
    const tc_sym_t *d = NULL;
    int c = 0, rc = tc_node_const(g, n, i, &d, &c);
    if (rc < 0)
        return rc;
    if (c > max)
        return tc_node_fail(n, TC_ELIMIT, "input %d has %d values (at most %d)", i, c, max);
    for (int k = 0; k < c; k++) {
        if (d[k].b)
            return tc_node_fail(n, TC_EUNSUPPORTED, "input %d depends on the batch size", i);
        out[k] = d[k].c;
    }
    *count = c;
    return 0;
}

/* ---- attributes ---- */

const Onnx__AttributeProto *tc_attr(const tc_gnode_t *n, const char *name)
{
    if (!n->proto)
        return NULL;
    for (size_t i = 0; i < n->proto->n_attribute; i++) {
        const Onnx__AttributeProto *a = n->proto->attribute[i];
        if (a->name && !strcmp(a->name, name))
            return a;
    }
    return NULL;
}

static bool s_type_is(const Onnx__AttributeProto *a, Onnx__AttributeProto__AttributeType t)
{
    return !a->has_type || a->type == t;
}

int tc_attr_int(const tc_gnode_t *n, const char *name, int64_t def, int64_t *out)
{
    const Onnx__AttributeProto *a = tc_attr(n, name);
    if (!a) {
        *out = def;
        return 0;
    }
    if (!s_type_is(a, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT) || !a->has_i)
        return tc_node_fail(n, TC_EPARSE, "attribute '%s' must be an integer", name);
    *out = a->i;
    return 0;
}

int tc_attr_float(const tc_gnode_t *n, const char *name, float def, float *out)
{
    const Onnx__AttributeProto *a = tc_attr(n, name);
    if (!a) {
        *out = def;
        return 0;
    }
    if (!s_type_is(a, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT) || !a->has_f)
        return tc_node_fail(n, TC_EPARSE, "attribute '%s' must be a float", name);
    *out = a->f;
    return 0;
}

int tc_attr_ints(const tc_gnode_t *n, const char *name, int64_t *out, int max, int *count)
{
    const Onnx__AttributeProto *a = tc_attr(n, name);
    *count = -1;
    if (!a)
        return 0;
    if (!s_type_is(a, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS))
        return tc_node_fail(n, TC_EPARSE, "attribute '%s' must be a list of integers", name);
    if (a->n_ints > (size_t)max)
        return tc_node_fail(n, TC_ELIMIT, "attribute '%s' has %zu values (at most %d)", name,
                            a->n_ints, max);
    for (size_t i = 0; i < a->n_ints; i++)
        out[i] = a->ints[i];
    *count = (int)a->n_ints;
    return 0;
}

int tc_attr_str(const tc_gnode_t *n, const char *name, const char *def, char *buf, size_t size)
{
    const Onnx__AttributeProto *a = tc_attr(n, name);
    if (!a) {
        snprintf(buf, size, "%s", def);
        return 0;
    }
    if (!s_type_is(a, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING) || !a->has_s)
        return tc_node_fail(n, TC_EPARSE, "attribute '%s' must be a string", name);
    size_t len = a->s.len < size - 1 ? a->s.len : size - 1;
    if (len)
        memcpy(buf, a->s.data, len);
    buf[len] = '\0';
    if (memchr(buf, '\0', len))
        return tc_node_fail(n, TC_EPARSE, "attribute '%s' contains a NUL byte", name);
    return 0;
}

int tc_axis(const tc_gnode_t *n, int64_t axis, int rank, int *out)
{
    if (axis < -(int64_t)rank || axis >= rank)
        return tc_node_fail(n, TC_EPARSE, "axis %" PRId64 " is outside rank %d", axis, rank);
    *out = (int)(axis < 0 ? axis + rank : axis);
    return 0;
}

/* ---- broadcasting ---- */

int tc_broadcast(tc_graph_t *g, tc_gnode_t *n, int count)
{
    int rank = 0;
    const tc_value_t *in[16];
    int m = 0;
    for (int k = 0; k < count && k < n->n_in; k++) {
        const tc_value_t *v = tc_node_in(g, n, k);
        if (!v)
            continue;
        if (m == 16)
            return tc_node_fail(n, TC_ELIMIT, "more than 16 inputs to broadcast");
        in[m++] = v;
        if (v->rank > rank)
            rank = v->rank;
    }
    if (!m)
        return tc_node_fail(n, TC_EPARSE, "the node has no inputs");
    int64_t dims[TC_MODEL_MAX_RANK];
    int batch = -1;
    for (int k = 0; k < rank; k++) {
        int64_t d = 1, mult = 1;
        bool is_batch = false;
        for (int j = 0; j < m; j++) {
            int off = rank - in[j]->rank;
            if (k < off)
                continue;
            int a = k - off;
            if (a == in[j]->batch_axis) {
                if (!is_batch && d != 1)
                    return tc_node_fail(n, TC_EPARSE,
                                        "cannot broadcast dimension %" PRId64 " with the batch",
                                        d);
                if (is_batch && mult != in[j]->dims[a])
                    return tc_node_fail(n, TC_EPARSE,
                                        "cannot broadcast %" PRId64 "*batch with %" PRId64
                                        "*batch",
                                        mult, in[j]->dims[a]);
                is_batch = true;
                mult = in[j]->dims[a];
                continue;
            }
            int64_t e = in[j]->dims[a];
            if (e == 1)
                continue;
            if (is_batch)
                return tc_node_fail(n, TC_EPARSE,
                                    "cannot broadcast dimension %" PRId64 " with the batch", e);
            if (d != 1 && d != e)
                return tc_node_fail(n, TC_EPARSE,
                                    "cannot broadcast dimensions %" PRId64 " and %" PRId64, d,
                                    e);
            d = e;
        }
        dims[k] = is_batch ? mult : d;
        if (is_batch && batch >= 0)
            return tc_node_fail(n, TC_EUNSUPPORTED,
                                "inputs carry the batch on different axes (%d and %d)", batch,
                                k);
        if (is_batch)
            batch = k;
    }
    int rc = tc_set_shape(g, n, 0, rank, dims, batch);
    tc_value_t *out = tc_node_out(g, n, 0);
    if (rc == 0 && out && !out->elem_type)
        out->elem_type = in[0]->elem_type;
    return rc;
}
