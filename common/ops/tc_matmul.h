/* A matrix multiply's shape as plain C, the second benchmarked op kind
 * beside the conv (tc_conv.h): C = op(A) op(B) (+ bias), `batch` products
 * of [m, k] x [k, n] per sample. `minibatch` is the mini-batch, 0 where the
 * config is listed without one; the sizes of the call at a mini-batch
 * follow from the key's minibatch_in (tc_matmul_key.h). */
#ifndef TC_MATMUL_H
#define TC_MATMUL_H

#include "tc_buf.h"
#include "tc_matmul_key.h"
#include "traincast.pb-c.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct {
    uint32_t minibatch; /* 0 where the config is listed without one */
    /* batch, m, n, k, minibatch_in, trans_a, trans_b, weight, bias, dtype:
     * the matmul key (tc_matmul_key.h) */
    TC_MATMUL_KEY(TC_KEY_MEMBER_, , )
} tc_matmul_config_t;

/* One call of a (batched) GEMM in row-major terms: `count` products
 * C[m, n] = op(A)[m, k] op(B)[k, n], op(X) = X^T where trans_x (X stored
 * [k, m] for A, [n, k] for B). `bias`: the output starts as a broadcast
 * bias row (addmm's beta = 1), else it is overwritten. */
typedef struct {
    uint64_t count;
    uint64_t m, n, k;
    bool trans_a, trans_b;
    bool bias;
} tc_gemm_t;

/* A config of batch 1, fp32, the mini-batch in the rows, no transposes. */
tc_matmul_config_t tc_matmul_config_default(void);

/* The forward call at the config's mini-batch (0 counts as 1). */
tc_gemm_t tc_matmul_forward(const tc_matmul_config_t *c);

/* Multiply-accumulates of a call, and of the forward at the config's
 * mini-batch (0 counts as 1). */
double tc_gemm_macs(const tc_gemm_t *g);
double tc_matmul_macs(const tc_matmul_config_t *c);

/* 0 if usable, else TC_EINVAL naming the problem. */
int tc_matmul_config_check(const tc_matmul_config_t *c);

/* Total order over all fields, the mini-batch first (for sorting and
 * deduplication); the same without it (the key alone); a hash of the key
 * alone, equal where tc_matmul_key_cmp finds keys equal. */
int tc_matmul_config_cmp(const tc_matmul_config_t *a, const tc_matmul_config_t *b);
int tc_matmul_key_cmp(const tc_matmul_config_t *a, const tc_matmul_config_t *b);
uint64_t tc_matmul_key_hash(const tc_matmul_config_t *c);

/* "none", "rows", "batch". */
const char *tc_mm_minibatch_name(tc_mm_minibatch_t w);
/* The place a name gives (*out a tc_mm_minibatch_t); TC_EINVAL for none. */
int tc_mm_minibatch_parse(const char *name, uint32_t *out);

/* A short readable label: "Nx197 768x2304 k768 tB +bias" for a Linear on
 * 197 rows per sample, "12N 197x197 k64 tB" for 12 products per sample
 * ("n32 " first where the mini-batch is set). */
void tc_matmul_config_label(const tc_matmul_config_t *c, char *buf, size_t size);

/* The matmul key as JSON object members, compact (no braces; the
 * mini-batch is not part of it). */
void tc_matmul_key_json(tc_buf_t *b, const tc_matmul_config_t *c);

/* Conversion to and from the wire type (MatmulConfig, whose fields are the
 * key's names and the mini-batch), generated from the key's list as the
 * conv's. to_proto fills a caller-owned, already-initialized message. */
void tc_matmul_config_to_proto(const tc_matmul_config_t *c, Traincast__V1__MatmulConfig *out);
void tc_matmul_config_from_proto(const Traincast__V1__MatmulConfig *in, tc_matmul_config_t *out);

#endif
