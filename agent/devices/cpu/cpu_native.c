/* Conv plans on PyTorch's native CPU path, ConvBackend::Slow2d (which
 * cpu_route.h says when the framework takes), computed the way PyTorch 1.13
 * computes it (aten/src/ATen/native/ConvolutionMM2d.cpp,
 * slow_conv2d_forward_out_cpu and slow_conv2d_backward_out_cpu, with
 * cpu/Unfold2d.cpp for im2col and col2im), on the very BLAS the framework
 * loads (cpu_blas.h; at::native::cpublas::gemm calls its Fortran sgemm_):
 *
 * forward      columns = im2col(input) per sample (for a 1x1, stride-1,
 *              unpadded conv the input itself), in an at::parallel_for over
 *              the batch; then, per sample in an at::parallel_for over the
 *              batch, sgemm(N, N, P*Q, K, C*R*S, 1, columns, weight, 0, output).
 * bwd_data     grad_input = 0; at::parallel_for over the batch, each chunk
 *              with its own C*R*S x P*Q buffer: per sample
 *              sgemm(N, T, P*Q, C*R*S, K, 1, grad_output, weight, 0, buffer)
 *              and col2im adding the buffer into grad_input (1x1 too).
 * bwd_filter   grad_weight = 0; columns = im2col(input) again; then, one
 *              sample after the other (no parallel_for, so the BLAS uses
 *              every thread),
 *              sgemm(T, N, C*R*S, K, P*Q, 1, columns, grad_output, 1, grad_weight).
 *
 * at::parallel_for (OpenMP backend, grain 0) runs its body on the calling
 * thread when the range has one element, when there is one thread, or when
 * it is already inside a parallel region, and otherwise splits the range
 * into one static chunk per thread; a BLAS called inside the region runs
 * on one thread. tc_cpu_aten_parallel_for (cpu_native_aten.c) does the
 * same, so im2col, col2im and the GEMMs are spread over the threads exactly
 * as in training. Grouped
 * convs run group by group on contiguous copies of the group's slices and
 * are concatenated (_convolution's path for backends without groups);
 * a dilated conv (SlowDilated2d) runs the same im2col + GEMM schedule with
 * dilated columns, one sample after the other. Every buffer the framework
 * allocates per call is allocated per run (64-byte aligned, as PyTorch's
 * CPU allocator does) and freed when the framework frees it; outputs are
 * replaced after the timed region.
 *
 * With cold operands (operands.h, cpu_cold.h) every run reads the next copy
 * of its inputs and writes the next output buffer instead of a new one.
 *
 * Bias, when the layer has one: the forward first copies the bias over the
 * whole output (output.copy_(bias.reshape({-1, 1, 1})), a TensorIterator
 * copy) and the GEMM then adds into it (beta 1 instead of 0); backward-
 * filter also reduces the output gradient over batch and space
 * (at::sum_out(grad_bias, grad_output, {0, 2, 3})). A grouped conv does
 * both per group with the group's slice of the bias, as _convolution's
 * per-group path passes it. */
#include "cpu_cold.h"
#include "cpu_native_aten.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct {
    tc_cpu_ctx_t *dev;
    tc_conv_spec_t spec;
    tc_algo_t cand;
    bool dilated;
    bool plain_1x1;       /* 1x1, stride 1, no padding: columns are the input */
    int64_t g, cg, kg;    /* groups, input and output channels per group */
    int64_t p, q, crs, pq;
    float *x, *w, *dy;    /* inputs, filled once */
    float *b;             /* the bias (forward, when the layer has one) */
    float *out;           /* the current output: y, dx or dw */
    float *db;            /* the current bias gradient (backward-filter with a bias) */
    tc_cpu_cold_t cold;   /* copies of the tensors with cold operands */
    float *out_now;       /* with cold operands: the output copy of the last run */
    float *db_now;        /* and its bias gradient copy */
    bool selected;
} s_plan_t;

static double s_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

/* PyTorch's CPU allocator: 64-byte aligned, untouched. */
static float *s_alloc(size_t floats)
{
    void *p = NULL;
    if (posix_memalign(&p, 64, floats ? floats * sizeof(float) : 64) != 0)
        return NULL;
    return p;
}

/* --- one group: the three passes of ConvolutionMM2d.cpp ------------------ */

