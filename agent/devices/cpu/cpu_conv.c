/* Conv plans on oneDNN, calling it the way PyTorch 1.13 does on the CPU
 * (aten/src/ATen/native/mkldnn/Conv.cpp through ideep's conv.hpp):
 *
 * - Tensors in and out are plain framework tensors: NCHW, or for the NHWC
 *   layout channels-last. Weights are a layer's parameter, OIHW either way.
 *   A channels-last conv makes them channels-last (OHWI) first, a copy on
 *   every call unless their layouts coincide (one input channel per group,
 *   or a 1x1 kernel), and returns its weight gradient made dense (OIHW) and
 *   then channels-last, two copies (mkldnn_convolution and
 *   mkldnn_convolution_backward_weights in Conv.cpp; weight.contiguous() in
 *   mkldnn_convolution_backward); run() makes the same copies.
 * - The conv primitive is created with format_tag::any for weights (and for
 *   activations in NCHW; channels-last activations stay NHWC), so oneDNN
 *   picks its blocked layouts; every plain tensor whose layout differs is
 *   reordered in before and out after the conv, inside the timed region,
 *   as ideep does on every call (weights included: in training they change
 *   every step).
 * - Forward uses prop_kind forward_training; backward-data and
 *   backward-weights take a forward primitive descriptor as hint.
 *   Algorithm convolution_direct; scratchpad mode user.
 * - Bias, when the layer has one (the config's bias flag): fused into the
 *   forward primitive, and its gradient computed by the backward-weights
 *   primitive together with the weights' (ideep's compute_v2 with a
 *   diff_bias, as mkldnn_convolution_backward_weights calls it when the
 *   bias is defined). Backward-data has no bias term.
 * - ideep caches the forward primitive descriptor (and the hints) but
 *   creates the backward ones on every call; primitives and reorders are
 *   created on every call from oneDNN's primitive cache. run() does the
 *   same, so those host costs are in the measured time.
 * - PyTorch's CPU allocator (posix_memalign, 64-byte aligned) hands out a
 *   new output tensor, new blocked copies and a new scratchpad on every
 *   call and frees all but the output when the call returns. run() does
 *   the same inside the timed region, so first-touch page faults on fresh
 *   memory are paid as they are in training (on virtual machines they can
 *   cost more than the convolution; docs/conv-benchmarks.md).
 *
 * With cold operands (operands.h, cpu_cold.h) the inputs and outputs rotate
 * through K copies: run() points the user memories at the next copy
 * (dnnl_memory_set_data_handle) before the timed region, and the output
 * goes to its copy instead of a new allocation.
 *
 * Candidates: every implementation oneDNN's primitive descriptor iterator
 * offers for convolution_direct, in its order (the first is what PyTorch
 * gets), plus the convolution_winograd ones under the exhaustive policy.
 * Reference implementations after the first candidate are listed but not
 * timed. Selecting and running a candidate is in cpu_conv_run.c; the plan
 * they share is in cpu_conv_plan.h. */
#include "cpu_conv_plan.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const dnnl_alg_kind_t s_algs[2] = {dnnl_convolution_direct, dnnl_convolution_winograd};

/* What PyTorch's CPU allocator does: 64-byte aligned memory, untouched. */
void *tc_cpu_dnnl_alloc(size_t bytes)
{
    void *p = NULL;
    if (posix_memalign(&p, 64, bytes ? bytes : 64) != 0)
        return NULL;
    return p;
}

static int s_ndims_weights(const tc_conv_config_t *c) { return c->groups > 1 ? 5 : 4; }

static void s_dims(const tc_conv_config_t *c, tc_tensor_t t, dnnl_dims_t d, int *nd)
{
    int64_t p = tc_conv_out_h(c), q = tc_conv_out_w(c), g = c->groups;
    switch (t) {
    case TC_TENSOR_X:
    case TC_TENSOR_DX:
        *nd = 4, d[0] = c->n, d[1] = c->c, d[2] = c->h, d[3] = c->w;
        break;
    case TC_TENSOR_Y:
    case TC_TENSOR_DY:
        *nd = 4, d[0] = c->n, d[1] = c->k, d[2] = p, d[3] = q;
        break;
    case TC_TENSOR_W:
    case TC_TENSOR_DW:
        if (g > 1)
            *nd = 5, d[0] = g, d[1] = c->k / g, d[2] = c->c / g, d[3] = c->r, d[4] = c->s;
        else
            *nd = 4, d[0] = c->k, d[1] = c->c, d[2] = c->r, d[3] = c->s;
        break;
    default:
        *nd = 1, d[0] = c->k;
        break;
    }
}

