/* Shape inference op by op, on small graphs built in the test. Expected
 * shapes are worked out by hand from the ONNX operator definitions; the
 * pooling edge cases follow PyTorch (checked with torch.nn.functional). */
#include "tc_error.h"
#include "tc_model.h"
#include "tc_test_onnx.h"

#include <criterion/criterion.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

static tc_model_t *s_load(tc_tb_t *tb, bool allow_unknown)
{
    size_t len;
    const uint8_t *bytes = tc_tb_pack(tb, &len);
    tc_model_opts_t o = {.allow_unknown = allow_unknown};
    tc_model_t *m = NULL;
    int rc = tc_model_load_bytes(bytes, len, "t", &o, &m);
    cr_assert_eq(rc, 0, "import failed: %s", tc_errmsg());
    return m;
}

static int s_load_rc(tc_tb_t *tb)
{
    size_t len;
    const uint8_t *bytes = tc_tb_pack(tb, &len);
    tc_model_t *m = NULL;
    int rc = tc_model_load_bytes(bytes, len, "t", NULL, &m);
    tc_model_destroy(&m);
    return rc;
}

/* The value's shape without the batch: up to 5 dims, -1 ends the list. */
static void s_shape(tc_model_t *m, const char *value, int64_t d0, int64_t d1, int64_t d2,
                    int64_t d3, int64_t d4)
{
    const int64_t want[5] = {d0, d1, d2, d3, d4};
    int want_rank = 0;
    while (want_rank < 5 && want[want_rank] >= 0)
        want_rank++;
    int rank;
    int64_t got[TC_MODEL_MAX_RANK];
    bool batched;
    cr_assert_eq(tc_model_value_shape(m, value, &rank, got, &batched), 0, "%s", tc_errmsg());
    cr_expect_eq(rank, want_rank, "%s: rank %d, expected %d", value, rank, want_rank);
    for (int k = 0; k < rank && k < want_rank; k++)
        cr_expect_eq(got[k], want[k], "%s: dim %d is %lld, expected %lld", value, k,
                     (long long)got[k], (long long)want[k]);
}

static const tc_model_node_t *s_layer(tc_model_t *m, const char *name)
{
    for (size_t i = 0; i < tc_model_node_count(m); i++)
        if (!strcmp(tc_model_node(m, i)->name, name))
            return tc_model_node(m, i);
    cr_assert_fail("no layer %s", name);
    return NULL;
}

Test(ops, conv_groups_dilation_pads, .timeout = 10)
{
    tc_tb_t *tb = tc_tb_new(8, 20, 20);
    tc_tb_weight(tb, "w", 4, (int64_t[]){16, 2, 3, 3});
    tc_tb_weight(tb, "b", 1, (int64_t[]){16});
    Onnx__NodeProto *n = tc_tb_node(tb, "Conv", "conv", "x,w,b", "y");
    tc_tb_attr_int(tb, n, "group", 4);
    tc_tb_attr_ints(tb, n, "dilations", 2, (int64_t[]){2, 2});
    tc_tb_attr_ints(tb, n, "pads", 4, (int64_t[]){2, 2, 2, 2});
    tc_tb_output(tb, "y");
    tc_model_t *m = s_load(tb, false);
    s_shape(m, "y", 16, 20, 20, -1, -1);
    const tc_model_node_t *c = s_layer(m, "conv");
    cr_expect(c->is_conv);
    cr_expect_eq(c->conv.groups, 4);
    cr_expect_eq(c->conv.dilation_h, 2);
    cr_expect_eq(c->conv.pad_h, 2);
    cr_expect_eq(c->conv.c, 8);
    cr_expect_eq(c->conv.k, 16);
    cr_expect_eq(c->params, 16 * 2 * 3 * 3 + 16);
    cr_expect_eq(c->macs, 16.0 * 20 * 20 * 2 * 9);
    cr_expect(c->first_layer);
    tc_model_destroy(&m);
    tc_tb_free(&tb);
}

Test(ops, conv_asymmetric_pads_become_a_padded_input, .timeout = 10)
{
    tc_tb_t *tb = tc_tb_new(3, 11, 11);
    tc_tb_weight(tb, "w", 4, (int64_t[]){4, 3, 3, 3});
    Onnx__NodeProto *n = tc_tb_node(tb, "Conv", "conv", "x,w", "y");
    tc_tb_attr_ints(tb, n, "strides", 2, (int64_t[]){2, 2});
    tc_tb_attr_ints(tb, n, "pads", 4, (int64_t[]){0, 0, 1, 1});
    tc_tb_output(tb, "y");
    tc_model_t *m = s_load(tb, false);
    s_shape(m, "y", 4, 5, 5, -1, -1);
    const tc_conv_config_t *c = &s_layer(m, "conv")->conv;
    cr_expect_eq(c->pad_h, 0);
    cr_expect_eq(c->h, 12);
    cr_expect_eq(tc_conv_out_h(c), 5);
    tc_model_destroy(&m);
    tc_tb_free(&tb);
}

Test(ops, conv_auto_pad, .timeout = 10)
{
    static const struct {
        const char *mode;
        int64_t in, k, stride, out, pad, h;
    } cases[] = {
        {"SAME_UPPER", 11, 3, 2, 6, 1, 11},
        {"SAME_UPPER", 10, 2, 1, 10, 0, 11},
        {"SAME_LOWER", 10, 2, 1, 10, 0, 11},
        {"VALID", 11, 3, 2, 5, 0, 11},
        {"NOTSET", 11, 3, 2, 5, 0, 11},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        tc_tb_t *tb = tc_tb_new(2, cases[i].in, cases[i].in);
        tc_tb_weight(tb, "w", 4, (int64_t[]){2, 2, cases[i].k, cases[i].k});
        Onnx__NodeProto *n = tc_tb_node(tb, "Conv", "conv", "x,w", "y");
        tc_tb_attr_str(tb, n, "auto_pad", cases[i].mode);
        tc_tb_attr_ints(tb, n, "strides", 2, (int64_t[]){cases[i].stride, cases[i].stride});
        tc_tb_output(tb, "y");
        tc_model_t *m = s_load(tb, false);
        s_shape(m, "y", 2, cases[i].out, cases[i].out, -1, -1);
        const tc_conv_config_t *c = &s_layer(m, "conv")->conv;
        cr_expect_eq(c->pad_h, cases[i].pad, "%s", cases[i].mode);
        cr_expect_eq(c->h, cases[i].h, "%s", cases[i].mode);
        cr_expect_eq(tc_conv_out_h(c), cases[i].out, "%s", cases[i].mode);
        tc_model_destroy(&m);
        tc_tb_free(&tb);
    }
}

/* PyTorch: max_pool2d(5x5, 2, 2, padding=1, ceil_mode=True) is 3x3 (the
 * last window would start in the padding); avg_pool2d(6x6, 3, 2, padding 1,
 * ceil) is 4x4; max_pool2d(112, 3, 2, ceil) is 56. */