typedef struct {
    const tc_cpu_aten_geom_t *g;
    const float *cols;   /* forward: all samples' columns */
    const float *w;      /* kg x crs */
    const float *dy;     /* bwd_data: n x kg x pq */
    float *out;          /* y (n x kg x pq) or dx (n x cg x h x w) */
    float beta;          /* forward: 1 when the output holds the bias already */
    bool oom;
} s_frames_t;

static void s_forward_frames(void *arg, int64_t begin, int64_t end)
{
    s_frames_t *f = arg;
    const tc_cpu_aten_geom_t *g = f->g;
    for (int64_t t = begin; t < end; t++)
        tc_blas_sgemm(g->blas, 'N', 'N', (int)g->pq, (int)g->kg, (int)g->crs, 1.0f,
                      f->cols + t * g->crs * g->pq, (int)g->pq, f->w, (int)g->crs,
                      f->beta, f->out + t * g->kg * g->pq, (int)g->pq);
}

static void s_bwd_data_frames(void *arg, int64_t begin, int64_t end)
{
    s_frames_t *f = arg;
    const tc_cpu_aten_geom_t *g = f->g;
    /* std::make_unique<scalar_t[]>(fgrad_input_size): one per chunk. */
    float *buf = malloc((size_t)(g->crs * g->pq) * sizeof *buf);
    if (!buf) {
        f->oom = true;
        return;
    }
    int64_t in_plane = g->cg * (int64_t)g->c->h * g->c->w;
    for (int64_t t = begin; t < end; t++) {
        tc_blas_sgemm(g->blas, 'N', 'T', (int)g->pq, (int)g->crs, (int)g->kg, 1.0f,
                      f->dy + t * g->kg * g->pq, (int)g->pq, f->w, (int)g->crs, 0.0f, buf,
                      (int)g->pq);
        tc_cpu_aten_fold(g, buf, f->out + t * in_plane);
    }
    free(buf);
}

typedef struct {
    const tc_cpu_aten_geom_t *g;
    const float *x;
    float *cols;
    int64_t in_plane;
} s_cols_t;

static void s_columns_frames(void *arg, int64_t begin, int64_t end)
{
    s_cols_t *c = arg;
    for (int64_t t = begin; t < end; t++)
        tc_cpu_aten_unfold(c->g, c->x + t * c->in_plane, c->cols + t * c->g->crs * c->g->pq);
}

/* compute_columns2d: the input itself for a plain 1x1, else im2col of
 * every sample (one after the other when dilated). NULL on out of memory;
 * *owned tells whether to free it. */
static const float *s_columns(const s_plan_t *p, const tc_cpu_aten_geom_t *g, const float *x,
                              bool *owned)
{
    *owned = false;
    if (p->plain_1x1)
        return x;
    int64_t n = p->spec.config.n;
    float *cols = s_alloc((size_t)(n * g->crs * g->pq));
    if (!cols)
        return NULL;
    *owned = true;
    s_cols_t c = {g, x, cols, g->cg * (int64_t)g->c->h * g->c->w};
    if (p->dilated)
        s_columns_frames(&c, 0, n);
    else
        tc_cpu_aten_parallel_for(0, n, 0, s_columns_frames, &c);
    return cols;
}

static int s_group_forward(const s_plan_t *p, const tc_cpu_aten_geom_t *g, const float *x,
                           const float *w, const float *bias, float *y)
{
    int64_t n = p->spec.config.n;
    if (bias)
        tc_cpu_aten_bias_fill(y, bias, n, g->kg, g->pq);
    bool owned;
    const float *cols = s_columns(p, g, x, &owned);
    if (!cols)
        return tc_fail(TC_ENOMEM, "out of memory for the im2col columns");
    s_frames_t f = {.g = g, .cols = cols, .w = w, .out = y, .beta = bias ? 1.0f : 0.0f};
    if (p->dilated)
        s_forward_frames(&f, 0, n);
    else
        tc_cpu_aten_parallel_for(0, n, 0, s_forward_frames, &f);
    if (owned)
        free((void *)cols);
    return 0;
}

static int s_group_bwd_data(const s_plan_t *p, const tc_cpu_aten_geom_t *g, const float *dy,
                            const float *w, float *dx)
{
    int64_t n = p->spec.config.n;
    tc_cpu_aten_zero(dx, n * g->cg * (int64_t)g->c->h * g->c->w);
    s_frames_t f = {.g = g, .w = w, .dy = dy, .out = dx};
    if (p->dilated)
        s_bwd_data_frames(&f, 0, n);
    else
        tc_cpu_aten_parallel_for(0, n, 0, s_bwd_data_frames, &f);
    return f.oom ? tc_fail(TC_ENOMEM, "out of memory for the col2im buffer") : 0;
}

