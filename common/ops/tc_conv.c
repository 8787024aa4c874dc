#include "tc_conv.h"

#include "tc_error.h"
#include "tc_wire.h"

#include <stdio.h>
#include <string.h>

tc_conv_config_t tc_conv_config_default(void)
{
    tc_conv_config_t c;
    memset(&c, 0, sizeof c);
    c.stride_h = c.stride_w = 1;
    c.dilation_h = c.dilation_w = 1;
    c.groups = 1;
    c.dtype = TRAINCAST__V1__DTYPE__DTYPE_FP32;
    c.layout = TRAINCAST__V1__LAYOUT__LAYOUT_NCHW;
    return c;
}

static uint32_t s_out(uint32_t in, uint32_t pad, uint32_t k, uint32_t dil, uint32_t stride)
{
    uint64_t eff = (uint64_t)(k ? k - 1 : 0) * (dil ? dil : 1) + 1;
    uint64_t padded = (uint64_t)in + 2ull * pad;
    if (padded < eff || stride == 0)
        return 0;
    return (uint32_t)((padded - eff) / stride + 1);
}

uint32_t tc_conv_out_h(const tc_conv_config_t *c)
{
    return s_out(c->h, c->pad_h, c->r, c->dilation_h, c->stride_h);
}

uint32_t tc_conv_out_w(const tc_conv_config_t *c)
{
    return s_out(c->w, c->pad_w, c->s, c->dilation_w, c->stride_w);
}

double tc_conv_macs(const tc_conv_config_t *c)
{
    double n = c->n ? c->n : 1;
    double groups = c->groups ? c->groups : 1;
    return n * (double)c->k * tc_conv_out_h(c) * tc_conv_out_w(c) * ((double)c->c / groups) *
           c->r * c->s;
}

uint64_t tc_conv_weight_count(const tc_conv_config_t *c)
{
    uint64_t groups = c->groups ? c->groups : 1;
    return (uint64_t)c->k * (c->c / groups) * c->r * c->s;
}

int tc_conv_config_check(const tc_conv_config_t *c)
{
    if (!c->c || !c->h || !c->w || !c->k || !c->r || !c->s)
        return tc_fail(TC_EINVAL, "conv config: c, h, w, k, r and s must all be > 0");
    if (!c->stride_h || !c->stride_w || !c->dilation_h || !c->dilation_w || !c->groups)
        return tc_fail(TC_EINVAL, "conv config: stride, dilation and groups must be > 0");
    if (c->c % c->groups || c->k % c->groups)
        return tc_fail(TC_EINVAL, "conv config: groups %u must divide c %u and k %u", c->groups,
                       c->c, c->k);
    if (!tc_conv_out_h(c) || !tc_conv_out_w(c))
        return tc_fail(TC_EINVAL, "conv config: the %ux%u filter (dilation %u) does not fit the "
                                  "%ux%u input with padding %u",
                       c->r, c->s, c->dilation_h, c->h, c->w, c->pad_h);
    return 0;
}

int tc_conv_config_cmp(const tc_conv_config_t *a, const tc_conv_config_t *b)
{
    if (a->n != b->n)
        return a->n < b->n ? -1 : 1;
    return tc_conv_key_cmp(a, b);
}

int tc_conv_key_cmp(const tc_conv_config_t *a, const tc_conv_config_t *b)
{
    TC_CONV_KEY(TC_KEY_CMP_, a, b)
    return 0;
}

uint64_t tc_conv_key_hash(const tc_conv_config_t *c)
{
    uint64_t h = TC_FNV64_INIT;
    TC_CONV_KEY(TC_KEY_HASH_, h, c)
    return h;
}

void tc_conv_config_label(const tc_conv_config_t *c, char *buf, size_t size)
{
    char extra[64] = "";
    size_t used = 0;
    if (c->pad_h != c->pad_w)
        used += (size_t)snprintf(extra + used, sizeof extra - used, "x%u", c->pad_w);
    if (c->stride_h != c->stride_w && used < sizeof extra)
        used += (size_t)snprintf(extra + used, sizeof extra - used, " s%ux%u", c->stride_h,
                                 c->stride_w);
    if (c->groups > 1 && used < sizeof extra)
        used += (size_t)snprintf(extra + used, sizeof extra - used, " g%u", c->groups);
    if ((c->dilation_h > 1 || c->dilation_w > 1) && used < sizeof extra)
        used += (size_t)snprintf(extra + used, sizeof extra - used, " d%u", c->dilation_h);
    if (c->bias && used < sizeof extra)
        used += (size_t)snprintf(extra + used, sizeof extra - used, " +bias");
    if (c->layout == TRAINCAST__V1__LAYOUT__LAYOUT_NHWC && used < sizeof extra)
        snprintf(extra + used, sizeof extra - used, " nhwc");
    char batch[24] = "";
    if (c->n)
        snprintf(batch, sizeof batch, "n%u ", c->n);
    snprintf(buf, size, "%sc%u %ux%u k%u %ux%u/%u p%u%s", batch, c->c, c->h, c->w, c->k, c->r,
             c->s, c->stride_h, c->pad_h, extra);
}

void tc_conv_key_json(tc_buf_t *b, const tc_conv_config_t *c)
{
    TC_CONV_KEY(TC_KEY_JSON_, b, c)
}

void tc_conv_config_to_proto(const tc_conv_config_t *c, Traincast__V1__ConvConfig *out)
{
    out->n = c->n;
#define X(x, y, name, kind, first) out->name = c->name;
    TC_CONV_KEY(X, , )
#undef X
}

void tc_conv_config_from_proto(const Traincast__V1__ConvConfig *in, tc_conv_config_t *out)
{
    out->n = in->n;
#define X(x, y, name, kind, first) out->name = in->name;
    TC_CONV_KEY(X, , )
#undef X
}