Test(ops, pool_ceil_mode_as_pytorch, .timeout = 10)
{
    static const struct {
        const char *op;
        int64_t in, k, s, pad, ceil, out;
    } cases[] = {
        {"MaxPool", 5, 2, 2, 1, 1, 3},   {"MaxPool", 5, 2, 2, 1, 0, 3},
        {"AveragePool", 6, 3, 2, 1, 1, 4}, {"MaxPool", 112, 3, 2, 0, 1, 56},
        {"MaxPool", 14, 3, 2, 1, 1, 8},  {"AveragePool", 7, 2, 2, 0, 0, 3},
        {"AveragePool", 7, 2, 2, 0, 1, 4},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        tc_tb_t *tb = tc_tb_new(2, cases[i].in, cases[i].in);
        Onnx__NodeProto *n = tc_tb_node(tb, cases[i].op, "pool", "x", "y");
        tc_tb_attr_ints(tb, n, "kernel_shape", 2, (int64_t[]){cases[i].k, cases[i].k});
        tc_tb_attr_ints(tb, n, "strides", 2, (int64_t[]){cases[i].s, cases[i].s});
        int64_t p = cases[i].pad;
        tc_tb_attr_ints(tb, n, "pads", 4, (int64_t[]){p, p, p, p});
        tc_tb_attr_int(tb, n, "ceil_mode", cases[i].ceil);
        if (!strcmp(cases[i].op, "AveragePool"))
            tc_tb_attr_int(tb, n, "count_include_pad", 1);
        tc_tb_output(tb, "y");
        tc_model_t *m = s_load(tb, false);
        s_shape(m, "y", 2, cases[i].out, cases[i].out, -1, -1);
        cr_expect_eq(s_layer(m, "pool")->op_class, TC_OPC_POOL);
        tc_model_destroy(&m);
        tc_tb_free(&tb);
    }
}

Test(ops, pool_bad_attributes_fail, .timeout = 10)
{
    tc_tb_t *tb = tc_tb_new(2, 8, 8);
    Onnx__NodeProto *n = tc_tb_node(tb, "AveragePool", "pool", "x", "y");
    tc_tb_attr_ints(tb, n, "kernel_shape", 2, (int64_t[]){3, 3});
    tc_tb_attr_int(tb, n, "count_include_pad", 7);
    tc_tb_output(tb, "y");
    cr_expect_eq(s_load_rc(tb), TC_EPARSE);
    tc_tb_free(&tb);
    tb = tc_tb_new(2, 8, 8);
    n = tc_tb_node(tb, "MaxPool", "pool", "x", "y");
    tc_tb_attr_ints(tb, n, "kernel_shape", 2, (int64_t[]){9, 9});
    tc_tb_output(tb, "y");
    cr_expect_eq(s_load_rc(tb), TC_EPARSE, "a 9x9 window on 8x8");
    tc_tb_free(&tb);
}

/* x.view(x.size(0), -1) as torch.onnx writes it with a dynamic batch. */
Test(ops, shape_arithmetic_folds_into_reshape, .timeout = 10)
{
    tc_tb_t *tb = tc_tb_new(4, 6, 6);
    tc_tb_node(tb, "Shape", "shape", "x", "s");
    tc_tb_const_ints(tb, "zero", 1, (int64_t[]){0});
    Onnx__NodeProto *g = tc_tb_node(tb, "Gather", "gather", "s,zero", "b");
    tc_tb_attr_int(tb, g, "axis", 0);
    tc_tb_const_ints(tb, "minus1", 1, (int64_t[]){-1});
    Onnx__NodeProto *c = tc_tb_node(tb, "Concat", "concat", "b,minus1", "target");
    tc_tb_attr_int(tb, c, "axis", 0);
    tc_tb_node(tb, "Reshape", "reshape", "x,target", "flat");
    tc_tb_weight(tb, "fc.w", 2, (int64_t[]){10, 144});
    tc_tb_weight(tb, "fc.b", 1, (int64_t[]){10});
    Onnx__NodeProto *fc = tc_tb_node(tb, "Gemm", "fc", "flat,fc.w,fc.b", "y");
    tc_tb_attr_int(tb, fc, "transB", 1);
    tc_tb_output(tb, "y");
    tc_model_t *m = s_load(tb, false);
    s_shape(m, "flat", 144, -1, -1, -1, -1);
    s_shape(m, "y", 10, -1, -1, -1, -1);
    cr_expect_eq(tc_model_onnx_node_count(m), 7);
    cr_expect_eq(tc_model_node_count(m), 2, "only Reshape and Gemm are layers");
    cr_expect_eq(tc_model_params(m), 1450);
    cr_expect_eq(tc_model_macs(m), 1440);
    tc_model_destroy(&m);
    tc_tb_free(&tb);
}

/* vit's class token: cls.expand(n, -1, -1) is exported as Where(Equal(
 * [n, -1, -1], -1), 1, [n, -1, -1]) feeding Expand; n is the batch, which
 * is never -1, so the comparison folds for every batch size. */
Test(ops, expand_minus_one_with_the_batch, .timeout = 10)
{
    tc_tb_t *tb = tc_tb_new_rank(3, (int64_t[]){0, 4, 8});
    tc_tb_node(tb, "Shape", "shape", "x", "s");
    tc_tb_const_ints(tb, "zero", 1, (int64_t[]){0});
    Onnx__NodeProto *g = tc_tb_node(tb, "Gather", "gather", "s,zero", "n");
    tc_tb_attr_int(tb, g, "axis", 0);
    tc_tb_const_ints(tb, "m1m1", 2, (int64_t[]){-1, -1});
    Onnx__NodeProto *c = tc_tb_node(tb, "Concat", "concat", "n,m1m1", "target");
    tc_tb_attr_int(tb, c, "axis", 0);
    tc_tb_const_ints(tb, "minus1", 1, (int64_t[]){-1});
    tc_tb_node(tb, "Equal", "eq", "target,minus1", "is_m1");
    tc_tb_const_ints(tb, "ones", 3, (int64_t[]){1, 1, 1});
    tc_tb_node(tb, "Where", "where", "is_m1,ones,target", "shape");
    tc_tb_weight(tb, "cls", 3, (int64_t[]){1, 1, 8});
    tc_tb_node(tb, "Expand", "expand", "cls,shape", "tok");
    Onnx__NodeProto *cat = tc_tb_node(tb, "Concat", "cat", "tok,x", "y");
    tc_tb_attr_int(tb, cat, "axis", 1);
    tc_tb_output(tb, "y");
    tc_model_t *m = s_load(tb, false);
    s_shape(m, "tok", 1, 8, -1, -1, -1);
    s_shape(m, "y", 5, 8, -1, -1, -1);
    tc_model_destroy(&m);
    tc_tb_free(&tb);
}

/* torch's F.pad with pads computed at run time, as swin pads to whole
 * windows: the pads (last axis first, begin/end pairs) are viewed as
 * [pairs, 2], reversed with a Slice of step -1, transposed and flattened
 * into ONNX's order (all begins, then all ends); every step folds. */