static dnnl_format_tag_t s_weight_tag(const tc_conv_config_t *c, bool nhwc)
{
    if (s_ndims_weights(c) == 5)
        return nhwc ? dnnl_gohwi : dnnl_goihw;
    return nhwc ? dnnl_ohwi : dnnl_oihw;
}

/* The framework's tag for tensor t: plain, in the plan's layout; the
 * weights a parameter (OIHW), their gradient channels-last when the conv
 * is (the .to(ChannelsLast) that mkldnn_convolution_backward_weights
 * returns). */
static dnnl_format_tag_t s_user_tag(const tc_conv_config_t *c, tc_tensor_t t, bool logical)
{
    bool nhwc = !logical && c->layout == TRAINCAST__V1__LAYOUT__LAYOUT_NHWC;
    switch (t) {
    case TC_TENSOR_W:
        return s_weight_tag(c, false);
    case TC_TENSOR_DW:
        return s_weight_tag(c, nhwc);
    case TC_TENSOR_B:
    case TC_TENSOR_DB:
        return dnnl_x;
    default:
        return nhwc ? dnnl_nhwc : dnnl_nchw;
    }
}

static int s_md(const tc_cpu_plan_t *p, tc_tensor_t t, dnnl_data_type_t dt, dnnl_format_tag_t tag,
                dnnl_memory_desc_t *md)
{
    int rc = 0;
    dnnl_dims_t d;
    int nd;
    s_dims(&p->spec.config, t, d, &nd);
    TC_DNNL_TRY(dnnl_memory_desc_init_by_tag(md, nd, d, dt, tag));
    return 0;
err:
    return rc;
}

/* The copy between tensor t and ideep that a channels-last conv makes on
 * every call, as a tag (dnnl_format_tag_undef: none). Weights: OHWI, unless
 * the OIHW parameter is already channels-last contiguous (PyTorch's
 * compute_channels_last_contiguous_2d skips dimensions of size one: one
 * input channel per group, or a 1x1 kernel), when contiguous() returns it.
 * Weight gradient: always the dense OIHW tensor mkldnn_to_dense makes
 * before .to(ChannelsLast), whose suggest_memory_format is never
 * channels-last for a dense OIHW tensor of more than one channel. */
static dnnl_format_tag_t s_fw_tag(const tc_conv_config_t *c, tc_tensor_t t)
{
    if (c->layout != TRAINCAST__V1__LAYOUT__LAYOUT_NHWC)
        return dnnl_format_tag_undef;
    if (t == TC_TENSOR_W && c->c / c->groups > 1 && c->r * c->s > 1)
        return s_weight_tag(c, true);
    if (t == TC_TENSOR_DW)
        return s_weight_tag(c, false);
    return dnnl_format_tag_undef;
}

/* One reorder between two memories, created and run now (as ideep does). */
int tc_cpu_dnnl_reorder(tc_cpu_plan_t *p, dnnl_memory_t from, dnnl_memory_t to)
{
    int rc = 0;
    const dnnl_memory_desc_t *from_md = NULL, *to_md = NULL;
    dnnl_primitive_desc_t rpd = NULL;
    dnnl_primitive_t rprim = NULL;
    TC_DNNL_TRY(dnnl_memory_get_memory_desc(from, &from_md));
    TC_DNNL_TRY(dnnl_memory_get_memory_desc(to, &to_md));
    TC_DNNL_TRY(dnnl_reorder_primitive_desc_create(&rpd, from_md, p->dev->engine, to_md,
                                                   p->dev->engine, NULL));
    TC_DNNL_TRY(dnnl_primitive_create(&rprim, rpd));
    dnnl_exec_arg_t args[2] = {{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, to}};
    TC_DNNL_TRY(dnnl_primitive_execute(rprim, p->dev->stream, 2, args));
err:
    if (rprim)
        dnnl_primitive_destroy(rprim);
    if (rpd)
        dnnl_primitive_desc_destroy(rpd);
    return rc;
}

