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
