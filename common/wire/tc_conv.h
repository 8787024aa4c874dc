/* A convolution's shape as plain C, with the arithmetic every module needs.
 * `n` is the mini-batch, 0 where the config is listed without one. */
#ifndef TC_CONV_H
#define TC_CONV_H

#include "traincast.pb-c.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct {
    uint32_t n, c, h, w; /* input: batch, channels, height, width */
    uint32_t k, r, s;    /* output channels, filter height, filter width */
    uint32_t pad_h, pad_w;
    uint32_t stride_h, stride_w;
    uint32_t dilation_h, dilation_w;
    uint32_t groups;
    Traincast__V1__DType dtype;
    Traincast__V1__Layout layout;
    bool bias;           /* the layer adds a bias: timed with the conv (forward) and its
                            gradient with backward-filter, as the framework runs them */
} tc_conv_config_t;

/* A config with stride, dilation and groups 1, fp32, NCHW. */
tc_conv_config_t tc_conv_config_default(void);

/* Output height and width (0 if the filter does not fit). */
uint32_t tc_conv_out_h(const tc_conv_config_t *c);
uint32_t tc_conv_out_w(const tc_conv_config_t *c);

/* Forward multiply-accumulates for the whole batch (n; n = 0 counts as 1). */
double tc_conv_macs(const tc_conv_config_t *c);
/* Filter parameters including no bias. */
uint64_t tc_conv_weight_count(const tc_conv_config_t *c);

/* 0 if usable, else TC_EINVAL naming the problem. */
int tc_conv_config_check(const tc_conv_config_t *c);

/* Total order over all fields (for sorting and deduplication). */
int tc_conv_config_cmp(const tc_conv_config_t *a, const tc_conv_config_t *b);

/* A short readable label: "n32 c64 56x56 k64 3x3/1 p1" (+ " g32", " d2",
 * " +bias"). */
void tc_conv_config_label(const tc_conv_config_t *c, char *buf, size_t size);

/* Conversion to and from the wire type. to_proto fills a caller-owned,
 * already-initialized message. */
void tc_conv_config_to_proto(const tc_conv_config_t *c, Traincast__V1__ConvConfig *out);
void tc_conv_config_from_proto(const Traincast__V1__ConvConfig *in, tc_conv_config_t *out);

#endif
