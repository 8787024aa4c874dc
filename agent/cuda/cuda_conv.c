/* Conv plans on cuDNN (legacy convolution API), called the way PyTorch's
 * cuDNN v7 path does:
 * - descriptors: 4-d tensors in NCHW or NHWC, filter KCRS or KRSC, cross
 *   correlation with padding, stride, dilation and a group count; compute
 *   type fp32 for every data type; math type FMA for fp32 (no TF32),
 *   DEFAULT for tf32 (fp32 data, TF32 tensor cores allowed), TENSOR_OP for
 *   fp16 and bf16;
 * - heuristic policy: the candidates are cudnnGetConvolution*Algorithm_v7's
 *   list in its order, each with the math type it reports (PyTorch sets it
 *   on the descriptor before running); the first that succeeds and whose
 *   workspace fits the limit is the one PyTorch runs with
 *   cudnn.benchmark=False;
 * - exhaustive policy: every algorithm of the direction, each with its
 *   workspace size, to be timed (cudnn.benchmark=True picks the fastest of
 *   cudnnFind*AlgorithmEx's trials).
 * Timing: CUDA events around the one library call on the plan's stream.
 * Inputs are filled once on the device with reproducible random values. */
#include "cuda_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    tc_algo_t info;
    int algo;                /* cudnnConvolution*Algo_t value */
    cudnnMathType_t math;
} s_cand_t;

typedef struct {
    tc_cuda_ctx_t *dev;
    tc_conv_spec_t spec;
    cudnnDataType_t data_type;
    int fill_kind;           /* for tc_cuda_fill */
    size_t elem;             /* bytes per element */
    cudnnMathType_t math;    /* the dtype's math type */
    cudnnTensorDescriptor_t x_desc, y_desc;
    cudnnFilterDescriptor_t w_desc;
    cudnnConvolutionDescriptor_t conv;
    void *buf[TC_TENSOR_COUNT]; /* device memory; NULL when not part of the direction */
    s_cand_t *cands;
    size_t n_cands;
    int sel;
    void *ws;
    size_t ws_size;
} tc_cuda_plan_t;

static const char *const s_fwd_names[] = {"implicit_gemm", "implicit_precomp_gemm", "gemm",
                                          "direct", "fft", "fft_tiling", "winograd",
                                          "winograd_nonfused"};
static const char *const s_bwd_data_names[] = {"algo_0", "algo_1", "fft", "fft_tiling",
                                               "winograd", "winograd_nonfused"};
static const char *const s_bwd_filter_names[] = {"algo_0", "algo_1", "fft", "algo_3",
                                                 "winograd", "winograd_nonfused", "fft_tiling"};

static bool s_is(const tc_cuda_plan_t *p, Traincast__V1__Direction d) { return p->spec.direction == d; }
#define DIR_FWD TRAINCAST__V1__DIRECTION__DIRECTION_FWD
#define DIR_BWD_DATA TRAINCAST__V1__DIRECTION__DIRECTION_BWD_DATA
#define DIR_BWD_FILTER TRAINCAST__V1__DIRECTION__DIRECTION_BWD_FILTER

static const char *s_algo_name(const tc_cuda_plan_t *p, int algo)
{
    if (s_is(p, DIR_BWD_DATA))
        return algo >= 0 && algo < CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT ? s_bwd_data_names[algo] : "?";
    if (s_is(p, DIR_BWD_FILTER))
        return algo >= 0 && algo < CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT ? s_bwd_filter_names[algo]
                                                                            : "?";
    return algo >= 0 && algo < CUDNN_CONVOLUTION_FWD_ALGO_COUNT ? s_fwd_names[algo] : "?";
}

static const char *s_math_name(cudnnMathType_t m)
{
    switch (m) {
    case CUDNN_TENSOR_OP_MATH: return "tensor_op";
    case CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION: return "tensor_op_conversion";
    case CUDNN_FMA_MATH: return "fma";
    default: return "default";
    }
}

