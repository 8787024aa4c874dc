/* cuDNN's graph (v8) API, called as PyTorch 2.x calls it by default
 * (aten/src/ATen/native/cudnn/Conv_v8.cpp through cudnn-frontend; 1.13 with
 * TORCH_CUDNN_V8_API_ENABLED=1), here on cuDNN's C backend API directly:
 *
 * - one operation graph per (config, direction): the tensors x, y, w
 *   (unique ids 'x', 'y', 'w'; for backward-data x is the input gradient,
 *   for backward-filter w the weight gradient), in NCHW or channels-last
 *   strides, aligned as PyTorch's getAlignment() finds its allocations
 *   (16 bytes in 1.13, 32 in 2.x), a convolution descriptor computing in
 *   fp32 (also for fp16 and bf16), alpha 1 and beta 0;
 * - heuristic mode (cudnn.benchmark=False, run_single_conv with
 *   try_configs): the engine configurations of the instant heuristics
 *   (mode B with TORCH_CUDNN_USE_HEURISTIC_MODE_B=1), each filtered as
 *   filterEngineConfigs does (no down-converting engine; no tensor-core
 *   engine for fp32 when TF32 is not allowed; no non-deterministic one in
 *   deterministic mode), built in order until one builds and its workspace
 *   can be allocated; only when none does, the same with the fallback list.
 *   The heuristic policy times that one; the configurations after it are
 *   listed unbuilt. A plan that fails to build for a reason of this process
 *   (a library not loaded, a runtime compilation: tc_gpu_plan_failure)
 *   fails the conv instead of letting the next engine stand in;
 * - benchmark mode (get_plans_from_find): the plans of both lists, timed up
 *   to torch.backends.cudnn.benchmark_limit of them (10 by default) and
 *   the fastest kept: the exhaustive policy times those and marks the rest
 *   skipped.
 *
 * Each candidate is named by its engine and knob choices as cudnn-frontend
 * tags them ("eng34_k2=1_k3=0"). Every backend descriptor has one owner:
 * the graph state here, or the candidate that holds its execution plan. */
#include "cuda_internal.h"

#include "tc_log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DIR_BWD_DATA TRAINCAST__V1__DIRECTION__DIRECTION_BWD_DATA
#define DIR_BWD_FILTER TRAINCAST__V1__DIRECTION__DIRECTION_BWD_FILTER

#define S_MAX_CFGS 256
#define S_MAX_KNOBS 32

typedef cudnnBackendDescriptor_t s_desc_t;

/* tc_gpu_plan_failure (gpu_route.c, free of CUDA headers) numbers cuDNN's
 * statuses itself. */
_Static_assert(CUDNN_STATUS_NOT_SUPPORTED == 3000 &&
                   CUDNN_STATUS_NOT_SUPPORTED_RUNTIME_PREREQUISITE_MISSING == 3008 &&
                   CUDNN_STATUS_NOT_SUPPORTED_SUBLIBRARY_UNAVAILABLE == 3009 &&
                   CUDNN_STATUS_SUBLIBRARY_LOADING_FAILED == 1008 &&
                   CUDNN_STATUS_INTERNAL_ERROR_COMPILATION_FAILED == 4001 &&
                   CUDNN_STATUS_NOT_SUPPORTED_INCOMPATIBLE_CUDART == 3006,
               "cuDNN's status numbers moved: update tc_gpu_plan_failure");

struct tc_cuda_v8 {
    s_desc_t x, y, w, conv, op, graph;
    s_desc_t *cfgs;   /* engine configurations of both lists */
    size_t n_cfgs;
};

/* The handle attributes are deprecated in cuDNN 9 in favour of device
 * properties, but cudnn-frontend (and so PyTorch) still sets them. */
#define S_GRAPH_HANDLE ((cudnnBackendAttributeName_t)800)  /* CUDNN_ATTR_OPERATIONGRAPH_HANDLE */
#define S_PLAN_HANDLE ((cudnnBackendAttributeName_t)400)   /* CUDNN_ATTR_EXECUTION_PLAN_HANDLE */

