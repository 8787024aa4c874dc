/* ONNX ModelProto -> graph IR: values (inputs, initializers, node outputs)
 * and nodes with resolved inputs. Everything a hostile file could inflate is
 * capped and checked here; shapes come later (tc_shape.c). The IR's storage
 * (arena, value table) is in tc_graph.c. */
#include "tc_graph.h"

#include "tc_error.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- initializers ---- */

static size_t s_elem_size(int32_t t)
{
    switch (t) {
    case ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT:
    case ONNX__TENSOR_PROTO__DATA_TYPE__INT32:
    case ONNX__TENSOR_PROTO__DATA_TYPE__UINT32:
        return 4;
    case ONNX__TENSOR_PROTO__DATA_TYPE__UINT8:
    case ONNX__TENSOR_PROTO__DATA_TYPE__INT8:
    case ONNX__TENSOR_PROTO__DATA_TYPE__BOOL:
        return 1;
    case ONNX__TENSOR_PROTO__DATA_TYPE__UINT16:
    case ONNX__TENSOR_PROTO__DATA_TYPE__INT16:
    case ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT16:
    case ONNX__TENSOR_PROTO__DATA_TYPE__BFLOAT16:
        return 2;
    case ONNX__TENSOR_PROTO__DATA_TYPE__INT64:
    case ONNX__TENSOR_PROTO__DATA_TYPE__UINT64:
    case ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE:
    case ONNX__TENSOR_PROTO__DATA_TYPE__COMPLEX64:
        return 8;
    case ONNX__TENSOR_PROTO__DATA_TYPE__COMPLEX128:
        return 16;
    default:
        return 0;
    }
}

static bool s_is_float(int32_t t)
{
    return t == ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT || t == ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE ||
           t == ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT16 ||
           t == ONNX__TENSOR_PROTO__DATA_TYPE__BFLOAT16;
}

static bool s_is_int(int32_t t)
{
    switch (t) {
    case ONNX__TENSOR_PROTO__DATA_TYPE__INT64:
    case ONNX__TENSOR_PROTO__DATA_TYPE__INT32:
    case ONNX__TENSOR_PROTO__DATA_TYPE__INT16:
    case ONNX__TENSOR_PROTO__DATA_TYPE__INT8:
    case ONNX__TENSOR_PROTO__DATA_TYPE__UINT8:
    case ONNX__TENSOR_PROTO__DATA_TYPE__UINT16:
    case ONNX__TENSOR_PROTO__DATA_TYPE__UINT32:
    case ONNX__TENSOR_PROTO__DATA_TYPE__UINT64:
    case ONNX__TENSOR_PROTO__DATA_TYPE__BOOL:
        return true;
    default:
        return false;
    }
}

/* Little-endian integer element i of raw bytes. */
static int64_t s_raw_int(const uint8_t *p, size_t size, bool is_signed)
{
    uint64_t u = 0;
    for (size_t k = 0; k < size; k++)
        u |= (uint64_t)p[k] << (8 * k);
    if (is_signed && size < 8 && (u >> (8 * size - 1)) & 1)
        u |= ~0ull << (8 * size);
    return (int64_t)u;
}

/* The typed data field ONNX defines for an element type (onnx.proto,
 * TensorProto: int32_data holds INT32, INT16, INT8, UINT16, UINT8, BOOL,
 * FLOAT16 and BFLOAT16; uint64_data holds UINT32 and UINT64), how many
 * values it has, and how many values all typed fields have together. */
typedef struct {
    const char *field;
    size_t count, total;
    const int64_t *int64;
    const int32_t *int32;
    const uint64_t *uint64;
} tc_typed_data_t;