/* Workspace of `algo` with math type `math`; a cuDNN status on failure. */
static cudnnStatus_t s_workspace(tc_cuda_plan_t *p, int algo, cudnnMathType_t math, size_t *bytes)
{
    cudnnStatus_t st = cudnnSetConvolutionMathType(p->conv, math);
    if (st != CUDNN_STATUS_SUCCESS)
        return st;
    cudnnHandle_t h = p->dev->cudnn;
    if (s_is(p, DIR_BWD_DATA))
        return cudnnGetConvolutionBackwardDataWorkspaceSize(
            h, p->w_desc, p->y_desc, p->conv, p->x_desc, (cudnnConvolutionBwdDataAlgo_t)algo, bytes);
    if (s_is(p, DIR_BWD_FILTER))
        return cudnnGetConvolutionBackwardFilterWorkspaceSize(
            h, p->x_desc, p->y_desc, p->conv, p->w_desc, (cudnnConvolutionBwdFilterAlgo_t)algo,
            bytes);
    return cudnnGetConvolutionForwardWorkspaceSize(h, p->x_desc, p->w_desc, p->conv, p->y_desc,
                                                   (cudnnConvolutionFwdAlgo_t)algo, bytes);
}

static int s_add(tc_cuda_plan_t *p, int algo, cudnnMathType_t math, cudnnStatus_t status,
                 size_t ws, uint64_t limit)
{
    s_cand_t c;
    memset(&c, 0, sizeof c);
    c.algo = algo;
    c.math = math;
    c.info.id = algo;
    if (math == p->math)
        snprintf(c.info.name, sizeof c.info.name, "%s", s_algo_name(p, algo));
    else
        snprintf(c.info.name, sizeof c.info.name, "%s (%s math)", s_algo_name(p, algo),
                 s_math_name(math));
    c.info.workspace_bytes = ws;
    if (status != CUDNN_STATUS_SUCCESS) {
        c.info.status = TRAINCAST__V1__ALGO_STATUS__ALGO_STATUS_NOT_SUPPORTED;
        snprintf(c.info.message, sizeof c.info.message, "%s", cudnnGetErrorString(status));
    } else if (ws > limit) {
        c.info.status = TRAINCAST__V1__ALGO_STATUS__ALGO_STATUS_WORKSPACE_TOO_LARGE;
        snprintf(c.info.message, sizeof c.info.message,
                 "needs %zu bytes of workspace, over the %llu byte limit", ws,
                 (unsigned long long)limit);
    } else {
        c.info.status = TRAINCAST__V1__ALGO_STATUS__ALGO_STATUS_OK;
    }
    s_cand_t *n = realloc(p->cands, (p->n_cands + 1) * sizeof *n);
    if (!n)
        return tc_fail(TC_ENOMEM, "out of memory listing cuDNN algorithms");
    p->cands = n;
    p->cands[p->n_cands++] = c;
    return 0;
}

