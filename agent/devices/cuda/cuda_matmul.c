/* Matmul plans on a GPU: the cuBLAS or cuBLASLt call PyTorch 2.x makes for
 * a linear / addmm / mm / bmm / matmul, ported from
 * aten/src/ATen/native/cuda/Blas.cpp and aten/src/ATen/cuda/CUDABlas.cpp:
 *
 *   mm        addmm_out_cuda_impl (mm_out_cuda: beta 0). The result is
 *             row-major, so cublasCommonArgs swaps the operands (C^T =
 *             op(B)^T op(A)^T in cuBLAS's column-major terms, B first) and
 *             calls at::cuda::blas::gemm: for float gemm_internal_cublas
 *             calls cublasSgemm, whose handle's math mode decides TF32
 *             (getCurrentCUDABlasHandle, CublasHandlePool.cpp:
 *             CUBLAS_TF32_TENSOR_OP_MATH where TF32 is allowed for matmuls,
 *             else CUBLAS_DEFAULT_MATH); for fp16 and bf16
 *             gemm_internal_cublas_half_helper / _bfloat16_helper call
 *             cublasGemmEx with fp32 compute and CUBLAS_GEMM_DEFAULT_TENSOR_OP
 *             under CUBLAS_DEFAULT_MATH (reduced-precision reductions are
 *             allowed by default).
 *   addmm     a 1-D bias of n values with beta 1 into a contiguous result,
 *             k > 1 and n > 1 (useLtInterface, CUDA 12.1 and later; off
 *             with DISABLE_ADDMM_CUDA_LT=1): at::cuda::blas::gemm_and_bias,
 *             one cublasLtMatmul with the bias in its epilogue
 *             (CUBLASLT_EPILOGUE_BIAS, beta 0), compute CUBLAS_COMPUTE_32F
 *             (_FAST_TF32 where TF32 is allowed), the first algorithm
 *             cublasLtMatmulAlgoGetHeuristic returns for the operands'
 *             alignment and the cuBLASLt workspace. Otherwise (or where the
 *             heuristic returns none: "recover by calling unfused cublas
 *             path") the expanded bias is copied into the result and the
 *             mm's call runs with beta 1.
 *   bmm       baddbmm_out_cuda_impl (bmm_out_cuda: beta 0): the same swap,
 *             then at::cuda::blas::bgemm: cublasSgemmStridedBatched, or
 *             cublasGemmStridedBatchedEx for fp16 / bf16 (fp32 compute,
 *             CUBLAS_GEMM_DEFAULT_TENSOR_OP); a single product calls gemm.
 *
 * TF32 follows the config's dtype: fp32 is PyTorch's default for matmuls
 * (torch.backends.cuda.matmul.allow_tf32 = False), so no TF32; tf32 allows
 * it (compute capability 8.0 and newer); fp32_strict never. PyTorch's
 * default BLAS backend (preferred_blas_library "cublas") and no TunableOp
 * are assumed.
 *
 * The call's sizes, transposes, leading dimensions and route are
 * tc_gpu_gemm_call's (gpu_matmul.h). Operands are stored contiguous (a
 * transposed operand as the transpose it is a view of). The inputs rotate
 * through copies as a conv plan's do (cuda_conv.c), so that no run finds
 * them in L2, and a run is timed as a conv's: a spin kernel, then CUDA
 * events around the call(s) alone. */
#include "cuda_internal.h"
#include "gpu_matmul.h"

#include "tc_log.h"
#include "tc_matmul_step.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    tc_cuda_ctx_t *dev;
    tc_cuda_blas_t *blas;
    tc_matmul_spec_t spec;
    tc_gemm_t g;
    cudaDataType_t type;      /* of A, B, C and the bias */
    int fill_kind;            /* for tc_cuda_fill */
    size_t elem;              /* bytes per element */
    bool tf32;                /* TF32 tensor cores allowed */
    tc_gpu_gemm_call_t call;  /* the column-major call: cuBLAS's A is our B */
    cublasOperation_t op_a, op_b;
    int m, n, k, lda, ldb, ldc;
    /* Copies of the inputs, in[r][0] A and in[r][1] B; one result, bias. */
    void *in[TC_CUDA_MAX_ROTATION][2];
    size_t n_rot, rot, last_rot;
    void *c, *bias;
    size_t count[TC_MM_TENSOR_COUNT];
    /* cuBLASLt's descriptors, one owner each, and the algorithm chosen. */
    cublasLtMatmulDesc_t op;
    cublasLtMatrixLayout_t a_desc, b_desc, c_desc;
    cublasLtMatmulPreference_t pref;
    cublasLtMatmulHeuristicResult_t heur;
} s_plan_t;

