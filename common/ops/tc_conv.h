/* A convolution's shape as plain C, with the arithmetic every module needs.
 * `n` is the mini-batch, 0 where the config is listed without one. */
#ifndef TC_CONV_H
#define TC_CONV_H

#include "tc_buf.h"
#include "tc_conv_key.h"
#include "traincast.pb-c.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct {
    uint32_t n; /* the mini-batch; 0 where the config is listed without one */
    /* c, h, w, k, r, s, pad_h, pad_w, stride_h, stride_w, dilation_h,
     * dilation_w, groups, dtype, layout, bias: the conv key (tc_conv_key.h) */
    TC_CONV_KEY(TC_KEY_MEMBER_, , )
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

/* Total order over all fields, the batch first (for sorting and
 * deduplication). */
int tc_conv_config_cmp(const tc_conv_config_t *a, const tc_conv_config_t *b);
/* The same order, the batch left out: the conv key's fields alone. */
int tc_conv_key_cmp(const tc_conv_config_t *a, const tc_conv_config_t *b);
/* A hash of the conv key's fields alone (the batch left out), equal for
 * configs that tc_conv_key_cmp finds equal. */
uint64_t tc_conv_key_hash(const tc_conv_config_t *c);

/* A short readable label: "n32 c64 56x56 k64 3x3/1 p1" (+ " g32", " d2",
 * " +bias", " nhwc"). */
void tc_conv_config_label(const tc_conv_config_t *c, char *buf, size_t size);

/* The conv key as JSON object members, compact: "c":64,"h":56,...,
 * "dtype":"fp32","layout":"nchw","bias":false (no braces; the batch is not
 * part of it). */
void tc_conv_key_json(tc_buf_t *b, const tc_conv_config_t *c);

/* Conversion to and from the wire type. to_proto fills a caller-owned,
 * already-initialized message. */
void tc_conv_config_to_proto(const tc_conv_config_t *c, Traincast__V1__ConvConfig *out);
void tc_conv_config_from_proto(const Traincast__V1__ConvConfig *in, tc_conv_config_t *out);

#endif
