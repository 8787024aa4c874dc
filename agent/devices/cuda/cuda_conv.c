/* Conv plans on a GPU, on the path the framework takes (gpu_route.h):
 *
 * - convs PyTorch keeps for its own kernels (depthwise, im2col + GEMM,
 *   dilated) are run and timed by PyTorch itself through the framework
 *   helper (fw_conv.h);
 * - the others on cuDNN, through the API the framework version calls: the
 *   legacy one (cuda_conv_v7.c, Conv_v7.cpp) or the graph API
 *   (cuda_conv_v8.c, Conv_v8.cpp's run_single_conv);
 * - with PyTorch at hand, its own choice of backend for the conv
 *   (torch._C._select_conv_backend) overrides the ported rule where they
 *   differ, with a warning.
 *
 * A cuDNN plan holds the tensors of one (config, direction): inputs filled
 * once with reproducible random values, in as many copies as it takes for
 * them together to exceed twice the L2 cache (at most 16), and used in turn
 * so that no run finds its inputs in L2, as no training step does. The bias
 * of a layer that has one is added after the forward (PyTorch's
 * output.add_(bias)) and its gradient reduced after backward-filter
 * (grad_output.sum({0, 2, 3})), both inside the timed region.
 *
 * Timing: a spin kernel of about 1 ms is enqueued first, so the GPU is
 * busy while the host enqueues the start event, the library call(s) and the
 * stop event (the graph API builds a variant pack per call); the events
 * then bracket GPU time only, back to back as in training, with no launch
 * overhead in the sample. PyTorch's side of the same comparison (the
 * framework helper, bench/gpu_conv_check.py) spins as long. */
#include "cuda_internal.h"

#include "tc_log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DIR_FWD TRAINCAST__V1__DIRECTION__DIRECTION_FWD
#define DIR_BWD_DATA TRAINCAST__V1__DIRECTION__DIRECTION_BWD_DATA
#define DIR_BWD_FILTER TRAINCAST__V1__DIRECTION__DIRECTION_BWD_FILTER

/* A plan of any route: a cuDNN one, or one the framework runs. */
typedef struct {
    tc_cuda_plan_t *cudnn;
    void *fw;
    char route[32];
} s_plan_t;

int tc_cuda_cand_add(tc_cuda_plan_t *p, const tc_cuda_cand_t *c, cudnnStatus_t status,
                     uint64_t limit)
{
    tc_cuda_cand_t add = *c;
    if (status != CUDNN_STATUS_SUCCESS) {
        add.info.status = TRAINCAST__V1__ALGO_STATUS__ALGO_STATUS_NOT_SUPPORTED;
        if (!add.info.message[0])
            snprintf(add.info.message, sizeof add.info.message, "%s",
                     cudnnGetErrorString(status));
    } else if (add.info.workspace_bytes > limit) {
        add.info.status = TRAINCAST__V1__ALGO_STATUS__ALGO_STATUS_WORKSPACE_TOO_LARGE;
        snprintf(add.info.message, sizeof add.info.message,
                 "needs %llu bytes of workspace, over the %llu byte limit",
                 (unsigned long long)add.info.workspace_bytes, (unsigned long long)limit);
    } else if (add.info.status == TRAINCAST__V1__ALGO_STATUS__ALGO_STATUS_UNSPECIFIED) {
        add.info.status = TRAINCAST__V1__ALGO_STATUS__ALGO_STATUS_OK;
    }
    tc_cuda_cand_t *n = realloc(p->cands, (p->n_cands + 1) * sizeof *n);
    if (!n)
        return tc_fail(TC_ENOMEM, "out of memory listing cuDNN algorithms");
    p->cands = n;
    p->cands[p->n_cands++] = add;
    return 0;
}