/* Memory descriptors with format any (channels-last activations stay nhwc). */
static int s_any_md(const tc_cpu_plan_t *p, tc_tensor_t t, dnnl_memory_desc_t *md)
{
    bool nhwc = p->spec.config.layout == TRAINCAST__V1__LAYOUT__LAYOUT_NHWC;
    bool act = t == TC_TENSOR_X || t == TC_TENSOR_DX || t == TC_TENSOR_Y || t == TC_TENSOR_DY;
    return s_md(p, t, p->dt, act && nhwc ? dnnl_nhwc : dnnl_format_tag_any, md);
}

/* The op descriptor of algorithm slot a (and the forward hint for backward
 * directions). Returns 0, or TC_EUNSUPPORTED with oneDNN's reason. */
static int s_build_op(tc_cpu_plan_t *p, int a)
{
    int rc = 0;
    const tc_conv_config_t *c = &p->spec.config;
    dnnl_dims_t strides = {c->stride_h, c->stride_w};
    dnnl_dims_t dil = {c->dilation_h - 1, c->dilation_w - 1};
    dnnl_dims_t pad = {c->pad_h, c->pad_w};
    dnnl_memory_desc_t x, w, y, b;
    TC_TRY(s_any_md(p, TC_TENSOR_X, &x));
    TC_TRY(s_any_md(p, TC_TENSOR_W, &w));
    TC_TRY(s_any_md(p, TC_TENSOR_Y, &y));
    TC_TRY(s_md(p, TC_TENSOR_B, p->dt, dnnl_x, &b));
    const dnnl_memory_desc_t *bias = c->bias ? &b : NULL;
    dnnl_convolution_desc_t fwd;
    TC_DNNL_TRY(dnnl_dilated_convolution_forward_desc_init(&fwd, dnnl_forward_training, s_algs[a],
                                                           &x, &w, bias, &y, strides, dil, pad,
                                                           pad));
    switch (p->spec.direction) {
    case TRAINCAST__V1__DIRECTION__DIRECTION_BWD_DATA:
        TC_DNNL_TRY(dnnl_dilated_convolution_backward_data_desc_init(&p->op[a], s_algs[a], &x, &w,
                                                                    &y, strides, dil, pad, pad));
        break;
    case TRAINCAST__V1__DIRECTION__DIRECTION_BWD_FILTER:
        TC_DNNL_TRY(dnnl_dilated_convolution_backward_weights_desc_init(
            &p->op[a], s_algs[a], &x, &w, bias, &y, strides, dil, pad, pad));
        break;
    default:
        p->op[a] = fwd;
        break;
    }
    if (p->bwd) {
        dnnl_status_t st = dnnl_primitive_desc_create(&p->hint[a], &fwd, NULL, p->dev->engine, NULL);
        if (st != dnnl_success) {
            p->hint[a] = NULL;
            return tc_fail(TC_EUNSUPPORTED, "oneDNN has no forward %s convolution to hint the "
                                            "backward pass (%s)",
                           a ? "winograd" : "direct", dnnl_status2str(st));
        }
    }
    p->op_ok[a] = true;
    return 0;
err:
    return rc;
}

static int s_add_cand(tc_cpu_plan_t *p, const tc_cpu_dnnl_cand_t *c)
{
    tc_cpu_dnnl_cand_t *n = realloc(p->cands, (p->n_cands + 1) * sizeof *n);
    if (!n)
        return tc_fail(TC_ENOMEM, "out of memory listing oneDNN implementations");
    p->cands = n;
    p->cands[p->n_cands] = *c;
    p->cands[p->n_cands].info.id = (int32_t)p->n_cands;
    p->n_cands++;
    return 0;
}