static tc_typed_data_t s_typed_data(const Onnx__TensorProto *t, int32_t elem_type)
{
    tc_typed_data_t td = {0};
    td.total = t->n_float_data + t->n_int32_data + t->n_int64_data + t->n_double_data +
               t->n_uint64_data + t->n_string_data;
    switch (elem_type) {
    case ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT:
    case ONNX__TENSOR_PROTO__DATA_TYPE__COMPLEX64:
        td.field = "float_data";
        td.count = t->n_float_data;
        break;
    case ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE:
    case ONNX__TENSOR_PROTO__DATA_TYPE__COMPLEX128:
        td.field = "double_data";
        td.count = t->n_double_data;
        break;
    case ONNX__TENSOR_PROTO__DATA_TYPE__INT64:
        td.field = "int64_data";
        td.count = t->n_int64_data;
        td.int64 = t->int64_data;
        break;
    case ONNX__TENSOR_PROTO__DATA_TYPE__INT32:
    case ONNX__TENSOR_PROTO__DATA_TYPE__INT16:
    case ONNX__TENSOR_PROTO__DATA_TYPE__INT8:
    case ONNX__TENSOR_PROTO__DATA_TYPE__UINT16:
    case ONNX__TENSOR_PROTO__DATA_TYPE__UINT8:
    case ONNX__TENSOR_PROTO__DATA_TYPE__BOOL:
    case ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT16:
    case ONNX__TENSOR_PROTO__DATA_TYPE__BFLOAT16:
        td.field = "int32_data";
        td.count = t->n_int32_data;
        td.int32 = t->int32_data;
        break;
    case ONNX__TENSOR_PROTO__DATA_TYPE__UINT32:
    case ONNX__TENSOR_PROTO__DATA_TYPE__UINT64:
        td.field = "uint64_data";
        td.count = t->n_uint64_data;
        td.uint64 = t->uint64_data;
        break;
    case ONNX__TENSOR_PROTO__DATA_TYPE__STRING:
        td.field = "string_data";
        td.count = t->n_string_data;
        break;
    default:
        break;
    }
    return td;
}

/* v->data from `elems` little-endian values in `raw`, or else from the typed
 * field of `td` (which holds exactly `elems` values). */
static int s_set_ints(tc_value_t *v, int64_t elems, const uint8_t *raw,
                      const tc_typed_data_t *td)
{
    size_t esize = s_elem_size(v->elem_type);
    tc_sym_t *d = calloc(elems ? (size_t)elems : 1, sizeof *d);
    if (!d)
        return tc_fail(TC_ENOMEM, "out of memory");
    bool is_signed = v->elem_type != ONNX__TENSOR_PROTO__DATA_TYPE__UINT8 &&
                     v->elem_type != ONNX__TENSOR_PROTO__DATA_TYPE__UINT16 &&
                     v->elem_type != ONNX__TENSOR_PROTO__DATA_TYPE__UINT32 &&
                     v->elem_type != ONNX__TENSOR_PROTO__DATA_TYPE__UINT64 &&
                     v->elem_type != ONNX__TENSOR_PROTO__DATA_TYPE__BOOL;
    for (int64_t i = 0; i < elems; i++) {
        if (raw)
            d[i].c = s_raw_int(raw + (size_t)i * esize, esize, is_signed);
        else if (td->int64)
            d[i].c = td->int64[i];
        else if (td->int32)
            d[i].c = td->int32[i];
        else if (td->uint64)
            d[i].c = (int64_t)td->uint64[i];
    }
    free(v->data);
    v->data = d;
    v->n_data = (int)elems;
    return 0;
}

