/* The conv key: the fields that identify a convolution configuration, one
 * row of table conv_configs (its UNIQUE key). This table is the only place
 * they are listed; everything that lists them is generated from it: the C
 * struct (tc_conv_config_t, after its batch n), the copy to and from the
 * wire message ConvConfig and the total order (tc_conv.c), and in the store
 * the column lists, staging column definitions, COPY rows, row readers and
 * join conditions. test_store checks that the migrated schema's UNIQUE key
 * of conv_configs is this list, in this order.
 *
 * TC_CONV_KEY(X, a, b) calls X(a, b, name, kind, first) once per field, in
 * order, as every op kind's key does (tc_op_key.h: the kinds, and the
 * macros that generate the rest from the list). */
#ifndef TC_CONV_KEY_H
#define TC_CONV_KEY_H

#include "tc_op_key.h"

#define TC_CONV_KEY(X, a, b)                                                   \
    X(a, b, c, U32, 1)          /* input channels */                           \
    X(a, b, h, U32, 0)          /* input height */                             \
    X(a, b, w, U32, 0)          /* input width */                              \
    X(a, b, k, U32, 0)          /* output channels */                          \
    X(a, b, r, U32, 0)          /* filter height */                            \
    X(a, b, s, U32, 0)          /* filter width */                             \
    X(a, b, pad_h, U32, 0)                                                     \
    X(a, b, pad_w, U32, 0)                                                     \
    X(a, b, stride_h, U32, 0)                                                  \
    X(a, b, stride_w, U32, 0)                                                  \
    X(a, b, dilation_h, U32, 0)                                                \
    X(a, b, dilation_w, U32, 0)                                                \
    X(a, b, groups, U32, 0)                                                    \
    X(a, b, dtype, DTYPE, 0)    /* the data type the conv runs in */           \
    X(a, b, layout, LAYOUT, 0)  /* memory layout */                            \
    X(a, b, bias, BOOL, 0)      /* the layer adds a bias: timed with the conv  \
                                   (forward) and its gradient with backward-  \
                                   filter, as the framework runs them */

/* Number of fields. */
enum { TC_CONV_KEY_FIELDS = 0 TC_CONV_KEY(TC_KEY_ONE_, , ) };

/* ---- SQL, as string literals to concatenate (tc_op_key.h) ---- */

/* "c, h, ..., bias" with every column prefixed by `p` (a string literal:
 * "" or "cc."). */
#define TC_SQL_CONV_KEY_COLS(p) TC_CONV_KEY(TC_SQL_COL_, p, )

/* "c integer, ..., bias boolean": column definitions of a staging table. */
#define TC_SQL_CONV_KEY_DEFS TC_CONV_KEY(TC_SQL_DEF_, , )

/* "a.c = b.c AND ... AND a.bias = b.bias": two rows have the same key. */
#define TC_SQL_CONV_KEY_EQ(a, b) TC_CONV_KEY(TC_SQL_EQ_, a, b)

/* The same but the data type; the caller adds its dtype condition. */
#define TC_SQL_CONV_KEY_EQ_NOT_DTYPE(a, b) TC_CONV_KEY(TC_SQL_EQ_NOT_DTYPE_, a, b)

#endif