/* Walk the implementations oneDNN offers for slot a. */
static int s_list_impls(tc_cpu_plan_t *p, int a)
{
    int rc = 0;
    dnnl_primitive_desc_iterator_t it = NULL;
    dnnl_status_t st = dnnl_primitive_desc_iterator_create(&it, &p->op[a], p->attr,
                                                           p->dev->engine, p->hint[a]);
    if (st != dnnl_success) {
        tc_cpu_dnnl_cand_t c = {.alg_slot = a, .impl = -1};
        snprintf(c.info.name, sizeof c.info.name, "%s", a ? "winograd" : "direct");
        c.info.status = TRAINCAST__V1__ALGO_STATUS__ALGO_STATUS_NOT_SUPPORTED;
        snprintf(c.info.message, sizeof c.info.message, "oneDNN has no %s implementation for "
                 "this convolution on this CPU (%s)", a ? "winograd" : "direct",
                 dnnl_status2str(st));
        return s_add_cand(p, &c);
    }
    for (int impl = 0;; impl++) {
        dnnl_primitive_desc_t pd = dnnl_primitive_desc_iterator_fetch(it);
        if (!pd)
            TC_FAIL_GOTO(TC_ELIB, "oneDNN: dnnl_primitive_desc_iterator_fetch returned no "
                                  "primitive descriptor");
        const char *impl_name = "unknown";
        dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl_name);
        tc_cpu_dnnl_cand_t c = {.alg_slot = a, .impl = impl};
        if (a && !strstr(impl_name, "wino"))
            snprintf(c.info.name, sizeof c.info.name, "winograd:%s", impl_name);
        else
            snprintf(c.info.name, sizeof c.info.name, "%s", impl_name);
        const dnnl_memory_desc_t *sp = dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
        c.info.workspace_bytes = sp ? dnnl_memory_desc_get_size(sp) : 0;
        c.info.status = TRAINCAST__V1__ALGO_STATUS__ALGO_STATUS_OK;
        if (p->n_cands > 0 && strncmp(impl_name, "ref", 3) == 0) {
            c.info.status = TRAINCAST__V1__ALGO_STATUS__ALGO_STATUS_SKIPPED;
            snprintf(c.info.message, sizeof c.info.message, "reference implementation, never "
                     "chosen while an optimized one exists; not timed");
        }
        dnnl_primitive_desc_destroy(pd);
        TC_TRY(s_add_cand(p, &c));
        st = dnnl_primitive_desc_iterator_next(it);
        if (st == dnnl_iterator_ends)
            break;
        if (st != dnnl_success)
            TC_FAIL_GOTO(TC_ELIB, "oneDNN: dnnl_primitive_desc_iterator_next failed: %s",
                         dnnl_status2str(st));
    }
err:
    dnnl_primitive_desc_iterator_destroy(it);
    return rc;
}

static void s_bind(tc_cpu_plan_t *p, int arg, tc_tensor_t t, bool input)
{
    p->binds[p->n_binds++] = (tc_cpu_dnnl_binding_t){arg, t, input};
}

/* Allocate the framework tensor t and, for inputs, fill it with random data
 * (generated in logical order as fp32, reordered into the tensor). */
static int s_alloc_user(tc_cpu_plan_t *p, tc_tensor_t t, bool input, uint64_t seed)
{
    int rc = 0;
    float *tmp = NULL;
    dnnl_memory_t tmp_mem = NULL;
    TC_TRY(s_md(p, t, p->dt, s_user_tag(&p->spec.config, t, false), &p->user_md[t]));
    dnnl_format_tag_t fw = s_fw_tag(&p->spec.config, t);
    if (fw != dnnl_format_tag_undef) {
        /* Its buffer comes with each run, as PyTorch allocates it per call. */
        TC_TRY(s_md(p, t, p->dt, fw, &p->fw_md[t]));
        TC_DNNL_TRY(dnnl_memory_create(&p->fw_mem[t], &p->fw_md[t], p->dev->engine,
                                       DNNL_MEMORY_NONE));
    }
    if (!input) {
        /* Outputs get a new buffer on every run; this one holds zeros until then. */
        size_t bytes = dnnl_memory_desc_get_size(&p->user_md[t]);
        p->out_buf[t] = tc_cpu_dnnl_alloc(bytes);
        if (!p->out_buf[t])
            TC_FAIL_GOTO(TC_ENOMEM, "out of memory for tensor %s", tc_tensor_name(t));
        memset(p->out_buf[t], 0, bytes);
        TC_DNNL_TRY(dnnl_memory_create(&p->user_mem[t], &p->user_md[t], p->dev->engine,
                                       p->out_buf[t]));
        return 0;
    }
    TC_DNNL_TRY(dnnl_memory_create(&p->user_mem[t], &p->user_md[t], p->dev->engine,
                                   DNNL_MEMORY_ALLOCATE));
    size_t count = tc_tensor_count(&p->spec.config, t);
    tmp = malloc(count * sizeof *tmp);
    if (!tmp)
        TC_FAIL_GOTO(TC_ENOMEM, "out of memory filling tensor %s (%zu values)", tc_tensor_name(t),
                     count);
    for (size_t i = 0; i < count; i++)
        tmp[i] = tc_random_value(seed, i);
    dnnl_memory_desc_t md;
    TC_TRY(s_md(p, t, dnnl_f32, s_user_tag(&p->spec.config, t, true), &md));
    TC_DNNL_TRY(dnnl_memory_create(&tmp_mem, &md, p->dev->engine, tmp));
    TC_TRY(tc_cpu_dnnl_reorder(p, tmp_mem, p->user_mem[t]));
    TC_DNNL_TRY(dnnl_stream_wait(p->dev->stream));
err:
    if (tmp_mem)
        dnnl_memory_destroy(tmp_mem);
    free(tmp);
    return rc;
}