static void s_cudnn_destroy(tc_cuda_plan_t *p)
{
    if (!p)
        return;
    cudaSetDevice(p->dev->index);
    cudaStreamSynchronize(p->dev->stream);
    tc_cuda_v7_release(p);
    tc_cuda_v8_release(p);
    /* The inputs are owned by in[][]; buf[] only points at one copy. */
    for (int i = 0; i < 2; i++)
        if (p->n_rot || p->in[0][i])
            p->buf[p->in_t[i]] = NULL;
    for (size_t r = 0; r < TC_CUDA_MAX_ROTATION; r++)
        for (int i = 0; i < 2; i++)
            if (p->in[r][i])
                cudaFree(p->in[r][i]);
    for (int t = 0; t < TC_TENSOR_COUNT; t++)
        if (p->buf[t])
            cudaFree(p->buf[t]);
    if (p->bias_acc)
        cudaFree(p->bias_acc);
    if (p->ws)
        cudaFree(p->ws);
    free(p->cands);
    free(p);
}

void tc_cuda_plan_destroy(void *plan)
{
    s_plan_t *w = plan;
    if (!w)
        return;
    s_cudnn_destroy(w->cudnn);
    if (w->fw)
        tc_fw_plan_iface.plan_destroy(w->fw);
    free(w);
}

/* The dtype's cuDNN types and math (tc_gpu_conv_math: TF32 for fp32 as
 * the probed PyTorch allows it), or TC_EUNSUPPORTED when this GPU lacks
 * them. */
static int s_types(tc_cuda_plan_t *p)
{
    const tc_cuda_ctx_t *d = p->dev;
    tc_gpu_conv_math_t m;
    int rc = tc_gpu_conv_math(p->spec.config.dtype, d->settings.allow_tf32, d->cc_major, &m);
    if (rc < 0)
        return tc_err_context(rc, "%s (compute capability %s)", d->name, d->cc);
    p->allow_tf32 = m.allow_tf32;
    p->math = m.math == TC_GPU_MATH_FMA         ? CUDNN_FMA_MATH
              : m.math == TC_GPU_MATH_TENSOR_OP ? CUDNN_TENSOR_OP_MATH
                                                : CUDNN_DEFAULT_MATH;
    switch (p->spec.config.dtype) {
    case TRAINCAST__V1__DTYPE__DTYPE_FP16:
        p->data_type = CUDNN_DATA_HALF, p->elem = 2, p->fill_kind = 1;
        break;
    case TRAINCAST__V1__DTYPE__DTYPE_BF16:
        p->data_type = CUDNN_DATA_BFLOAT16, p->elem = 2, p->fill_kind = 2;
        break;
    default: /* fp32, fp32_strict, tf32 */
        p->data_type = CUDNN_DATA_FLOAT, p->elem = 4, p->fill_kind = 0;
        break;
    }
    return 0;
}

static int s_alloc(tc_cuda_plan_t *p, void **buf, tc_tensor_t t, bool input, uint64_t seed)
{
    int rc = 0;
    size_t n = tc_tensor_count(&p->spec.config, t);
    TC_CUDA_TRY(cudaMalloc(buf, n * p->elem));
    if (input)
        TC_CUDA_TRY(tc_cuda_fill(*buf, n, p->fill_kind, seed, p->dev->stream));
    else
        TC_CUDA_TRY(cudaMemsetAsync(*buf, 0, n * p->elem, p->dev->stream));
    return 0;
err:
    return tc_err_context(rc, "allocating tensor %s (%zu values)", tc_tensor_name(t), n);
}

int tc_cuda_rotation(const tc_cuda_ctx_t *ctx, uint64_t in_bytes, size_t *copies)
{
    int rc = 0;
    *copies = 1;
    if (ctx->l2_bytes && in_bytes) {
        size_t free_b = 0, total_b = 0;
        TC_CUDA_TRY(cudaMemGetInfo(&free_b, &total_b));
        uint64_t want = (2 * ctx->l2_bytes + in_bytes - 1) / in_bytes;
        uint64_t fit = free_b / 4 / in_bytes;
        size_t n = (size_t)(want < fit ? want : fit);
        *copies = n < 1 ? 1 : n > TC_CUDA_MAX_ROTATION ? TC_CUDA_MAX_ROTATION : n;
    }
    return 0;
err:
    return rc;
}

/* The direction's tensors: its inputs in enough copies to exceed twice the
 * L2 cache (bounded by a quarter of the free memory), its output, the bias
 * or its gradient. */
