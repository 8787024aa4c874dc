/* The cuBLAS call of a GPU matmul plan (agent/devices/gpu_matmul.h),
 * without a GPU: a naive column-major GEMM that reads its operands exactly
 * as cuBLAS reads them (sizes, 'n' / 't', leading dimensions, batch
 * strides, beta, the bias copied into the rows or added by cuBLASLt's
 * epilogue) must give, from the plan's row-major operands, the row-major
 * product the double-precision reference computes, for every transpose,
 * mm and bmm, with and without a bias; and the routes are PyTorch's. */
#include "gpu_matmul.h"
#include "matmul_bench.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>

/* cublasSgemm(StridedBatched) by definition, in double. */
static void s_column_major(const tc_gpu_gemm_call_t *c, const float *A, const float *B,
                           const float *bias, double *C)
{
    for (int64_t p = 0; p < c->count; p++) {
        const float *a = A + (c->batched ? p * c->stride_a : 0);
        const float *b = B + (c->batched ? p * c->stride_b : 0);
        double *out = C + (c->batched ? p * c->stride_c : 0);
        for (int64_t j = 0; j < c->n; j++)
            for (int64_t i = 0; i < c->m; i++) {
                double acc = 0;
                for (int64_t l = 0; l < c->k; l++)
                    acc += (double)(c->trans_a ? a[l + i * c->lda] : a[i + l * c->lda]) *
                           (double)(c->trans_b ? b[j + l * c->ldb] : b[l + j * c->ldb]);
                double *y = &out[i + j * c->ldc];
                *y = c->beta * *y + acc + (c->bias_epilogue ? bias[i] : 0.0);
            }
    }
}

static float *s_random(size_t n, uint64_t seed)
{
    float *v = malloc((n ? n : 1) * sizeof *v);
    cr_assert_not_null(v);
    for (size_t i = 0; i < n; i++)
        v[i] = tc_random_value(seed, i);
    return v;
}

static void s_check(const tc_gemm_t *g, bool lt_disabled)
{
    tc_gpu_gemm_call_t c;
    tc_gpu_gemm_call(g, lt_disabled, &c);
    float *a = s_random(tc_gemm_tensor_count(g, TC_MM_TENSOR_A), 1);
    float *b = s_random(tc_gemm_tensor_count(g, TC_MM_TENSOR_B), 2);
    float *bias = g->bias ? s_random(g->n, 3) : NULL;
    size_t nc = tc_gemm_tensor_count(g, TC_MM_TENSOR_C);
    double *want = malloc(nc * sizeof *want), *got = calloc(nc, sizeof *got);
    cr_assert(want && got);
    tc_gemm_reference(g, a, b, bias, want);
    /* The result starts as garbage unless the call copies the bias in. */
    for (size_t i = 0; i < nc; i++)
        got[i] = c.bias_rows ? bias[i % g->n] : 1e30;
    cr_assert(c.a_is_b);
    cr_expect(c.beta == 0.0f || c.bias_rows, "beta 1 only over a copied bias");
    s_column_major(&c, b, a, bias, got);
    for (size_t i = 0; i < nc; i++)
        cr_expect(fabs(got[i] - want[i]) < 1e-9 * (1 + fabs(want[i])),
                  "%llu x %llux%llu k%llu%s%s%s: c[%zu] = %g, reference %g",
                  (unsigned long long)g->count, (unsigned long long)g->m,
                  (unsigned long long)g->n, (unsigned long long)g->k, g->trans_a ? " tA" : "",
                  g->trans_b ? " tB" : "", g->bias ? " bias" : "", i, got[i], want[i]);
    free(a);
    free(b);
    free(bias);
    free(want);
    free(got);
}

Test(gpu_matmul, the_swapped_call_computes_the_row_major_product)
{
    const uint64_t sizes[][4] = {{1, 7, 5, 3}, {1, 1, 6, 4}, {1, 6, 1, 4}, {1, 5, 6, 1},
                                 {3, 4, 5, 6}, {2, 1, 3, 2}, {4, 3, 1, 5}};
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
        for (int t = 0; t < 4; t++)
            for (int bias = 0; bias < 2; bias++)
                for (int off = 0; off < 2; off++) {
                    tc_gemm_t g = {sizes[s][0], sizes[s][1], sizes[s][2], sizes[s][3],
                                   t & 1, (t >> 1) & 1, bias};
                    s_check(&g, off);
                }
}

Test(gpu_matmul, routes_as_pytorch_calls_them)
{
    tc_gpu_gemm_call_t c;
    /* A Linear with its bias: cuBLASLt's gemm_and_bias, beta 0. */
    tc_gemm_t linear = {1, 16, 64, 32, false, true, true};
    tc_gpu_gemm_call(&linear, false, &c);
    cr_expect_eq(c.route, TC_GPU_MM_CUBLASLT);
    cr_expect_str_eq(tc_gpu_mm_route_name(c.route), "cublaslt");
    cr_expect(c.bias_epilogue && !c.bias_rows && c.beta == 0.0f && !c.batched);
    /* The weight [n, k] read transposed is cuBLAS's A, 't', ld k; the
     * input its B, 'n', ld k; m and n swapped. */
    cr_expect(c.trans_a && !c.trans_b);
    cr_expect_eq(c.m, 64);
    cr_expect_eq(c.n, 16);
    cr_expect_eq(c.lda, 32);
    cr_expect_eq(c.ldb, 32);
    cr_expect_eq(c.ldc, 64);
    /* DISABLE_ADDMM_CUDA_LT=1, or mat2 with one column or one row: the
     * bias copied in, cuBLAS with beta 1. */
    tc_gpu_gemm_call(&linear, true, &c);
    cr_expect_eq(c.route, TC_GPU_MM_CUBLAS);
    cr_expect(c.bias_rows && c.beta == 1.0f);
    tc_gemm_t narrow = {1, 16, 1, 32, false, true, true};
    tc_gpu_gemm_call(&narrow, false, &c);
    cr_expect_eq(c.route, TC_GPU_MM_CUBLAS);
    tc_gemm_t thin = {1, 16, 8, 1, false, true, true};
    tc_gpu_gemm_call(&thin, false, &c);
    cr_expect_eq(c.route, TC_GPU_MM_CUBLAS);
    /* Where cuBLASLt has no algorithm, the unfused call. */
    tc_gpu_gemm_call(&linear, false, &c);
    tc_gpu_gemm_call_unfused(&c);
    cr_expect(c.route == TC_GPU_MM_CUBLAS && c.bias_rows && c.beta == 1.0f && !c.bias_epilogue);
    /* mm without a bias: cuBLAS, beta 0; a bmm: strided batched. */
    tc_gemm_t mm = {1, 16, 64, 32, true, false, false};
    tc_gpu_gemm_call(&mm, false, &c);
    cr_expect(c.route == TC_GPU_MM_CUBLAS && c.beta == 0.0f && !c.batched && !c.bias_rows);
    tc_gemm_t bmm = {96, 50, 50, 64, false, true, false};
    tc_gpu_gemm_call(&bmm, false, &c);
    cr_expect(c.route == TC_GPU_MM_CUBLAS && c.batched);
    cr_expect_eq(c.count, 96);
    cr_expect_eq(c.stride_a, 50 * 64);
    cr_expect_eq(c.stride_b, 50 * 64);
    cr_expect_eq(c.stride_c, 50 * 50);
}
