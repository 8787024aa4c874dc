/* The matmul key: the fields that identify a matrix multiply as a
 * benchmarked op (a Linear's GEMM, an attention's batched matmul), listed
 * once like the conv key (tc_op_key.h says what is generated from the
 * list). The sizes are per sample: where the mini-batch goes is the field
 * `minibatch_in`, so one key stands for every batch size, as a conv key
 * does. */
#ifndef TC_MATMUL_KEY_H
#define TC_MATMUL_KEY_H

#include "tc_op_key.h"

/* Where the mini-batch enters a matmul's sizes (field minibatch_in). */
typedef enum {
    TC_MM_MB_NONE = 0, /* nowhere: the product is the same at any batch size */
    TC_MM_MB_ROWS = 1, /* it multiplies the rows m (a Linear on a batch of rows) */
    TC_MM_MB_BATCH = 2, /* it multiplies the count of products (a batched matmul) */
} tc_mm_minibatch_t;

#define TC_MATMUL_KEY(X, a, b)                                                 \
    X(a, b, batch, U32, 1)        /* independent products per sample */        \
    X(a, b, m, U32, 0)            /* rows of the product (per sample) */       \
    X(a, b, n, U32, 0)            /* columns of the product */                 \
    X(a, b, k, U32, 0)            /* the contracted dimension */               \
    X(a, b, minibatch_in, U32, 0) /* tc_mm_minibatch_t */                      \
    X(a, b, trans_a, BOOL, 0)     /* A is read transposed: stored [k, m] */    \
    X(a, b, trans_b, BOOL, 0)     /* B is read transposed: stored [n, k] */    \
    X(a, b, weight, BOOL, 0)      /* B is a parameter (a Linear's weight) */   \
    X(a, b, bias, BOOL, 0)        /* a bias is added in the call (addmm) */    \
    X(a, b, dtype, DTYPE, 0)      /* the data type it runs in */

/* Number of fields. */
enum { TC_MATMUL_KEY_FIELDS = 0 TC_MATMUL_KEY(TC_KEY_ONE_, , ) };

/* ---- SQL, as string literals to concatenate (tc_op_key.h) ---- */

#define TC_SQL_MATMUL_KEY_COLS(p) TC_MATMUL_KEY(TC_SQL_COL_, p, )
#define TC_SQL_MATMUL_KEY_DEFS TC_MATMUL_KEY(TC_SQL_DEF_, , )
#define TC_SQL_MATMUL_KEY_EQ(a, b) TC_MATMUL_KEY(TC_SQL_EQ_, a, b)
#define TC_SQL_MATMUL_KEY_EQ_NOT_DTYPE(a, b) TC_MATMUL_KEY(TC_SQL_EQ_NOT_DTYPE_, a, b)

#endif