void tc_cuda_matmul_destroy(void *plan)
{
    s_plan_t *p = plan;
    if (!p)
        return;
    cudaSetDevice(p->dev->index);
    cudaStreamSynchronize(p->dev->stream);
    if (p->blas) {
        const tc_cublas_t *f = p->blas->f;
        if (p->pref)
            f->cublasLtMatmulPreferenceDestroy(p->pref);
        if (p->c_desc)
            f->cublasLtMatrixLayoutDestroy(p->c_desc);
        if (p->b_desc)
            f->cublasLtMatrixLayoutDestroy(p->b_desc);
        if (p->a_desc)
            f->cublasLtMatrixLayoutDestroy(p->a_desc);
        if (p->op)
            f->cublasLtMatmulDescDestroy(p->op);
    }
    for (size_t r = 0; r < TC_CUDA_MAX_ROTATION; r++)
        for (int i = 0; i < 2; i++)
            if (p->in[r][i])
                cudaFree(p->in[r][i]);
    if (p->c)
        cudaFree(p->c);
    if (p->bias)
        cudaFree(p->bias);
    free(p);
}

/* The dtype's storage and whether TF32 may be used. */
static int s_types(s_plan_t *p)
{
    Traincast__V1__DType dt = p->spec.config.dtype;
    switch (dt) {
    case TRAINCAST__V1__DTYPE__DTYPE_FP32:
    case TRAINCAST__V1__DTYPE__DTYPE_FP32_STRICT:
        p->type = CUDA_R_32F, p->elem = 4, p->fill_kind = 0;
        return 0;
    case TRAINCAST__V1__DTYPE__DTYPE_TF32:
        if (p->dev->cc_major < 8)
            return tc_fail(TC_EUNSUPPORTED, "%s: tf32 needs compute capability 8.0 or newer "
                                            "(this GPU is %s): use --dtype fp32",
                           p->dev->name, p->dev->cc);
        p->type = CUDA_R_32F, p->elem = 4, p->fill_kind = 0, p->tf32 = true;
        return 0;
    case TRAINCAST__V1__DTYPE__DTYPE_FP16:
        p->type = CUDA_R_16F, p->elem = 2, p->fill_kind = 1;
        return 0;
    case TRAINCAST__V1__DTYPE__DTYPE_BF16:
        p->type = CUDA_R_16BF, p->elem = 2, p->fill_kind = 2;
        return 0;
    default:
        return tc_fail(TC_EINVAL, "matmul config: unknown dtype %d", (int)dt);
    }
}

/* tc_gpu_gemm_call's call, in cuBLAS's int sizes. */
static int s_call(s_plan_t *p)
{
    const tc_gemm_t *g = &p->g;
    if (g->m > INT32_MAX || g->n > INT32_MAX || g->k > INT32_MAX || g->count > INT32_MAX)
        return tc_fail(TC_EUNSUPPORTED, "a GEMM of %llu x (%llu x %llu x %llu) is beyond "
                                        "cuBLAS's int sizes",
                       (unsigned long long)g->count, (unsigned long long)g->m,
                       (unsigned long long)g->n, (unsigned long long)g->k);
    const char *off = getenv("DISABLE_ADDMM_CUDA_LT");
    tc_gpu_gemm_call(g, off && !strcmp(off, "1"), &p->call);
    const tc_gpu_gemm_call_t *c = &p->call;
    p->op_a = c->trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
    p->op_b = c->trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
    p->m = (int)c->m, p->n = (int)c->n, p->k = (int)c->k;
    p->lda = (int)c->lda, p->ldb = (int)c->ldb, p->ldc = (int)c->ldc;
    return 0;
}