Test(ops, computed_pads_fold_through_slice_and_transpose, .timeout = 10)
{
    tc_tb_t *tb = tc_tb_new(3, 5, 6);
    /* torch order: w (1, 2), h (0, 3), c (0, 0), n (0, 0). */
    tc_tb_const_ints(tb, "torch_pads", 8, (int64_t[]){1, 2, 0, 3, 0, 0, 0, 0});
    tc_tb_ints(tb, "pairs", 2, (int64_t[]){-1, 2});
    tc_tb_node(tb, "Reshape", "as_pairs", "torch_pads,pairs", "p2");
    tc_tb_const_ints(tb, "start", 1, (int64_t[]){-1});
    tc_tb_const_ints(tb, "end", 1, (int64_t[]){-1000});
    tc_tb_const_ints(tb, "axis0", 1, (int64_t[]){0});
    tc_tb_const_ints(tb, "back", 1, (int64_t[]){-1});
    tc_tb_node(tb, "Slice", "reverse", "p2,start,end,axis0,back", "rev");
    Onnx__NodeProto *t = tc_tb_node(tb, "Transpose", "t", "rev", "revt");
    tc_tb_attr_ints(tb, t, "perm", 2, (int64_t[]){1, 0});
    tc_tb_ints(tb, "flat", 1, (int64_t[]){-1});
    tc_tb_node(tb, "Reshape", "onnx_order", "revt,flat", "pads");
    tc_tb_node(tb, "Pad", "pad", "x,pads", "y");
    tc_tb_output(tb, "y");
    tc_model_t *m = s_load(tb, false);
    s_shape(m, "y", 3, 5 + 3, 6 + 1 + 2, -1, -1);
    tc_model_destroy(&m);
    tc_tb_free(&tb);
}

/* Range of known scalars: its length and values ([2, 3] here, a reshape
 * target after the batch). */
Test(ops, range_folds, .timeout = 10)
{
    tc_tb_t *tb = tc_tb_new_rank(2, (int64_t[]){0, 6});
    tc_tb_const_ints(tb, "start", 1, (int64_t[]){2});
    tc_tb_const_ints(tb, "limit", 1, (int64_t[]){4});
    tc_tb_const_ints(tb, "delta", 1, (int64_t[]){1});
    tc_tb_node(tb, "Range", "range", "start,limit,delta", "dims");
    tc_tb_const_ints(tb, "zero", 1, (int64_t[]){0});
    Onnx__NodeProto *c = tc_tb_node(tb, "Concat", "target", "zero,dims", "target");
    tc_tb_attr_int(tb, c, "axis", 0);
    tc_tb_node(tb, "Reshape", "r", "x,target", "y");
    tc_tb_output(tb, "y");
    tc_model_t *m = s_load(tb, false);
    s_shape(m, "dims", 2, -1, -1, -1, -1);
    s_shape(m, "y", 2, 3, -1, -1, -1);
    tc_model_destroy(&m);
    tc_tb_free(&tb);
}

/* shufflenet's channel shuffle: view(b, g, c/g, h, w), transpose(1, 2),
 * view(b, -1, h, w), with c/g computed by Div on the Shape. */
Test(ops, channel_shuffle_with_div, .timeout = 10)
{
    tc_tb_t *tb = tc_tb_new(6, 5, 5);
    tc_tb_node(tb, "Shape", "shape", "x", "s");
    tc_tb_const_ints(tb, "i0", 1, (int64_t[]){0});
    tc_tb_const_ints(tb, "i1", 1, (int64_t[]){1});
    tc_tb_const_ints(tb, "i2", 1, (int64_t[]){2});
    tc_tb_const_ints(tb, "i3", 1, (int64_t[]){3});
    tc_tb_const_ints(tb, "two", 1, (int64_t[]){2});
    tc_tb_node(tb, "Gather", "g0", "s,i0", "b");
    tc_tb_node(tb, "Gather", "g1", "s,i1", "c");
    tc_tb_node(tb, "Gather", "g2", "s,i2", "h");
    tc_tb_node(tb, "Gather", "g3", "s,i3", "w");
    tc_tb_node(tb, "Div", "div", "c,two", "cg");
    Onnx__NodeProto *cat = tc_tb_node(tb, "Concat", "cat", "b,two,cg,h,w", "t5");
    tc_tb_attr_int(tb, cat, "axis", 0);
    tc_tb_node(tb, "Reshape", "r1", "x,t5", "x5");
    Onnx__NodeProto *tr = tc_tb_node(tb, "Transpose", "tr", "x5", "x5t");
    tc_tb_attr_ints(tb, tr, "perm", 5, (int64_t[]){0, 2, 1, 3, 4});
    tc_tb_const_ints(tb, "m1", 1, (int64_t[]){-1});
    Onnx__NodeProto *cat2 = tc_tb_node(tb, "Concat", "cat2", "b,m1,h,w", "t4");
    tc_tb_attr_int(tb, cat2, "axis", 0);
    tc_tb_node(tb, "Reshape", "r2", "x5t,t4", "y");
    tc_tb_output(tb, "y");
    tc_model_t *m = s_load(tb, false);
    s_shape(m, "x5", 2, 3, 5, 5, -1);
    s_shape(m, "x5t", 3, 2, 5, 5, -1);
    s_shape(m, "y", 6, 5, 5, -1, -1);
    cr_expect_eq(tc_model_node_count(m), 3, "two reshapes and a transpose");
    cr_expect_eq(s_layer(m, "r1")->op_class, TC_OPC_SHAPE, "a view");
    cr_expect_eq(s_layer(m, "tr")->op_class, TC_OPC_SHAPE, "a view");
    cr_expect_eq(s_layer(m, "r2")->op_class, TC_OPC_COPY,
                 "the shuffle's .contiguous().view() copies");
    tc_model_destroy(&m);
    tc_tb_free(&tb);
}

Test(ops, split_and_slice, .timeout = 10)
{
    tc_tb_t *tb = tc_tb_new(8, 4, 4);
    tc_tb_ints(tb, "sizes", 2, (int64_t[]){3, 5});
    Onnx__NodeProto *sp = tc_tb_node(tb, "Split", "split", "x,sizes", "a,b");
    tc_tb_attr_int(tb, sp, "axis", 1);
    tc_tb_ints(tb, "st", 1, (int64_t[]){2});
    tc_tb_ints(tb, "en", 1, (int64_t[]){INT64_MAX});
    tc_tb_ints(tb, "ax", 1, (int64_t[]){1});
    tc_tb_node(tb, "Slice", "slice", "x,st,en,ax", "s1");
    tc_tb_ints(tb, "st2", 1, (int64_t[]){-1});
    tc_tb_ints(tb, "en2", 1, (int64_t[]){INT64_MIN});
    tc_tb_ints(tb, "ax2", 1, (int64_t[]){-1});
    tc_tb_ints(tb, "step2", 1, (int64_t[]){-2});
    tc_tb_node(tb, "Slice", "slice2", "x,st2,en2,ax2,step2", "s2");
    Onnx__NodeProto *eq = tc_tb_node(tb, "Split", "split3", "x", "p,q");
    tc_tb_attr_int(tb, eq, "axis", 2);
    tc_tb_output(tb, "a");
    tc_tb_output(tb, "b");
    tc_tb_output(tb, "s1");
    tc_tb_output(tb, "s2");
    tc_tb_output(tb, "q");
    tc_model_t *m = s_load(tb, false);
    s_shape(m, "a", 3, 4, 4, -1, -1);
    s_shape(m, "b", 5, 4, 4, -1, -1);
    s_shape(m, "s1", 6, 4, 4, -1, -1);
    s_shape(m, "s2", 8, 4, 2, -1, -1);
    s_shape(m, "q", 8, 2, 4, -1, -1);
    cr_expect_eq(s_layer(m, "split")->op_class, TC_OPC_CONCAT);
    cr_expect_eq(s_layer(m, "slice")->op_class, TC_OPC_SHAPE);
    tc_model_destroy(&m);
    tc_tb_free(&tb);
}

