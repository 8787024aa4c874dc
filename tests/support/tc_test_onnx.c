#include "tc_test_onnx.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct tc_tb {
    Onnx__ModelProto model;
    Onnx__GraphProto graph;
    Onnx__OperatorSetIdProto opset;
    Onnx__OperatorSetIdProto *opsets[1];
    void **allocs;
    size_t n_allocs, cap_allocs;
    uint8_t *packed;
};

void *tc_tb_alloc(tc_tb_t *tb, size_t size)
{
    if (tb->n_allocs == tb->cap_allocs) {
        tb->cap_allocs = tb->cap_allocs ? 2 * tb->cap_allocs : 64;
        tb->allocs = realloc(tb->allocs, tb->cap_allocs * sizeof *tb->allocs);
        if (!tb->allocs)
            abort();
    }
    void *p = calloc(1, size ? size : 1);
    if (!p)
        abort();
    tb->allocs[tb->n_allocs++] = p;
    return p;
}

static char *s_str(tc_tb_t *tb, const char *s)
{
    char *p = tc_tb_alloc(tb, strlen(s) + 1);
    strcpy(p, s);
    return p;
}

/* Append to a counted pointer array kept in tb's allocations; arrays grow
 * by doubling (capacity 4, 8, 16, ...). */
#define S_PUSH(tb, arr, count, item)                                                          \
    do {                                                                                      \
        size_t s_n = (count);                                                                 \
        if (s_n == 0 || (s_n >= 4 && (s_n & (s_n - 1)) == 0)) {                               \
            void **s_new = tc_tb_alloc((tb), (s_n ? 2 * s_n : 4) * sizeof(void *));           \
            if (s_n)                                                                          \
                memcpy(s_new, (arr), s_n * sizeof(void *));                                   \
            (arr) = (void *)s_new;                                                            \
        }                                                                                     \
        (arr)[s_n] = (item);                                                                  \
        (count)++;                                                                            \
    } while (0)

static Onnx__ValueInfoProto *s_value_info(tc_tb_t *tb, const char *name, int rank,
                                          const int64_t *dims, int batch_sym)
{
    Onnx__ValueInfoProto *vi = tc_tb_alloc(tb, sizeof *vi);
    onnx__value_info_proto__init(vi);
    vi->name = s_str(tb, name);
    Onnx__TypeProto *tp = tc_tb_alloc(tb, sizeof *tp);
    onnx__type_proto__init(tp);
    Onnx__TypeProto__Tensor *tt = tc_tb_alloc(tb, sizeof *tt);
    onnx__type_proto__tensor__init(tt);
    tt->has_elem_type = 1;
    tt->elem_type = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT;
    Onnx__TensorShapeProto *sh = tc_tb_alloc(tb, sizeof *sh);
    onnx__tensor_shape_proto__init(sh);
    sh->n_dim = (size_t)rank;
    sh->dim = tc_tb_alloc(tb, (size_t)rank * sizeof *sh->dim);
    for (int k = 0; k < rank; k++) {
        Onnx__TensorShapeProto__Dimension *d = tc_tb_alloc(tb, sizeof *d);
        onnx__tensor_shape_proto__dimension__init(d);
        if (k == 0 && batch_sym) {
            d->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM;
            d->dim_param = s_str(tb, "batch");
        } else {
            d->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
            d->dim_value = dims[k];
        }
        sh->dim[k] = d;
    }
    tt->shape = sh;
    tp->value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
    tp->tensor_type = tt;
    vi->type = tp;
    return vi;
}

tc_tb_t *tc_tb_new_rank(int rank, const int64_t *dims)
{
    tc_tb_t *tb = calloc(1, sizeof *tb);
    if (!tb)
        abort();
    onnx__model_proto__init(&tb->model);
    onnx__graph_proto__init(&tb->graph);
    onnx__operator_set_id_proto__init(&tb->opset);
    tb->opset.domain = s_str(tb, "");
    tb->opset.has_version = 1;
    tb->opset.version = 17;
    tb->opsets[0] = &tb->opset;
    tb->model.n_opset_import = 1;
    tb->model.opset_import = tb->opsets;
    tb->model.has_ir_version = 1;
    tb->model.ir_version = 8;
    tb->model.graph = &tb->graph;
    tb->graph.name = s_str(tb, "test");
    Onnx__ValueInfoProto *in = s_value_info(tb, "x", rank, dims, 1);
    S_PUSH(tb, tb->graph.input, tb->graph.n_input, in);
    return tb;
}

tc_tb_t *tc_tb_new(int64_t c, int64_t h, int64_t w)
{
    int64_t dims[4] = {1, c, h, w};
    return tc_tb_new_rank(4, dims);
}

