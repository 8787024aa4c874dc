/* Gemm and MatMul as matmul configs (common/onnx/tc_shape_matmul.c): the
 * sizes per sample, where the mini-batch enters them, transposes,
 * broadcast batch dims, deduplication, which operands need a gradient, and
 * the failure for a size that varies with the batch. Graphs are built in
 * the test as torch.onnx writes a Linear (Gemm; MatMul with a transposed
 * weight) and an attention (MatMul of activations, the keys transposed). */
#include "tc_error.h"
#include "tc_model.h"
#include "tc_test_onnx.h"

#include <criterion/criterion.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

static tc_model_t *s_load(tc_tb_t *tb)
{
    size_t len;
    const uint8_t *bytes = tc_tb_pack(tb, &len);
    tc_model_t *m = NULL;
    int rc = tc_model_load_bytes(bytes, len, "t", NULL, &m);
    cr_assert_eq(rc, 0, "import failed: %s", tc_errmsg());
    return m;
}

static const tc_model_node_t *s_layer(tc_model_t *m, const char *name)
{
    for (size_t i = 0; i < tc_model_node_count(m); i++)
        if (!strcmp(tc_model_node(m, i)->name, name))
            return tc_model_node(m, i);
    cr_assert_fail("no layer %s", name);
    return NULL;
}

/* The matmul config of layer `name`. */
static const tc_matmul_config_t *s_mm(tc_model_t *m, const char *name)
{
    const tc_model_node_t *n = s_layer(m, name);
    cr_assert(n->is_matmul, "%s is not a matmul", name);
    return &n->matmul;
}

static void s_expect(const tc_matmul_config_t *c, uint32_t batch, uint32_t rows, uint32_t cols,
                     uint32_t k, tc_mm_minibatch_t where, bool ta, bool tb)
{
    char label[128];
    tc_matmul_config_label(c, label, sizeof label);
    cr_expect_eq(c->batch, batch, "%s: batch", label);
    cr_expect_eq(c->m, rows, "%s: m", label);
    cr_expect_eq(c->n, cols, "%s: n", label);
    cr_expect_eq(c->k, k, "%s: k", label);
    cr_expect_eq(c->minibatch_in, (uint32_t)where, "%s: minibatch_in", label);
    cr_expect_eq(c->trans_a, ta, "%s: trans_a", label);
    cr_expect_eq(c->trans_b, tb, "%s: trans_b", label);
    cr_expect_eq(c->dtype, TRAINCAST__V1__DTYPE__DTYPE_FP32, "%s: dtype", label);
    cr_expect_eq(c->minibatch, 0, "listed without a mini-batch");
}

static int s_load_fail(tc_tb_t *tb)
{
    size_t len;
    const uint8_t *bytes = tc_tb_pack(tb, &len);
    tc_model_t *m = NULL;
    int rc = tc_model_load_bytes(bytes, len, "t", NULL, &m);
    cr_expect_null(m);
    return rc;
}

/* A Linear on a sequence [B, 5, 8] -> 16, as MatMul(x, Transpose(W)) and
 * again on its own output (8 -> 8 twice to deduplicate): the mini-batch
 * multiplies the rows, the weight is read transposed, the first one's input
 * needs no gradient. */