/* convnext's block: permute to channels-last, LayerNorm, Linear as MatMul
 * with a transposed weight plus Add, permute back. */
Test(ops, channels_last_linear_and_layernorm, .timeout = 10)
{
    tc_tb_t *tb = tc_tb_new(8, 4, 4);
    Onnx__NodeProto *t1 = tc_tb_node(tb, "Transpose", "to_nhwc", "x", "xh");
    tc_tb_attr_ints(tb, t1, "perm", 4, (int64_t[]){0, 2, 3, 1});
    tc_tb_weight(tb, "ln.w", 1, (int64_t[]){8});
    tc_tb_weight(tb, "ln.b", 1, (int64_t[]){8});
    Onnx__NodeProto *ln = tc_tb_node(tb, "LayerNormalization", "ln", "xh,ln.w,ln.b", "xn");
    tc_tb_attr_int(tb, ln, "axis", -1);
    tc_tb_weight(tb, "fc.w", 2, (int64_t[]){16, 8});
    Onnx__NodeProto *wt = tc_tb_node(tb, "Transpose", "wt", "fc.w", "fc.wt");
    tc_tb_attr_ints(tb, wt, "perm", 2, (int64_t[]){1, 0});
    tc_tb_node(tb, "MatMul", "mm", "xn,fc.wt", "xm");
    tc_tb_weight(tb, "fc.b", 1, (int64_t[]){16});
    tc_tb_node(tb, "Add", "bias", "xm,fc.b", "xb");
    Onnx__NodeProto *t2 = tc_tb_node(tb, "Transpose", "to_nchw", "xb", "y");
    tc_tb_attr_ints(tb, t2, "perm", 4, (int64_t[]){0, 3, 1, 2});
    tc_tb_output(tb, "y");
    tc_model_t *m = s_load(tb, false);
    s_shape(m, "xh", 4, 4, 8, -1, -1);
    s_shape(m, "xm", 4, 4, 16, -1, -1);
    s_shape(m, "y", 16, 4, 4, -1, -1);
    cr_expect_eq(tc_model_params(m), 16 + 128 + 16);
    const tc_model_node_t *mm = s_layer(m, "mm");
    cr_expect_eq(mm->params, 128, "the MatMul owns the transposed weight");
    cr_expect_eq(mm->macs, 4.0 * 4 * 16 * 8);
    cr_expect_eq(mm->op_class, TC_OPC_GEMM);
    cr_expect_eq(s_layer(m, "ln")->op_class, TC_OPC_NORM);
    cr_expect_eq(s_layer(m, "to_nhwc")->op_class, TC_OPC_COPY,
                 "layer norm makes the permuted tensor contiguous");
    cr_expect_eq(s_layer(m, "to_nchw")->op_class, TC_OPC_SHAPE, "a permute that stays a view");
    cr_expect_eq(s_layer(m, "ln")->params, 16);
    cr_expect_eq(tc_model_node_count(m), 5, "the weight transpose is not a layer");
    tc_model_destroy(&m);
    tc_tb_free(&tb);
}

static Onnx__NodeProto *s_permute(tc_tb_t *tb, const char *name, const char *in,
                                  const char *out, bool to_nhwc)
{
    Onnx__NodeProto *t = tc_tb_node(tb, "Transpose", name, in, out);
    tc_tb_attr_ints(tb, t, "perm", 4, to_nhwc ? (int64_t[]){0, 2, 3, 1} : (int64_t[]){0, 3, 1, 2});
    return t;
}

static void s_norm(tc_tb_t *tb, const char *name, const char *in, const char *out)
{
    char w[32], b[32], ins[96];
    snprintf(w, sizeof w, "%s.w", name);
    snprintf(b, sizeof b, "%s.b", name);
    snprintf(ins, sizeof ins, "%s,%s,%s", in, w, b);
    tc_tb_weight(tb, w, 1, (int64_t[]){8});
    tc_tb_weight(tb, b, 1, (int64_t[]){8});
    tc_tb_attr_int(tb, tc_tb_node(tb, "LayerNormalization", name, ins, out), "axis", -1);
}

static Traincast__V1__Layout s_conv_layout(tc_model_t *m, const char *name)
{
    const tc_model_node_t *n = s_layer(m, name);
    cr_assert(n->is_conv, "%s is a conv", name);
    return n->conv.layout;
}

/* A ConvNeXt stage as torchvision 0.14 writes it: the stem's LayerNorm2d
 * (permute, layer norm, permute back) hands the block a channels-last view,
 * the block's depthwise conv runs channels-last, its branch (permute, layer
 * norm, Linear, permute back) is scaled by a [C, 1, 1] parameter and added
 * to the block's input: still channels-last, so the next conv runs nhwc.
 * An Add whose first operand is NCHW gives NCHW (TensorIterator's order). */
Test(ops, convnext_convs_run_channels_last, .timeout = 10)
{
    tc_tb_t *tb = tc_tb_new(8, 6, 6);
    tc_tb_weight(tb, "stem.w", 4, (int64_t[]){8, 8, 1, 1});
    tc_tb_node(tb, "Conv", "stem", "x,stem.w", "s");
    s_permute(tb, "p1", "s", "s_h", true);
    s_norm(tb, "ln1", "s_h", "s_n");
    s_permute(tb, "p1b", "s_n", "h", false);
    tc_tb_weight(tb, "dw.w", 4, (int64_t[]){8, 1, 3, 3});
    Onnx__NodeProto *dw = tc_tb_node(tb, "Conv", "dw", "h,dw.w", "d");
    tc_tb_attr_int(tb, dw, "group", 8);
    tc_tb_attr_ints(tb, dw, "pads", 4, (int64_t[]){1, 1, 1, 1});
    s_permute(tb, "p2", "d", "d_h", true);
    s_norm(tb, "ln2", "d_h", "d_n");
    tc_tb_weight(tb, "fc.w", 2, (int64_t[]){8, 8});
    tc_tb_node(tb, "MatMul", "fc", "d_n,fc.w", "f");
    s_permute(tb, "p2b", "f", "b", false);
    tc_tb_weight(tb, "gamma", 3, (int64_t[]){8, 1, 1});
    tc_tb_node(tb, "Mul", "scale", "gamma,b", "sc");
    tc_tb_node(tb, "Add", "res", "sc,h", "r");
    tc_tb_weight(tb, "down.w", 4, (int64_t[]){8, 8, 2, 2});
    Onnx__NodeProto *down = tc_tb_node(tb, "Conv", "down", "r,down.w", "y");
    tc_tb_attr_ints(tb, down, "strides", 2, (int64_t[]){2, 2});
    tc_tb_node(tb, "Add", "mix", "s,r", "z");
    tc_tb_weight(tb, "after.w", 4, (int64_t[]){8, 8, 3, 3});
    tc_tb_node(tb, "Conv", "after", "z,after.w", "u");
    tc_tb_output(tb, "y");
    tc_tb_output(tb, "u");
    tc_model_t *m = s_load(tb, false);
    const Traincast__V1__Layout nchw = TRAINCAST__V1__LAYOUT__LAYOUT_NCHW,
                                nhwc = TRAINCAST__V1__LAYOUT__LAYOUT_NHWC;
    cr_expect_eq(s_conv_layout(m, "stem"), nchw, "the network input is NCHW");
    cr_expect_eq(s_conv_layout(m, "dw"), nhwc, "a permuted-back layer norm output");
    cr_expect_eq(s_conv_layout(m, "down"), nhwc, "scaled branch plus input stays channels-last");
    cr_expect_eq(s_conv_layout(m, "after"), nchw, "the first operand (NCHW) orders the sum");
    cr_expect_eq(s_layer(m, "p1")->op_class, TC_OPC_COPY, "layer norm of a permuted NCHW tensor");
    cr_expect_eq(s_layer(m, "p2")->op_class, TC_OPC_SHAPE,
                 "the permute of a channels-last conv output is contiguous: no copy");
    tc_model_destroy(&m);
    tc_tb_free(&tb);
}

