/* Shape inference driver: topological order, the per-op rules
 * (tc_shape_ops.c, tc_shape_move.c, tc_shape_nn.c), then per node its
 * parameters, elements and class; finally the file's own value_info is
 * checked against what was inferred (it is never trusted). The helpers the
 * rules call (inputs, outputs, attributes, broadcasting) are in
 * tc_shape_node.c. */
#include "tc_graph.h"

#include "tc_error.h"
#include "tc_log.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
    rc = tc_graph_layout(g);
    if (rc < 0)
        return rc;
    for (size_t i = 0; i < g->n_unknown; i++)
        tc_log_warn("counted as a generic element-wise layer: %s", g->unknown[i]);
    return 0;
}