static int s_create(cudnnBackendDescriptorType_t type, s_desc_t *out)
{
    int rc = 0;
    *out = NULL;
    TC_CUDNN_TRY(cudnnBackendCreateDescriptor(type, out));
    return 0;
err:
    return rc;
}

static void s_destroy(s_desc_t *d)
{
    if (*d)
        cudnnBackendDestroyDescriptor(*d);
    *d = NULL;
}

/* One 4-d tensor descriptor (dims in logical NCHW / KCRS order). */
static int s_tensor(const tc_cuda_plan_t *p, const int64_t dims[4], int64_t uid, s_desc_t *out)
{
    int rc = 0;
    bool nhwc = p->spec.config.layout == TRAINCAST__V1__LAYOUT__LAYOUT_NHWC;
    int64_t strides[4];
    if (nhwc) {
        strides[1] = 1;
        strides[3] = dims[1];
        strides[2] = dims[3] * dims[1];
        strides[0] = dims[2] * dims[3] * dims[1];
    } else {
        strides[3] = 1;
        strides[2] = dims[3];
        strides[1] = dims[2] * dims[3];
        strides[0] = dims[1] * dims[2] * dims[3];
    }
    /* PyTorch's getAlignment() of an allocation (its blocks are aligned to
     * 512 bytes, cudaMalloc's to 256): 16 in 1.13, 32 in 2.x. */
    int64_t alignment = p->dev->rule.major >= 2 ? 32 : 16;
    cudnnDataType_t dt = p->data_type;
    TC_TRY(s_create(CUDNN_BACKEND_TENSOR_DESCRIPTOR, out));
    TC_CUDNN_TRY(cudnnBackendSetAttribute(*out, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE,
                                          1, &dt));
    TC_CUDNN_TRY(cudnnBackendSetAttribute(*out, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, 4,
                                          dims));
    TC_CUDNN_TRY(cudnnBackendSetAttribute(*out, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, 4,
                                          strides));
    TC_CUDNN_TRY(cudnnBackendSetAttribute(*out, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1,
                                          &uid));
    TC_CUDNN_TRY(cudnnBackendSetAttribute(*out, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT,
                                          CUDNN_TYPE_INT64, 1, &alignment));
    TC_CUDNN_TRY(cudnnBackendFinalize(*out));
    return 0;
err:
    s_destroy(out);
    return rc;
}