Test(matmul, linear_on_sequence, .timeout = 10)
{
    tc_tb_t *tb = tc_tb_new_rank(3, (int64_t[]){0, 5, 8});
    tc_tb_weight(tb, "w0", 2, (int64_t[]){8, 8});
    tc_tb_weight(tb, "w1", 2, (int64_t[]){8, 8});
    tc_tb_weight(tb, "w2", 2, (int64_t[]){16, 8});
    const char *w[] = {"w0", "w1", "w2"};
    const char *mm[] = {"mm0", "mm1", "mm2"};
    const char *in[] = {"x", "y0", "y1"};
    const char *out[] = {"y0", "y1", "y2"};
    for (int i = 0; i < 3; i++) {
        char wt[8], io[32];
        snprintf(wt, sizeof wt, "%st", w[i]);
        Onnx__NodeProto *t = tc_tb_node(tb, "Transpose", NULL, w[i], wt);
        tc_tb_attr_ints(tb, t, "perm", 2, (int64_t[]){1, 0});
        snprintf(io, sizeof io, "%s,%s", in[i], wt);
        tc_tb_node(tb, "MatMul", mm[i], io, out[i]);
    }
    tc_tb_output(tb, "y2");
    tc_model_t *m = s_load(tb);
    for (int i = 0; i < 3; i++) {
        const tc_matmul_config_t *c = s_mm(m, mm[i]);
        s_expect(c, 1, 5, i == 2 ? 16 : 8, 8, TC_MM_MB_ROWS, false, true);
        cr_expect(c->weight);
        cr_expect_not(c->bias);
        cr_expect(tc_matmul_is_mm(c));
    }
    cr_expect_not(s_layer(m, "mm0")->matmul_grad_a, "the first Linear reads the data");
    cr_expect(s_layer(m, "mm1")->matmul_grad_a);
    cr_expect(s_layer(m, "mm0")->matmul_grad_b);
    /* mm0 and mm1 share a config but not their directions. */
    cr_assert_eq(tc_model_matmul_count(m), 3);
    cr_expect_not(tc_model_matmul(m, 0)->use.grad_a);
    cr_expect_eq(tc_model_matmul(m, 0)->use.multiplicity, 1);
    cr_expect(tc_model_matmul(m, 1)->use.grad_a);
    cr_expect_eq(tc_model_matmul(m, 2)->config.n, 16);
    tc_model_destroy(&m);
    tc_tb_free(&tb);
}

/* Equal layers deep in a network collapse into one config counted twice. */
Test(matmul, dedup_counts_uses, .timeout = 10)
{
    tc_tb_t *tb = tc_tb_new_rank(2, (int64_t[]){0, 8});
    tc_tb_weight(tb, "w0", 2, (int64_t[]){8, 8});
    tc_tb_weight(tb, "w1", 2, (int64_t[]){8, 8});
    tc_tb_weight(tb, "w2", 2, (int64_t[]){8, 8});
    tc_tb_weight(tb, "b", 1, (int64_t[]){8});
    for (int i = 0; i < 3; i++) {
        char name[8], prev[8], io[32], o[8];
        snprintf(name, sizeof name, "fc%d", i);
        snprintf(prev, sizeof prev, "h%d", i - 1);
        snprintf(io, sizeof io, "%s,w%d,b", i ? prev : "x", i);
        snprintf(o, sizeof o, "h%d", i);
        Onnx__NodeProto *g = tc_tb_node(tb, "Gemm", name, io, o);
        tc_tb_attr_int(tb, g, "transB", 1);
    }
    tc_tb_output(tb, "h2");
    tc_model_t *m = s_load(tb);
    const tc_matmul_config_t *c = s_mm(m, "fc1");
    s_expect(c, 1, 1, 8, 8, TC_MM_MB_ROWS, false, true);
    cr_expect(c->bias, "Gemm's C is addmm's bias");
    cr_expect(c->weight);
    cr_assert_eq(tc_model_matmul_count(m), 2, "fc0 (no input gradient), fc1 = fc2");
    cr_expect_eq(tc_model_matmul(m, 0)->use.multiplicity, 1);
    cr_expect_not(tc_model_matmul(m, 0)->use.grad_a);
    cr_expect_eq(tc_model_matmul(m, 1)->use.multiplicity, 2);
    cr_expect(tc_model_matmul(m, 1)->use.grad_a);
    cr_expect(tc_model_matmul(m, 1)->use.grad_b);
    tc_model_destroy(&m);
    tc_tb_free(&tb);
}

/* Gemm with transA over a transposed input: A is read transposed, and the
 * mini-batch (A's second axis) still multiplies the rows. */
Test(matmul, gemm_trans_a, .timeout = 10)
{
    tc_tb_t *tb = tc_tb_new_rank(2, (int64_t[]){0, 8});
    Onnx__NodeProto *t = tc_tb_node(tb, "Transpose", "t", "x", "xt");
    tc_tb_attr_ints(tb, t, "perm", 2, (int64_t[]){1, 0});
    tc_tb_weight(tb, "w", 2, (int64_t[]){8, 4});
    Onnx__NodeProto *g = tc_tb_node(tb, "Gemm", "fc", "xt,w", "y");
    tc_tb_attr_int(tb, g, "transA", 1);
    tc_tb_output(tb, "y");
    tc_model_t *m = s_load(tb);
    s_expect(s_mm(m, "fc"), 1, 1, 4, 8, TC_MM_MB_ROWS, true, false);
    cr_expect_not(s_mm(m, "fc")->bias);
    tc_model_destroy(&m);
    tc_tb_free(&tb);
}