static int s_group_bwd_filter(const s_plan_t *p, const tc_cpu_aten_geom_t *g, const float *x,
                              const float *dy, float *dw, float *db)
{
    int64_t n = p->spec.config.n;
    tc_cpu_aten_zero(dw, g->kg * g->crs);
    bool owned;
    const float *cols = s_columns(p, g, x, &owned);
    if (!cols)
        return tc_fail(TC_ENOMEM, "out of memory for the im2col columns");
    for (int64_t t = 0; t < n; t++)
        tc_blas_sgemm(g->blas, 'T', 'N', (int)g->crs, (int)g->kg, (int)g->pq, 1.0f,
                      cols + t * g->crs * g->pq, (int)g->pq, dy + t * g->kg * g->pq, (int)g->pq,
                      1.0f, dw, (int)g->crs);
    if (owned)
        free((void *)cols);
    if (db)
        tc_cpu_aten_bias_grad(dy, db, n, g->kg, g->pq);
    return 0;
}

/* --- groups: contiguous slices, then concatenation ------------------------ */

/* Copy channels [c0, c0 + cs) of an n x ct x plane tensor into a contiguous
 * n x cs x plane one, or back (to_slice false). */
static void s_slice(float *full, float *part, int64_t n, int64_t ct, int64_t c0, int64_t cs,
                    int64_t plane, bool to_slice)
{
    for (int64_t t = 0; t < n; t++) {
        float *f = full + (t * ct + c0) * plane;
        float *s = part + t * cs * plane;
        if (to_slice)
            memcpy(s, f, (size_t)(cs * plane) * sizeof *s);
        else
            memcpy(f, s, (size_t)(cs * plane) * sizeof *s);
    }
}

/* A new output tensor, as the framework returns one per call, or with
 * cold operands the next output buffer. */
static float *s_out(s_plan_t *p, tc_tensor_t t, size_t floats)
{
    return tc_cpu_cold_rotates(&p->cold, t) ? tc_cpu_cold_input(&p->cold, t, NULL)
                                            : s_alloc(floats);
}

