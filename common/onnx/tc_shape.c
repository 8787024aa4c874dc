/* Shape inference driver: topological order, the per-op rules
 * (tc_shape_ops.c, tc_shape_nn.c), then per node its parameters, elements
 * and class; finally the file's own value_info is checked against what was
 * inferred (it is never trusted). */
#include "tc_graph.h"

#include "tc_error.h"
#include "tc_log.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int tc_node_fail(const tc_gnode_t *n, int code, const char *fmt, ...)
{
    char msg[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return tc_fail(code, "node '%.200s' (%.60s): %s", n->name, n->op, msg);
}

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
        int64_t d = k == batch_axis ? 1 : dims[k];
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
        } else if (dims[k].b == 1 && dims[k].c == 0 && batch < 0) {
            batch = k;
            d[k] = 1;
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
    const tc_sym_t *d;
    int c, rc = tc_node_const(g, n, i, &d, &c);
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

/* ---- topological order ---- */

static int s_sort(tc_graph_t *g)
{
    size_t n = g->n_nodes;
    g->order = malloc(n * sizeof *g->order);
    if (!g->order)
        return tc_fail(TC_ENOMEM, "out of memory");
    /* Most files are sorted already: keep their order then. */
    bool sorted = true;
    for (size_t i = 0; i < n && sorted; i++) {
        const tc_gnode_t *nd = &g->nodes[i];
        for (int k = 0; k < nd->n_in; k++) {
            int v = nd->in[k];
            if (v >= 0 && g->values[v].producer >= (int)i) {
                sorted = false;
                break;
            }
        }
    }
    if (sorted) {
        for (size_t i = 0; i < n; i++)
            g->order[i] = (int)i;
        return 0;
    }
    /* Kahn's algorithm over producer -> consumer edges. */
    int *indeg = calloc(n, sizeof *indeg);
    size_t *start = calloc(n + 1, sizeof *start);
    size_t edges = 0;
    int rc = 0;
    if (!indeg || !start) {
        rc = tc_fail(TC_ENOMEM, "out of memory");
        goto out;
    }
    for (size_t i = 0; i < n; i++) {
        for (int k = 0; k < g->nodes[i].n_in; k++) {
            int v = g->nodes[i].in[k];
            if (v >= 0 && g->values[v].producer >= 0) {
                start[g->values[v].producer + 1]++;
                indeg[i]++;
                edges++;
            }
        }
    }
    for (size_t i = 0; i < n; i++)
        start[i + 1] += start[i];
    int *adj = malloc((edges ? edges : 1) * sizeof *adj);
    size_t *fill = calloc(n, sizeof *fill);
    if (!adj || !fill) {
        free(adj);
        free(fill);
        rc = tc_fail(TC_ENOMEM, "out of memory");
        goto out;
    }
    for (size_t i = 0; i < n; i++) {
        for (int k = 0; k < g->nodes[i].n_in; k++) {
            int v = g->nodes[i].in[k];
            if (v >= 0 && g->values[v].producer >= 0) {
                int p = g->values[v].producer;
                adj[start[p] + fill[p]++] = (int)i;
            }
        }
    }
    size_t head = 0, tail = 0;
    for (size_t i = 0; i < n; i++)
        if (!indeg[i])
            g->order[tail++] = (int)i;
    while (head < tail) {
        int u = g->order[head++];
        for (size_t e = start[u]; e < start[u + 1]; e++)
            if (--indeg[adj[e]] == 0)
                g->order[tail++] = adj[e];
    }
    if (tail < n) {
        for (size_t i = 0; i < n; i++) {
            if (indeg[i]) {
                rc = tc_node_fail(&g->nodes[i], TC_EPARSE,
                                  "the graph has a cycle through this node");
                break;
            }
        }
    }
    free(adj);
    free(fill);
out:
    free(indeg);
    free(start);
    return rc;
}

/* ---- per node ---- */

static int s_unknown(tc_graph_t *g, tc_gnode_t *n)
{
    const tc_value_t *src = NULL;
    for (int k = 0; k < n->n_in && !src; k++)
        src = tc_node_in(g, n, k);
    if (!src)
        return tc_node_fail(n, TC_EUNSUPPORTED, "an unknown op without inputs cannot be "
                                                "counted as an element-wise layer");
    for (int k = 0; k < n->n_out; k++) {
        int rc = tc_set_like(g, n, k, src);
        if (rc < 0)
            return rc;
    }
    char label[320];
    snprintf(label, sizeof label, "%.200s (%s%s%.60s)", n->name, n->domain,
             *n->domain ? "::" : "", n->op);
    char **u = tc_arena_alloc(&g->arena, (g->n_unknown + 1) * sizeof *u);
    char *s = tc_arena_strdup(&g->arena, label);
    if (!u || !s)
        return tc_fail(TC_ENOMEM, "out of memory");
    if (g->n_unknown)
        memcpy(u, g->unknown, g->n_unknown * sizeof *u);
    u[g->n_unknown++] = s;
    g->unknown = u;
    n->unknown = true;
    return 0;
}

static void s_shape_no_batch(const tc_value_t *v, int *rank, int64_t *dims)
{
    int r = 0;
    for (int k = 0; k < v->rank; k++)
        if (k != v->batch_axis)
            dims[r++] = v->dims[k];
    *rank = r;
}

/* Data movement applied to weights only (torch.onnx writes a Linear on a
 * 4-D tensor as MatMul(x, Transpose(W))): the result stands for the weights
 * and the layer that consumes it owns them. */
static bool s_weight_view(tc_graph_t *g, const tc_gnode_t *n)
{
    static const char *const ops[] = {"Transpose", "Identity", "Reshape", "Cast", "Unsqueeze",
                                      "Squeeze", "Flatten"};
    bool known = false;
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
        known = known || !strcmp(n->op, ops[i]);
    const tc_value_t *x = tc_node_in(g, n, 0);
    const tc_value_t *y = tc_node_out(g, n, 0);
    if (!known || *n->domain || !x || !y || !x->is_param || n->n_out != 1)
        return false;
    for (int k = 1; k < n->n_in; k++) {
        const tc_value_t *v = tc_node_in(g, n, k);
        if (v && (v->batch_axis >= 0 || v->grad))
            return false;
    }
    return true;
}

static int s_summarize(tc_graph_t *g, tc_gnode_t *n, const tc_op_rule_t *rule)
{
    tc_model_node_t *info = &n->info;
    if (s_weight_view(g, n)) {
        tc_value_t *x = tc_node_in(g, n, 0), *y = tc_node_out(g, n, 0);
        y->is_param = true;
        y->param_count = x->owner < 0 ? x->param_count : 0;
        x->owner = (int)(n - g->nodes);
        n->folded = true;
        return 0;
    }
    bool grad = false;
    uint64_t params = 0, elems_in = 0, elems_out = 0;
    for (int k = 0; k < n->n_in; k++) {
        tc_value_t *v = tc_node_in(g, n, k);
        if (!v)
            continue;
        if (v->batch_axis >= 0)
            elems_in += (uint64_t)tc_value_elems(v);
        bool buffer = rule && k < 32 && (rule->buffers >> k) & 1;
        if (v->is_param && !buffer) {
            grad = true;
            if (v->owner < 0) {
                v->owner = (int)(n - g->nodes);
                params += v->param_count;
            }
        }
        grad = grad || v->grad;
    }
    bool out_batched = false, out_grad = false;
    for (int k = 0; k < n->n_out; k++) {
        tc_value_t *v = tc_node_out(g, n, k);
        if (!v)
            continue;
        if (!v->known)
            return tc_node_fail(n, TC_EPARSE, "the shape of output %d could not be inferred", k);
        /* Values known at import time are constants: no gradient flows. */
        v->grad = grad && v->n_data < 0;
        out_grad = out_grad || v->grad;
        if (v->batch_axis >= 0) {
            out_batched = true;
            elems_out += (uint64_t)tc_value_elems(v);
        }
    }
    /* Constant arithmetic (Shape -> Gather -> ... -> the shape input of a
     * Reshape) is folded away: it produces no per-sample data, owns no
     * parameters and carries no gradient. */
    n->folded = !out_batched && !out_grad && params == 0 && !n->unknown;
    info->name = n->name;
    info->op = n->op;
    info->op_class = rule ? rule->cls : TC_OPC_OTHER;
    info->params = params;
    info->elems_in = elems_in;
    info->elems_out = elems_out;
    const tc_value_t *in0 = NULL;
    for (int k = 0; k < n->n_in && !in0; k++)
        in0 = tc_node_in(g, n, k);
    if (in0)
        s_shape_no_batch(in0, &info->rank_in, info->in_shape);
    const tc_value_t *out0 = NULL;
    for (int k = 0; k < n->n_out && !out0; k++)
        out0 = tc_node_out(g, n, k);
    if (!out0)
        return tc_node_fail(n, TC_EPARSE, "the node names none of its outputs");
    s_shape_no_batch(out0, &info->rank_out, info->out_shape);
    info->out_batched = out0->batch_axis >= 0;
    if (info->flops == 0 && out0->batch_axis >= 0) {
        double per = rule ? rule->flops_per_elem : 1.0;
        info->flops = per * (double)tc_value_elems(out0);
    }
    info->macs = n->macs;
    return 0;
}

/* value_info and graph outputs: what the file claims must match. */
static int s_check_claims(tc_graph_t *g)
{
    const Onnx__GraphProto *gp = g->proto;
    if (!gp)
        return 0;
    size_t total = gp->n_value_info + gp->n_output;
    for (size_t i = 0; i < total; i++) {
        const Onnx__ValueInfoProto *vi =
            i < gp->n_value_info ? gp->value_info[i] : gp->output[i - gp->n_value_info];
        if (!vi->name)
            continue;
        int idx = tc_graph_value(g, vi->name);
        if (idx < 0)
            continue; /* value_info for a value nobody produces: ignored */
        const tc_value_t *v = &g->values[idx];
        const Onnx__TypeProto *tp = vi->type;
        if (!v->known || !tp || tp->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE ||
            !tp->tensor_type || !tp->tensor_type->shape)
            continue;
        const Onnx__TensorShapeProto *sh = tp->tensor_type->shape;
        if ((int)sh->n_dim != v->rank)
            return tc_fail(TC_EPARSE, "value '%s': the file claims rank %zu, inference gives "
                                      "%d",
                           v->name, sh->n_dim, v->rank);
        for (size_t k = 0; k < sh->n_dim; k++) {
            const Onnx__TensorShapeProto__Dimension *d = sh->dim[k];
            if (!d || d->value_case != ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE)
                continue;
            if ((int)k == v->batch_axis)
                continue; /* a file exported at a fixed batch */
            if (d->dim_value != v->dims[k])
                return tc_fail(TC_EPARSE, "value '%s': the file claims dimension %zu is %" PRId64
                                          ", inference gives %" PRId64,
                               v->name, k, d->dim_value, v->dims[k]);
        }
    }
    return 0;
}

int tc_graph_infer(tc_graph_t *g)
{
    int rc = s_sort(g);
    if (rc < 0)
        return rc;
    for (size_t i = 0; i < g->n_nodes; i++) {
        tc_gnode_t *n = &g->nodes[g->order[i]];
        for (int k = 0; k < n->n_in; k++) {
            tc_value_t *v = tc_node_in(g, n, k);
            if (v && !v->known)
                return tc_node_fail(n, TC_EPARSE, "input '%s' has no known shape", v->name);
            if (v && v->ext && (rc = tc_value_read_external(g, v)) < 0)
                return tc_err_context(rc, "node '%.200s' (%.60s)", n->name, n->op);
        }
        const tc_op_rule_t *rule = tc_op_rule_find(n->domain, n->op);
        if (rule) {
            rc = rule->infer(g, n, rule);
        } else if (g->allow_unknown) {
            rc = s_unknown(g, n);
        } else {
            rc = tc_node_fail(n, TC_EUNSUPPORTED,
                              "op '%s%s%s' is not supported; --allow-unknown counts such nodes as "
                              "generic element-wise layers",
                              n->domain, *n->domain ? "::" : "", n->op);
        }
        if (rc < 0)
            return rc;
        rc = s_summarize(g, n, rule);
        if (rc < 0)
            return rc;
    }
    if (!g->resized) {
        rc = s_check_claims(g);
        if (rc < 0)
            return rc;
    }
    for (size_t i = 0; i < g->n_unknown; i++)
        tc_log_warn("counted as a generic element-wise layer: %s", g->unknown[i]);
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
        int64_t d = 1;
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
                is_batch = true;
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
        dims[k] = is_batch ? 1 : d;
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
