#include "tc_matmul.h"

#include "tc_error.h"
#include "tc_wire.h"

#include <stdio.h>
#include <string.h>

tc_matmul_config_t tc_matmul_config_default(void)
{
    tc_matmul_config_t c;
    memset(&c, 0, sizeof c);
    c.batch = 1;
    c.minibatch_in = TC_MM_MB_ROWS;
    c.dtype = TRAINCAST__V1__DTYPE__DTYPE_FP32;
    return c;
}

tc_gemm_t tc_matmul_forward(const tc_matmul_config_t *c)
{
    uint64_t mb = c->minibatch ? c->minibatch : 1;
    tc_gemm_t g = {c->batch, c->m, c->n, c->k, c->trans_a, c->trans_b, c->bias};
    if (c->minibatch_in == TC_MM_MB_ROWS)
        g.m *= mb;
    else if (c->minibatch_in == TC_MM_MB_BATCH)
        g.count *= mb;
    return g;
}

double tc_gemm_macs(const tc_gemm_t *g)
{
    return (double)g->count * (double)g->m * (double)g->n * (double)g->k;
}

double tc_matmul_macs(const tc_matmul_config_t *c)
{
    tc_gemm_t g = tc_matmul_forward(c);
    return tc_gemm_macs(&g);
}

int tc_matmul_config_check(const tc_matmul_config_t *c)
{
    if (!c->batch || !c->m || !c->n || !c->k)
        return tc_fail(TC_EINVAL, "matmul config: batch, m, n and k must all be > 0");
    if (c->minibatch_in > TC_MM_MB_BATCH)
        return tc_fail(TC_EINVAL, "matmul config: minibatch_in %u is none of 0 (none), "
                                  "1 (rows), 2 (batch)",
                       c->minibatch_in);
    if (c->bias && c->batch != 1)
        return tc_fail(TC_EINVAL, "matmul config: a bias is added by addmm, a single "
                                  "product (batch 1, not %u)",
                       c->batch);
    return 0;
}

int tc_matmul_config_cmp(const tc_matmul_config_t *a, const tc_matmul_config_t *b)
{
    if (a->minibatch != b->minibatch)
        return a->minibatch < b->minibatch ? -1 : 1;
    return tc_matmul_key_cmp(a, b);
}

int tc_matmul_key_cmp(const tc_matmul_config_t *a, const tc_matmul_config_t *b)
{
    TC_MATMUL_KEY(TC_KEY_CMP_, a, b)
    return 0;
}

uint64_t tc_matmul_key_hash(const tc_matmul_config_t *c)
{
    uint64_t h = TC_FNV64_INIT;
    TC_MATMUL_KEY(TC_KEY_HASH_, h, c)
    return h;
}

int tc_mm_minibatch_parse(const char *name, uint32_t *out)
{
    for (uint32_t w = TC_MM_MB_NONE; w <= TC_MM_MB_BATCH; w++)
        if (!strcmp(name, tc_mm_minibatch_name((tc_mm_minibatch_t)w))) {
            *out = w;
            return 0;
        }
    return TC_EINVAL;
}

const char *tc_mm_minibatch_name(tc_mm_minibatch_t w)
{
    switch (w) {
    case TC_MM_MB_NONE:
        return "none";
    case TC_MM_MB_ROWS:
        return "rows";
    case TC_MM_MB_BATCH:
        return "batch";
    }
    return "?";
}

void tc_matmul_config_label(const tc_matmul_config_t *c, char *buf, size_t size)
{
    char mb[24] = "", count[32] = "", rows[32];
    if (c->minibatch)
        snprintf(mb, sizeof mb, "n%u ", c->minibatch);
    if (c->minibatch_in == TC_MM_MB_BATCH)
        snprintf(count, sizeof count, c->batch > 1 ? "%uN " : "N ", c->batch);
    else if (c->batch > 1)
        snprintf(count, sizeof count, "%u ", c->batch);
    if (c->minibatch_in == TC_MM_MB_ROWS)
        snprintf(rows, sizeof rows, c->m > 1 ? "Nx%u" : "N", c->m);
    else
        snprintf(rows, sizeof rows, "%u", c->m);
    snprintf(buf, size, "%s%s%sx%u k%u%s%s%s%s%s%s", mb, count, rows, c->n, c->k,
             c->trans_a ? " tA" : "", c->trans_b ? " tB" : "", c->weight ? " weight" : "",
             c->bias ? " +bias" : "", c->dtype != TRAINCAST__V1__DTYPE__DTYPE_FP32 ? " " : "",
             c->dtype != TRAINCAST__V1__DTYPE__DTYPE_FP32 ? tc_dtype_name(c->dtype) : "");
}

void tc_matmul_key_json(tc_buf_t *b, const tc_matmul_config_t *c)
{
    TC_MATMUL_KEY(TC_KEY_JSON_, b, c)
}

void tc_matmul_config_to_proto(const tc_matmul_config_t *c, Traincast__V1__MatmulConfig *out)
{
    out->minibatch = c->minibatch;
#define X(x, y, name, kind, first) out->name = c->name;
    TC_MATMUL_KEY(X, , )
#undef X
}

void tc_matmul_config_from_proto(const Traincast__V1__MatmulConfig *in, tc_matmul_config_t *out)
{
    out->minibatch = in->minibatch;
#define X(x, y, name, kind, first) out->name = in->name;
    TC_MATMUL_KEY(X, , )
#undef X
}
