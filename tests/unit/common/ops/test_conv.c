/* Conv arithmetic (common/wire/tc_conv.h): output sizes, MACs, labels,
 * checks, the protobuf round trip and the order of configs. */
#include "tc_conv.h"
#include "tc_error.h"

#include <criterion/criterion.h>

Test(conv, output_size_macs_and_labels, .timeout = 10)
{
    tc_conv_config_t c = tc_conv_config_default();
    c.n = 32, c.c = 64, c.h = c.w = 56, c.k = 64, c.r = c.s = 3, c.pad_h = c.pad_w = 1;
    cr_assert_eq(tc_conv_out_h(&c), 56);
    cr_assert_float_eq(tc_conv_macs(&c), 32.0 * 64 * 56 * 56 * 64 * 9, 1);
    cr_assert_eq(tc_conv_weight_count(&c), 64 * 64 * 9);
    char label[128];
    tc_conv_config_label(&c, label, sizeof label);
    cr_assert_str_eq(label, "n32 c64 56x56 k64 3x3/1 p1");
    /* resnet stem: 7x7/2 pad 3 on 224 -> 112 */
    c.c = 3, c.h = c.w = 224, c.r = c.s = 7, c.stride_h = c.stride_w = 2, c.pad_h = c.pad_w = 3;
    cr_assert_eq(tc_conv_out_w(&c), 112);
    /* depthwise with dilation */
    c = tc_conv_config_default();
    c.c = c.k = c.groups = 32, c.h = c.w = 14, c.r = c.s = 3, c.dilation_h = c.dilation_w = 2;
    c.pad_h = c.pad_w = 2;
    cr_assert_eq(tc_conv_out_h(&c), 14);
    cr_assert_eq(tc_conv_weight_count(&c), 32 * 9);
    cr_assert_eq(tc_conv_config_check(&c), 0);
    c.groups = 5;
    cr_assert_eq(tc_conv_config_check(&c), TC_EINVAL);
    c.groups = 1, c.pad_h = c.pad_w = 0, c.h = c.w = 3;
    cr_assert_eq(tc_conv_out_h(&c), 0, "a 5x5 effective filter does not fit 3x3");
    cr_assert_eq(tc_conv_config_check(&c), TC_EINVAL);
}

Test(conv, proto_round_trip_and_order, .timeout = 10)
{
    tc_conv_config_t a = tc_conv_config_default(), b;
    a.n = 8, a.c = 3, a.h = 224, a.w = 200, a.k = 64, a.r = 7, a.s = 5, a.pad_h = 3, a.pad_w = 2;
    a.stride_h = 2, a.stride_w = 1, a.groups = 1, a.layout = TRAINCAST__V1__LAYOUT__LAYOUT_NHWC;
    Traincast__V1__ConvConfig p = TRAINCAST__V1__CONV_CONFIG__INIT;
    tc_conv_config_to_proto(&a, &p);
    tc_conv_config_from_proto(&p, &b);
    cr_assert_eq(tc_conv_config_cmp(&a, &b), 0);
    b.k = 65;
    cr_assert_lt(tc_conv_config_cmp(&a, &b), 0);
    cr_assert_gt(tc_conv_config_cmp(&b, &a), 0);
}