int tc_cpu_native_run(void *plan, double *ms)
{
    int rc = 0;
    s_plan_t *p = plan;
    const tc_conv_config_t *c = &p->spec.config;
    float *out = NULL, *xs = NULL, *ys = NULL, *db = NULL;
    bool rot_out = false, rot_db = false; /* outputs from the cold copies: never freed here */
    if (!p->selected)
        return tc_fail(TC_EINVAL, "native conv plan: no candidate selected before run");
    TC_TRY(tc_cpu_apply_threads(p->dev));
    tc_cpu_aten_geom_t g = {c, p->cg, p->kg, p->p, p->q, p->crs, p->pq, p->dev->blas};
    int64_t n = c->n, hw = (int64_t)c->h * c->w;
    /* The inputs of this run: with cold operands the next copy (cpu_cold.h). */
    tc_cpu_cold_next(&p->cold);
    rot_out = tc_cpu_cold_rotates(&p->cold, tc_direction_output(p->spec.direction));
    rot_db = tc_cpu_cold_rotates(&p->cold, TC_TENSOR_DB);
    float *x = tc_cpu_cold_input(&p->cold, TC_TENSOR_X, p->x);
    float *w = tc_cpu_cold_input(&p->cold, TC_TENSOR_W, p->w);
    float *dy = tc_cpu_cold_input(&p->cold, TC_TENSOR_DY, p->dy);
    float *bias = tc_cpu_cold_input(&p->cold, TC_TENSOR_B, p->b);
    double t0 = s_now_ms();
    switch (p->spec.direction) {
    case TRAINCAST__V1__DIRECTION__DIRECTION_BWD_DATA:
        out = s_out(p, TC_TENSOR_DX, (size_t)(n * c->c * hw));
        if (!out)
            TC_FAIL_GOTO(TC_ENOMEM, "out of memory for grad_input");
        if (p->g == 1) {
            TC_TRY(s_group_bwd_data(p, &g, dy, w, out));
            break;
        }
        ys = s_alloc((size_t)(n * p->kg * p->pq));
        xs = s_alloc((size_t)(n * p->cg * hw));
        if (!ys || !xs)
            TC_FAIL_GOTO(TC_ENOMEM, "out of memory for a group's slices");
        for (int64_t k = 0; k < p->g; k++) {
            s_slice(dy, ys, n, c->k, k * p->kg, p->kg, p->pq, true);
            TC_TRY(s_group_bwd_data(p, &g, ys, w + k * p->kg * p->crs, xs));
            s_slice(out, xs, n, c->c, k * p->cg, p->cg, hw, false);
        }
        break;
    case TRAINCAST__V1__DIRECTION__DIRECTION_BWD_FILTER: {
        out = s_out(p, TC_TENSOR_DW, (size_t)(c->k * p->crs));
        if (!out)
            TC_FAIL_GOTO(TC_ENOMEM, "out of memory for grad_weight");
        if (c->bias && !(db = s_out(p, TC_TENSOR_DB, c->k)))
            TC_FAIL_GOTO(TC_ENOMEM, "out of memory for grad_bias");
        if (p->g == 1) {
            TC_TRY(s_group_bwd_filter(p, &g, x, dy, out, db));
            break;
        }
        ys = s_alloc((size_t)(n * p->kg * p->pq));
        xs = s_alloc((size_t)(n * p->cg * hw));
        if (!ys || !xs)
            TC_FAIL_GOTO(TC_ENOMEM, "out of memory for a group's slices");
        for (int64_t k = 0; k < p->g; k++) {
            s_slice(x, xs, n, c->c, k * p->cg, p->cg, hw, true);
            s_slice(dy, ys, n, c->k, k * p->kg, p->kg, p->pq, true);
            TC_TRY(s_group_bwd_filter(p, &g, xs, ys, out + k * p->kg * p->crs,
                                      db ? db + k * p->kg : NULL));
        }
        break;
    }
    default:
        out = s_out(p, TC_TENSOR_Y, (size_t)(n * c->k * p->pq));
        if (!out)
            TC_FAIL_GOTO(TC_ENOMEM, "out of memory for the output");
        if (p->g == 1) {
            TC_TRY(s_group_forward(p, &g, x, w, bias, out));
            break;
        }
        ys = s_alloc((size_t)(n * p->kg * p->pq));
        xs = s_alloc((size_t)(n * p->cg * hw));
        if (!ys || !xs)
            TC_FAIL_GOTO(TC_ENOMEM, "out of memory for a group's slices");
        for (int64_t k = 0; k < p->g; k++) {
            s_slice(x, xs, n, c->c, k * p->cg, p->cg, hw, true);
            TC_TRY(s_group_forward(p, &g, xs, w + k * p->kg * p->crs,
                                   bias ? bias + k * p->kg : NULL, ys));
            s_slice(out, ys, n, c->k, k * p->kg, p->kg, p->pq, false);
        }
        break;
    }
    free(xs);
    free(ys);
    xs = ys = NULL;
    *ms = s_now_ms() - t0;
    /* The new outputs replace the old ones outside the timed region. */
    if (rot_out) {
        p->out_now = out;
    } else {
        free(p->out);
        p->out = out;
    }
    out = NULL;
    if (db) {
        if (rot_db) {
            p->db_now = db;
        } else {
            free(p->db);
            p->db = db;
        }
        db = NULL;
    }
err:
    if (!rot_out)
        free(out);
    if (!rot_db)
        free(db);
    free(xs);
    free(ys);
    return rc;
}

/* --- plan life cycle ------------------------------------------------------ */

static float *s_random(size_t count, uint64_t seed)
{
    float *v = s_alloc(count);
    for (size_t i = 0; v && i < count; i++)
        v[i] = tc_random_value(seed, i);
    return v;
}

void tc_cpu_native_destroy(void *plan)
{
    s_plan_t *p = plan;
    if (!p)
        return;
    free(p->x);
    free(p->w);
    free(p->dy);
    free(p->b);
    free(p->out);
    free(p->db);
    tc_cpu_cold_release(&p->cold);
    free(p);
}