/* The operation graph of the plan's direction (build_opgraph). */
static int s_graph(tc_cuda_plan_t *p, struct tc_cuda_v8 *v)
{
    int rc = 0;
    const tc_conv_config_t *c = &p->spec.config;
    const int64_t xd[4] = {c->n, c->c, c->h, c->w};
    const int64_t yd[4] = {c->n, c->k, tc_conv_out_h(c), tc_conv_out_w(c)};
    const int64_t wd[4] = {c->k, c->c / c->groups, c->r, c->s};
    TC_TRY(s_tensor(p, xd, 'x', &v->x));
    TC_TRY(s_tensor(p, yd, 'y', &v->y));
    TC_TRY(s_tensor(p, wd, 'w', &v->w));

    /* getConvDescriptor: fp32 compute for fp16 and bf16 data too. */
    cudnnDataType_t comp = CUDNN_DATA_FLOAT;
    cudnnConvolutionMode_t mode = CUDNN_CROSS_CORRELATION;
    int64_t dims = 2;
    const int64_t dil[2] = {c->dilation_h, c->dilation_w};
    const int64_t str[2] = {c->stride_h, c->stride_w};
    const int64_t pad[2] = {c->pad_h, c->pad_w};
    TC_TRY(s_create(CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR, &v->conv));
    TC_CUDNN_TRY(cudnnBackendSetAttribute(v->conv, CUDNN_ATTR_CONVOLUTION_COMP_TYPE,
                                          CUDNN_TYPE_DATA_TYPE, 1, &comp));
    TC_CUDNN_TRY(cudnnBackendSetAttribute(v->conv, CUDNN_ATTR_CONVOLUTION_CONV_MODE,
                                          CUDNN_TYPE_CONVOLUTION_MODE, 1, &mode));
    TC_CUDNN_TRY(cudnnBackendSetAttribute(v->conv, CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS,
                                          CUDNN_TYPE_INT64, 1, &dims));
    TC_CUDNN_TRY(cudnnBackendSetAttribute(v->conv, CUDNN_ATTR_CONVOLUTION_DILATIONS,
                                          CUDNN_TYPE_INT64, 2, dil));
    TC_CUDNN_TRY(cudnnBackendSetAttribute(v->conv, CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES,
                                          CUDNN_TYPE_INT64, 2, str));
    TC_CUDNN_TRY(cudnnBackendSetAttribute(v->conv, CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS,
                                          CUDNN_TYPE_INT64, 2, pad));
    TC_CUDNN_TRY(cudnnBackendSetAttribute(v->conv, CUDNN_ATTR_CONVOLUTION_POST_PADDINGS,
                                          CUDNN_TYPE_INT64, 2, pad));
    TC_CUDNN_TRY(cudnnBackendFinalize(v->conv));

    float alpha = 1.0f, beta = 0.0f;
    if (p->spec.direction == DIR_BWD_DATA) {
        TC_TRY(s_create(CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR, &v->op));
        TC_CUDNN_TRY(cudnnBackendSetAttribute(v->op, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DX,
                                              CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &v->x));
        TC_CUDNN_TRY(cudnnBackendSetAttribute(v->op, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DY,
                                              CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &v->y));
        TC_CUDNN_TRY(cudnnBackendSetAttribute(v->op, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_W,
                                              CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &v->w));
        TC_CUDNN_TRY(cudnnBackendSetAttribute(v->op,
                                              CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_CONV_DESC,
                                              CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &v->conv));
        TC_CUDNN_TRY(cudnnBackendSetAttribute(v->op, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_ALPHA,
                                              CUDNN_TYPE_FLOAT, 1, &alpha));
        TC_CUDNN_TRY(cudnnBackendSetAttribute(v->op, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_BETA,
                                              CUDNN_TYPE_FLOAT, 1, &beta));
    } else if (p->spec.direction == DIR_BWD_FILTER) {
        TC_TRY(s_create(CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_FILTER_DESCRIPTOR, &v->op));
        TC_CUDNN_TRY(cudnnBackendSetAttribute(v->op, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_X,
                                              CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &v->x));
        TC_CUDNN_TRY(cudnnBackendSetAttribute(v->op, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DY,
                                              CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &v->y));
        TC_CUDNN_TRY(cudnnBackendSetAttribute(v->op, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DW,
                                              CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &v->w));
        TC_CUDNN_TRY(cudnnBackendSetAttribute(
            v->op, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_CONV_DESC,
            CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &v->conv));
        TC_CUDNN_TRY(cudnnBackendSetAttribute(v->op,
                                              CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_ALPHA,
                                              CUDNN_TYPE_FLOAT, 1, &alpha));
        TC_CUDNN_TRY(cudnnBackendSetAttribute(v->op,
                                              CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_BETA,
                                              CUDNN_TYPE_FLOAT, 1, &beta));
    } else {
        TC_TRY(s_create(CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR, &v->op));
        TC_CUDNN_TRY(cudnnBackendSetAttribute(v->op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X,
                                              CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &v->x));
        TC_CUDNN_TRY(cudnnBackendSetAttribute(v->op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y,
                                              CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &v->y));
        TC_CUDNN_TRY(cudnnBackendSetAttribute(v->op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W,
                                              CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &v->w));
        TC_CUDNN_TRY(cudnnBackendSetAttribute(v->op,
                                              CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC,
                                              CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &v->conv));
        TC_CUDNN_TRY(cudnnBackendSetAttribute(v->op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA,
                                              CUDNN_TYPE_FLOAT, 1, &alpha));
        TC_CUDNN_TRY(cudnnBackendSetAttribute(v->op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA,
                                              CUDNN_TYPE_FLOAT, 1, &beta));
    }
    TC_CUDNN_TRY(cudnnBackendFinalize(v->op));

    cudnnHandle_t h = p->dev->cudnn;
    TC_TRY(s_create(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR, &v->graph));
    TC_CUDNN_TRY(cudnnBackendSetAttribute(v->graph, CUDNN_ATTR_OPERATIONGRAPH_OPS,
                                          CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &v->op));
    TC_CUDNN_TRY(cudnnBackendSetAttribute(v->graph, S_GRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &h));
    TC_CUDNN_TRY(cudnnBackendFinalize(v->graph));
    return 0;
err:
    return rc;
}