static int s_alloc(s_plan_t *p, void **buf, tc_mm_tensor_t t, bool input)
{
    int rc = 0;
    size_t n = p->count[t];
    TC_CUDA_TRY(cudaMalloc(buf, n * p->elem));
    if (input)
        TC_CUDA_TRY(tc_cuda_fill(*buf, n, p->fill_kind, p->spec.seed + (uint64_t)t,
                                 p->dev->stream));
    else
        TC_CUDA_TRY(cudaMemsetAsync(*buf, 0, n * p->elem, p->dev->stream));
    return 0;
err:
    return tc_err_context(rc, "allocating matmul operand %d (%zu values)", (int)t, n);
}

/* The inputs in enough copies to exceed twice the L2 cache, the result,
 * the bias; the same values as the CPU plan's (tc_random_value of stream
 * seed + operand). */
static int s_tensors(s_plan_t *p)
{
    int rc = 0;
    for (int t = 0; t < TC_MM_TENSOR_COUNT; t++)
        p->count[t] = tc_gemm_tensor_count(&p->g, (tc_mm_tensor_t)t);
    uint64_t in_bytes = (p->count[TC_MM_TENSOR_A] + p->count[TC_MM_TENSOR_B]) * p->elem;
    size_t copies = 1;
    TC_TRY(tc_cuda_rotation(p->dev, in_bytes, &copies));
    for (size_t r = 0; r < copies; r++) {
        TC_TRY(s_alloc(p, &p->in[r][0], TC_MM_TENSOR_A, true));
        TC_TRY(s_alloc(p, &p->in[r][1], TC_MM_TENSOR_B, true));
        p->n_rot = r + 1;
    }
    TC_TRY(s_alloc(p, &p->c, TC_MM_TENSOR_C, false));
    if (p->count[TC_MM_TENSOR_BIAS])
        TC_TRY(s_alloc(p, &p->bias, TC_MM_TENSOR_BIAS, true));
    return 0;
err:
    return rc; /* destroy frees what was allocated */
}

/* _getAlignment: the largest power of two up to 256 dividing the address. */
static uint32_t s_alignment(const void *ptr)
{
    uintptr_t a = (uintptr_t)ptr;
    uint32_t al = 256;
    while (al > 1 && a % al)
        al /= 2;
    return al;
}

/* gemm_and_bias's descriptors and its heuristic query (once: it answers
 * the same for every call of the plan). False in *found where cuBLASLt
 * offers no algorithm. */
static int s_lt_prepare(s_plan_t *p, bool *found)
{
    int rc = 0;
    const tc_cublas_t *f = p->blas->f;
    *found = false;
    cublasComputeType_t compute = p->tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
    TC_CUBLAS_TRY(f->cublasLtMatmulDescCreate(&p->op, compute, CUDA_R_32F));
    TC_CUBLAS_TRY(f->cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_TRANSA,
                                                    &p->op_a, sizeof p->op_a));
    TC_CUBLAS_TRY(f->cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_TRANSB,
                                                    &p->op_b, sizeof p->op_b));
    cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_BIAS;
    TC_CUBLAS_TRY(f->cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_EPILOGUE,
                                                    &epilogue, sizeof epilogue));
    const void *bias = p->bias;
    TC_CUBLAS_TRY(f->cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_BIAS_POINTER,
                                                    &bias, sizeof bias));
    /* CuBlasLtMatrixLayout(type, rows, cols, ld, t): stored (cols, rows)
     * where transposed. */
    bool ta = p->op_a == CUBLAS_OP_T, tb = p->op_b == CUBLAS_OP_T;
    TC_CUBLAS_TRY(f->cublasLtMatrixLayoutCreate(&p->a_desc, p->type, ta ? p->k : p->m,
                                                ta ? p->m : p->k, p->lda));
    TC_CUBLAS_TRY(f->cublasLtMatrixLayoutCreate(&p->b_desc, p->type, tb ? p->n : p->k,
                                                tb ? p->k : p->n, p->ldb));
    TC_CUBLAS_TRY(f->cublasLtMatrixLayoutCreate(&p->c_desc, p->type, p->m, p->n, p->ldc));
    TC_CUBLAS_TRY(f->cublasLtMatmulPreferenceCreate(&p->pref));
    uint64_t ws = p->blas->lt_ws_size;
    TC_CUBLAS_TRY(f->cublasLtMatmulPreferenceSetAttribute(
        p->pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws));
    const struct {
        cublasLtMatmulPreferenceAttributes_t attr;
        const void *ptr;
    } al[] = {{CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, p->in[0][1]},
              {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, p->in[0][0]},
              {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, p->c},
              {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, p->bias}};
    for (size_t i = 0; i < sizeof al / sizeof al[0]; i++) {
        uint32_t v = s_alignment(al[i].ptr);
        TC_CUBLAS_TRY(f->cublasLtMatmulPreferenceSetAttribute(p->pref, al[i].attr, &v, sizeof v));
    }
    int returned = 0;
    TC_CUBLAS_TRY(f->cublasLtMatmulAlgoGetHeuristic((cublasLtHandle_t)p->blas->handle, p->op,
                                                    p->a_desc, p->b_desc, p->c_desc, p->c_desc,
                                                    p->pref, 1, &p->heur, &returned));
    *found = returned > 0;
    return 0;
