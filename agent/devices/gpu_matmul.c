#include "gpu_matmul.h"

const char *tc_gpu_mm_route_name(tc_gpu_mm_route_t r)
{
    return r == TC_GPU_MM_CUBLASLT ? "cublaslt" : "cublas";
}

void tc_gpu_gemm_call(const tc_gemm_t *g, bool lt_disabled, tc_gpu_gemm_call_t *out)
{
    *out = (tc_gpu_gemm_call_t){0};
    out->a_is_b = true;
    out->m = (int64_t)g->n;
    out->n = (int64_t)g->m;
    out->k = (int64_t)g->k;
    out->trans_a = g->trans_b;
    out->trans_b = g->trans_a;
    out->lda = (int64_t)(g->trans_b ? g->k : g->n);
    out->ldb = (int64_t)(g->trans_a ? g->m : g->k);
    out->ldc = (int64_t)g->n;
    out->count = (int64_t)(g->count ? g->count : 1);
    out->batched = out->count > 1;
    out->stride_a = (int64_t)(g->k * g->n);
    out->stride_b = (int64_t)(g->m * g->k);
    out->stride_c = (int64_t)(g->m * g->n);
    if (!g->bias)
        return;
    if (!out->batched && g->k > 1 && g->n > 1 && !lt_disabled) {
        out->route = TC_GPU_MM_CUBLASLT;
        out->bias_epilogue = true;
        return;
    }
    tc_gpu_gemm_call_unfused(out);
}

void tc_gpu_gemm_call_unfused(tc_gpu_gemm_call_t *call)
{
    call->route = TC_GPU_MM_CUBLAS;
    call->bias_epilogue = false;
    call->bias_rows = true;
    call->beta = 1.0f;
}