/* Append the engine configurations a heuristics mode gives for the graph. */
static int s_heuristics(struct tc_cuda_v8 *v, cudnnBackendHeurMode_t mode)
{
    int rc = 0;
    s_desc_t heur = NULL;
    int64_t count = 0;
    TC_TRY(s_create(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR, &heur));
    TC_CUDNN_TRY(cudnnBackendSetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH,
                                          CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &v->graph));
    TC_CUDNN_TRY(cudnnBackendSetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE,
                                          1, &mode));
    TC_CUDNN_TRY(cudnnBackendFinalize(heur));
    TC_CUDNN_TRY(cudnnBackendGetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                          CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, &count, NULL));
    if (count > S_MAX_CFGS - (int64_t)v->n_cfgs)
        count = S_MAX_CFGS - (int64_t)v->n_cfgs;
    if (count > 0) {
        s_desc_t *cfgs = v->cfgs + v->n_cfgs;
        for (int64_t i = 0; i < count; i++)
            TC_TRY(s_create(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR, &cfgs[i]));
        int64_t got = 0;
        TC_CUDNN_TRY(cudnnBackendGetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                              CUDNN_TYPE_BACKEND_DESCRIPTOR, count, &got, cfgs));
        for (int64_t i = got; i < count; i++)
            s_destroy(&cfgs[i]);
        v->n_cfgs += (size_t)(got < count ? got : count);
    }
err:
    if (rc < 0) {
        /* Configurations created for this call but not counted. */
        for (size_t i = v->n_cfgs; i < S_MAX_CFGS; i++)
            s_destroy(&v->cfgs[i]);
    }
    s_destroy(&heur);
    return rc;
}

/* The engine of a configuration: its global index, numerical notes and
 * the cudnn-frontend tag "eng<index>_k<knob>=<choice>...". */
static int s_engine(s_desc_t cfg, int64_t *index, bool notes[CUDNN_NUMERICAL_NOTE_TYPE_COUNT],
                    char *tag, size_t size)
{
    int rc = 0;
    s_desc_t eng = NULL, knobs[S_MAX_KNOBS] = {NULL};
    int64_t n = 0;
    memset(notes, 0, CUDNN_NUMERICAL_NOTE_TYPE_COUNT * sizeof *notes);
    TC_TRY(s_create(CUDNN_BACKEND_ENGINE_DESCRIPTOR, &eng));
    TC_CUDNN_TRY(cudnnBackendGetAttribute(cfg, CUDNN_ATTR_ENGINECFG_ENGINE,
                                          CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &n, &eng));
    TC_CUDNN_TRY(cudnnBackendGetAttribute(eng, CUDNN_ATTR_ENGINE_GLOBAL_INDEX, CUDNN_TYPE_INT64, 1,
                                          &n, index));
    cudnnBackendNumericalNote_t list[CUDNN_NUMERICAL_NOTE_TYPE_COUNT];
    int64_t n_notes = 0;
    TC_CUDNN_TRY(cudnnBackendGetAttribute(eng, CUDNN_ATTR_ENGINE_NUMERICAL_NOTE,
                                          CUDNN_TYPE_NUMERICAL_NOTE, CUDNN_NUMERICAL_NOTE_TYPE_COUNT,
                                          &n_notes, list));
    for (int64_t i = 0; i < n_notes; i++)
        if ((int)list[i] >= 0 && (int)list[i] < CUDNN_NUMERICAL_NOTE_TYPE_COUNT)
            notes[list[i]] = true;
    size_t len = (size_t)snprintf(tag, size, "eng%lld", (long long)*index);
    for (int i = 0; i < S_MAX_KNOBS; i++)
        TC_TRY(s_create(CUDNN_BACKEND_KNOB_CHOICE_DESCRIPTOR, &knobs[i]));
    int64_t n_knobs = 0;
    TC_CUDNN_TRY(cudnnBackendGetAttribute(cfg, CUDNN_ATTR_ENGINECFG_KNOB_CHOICES,
                                          CUDNN_TYPE_BACKEND_DESCRIPTOR, S_MAX_KNOBS, &n_knobs,
                                          knobs));
    for (int64_t i = 0; i < n_knobs && len < size; i++) {
        cudnnBackendKnobType_t type;
        int64_t value = 0;
        TC_CUDNN_TRY(cudnnBackendGetAttribute(knobs[i], CUDNN_ATTR_KNOB_CHOICE_KNOB_TYPE,
                                              CUDNN_TYPE_KNOB_TYPE, 1, &n, &type));
        TC_CUDNN_TRY(cudnnBackendGetAttribute(knobs[i], CUDNN_ATTR_KNOB_CHOICE_KNOB_VALUE,
                                              CUDNN_TYPE_INT64, 1, &n, &value));
        len += (size_t)snprintf(tag + len, size - len, "_k%d=%lld", (int)type, (long long)value);
    }
err:
    for (int i = 0; i < S_MAX_KNOBS; i++)
        s_destroy(&knobs[i]);
    s_destroy(&eng);
    return rc;
}