err:
    return rc;
}

int tc_cuda_matmul_create(void *ctx, const tc_matmul_spec_t *spec, void **plan)
{
    int rc = 0;
    *plan = NULL;
    tc_cuda_ctx_t *dev = ctx;
    s_plan_t *p = calloc(1, sizeof *p);
    if (!p)
        return tc_fail(TC_ENOMEM, "out of memory creating a cuda matmul plan");
    p->dev = dev;
    p->spec = *spec;
    TC_TRY(tc_matmul_step_gemm(&spec->config, spec->direction, &p->g));
    TC_TRY(s_call(p));
    TC_TRY(s_types(p));
    TC_TRY(tc_cuda_activate(dev));
    TC_TRY(tc_cuda_blas_get(dev, &p->blas));
    TC_TRY(s_tensors(p));
    if (p->call.route == TC_GPU_MM_CUBLASLT) {
        bool found = false;
        TC_TRY(s_lt_prepare(p, &found));
        if (!found) {
            tc_gpu_gemm_call_unfused(&p->call);
            char label[160];
            tc_matmul_config_label(&spec->config, label, sizeof label);
            tc_log_warn("%s: cuBLASLt has no algorithm for addmm %s with its bias: timing the "
                        "unfused cuBLAS call PyTorch recovers with",
                        dev->name, label);
        }
    }
    TC_CUDA_TRY(cudaStreamSynchronize(dev->stream));
    *plan = p;
    return 0;
err:
    tc_cuda_matmul_destroy(p);
    return rc;
}

/* at::cuda::blas::gemm / bgemm on cuBLAS (the handle's math mode set). */
static int s_cublas(s_plan_t *p, const void *a, const void *b)
{
    int rc = 0;
    const tc_cublas_t *f = p->blas->f;
    cublasHandle_t h = p->blas->handle;
    const float one = 1.0f, beta = p->call.beta;
    /* gemm<float> and bgemm<float>: the single-precision calls; fp16 and
     * bf16: the Ex calls with fp32 compute (CUDA_R_32F as PyTorch passes
     * it, which cuBLAS takes as CUBLAS_COMPUTE_32F). */
    if (!p->call.batched) {
        if (p->type == CUDA_R_32F)
            TC_CUBLAS_TRY(f->cublasSgemm_v2(h, p->op_a, p->op_b, p->m, p->n, p->k, &one, b,
                                            p->lda, a, p->ldb, &beta, p->c, p->ldc));
        else
            TC_CUBLAS_TRY(f->cublasGemmEx(h, p->op_a, p->op_b, p->m, p->n, p->k, &one, b, p->type,
                                          p->lda, a, p->type, p->ldb, &beta, p->c, p->type,
                                          p->ldc, CUBLAS_COMPUTE_32F,
                                          CUBLAS_GEMM_DEFAULT_TENSOR_OP));
    } else {
        const tc_gpu_gemm_call_t *c = &p->call;
        int count = (int)c->count;
        if (p->type == CUDA_R_32F)
            TC_CUBLAS_TRY(f->cublasSgemmStridedBatched(
                h, p->op_a, p->op_b, p->m, p->n, p->k, &one, b, p->lda, c->stride_a, a, p->ldb,
                c->stride_b, &beta, p->c, p->ldc, c->stride_c, count));
        else
            TC_CUBLAS_TRY(f->cublasGemmStridedBatchedEx(
                h, p->op_a, p->op_b, p->m, p->n, p->k, &one, b, p->type, p->lda, c->stride_a, a,
                p->type, p->ldb, c->stride_b, &beta, p->c, p->type, p->ldc, c->stride_c, count,
                CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT_TENSOR_OP));
    }
    return 0;
err:
    return rc;
}