static int s_tensors(tc_cuda_plan_t *p)
{
    int rc = 0;
    const tc_conv_config_t *c = &p->spec.config;
    tc_tensor_t out;
    if (p->spec.direction == DIR_BWD_DATA)
        p->in_t[0] = TC_TENSOR_DY, p->in_t[1] = TC_TENSOR_W, out = TC_TENSOR_DX;
    else if (p->spec.direction == DIR_BWD_FILTER)
        p->in_t[0] = TC_TENSOR_X, p->in_t[1] = TC_TENSOR_DY, out = TC_TENSOR_DW;
    else
        p->in_t[0] = TC_TENSOR_X, p->in_t[1] = TC_TENSOR_W, out = TC_TENSOR_Y;
    uint64_t in_bytes = (tc_tensor_count(c, p->in_t[0]) + tc_tensor_count(c, p->in_t[1])) * p->elem;
    size_t copies = 1;
    TC_TRY(tc_cuda_rotation(p->dev, in_bytes, &copies));
    for (size_t r = 0; r < copies; r++) {
        for (int i = 0; i < 2; i++)
            TC_TRY(s_alloc(p, &p->in[r][i], p->in_t[i], true, p->spec.seed + p->in_t[i]));
        p->n_rot = r + 1;
    }
    p->buf[p->in_t[0]] = p->in[0][0];
    p->buf[p->in_t[1]] = p->in[0][1];
    TC_TRY(s_alloc(p, &p->buf[out], out, false, 0));
    if (c->bias && p->spec.direction == DIR_FWD)
        TC_TRY(s_alloc(p, &p->buf[TC_TENSOR_B], TC_TENSOR_B, true, p->spec.seed + TC_TENSOR_B));
    if (c->bias && p->spec.direction == DIR_BWD_FILTER) {
        TC_TRY(s_alloc(p, &p->buf[TC_TENSOR_DB], TC_TENSOR_DB, false, 0));
        TC_CUDA_TRY(cudaMalloc((void **)&p->bias_acc, c->k * sizeof *p->bias_acc));
    }
    TC_CUDA_TRY(cudaStreamSynchronize(p->dev->stream));
    return 0;
err:
    return rc; /* destroy frees what was allocated */
}

/* The workspace PyTorch can give a conv during training: what the spec
 * says (the device's memory less the trace's peak), else what is free now
 * less a margin. */
static int s_limit(tc_cuda_plan_t *p, uint64_t *limit)
{
    int rc = 0;
    *limit = p->spec.workspace_limit;
    if (*limit)
        return 0;
    size_t free_b = 0, total_b = 0;
    TC_CUDA_TRY(cudaMemGetInfo(&free_b, &total_b));
    *limit = free_b > (64u << 20) ? free_b - (64u << 20) : 0;
    return 0;
err:
    return rc;
}

static int s_cudnn_create(tc_cuda_ctx_t *dev, const tc_conv_spec_t *spec, tc_cuda_plan_t **out)
{
    int rc = 0;
    *out = NULL;
    tc_cuda_plan_t *p = calloc(1, sizeof *p);
    if (!p)
        return tc_fail(TC_ENOMEM, "out of memory creating a cuda conv plan");
    p->dev = dev;
    p->spec = *spec;
    p->sel = -1;
    snprintf(p->route, sizeof p->route, "%s", dev->v8 ? "cudnn-v8" : "cudnn");
    TC_TRY(s_types(p));
    TC_TRY(s_tensors(p));
    uint64_t limit = 0;
    TC_TRY(s_limit(p, &limit));
    if (dev->v8) {
        TC_TRY(tc_cuda_v8_list(p, limit));
    } else {
        TC_TRY(tc_cuda_v7_prepare(p));
        TC_TRY(tc_cuda_v7_list(p, limit));
    }
    *out = p;
    return 0;
err:
    s_cudnn_destroy(p);
    return rc;
}