/* Attention on [B, 4 heads, 6 tokens, 8]: q = x W (a Linear folding heads
 * and tokens into rows), scores = q q^T (a bmm of 4 products per sample,
 * B read transposed, both operands needing gradients), out = scores x (the
 * data: no gradient of B). */
Test(matmul, attention_bmm, .timeout = 10)
{
    tc_tb_t *tb = tc_tb_new_rank(4, (int64_t[]){0, 4, 6, 8});
    tc_tb_weight(tb, "wq", 2, (int64_t[]){8, 8});
    tc_tb_node(tb, "MatMul", "q", "x,wq", "q");
    Onnx__NodeProto *t = tc_tb_node(tb, "Transpose", "kt", "q", "qt");
    tc_tb_attr_ints(tb, t, "perm", 4, (int64_t[]){0, 1, 3, 2});
    tc_tb_node(tb, "MatMul", "scores", "q,qt", "s");
    tc_tb_node(tb, "MatMul", "out", "s,x", "y");
    tc_tb_output(tb, "y");
    tc_model_t *m = s_load(tb);
    s_expect(s_mm(m, "q"), 1, 24, 8, 8, TC_MM_MB_ROWS, false, true);
    const tc_matmul_config_t *s = s_mm(m, "scores");
    s_expect(s, 4, 6, 6, 8, TC_MM_MB_BATCH, false, true);
    cr_expect_not(s->weight);
    cr_expect_not(tc_matmul_is_mm(s));
    cr_expect(s_layer(m, "scores")->matmul_grad_a);
    cr_expect(s_layer(m, "scores")->matmul_grad_b);
    s_expect(s_mm(m, "out"), 4, 6, 8, 6, TC_MM_MB_BATCH, false, false);
    cr_expect(s_layer(m, "out")->matmul_grad_a);
    cr_expect_not(s_layer(m, "out")->matmul_grad_b, "x is the data");
    /* At a mini-batch of 32 the scores are 128 products of 6x6x8. */
    tc_matmul_config_t at = *s;
    at.minibatch = 32;
    tc_gemm_t f = tc_matmul_forward(&at);
    cr_expect_eq(f.count, 128);
    cr_expect_eq(f.m * f.n * f.k, 6 * 6 * 8);
    tc_model_destroy(&m);
    tc_tb_free(&tb);
}

/* Broadcast batch dims: [B, 1, 5, 4] x a [3, 4, 6] parameter is 3 products
 * per sample; a sequence-first [5, B, 8] input to a Linear still folds
 * into rows. */
Test(matmul, broadcast_batch_dims, .timeout = 10)
{
    tc_tb_t *tb = tc_tb_new_rank(4, (int64_t[]){0, 1, 5, 4});
    tc_tb_weight(tb, "p", 3, (int64_t[]){3, 4, 6});
    tc_tb_node(tb, "MatMul", "bc", "x,p", "y");
    tc_tb_output(tb, "y");
    tc_model_t *m = s_load(tb);
    s_expect(s_mm(m, "bc"), 3, 5, 6, 4, TC_MM_MB_BATCH, false, false);
    cr_expect_not(s_mm(m, "bc")->weight, "a 3-D parameter is no Linear weight");
    cr_expect(s_layer(m, "bc")->matmul_grad_b);
    tc_model_destroy(&m);
    tc_tb_free(&tb);

    tb = tc_tb_new_rank(3, (int64_t[]){0, 5, 8});
    Onnx__NodeProto *t = tc_tb_node(tb, "Transpose", "seq_first", "x", "xs");
    tc_tb_attr_ints(tb, t, "perm", 3, (int64_t[]){1, 0, 2});
    tc_tb_weight(tb, "w", 2, (int64_t[]){8, 16});
    tc_tb_node(tb, "MatMul", "lin", "xs,w", "y");
    tc_tb_output(tb, "y");
    m = s_load(tb);
    s_expect(s_mm(m, "lin"), 1, 5, 16, 8, TC_MM_MB_ROWS, false, true);
    tc_model_destroy(&m);
    tc_tb_free(&tb);
}