/* Multi-head attention as torch.onnx writes nn.MultiheadAttention (1.13):
 * tokens first, a packed q/k/v projection chunked by Slice, each head's
 * `.contiguous().view()` a copy, the heads' transpose a view, softmax over
 * the scores, the heads merged back by another copy; layer norm before. */
Test(ops, attention_norm_softmax_and_copies, .timeout = 10)
{
    tc_tb_t *tb = tc_tb_new_rank(3, (int64_t[]){0, 5, 8}); /* [B, 5 tokens, 8] */
    tc_tb_weight(tb, "ln.w", 1, (int64_t[]){8});
    tc_tb_weight(tb, "ln.b", 1, (int64_t[]){8});
    Onnx__NodeProto *ln = tc_tb_node(tb, "LayerNormalization", "ln", "x,ln.w,ln.b", "xn");
    tc_tb_attr_int(tb, ln, "axis", -1);
    Onnx__NodeProto *t0 = tc_tb_node(tb, "Transpose", "seq_first", "xn", "xs");
    tc_tb_attr_ints(tb, t0, "perm", 3, (int64_t[]){1, 0, 2});
    tc_tb_weight(tb, "in_proj", 2, (int64_t[]){8, 24});
    tc_tb_node(tb, "MatMul", "qkv", "xs,in_proj", "p"); /* [5, B, 24] */
    const char *names[3] = {"q", "k", "v"};
    for (int i = 0; i < 3; i++) {
        char st[8], en[8], ax[8], sl[8], out[8], sh[8], r[8], rv[8], t[8], tv[8];
        snprintf(st, sizeof st, "st%d", i);
        snprintf(en, sizeof en, "en%d", i);
        snprintf(ax, sizeof ax, "ax%d", i);
        snprintf(sl, sizeof sl, "sl_%s", names[i]);
        snprintf(out, sizeof out, "%s0", names[i]);
        snprintf(sh, sizeof sh, "sh%d", i);
        snprintf(r, sizeof r, "view_%s", names[i]);
        snprintf(rv, sizeof rv, "%s1", names[i]);
        snprintf(t, sizeof t, "heads_%s", names[i]);
        snprintf(tv, sizeof tv, "%s2", names[i]);
        tc_tb_ints(tb, st, 1, (int64_t[]){8 * i});
        tc_tb_ints(tb, en, 1, (int64_t[]){8 * i + 8});
        tc_tb_ints(tb, ax, 1, (int64_t[]){2});
        char in[40];
        snprintf(in, sizeof in, "p,%s,%s,%s", st, en, ax);
        tc_tb_node(tb, "Slice", sl, in, out); /* [5, B, 8], a view */
        tc_tb_ints(tb, sh, 3, (int64_t[]){5, -1, 4});
        snprintf(in, sizeof in, "%s,%s", out, sh);
        tc_tb_node(tb, "Reshape", r, in, rv); /* [5, 2B, 4] */
        Onnx__NodeProto *tn = tc_tb_node(tb, "Transpose", t, rv, tv); /* [2B, 5, 4] */
        tc_tb_attr_ints(tb, tn, "perm", 3, (int64_t[]){1, 0, 2});
    }
    Onnx__NodeProto *kt = tc_tb_node(tb, "Transpose", "kt", "k2", "k3");
    tc_tb_attr_ints(tb, kt, "perm", 3, (int64_t[]){0, 2, 1});
    tc_tb_node(tb, "MatMul", "scores", "q2,k3", "s"); /* [2B, 5, 5] */
    Onnx__NodeProto *sm = tc_tb_node(tb, "Softmax", "softmax", "s", "a");
    tc_tb_attr_int(tb, sm, "axis", -1);
    tc_tb_node(tb, "MatMul", "mix", "a,v2", "o"); /* [2B, 5, 4] */
    Onnx__NodeProto *tb1 = tc_tb_node(tb, "Transpose", "tokens_first", "o", "os");
    tc_tb_attr_ints(tb, tb1, "perm", 3, (int64_t[]){1, 0, 2});
    tc_tb_ints(tb, "merged", 2, (int64_t[]){-1, 8});
    tc_tb_node(tb, "Reshape", "merge", "os,merged", "y"); /* [5 B, 8] */
    tc_tb_const_scalar(tb, "zero", 0);
    Onnx__NodeProto *g = tc_tb_node(tb, "Gather", "token0", "xn,zero", "cls");
    tc_tb_attr_int(tb, g, "axis", 1);
    tc_tb_ints(tb, "firsts", 2, (int64_t[]){0, 1});
    Onnx__NodeProto *g2 = tc_tb_node(tb, "Gather", "tokens01", "xn,firsts", "two");
    tc_tb_attr_int(tb, g2, "axis", 1);
    Onnx__NodeProto *sm2 = tc_tb_node(tb, "Softmax", "softmax_t", "q2t", "at");
    tc_tb_attr_int(tb, sm2, "axis", -1);
    Onnx__NodeProto *q2t = tc_tb_node(tb, "Transpose", "q_t", "q2", "q2t");
    tc_tb_attr_ints(tb, q2t, "perm", 3, (int64_t[]){0, 2, 1});
    tc_tb_output(tb, "y");
    tc_tb_output(tb, "cls");
    tc_tb_output(tb, "two");
    tc_tb_output(tb, "at");
    tc_model_t *m = s_load(tb, false);
    s_shape(m, "q1", 5, 4, -1, -1, -1); /* [5, 2B, 4] */
    s_shape(m, "y", 8, -1, -1, -1, -1); /* [5B, 8] */
    cr_expect_eq(s_layer(m, "ln")->op_class, TC_OPC_NORM);
    cr_expect_eq(s_layer(m, "softmax")->op_class, TC_OPC_SOFTMAX);
    cr_expect_eq(s_layer(m, "seq_first")->op_class, TC_OPC_SHAPE, "a view a matmul reads");
    for (int i = 0; i < 3; i++) {
        char sl[8], r[8], t[8];
        snprintf(sl, sizeof sl, "sl_%s", names[i]);
        snprintf(r, sizeof r, "view_%s", names[i]);
        snprintf(t, sizeof t, "heads_%s", names[i]);
        cr_expect_eq(s_layer(m, sl)->op_class, TC_OPC_SHAPE, "%s: chunk is a view", sl);
        cr_expect_eq(s_layer(m, r)->op_class, TC_OPC_COPY, "%s: a view of a chunk copies", r);
        cr_expect_eq(s_layer(m, t)->op_class, TC_OPC_SHAPE, "%s: a view", t);
    }
    cr_expect_eq(s_layer(m, "kt")->op_class, TC_OPC_SHAPE, "bmm reads the keys transposed");
    cr_expect_eq(s_layer(m, "merge")->op_class, TC_OPC_COPY, "merging the heads copies");
    cr_expect_eq(s_layer(m, "token0")->op_class, TC_OPC_SHAPE, "a select is a view");
    cr_expect_eq(s_layer(m, "tokens01")->op_class, TC_OPC_COPY, "index_select copies");
    cr_expect_eq(s_layer(m, "q_t")->op_class, TC_OPC_COPY,
                 "softmax makes the transposed input contiguous");
    tc_features_t f;
    tc_model_features(m, 3, &f);
    cr_expect_eq(f.cls[TC_OPC_NORM].layers, 1);
    cr_expect_eq(f.cls[TC_OPC_NORM].elems_in, 3.0 * 40);
    cr_expect_eq(f.cls[TC_OPC_SOFTMAX].layers, 2);
    cr_expect_eq(f.cls[TC_OPC_SOFTMAX].elems_out, 3.0 * (2 * 25 + 2 * 20));
    cr_expect_eq(f.cls[TC_OPC_COPY].layers, 6);
    cr_expect_eq(f.cls[TC_OPC_COPY].elems_out, 3.0 * (5 * 40 + 16));
    cr_expect_eq(f.cls[TC_OPC_REDUCE].layers, 0);
    tc_model_destroy(&m);
    tc_tb_free(&tb);
}