int tc_cpu_native_create(tc_cpu_ctx_t *dev, const tc_conv_spec_t *spec, bool dilated, void **out)
{
    int rc = 0;
    *out = NULL;
    const tc_conv_config_t *c = &spec->config;
    if (c->dtype != TRAINCAST__V1__DTYPE__DTYPE_FP32 &&
        c->dtype != TRAINCAST__V1__DTYPE__DTYPE_FP32_STRICT)
        return tc_fail(TC_EUNSUPPORTED, "PyTorch runs this %s conv with its own kernels, which "
                                        "do not use the BLAS and which traincast does not "
                                        "mirror; benchmark fp32",
                       tc_dtype_name(c->dtype));
    if (c->layout != TRAINCAST__V1__LAYOUT__LAYOUT_NCHW)
        return tc_fail(TC_EUNSUPPORTED, "PyTorch's native conv path is mirrored for NCHW only; "
                                        "this conv would run on it in channels-last");
    if (!dev->blas)
        return tc_fail(TC_ENOTFOUND, "PyTorch runs this conv on its native path, which calls "
                                     "the BLAS, and there is none: %s",
                       dev->blas_why);
    s_plan_t *p = calloc(1, sizeof *p);
    if (!p)
        return tc_fail(TC_ENOMEM, "out of memory creating a native conv plan");
    p->dev = dev;
    p->spec = *spec;
    p->dilated = dilated;
    p->g = c->groups;
    p->cg = c->c / c->groups;
    p->kg = c->k / c->groups;
    p->p = tc_conv_out_h(c);
    p->q = tc_conv_out_w(c);
    p->pq = p->p * p->q;
    p->crs = p->cg * (int64_t)c->r * c->s;
    p->plain_1x1 = c->r == 1 && c->s == 1 && c->stride_h == 1 && c->stride_w == 1 &&
                   c->pad_h == 0 && c->pad_w == 0 && !dilated;
    size_t xs = tc_tensor_count(c, TC_TENSOR_X), ws = tc_tensor_count(c, TC_TENSOR_W);
    size_t ys = tc_tensor_count(c, TC_TENSOR_Y);
    uint64_t seed = spec->seed;
    switch (spec->direction) {
    case TRAINCAST__V1__DIRECTION__DIRECTION_BWD_DATA:
        p->dy = s_random(ys, seed + TC_TENSOR_DY);
        p->w = s_random(ws, seed + TC_TENSOR_W);
        if (!p->dy || !p->w)
            TC_FAIL_GOTO(TC_ENOMEM, "out of memory for the inputs");
        p->out = s_alloc(xs);
        break;
    case TRAINCAST__V1__DIRECTION__DIRECTION_BWD_FILTER:
        p->x = s_random(xs, seed + TC_TENSOR_X);
        p->dy = s_random(ys, seed + TC_TENSOR_DY);
        if (!p->x || !p->dy)
            TC_FAIL_GOTO(TC_ENOMEM, "out of memory for the inputs");
        p->out = s_alloc(ws);
        if (c->bias) {
            p->db = s_alloc(c->k);
            if (!p->db)
                TC_FAIL_GOTO(TC_ENOMEM, "out of memory for the bias gradient");
            memset(p->db, 0, c->k * sizeof *p->db);
        }
        break;
    default:
        p->x = s_random(xs, seed + TC_TENSOR_X);
        p->w = s_random(ws, seed + TC_TENSOR_W);
        if (!p->x || !p->w)
            TC_FAIL_GOTO(TC_ENOMEM, "out of memory for the inputs");
        if (c->bias && !(p->b = s_random(c->k, seed + TC_TENSOR_B)))
            TC_FAIL_GOTO(TC_ENOMEM, "out of memory for the bias");
        p->out = s_alloc(ys);
        break;
    }
    size_t outs = spec->direction == TRAINCAST__V1__DIRECTION__DIRECTION_BWD_DATA     ? xs
                  : spec->direction == TRAINCAST__V1__DIRECTION__DIRECTION_BWD_FILTER ? ws
                                                                                     : ys;
    if (!p->out)
        TC_FAIL_GOTO(TC_ENOMEM, "out of memory for the output");
    memset(p->out, 0, outs * sizeof *p->out);
    /* With cold operands, the inputs in K copies, the outputs in K buffers
     * (cpu_cold.h). */
    size_t bias_n = c->bias ? (size_t)c->k : 0;
    size_t in_n = (p->x ? xs : 0) + (p->w ? ws : 0) + (p->dy ? ys : 0) + 2 * bias_n;
    TC_TRY(tc_cpu_cold_init(&p->cold, dev, (in_n + outs) * sizeof(float)));
    const struct { tc_tensor_t t; const float *v; size_t n; } ins[] = {
        {TC_TENSOR_X, p->x, xs}, {TC_TENSOR_W, p->w, ws}, {TC_TENSOR_DY, p->dy, ys},
        {TC_TENSOR_B, p->b, bias_n}};
    for (size_t i = 0; i < sizeof ins / sizeof ins[0]; i++)
        if (ins[i].v)
            TC_TRY(tc_cpu_cold_add_input(&p->cold, ins[i].t, tc_tensor_name(ins[i].t), ins[i].v,
                                         ins[i].n * sizeof(float)));
    tc_tensor_t out_t = tc_direction_output(spec->direction);
    TC_TRY(tc_cpu_cold_add_output(&p->cold, out_t, tc_tensor_name(out_t), outs * sizeof(float)));
    if (p->db)
        TC_TRY(tc_cpu_cold_add_output(&p->cold, TC_TENSOR_DB, tc_tensor_name(TC_TENSOR_DB),
                                      c->k * sizeof(float)));
    const char *what = spec->direction == TRAINCAST__V1__DIRECTION__DIRECTION_BWD_DATA
                           ? "sgemm+col2im"
                           : (p->plain_1x1 ? "sgemm" : "im2col+sgemm");
    snprintf(p->cand.name, sizeof p->cand.name, "pytorch-native:%s%s%s%s", what,
             dilated ? ":dilated" : "", p->g > 1 ? ":per-group" : "",
             c->bias && spec->direction != TRAINCAST__V1__DIRECTION__DIRECTION_BWD_DATA ? "+bias"
                                                                                       : "");
    p->cand.id = 0;
    p->cand.workspace_bytes = p->plain_1x1 && spec->direction != TRAINCAST__V1__DIRECTION__DIRECTION_BWD_DATA
                                  ? 0
                                  : (uint64_t)(c->n * p->crs * p->pq) * sizeof(float);
    p->cand.status = TRAINCAST__V1__ALGO_STATUS__ALGO_STATUS_OK;
    snprintf(p->cand.message, sizeof p->cand.message, "%s on %s", dilated ? "slow_conv_dilated2d"
                                                                          : "_slow_conv2d",
             tc_blas_name(dev->blas));
    *out = p;
    return 0;
err:
    tc_cpu_native_destroy(p);
    return rc;
}

