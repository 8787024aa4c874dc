/* The cuBLAS call PyTorch 2.x makes for the GEMM of a matmul plan (a
 * tc_gemm_t: row-major, contiguous operands), as pure logic (no CUDA types)
 * so that it is tested on machines without a GPU; the CUDA backend
 * (agent/devices/cuda/cuda_matmul.c) makes the call. Ported from
 * aten/src/ATen/native/cuda/Blas.cpp:
 *
 *   - the result is row-major, so addmm_out_cuda_impl (cublasCommonArgs)
 *     and baddbmm_out_cuda_impl transpose it: cuBLAS computes the
 *     column-major C^T = op(B)^T op(A)^T, with m and n swapped, our B as its
 *     A and our A as its B; an operand stored as the transpose it is a view
 *     of is 't', its leading dimension the stored row length
 *     (prepare_matrix_for_cublas, prepare_batch_matrix_for_cublas);
 *   - more than one product is a bgemm (strided batched), one a gemm;
 *   - addmm with its bias (a 1-D bias of n values, beta 1, a contiguous
 *     result, mat2 [k, n] with k > 1 and n > 1: useLtInterface for CUDA 12.1
 *     and later, unless DISABLE_ADDMM_CUDA_LT=1) is cuBLASLt's
 *     gemm_and_bias, the bias in the epilogue and beta 0; otherwise the
 *     expanded bias is copied into the result and the GEMM runs with
 *     beta 1; mm and bmm run with beta 0.
 *
 * Not ported: a bmm whose result has n = 1 is not transposed by PyTorch
 * (its result is then column-major too); the call here swaps it all the
 * same, the same product. */
#ifndef TC_GPU_MATMUL_H
#define TC_GPU_MATMUL_H

#include "tc_matmul.h"

#include <stdbool.h>
#include <stdint.h>

typedef enum {
    TC_GPU_MM_CUBLAS = 0, /* at::cuda::blas::gemm / bgemm */
    TC_GPU_MM_CUBLASLT,   /* at::cuda::blas::gemm_and_bias */
} tc_gpu_mm_route_t;

/* "cublas", "cublaslt": a matmul plan's route. */
const char *tc_gpu_mm_route_name(tc_gpu_mm_route_t r);

/* One column-major call: C[m x n] = beta C + op(A)[m x k] op(B)[k x n],
 * `count` times at the strides where batched. */
typedef struct {
    tc_gpu_mm_route_t route;
    bool batched;                          /* bgemm, else gemm (count 1) */
    bool trans_a, trans_b;                 /* 't' */
    int64_t m, n, k;
    int64_t lda, ldb, ldc;
    int64_t stride_a, stride_b, stride_c;  /* elements between products */
    int64_t count;
    bool a_is_b;                           /* cuBLAS's A is the GEMM's B: always */
    bool bias_rows;                        /* copy the bias into C's rows first */
    bool bias_epilogue;                    /* cuBLASLt adds bias[i] to row i of C */
    float beta;
} tc_gpu_gemm_call_t;

/* The call for `g`; `lt_disabled` where DISABLE_ADDMM_CUDA_LT is "1". */
void tc_gpu_gemm_call(const tc_gemm_t *g, bool lt_disabled, tc_gpu_gemm_call_t *out);

/* The same call on cuBLAS where cuBLASLt offers no algorithm
 * (gemm_and_bias failing: "recover by calling unfused cublas path"). */
void tc_gpu_gemm_call_unfused(tc_gpu_gemm_call_t *call);

#endif