void tc_tb_free(tc_tb_t **tb_p)
{
    if (!tb_p || !*tb_p)
        return;
    tc_tb_t *tb = *tb_p;
    for (size_t i = 0; i < tb->n_allocs; i++)
        free(tb->allocs[i]);
    free(tb->allocs);
    free(tb->packed);
    free(tb);
    *tb_p = NULL;
}

static Onnx__TensorProto *s_tensor(tc_tb_t *tb, const char *name, int32_t type, int rank,
                                   const int64_t *dims)
{
    Onnx__TensorProto *t = tc_tb_alloc(tb, sizeof *t);
    onnx__tensor_proto__init(t);
    t->name = s_str(tb, name);
    t->has_data_type = 1;
    t->data_type = type;
    t->n_dims = (size_t)rank;
    t->dims = tc_tb_alloc(tb, (size_t)rank * sizeof *t->dims);
    if (rank)
        memcpy(t->dims, dims, (size_t)rank * sizeof *t->dims);
    return t;
}

void tc_tb_weight(tc_tb_t *tb, const char *name, int rank, const int64_t *dims)
{
    Onnx__TensorProto *t = s_tensor(tb, name, ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, rank, dims);
    S_PUSH(tb, tb->graph.initializer, tb->graph.n_initializer, t);
}

void tc_tb_ints(tc_tb_t *tb, const char *name, int n, const int64_t *vals)
{
    int64_t dims[1] = {n};
    Onnx__TensorProto *t = s_tensor(tb, name, ONNX__TENSOR_PROTO__DATA_TYPE__INT64, 1, dims);
    t->n_int64_data = (size_t)n;
    t->int64_data = tc_tb_alloc(tb, (size_t)n * sizeof *t->int64_data);
    memcpy(t->int64_data, vals, (size_t)n * sizeof *vals);
    S_PUSH(tb, tb->graph.initializer, tb->graph.n_initializer, t);
}

void tc_tb_param_input(tc_tb_t *tb, const char *name, int rank, const int64_t *dims)
{
    Onnx__ValueInfoProto *vi = s_value_info(tb, name, rank, dims, 0);
    S_PUSH(tb, tb->graph.input, tb->graph.n_input, vi);
}

static void s_entry(tc_tb_t *tb, Onnx__TensorProto *t, const char *key, const char *value)
{
    if (!value)
        return;
    Onnx__StringStringEntryProto *kv = tc_tb_alloc(tb, sizeof *kv);
    onnx__string_string_entry_proto__init(kv);
    kv->key = s_str(tb, key);
    kv->value = s_str(tb, value);
    S_PUSH(tb, t->external_data, t->n_external_data, kv);
}

void tc_tb_external(tc_tb_t *tb, const char *name, const char *location, const char *offset,
                    const char *length)
{
    Onnx__TensorProto *t = NULL;
    for (size_t i = 0; i < tb->graph.n_initializer && !t; i++)
        if (!strcmp(tb->graph.initializer[i]->name, name))
            t = tb->graph.initializer[i];
    for (size_t i = 0; i < tb->graph.n_node && !t; i++) {
        Onnx__NodeProto *n = tb->graph.node[i];
        if (!strcmp(n->op_type, "Constant") && n->n_output && !strcmp(n->output[0], name) &&
            n->n_attribute)
            t = n->attribute[0]->t;
    }
    if (!t)
        abort();
    t->n_int64_data = 0;
    t->n_float_data = 0;
    t->has_raw_data = 0;
    t->n_external_data = 0;
    t->has_data_location = 1;
    t->data_location = ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
    s_entry(tb, t, "location", location);
    s_entry(tb, t, "offset", offset);
    s_entry(tb, t, "length", length);
}

static void s_split(tc_tb_t *tb, const char *list, size_t *n, char ***out)
{
    *n = 0;
    *out = NULL;
    if (!list || !*list)
        return;
    char *copy = s_str(tb, list);
    size_t count = 1;
    for (const char *p = list; *p; p++)
        count += *p == ',';
    char **items = tc_tb_alloc(tb, count * sizeof *items);
    char *p = copy;
    for (size_t i = 0; i < count; i++) {
        char *comma = strchr(p, ',');
        if (comma)
            *comma = '\0';
        items[i] = p;
        p = comma ? comma + 1 : p + strlen(p);
    }
    *n = count;
    *out = items;
}

