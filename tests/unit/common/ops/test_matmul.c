/* The matmul op kind (common/ops/tc_matmul.c, tc_matmul_step.c): its key's
 * order and hash, the call at a mini-batch, and the GEMM each training
 * direction runs, worked out by hand from PyTorch 1.13's autograd formulas
 * (mm_mat1_backward / mm_mat2_backward for mm, the fixed transposes of
 * bmm's derivatives). */
#include "tc_buf.h"
#include "tc_error.h"
#include "tc_matmul.h"
#include "tc_matmul_step.h"

#include <criterion/criterion.h>
#include <string.h>

#define FWD TRAINCAST__V1__DIRECTION__DIRECTION_FWD
#define BWD_DATA TRAINCAST__V1__DIRECTION__DIRECTION_BWD_DATA
#define BWD_FILTER TRAINCAST__V1__DIRECTION__DIRECTION_BWD_FILTER

static void s_gemm(const tc_matmul_config_t *c, Traincast__V1__Direction d, uint64_t count,
                   uint64_t m, uint64_t n, uint64_t k, bool ta, bool tb)
{
    tc_gemm_t g;
    cr_assert_eq(tc_matmul_step_gemm(c, d, &g), 0);
    cr_expect_eq(g.count, count, "direction %d: count %llu", d, (unsigned long long)g.count);
    cr_expect_eq(g.m, m, "direction %d: m %llu", d, (unsigned long long)g.m);
    cr_expect_eq(g.n, n, "direction %d: n %llu", d, (unsigned long long)g.n);
    cr_expect_eq(g.k, k, "direction %d: k %llu", d, (unsigned long long)g.k);
    cr_expect_eq(g.trans_a, ta, "direction %d: trans_a", d);
    cr_expect_eq(g.trans_b, tb, "direction %d: trans_b", d);
    /* Every direction does the forward's multiply-accumulates. */
    tc_gemm_t f = tc_matmul_forward(c);
    cr_expect_eq(tc_gemm_macs(&g), tc_gemm_macs(&f));
}

/* A Linear 768 -> 3072 on 197 tokens at mini-batch 8: forward x W^T
 * (addmm), the input's gradient dY W, the weight's dY^T X (the weight is
 * stored [n, k], so mm_mat2_backward computes its gradient directly). */
Test(matmul, linear_directions, .timeout = 10)
{
    tc_matmul_config_t c = tc_matmul_config_default();
    c.m = 197, c.n = 3072, c.k = 768, c.trans_b = true, c.weight = true, c.bias = true;
    c.minibatch = 8;
    cr_expect_eq(tc_matmul_config_check(&c), 0);
    cr_expect(tc_matmul_is_mm(&c));
    s_gemm(&c, FWD, 1, 8 * 197, 3072, 768, false, true);
    tc_gemm_t f;
    tc_matmul_step_gemm(&c, FWD, &f);
    cr_expect(f.bias, "the forward adds the bias");
    s_gemm(&c, BWD_DATA, 1, 8 * 197, 768, 3072, false, false);
    s_gemm(&c, BWD_FILTER, 1, 3072, 768, 8 * 197, true, false);
    tc_gemm_t d;
    tc_matmul_step_gemm(&c, BWD_DATA, &d);
    cr_expect_not(d.bias);
}

/* mm with a row-major B (x @ W, W stored [k, n]) and a column-major A. */
Test(matmul, mm_layouts, .timeout = 10)
{
    tc_matmul_config_t c = tc_matmul_config_default();
    c.m = 4, c.n = 6, c.k = 5, c.minibatch = 2;
    s_gemm(&c, BWD_DATA, 1, 8, 5, 6, false, true);   /* grad.mm(mat2.t()) */
    s_gemm(&c, BWD_FILTER, 1, 5, 6, 8, true, false); /* mat1.t().mm(grad) */
    c.trans_a = true;
    /* mat1 column-major: (mat2.mm(grad.t())).t() */
    s_gemm(&c, BWD_DATA, 1, 5, 8, 6, false, true);
    s_gemm(&c, BWD_FILTER, 1, 5, 6, 8, false, false);
}

/* Attention scores q k^T: 12 heads per sample at mini-batch 4 are 48
 * products; bmm's gradients are grad.bmm(k) and q^T.bmm(grad)... as
 * grad.bmm(mat2^T) and mat1^T.bmm(grad). */
Test(matmul, bmm_directions, .timeout = 10)
{
    tc_matmul_config_t c = tc_matmul_config_default();
    c.batch = 12, c.m = 50, c.n = 50, c.k = 64, c.minibatch_in = TC_MM_MB_BATCH;
    c.trans_b = true, c.minibatch = 4;
    cr_expect_not(tc_matmul_is_mm(&c));
    s_gemm(&c, FWD, 48, 50, 50, 64, false, true);
    s_gemm(&c, BWD_DATA, 48, 50, 64, 50, false, false);
    s_gemm(&c, BWD_FILTER, 48, 64, 50, 50, true, false);
    tc_gemm_t g;
    cr_expect_eq(tc_matmul_step_gemm(&c, TRAINCAST__V1__DIRECTION__DIRECTION_UNSPECIFIED, &g),
                 TC_EINVAL);
}

