/* The ATen building blocks of the native CPU conv path, defined in
 * cpu_native_aten.c and used by cpu_native.c. Private to those two files. */
#ifndef TC_CPU_NATIVE_ATEN_H
#define TC_CPU_NATIVE_ATEN_H

#include "cpu_internal.h"

/* --- the geometry of one group ------------------------------------------- */

typedef struct {
    const tc_conv_config_t *c;
    int64_t cg, kg, p, q, crs, pq;
    const tc_blas_t *blas;
} tc_cpu_aten_geom_t;

/* at::parallel_for (OpenMP backend): f(ctx, b, e) over [begin, end) on the
 * calling thread (one element, one thread, already in a parallel region,
 * or at most `grain` elements), else in one static chunk per thread. */
typedef void (*tc_cpu_aten_body_t)(void *ctx, int64_t begin, int64_t end);
void tc_cpu_aten_parallel_for(int64_t begin, int64_t end, int64_t grain, tc_cpu_aten_body_t f,
                              void *ctx);

/* im2col of one sample (cg x h x w) into cols (crs x pq). */
void tc_cpu_aten_unfold(const tc_cpu_aten_geom_t *g, const float *in, float *cols);
/* col2im: cols (crs x pq) added into one sample (cg x h x w). */
void tc_cpu_aten_fold(const tc_cpu_aten_geom_t *g, const float *cols, float *out);
/* at::Tensor::zero_ of `count` floats. */
void tc_cpu_aten_zero(float *dst, int64_t count);
/* output.copy_(bias.reshape({-1, 1, 1})) into y (n x kg x pq). */
void tc_cpu_aten_bias_fill(float *y, const float *bias, int64_t n, int64_t kg, int64_t pq);
/* at::sum_out(grad_bias, grad_output, {0, 2, 3}) of dy (n x kg x pq). */
void tc_cpu_aten_bias_grad(const float *dy, float *db, int64_t n, int64_t kg, int64_t pq);

#endif