/* Where this conv runs: the spec's path, else the framework's choice. */
static int s_route(tc_cuda_ctx_t *dev, const tc_conv_spec_t *spec, tc_gpu_route_t *out)
{
    const tc_conv_config_t *c = &spec->config;
    bool dilated = c->dilation_h != 1 || c->dilation_w != 1;
    bool depthwise = c->c == c->groups && c->groups > 1 && c->k % c->c == 0;
    switch (spec->path) {
    case TC_PATH_LIBRARY:
        *out = TC_GPU_ROUTE_CUDNN;
        return 0;
    case TC_PATH_NATIVE:
        *out = depthwise ? TC_GPU_ROUTE_NATIVE_DEPTHWISE
               : dilated ? TC_GPU_ROUTE_NATIVE_DILATED
                         : TC_GPU_ROUTE_NATIVE;
        return 0;
    default:
        break;
    }
    *out = tc_gpu_route_conv(&dev->rule, &dev->settings, c);
    if (!dev->has_framework)
        return 0;
    /* PyTorch's own answer for this conv decides. */
    tc_fw_t *fw = tc_cuda_framework(dev);
    if (!fw) {
        tc_log_warn("%s: the framework's own choice of conv backend cannot be asked (%s); "
                    "following the ported rule",
                    dev->name, tc_errmsg());
        dev->has_framework = false;
        return 0;
    }
    char backend[64];
    int rc = tc_fw_select(fw, c, backend, sizeof backend);
    if (rc < 0)
        return tc_err_context(rc, "asking PyTorch where it runs this conv");
    if (!backend[0])
        return 0; /* this PyTorch cannot say */
    int theirs = tc_gpu_route_from_backend(backend);
    if (theirs < 0)
        return tc_fail(TC_EUNSUPPORTED, "PyTorch runs this conv on its %s backend, which the "
                                        "agent does not time",
                       backend);
    if ((tc_gpu_route_t)theirs != *out) {
        char label[160];
        tc_conv_config_label(c, label, sizeof label);
        tc_log_warn("%s: PyTorch %s runs %s %s on %s, where the rule %s says %s: following "
                    "PyTorch",
                    dev->name, dev->framework, label, tc_dtype_name(c->dtype), backend,
                    dev->routing, tc_gpu_route_backend(*out));
        *out = (tc_gpu_route_t)theirs;
    }
    return 0;
}

int tc_cuda_plan_create(void *ctx, const tc_conv_spec_t *spec, void **out)
{
    int rc = 0;
    *out = NULL;
    tc_cuda_ctx_t *dev = ctx;
    TC_TRY(tc_cuda_activate(dev));
    tc_gpu_route_t route;
    TC_TRY(s_route(dev, spec, &route));
    s_plan_t *w = calloc(1, sizeof *w);
    if (!w)
        return tc_fail(TC_ENOMEM, "out of memory creating a cuda conv plan");
    if (route == TC_GPU_ROUTE_CUDNN) {
        rc = s_cudnn_create(dev, spec, &w->cudnn);
        if (rc == 0)
            snprintf(w->route, sizeof w->route, "%s", w->cudnn->route);
    } else {
        snprintf(w->route, sizeof w->route, "%s", tc_gpu_route_name(route));
        tc_fw_t *fw = tc_cuda_framework(dev);
        rc = fw ? tc_fw_plan_create(fw, spec, w->route, &w->fw)
                : tc_fail(TC_EUNSUPPORTED, "PyTorch runs this conv with its own %s kernels, "
                                           "which the agent times through PyTorch: %s",
                          w->route, tc_errmsg());
    }
    if (rc < 0) {
        free(w);
        return rc;
    }
    *out = w;
    return 0;
err:
    return rc;
}

const char *tc_cuda_plan_route(void *plan) { return ((s_plan_t *)plan)->route; }

size_t tc_cuda_algo_count(void *plan)
{
    s_plan_t *w = plan;
    return w->fw ? tc_fw_plan_iface.algo_count(w->fw) : w->cudnn->n_cands;
}

const tc_algo_t *tc_cuda_algo(void *plan, size_t i)
{
    s_plan_t *w = plan;
    if (w->fw)
        return tc_fw_plan_iface.algo(w->fw, i);
    return i < w->cudnn->n_cands ? &w->cudnn->cands[i].info : NULL;
}

