/* The ATen building blocks of PyTorch's native CPU conv path (cpu_native.c
 * puts them together): at::parallel_for on OpenMP, im2col and col2im
 * (cpu/Unfold2d.cpp), the zero fill and the bias copy and reduction, each
 * split over the threads as ATen splits it. */
#include "cpu_native_aten.h"

#include <omp.h>
#include <string.h>

/* --- at::parallel_for ---------------------------------------------------- */

static int64_t s_divup(int64_t a, int64_t b) { return (a + b - 1) / b; }

void tc_cpu_aten_parallel_for(int64_t begin, int64_t end, int64_t grain, tc_cpu_aten_body_t f,
                              void *ctx)
{
    if (begin >= end)
        return;
    int64_t n = end - begin;
    if (n <= grain || n == 1 || omp_in_parallel() || omp_get_max_threads() == 1) {
        f(ctx, begin, end);
        return;
    }
#pragma omp parallel
    {
        int64_t threads = omp_get_num_threads();
        if (grain > 0)
            threads = threads < s_divup(n, grain) ? threads : s_divup(n, grain);
        int64_t chunk = s_divup(n, threads);
        int64_t tid = omp_get_thread_num();
        int64_t b = begin + tid * chunk;
        if (tid < threads && b < end)
            f(ctx, b, b + chunk < end ? b + chunk : end);
    }
}

/* TensorIterator's grain (at::internal::GRAIN_SIZE) for fills and copies. */
#define S_GRAIN 32768

/* --- im2col (cpu/Unfold2d.cpp unfolded2d_copy) ---------------------------- */

typedef struct {
    const tc_cpu_aten_geom_t *g;
    const float *in; /* one sample: cg x h x w */
    float *cols;     /* crs x pq */
} s_unfold_t;

static void s_unfold_rows(void *arg, int64_t begin, int64_t end)
{
    const s_unfold_t *u = arg;
    const tc_conv_config_t *c = u->g->c;
    int64_t rs = (int64_t)c->r * c->s, p = u->g->p, q = u->g->q;
    for (int64_t row = begin; row < end; row++) {
        int64_t ch = row / rs, kh = row % rs / c->s, kw = row % c->s;
        float *dst = u->cols + row * p * q;
        const float *src = u->in + ch * (int64_t)c->h * c->w;
        for (int64_t y = 0; y < p; y++) {
            int64_t iy = y * c->stride_h - c->pad_h + kh * c->dilation_h;
            float *d = dst + y * q;
            if (iy < 0 || iy >= c->h) {
                memset(d, 0, (size_t)q * sizeof *d);
                continue;
            }
            const float *s = src + iy * c->w;
            if (c->stride_w == 1 && c->dilation_w == 1) {
                int64_t ix0 = kw - c->pad_w;
                int64_t lpad = ix0 < 0 ? -ix0 : 0;
                int64_t last = ix0 + q - 1;
                int64_t rpad = last >= c->w ? last - c->w + 1 : 0;
                if (q - lpad - rpad <= 0) {
                    memset(d, 0, (size_t)q * sizeof *d);
                    continue;
                }
                if (lpad)
                    memset(d, 0, (size_t)lpad * sizeof *d);
                memcpy(d + lpad, s + ix0 + lpad, (size_t)(q - lpad - rpad) * sizeof *d);
                if (rpad)
                    memset(d + q - rpad, 0, (size_t)rpad * sizeof *d);
            } else {
                for (int64_t x = 0; x < q; x++) {
                    int64_t ix = x * c->stride_w - c->pad_w + kw * c->dilation_w;
                    d[x] = ix < 0 || ix >= c->w ? 0.0f : s[ix];
                }
            }
        }
    }
}

void tc_cpu_aten_unfold(const tc_cpu_aten_geom_t *g, const float *in, float *cols)
{
    s_unfold_t u = {g, in, cols};
    tc_cpu_aten_parallel_for(0, g->crs, 0, s_unfold_rows, &u);
}

/* --- col2im (cpu/Unfold2d.cpp unfolded2d_acc) ---------------------------- */

typedef struct {
    const tc_cpu_aten_geom_t *g;
    const float *cols; /* crs x pq */
    float *out;        /* one sample: cg x h x w, accumulated into */
} s_fold_t;