Test(matmul, directions_and_step_time, .timeout = 10)
{
    Traincast__V1__Direction d[TC_MATMUL_STEP_MAX_DIRS];
    tc_matmul_use_t first = {false, true, 1}, attn = {true, true, 2}, values = {true, false, 3};
    cr_expect_eq(tc_matmul_step_directions(&first, d), 2);
    cr_expect_eq(d[0], FWD);
    cr_expect_eq(d[1], BWD_FILTER);
    cr_expect_eq(tc_matmul_step_directions(&attn, d), 3);
    cr_expect_eq(d[1], BWD_DATA);
    cr_expect_eq(d[2], BWD_FILTER);
    cr_expect_eq(tc_matmul_step_directions(&values, d), 2);
    cr_expect_eq(d[1], BWD_DATA);
    const double ms[3] = {1.0, 2.0, 4.0};
    cr_expect_float_eq(tc_matmul_step_ms(&attn, ms), 14.0, 1e-12);
    cr_expect_float_eq(tc_matmul_step_ms(&values, ms), 9.0, 1e-12);
}

Test(matmul, key_order_hash_label, .timeout = 10)
{
    tc_matmul_config_t a = tc_matmul_config_default(), b;
    a.m = 197, a.n = 768, a.k = 768, a.trans_b = true, a.weight = true;
    b = a;
    b.minibatch = 32;
    cr_expect_eq(tc_matmul_key_cmp(&a, &b), 0, "the mini-batch is not in the key");
    cr_expect_eq(tc_matmul_key_hash(&a), tc_matmul_key_hash(&b));
    cr_expect_lt(tc_matmul_config_cmp(&a, &b), 0);
    b.trans_b = false;
    cr_expect_neq(tc_matmul_key_cmp(&a, &b), 0);
    cr_expect_neq(tc_matmul_key_hash(&a), tc_matmul_key_hash(&b));
    char label[128];
    tc_matmul_config_label(&a, label, sizeof label);
    cr_expect_str_eq(label, "Nx197x768 k768 tB weight");
    a.batch = 12, a.minibatch_in = TC_MM_MB_BATCH, a.weight = false, a.minibatch = 2;
    tc_matmul_config_label(&a, label, sizeof label);
    cr_expect_str_eq(label, "n2 12N 197x768 k768 tB");
    tc_buf_t buf = {0};
    tc_matmul_key_json(&buf, &a);
    cr_expect_str_eq(tc_buf_str(&buf),
                     "\"batch\":12,\"m\":197,\"n\":768,\"k\":768,\"minibatch_in\":2,"
                     "\"trans_a\":false,\"trans_b\":true,\"weight\":false,\"bias\":false,"
                     "\"dtype\":\"fp32\"");
    tc_buf_free(&buf);
}

Test(matmul, check, .timeout = 10)
{
    tc_matmul_config_t c = tc_matmul_config_default();
    cr_expect_eq(tc_matmul_config_check(&c), TC_EINVAL, "m, n, k are 0");
    c.m = c.n = c.k = 2;
    cr_expect_eq(tc_matmul_config_check(&c), 0);
    c.minibatch_in = 3;
    cr_expect_eq(tc_matmul_config_check(&c), TC_EINVAL);
    c.minibatch_in = TC_MM_MB_BATCH, c.batch = 2, c.bias = true;
    cr_expect_eq(tc_matmul_config_check(&c), TC_EINVAL, "a bias is addmm's");
}

/* The wire form carries every key field and the mini-batch, each distinct
 * so that a field copied to the wrong member shows. */
Test(matmul, proto_round_trip, .timeout = 10)
{
    tc_matmul_config_t a = {.minibatch = 7, .batch = 12, .m = 197, .n = 64, .k = 768,
                            .minibatch_in = TC_MM_MB_BATCH, .trans_a = true, .trans_b = false,
                            .weight = true, .bias = false,
                            .dtype = TRAINCAST__V1__DTYPE__DTYPE_BF16};
    Traincast__V1__MatmulConfig p = TRAINCAST__V1__MATMUL_CONFIG__INIT;
    tc_matmul_config_to_proto(&a, &p);
    cr_expect_eq(p.minibatch, 7);
    cr_expect_eq(p.batch, 12);
    cr_expect_eq(p.m, 197);
    cr_expect_eq(p.n, 64);
    cr_expect_eq(p.k, 768);
    cr_expect_eq(p.minibatch_in, 2);
    cr_expect(p.trans_a && !p.trans_b && p.weight && !p.bias);
    cr_expect_eq(p.dtype, TRAINCAST__V1__DTYPE__DTYPE_BF16);
    tc_matmul_config_t b;
    memset(&b, 0xa5, sizeof b);
    tc_matmul_config_from_proto(&p, &b);
    cr_expect_eq(tc_matmul_config_cmp(&a, &b), 0);
}

/* Where the mini-batch goes, by name and back; another name is none. */
Test(matmul, minibatch_names, .timeout = 10)
{
    for (uint32_t w = TC_MM_MB_NONE; w <= TC_MM_MB_BATCH; w++) {
        uint32_t got = 99;
        cr_expect_eq(tc_mm_minibatch_parse(tc_mm_minibatch_name((tc_mm_minibatch_t)w), &got), 0);
        cr_expect_eq(got, w);
    }
    uint32_t got = 7;
    cr_expect_eq(tc_mm_minibatch_parse("cols", &got), TC_EINVAL);
    cr_expect_eq(tc_mm_minibatch_parse("row", &got), TC_EINVAL);
    cr_expect_eq(got, 7, "untouched when the name is none of them");
}
