/* The importer's internal graph IR (its storage in tc_graph.c), shared by
 * tc_onnx.c (ONNX -> IR), tc_shape*.c (shape inference, per-op rules) and
 * tc_model.c (the public tc_model_t API). Nothing outside those files
 * includes it.
 *
 * Shapes carry the batch as a symbol: a tensor's dims are concrete except at
 * most one, `batch_axis`, which is a whole multiple of the batch B (B itself,
 * or heads or windows folded into it: dims[batch_axis] says how many B).
 * Small integer tensors known at import time (shape arithmetic: Shape,
 * Gather, Concat, ...) carry their values as affine expressions b*B + c, so a
 * reshape to [B, 2, C/2, H, W] computed from Shape nodes stays symbolic in
 * B. */
#ifndef TC_GRAPH_H
#define TC_GRAPH_H

#include "tc_model.h"
#include "onnx/onnx.pb-c.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Caps that keep hostile files bounded. */
#define TC_GRAPH_MAX_NODES 200000
#define TC_GRAPH_MAX_VALUES 1000000
#define TC_GRAPH_MAX_NODE_IO 4096       /* inputs or outputs of one node */
#define TC_GRAPH_MAX_DIM (1LL << 31)     /* one dimension (conv configs are uint32) */
#define TC_GRAPH_MAX_ELEMS (1LL << 40)   /* elements of one tensor, per sample */
#define TC_GRAPH_MAX_DATA 4096           /* elements of a constant kept for folding */
#define TC_GRAPH_MAX_DEPTH 64            /* protobuf message nesting */

/* b*B + c, B the batch. */
typedef struct {
    int64_t b, c;
} tc_sym_t;

typedef struct {
    char *name;             /* arena */
    int producer;           /* node index, -1 for inputs and initializers */
    int producer_out;
    bool is_input;          /* the network input */
    const Onnx__TensorProto *init; /* initializer (valid while importing) */
    bool is_param;          /* float initializer counted as parameters, or a view of
                               parameters (a Transpose or Reshape of weights) */
    uint64_t param_count;   /* parameters it stands for (not yet owned) */
    int32_t elem_type;      /* ONNX TensorProto data type, 0 unknown */
    /* Shape, once inferred. */
    bool known;
    int rank;
    int64_t dims[TC_MODEL_MAX_RANK]; /* dims[batch_axis]: the multiple of B (1 mostly) */
    int batch_axis;         /* -1: not batched */
    /* Values known at import time, integers only (n_data -1: unknown). */
    int n_data;
    tc_sym_t *data;
    bool grad;              /* depends on a parameter (needs a gradient) */
    int owner;              /* for parameters: the node that owns them, -1 */
    /* Integer values kept in an external data file, not read yet: read
     * when a node uses the value (valid while importing). */
    const Onnx__TensorProto *ext;
} tc_value_t;

typedef struct {
    const Onnx__NodeProto *proto; /* valid while importing */
    char *name;             /* arena; "<op>_<index>" when the file has none */
    char *op;               /* arena */
    char *domain;           /* arena, "" for the default domain */
    int n_in, n_out;
    int *in, *out;          /* value indices; -1 for an absent optional input */
    bool folded;            /* constant arithmetic: not a layer */
    bool unknown;           /* accepted as a generic layer (allow_unknown) */
    double macs;            /* multiply-accumulates per sample */
    tc_model_node_t info;
} tc_gnode_t;

/* A block allocator for strings and small arrays freed all at once. */
typedef struct tc_arena_block tc_arena_block_t;
typedef struct {
    tc_arena_block_t *head;
} tc_arena_t;

void *tc_arena_alloc(tc_arena_t *a, size_t size);
char *tc_arena_strdup(tc_arena_t *a, const char *s);
void tc_arena_free(tc_arena_t *a);

typedef struct {
    tc_arena_t arena;
    tc_gnode_t *nodes;
    size_t n_nodes;
    int *order;             /* topological order of node indices */
    tc_value_t *values;
    size_t n_values, cap_values;
    uint32_t *hash;         /* open addressing: value index + 1, 0 empty */
    size_t hash_cap;
    int input;              /* the network input value */
    int64_t opset;          /* default-domain opset version */
    bool allow_unknown;
    bool resized;           /* the input size was overridden: value_info is stale */
    char **unknown;         /* "NAME (OP)" of nodes accepted as unknown, arena */
    size_t n_unknown;
    const Onnx__GraphProto *proto; /* valid while importing */
    const char *ext_dir;    /* the model file's directory, where external data is
                               read; NULL for a model loaded from memory */
} tc_graph_t;

/* Values by name. `tc_graph_value` returns -1 when absent. */
int tc_graph_value(const tc_graph_t *g, const char *name);
int tc_graph_add_value(tc_graph_t *g, const char *name, int *index);

/* Shape, type and small integer data of a TensorProto (an initializer or a
 * Constant's value) into `v`; `what` names it in messages. */
int tc_tensor_to_value(tc_graph_t *g, const Onnx__TensorProto *t, tc_value_t *v,
                       const char *what);

/* Read the values of `v->ext` (an external integer tensor) into v->data;
 * no-op when v->ext is NULL. */