Onnx__NodeProto *tc_tb_node(tc_tb_t *tb, const char *op, const char *name, const char *inputs,
                            const char *outputs)
{
    Onnx__NodeProto *n = tc_tb_alloc(tb, sizeof *n);
    onnx__node_proto__init(n);
    n->op_type = s_str(tb, op);
    n->name = s_str(tb, name ? name : "");
    s_split(tb, inputs, &n->n_input, &n->input);
    s_split(tb, outputs, &n->n_output, &n->output);
    S_PUSH(tb, tb->graph.node, tb->graph.n_node, n);
    return n;
}

static Onnx__AttributeProto *s_attr(tc_tb_t *tb, Onnx__NodeProto *n, const char *name,
                                    Onnx__AttributeProto__AttributeType type)
{
    Onnx__AttributeProto *a = tc_tb_alloc(tb, sizeof *a);
    onnx__attribute_proto__init(a);
    a->name = s_str(tb, name);
    a->has_type = 1;
    a->type = type;
    S_PUSH(tb, n->attribute, n->n_attribute, a);
    return a;
}

void tc_tb_attr_int(tc_tb_t *tb, Onnx__NodeProto *n, const char *name, int64_t v)
{
    Onnx__AttributeProto *a = s_attr(tb, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT);
    a->has_i = 1;
    a->i = v;
}

void tc_tb_attr_ints(tc_tb_t *tb, Onnx__NodeProto *n, const char *name, int count,
                     const int64_t *v)
{
    Onnx__AttributeProto *a = s_attr(tb, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS);
    a->n_ints = (size_t)count;
    a->ints = tc_tb_alloc(tb, (size_t)count * sizeof *a->ints);
    memcpy(a->ints, v, (size_t)count * sizeof *v);
}

void tc_tb_attr_float(tc_tb_t *tb, Onnx__NodeProto *n, const char *name, float v)
{
    Onnx__AttributeProto *a = s_attr(tb, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT);
    a->has_f = 1;
    a->f = v;
}

void tc_tb_attr_str(tc_tb_t *tb, Onnx__NodeProto *n, const char *name, const char *v)
{
    Onnx__AttributeProto *a = s_attr(tb, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING);
    a->has_s = 1;
    a->s.len = strlen(v);
    a->s.data = (uint8_t *)s_str(tb, v);
}

void tc_tb_const_scalar(tc_tb_t *tb, const char *output, int64_t val)
{
    char name[128];
    snprintf(name, sizeof name, "const_%s", output);
    Onnx__NodeProto *node = tc_tb_node(tb, "Constant", name, "", output);
    Onnx__AttributeProto *a =
        s_attr(tb, node, "value", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR);
    a->t = s_tensor(tb, "", ONNX__TENSOR_PROTO__DATA_TYPE__INT64, 0, NULL);
    a->t->n_int64_data = 1;
    a->t->int64_data = tc_tb_alloc(tb, sizeof(int64_t));
    a->t->int64_data[0] = val;
}

void tc_tb_const_ints(tc_tb_t *tb, const char *output, int n, const int64_t *vals)
{
    char name[128];
    snprintf(name, sizeof name, "const_%s", output);
    Onnx__NodeProto *node = tc_tb_node(tb, "Constant", name, "", output);
    Onnx__AttributeProto *a =
        s_attr(tb, node, "value", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR);
    int64_t dims[1] = {n};
    a->t = s_tensor(tb, "", ONNX__TENSOR_PROTO__DATA_TYPE__INT64, 1, dims);
    a->t->n_int64_data = (size_t)n;
    a->t->int64_data = tc_tb_alloc(tb, (size_t)n * sizeof(int64_t));
    memcpy(a->t->int64_data, vals, (size_t)n * sizeof *vals);
}

void tc_tb_output(tc_tb_t *tb, const char *name)
{
    Onnx__ValueInfoProto *vi = tc_tb_alloc(tb, sizeof *vi);
    onnx__value_info_proto__init(vi);
    vi->name = s_str(tb, name);
    S_PUSH(tb, tb->graph.output, tb->graph.n_output, vi);
}

void tc_tb_claim(tc_tb_t *tb, const char *name, int rank, const int64_t *dims, int batch_sym)
{
    Onnx__ValueInfoProto *vi = s_value_info(tb, name, rank, dims, batch_sym);
    S_PUSH(tb, tb->graph.value_info, tb->graph.n_value_info, vi);
}

Onnx__ModelProto *tc_tb_model(tc_tb_t *tb)
{
    return &tb->model;
}

const uint8_t *tc_tb_pack(tc_tb_t *tb, size_t *len)
{
    free(tb->packed);
    size_t size = onnx__model_proto__get_packed_size(&tb->model);
    tb->packed = malloc(size ? size : 1);
    if (!tb->packed)
        abort();
    *len = onnx__model_proto__pack(&tb->model, tb->packed);
    return tb->packed;
}