/* With cold operands, the inputs in K copies and the outputs in K buffers
 * (cpu_cold.h); each memory then points at the copy of the run. The buffer
 * oneDNN allocated for an input is freed when its first copy replaces it. */
static int s_copies(tc_cpu_plan_t *p)
{
    int rc = 0;
    uint64_t bytes = 0;
    for (int i = 0; i < p->n_binds; i++)
        bytes += dnnl_memory_desc_get_size(&p->user_md[p->binds[i].t]);
    TC_TRY(tc_cpu_cold_init(&p->cold, p->dev, bytes));
    for (int i = 0; i < p->n_binds; i++) {
        tc_tensor_t t = p->binds[i].t;
        if (!p->binds[i].input) {
            TC_TRY(tc_cpu_cold_add_output(&p->cold, t, tc_tensor_name(t),
                                          dnnl_memory_desc_get_size(&p->user_md[t])));
            continue;
        }
        void *first = NULL;
        TC_DNNL_TRY(dnnl_memory_get_data_handle(p->user_mem[t], &first));
        TC_TRY(tc_cpu_cold_add_input(&p->cold, t, tc_tensor_name(t), first,
                                     dnnl_memory_desc_get_size(&p->user_md[t])));
        void *copy = tc_cpu_cold_input(&p->cold, t, first);
        if (copy != first) /* never set oneDNN's own buffer again: that frees it */
            TC_DNNL_TRY(dnnl_memory_set_data_handle(p->user_mem[t], copy));
    }
err:
    return rc;
}

void tc_cpu_dnnl_destroy(void *plan)
{
    tc_cpu_plan_t *p = plan;
    if (!p)
        return;
    tc_cpu_dnnl_unselect(p);
    for (int a = 0; a < 2; a++) {
        if (p->hint[a])
            dnnl_primitive_desc_destroy(p->hint[a]);
    }
    for (int t = 0; t < TC_TENSOR_COUNT; t++) {
        if (p->user_mem[t])
            dnnl_memory_destroy(p->user_mem[t]);
        if (p->fw_mem[t])
            dnnl_memory_destroy(p->fw_mem[t]);
        free(p->out_buf[t]);
    }
    tc_cpu_cold_release(&p->cold);
    if (p->attr)
        dnnl_primitive_attr_destroy(p->attr);
    free(p->cands);
    free(p);
}