Test(ops, classifier_head, .timeout = 10)
{
    tc_tb_t *tb = tc_tb_new(32, 7, 7);
    tc_tb_node(tb, "GlobalAveragePool", "gap", "x", "g");
    Onnx__NodeProto *fl = tc_tb_node(tb, "Flatten", "flat", "g", "f");
    tc_tb_attr_int(tb, fl, "axis", 1);
    tc_tb_ints(tb, "ratio", 1, (int64_t[]){0}); /* shape only */
    tc_tb_node(tb, "Dropout", "drop", "f", "d,mask");
    tc_tb_weight(tb, "w", 2, (int64_t[]){32, 5});
    tc_tb_node(tb, "Gemm", "fc", "d,w", "logits");
    Onnx__NodeProto *sm = tc_tb_node(tb, "Softmax", "softmax", "logits", "p");
    tc_tb_attr_int(tb, sm, "axis", -1);
    Onnx__NodeProto *rm = tc_tb_node(tb, "ReduceMean", "mean", "x", "mx");
    tc_tb_attr_ints(tb, rm, "axes", 2, (int64_t[]){2, 3});
    tc_tb_attr_int(tb, rm, "keepdims", 0);
    tc_tb_output(tb, "p");
    tc_tb_output(tb, "mx");
    tc_model_t *m = s_load(tb, false);
    s_shape(m, "g", 32, 1, 1, -1, -1);
    s_shape(m, "f", 32, -1, -1, -1, -1);
    s_shape(m, "mask", 32, -1, -1, -1, -1);
    s_shape(m, "logits", 5, -1, -1, -1, -1);
    s_shape(m, "mx", 32, -1, -1, -1, -1);
    cr_expect_eq(s_layer(m, "drop")->op_class, TC_OPC_DROPOUT);
    cr_expect_eq(s_layer(m, "drop")->elems_out, 64, "output and mask");
    cr_expect_eq(s_layer(m, "softmax")->op_class, TC_OPC_SOFTMAX);
    cr_expect_eq(s_layer(m, "mean")->op_class, TC_OPC_REDUCE);
    cr_expect_eq(s_layer(m, "fc")->macs, 160);
    tc_model_destroy(&m);
    tc_tb_free(&tb);
}

Test(ops, pad_then_average_pool, .timeout = 10)
{
    tc_tb_t *tb = tc_tb_new(4, 17, 17);
    tc_tb_ints(tb, "pads", 8, (int64_t[]){0, 0, 1, 1, 0, 0, 1, 1});
    tc_tb_node(tb, "Pad", "pad", "x,pads", "xp");
    Onnx__NodeProto *p = tc_tb_node(tb, "AveragePool", "pool", "xp", "y");
    tc_tb_attr_ints(tb, p, "kernel_shape", 2, (int64_t[]){3, 3});
    tc_tb_output(tb, "y");
    tc_model_t *m = s_load(tb, false);
    s_shape(m, "xp", 4, 19, 19, -1, -1);
    s_shape(m, "y", 4, 17, 17, -1, -1);
    cr_expect_eq(s_layer(m, "pad")->op_class, TC_OPC_SHAPE,
                 "the pool's own padding as the exporter writes it: no copy");
    tc_model_destroy(&m);
    tc_tb_free(&tb);
}

Test(ops, batchnorm_running_stats_are_not_parameters, .timeout = 10)
{
    tc_tb_t *tb = tc_tb_new(16, 8, 8);
    tc_tb_weight(tb, "bn.w", 1, (int64_t[]){16});
    tc_tb_weight(tb, "bn.b", 1, (int64_t[]){16});
    tc_tb_weight(tb, "bn.mean", 1, (int64_t[]){16});
    tc_tb_weight(tb, "bn.var", 1, (int64_t[]){16});
    Onnx__NodeProto *bn =
        tc_tb_node(tb, "BatchNormalization", "bn", "x,bn.w,bn.b,bn.mean,bn.var", "y,rm,rv");
    tc_tb_attr_int(tb, bn, "training_mode", 1);
    tc_tb_node(tb, "Relu", "relu", "y", "r");
    Onnx__NodeProto *hs = tc_tb_node(tb, "HardSwish", "hs", "r", "h");
    (void)hs;
    tc_tb_node(tb, "HardSigmoid", "hsig", "h", "hg");
    tc_tb_node(tb, "Sigmoid", "sig", "hg", "sg");
    tc_tb_node(tb, "Mul", "mul", "sg,h", "z");
    tc_tb_output(tb, "z");
    tc_model_t *m = s_load(tb, false);
    cr_expect_eq(tc_model_params(m), 32);
    s_shape(m, "rm", 16, -1, -1, -1, -1);
    const tc_model_node_t *n = s_layer(m, "bn");
    cr_expect_eq(n->op_class, TC_OPC_BN);
    cr_expect_eq(n->elems_in, 16 * 64);
    cr_expect_eq(n->elems_out, 16 * 64);
    cr_expect_eq(s_layer(m, "hs")->op_class, TC_OPC_ACT);
    cr_expect_eq(s_layer(m, "mul")->op_class, TC_OPC_ELTWISE);
    cr_expect_eq(s_layer(m, "mul")->elems_in, 2 * 16 * 64);
    cr_expect_str_eq(tc_model_export_warning(m), "", "batch norm in training mode");
    tc_model_destroy(&m);
    tc_tb_free(&tb);
}