int tc_tensor_to_value(tc_graph_t *g, const Onnx__TensorProto *t, tc_value_t *v,
                       const char *what)
{
    if (t->n_dims > TC_MODEL_MAX_RANK)
        return tc_fail(TC_ELIMIT, "%s has rank %zu (at most %d)", what, t->n_dims,
                       TC_MODEL_MAX_RANK);
    int64_t elems = 1;
    for (size_t i = 0; i < t->n_dims; i++) {
        int64_t d = t->dims[i];
        if (d < 0 || d > TC_GRAPH_MAX_DIM)
            return tc_fail(TC_EPARSE, "%s: dimension %zu is %lld", what, i, (long long)d);
        if (tc_mul64(elems, d, &elems) < 0 || elems > TC_GRAPH_MAX_ELEMS)
            return tc_fail(TC_ELIMIT, "%s claims more than 2^40 elements", what);
        v->dims[i] = d;
    }
    v->rank = (int)t->n_dims;
    v->batch_axis = -1;
    v->known = true;
    v->elem_type = t->has_data_type ? t->data_type : 0;
    size_t esize = s_elem_size(v->elem_type);
    bool external = t->has_data_location &&
                    t->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
    /* Data, when present, must match the claimed shape, and typed data must
     * sit in the one field ONNX defines for the element type. */
    const tc_typed_data_t td = s_typed_data(t, v->elem_type);
    if (t->has_raw_data && t->raw_data.len) {
        if (!esize || (uint64_t)t->raw_data.len != (uint64_t)elems * esize)
            return tc_fail(TC_EPARSE, "%s: %zu bytes of data for %lld elements of type %d",
                           what, t->raw_data.len, (long long)elems, (int)v->elem_type);
        if (td.total)
            return tc_fail(TC_EPARSE, "%s: both raw and typed data", what);
    } else if (td.total && !external) {
        if (!td.field)
            return tc_fail(TC_EPARSE, "%s: typed data for element type %d, which has no typed "
                           "data field", what, (int)v->elem_type);
        if (td.total != td.count)
            return tc_fail(TC_EPARSE, "%s: element type %d keeps its data in %s, but other "
                           "data fields are set too", what, (int)v->elem_type, td.field);
        size_t expect = (size_t)elems;
        if (v->elem_type == ONNX__TENSOR_PROTO__DATA_TYPE__COMPLEX64 ||
            v->elem_type == ONNX__TENSOR_PROTO__DATA_TYPE__COMPLEX128)
            expect *= 2;
        if (td.count != expect)
            return tc_fail(TC_EPARSE, "%s: %zu %s elements for a shape of %lld", what, td.count,
                           td.field, (long long)elems);
    }
    free(v->data);
    v->data = NULL;
    v->n_data = -1;
    v->ext = NULL;
    if (!s_is_int(v->elem_type) || elems > TC_GRAPH_MAX_DATA)
        return 0;
    if (external) {
        v->ext = t; /* read when a node needs the values */
        return 0;
    }
    if (!(t->has_raw_data && t->raw_data.len) && !td.total)
        return 0; /* stripped: shape only */
    return s_set_ints(v, elems, t->has_raw_data && t->raw_data.len ? t->raw_data.data : NULL,
                      &td);
}

int tc_value_read_external(tc_graph_t *g, tc_value_t *v)
{
    const Onnx__TensorProto *t = v->ext;
    if (!t)
        return 0;
    v->ext = NULL;
    char what[320];
    snprintf(what, sizeof what, "%s '%.256s'", v->init ? "initializer" : "tensor",
             v->name ? v->name : "");
    int64_t elems = tc_value_elems(v); /* at most TC_GRAPH_MAX_DATA */
    size_t need = (size_t)elems * s_elem_size(v->elem_type);
    uint8_t *raw = malloc(need ? need : 1);
    if (!raw)
        return tc_fail(TC_ENOMEM, "out of memory");
    int rc = tc_external_read(g, t, what, need, raw);
    if (rc == 0)
        rc = s_set_ints(v, elems, raw, NULL);
    free(raw);
    return rc;
}

static const char *s_str(const char *s)
{
    return s ? s : "";
}