int tc_cuda_matmul_run(void *plan, double *ms)
{
    int rc = 0;
    s_plan_t *p = plan;
    tc_cuda_ctx_t *d = p->dev;
    const tc_cublas_t *f = p->blas->f;
    TC_TRY(tc_cuda_activate(d));
    /* This run's copy of the inputs. */
    p->last_rot = p->rot;
    const void *a = p->in[p->rot][0], *b = p->in[p->rot][1];
    p->rot = (p->rot + 1) % p->n_rot;
    /* getCurrentCUDABlasHandle sets the math mode on every call; the half
     * and bfloat16 helpers run under CUBLAS_DEFAULT_MATH. */
    bool lt = p->call.route == TC_GPU_MM_CUBLASLT;
    if (!lt)
        TC_CUBLAS_TRY(f->cublasSetMathMode(p->blas->handle, p->tf32 ? CUBLAS_TF32_TENSOR_OP_MATH
                                                                    : CUBLAS_DEFAULT_MATH));
    TC_TRY(tc_cuda_timed_begin(d));
    if (lt) {
        const float one = 1.0f, zero = 0.0f;
        TC_CUBLAS_TRY(f->cublasLtMatmul((cublasLtHandle_t)p->blas->handle, p->op, &one, b,
                                        p->a_desc, a, p->b_desc, &zero, p->c, p->c_desc, p->c,
                                        p->c_desc, &p->heur.algo, p->blas->lt_ws,
                                        p->blas->lt_ws_size, d->stream));
    } else {
        if (p->call.bias_rows)
            TC_CUDA_TRY(tc_cuda_bias_rows(p->c, p->bias, p->g.count * p->g.m, p->g.n,
                                          p->fill_kind, d->stream));
        TC_TRY(s_cublas(p, a, b));
    }
    return tc_cuda_timed_end(d, ms);
err:
    return rc;
}

int tc_cuda_matmul_read(void *plan, tc_mm_tensor_t t, float *out, size_t count)
{
    int rc = 0;
    s_plan_t *p = plan;
    void *host = NULL;
    if ((unsigned)t >= TC_MM_TENSOR_COUNT || !p->count[t])
        return tc_fail(TC_ENOTFOUND, "the matmul plan has no operand %d", (int)t);
    if (count != p->count[t])
        return tc_fail(TC_EINVAL, "operand %d has %zu elements, not %zu", (int)t, p->count[t],
                       count);
    /* An input as the last run read it. */
    const void *src = t == TC_MM_TENSOR_A   ? p->in[p->last_rot][0]
                      : t == TC_MM_TENSOR_B ? p->in[p->last_rot][1]
                      : t == TC_MM_TENSOR_C ? p->c
                                            : p->bias;
    TC_TRY(tc_cuda_activate(p->dev));
    host = malloc(count * p->elem + 1);
    if (!host)
        TC_FAIL_GOTO(TC_ENOMEM, "out of memory reading matmul operand %d", (int)t);
    TC_CUDA_TRY(cudaStreamSynchronize(p->dev->stream));
    TC_CUDA_TRY(cudaMemcpy(host, src, count * p->elem, cudaMemcpyDeviceToHost));
    if (p->elem == 4) {
        memcpy(out, host, count * sizeof *out);
    } else {
        for (size_t i = 0; i < count; i++) {
            uint16_t h16;
            memcpy(&h16, (const char *)host + i * 2, 2);
            out[i] = p->fill_kind == 1 ? tc_cuda_half_to_float(h16) : tc_cuda_bf16_to_float(h16);
        }
    }
err:
    free(host);
    return rc;
}

const char *tc_cuda_matmul_route(void *plan)
{
    const s_plan_t *p = plan;
    return tc_gpu_mm_route_name(p->call.route);
}