int tc_value_read_external(tc_graph_t *g, tc_value_t *v);
/* The `need` bytes of external tensor `t` from its file in g->ext_dir, with
 * every check on the location and the range (tc_onnx_extdata.c). `what`
 * names the tensor in messages. */
int tc_external_read(const tc_graph_t *g, const Onnx__TensorProto *t, const char *what,
                     size_t need, uint8_t *buf);

/* 0 when `data` may be an ONNX ModelProto; else TC_EPARSE with "not an ONNX
 * file (...)" saying what it looks like instead (tc_onnx_sniff.c). */
int tc_onnx_sniff(const uint8_t *data, size_t len);

/* Build the graph from an unpacked model. `input_size` 0 keeps the file's. */
int tc_graph_from_onnx(tc_graph_t *g, const Onnx__ModelProto *m, uint32_t input_size);
/* Sort, infer shapes, count parameters, FLOPs and elements. */
int tc_graph_infer(tc_graph_t *g);
/* After inference: mark the data-movement nodes that copy as PyTorch runs
 * them (class `copy`; tc_shape_layout.c). */
int tc_graph_layout(tc_graph_t *g);
void tc_graph_free(tc_graph_t *g);

/* Checked int64 arithmetic: 0 or -1 on overflow. */
int tc_mul64(int64_t a, int64_t b, int64_t *out);
int tc_add64(int64_t a, int64_t b, int64_t *out);

/* Per-sample elements of a known value (the batch axis counts its multiple). */
int64_t tc_value_elems(const tc_value_t *v);

/* Failure naming the node: "node 'NAME' (OP): ...". */
int tc_node_fail(const tc_gnode_t *n, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* ---- used by the per-op rules (tc_shape_ops.c, tc_shape_move.c,
 * tc_shape_nn.c); defined in tc_shape_node.c ---- */

typedef struct tc_op_rule tc_op_rule_t;
typedef int (*tc_infer_fn)(tc_graph_t *g, tc_gnode_t *n, const tc_op_rule_t *rule);

struct tc_op_rule {
    const char *domain; /* "" default, "org.pytorch.aten" */
    const char *op;
    tc_op_class_t cls;
    tc_infer_fn infer;
    double flops_per_elem; /* nominal cost per output element where infer sets none */
    unsigned buffers;      /* bit i: float input i is a buffer, not a parameter */
};

/* Look up the rule for an op (NULL if unknown). */
const tc_op_rule_t *tc_op_rule_find(const char *domain, const char *op);

/* Input i as a value, NULL when absent or out of range. */
tc_value_t *tc_node_in(tc_graph_t *g, const tc_gnode_t *n, int i);
/* The same, failing when absent. */
int tc_node_need(tc_graph_t *g, const tc_gnode_t *n, int i, tc_value_t **out);
tc_value_t *tc_node_out(tc_graph_t *g, const tc_gnode_t *n, int i);

/* Set output i's shape (checks every dim and the element count). */
int tc_set_shape(tc_graph_t *g, tc_gnode_t *n, int i, int rank, const int64_t *dims,
                 int batch_axis);
int tc_set_like(tc_graph_t *g, tc_gnode_t *n, int i, const tc_value_t *src);
/* Set output i's shape from values b*B + c (each must be a constant >= 0 or
 * exactly B). */
int tc_set_shape_sym(tc_graph_t *g, tc_gnode_t *n, int i, int rank, const tc_sym_t *dims);
/* Output i's element type (no-op for an absent output). */
void tc_set_type(tc_graph_t *g, tc_gnode_t *n, int i, int32_t elem_type);
/* Attach known values to output i (copied; its shape must be set). */
int tc_set_data(tc_graph_t *g, tc_gnode_t *n, int i, const tc_sym_t *data, int count);

/* Input i's known integer values; fails naming the input when they are not
 * known at import time. `max` caps the count. */
int tc_node_const(tc_graph_t *g, const tc_gnode_t *n, int i, const tc_sym_t **data,
                  int *count);
/* The same, requiring plain constants (no batch term). */
int tc_node_ints(tc_graph_t *g, const tc_gnode_t *n, int i, int64_t *out, int max, int *count);

/* Attributes. Getters return the default when the attribute is absent and
 * fail (TC_EPARSE) when it has the wrong type. */
const Onnx__AttributeProto *tc_attr(const tc_gnode_t *n, const char *name);
int tc_attr_int(const tc_gnode_t *n, const char *name, int64_t def, int64_t *out);
int tc_attr_float(const tc_gnode_t *n, const char *name, float def, float *out);
/* Up to `max` ints; *count -1 when absent. */
int tc_attr_ints(const tc_gnode_t *n, const char *name, int64_t *out, int max, int *count);
/* A string attribute into buf ("" default). */
int tc_attr_str(const tc_gnode_t *n, const char *name, const char *def, char *buf,
                size_t size);

/* Normalize an axis for `rank` (negative counts from the end). */
int tc_axis(const tc_gnode_t *n, int64_t axis, int rank, int *out);

/* Multidirectional (numpy) broadcasting of inputs [0, count) into output 0. */
int tc_broadcast(tc_graph_t *g, tc_gnode_t *n, int count);

#endif