static int s_add_initializers(tc_graph_t *g, const Onnx__GraphProto *gp)
{
    char what[320];
    for (size_t i = 0; i < gp->n_initializer; i++) {
        const Onnx__TensorProto *t = gp->initializer[i];
        const char *name = s_str(t->name);
        if (!*name)
            return tc_fail(TC_EPARSE, "initializer %zu has no name", i);
        int idx, rc = tc_graph_add_value(g, name, &idx);
        if (rc < 0)
            return rc;
        tc_value_t *v = &g->values[idx];
        v->init = t;
        snprintf(what, sizeof what, "initializer '%.256s'", name);
        rc = tc_tensor_to_value(g, t, v, what);
        if (rc < 0)
            return rc;
        v->is_param = s_is_float(v->elem_type);
        v->param_count = v->is_param ? (uint64_t)tc_value_elems(v) : 0;
    }
    if (gp->n_sparse_initializer)
        return tc_fail(TC_EUNSUPPORTED, "sparse initializers are not supported");
    return 0;
}

/* A graph input whose shape is fully static: every dimension a value. */
static bool s_static_shape(const Onnx__ValueInfoProto *vi)
{
    const Onnx__TypeProto *tp = vi->type;
    if (!tp || tp->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE || !tp->tensor_type ||
        !tp->tensor_type->shape)
        return false;
    const Onnx__TensorShapeProto *sh = tp->tensor_type->shape;
    for (size_t i = 0; i < sh->n_dim; i++)
        if (!sh->dim[i] ||
            sh->dim[i]->value_case != ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE)
            return false;
    return true;
}

/* A parameter given as a graph input (torch.onnx.export with
 * export_params=False): a weight-free initializer by another name. */
static int s_add_param_input(tc_graph_t *g, const Onnx__ValueInfoProto *vi)
{
    const char *name = s_str(vi->name);
    if (!*name)
        return tc_fail(TC_EPARSE, "a graph input has no name");
    const Onnx__TypeProto__Tensor *tt = vi->type->tensor_type;
    const Onnx__TensorShapeProto *sh = tt->shape;
    if (sh->n_dim > TC_MODEL_MAX_RANK)
        return tc_fail(TC_ELIMIT, "graph input '%.256s' has rank %zu (at most %d)", name,
                       sh->n_dim, TC_MODEL_MAX_RANK);
    int idx, rc = tc_graph_add_value(g, name, &idx);
    if (rc < 0)
        return rc;
    tc_value_t *v = &g->values[idx];
    int64_t elems = 1;
    for (size_t i = 0; i < sh->n_dim; i++) {
        int64_t d = sh->dim[i]->dim_value;
        if (d < 0 || d > TC_GRAPH_MAX_DIM)
            return tc_fail(TC_EPARSE, "graph input '%.256s': dimension %zu is %lld", name, i,
                           (long long)d);
        if (tc_mul64(elems, d, &elems) < 0 || elems > TC_GRAPH_MAX_ELEMS)
            return tc_fail(TC_ELIMIT, "graph input '%.256s' has more than 2^40 elements", name);
        v->dims[i] = d;
    }
    v->rank = (int)sh->n_dim;
    v->known = true;
    v->elem_type = tt->has_elem_type ? tt->elem_type : 0;
    v->is_param = s_is_float(v->elem_type);
    v->param_count = v->is_param ? (uint64_t)elems : 0;
    return 0;
}

/* The network input is the first graph input that is not an initializer.
 * Every other one with a static shape is a parameter; one with a symbolic
 * dimension (or none) is a second data input, which traincast refuses. */