/* Matrix-vector products are no GEMM: no matmul config. */
Test(matmul, vector_is_not_a_matmul, .timeout = 10)
{
    tc_tb_t *tb = tc_tb_new_rank(3, (int64_t[]){0, 5, 8});
    tc_tb_weight(tb, "v", 1, (int64_t[]){8});
    tc_tb_node(tb, "MatMul", "mv", "x,v", "y");
    tc_tb_output(tb, "y");
    tc_model_t *m = s_load(tb);
    cr_expect_not(s_layer(m, "mv")->is_matmul);
    cr_expect_eq(tc_model_matmul_count(m), 0);
    tc_model_destroy(&m);
    tc_tb_free(&tb);
}

/* A product whose n or k varies with the batch size cannot be benchmarked
 * ahead of it: the import fails naming the node and the dimension. */
Test(matmul, batch_dependent_dim_fails, .timeout = 10)
{
    tc_tb_t *tb = tc_tb_new_rank(2, (int64_t[]){0, 8});
    Onnx__NodeProto *t = tc_tb_node(tb, "Transpose", "t", "x", "xt");
    tc_tb_attr_ints(tb, t, "perm", 2, (int64_t[]){1, 0});
    tc_tb_weight(tb, "w", 2, (int64_t[]){4, 8});
    tc_tb_node(tb, "MatMul", "wx", "w,xt", "y");
    tc_tb_output(tb, "y");
    cr_expect_eq(s_load_fail(tb), TC_EUNSUPPORTED);
    cr_expect(strstr(tc_errmsg(), "'wx'"), "names the node: %s", tc_errmsg());
    cr_expect(strstr(tc_errmsg(), "dimension n"), "names the dim: %s", tc_errmsg());
    cr_expect(strstr(tc_errmsg(), "'xt'"), "names the operand: %s", tc_errmsg());
    tc_tb_free(&tb);

    tb = tc_tb_new_rank(2, (int64_t[]){0, 8});
    tc_tb_weight(tb, "w", 2, (int64_t[]){8, 4});
    Onnx__NodeProto *g = tc_tb_node(tb, "Gemm", "gk", "x,w", "y");
    tc_tb_attr_int(tb, g, "transA", 1);
    tc_tb_output(tb, "y");
    cr_expect_eq(s_load_fail(tb), TC_EUNSUPPORTED);
    cr_expect(strstr(tc_errmsg(), "'gk'"), "%s", tc_errmsg());
    cr_expect(strstr(tc_errmsg(), "dimension k"), "%s", tc_errmsg());
    tc_tb_free(&tb);
}

/* torch 1.13's multi-head attention on a sequence-first [T, B, E] (T 5,
 * E 8, 2 heads of 4): the reshape to [T, 2B, 4] folds the heads into the
 * batch axis (2 times the batch), the bmm runs 2 products per sample, and
 * the reshape back to [T*B, E] makes T rows per sample for the output
 * projection. */
