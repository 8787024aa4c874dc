/* Which rule infers which op, its op class and its nominal cost per output
 * element (for ops whose rule does not count FLOPs itself). The nominal
 * costs are features for the regression, not exact arithmetic. */
#include "tc_shape_rules.h"

#include <string.h>

#define ATEN "org.pytorch.aten"
#define BN_BUFFERS ((1u << 3) | (1u << 4)) /* running mean and variance */

static const tc_op_rule_t s_rules[] = {
    /* layers with arithmetic */
    {"", "Conv", TC_OPC_CONV, tc_infer_conv, 0, 0},
    {"", "BatchNormalization", TC_OPC_BN, tc_infer_batchnorm, 4, BN_BUFFERS},
    {"", "InstanceNormalization", TC_OPC_BN, tc_infer_batchnorm, 4, 0},
    {"", "GroupNormalization", TC_OPC_BN, tc_infer_batchnorm, 4, 0},
    {"", "LayerNormalization", TC_OPC_NORM, tc_infer_layernorm, 8, 0},
    {"", "Gemm", TC_OPC_GEMM, tc_infer_gemm, 0, 0},
    {"", "MatMul", TC_OPC_GEMM, tc_infer_matmul, 0, 0},
    {"", "MaxPool", TC_OPC_POOL, tc_infer_pool, 0, 0},
    {"", "AveragePool", TC_OPC_POOL, tc_infer_pool, 0, 0},
    {"", "LpPool", TC_OPC_POOL, tc_infer_pool, 0, 0},
    {"", "GlobalAveragePool", TC_OPC_POOL, tc_infer_global_pool, 0, 0},
    {"", "GlobalMaxPool", TC_OPC_POOL, tc_infer_global_pool, 0, 0},
    {"", "GlobalLpPool", TC_OPC_POOL, tc_infer_global_pool, 0, 0},
    {ATEN, "adaptive_avg_pool2d", TC_OPC_POOL, tc_infer_adaptive_pool, 0, 0},
    {ATEN, "adaptive_max_pool2d", TC_OPC_POOL, tc_infer_adaptive_pool, 0, 0},
    {"", "ReduceMean", TC_OPC_REDUCE, tc_infer_reduce, 0, 0},
    {"", "ReduceSum", TC_OPC_REDUCE, tc_infer_reduce, 0, 0},
    {"", "ReduceMax", TC_OPC_REDUCE, tc_infer_reduce, 0, 0},
    {"", "ReduceMin", TC_OPC_REDUCE, tc_infer_reduce, 0, 0},
    {"", "ReduceProd", TC_OPC_REDUCE, tc_infer_reduce, 0, 0},
    {"", "ReduceL1", TC_OPC_REDUCE, tc_infer_reduce, 0, 0},
    {"", "ReduceL2", TC_OPC_REDUCE, tc_infer_reduce, 0, 0},
    {"", "ReduceSumSquare", TC_OPC_REDUCE, tc_infer_reduce, 0, 0},
    {"", "ReduceLogSum", TC_OPC_REDUCE, tc_infer_reduce, 0, 0},
    {"", "ReduceLogSumExp", TC_OPC_REDUCE, tc_infer_reduce, 0, 0},
    {"", "ArgMax", TC_OPC_REDUCE, tc_infer_argreduce, 0, 0},
    {"", "ArgMin", TC_OPC_REDUCE, tc_infer_argreduce, 0, 0},
    {"", "Softmax", TC_OPC_SOFTMAX, tc_infer_unary, 3, 0},
    {"", "LogSoftmax", TC_OPC_SOFTMAX, tc_infer_unary, 4, 0},
    {"", "Hardmax", TC_OPC_REDUCE, tc_infer_unary, 1, 0},
    /* activations */
    {"", "Relu", TC_OPC_ACT, tc_infer_unary, 1, 0},
    {"", "LeakyRelu", TC_OPC_ACT, tc_infer_unary, 2, 0},
    {"", "PRelu", TC_OPC_ACT, tc_infer_binary, 2, 0},
    {"", "Clip", TC_OPC_ACT, tc_infer_unary, 2, 0},
    {"", "Sigmoid", TC_OPC_ACT, tc_infer_unary, 4, 0},
    {"", "HardSigmoid", TC_OPC_ACT, tc_infer_unary, 3, 0},
    {"", "HardSwish", TC_OPC_ACT, tc_infer_unary, 4, 0},
    {"", "Tanh", TC_OPC_ACT, tc_infer_unary, 4, 0},
    {"", "Elu", TC_OPC_ACT, tc_infer_unary, 4, 0},
    {"", "Selu", TC_OPC_ACT, tc_infer_unary, 4, 0},
    {"", "Celu", TC_OPC_ACT, tc_infer_unary, 4, 0},
    {"", "Softplus", TC_OPC_ACT, tc_infer_unary, 4, 0},
    {"", "Softsign", TC_OPC_ACT, tc_infer_unary, 3, 0},
    {"", "ThresholdedRelu", TC_OPC_ACT, tc_infer_unary, 1, 0},
    {"", "Mish", TC_OPC_ACT, tc_infer_unary, 6, 0},
    {"", "Gelu", TC_OPC_ACT, tc_infer_unary, 8, 0},
    {"", "Erf", TC_OPC_ACT, tc_infer_unary, 4, 0},
    /* element-wise arithmetic (folded on shape values) */
    {"", "Add", TC_OPC_ELTWISE, tc_infer_binary, 1, 0},
    {"", "Sub", TC_OPC_ELTWISE, tc_infer_binary, 1, 0},
    {"", "Mul", TC_OPC_ELTWISE, tc_infer_binary, 1, 0},
    {"", "Div", TC_OPC_ELTWISE, tc_infer_binary, 1, 0},
    {"", "Pow", TC_OPC_ELTWISE, tc_infer_binary, 4, 0},
    {"", "Mod", TC_OPC_ELTWISE, tc_infer_binary, 1, 0},
    {"", "Max", TC_OPC_ELTWISE, tc_infer_binary, 1, 0},
    {"", "Min", TC_OPC_ELTWISE, tc_infer_binary, 1, 0},
    {"", "Sum", TC_OPC_ELTWISE, tc_infer_binary, 1, 0},
    {"", "Mean", TC_OPC_ELTWISE, tc_infer_binary, 1, 0},
    {"", "Equal", TC_OPC_ELTWISE, tc_infer_binary, 1, 0},
    {"", "Less", TC_OPC_ELTWISE, tc_infer_binary, 1, 0},
    {"", "LessOrEqual", TC_OPC_ELTWISE, tc_infer_binary, 1, 0},
    {"", "Greater", TC_OPC_ELTWISE, tc_infer_binary, 1, 0},
    {"", "GreaterOrEqual", TC_OPC_ELTWISE, tc_infer_binary, 1, 0},
    {"", "And", TC_OPC_ELTWISE, tc_infer_binary, 1, 0},
    {"", "Or", TC_OPC_ELTWISE, tc_infer_binary, 1, 0},
    {"", "Xor", TC_OPC_ELTWISE, tc_infer_binary, 1, 0},
    {"", "Where", TC_OPC_ELTWISE, tc_infer_where, 1, 0},
    {"", "Not", TC_OPC_ELTWISE, tc_infer_unary, 1, 0},
    {"", "Neg", TC_OPC_ELTWISE, tc_infer_unary, 1, 0},
    {"", "Abs", TC_OPC_ELTWISE, tc_infer_unary, 1, 0},
    {"", "Sqrt", TC_OPC_ELTWISE, tc_infer_unary, 1, 0},
    {"", "Reciprocal", TC_OPC_ELTWISE, tc_infer_unary, 1, 0},
    {"", "Exp", TC_OPC_ELTWISE, tc_infer_unary, 1, 0},
    {"", "Log", TC_OPC_ELTWISE, tc_infer_unary, 1, 0},
    {"", "Floor", TC_OPC_ELTWISE, tc_infer_unary, 1, 0},
    {"", "Ceil", TC_OPC_ELTWISE, tc_infer_unary, 1, 0},
    {"", "Round", TC_OPC_ELTWISE, tc_infer_unary, 1, 0},
    {"", "Sign", TC_OPC_ELTWISE, tc_infer_unary, 1, 0},
    {"", "Cast", TC_OPC_ELTWISE, tc_infer_cast, 0, 0},
    {"", "CastLike", TC_OPC_ELTWISE, tc_infer_cast, 0, 0},
    {"", "Bernoulli", TC_OPC_ELTWISE, tc_infer_unary, 1, 0},
    {"", "RandomUniformLike", TC_OPC_ELTWISE, tc_infer_unary, 1, 0},
    {"", "RandomNormalLike", TC_OPC_ELTWISE, tc_infer_unary, 1, 0},
    {"", "ConstantOfShape", TC_OPC_ELTWISE, tc_infer_constant_of_shape, 0, 0},
    {"", "Range", TC_OPC_SHAPE, tc_infer_range, 0, 0},
    /* index_put (a slice assignment): the data input's shape, its values unknown */
    {"", "ScatterND", TC_OPC_ELTWISE, tc_infer_unary, 1, 0},
    {"", "Dropout", TC_OPC_DROPOUT, tc_infer_dropout, 2, 0},
    /* concatenation */
    {"", "Concat", TC_OPC_CONCAT, tc_infer_concat, 0, 0},
    {"", "Split", TC_OPC_CONCAT, tc_infer_split, 0, 0},
    /* data movement and shape arithmetic */
    {"", "Identity", TC_OPC_SHAPE, tc_infer_identity, 0, 0},
    {"", "Reshape", TC_OPC_SHAPE, tc_infer_reshape, 0, 0},
    {"", "Flatten", TC_OPC_SHAPE, tc_infer_flatten, 0, 0},
    {"", "Transpose", TC_OPC_SHAPE, tc_infer_transpose, 0, 0},
    {"", "Slice", TC_OPC_SHAPE, tc_infer_slice, 0, 0},
    {"", "Pad", TC_OPC_SHAPE, tc_infer_pad, 0, 0},
    {"", "Squeeze", TC_OPC_SHAPE, tc_infer_squeeze, 0, 0},
    {"", "Unsqueeze", TC_OPC_SHAPE, tc_infer_unsqueeze, 0, 0},
    {"", "Expand", TC_OPC_SHAPE, tc_infer_expand, 0, 0},
    {"", "Tile", TC_OPC_SHAPE, tc_infer_tile, 0, 0},
    {"", "Gather", TC_OPC_SHAPE, tc_infer_gather, 0, 0},
    {"", "Constant", TC_OPC_SHAPE, tc_infer_constant, 0, 0},
    {"", "Shape", TC_OPC_SHAPE, tc_infer_shape, 0, 0},
    {"", "Size", TC_OPC_SHAPE, tc_infer_size, 0, 0},
    /* PyTorch ops torch.onnx exports as ATen fallbacks (which ones:
     * tc_infer_aten) */
    {"org.pytorch.aten", "ATen", TC_OPC_ELTWISE, tc_infer_aten, 1, 0},
};

const tc_op_rule_t *tc_op_rule_find(const char *domain, const char *op)
{
    for (size_t i = 0; i < sizeof s_rules / sizeof s_rules[0]; i++) {
        if (!strcmp(s_rules[i].op, op) && !strcmp(s_rules[i].domain, domain))
            return &s_rules[i];
    }
    return NULL;
}