/* Batch norm exported in eval mode (one output, training_mode 0) is an
 * inference export, said so with what to do. */
Test(ops, batchnorm_in_inference_mode_is_warned_about, .timeout = 10)
{
    tc_tb_t *tb = tc_tb_new(16, 8, 8);
    tc_tb_weight(tb, "bn.w", 1, (int64_t[]){16});
    tc_tb_weight(tb, "bn.b", 1, (int64_t[]){16});
    tc_tb_weight(tb, "bn.mean", 1, (int64_t[]){16});
    tc_tb_weight(tb, "bn.var", 1, (int64_t[]){16});
    Onnx__NodeProto *bn =
        tc_tb_node(tb, "BatchNormalization", "bn", "x,bn.w,bn.b,bn.mean,bn.var", "y");
    tc_tb_attr_int(tb, bn, "training_mode", 0);
    tc_tb_output(tb, "y");
    tc_model_t *m = s_load(tb, false);
    const char *w = tc_model_export_warning(m);
    cr_expect(strstr(w, "1 of its 1 BatchNormalization nodes are in inference mode") &&
                  strstr(w, "training=torch.onnx.TrainingMode.TRAINING"),
              "%s", w);
    tc_model_destroy(&m);
    tc_tb_free(&tb);
}

Test(ops, clip_concat_and_broadcast_mul, .timeout = 10)
{
    tc_tb_t *tb = tc_tb_new(4, 6, 6);
    tc_tb_node(tb, "Clip", "relu6", "x,,", "c");
    tc_tb_node(tb, "GlobalAveragePool", "se_pool", "c", "s");
    tc_tb_node(tb, "Mul", "scale", "c,s", "cs");
    Onnx__NodeProto *cat = tc_tb_node(tb, "Concat", "cat", "x,cs", "y");
    tc_tb_attr_int(tb, cat, "axis", 1);
    tc_tb_weight(tb, "gamma", 3, (int64_t[]){8, 1, 1});
    tc_tb_node(tb, "Mul", "layer_scale", "y,gamma", "z");
    tc_tb_output(tb, "z");
    tc_model_t *m = s_load(tb, false);
    s_shape(m, "cs", 4, 6, 6, -1, -1);
    s_shape(m, "y", 8, 6, 6, -1, -1);
    s_shape(m, "z", 8, 6, 6, -1, -1);
    cr_expect_eq(s_layer(m, "layer_scale")->params, 8);
    cr_expect_eq(s_layer(m, "cat")->op_class, TC_OPC_CONCAT);
    tc_model_destroy(&m);
    tc_tb_free(&tb);
}

Test(ops, aten_adaptive_pool, .timeout = 10)
{
    tc_tb_t *tb = tc_tb_new(8, 14, 14);
    tc_tb_const_ints(tb, "size", 2, (int64_t[]){4, 4});
    Onnx__NodeProto *n = tc_tb_node(tb, "adaptive_avg_pool2d", "aap", "x,size", "y");
    n->domain = "org.pytorch.aten";
    tc_tb_output(tb, "y");
    tc_model_t *m = s_load(tb, false);
    s_shape(m, "y", 8, 4, 4, -1, -1);
    cr_expect_eq(s_layer(m, "aap")->op_class, TC_OPC_POOL);
    /* 14 -> 4: bins [0,4) [3,7) [7,11) [10,14), 16 reads per axis. */
    cr_expect_float_eq(s_layer(m, "aap")->flops, 8.0 * 16 * 16, 1e-9);
    tc_model_destroy(&m);
    n->domain = "com.example";
    cr_expect_eq(s_load_rc(tb), TC_EUNSUPPORTED, "same op in another domain");
    tc_tb_free(&tb);
}

/* An output larger than the input repeats elements, as PyTorch does (alexnet
 * and vgg at 64 px: a 1x1 or 2x2 map pooled to 6x6 or 7x7); bins that
 * overlap read their shared elements again. */
Test(ops, aten_adaptive_pool_upsamples, .timeout = 10)
{
    tc_tb_t *tb = tc_tb_new(3, 2, 5);
    tc_tb_const_ints(tb, "size", 2, (int64_t[]){7, 3});
    Onnx__NodeProto *n = tc_tb_node(tb, "adaptive_avg_pool2d", "aap", "x,size", "y");
    n->domain = "org.pytorch.aten";
    tc_tb_output(tb, "y");
    tc_model_t *m = s_load(tb, false);
    s_shape(m, "y", 3, 7, 3, -1, -1);
    /* H 2 -> 7: bins of 1 element but [0,2) for the 4th (8 reads);
     * W 5 -> 3: bins [0,2) [1,4) [3,5) (7 reads). */
    cr_expect_float_eq(s_layer(m, "aap")->flops, 3.0 * 8 * 7, 1e-9);
    tc_model_destroy(&m);
    tc_tb_free(&tb);
}

Test(ops, stochastic_depth_mask, .timeout = 10)
{
    tc_tb_t *tb = tc_tb_new(4, 3, 3);
    tc_tb_node(tb, "Shape", "shape", "x", "s");
    tc_tb_const_ints(tb, "i0", 1, (int64_t[]){0});
    tc_tb_node(tb, "Gather", "g", "s,i0", "b");
    tc_tb_const_ints(tb, "ones", 3, (int64_t[]){1, 1, 1});
    Onnx__NodeProto *c = tc_tb_node(tb, "Concat", "cat", "b,ones", "size");
    tc_tb_attr_int(tb, c, "axis", 0);
    tc_tb_node(tb, "ConstantOfShape", "full", "size", "f");
    tc_tb_node(tb, "RandomUniformLike", "rand", "f", "u");
    tc_tb_node(tb, "Less", "less", "u,f", "keep");
    Onnx__NodeProto *cast = tc_tb_node(tb, "Cast", "cast", "keep", "mask");
    tc_tb_attr_int(tb, cast, "to", 1);
    tc_tb_node(tb, "Mul", "apply", "x,mask", "y");
    tc_tb_output(tb, "y");
    tc_model_t *m = s_load(tb, false);
    s_shape(m, "f", 1, 1, 1, -1, -1);
    s_shape(m, "y", 4, 3, 3, -1, -1);
    cr_expect_eq(tc_model_node_count(m), 5, "full, rand, less, cast, mul");
    tc_model_destroy(&m);
    tc_tb_free(&tb);
}

Test(ops, unknown_op_fails_unless_allowed, .timeout = 10)
{
    tc_tb_t *tb = tc_tb_new(4, 6, 6);
    tc_tb_node(tb, "Relu", "relu", "x", "r");
    tc_tb_node(tb, "FancyActivation", "fancy_node", "r", "y");
    tc_tb_output(tb, "y");
    cr_expect_eq(s_load_rc(tb), TC_EUNSUPPORTED);
    cr_expect(strstr(tc_errmsg(), "FancyActivation") && strstr(tc_errmsg(), "fancy_node"),
              "message names op and node: %s", tc_errmsg());
    tc_model_t *m = s_load(tb, true);
    cr_expect_eq(tc_model_unknown_count(m), 1);
    cr_expect(strstr(tc_model_unknown(m, 0), "fancy_node"));
    const tc_model_node_t *n = s_layer(m, "fancy_node");
    cr_expect_eq(n->op_class, TC_OPC_OTHER);
    s_shape(m, "y", 4, 6, 6, -1, -1);
    tc_features_t f;
    tc_model_features(m, 2, &f);
    cr_expect_eq(f.cls[TC_OPC_OTHER].layers, 1);
    cr_expect_eq(f.cls[TC_OPC_OTHER].elems_out, 2 * 144);
    tc_model_destroy(&m);
    tc_tb_free(&tb);
}