static int s_add_input(tc_graph_t *g, const Onnx__GraphProto *gp, uint32_t input_size)
{
    const Onnx__ValueInfoProto *in = NULL, *other = NULL;
    size_t n_data = 0;
    for (size_t i = 0; i < gp->n_input; i++) {
        int idx = tc_graph_value(g, s_str(gp->input[i]->name));
        if (idx >= 0 && g->values[idx].init)
            continue; /* an initializer listed as input (older exporters) */
        if (!in) {
            in = gp->input[i];
            n_data++;
        } else if (s_static_shape(gp->input[i])) {
            int rc = s_add_param_input(g, gp->input[i]);
            if (rc < 0)
                return rc;
        } else {
            other = other ? other : gp->input[i];
            n_data++;
        }
    }
    if (!in)
        return tc_fail(TC_EPARSE, "the graph has no input besides its initializers");
    if (n_data > 1)
        return tc_fail(TC_EUNSUPPORTED,
                       "the graph has %zu data inputs ('%.128s', '%.128s'%s); traincast "
                       "handles models with one image input (other inputs with a static shape "
                       "are read as parameters)",
                       n_data, s_str(in->name), s_str(other->name), n_data > 2 ? ", ..." : "");
    const char *name = s_str(in->name);
    if (!*name)
        return tc_fail(TC_EPARSE, "the graph input has no name");
    const Onnx__TypeProto *tp = in->type;
    if (!tp || tp->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE || !tp->tensor_type ||
        !tp->tensor_type->shape)
        return tc_fail(TC_EPARSE, "graph input '%s' has no tensor shape", name);
    const Onnx__TensorShapeProto *sh = tp->tensor_type->shape;
    if (sh->n_dim < 2 || sh->n_dim > TC_MODEL_MAX_RANK)
        return tc_fail(TC_EUNSUPPORTED, "graph input '%s' has rank %zu; expected a batch of "
                                        "images [N, C, H, W]",
                       name, sh->n_dim);
    if (input_size && sh->n_dim != 4)
        return tc_fail(TC_EINVAL, "an input size applies to [N, C, H, W] inputs; '%s' has rank "
                                  "%zu",
                       name, sh->n_dim);
    int idx, rc = tc_graph_add_value(g, name, &idx);
    if (rc < 0)
        return rc;
    tc_value_t *v = &g->values[idx];
    v->is_input = true;
    v->rank = (int)sh->n_dim;
    v->batch_axis = 0;
    v->dims[0] = 1;
    v->elem_type = tp->tensor_type->has_elem_type ? tp->tensor_type->elem_type : 0;
    int64_t elems = 1;
    for (size_t i = 1; i < sh->n_dim; i++) {
        const Onnx__TensorShapeProto__Dimension *d = sh->dim[i];
        int64_t val = d && d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE
                          ? d->dim_value
                          : -1;
        if (input_size && sh->n_dim == 4 && i >= 2) {
            g->resized = g->resized || val != (int64_t)input_size;
            val = input_size;
        }
        if (val <= 0 || val > TC_GRAPH_MAX_DIM)
            return tc_fail(val == -1 ? TC_EINVAL : TC_EPARSE,
                           "graph input '%s': dimension %zu is %s; give an input size", name, i,
                           val == -1 ? "symbolic" : "out of range");
        if (tc_mul64(elems, val, &elems) < 0 || elems > TC_GRAPH_MAX_ELEMS)
            return tc_fail(TC_ELIMIT, "graph input '%s' has more than 2^40 elements", name);
        v->dims[i] = val;
    }
    v->known = true;
    g->input = idx;
    return 0;
}