int tc_cpu_dnnl_create(tc_cpu_ctx_t *dev, const tc_conv_spec_t *spec, void **out)
{
    int rc = 0;
    *out = NULL;
    const tc_conv_config_t *c = &spec->config;
    if (c->dtype == TRAINCAST__V1__DTYPE__DTYPE_FP16 || c->dtype == TRAINCAST__V1__DTYPE__DTYPE_TF32)
        return tc_fail(TC_EUNSUPPORTED, "the cpu backend runs fp32 and bf16 convolutions, not %s "
                                        "(a GPU type); use --dtype fp32 or bf16",
                       tc_dtype_name(c->dtype));
    if (c->layout != TRAINCAST__V1__LAYOUT__LAYOUT_NCHW &&
        c->layout != TRAINCAST__V1__LAYOUT__LAYOUT_NHWC)
        return tc_fail(TC_EINVAL, "conv config: layout must be nchw or nhwc");
    tc_cpu_plan_t *p = calloc(1, sizeof *p);
    if (!p)
        return tc_fail(TC_ENOMEM, "out of memory creating a cpu conv plan");
    p->dev = dev;
    p->spec = *spec;
    p->sel = -1;
    p->dt = c->dtype == TRAINCAST__V1__DTYPE__DTYPE_BF16 ? dnnl_bf16 : dnnl_f32;
    p->bwd = spec->direction != TRAINCAST__V1__DIRECTION__DIRECTION_FWD;
    TC_TRY(tc_cpu_apply_threads(dev));
    TC_DNNL_TRY(dnnl_primitive_attr_create(&p->attr));
    TC_DNNL_TRY(dnnl_primitive_attr_set_scratchpad_mode(p->attr, dnnl_scratchpad_mode_user));

    uint64_t seed = spec->seed;
    switch (spec->direction) {
    case TRAINCAST__V1__DIRECTION__DIRECTION_BWD_DATA:
        s_bind(p, DNNL_ARG_DIFF_DST, TC_TENSOR_DY, true);
        s_bind(p, DNNL_ARG_WEIGHTS, TC_TENSOR_W, true);
        s_bind(p, DNNL_ARG_DIFF_SRC, TC_TENSOR_DX, false);
        break;
    case TRAINCAST__V1__DIRECTION__DIRECTION_BWD_FILTER:
        s_bind(p, DNNL_ARG_SRC, TC_TENSOR_X, true);
        s_bind(p, DNNL_ARG_DIFF_DST, TC_TENSOR_DY, true);
        s_bind(p, DNNL_ARG_DIFF_WEIGHTS, TC_TENSOR_DW, false);
        if (c->bias)
            s_bind(p, DNNL_ARG_DIFF_BIAS, TC_TENSOR_DB, false);
        break;
    default:
        s_bind(p, DNNL_ARG_SRC, TC_TENSOR_X, true);
        s_bind(p, DNNL_ARG_WEIGHTS, TC_TENSOR_W, true);
        if (c->bias)
            s_bind(p, DNNL_ARG_BIAS, TC_TENSOR_B, true);
        s_bind(p, DNNL_ARG_DST, TC_TENSOR_Y, false);
        break;
    }
    for (int i = 0; i < p->n_binds; i++)
        TC_TRY(s_alloc_user(p, p->binds[i].t, p->binds[i].input, seed + (uint64_t)p->binds[i].t));
    TC_TRY(s_copies(p));

    rc = s_build_op(p, 0);
    if (rc < 0)
        goto err;
    TC_TRY(s_list_impls(p, 0));
    if (p->cands[0].impl < 0)
        TC_FAIL_GOTO(TC_EUNSUPPORTED, "%s", p->cands[0].info.message);
    if (spec->policy == TRAINCAST__V1__POLICY__POLICY_EXHAUSTIVE) {
        rc = s_build_op(p, 1);
        if (rc == 0) {
            TC_TRY(s_list_impls(p, 1));
        } else {
            tc_cpu_dnnl_cand_t wc = {.alg_slot = 1, .impl = -1};
            snprintf(wc.info.name, sizeof wc.info.name, "winograd");
            wc.info.status = TRAINCAST__V1__ALGO_STATUS__ALGO_STATUS_NOT_SUPPORTED;
            snprintf(wc.info.message, sizeof wc.info.message, "%s", tc_errmsg());
            TC_TRY(s_add_cand(p, &wc));
            rc = 0;
        }
    }
    *out = p;
    return 0;
err:
    tc_cpu_dnnl_destroy(p);
    return rc;
}

size_t tc_cpu_dnnl_algo_count(void *plan) { return ((tc_cpu_plan_t *)plan)->n_cands; }

const tc_algo_t *tc_cpu_dnnl_algo(void *plan, size_t i)
{
    tc_cpu_plan_t *p = plan;
    return i < p->n_cands ? &p->cands[i].info : NULL;
}

int tc_cpu_dnnl_read(void *plan, tc_tensor_t t, float *out, size_t count)
{
    int rc = 0;
    tc_cpu_plan_t *p = plan;
    dnnl_memory_t mem = NULL;
    if ((unsigned)t >= TC_TENSOR_COUNT || !p->user_mem[t])
        return tc_fail(TC_ENOTFOUND, "this %s plan has no tensor %s",
                       tc_direction_name(p->spec.direction), tc_tensor_name(t));
    size_t want = tc_tensor_count(&p->spec.config, t);
    if (count != want)
        return tc_fail(TC_EINVAL, "reading tensor %s: it has %zu values, not %zu",
                       tc_tensor_name(t), want, count);
    dnnl_memory_desc_t md;
    TC_TRY(s_md(p, t, dnnl_f32, s_user_tag(&p->spec.config, t, true), &md));
    TC_DNNL_TRY(dnnl_memory_create(&mem, &md, p->dev->engine, out));
    TC_TRY(tc_cpu_dnnl_reorder(p, p->user_mem[t], mem));
    TC_DNNL_TRY(dnnl_stream_wait(p->dev->stream));
err:
    if (mem)
        dnnl_memory_destroy(mem);
    return rc;
}