Test(ops, value_info_is_checked_not_trusted, .timeout = 10)
{
    tc_tb_t *tb = tc_tb_new(4, 6, 6);
    tc_tb_node(tb, "Relu", "relu", "x", "r");
    tc_tb_output(tb, "r");
    tc_tb_claim(tb, "r", 4, (int64_t[]){0, 4, 6, 6}, 1);
    tc_model_t *m = s_load(tb, false);
    tc_model_destroy(&m);
    tc_tb_claim(tb, "r", 4, (int64_t[]){0, 4, 7, 6}, 1);
    cr_expect_eq(s_load_rc(tb), TC_EPARSE);
    cr_expect(strstr(tc_errmsg(), "'r'"), "%s", tc_errmsg());
    tc_tb_free(&tb);
}

Test(ops, first_layer_flag_and_dedup, .timeout = 10)
{
    tc_tb_t *tb = tc_tb_new(3, 16, 16);
    tc_tb_weight(tb, "w1", 4, (int64_t[]){3, 3, 3, 3});
    tc_tb_weight(tb, "w2", 4, (int64_t[]){3, 3, 3, 3});
    Onnx__NodeProto *c1 = tc_tb_node(tb, "Conv", "conv1", "x,w1", "a");
    tc_tb_attr_ints(tb, c1, "pads", 4, (int64_t[]){1, 1, 1, 1});
    Onnx__NodeProto *c2 = tc_tb_node(tb, "Conv", "conv2", "a,w2", "b");
    tc_tb_attr_ints(tb, c2, "pads", 4, (int64_t[]){1, 1, 1, 1});
    Onnx__NodeProto *c3 = tc_tb_node(tb, "Conv", "conv3", "b,w2", "c");
    tc_tb_attr_ints(tb, c3, "pads", 4, (int64_t[]){1, 1, 1, 1});
    tc_tb_output(tb, "c");
    tc_model_t *m = s_load(tb, false);
    cr_expect(s_layer(m, "conv1")->first_layer);
    cr_expect(!s_layer(m, "conv2")->first_layer);
    cr_expect_eq(tc_model_conv_count(m), 2, "same config, first and not first");
    cr_expect(tc_model_conv(m, 0)->first_layer);
    cr_expect_eq(tc_model_conv(m, 0)->multiplicity, 1);
    cr_expect(!tc_model_conv(m, 1)->first_layer);
    cr_expect_eq(tc_model_conv(m, 1)->multiplicity, 2);
    cr_expect_eq(tc_model_params(m), 2 * 81, "a shared weight counts once");
    tc_model_destroy(&m);
    tc_tb_free(&tb);
}

Test(ops, unsorted_nodes_are_sorted, .timeout = 10)
{
    tc_tb_t *tb = tc_tb_new(4, 6, 6);
    tc_tb_node(tb, "Sigmoid", "second", "r", "y");
    tc_tb_node(tb, "Relu", "first", "x", "r");
    tc_tb_output(tb, "y");
    tc_model_t *m = s_load(tb, false);
    cr_expect_str_eq(tc_model_node(m, 0)->name, "first");
    cr_expect_str_eq(tc_model_node(m, 1)->name, "second");
    tc_model_destroy(&m);
    tc_tb_free(&tb);
}

Test(ops, initializers_listed_as_inputs, .timeout = 10)
{
    tc_tb_t *tb = tc_tb_new(4, 6, 6);
    tc_tb_weight(tb, "w", 4, (int64_t[]){4, 4, 1, 1});
    tc_tb_node(tb, "Conv", "conv", "x,w", "y");
    tc_tb_output(tb, "y");
    Onnx__ModelProto *mp = tc_tb_model(tb);
    /* Older exporters list every initializer among the graph inputs. */
    Onnx__ValueInfoProto **in = tc_tb_alloc(tb, 2 * sizeof *in);
    in[0] = mp->graph->input[0];
    in[1] = tc_tb_alloc(tb, sizeof **in);
    onnx__value_info_proto__init(in[1]);
    in[1]->name = "w";
    mp->graph->input = in;
    mp->graph->n_input = 2;
    tc_model_t *m = s_load(tb, false);
    cr_expect_eq(tc_model_params(m), 16);
    tc_model_destroy(&m);
    tc_tb_free(&tb);
}

Test(ops, expand_tile_squeeze_unsqueeze, .timeout = 10)
{
    tc_tb_t *tb = tc_tb_new(4, 1, 6);
    tc_tb_ints(tb, "ax", 1, (int64_t[]){2});
    tc_tb_node(tb, "Squeeze", "sq", "x,ax", "s");
    tc_tb_ints(tb, "ax0", 1, (int64_t[]){-1});
    tc_tb_node(tb, "Unsqueeze", "unsq", "s,ax0", "u");
    tc_tb_ints(tb, "rep", 4, (int64_t[]){1, 2, 1, 3});
    tc_tb_node(tb, "Tile", "tile", "u,rep", "t");
    tc_tb_ints(tb, "shape", 3, (int64_t[]){1, 4, 1});
    tc_tb_node(tb, "Expand", "exp", "s,shape", "e");
    tc_tb_output(tb, "t");
    tc_tb_output(tb, "e");
    tc_model_t *m = s_load(tb, false);
    s_shape(m, "s", 4, 6, -1, -1, -1);
    s_shape(m, "u", 4, 6, 1, -1, -1);
    s_shape(m, "t", 8, 6, 3, -1, -1);
    s_shape(m, "e", 4, 6, -1, -1, -1);
    tc_model_destroy(&m);
    tc_tb_free(&tb);
}

/* An ATen fallback of a shape-keeping op (swin_v2's key-bias zero_()) keeps
 * its input's shape; any other ATen operator is refused, named. */
Test(ops, aten_fallback_zero_keeps_the_shape, .timeout = 10)
{
    tc_tb_t *tb = tc_tb_new(8, 14, 14);
    Onnx__NodeProto *n = tc_tb_node(tb, "ATen", "zero", "x", "y");
    n->domain = "org.pytorch.aten";
    tc_tb_attr_str(tb, n, "operator", "zero");
    tc_tb_output(tb, "y");
    tc_model_t *m = s_load(tb, false);
    s_shape(m, "y", 8, 14, 14, -1, -1);
    cr_expect_eq(s_layer(m, "zero")->op_class, TC_OPC_ELTWISE);
    tc_model_destroy(&m);
    n->attribute[0]->s.data = (uint8_t *)"linalg_vector_norm";
    n->attribute[0]->s.len = strlen("linalg_vector_norm");
    cr_expect_eq(s_load_rc(tb), TC_EUNSUPPORTED, "another ATen operator");
    cr_expect(strstr(tc_errmsg(), "'linalg_vector_norm'"), "%s", tc_errmsg());
    tc_tb_free(&tb);
}
