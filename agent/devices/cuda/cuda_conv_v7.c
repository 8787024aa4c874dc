/* cuDNN's legacy (v7) convolution API, called the way PyTorch's Conv_v7.cpp
 * does (1.13 by default; 2.x with TORCH_CUDNN_V8_API_DISABLED=1):
 * - descriptors: 4-d tensors in NCHW or NHWC, filter KCRS or KRSC, cross
 *   correlation with padding, stride, dilation and a group count, compute
 *   type fp32; math type DEFAULT, then TENSOR_OP for fp16 and bf16 and FMA
 *   for fp32 when TF32 is not allowed (ConvolutionDescriptor::set);
 * - heuristic policy (cudnn.benchmark=False): the candidates are
 *   cudnnGetConvolution*Algorithm_v7's list in its order, each with the
 *   math type it reports (PyTorch sets it before running), non-deterministic
 *   ones dropped in deterministic mode (getValidAlgorithms); PyTorch runs the
 *   first whose workspace it can allocate;
 * - exhaustive policy: every algorithm of the direction, each with its
 *   workspace size, to be timed (cudnn.benchmark=True picks the fastest of
 *   cudnnFind*AlgorithmEx's trials). */
#include "cuda_internal.h"

#include <stdio.h>
#include <string.h>

#define DIR_BWD_DATA TRAINCAST__V1__DIRECTION__DIRECTION_BWD_DATA
#define DIR_BWD_FILTER TRAINCAST__V1__DIRECTION__DIRECTION_BWD_FILTER

static const char *const s_fwd_names[] = {"implicit_gemm", "implicit_precomp_gemm", "gemm",
                                          "direct", "fft", "fft_tiling", "winograd",
                                          "winograd_nonfused"};
static const char *const s_bwd_data_names[] = {"algo_0", "algo_1", "fft", "fft_tiling",
                                               "winograd", "winograd_nonfused"};
static const char *const s_bwd_filter_names[] = {"algo_0", "algo_1", "fft", "algo_3",
                                                 "winograd", "winograd_nonfused", "fft_tiling"};

static bool s_is(const tc_cuda_plan_t *p, Traincast__V1__Direction d) { return p->spec.direction == d; }

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

int tc_cuda_v7_prepare(tc_cuda_plan_t *p)
{
    int rc = 0;
    const tc_conv_config_t *c = &p->spec.config;
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
    return 0;
err:
    return rc;
}

