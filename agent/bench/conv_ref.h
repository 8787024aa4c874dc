/* Naive reference convolutions in double precision, for checking every
 * backend's results (strides, padding, groups, dilation). Tensors are
 * float in logical order: x (n, c, h, w), w (k, c / groups, r, s), b (k),
 * y (n, k, p, q). Small shapes only: O(everything) loops. */
#ifndef TC_CONV_REF_H
#define TC_CONV_REF_H

#include "tc_conv.h"

#include <stddef.h>

/* y = conv(x, w) + b (b may be NULL). Return 0 or TC_ENOMEM. */
int tc_conv_ref_fwd(const tc_conv_config_t *c, const float *x, const float *w, const float *b,
                    float *y);
/* dx = gradient of the input for output gradient dy. */
int tc_conv_ref_bwd_data(const tc_conv_config_t *c, const float *dy, const float *w, float *dx);
/* dw (and db when not NULL) = gradients of the filter and bias. */
int tc_conv_ref_bwd_filter(const tc_conv_config_t *c, const float *x, const float *dy, float *dw,
                           float *db);

/* Terms summed into one output value of a direction (for tolerances). */
double tc_conv_ref_terms(const tc_conv_config_t *c, int direction);

/* Compare got with ref: an element is wrong when |got - ref| > atol +
 * rtol * |ref| (or either is not finite). Returns how many are wrong;
 * *worst (may be NULL) is the index of the largest error. */
size_t tc_conv_ref_compare(const float *got, const float *ref, size_t n, double atol, double rtol,
                           size_t *worst);

#endif