size_t tc_cpu_native_algo_count(void *plan)
{
    (void)plan;
    return 1;
}

const tc_algo_t *tc_cpu_native_algo(void *plan, size_t i)
{
    return i == 0 ? &((s_plan_t *)plan)->cand : NULL;
}

int tc_cpu_native_select(void *plan, size_t i)
{
    if (i != 0)
        return tc_fail(TC_EINVAL, "native conv plan: candidate %zu cannot be selected", i);
    ((s_plan_t *)plan)->selected = true;
    return 0;
}

int tc_cpu_native_read(void *plan, tc_tensor_t t, float *out, size_t count)
{
    s_plan_t *p = plan;
    const float *src = NULL, *cur = p->out_now ? p->out_now : p->out;
    bool bwd_data = p->spec.direction == TRAINCAST__V1__DIRECTION__DIRECTION_BWD_DATA;
    bool bwd_filter = p->spec.direction == TRAINCAST__V1__DIRECTION__DIRECTION_BWD_FILTER;
    switch (t) {
    case TC_TENSOR_X: src = p->x; break;
    case TC_TENSOR_W: src = p->w; break;
    case TC_TENSOR_DY: src = p->dy; break;
    case TC_TENSOR_Y: src = !bwd_data && !bwd_filter ? cur : NULL; break;
    case TC_TENSOR_DX: src = bwd_data ? cur : NULL; break;
    case TC_TENSOR_DW: src = bwd_filter ? cur : NULL; break;
    case TC_TENSOR_B: src = p->b; break;
    case TC_TENSOR_DB: src = bwd_filter ? (p->db_now ? p->db_now : p->db) : NULL; break;
    default: break;
    }
    if (!src)
        return tc_fail(TC_ENOTFOUND, "this %s plan has no tensor %s",
                       tc_direction_name(p->spec.direction), tc_tensor_name(t));
    size_t want = tc_tensor_count(&p->spec.config, t);
    if (count != want)
        return tc_fail(TC_EINVAL, "reading tensor %s: it has %zu values, not %zu",
                       tc_tensor_name(t), want, count);
    memcpy(out, src, count * sizeof *out);
    return 0;
}
