/* The per-op shape rules, listed in tc_shape_rules.c. Internal to the
 * importer. Each sets its outputs' shapes (and folded values where the op
 * is shape arithmetic) and, for ops with real arithmetic, n->macs and
 * n->info.flops. */
#ifndef TC_SHAPE_RULES_H
#define TC_SHAPE_RULES_H

#include "tc_graph.h"

/* tc_shape_ops.c: element-wise, shape arithmetic */
int tc_infer_unary(tc_graph_t *g, tc_gnode_t *n, const tc_op_rule_t *r);
/* An ATen fallback node of an element-wise PyTorch op that keeps its
 * input's shape (its `operator`: zero, swin_v2's in-place zeroing of the
 * key bias); any other operator is not supported, named. */
int tc_infer_aten(tc_graph_t *g, tc_gnode_t *n, const tc_op_rule_t *r);
int tc_infer_identity(tc_graph_t *g, tc_gnode_t *n, const tc_op_rule_t *r);
int tc_infer_cast(tc_graph_t *g, tc_gnode_t *n, const tc_op_rule_t *r);
int tc_infer_dropout(tc_graph_t *g, tc_gnode_t *n, const tc_op_rule_t *r);
int tc_infer_binary(tc_graph_t *g, tc_gnode_t *n, const tc_op_rule_t *r);
int tc_infer_where(tc_graph_t *g, tc_gnode_t *n, const tc_op_rule_t *r);
int tc_infer_constant(tc_graph_t *g, tc_gnode_t *n, const tc_op_rule_t *r);
int tc_infer_constant_of_shape(tc_graph_t *g, tc_gnode_t *n, const tc_op_rule_t *r);
int tc_infer_range(tc_graph_t *g, tc_gnode_t *n, const tc_op_rule_t *r);
int tc_infer_shape(tc_graph_t *g, tc_gnode_t *n, const tc_op_rule_t *r);
int tc_infer_size(tc_graph_t *g, tc_gnode_t *n, const tc_op_rule_t *r);
int tc_infer_gather(tc_graph_t *g, tc_gnode_t *n, const tc_op_rule_t *r);
int tc_infer_concat(tc_graph_t *g, tc_gnode_t *n, const tc_op_rule_t *r);

/* tc_shape_move.c: data movement */
int tc_infer_unsqueeze(tc_graph_t *g, tc_gnode_t *n, const tc_op_rule_t *r);
int tc_infer_squeeze(tc_graph_t *g, tc_gnode_t *n, const tc_op_rule_t *r);
int tc_infer_split(tc_graph_t *g, tc_gnode_t *n, const tc_op_rule_t *r);
int tc_infer_slice(tc_graph_t *g, tc_gnode_t *n, const tc_op_rule_t *r);
int tc_infer_transpose(tc_graph_t *g, tc_gnode_t *n, const tc_op_rule_t *r);
int tc_infer_reshape(tc_graph_t *g, tc_gnode_t *n, const tc_op_rule_t *r);
int tc_infer_flatten(tc_graph_t *g, tc_gnode_t *n, const tc_op_rule_t *r);
int tc_infer_expand(tc_graph_t *g, tc_gnode_t *n, const tc_op_rule_t *r);
int tc_infer_tile(tc_graph_t *g, tc_gnode_t *n, const tc_op_rule_t *r);
int tc_infer_pad(tc_graph_t *g, tc_gnode_t *n, const tc_op_rule_t *r);

/* tc_shape_nn.c: layers with arithmetic */
int tc_infer_conv(tc_graph_t *g, tc_gnode_t *n, const tc_op_rule_t *r);
int tc_infer_pool(tc_graph_t *g, tc_gnode_t *n, const tc_op_rule_t *r);
int tc_infer_global_pool(tc_graph_t *g, tc_gnode_t *n, const tc_op_rule_t *r);
int tc_infer_adaptive_pool(tc_graph_t *g, tc_gnode_t *n, const tc_op_rule_t *r);
int tc_infer_batchnorm(tc_graph_t *g, tc_gnode_t *n, const tc_op_rule_t *r);
int tc_infer_layernorm(tc_graph_t *g, tc_gnode_t *n, const tc_op_rule_t *r);
int tc_infer_reduce(tc_graph_t *g, tc_gnode_t *n, const tc_op_rule_t *r);
int tc_infer_argreduce(tc_graph_t *g, tc_gnode_t *n, const tc_op_rule_t *r);

/* tc_shape_matmul.c: Gemm and MatMul, with their matmul configs */
int tc_infer_gemm(tc_graph_t *g, tc_gnode_t *n, const tc_op_rule_t *r);
int tc_infer_matmul(tc_graph_t *g, tc_gnode_t *n, const tc_op_rule_t *r);

/* An Add of a bias to a Linear's MatMul that PyTorch runs as one addmm
 * marks the matmul config's bias (call with every Add once its shape is
 * set). */
void tc_matmul_take_bias(tc_graph_t *g, const tc_gnode_t *add);

/* The data type an op runs in, from its ONNX element type (fp32 unless
 * fp16 or bf16). */
Traincast__V1__DType tc_dtype_of(int32_t elem_type);

#endif