/* filterEngineConfigs: why PyTorch would not use this configuration, or
 * NULL. */
static const char *s_filtered(const tc_cuda_plan_t *p,
                              const bool notes[CUDNN_NUMERICAL_NOTE_TYPE_COUNT])
{
    if (p->dev->settings.deterministic && notes[CUDNN_NUMERICAL_NOTE_NONDETERMINISTIC])
        return "not deterministic: PyTorch in deterministic mode filters it out";
    if (notes[CUDNN_NUMERICAL_NOTE_DOWN_CONVERT_INPUTS])
        return "down-converts its inputs: PyTorch filters it out";
    bool fp32 = p->data_type == CUDNN_DATA_FLOAT;
    if (fp32 && !p->allow_tf32 && notes[CUDNN_NUMERICAL_NOTE_TENSOR_CORE])
        return "a tensor-core (TF32) engine, filtered out when TF32 is not allowed";
    return NULL;
}

/* One candidate per configuration: its execution plan and workspace. A
 * plan that does not build is listed as not supported when the engine
 * cannot run the conv (PyTorch skips it too); when it failed for a reason of
 * this process (tc_gpu_plan_failure), the conv fails: PyTorch would run
 * that engine, and timing the next one would time another. */
static int s_candidate(tc_cuda_plan_t *p, s_desc_t cfg, const char *list, size_t rank,
                       uint64_t limit)
{
    int rc = 0;
    tc_cuda_cand_t c;
    memset(&c, 0, sizeof c);
    bool notes[CUDNN_NUMERICAL_NOTE_TYPE_COUNT];
    int64_t index = -1;
    char tag[TC_ALGO_NAME_MAX];
    TC_TRY(s_engine(cfg, &index, notes, tag, sizeof tag));
    c.algo = (int)index;
    c.info.id = (int32_t)index;
    snprintf(c.info.name, sizeof c.info.name, "%s", tag);
    const char *why = s_filtered(p, notes);
    if (why) {
        c.info.status = TRAINCAST__V1__ALGO_STATUS__ALGO_STATUS_SKIPPED;
        snprintf(c.info.message, sizeof c.info.message, "%s (%s list)", why, list);
        return tc_cuda_cand_add(p, &c, CUDNN_STATUS_SUCCESS, UINT64_MAX);
    }
    s_desc_t plan = NULL;
    cudnnHandle_t h = p->dev->cudnn;
    TC_TRY(s_create(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR, &plan));
    TC_CUDNN_TRY(cudnnBackendSetAttribute(plan, S_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1, &h));
    TC_CUDNN_TRY(cudnnBackendSetAttribute(plan, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG,
                                          CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &cfg));
    cudnnStatus_t st = cudnnBackendFinalize(plan);
    if (st != CUDNN_STATUS_SUCCESS) {
        char m[160] = "";
        cudnnGetLastErrorString(m, sizeof m);
        s_destroy(&plan);
        if (tc_gpu_plan_failure((int)st) != TC_GPU_PLAN_SKIP)
            return tc_fail(TC_ELIB,
                           "cuDNN engine %s (number %zu of the %s list), which PyTorch would "
                           "run, does not build here: %s%s%s; not timing another engine in its "
                           "place (`agent info` lists the cuDNN, NVRTC and cuBLAS files loaded)",
                           tag, rank + 1, list, cudnnGetErrorString(st), *m ? ": " : "", m);
        snprintf(c.info.message, sizeof c.info.message, "no execution plan (%s list): %s%s%s",
                 list, cudnnGetErrorString(st), *m ? ": " : "", m);
        return tc_cuda_cand_add(p, &c, st, limit);
    }
    int64_t ws = 0, n = 0;
    TC_CUDNN_TRY(cudnnBackendGetAttribute(plan, CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE,
                                          CUDNN_TYPE_INT64, 1, &n, &ws));
    c.info.workspace_bytes = ws > 0 ? (uint64_t)ws : 0;
    snprintf(c.info.message, sizeof c.info.message, "%s list", list);
    c.exec = plan;
    plan = NULL;
    rc = tc_cuda_cand_add(p, &c, CUDNN_STATUS_SUCCESS, limit);
    if (rc < 0)
        s_destroy((s_desc_t *)&c.exec);
    return rc;
err:
    s_destroy(&plan);
    return rc;
}

