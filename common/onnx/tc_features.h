/* Non-conv features of a model at a batch size: the regression's inputs.
 *
 * Computed from a list of layer summaries (per-sample numbers), so the same
 * code serves a freshly imported graph and the layers stored in the
 * database. Conv layers are skipped (they are benchmarked, not regressed),
 * but counted in conv_layers and total_layers. */
#ifndef TC_FEATURES_H
#define TC_FEATURES_H

#include <stddef.h>
#include <stdint.h>

/* X(enum suffix, name) — the op classes non-conv layers are grouped into. */
#define TC_OP_CLASS_MAP(X)                                                                       \
    X(CONV, "conv")       /* Conv (benchmarked, not a feature) */                                \
    X(BN, "bn")           /* BatchNormalization, InstanceNormalization, GroupNormalization */    \
    X(ACT, "act")         /* Relu, Clip, Sigmoid, HardSigmoid, HardSwish, Erf, ... */            \
    X(POOL, "pool")       /* MaxPool, AveragePool, GlobalAveragePool */                          \
    X(ELTWISE, "eltwise") /* Add, Mul, Sub, Div between tensors */                               \
    X(CONCAT, "concat")   /* Concat, Split */                                                    \
    X(GEMM, "gemm")       /* Gemm, MatMul: classifiers, projections, attention */                \
    X(DROPOUT, "dropout") /* Dropout */                                                          \
    X(SHAPE, "shape")     /* Reshape, Transpose, Slice, Expand, ... as views: no data moved */   \
    X(REDUCE, "reduce")   /* ReduceMean, ReduceSum, ArgMax, Hardmax, ... */                      \
    X(OTHER, "other")     /* unknown ops accepted with --allow-unknown */                        \
    X(NORM, "norm")       /* LayerNormalization: one row's mean and variance, per token */       \
    X(SOFTMAX, "softmax") /* Softmax, LogSoftmax */                                              \
    X(COPY, "copy")       /* data movement that copies: a reshape of a permuted tensor, Pad */

typedef enum {
#define TC_OPC_ENUM(e, name) TC_OPC_##e,
    TC_OP_CLASS_MAP(TC_OPC_ENUM)
#undef TC_OPC_ENUM
        TC_OPC_COUNT
} tc_op_class_t;

const char *tc_op_class_name(tc_op_class_t c);
/* Returns the class for a name, or -1. */
int tc_op_class_parse(const char *name);

/* One layer, per sample (batch 1). */
typedef struct {
    tc_op_class_t op_class;
    uint64_t params;
    double flops;
    uint64_t elems_in;  /* elements read (all inputs) */
    uint64_t elems_out; /* elements written */
} tc_layer_summary_t;

typedef struct {
    double layers;    /* count */
    double elems_in;  /* × batch */
    double elems_out; /* × batch */
    double params;
    double flops;     /* × batch */
} tc_class_features_t;

typedef struct {
    unsigned batch;
    tc_class_features_t cls[TC_OPC_COUNT];
    double total_params;  /* all layers, conv included */
    double total_layers;  /* all layers, conv included */
    double conv_layers;
    double conv_flops;    /* × batch */
} tc_features_t;

void tc_features_from_layers(const tc_layer_summary_t *layers, size_t n, unsigned batch,
                             tc_features_t *out);

/* A named scalar derived from the features, for regression design
 * matrices: "bn.elems", "act.layers", "total.params", "gemm.flops", ...
 * ("<class>.elems" is elems_in + elems_out). Returns 0, or TC_EINVAL for an
 * unknown name. */
int tc_feature_value(const tc_features_t *f, const char *name, double *out);

#endif