void tc_cuda_v7_release(tc_cuda_plan_t *p)
{
    if (p->x_desc)
        cudnnDestroyTensorDescriptor(p->x_desc);
    if (p->y_desc)
        cudnnDestroyTensorDescriptor(p->y_desc);
    if (p->w_desc)
        cudnnDestroyFilterDescriptor(p->w_desc);
    if (p->conv)
        cudnnDestroyConvolutionDescriptor(p->conv);
    p->x_desc = p->y_desc = NULL;
    p->w_desc = NULL;
    p->conv = NULL;
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
                 cudnnDeterminism_t det, size_t ws, uint64_t limit)
{
    tc_cuda_cand_t c;
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
    if (status == CUDNN_STATUS_SUCCESS && p->dev->settings.deterministic &&
        det != CUDNN_DETERMINISTIC) {
        c.info.status = TRAINCAST__V1__ALGO_STATUS__ALGO_STATUS_SKIPPED;
        snprintf(c.info.message, sizeof c.info.message,
                 "not deterministic: PyTorch in deterministic mode does not use it");
    }
    return tc_cuda_cand_add(p, &c, status, limit);
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
            TC_TRY(s_add(p, perf[i].algo, perf[i].mathType, perf[i].status, perf[i].determinism,
                         perf[i].memory, limit));
    } else if (s_is(p, DIR_BWD_FILTER)) {
        cudnnConvolutionBwdFilterAlgoPerf_t perf[CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT];
        TC_CUDNN_TRY(cudnnGetConvolutionBackwardFilterAlgorithm_v7(
            h, p->x_desc, p->y_desc, p->conv, p->w_desc, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT,
            &got, perf));
        for (int i = 0; i < got; i++)
            TC_TRY(s_add(p, perf[i].algo, perf[i].mathType, perf[i].status, perf[i].determinism,
                         perf[i].memory, limit));
    } else {
        cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
        TC_CUDNN_TRY(cudnnGetConvolutionForwardAlgorithm_v7(h, p->x_desc, p->w_desc, p->conv,
                                                            p->y_desc,
                                                            CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &got,
                                                            perf));
        for (int i = 0; i < got; i++)
            TC_TRY(s_add(p, perf[i].algo, perf[i].mathType, perf[i].status, perf[i].determinism,
                         perf[i].memory, limit));
    }
    /* The heuristic's memory estimate can differ from the real requirement;
     * ask for the workspace of every candidate it says can run. */
    for (size_t i = 0; i < p->n_cands; i++) {
        tc_cuda_cand_t *c = &p->cands[i];
        if (c->info.status == TRAINCAST__V1__ALGO_STATUS__ALGO_STATUS_NOT_SUPPORTED ||
            c->info.status == TRAINCAST__V1__ALGO_STATUS__ALGO_STATUS_SKIPPED)
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
        } else {
            c->info.status = TRAINCAST__V1__ALGO_STATUS__ALGO_STATUS_OK;
            c->info.message[0] = '\0';
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
        TC_TRY(s_add(p, a, p->math, st, CUDNN_DETERMINISTIC, ws, limit));
    }
    return 0;
err:
    return rc;
}

int tc_cuda_v7_list(tc_cuda_plan_t *p, uint64_t limit)
{
    if (p->spec.policy == TRAINCAST__V1__POLICY__POLICY_EXHAUSTIVE)
        return s_list_all(p, limit);
    return s_list_heuristic(p, limit);
}

int tc_cuda_v7_select(tc_cuda_plan_t *p, const tc_cuda_cand_t *c)
{
    int rc = 0;
    TC_CUDNN_TRY(cudnnSetConvolutionMathType(p->conv, c->math));
    return 0;
err:
    return rc;
}

int tc_cuda_v7_launch(tc_cuda_plan_t *p, const tc_cuda_cand_t *c)
{
    int rc = 0;
    const float one = 1.0f, zero = 0.0f;
    cudnnHandle_t h = p->dev->cudnn;
    if (s_is(p, DIR_BWD_DATA))
        TC_CUDNN_TRY(cudnnConvolutionBackwardData(
            h, &one, p->w_desc, p->buf[TC_TENSOR_W], p->y_desc, p->buf[TC_TENSOR_DY], p->conv,
            (cudnnConvolutionBwdDataAlgo_t)c->algo, p->ws, p->ws_size, &zero, p->x_desc,
            p->buf[TC_TENSOR_DX]));
    else if (s_is(p, DIR_BWD_FILTER))
        TC_CUDNN_TRY(cudnnConvolutionBackwardFilter(
            h, &one, p->x_desc, p->buf[TC_TENSOR_X], p->y_desc, p->buf[TC_TENSOR_DY], p->conv,
            (cudnnConvolutionBwdFilterAlgo_t)c->algo, p->ws, p->ws_size, &zero, p->w_desc,
            p->buf[TC_TENSOR_DW]));
    else
        TC_CUDNN_TRY(cudnnConvolutionForward(
            h, &one, p->x_desc, p->buf[TC_TENSOR_X], p->w_desc, p->buf[TC_TENSOR_W], p->conv,
            (cudnnConvolutionFwdAlgo_t)c->algo, p->ws, p->ws_size, &zero, p->y_desc,
            p->buf[TC_TENSOR_Y]));
    return 0;
err:
    return rc;
}