/* The candidates of configurations [from, to) of one list. `first_only`
 * (cudnn.benchmark off): PyTorch builds them in order and runs the first
 * that builds and whose workspace it can allocate, so the rest are listed
 * unbuilt. `*found`: one of them can run. */
static int s_list(tc_cuda_plan_t *p, struct tc_cuda_v8 *v, size_t from, size_t to,
                  const char *list, uint64_t limit, bool first_only, bool *found)
{
    for (size_t i = from; i < to; i++) {
        if (first_only && *found) {
            tc_cuda_cand_t c;
            memset(&c, 0, sizeof c);
            bool notes[CUDNN_NUMERICAL_NOTE_TYPE_COUNT];
            int64_t index = -1;
            int rc = s_engine(v->cfgs[i], &index, notes, c.info.name, sizeof c.info.name);
            if (rc < 0)
                return rc;
            c.algo = (int)index;
            c.info.id = (int32_t)index;
            c.info.status = TRAINCAST__V1__ALGO_STATUS__ALGO_STATUS_SKIPPED;
            snprintf(c.info.message, sizeof c.info.message,
                     "not built: PyTorch runs the first configuration that builds (%s list)",
                     list);
            if ((rc = tc_cuda_cand_add(p, &c, CUDNN_STATUS_SUCCESS, UINT64_MAX)) < 0)
                return rc;
            continue;
        }
        int rc = s_candidate(p, v->cfgs[i], list, i - from, limit);
        if (rc < 0)
            return rc;
        if (p->cands[p->n_cands - 1].info.status == TRAINCAST__V1__ALGO_STATUS__ALGO_STATUS_OK)
            *found = true;
    }
    return 0;
}