/* Heuristic order from cudnnGetConvolution*Algorithm_v7. */
static int s_list_heuristic(tc_cuda_plan_t *p, uint64_t limit)
{
    int rc = 0, got = 0;
    cudnnHandle_t h = p->dev->cudnn;
    TC_CUDNN_TRY(cudnnSetConvolutionMathType(p->conv, p->math));
    if (s_is(p, DIR_BWD_DATA)) {
        cudnnConvolutionBwdDataAlgoPerf_t perf[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
        TC_CUDNN_TRY(cudnnGetConvolutionBackwardDataAlgorithm_v7(
            h, p->w_desc, p->y_desc, p->conv, p->x_desc, CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT,
            &got, perf));
        for (int i = 0; i < got; i++)
            TC_TRY(s_add(p, perf[i].algo, perf[i].mathType, perf[i].status, perf[i].memory, limit));
    } else if (s_is(p, DIR_BWD_FILTER)) {
        cudnnConvolutionBwdFilterAlgoPerf_t perf[CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT];
        TC_CUDNN_TRY(cudnnGetConvolutionBackwardFilterAlgorithm_v7(
            h, p->x_desc, p->y_desc, p->conv, p->w_desc, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT,
            &got, perf));
        for (int i = 0; i < got; i++)
            TC_TRY(s_add(p, perf[i].algo, perf[i].mathType, perf[i].status, perf[i].memory, limit));
    } else {
        cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
        TC_CUDNN_TRY(cudnnGetConvolutionForwardAlgorithm_v7(h, p->x_desc, p->w_desc, p->conv,
                                                            p->y_desc,
                                                            CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &got,
                                                            perf));
        for (int i = 0; i < got; i++)
            TC_TRY(s_add(p, perf[i].algo, perf[i].mathType, perf[i].status, perf[i].memory, limit));
    }
    /* The heuristic's memory estimate can differ from the real requirement;
     * ask for the workspace of every candidate it says can run. */
    for (size_t i = 0; i < p->n_cands; i++) {
        s_cand_t *c = &p->cands[i];
        if (c->info.status == TRAINCAST__V1__ALGO_STATUS__ALGO_STATUS_NOT_SUPPORTED)
            continue;
        size_t ws = 0;
        cudnnStatus_t st = s_workspace(p, c->algo, c->math, &ws);
        if (st != CUDNN_STATUS_SUCCESS) {
            c->info.status = TRAINCAST__V1__ALGO_STATUS__ALGO_STATUS_NOT_SUPPORTED;
            snprintf(c->info.message, sizeof c->info.message, "workspace query: %s",
                     cudnnGetErrorString(st));
            continue;
        }
        if (ws > c->info.workspace_bytes)
            c->info.workspace_bytes = ws;
        if (c->info.workspace_bytes > limit) {
            c->info.status = TRAINCAST__V1__ALGO_STATUS__ALGO_STATUS_WORKSPACE_TOO_LARGE;
            snprintf(c->info.message, sizeof c->info.message,
                     "needs %llu bytes of workspace, over the %llu byte limit",
                     (unsigned long long)c->info.workspace_bytes, (unsigned long long)limit);
        }
    }
    return 0;
err:
    return rc;
}

/* Every algorithm of the direction with the dtype's math type. */
static int s_list_all(tc_cuda_plan_t *p, uint64_t limit)
{
    int rc = 0;
    int count = s_is(p, DIR_BWD_DATA)     ? CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT
                : s_is(p, DIR_BWD_FILTER) ? CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT
                                          : CUDNN_CONVOLUTION_FWD_ALGO_COUNT;
    for (int a = 0; a < count; a++) {
        size_t ws = 0;
        cudnnStatus_t st = s_workspace(p, a, p->math, &ws);
        TC_TRY(s_add(p, a, p->math, st, ws, limit));
    }
    return 0;
err:
    return rc;
}

void tc_cuda_plan_destroy(void *plan)
{
    tc_cuda_plan_t *p = plan;
    if (!p)
        return;
    cudaSetDevice(p->dev->index);
    cudaStreamSynchronize(p->dev->stream);
    for (int t = 0; t < TC_TENSOR_COUNT; t++)
        if (p->buf[t])
            cudaFree(p->buf[t]);
    if (p->ws)
        cudaFree(p->ws);
    if (p->x_desc)
        cudnnDestroyTensorDescriptor(p->x_desc);
    if (p->y_desc)
        cudnnDestroyTensorDescriptor(p->y_desc);
    if (p->w_desc)
        cudnnDestroyFilterDescriptor(p->w_desc);
    if (p->conv)
        cudnnDestroyConvolutionDescriptor(p->conv);
    free(p->cands);
    free(p);
}

/* The dtype's cuDNN types, or TC_EUNSUPPORTED when this GPU lacks them. */
static int s_types(tc_cuda_plan_t *p)
{
    const tc_cuda_ctx_t *d = p->dev;
    bool ampere = d->cc_major >= 8;
    switch (p->spec.config.dtype) {
    case TRAINCAST__V1__DTYPE__DTYPE_FP32:
        p->data_type = CUDNN_DATA_FLOAT, p->elem = 4, p->fill_kind = 0, p->math = CUDNN_FMA_MATH;
        return 0;
    case TRAINCAST__V1__DTYPE__DTYPE_TF32:
        if (!ampere)
            return tc_fail(TC_EUNSUPPORTED, "tf32 needs compute capability 8.0 or newer; %s is "
                                            "%s: use --dtype fp32",
                           d->name, d->cc);
        p->data_type = CUDNN_DATA_FLOAT, p->elem = 4, p->fill_kind = 0,
        p->math = CUDNN_DEFAULT_MATH;
        return 0;
    case TRAINCAST__V1__DTYPE__DTYPE_FP16:
        p->data_type = CUDNN_DATA_HALF, p->elem = 2, p->fill_kind = 1,
        p->math = CUDNN_TENSOR_OP_MATH;
        return 0;
    case TRAINCAST__V1__DTYPE__DTYPE_BF16:
        if (!ampere)
            return tc_fail(TC_EUNSUPPORTED, "bf16 convolutions need compute capability 8.0 or "
                                            "newer; %s is %s",
                           d->name, d->cc);
        p->data_type = CUDNN_DATA_BFLOAT16, p->elem = 2, p->fill_kind = 2,
        p->math = CUDNN_TENSOR_OP_MATH;
        return 0;
    default:
        return tc_fail(TC_EINVAL, "conv config: unknown dtype %d", (int)p->spec.config.dtype);
    }
}

static int s_alloc(tc_cuda_plan_t *p, tc_tensor_t t, bool input, uint64_t seed)
{
    int rc = 0;
    size_t n = tc_tensor_count(&p->spec.config, t);
    TC_CUDA_TRY(cudaMalloc(&p->buf[t], n * p->elem));
    if (input)
        TC_CUDA_TRY(tc_cuda_fill(p->buf[t], n, p->fill_kind, seed, p->dev->stream));
    else
        TC_CUDA_TRY(cudaMemsetAsync(p->buf[t], 0, n * p->elem, p->dev->stream));
    return 0;
err:
    return tc_err_context(rc, "allocating tensor %s (%zu values)", tc_tensor_name(t), n);
}

int tc_cuda_plan_create(void *ctx, const tc_conv_spec_t *spec, void **out)
{
    int rc = 0;
    *out = NULL;
    tc_cuda_ctx_t *dev = ctx;
    const tc_conv_config_t *c = &spec->config;
    /* PyTorch sends every conv on a CUDA device to cuDNN here (fp32 and
     * fp16, cudnn enabled); its native CUDA kernels are not mirrored. */
    if (spec->path == TC_PATH_NATIVE)
        return tc_fail(TC_EUNSUPPORTED, "the cuda backend times cuDNN only, not the framework's "
                                        "native CUDA kernels");
    tc_cuda_plan_t *p = calloc(1, sizeof *p);
    if (!p)
        return tc_fail(TC_ENOMEM, "out of memory creating a cuda conv plan");
    p->dev = dev;
    TC_TRY(tc_cuda_activate(dev));
    p->spec = *spec;
    p->sel = -1;
    TC_TRY(s_types(p));
    bool nhwc = c->layout == TRAINCAST__V1__LAYOUT__LAYOUT_NHWC;
    cudnnTensorFormat_t fmt = nhwc ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW;
    int p_out = (int)tc_conv_out_h(c), q_out = (int)tc_conv_out_w(c);
    TC_CUDNN_TRY(cudnnCreateTensorDescriptor(&p->x_desc));
    TC_CUDNN_TRY(cudnnCreateTensorDescriptor(&p->y_desc));
    TC_CUDNN_TRY(cudnnCreateFilterDescriptor(&p->w_desc));
    TC_CUDNN_TRY(cudnnCreateConvolutionDescriptor(&p->conv));
    TC_CUDNN_TRY(cudnnSetTensor4dDescriptor(p->x_desc, fmt, p->data_type, (int)c->n, (int)c->c,
                                            (int)c->h, (int)c->w));
    TC_CUDNN_TRY(cudnnSetTensor4dDescriptor(p->y_desc, fmt, p->data_type, (int)c->n, (int)c->k,
                                            p_out, q_out));
    TC_CUDNN_TRY(cudnnSetFilter4dDescriptor(p->w_desc, p->data_type, fmt, (int)c->k,
                                            (int)(c->c / c->groups), (int)c->r, (int)c->s));
    TC_CUDNN_TRY(cudnnSetConvolution2dDescriptor(p->conv, (int)c->pad_h, (int)c->pad_w,
                                                 (int)c->stride_h, (int)c->stride_w,
                                                 (int)c->dilation_h, (int)c->dilation_w,
                                                 CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
    TC_CUDNN_TRY(cudnnSetConvolutionGroupCount(p->conv, (int)c->groups));
    TC_CUDNN_TRY(cudnnSetConvolutionMathType(p->conv, p->math));
    int dn, dc, dh, dw;
    TC_CUDNN_TRY(cudnnGetConvolution2dForwardOutputDim(p->conv, p->x_desc, p->w_desc, &dn, &dc,
                                                       &dh, &dw));
    if (dn != (int)c->n || dc != (int)c->k || dh != p_out || dw != q_out)
        TC_FAIL_GOTO(TC_ELIB, "cuDNN computes output %dx%dx%dx%d, traincast %ux%ux%dx%d", dn, dc,
                     dh, dw, c->n, c->k, p_out, q_out);

    uint64_t seed = spec->seed;
    if (s_is(p, DIR_BWD_DATA)) {
        TC_TRY(s_alloc(p, TC_TENSOR_DY, true, seed + TC_TENSOR_DY));
        TC_TRY(s_alloc(p, TC_TENSOR_W, true, seed + TC_TENSOR_W));
        TC_TRY(s_alloc(p, TC_TENSOR_DX, false, 0));
    } else if (s_is(p, DIR_BWD_FILTER)) {
        TC_TRY(s_alloc(p, TC_TENSOR_X, true, seed + TC_TENSOR_X));
        TC_TRY(s_alloc(p, TC_TENSOR_DY, true, seed + TC_TENSOR_DY));
        TC_TRY(s_alloc(p, TC_TENSOR_DW, false, 0));
    } else {
        TC_TRY(s_alloc(p, TC_TENSOR_X, true, seed + TC_TENSOR_X));
        TC_TRY(s_alloc(p, TC_TENSOR_W, true, seed + TC_TENSOR_W));
        TC_TRY(s_alloc(p, TC_TENSOR_Y, false, 0));
    }
    TC_CUDA_TRY(cudaStreamSynchronize(dev->stream));

    uint64_t limit = spec->workspace_limit;
    if (limit == 0) {
        /* PyTorch runs the first algorithm whose workspace it can allocate:
         * the limit is what is free now, less a margin. */
        size_t free_b = 0, total_b = 0;
        TC_CUDA_TRY(cudaMemGetInfo(&free_b, &total_b));
        limit = free_b > (64u << 20) ? free_b - (64u << 20) : 0;
    }
    if (spec->policy == TRAINCAST__V1__POLICY__POLICY_EXHAUSTIVE)
        TC_TRY(s_list_all(p, limit));
    else
        TC_TRY(s_list_heuristic(p, limit));
    *out = p;
    return 0;
err:
    tc_cuda_plan_destroy(p);
    return rc;
}

size_t tc_cuda_algo_count(void *plan) { return ((tc_cuda_plan_t *)plan)->n_cands; }

const tc_algo_t *tc_cuda_algo(void *plan, size_t i)
{
    tc_cuda_plan_t *p = plan;
    return i < p->n_cands ? &p->cands[i].info : NULL;
}

int tc_cuda_select(void *plan, size_t i)
{
    int rc = 0;
    tc_cuda_plan_t *p = plan;
    if (i >= p->n_cands)
        return tc_fail(TC_EINVAL, "cuda conv plan: no candidate %zu", i);
    TC_TRY(tc_cuda_activate(p->dev));
    const s_cand_t *c = &p->cands[i];
    p->sel = -1;
    TC_CUDNN_TRY(cudnnSetConvolutionMathType(p->conv, c->math));
    if (c->info.workspace_bytes > p->ws_size) {
        if (p->ws)
            TC_CUDA_TRY(cudaFree(p->ws));
        p->ws = NULL;
        p->ws_size = 0;
        TC_CUDA_TRY(cudaMalloc(&p->ws, c->info.workspace_bytes));
        p->ws_size = c->info.workspace_bytes;
    }
    p->sel = (int)i;
    return 0;
err:
    return rc;
}

int tc_cuda_run(void *plan, double *ms)
{
    int rc = 0;
    tc_cuda_plan_t *p = plan;
    if (p->sel < 0)
        return tc_fail(TC_EINVAL, "cuda conv plan: no candidate selected before run");
    const s_cand_t *c = &p->cands[p->sel];
    tc_cuda_ctx_t *d = p->dev;
    const float one = 1.0f, zero = 0.0f;
    TC_TRY(tc_cuda_activate(d));
    TC_CUDA_TRY(cudaEventRecord(d->start, d->stream));
    if (s_is(p, DIR_BWD_DATA))
        TC_CUDNN_TRY(cudnnConvolutionBackwardData(
            d->cudnn, &one, p->w_desc, p->buf[TC_TENSOR_W], p->y_desc, p->buf[TC_TENSOR_DY],
            p->conv, (cudnnConvolutionBwdDataAlgo_t)c->algo, p->ws, p->ws_size, &zero, p->x_desc,
            p->buf[TC_TENSOR_DX]));
    else if (s_is(p, DIR_BWD_FILTER))
        TC_CUDNN_TRY(cudnnConvolutionBackwardFilter(
            d->cudnn, &one, p->x_desc, p->buf[TC_TENSOR_X], p->y_desc, p->buf[TC_TENSOR_DY],
            p->conv, (cudnnConvolutionBwdFilterAlgo_t)c->algo, p->ws, p->ws_size, &zero, p->w_desc,
            p->buf[TC_TENSOR_DW]));
    else
        TC_CUDNN_TRY(cudnnConvolutionForward(
            d->cudnn, &one, p->x_desc, p->buf[TC_TENSOR_X], p->w_desc, p->buf[TC_TENSOR_W], p->conv,
            (cudnnConvolutionFwdAlgo_t)c->algo, p->ws, p->ws_size, &zero, p->y_desc,
            p->buf[TC_TENSOR_Y]));
    TC_CUDA_TRY(cudaEventRecord(d->stop, d->stream));
    TC_CUDA_TRY(cudaEventSynchronize(d->stop));
    float elapsed = 0;
    TC_CUDA_TRY(cudaEventElapsedTime(&elapsed, d->start, d->stop));
    *ms = elapsed;
    return 0;
err:
    return rc;
}

static float s_half_to_float(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16, exp = (h >> 10) & 0x1f, man = h & 0x3ffu;
    uint32_t bits;
    if (exp == 0) {
        if (man == 0) {
            bits = sign;
        } else { /* subnormal: normalize */
            exp = 127 - 15 + 1;
            while (!(man & 0x400u)) {
                man <<= 1;
                exp--;
            }
            bits = sign | exp << 23 | (man & 0x3ffu) << 13;
        }
    } else if (exp == 31) {
        bits = sign | 0x7f800000u | man << 13;
    } else {
        bits = sign | (exp + 127 - 15) << 23 | man << 13;
    }
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

static float s_bf16_to_float(uint16_t b)
{
    uint32_t bits = (uint32_t)b << 16;
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

int tc_cuda_read(void *plan, tc_tensor_t t, float *out, size_t count)
{
    int rc = 0;
    tc_cuda_plan_t *p = plan;
    void *host = NULL;
    if ((unsigned)t >= TC_TENSOR_COUNT || !p->buf[t])
        return tc_fail(TC_ENOTFOUND, "this %s plan has no tensor %s",
                       tc_direction_name(p->spec.direction), tc_tensor_name(t));
    const tc_conv_config_t *c = &p->spec.config;
    size_t n = tc_tensor_count(c, t);
    if (count != n)
        return tc_fail(TC_EINVAL, "reading tensor %s: it has %zu values, not %zu",
                       tc_tensor_name(t), n, count);
    TC_TRY(tc_cuda_activate(p->dev));
    host = malloc(n * p->elem + 1);
    if (!host)
        TC_FAIL_GOTO(TC_ENOMEM, "out of memory reading tensor %s", tc_tensor_name(t));
    TC_CUDA_TRY(cudaStreamSynchronize(p->dev->stream));
    TC_CUDA_TRY(cudaMemcpy(host, p->buf[t], n * p->elem, cudaMemcpyDeviceToHost));
    /* Dimensions (a, b, h, w) of the logical order: NCHW activations or
     * KCRS filters; NHWC / KRSC is stored as (a, h, w, b). */
    size_t a, b, hh, ww;
    if (t == TC_TENSOR_W || t == TC_TENSOR_DW)
        a = c->k, b = c->c / c->groups, hh = c->r, ww = c->s;
    else if (t == TC_TENSOR_X || t == TC_TENSOR_DX)
        a = c->n, b = c->c, hh = c->h, ww = c->w;
    else
        a = c->n, b = c->k, hh = tc_conv_out_h(c), ww = tc_conv_out_w(c);
    bool nhwc = c->layout == TRAINCAST__V1__LAYOUT__LAYOUT_NHWC;
    for (size_t i0 = 0; i0 < a; i0++)
        for (size_t i1 = 0; i1 < b; i1++)
            for (size_t i2 = 0; i2 < hh; i2++)
                for (size_t i3 = 0; i3 < ww; i3++) {
                    size_t logical = ((i0 * b + i1) * hh + i2) * ww + i3;
                    size_t stored = nhwc ? ((i0 * hh + i2) * ww + i3) * b + i1 : logical;
                    float v;
                    if (p->elem == 4)
                        memcpy(&v, (const char *)host + stored * 4, 4);
                    else {
                        uint16_t h16;
                        memcpy(&h16, (const char *)host + stored * 2, 2);
                        v = p->fill_kind == 1 ? s_half_to_float(h16) : s_bf16_to_float(h16);
                    }
                    out[logical] = v;
                }
err:
    free(host);
    return rc;
}