static void s_fold_planes(void *arg, int64_t begin, int64_t end)
{
    const s_fold_t *f = arg;
    const tc_conv_config_t *c = f->g->c;
    int64_t p = f->g->p, q = f->g->q;
    for (int64_t ch = begin; ch < end; ch++) {
        float *dst = f->out + ch * (int64_t)c->h * c->w;
        for (int64_t kh = 0; kh < c->r; kh++) {
            for (int64_t kw = 0; kw < c->s; kw++) {
                const float *src = f->cols + ((ch * c->r + kh) * c->s + kw) * p * q;
                for (int64_t y = 0; y < p; y++) {
                    int64_t iy = y * c->stride_h - c->pad_h + kh * c->dilation_h;
                    if (iy < 0 || iy >= c->h)
                        continue;
                    float *d = dst + iy * c->w;
                    const float *s = src + y * q;
                    if (c->stride_w == 1 && c->dilation_w == 1) {
                        int64_t ix0 = kw - c->pad_w;
                        int64_t x0 = ix0 < 0 ? -ix0 : 0;
                        int64_t x1 = c->w - ix0 < q ? c->w - ix0 : q;
                        for (int64_t x = x0; x < x1; x++)
                            d[ix0 + x] += s[x];
                    } else {
                        for (int64_t x = 0; x < q; x++) {
                            int64_t ix = x * c->stride_w - c->pad_w + kw * c->dilation_w;
                            if (ix >= 0 && ix < c->w)
                                d[ix] += s[x];
                        }
                    }
                }
            }
        }
    }
}

void tc_cpu_aten_fold(const tc_cpu_aten_geom_t *g, const float *cols, float *out)
{
    s_fold_t f = {g, cols, out};
    tc_cpu_aten_parallel_for(0, g->cg, 0, s_fold_planes, &f);
}

/* --- zero fill (at::Tensor::zero_: a TensorIterator over the elements) -- */

typedef struct {
    float *dst;
} s_fill_t;

static void s_zero_range(void *arg, int64_t begin, int64_t end)
{
    const s_fill_t *f = arg;
    memset(f->dst + begin, 0, (size_t)(end - begin) * sizeof(float));
}

void tc_cpu_aten_zero(float *dst, int64_t count)
{
    s_fill_t f = {dst};
    tc_cpu_aten_parallel_for(0, count, S_GRAIN, s_zero_range, &f);
}

/* --- bias: a broadcast copy, and a reduction over batch and space ---------- */

typedef struct {
    float *y;           /* n x kg x pq */
    const float *bias;  /* kg */
    int64_t kg, pq;
} s_bias_t;

/* A row (one channel of one sample) at a time: the element range is the
 * TensorIterator's, the channel found once per row, not divided out of every
 * element (two 64-bit divisions per element made a 1x1 conv's forward up to
 * four times PyTorch's). */
static void s_bias_fill_range(void *arg, int64_t begin, int64_t end)
{
    const s_bias_t *b = arg;
    for (int64_t i = begin; i < end;) {
        int64_t row = i / b->pq;
        int64_t stop = (row + 1) * b->pq < end ? (row + 1) * b->pq : end;
        float v = b->bias[row % b->kg];
        for (; i < stop; i++)
            b->y[i] = v;
    }
}

/* output.copy_(bias.reshape({-1, 1, 1})): a TensorIterator copy. */
void tc_cpu_aten_bias_fill(float *y, const float *bias, int64_t n, int64_t kg, int64_t pq)
{
    s_bias_t b = {y, bias, kg, pq};
    tc_cpu_aten_parallel_for(0, n * kg * pq, S_GRAIN, s_bias_fill_range, &b);
}

typedef struct {
    const float *dy;    /* n x kg x pq */
    float *db;          /* kg */
    int64_t n, kg, pq;
} s_bias_grad_t;

static void s_bias_grad_range(void *arg, int64_t begin, int64_t end)
{
    const s_bias_grad_t *b = arg;
    for (int64_t k = begin; k < end; k++) {
        float acc[4] = {0, 0, 0, 0};
        for (int64_t t = 0; t < b->n; t++) {
            const float *src = b->dy + (t * b->kg + k) * b->pq;
            int64_t i = 0;
            for (; i + 4 <= b->pq; i += 4) {
                acc[0] += src[i];
                acc[1] += src[i + 1];
                acc[2] += src[i + 2];
                acc[3] += src[i + 3];
            }
            for (; i < b->pq; i++)
                acc[0] += src[i];
        }
        b->db[k] = (acc[0] + acc[1]) + (acc[2] + acc[3]);
    }
}

/* at::sum_out(grad_bias, grad_output, {0, 2, 3}), split over the channels. */
void tc_cpu_aten_bias_grad(const float *dy, float *db, int64_t n, int64_t kg, int64_t pq)
{
    s_bias_grad_t b = {dy, db, n, kg, pq};
    tc_cpu_aten_parallel_for(0, kg, 0, s_bias_grad_range, &b);
}