int tc_cuda_select(void *plan, size_t i)
{
    int rc = 0;
    s_plan_t *w = plan;
    if (w->fw)
        return tc_fw_plan_iface.select(w->fw, i);
    tc_cuda_plan_t *p = w->cudnn;
    if (i >= p->n_cands)
        return tc_fail(TC_EINVAL, "cuda conv plan: no candidate %zu", i);
    TC_TRY(tc_cuda_activate(p->dev));
    const tc_cuda_cand_t *c = &p->cands[i];
    p->sel = -1;
    if (!p->v8)
        TC_TRY(tc_cuda_v7_select(p, c));
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
    s_plan_t *w = plan;
    if (w->fw)
        return tc_fw_plan_iface.run(w->fw, ms);
    tc_cuda_plan_t *p = w->cudnn;
    if (p->sel < 0)
        return tc_fail(TC_EINVAL, "cuda conv plan: no candidate selected before run");
    const tc_cuda_cand_t *c = &p->cands[p->sel];
    tc_cuda_ctx_t *d = p->dev;
    const tc_conv_config_t *cfg = &p->spec.config;
    TC_TRY(tc_cuda_activate(d));
    /* This run's copy of the inputs. */
    p->last_rot = p->rot;
    p->buf[p->in_t[0]] = p->in[p->rot][0];
    p->buf[p->in_t[1]] = p->in[p->rot][1];
    p->rot = (p->rot + 1) % p->n_rot;
    TC_TRY(tc_cuda_timed_begin(d));
    if (p->v8)
        TC_TRY(tc_cuda_v8_launch(p, c));
    else
        TC_TRY(tc_cuda_v7_launch(p, c));
    size_t pq = (size_t)tc_conv_out_h(cfg) * tc_conv_out_w(cfg);
    int nhwc = cfg->layout == TRAINCAST__V1__LAYOUT__LAYOUT_NHWC;
    if (cfg->bias && p->spec.direction == DIR_FWD)
        TC_CUDA_TRY(tc_cuda_bias_add(p->buf[TC_TENSOR_Y], p->buf[TC_TENSOR_B], cfg->n, cfg->k, pq,
                                     nhwc, p->fill_kind, d->stream));
    if (cfg->bias && p->spec.direction == DIR_BWD_FILTER)
        TC_CUDA_TRY(tc_cuda_bias_grad(p->buf[TC_TENSOR_DY], p->buf[TC_TENSOR_DB], p->bias_acc,
                                      cfg->n, cfg->k, pq, nhwc, p->fill_kind, d->stream));
    return tc_cuda_timed_end(d, ms);
err:
    return rc;
}

int tc_cuda_read(void *plan, tc_tensor_t t, float *out, size_t count)
{
    int rc = 0;
    s_plan_t *w = plan;
    if (w->fw)
        return tc_fw_plan_iface.read(w->fw, t, out, count);
    tc_cuda_plan_t *p = w->cudnn;
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
    /* An input as the last run read it. */
    const void *src = p->buf[t];
    for (int i = 0; i < 2; i++)
        if (t == p->in_t[i])
            src = p->in[p->last_rot][i];
    host = malloc(n * p->elem + 1);
    if (!host)
        TC_FAIL_GOTO(TC_ENOMEM, "out of memory reading tensor %s", tc_tensor_name(t));
    TC_CUDA_TRY(cudaStreamSynchronize(p->dev->stream));
    TC_CUDA_TRY(cudaMemcpy(host, src, n * p->elem, cudaMemcpyDeviceToHost));
    /* Dimensions (a, b, h, w) of the logical order: NCHW activations or
     * KCRS filters; NHWC / KRSC is stored as (a, h, w, b). */
    size_t a, b, hh, ww;
    if (t == TC_TENSOR_W || t == TC_TENSOR_DW)
        a = c->k, b = c->c / c->groups, hh = c->r, ww = c->s;
    else if (t == TC_TENSOR_X || t == TC_TENSOR_DX)
        a = c->n, b = c->c, hh = c->h, ww = c->w;
    else if (t == TC_TENSOR_B || t == TC_TENSOR_DB)
        a = 1, b = c->k, hh = 1, ww = 1;
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
                        v = p->fill_kind == 1 ? tc_cuda_half_to_float(h16)
                                            : tc_cuda_bf16_to_float(h16);
                    }
                    out[logical] = v;
                }
err:
    free(host);
    return rc;
}