static int s_add_nodes(tc_graph_t *g, const Onnx__GraphProto *gp)
{
    if (gp->n_node > TC_GRAPH_MAX_NODES)
        return tc_fail(TC_ELIMIT, "the graph has %zu nodes (at most %d)", gp->n_node,
                       TC_GRAPH_MAX_NODES);
    if (!gp->n_node)
        return tc_fail(TC_EPARSE, "the graph has no nodes");
    g->nodes = calloc(gp->n_node, sizeof *g->nodes);
    if (!g->nodes)
        return tc_fail(TC_ENOMEM, "out of memory for %zu nodes", gp->n_node);
    g->n_nodes = gp->n_node;
    char label[64];
    /* Outputs first, so inputs may refer to nodes listed later. */
    for (size_t i = 0; i < gp->n_node; i++) {
        const Onnx__NodeProto *np = gp->node[i];
        tc_gnode_t *n = &g->nodes[i];
        n->proto = np;
        const char *op = s_str(np->op_type);
        if (!*op)
            return tc_fail(TC_EPARSE, "node %zu has no op type", i);
        n->op = tc_arena_strdup(&g->arena, op);
        const char *dom = s_str(np->domain);
        n->domain = tc_arena_strdup(&g->arena, strcmp(dom, "ai.onnx") ? dom : "");
        if (np->name && *np->name) {
            n->name = tc_arena_strdup(&g->arena, np->name);
        } else {
            snprintf(label, sizeof label, "%.40s_%zu", op, i);
            n->name = tc_arena_strdup(&g->arena, label);
        }
        if (!n->op || !n->domain || !n->name)
            return tc_fail(TC_ENOMEM, "out of memory");
        if (np->n_input > TC_GRAPH_MAX_NODE_IO || np->n_output > TC_GRAPH_MAX_NODE_IO)
            return tc_node_fail(n, TC_ELIMIT, "more than %d inputs or outputs",
                                TC_GRAPH_MAX_NODE_IO);
        if (!np->n_output)
            return tc_node_fail(n, TC_EPARSE, "the node has no outputs");
        n->n_in = (int)np->n_input;
        n->n_out = (int)np->n_output;
        n->in = calloc(np->n_input ? np->n_input : 1, sizeof *n->in);
        n->out = calloc(np->n_output, sizeof *n->out);
        if (!n->in || !n->out)
            return tc_fail(TC_ENOMEM, "out of memory");
        for (size_t k = 0; k < np->n_output; k++) {
            const char *name = s_str(np->output[k]);
            if (!*name) {
                n->out[k] = -1; /* optional output not produced */
                continue;
            }
            int idx, rc = tc_graph_add_value(g, name, &idx);
            if (rc < 0)
                return tc_node_fail(n, rc, "output '%s' is defined twice", name);
            g->values[idx].producer = (int)i;
            g->values[idx].producer_out = (int)k;
            n->out[k] = idx;
        }
    }
    for (size_t i = 0; i < gp->n_node; i++) {
        const Onnx__NodeProto *np = gp->node[i];
        tc_gnode_t *n = &g->nodes[i];
        for (size_t k = 0; k < np->n_input; k++) {
            const char *name = s_str(np->input[k]);
            if (!*name) {
                n->in[k] = -1;
                continue;
            }
            int idx = tc_graph_value(g, name);
            if (idx < 0)
                return tc_node_fail(n, TC_EPARSE, "input '%s' is not produced by any node, "
                                                  "initializer or graph input",
                                    name);
            n->in[k] = idx;
        }
    }
    for (size_t i = 0; i < gp->n_output; i++) {
        const char *name = s_str(gp->output[i]->name);
        if (tc_graph_value(g, name) < 0)
            return tc_fail(TC_EPARSE, "graph output '%s' is not produced by any node", name);
    }
    return 0;
}

int tc_graph_from_onnx(tc_graph_t *g, const Onnx__ModelProto *m, uint32_t input_size)
{
    g->input = -1;
    g->opset = -1;
    for (size_t i = 0; i < m->n_opset_import; i++) {
        const char *d = s_str(m->opset_import[i]->domain);
        if ((!*d || !strcmp(d, "ai.onnx")) && m->opset_import[i]->has_version)
            g->opset = m->opset_import[i]->version;
    }
    if (g->opset < 1)
        return tc_fail(TC_EPARSE, "the model does not import the default ONNX opset");
    if (!m->graph)
        return tc_fail(TC_EPARSE, "the model has no graph");
    g->proto = m->graph;
    int rc = s_add_initializers(g, m->graph);
    if (rc == 0)
        rc = s_add_input(g, m->graph, input_size);
    if (rc == 0)
        rc = s_add_nodes(g, m->graph);
    return rc;
}
