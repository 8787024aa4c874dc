/* Model features (common/onnx/tc_features.h): layers aggregated by op class
 * times the batch, feature names. */
#include "tc_error.h"
#include "tc_features.h"

#include <criterion/criterion.h>

Test(features, aggregate_by_class_times_batch, .timeout = 10)
{
    tc_layer_summary_t layers[] = {
        {TC_OPC_CONV, 1728, 1e6, 3072, 16384},
        {TC_OPC_BN, 32, 5e4, 16384, 16384},
        {TC_OPC_ACT, 0, 1.6e4, 16384, 16384},
        {TC_OPC_BN, 64, 5e4, 8192, 8192},
        {TC_OPC_GEMM, 1010, 2e3, 100, 10},
    };
    tc_features_t f;
    tc_features_from_layers(layers, 5, 8, &f);
    cr_assert_eq(f.batch, 8);
    cr_assert_float_eq(f.cls[TC_OPC_BN].layers, 2, 1e-12);
    cr_assert_float_eq(f.cls[TC_OPC_BN].elems_in, 8.0 * (16384 + 8192), 1e-9);
    cr_assert_float_eq(f.cls[TC_OPC_BN].params, 96, 1e-12);
    cr_assert_float_eq(f.total_params, 1728 + 32 + 64 + 1010, 1e-9);
    cr_assert_float_eq(f.total_layers, 5, 1e-12);
    cr_assert_float_eq(f.conv_layers, 1, 1e-12);
    cr_assert_float_eq(f.conv_flops, 8e6, 1e-6);
    double v;
    cr_assert_eq(tc_feature_value(&f, "bn.elems", &v), 0);
    cr_assert_float_eq(v, 2 * 8.0 * (16384 + 8192), 1e-9);
    cr_assert_eq(tc_feature_value(&f, "gemm.flops", &v), 0);
    cr_assert_float_eq(v, 16e3, 1e-9);
    cr_assert_eq(tc_feature_value(&f, "total.params", &v), 0);
    cr_assert_eq(tc_feature_value(&f, "total.one", &v), 0);
    cr_assert_float_eq(v, 1, 0);
    cr_assert_eq(tc_feature_value(&f, "bn.colour", &v), TC_EINVAL);
    cr_assert_eq(tc_feature_value(&f, "lstm.layers", &v), TC_EINVAL);
    cr_assert_eq(tc_op_class_parse("eltwise"), TC_OPC_ELTWISE);
    cr_assert_eq(tc_op_class_parse("nope"), -1);
}

/* Layer norm, softmax and copies are classes of their own, apart from the
 * reductions and the views they used to be counted with. */
Test(features, transformer_classes, .timeout = 10)
{
    tc_layer_summary_t layers[] = {
        {TC_OPC_NORM, 1536, 4e5, 38400, 38400},   {TC_OPC_SHAPE, 0, 0, 115200, 38400},
        {TC_OPC_COPY, 0, 0, 38400, 38400},        {TC_OPC_SOFTMAX, 0, 9e4, 30000, 30000},
        {TC_OPC_REDUCE, 0, 768, 38400, 768},      {TC_OPC_NORM, 1536, 4e5, 38400, 38400},
    };
    tc_features_t f;
    tc_features_from_layers(layers, 6, 4, &f);
    double v;
    cr_assert_eq(tc_feature_value(&f, "norm.elems", &v), 0);
    cr_expect_float_eq(v, 4.0 * 2 * (38400 + 38400), 1e-9);
    cr_assert_eq(tc_feature_value(&f, "norm.params", &v), 0);
    cr_expect_float_eq(v, 3072, 1e-9);
    cr_assert_eq(tc_feature_value(&f, "softmax.elems", &v), 0);
    cr_expect_float_eq(v, 4.0 * 60000, 1e-9);
    cr_assert_eq(tc_feature_value(&f, "copy.elems", &v), 0);
    cr_expect_float_eq(v, 4.0 * 76800, 1e-9);
    cr_assert_eq(tc_feature_value(&f, "copy.layers", &v), 0);
    cr_expect_float_eq(v, 1, 0);
    cr_assert_eq(tc_feature_value(&f, "shape.elems", &v), 0);
    cr_expect_float_eq(v, 4.0 * 153600, 1e-9, "views only");
    cr_assert_eq(tc_feature_value(&f, "reduce.layers", &v), 0);
    cr_expect_float_eq(v, 1, 0, "the reduction alone");
    cr_expect_eq(tc_op_class_parse("norm"), TC_OPC_NORM);
    cr_expect_eq(tc_op_class_parse("softmax"), TC_OPC_SOFTMAX);
    cr_expect_eq(tc_op_class_parse("copy"), TC_OPC_COPY);
    cr_expect_str_eq(tc_op_class_name(TC_OPC_COPY), "copy");
}