Test(matmul, heads_folded_into_batch, .timeout = 10)
{
    tc_tb_t *tb = tc_tb_new_rank(3, (int64_t[]){0, 5, 8});
    Onnx__NodeProto *t0 = tc_tb_node(tb, "Transpose", "seq_first", "x", "xs");
    tc_tb_attr_ints(tb, t0, "perm", 3, (int64_t[]){1, 0, 2});
    tc_tb_ints(tb, "heads_shape", 3, (int64_t[]){0, -1, 4});
    tc_tb_node(tb, "Reshape", "split_heads", "xs,heads_shape", "xh");
    Onnx__NodeProto *t1 = tc_tb_node(tb, "Transpose", "heads_first", "xh", "q");
    tc_tb_attr_ints(tb, t1, "perm", 3, (int64_t[]){1, 0, 2});
    Onnx__NodeProto *t2 = tc_tb_node(tb, "Transpose", "kt", "q", "qt");
    tc_tb_attr_ints(tb, t2, "perm", 3, (int64_t[]){0, 2, 1});
    tc_tb_node(tb, "MatMul", "scores", "q,qt", "s");
    tc_tb_node(tb, "MatMul", "values", "s,q", "o");
    Onnx__NodeProto *t3 = tc_tb_node(tb, "Transpose", "seq_again", "o", "os");
    tc_tb_attr_ints(tb, t3, "perm", 3, (int64_t[]){1, 0, 2});
    tc_tb_ints(tb, "rows_shape", 2, (int64_t[]){-1, 8});
    tc_tb_node(tb, "Reshape", "merge", "os,rows_shape", "rows");
    tc_tb_weight(tb, "w", 2, (int64_t[]){8, 8});
    tc_tb_weight(tb, "b", 1, (int64_t[]){8});
    Onnx__NodeProto *g = tc_tb_node(tb, "Gemm", "out_proj", "rows,w,b", "y");
    tc_tb_attr_int(tb, g, "transB", 1);
    tc_tb_output(tb, "y");
    tc_model_t *m = s_load(tb);
    s_expect(s_mm(m, "scores"), 2, 5, 5, 4, TC_MM_MB_BATCH, false, true);
    s_expect(s_mm(m, "values"), 2, 5, 4, 5, TC_MM_MB_BATCH, false, false);
    s_expect(s_mm(m, "out_proj"), 1, 5, 8, 8, TC_MM_MB_ROWS, false, true);
    /* Per sample: 2 heads x 5 x 5 scores, 5 x 8 outputs. */
    cr_expect_eq(s_layer(m, "scores")->macs, 2.0 * 5 * 5 * 4);
    cr_expect_eq(s_layer(m, "scores")->elems_out, 2 * 5 * 5);
    cr_expect_eq(s_layer(m, "out_proj")->elems_out, 5 * 8);
    tc_model_destroy(&m);
    tc_tb_free(&tb);
}

/* F.linear with a bias on a 3-D input, as torch.onnx writes it (MatMul of
 * the transposed weight, then Add): PyTorch 1.13 runs a contiguous input
 * as one addmm with the bias, a transposed one (attention's in-projection)
 * as matmul and add_, and a 4-D one (convnext's channels-last pixels) too. */
Test(matmul, linear_bias_as_pytorch_fuses_it, .timeout = 10)
{
    tc_tb_t *tb = tc_tb_new_rank(3, (int64_t[]){0, 5, 8});
    tc_tb_weight(tb, "w", 2, (int64_t[]){8, 8});
    tc_tb_weight(tb, "b", 1, (int64_t[]){8});
    tc_tb_weight(tb, "w2", 2, (int64_t[]){8, 8});
    tc_tb_weight(tb, "b2", 1, (int64_t[]){8});
    tc_tb_node(tb, "MatMul", "fused", "x,w", "y0");
    tc_tb_node(tb, "Add", "fused_bias", "y0,b", "y");
    Onnx__NodeProto *t = tc_tb_node(tb, "Transpose", "seq_first", "y", "ys");
    tc_tb_attr_ints(tb, t, "perm", 3, (int64_t[]){1, 0, 2});
    tc_tb_node(tb, "MatMul", "unfused", "ys,w2", "z0");
    tc_tb_node(tb, "Add", "unfused_bias", "b2,z0", "z");
    tc_tb_output(tb, "z");
    tc_model_t *m = s_load(tb);
    cr_expect(s_mm(m, "fused")->bias);
    cr_expect_not(s_mm(m, "unfused")->bias, "a transposed input is matmul + add_");
    tc_model_destroy(&m);
    tc_tb_free(&tb);

    tb = tc_tb_new(8, 4, 4);
    Onnx__NodeProto *nhwc = tc_tb_node(tb, "Transpose", "nhwc", "x", "xh");
    tc_tb_attr_ints(tb, nhwc, "perm", 4, (int64_t[]){0, 2, 3, 1});
    tc_tb_node(tb, "Relu", "relu", "xh", "xr");
    tc_tb_weight(tb, "w", 2, (int64_t[]){8, 16});
    tc_tb_weight(tb, "b", 1, (int64_t[]){16});
    tc_tb_node(tb, "MatMul", "pw", "xr,w", "y0");
    tc_tb_node(tb, "Add", "pw_bias", "y0,b", "y");
    tc_tb_output(tb, "y");
    m = s_load(tb);
    s_expect(s_mm(m, "pw"), 1, 16, 16, 8, TC_MM_MB_ROWS, false, true);
    cr_expect_not(s_mm(m, "pw")->bias, "a 4-D input is matmul + add_");
    tc_model_destroy(&m);
    tc_tb_free(&tb);
}