int tc_cuda_v8_list(tc_cuda_plan_t *p, uint64_t limit)
{
    int rc = 0;
    struct tc_cuda_v8 *v = calloc(1, sizeof *v);
    if (!v)
        return tc_fail(TC_ENOMEM, "out of memory for a cuDNN graph");
    p->v8 = v;
    v->cfgs = calloc(S_MAX_CFGS, sizeof *v->cfgs);
    if (!v->cfgs)
        TC_FAIL_GOTO(TC_ENOMEM, "out of memory for cuDNN engine configurations");
    TC_TRY(s_graph(p, v));
    bool exhaustive = p->spec.policy == TRAINCAST__V1__POLICY__POLICY_EXHAUSTIVE;
    const char *mode_b = getenv("TORCH_CUDNN_USE_HEURISTIC_MODE_B");
    /* Benchmark mode asks instant heuristics; run_single_conv mode B when
     * TORCH_CUDNN_USE_HEURISTIC_MODE_B=1. */
    cudnnBackendHeurMode_t heur = !exhaustive && mode_b && !strcmp(mode_b, "1")
                                      ? CUDNN_HEUR_MODE_B
                                      : CUDNN_HEUR_MODE_INSTANT;
    TC_TRY(s_heuristics(v, heur));
    size_t n_heur = v->n_cfgs;
    bool found = false;
    TC_TRY(s_list(p, v, 0, n_heur, "heuristics", limit, !exhaustive, &found));
    /* run_single_conv asks for the fallback list only when no configuration
     * of the heuristics ran (so an error there cannot stop a conv the first
     * list runs); get_plans_from_find takes both lists. */
    if (exhaustive || !found) {
        TC_TRY(s_heuristics(v, CUDNN_HEUR_MODE_FALLBACK));
        TC_TRY(s_list(p, v, n_heur, v->n_cfgs, "fallback", limit, !exhaustive, &found));
    }
    if (exhaustive && p->dev->benchmark_limit > 0) {
        /* time_sorted_plan times the first benchmark_limit plans. */
        int timed = 0;
        for (size_t i = 0; i < p->n_cands; i++) {
            tc_cuda_cand_t *c = &p->cands[i];
            if (c->info.status != TRAINCAST__V1__ALGO_STATUS__ALGO_STATUS_OK)
                continue;
            if (++timed > p->dev->benchmark_limit) {
                c->info.status = TRAINCAST__V1__ALGO_STATUS__ALGO_STATUS_SKIPPED;
                snprintf(c->info.message, sizeof c->info.message,
                         "beyond torch.backends.cudnn.benchmark_limit (%d): not timed",
                         p->dev->benchmark_limit);
            }
        }
    }
    if (p->n_cands == 0)
        tc_log_debug("cuDNN offers no engine configuration for this conv");
    return 0;
err:
    return rc;
}

int tc_cuda_v8_launch(tc_cuda_plan_t *p, const tc_cuda_cand_t *c)
{
    int rc = 0;
    s_desc_t pack = NULL;
    const tc_conv_config_t *cfg = &p->spec.config;
    (void)cfg;
    void *x, *y, *w;
    if (p->spec.direction == DIR_BWD_DATA)
        x = p->buf[TC_TENSOR_DX], y = p->buf[TC_TENSOR_DY], w = p->buf[TC_TENSOR_W];
    else if (p->spec.direction == DIR_BWD_FILTER)
        x = p->buf[TC_TENSOR_X], y = p->buf[TC_TENSOR_DY], w = p->buf[TC_TENSOR_DW];
    else
        x = p->buf[TC_TENSOR_X], y = p->buf[TC_TENSOR_Y], w = p->buf[TC_TENSOR_W];
    void *ptrs[3] = {x, y, w};
    const int64_t uids[3] = {'x', 'y', 'w'};
    void *ws = c->info.workspace_bytes ? p->ws : NULL;
    TC_TRY(s_create(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR, &pack));
    TC_CUDNN_TRY(cudnnBackendSetAttribute(pack, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS,
                                          CUDNN_TYPE_VOID_PTR, 3, ptrs));
    TC_CUDNN_TRY(cudnnBackendSetAttribute(pack, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS,
                                          CUDNN_TYPE_INT64, 3, uids));
    TC_CUDNN_TRY(cudnnBackendSetAttribute(pack, CUDNN_ATTR_VARIANT_PACK_WORKSPACE,
                                          CUDNN_TYPE_VOID_PTR, 1, &ws));
    TC_CUDNN_TRY(cudnnBackendFinalize(pack));
    TC_CUDNN_TRY(cudnnBackendExecute(p->dev->cudnn, (s_desc_t)c->exec, pack));
err:
    s_destroy(&pack);
    return rc;
}

void tc_cuda_v8_release(tc_cuda_plan_t *p)
{
    for (size_t i = 0; i < p->n_cands; i++)
        if (p->cands[i].exec)
            s_destroy((s_desc_t *)&p->cands[i].exec);
    struct tc_cuda_v8 *v = p->v8;
    if (!v)
        return;
    if (v->cfgs) {
        for (size_t i = 0; i < S_MAX_CFGS; i++)
            s_destroy(&v->cfgs[i]);
        free(v->cfgs);
    }
    s_destroy(&v->graph);
    s_destroy(&v->op);
    s_destroy(&v->conv);
    s_destroy(&v->x);
    s_destroy(&v->y);
    s_destroy(&v->w);
    free(v);
    p->v8 = NULL;
}
