/* What the keys of every benchmarked op kind share (a conv: tc_conv_key.h;
 * a matmul: tc_matmul_key.h). A kind lists its key's fields once, as an
 * X-macro KEY(X, a, b) that calls X(a, b, name, kind, first) per field in
 * order: `kind` is U32 (an SQL integer), DTYPE or LAYOUT (SQL text: the
 * enum's name), or BOOL (SQL boolean); `first` is 1 for the first field,
 * else 0 (for separators); `a` and `b` pass through. Everything a key needs
 * (its struct members, total order, hash, JSON, and the store's column
 * lists, staging definitions and join conditions) is generated from that
 * list with the macros below, the same for every kind. */
#ifndef TC_OP_KEY_H
#define TC_OP_KEY_H

#include "tc_buf.h"
#include "tc_hash.h"
#include "traincast.pb-c.h"

#include <stdbool.h>
#include <stdint.h>

/* The benchmarked op kinds. */
typedef enum {
    TC_OP_CONV = 0,
    TC_OP_MATMUL = 1,
} tc_op_kind_t;

/* C type of each kind. */
#define TC_KEY_CTYPE_U32 uint32_t
#define TC_KEY_CTYPE_DTYPE Traincast__V1__DType
#define TC_KEY_CTYPE_LAYOUT Traincast__V1__Layout
#define TC_KEY_CTYPE_BOOL bool
/* The struct members: KEY(TC_KEY_MEMBER_, , ). */
#define TC_KEY_MEMBER_(a, b, name, kind, first) TC_KEY_CTYPE_##kind name;

/* Number of fields: 0 KEY(TC_KEY_ONE_, , ). */
#define TC_KEY_ONE_(a, b, name, kind, first) +1

/* Inside a comparison of pointers pa and pb: KEY(TC_KEY_CMP_, pa, pb)
 * returns at the first field that differs. */
#define TC_KEY_CMP_(pa, pb, name, kind, first)                                 \
    if ((pa)->name != (pb)->name)                                              \
        return (pa)->name < (pb)->name ? -1 : 1;

/* Continue 64-bit FNV-1a hash h over one field's value as 4 bytes. */
static inline uint64_t tc_key_hash_u32(uint64_t h, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        h = tc_fnv1a64_byte(h, (unsigned char)(v >> (8 * i)));
    return h;
}
/* KEY(TC_KEY_HASH_, h, pc): hash h over every field of *pc. */
#define TC_KEY_HASH_(h, pc, name, kind, first) h = tc_key_hash_u32(h, (uint32_t)(pc)->name);

/* JSON of one value of each kind. */
void tc_key_json_U32(tc_buf_t *b, uint32_t v);
void tc_key_json_DTYPE(tc_buf_t *b, Traincast__V1__DType v);
void tc_key_json_LAYOUT(tc_buf_t *b, Traincast__V1__Layout v);
void tc_key_json_BOOL(tc_buf_t *b, bool v);
/* KEY(TC_KEY_JSON_, buf, pc): "name":value,... (no braces). */
#define TC_KEY_JSON_(buf, pc, name, kind, first)                               \
    tc_buf_puts(buf, first ? "\"" #name "\":" : ",\"" #name "\":");            \
    tc_key_json_##kind(buf, (pc)->name);

/* ---- SQL, as string literals to concatenate ---- */

#define TC_SQL_TYPE_U32 "integer"
#define TC_SQL_TYPE_DTYPE "text"
#define TC_SQL_TYPE_LAYOUT "text"
#define TC_SQL_TYPE_BOOL "boolean"
#define TC_SQL_COMMA_1 ""
#define TC_SQL_COMMA_0 ", "
#define TC_SQL_AND_1 ""
#define TC_SQL_AND_0 " AND "

/* KEY(TC_SQL_COL_, p, ): "c, h, ..." with every column prefixed by `p` (a
 * string literal: "" or "cc."). */
#define TC_SQL_COL_(p, b, name, kind, first) TC_SQL_COMMA_##first p #name

/* KEY(TC_SQL_DEF_, , ): "c integer, ...": column definitions of a staging
 * table. */
#define TC_SQL_DEF_(a, b, name, kind, first) TC_SQL_COMMA_##first #name " " TC_SQL_TYPE_##kind

/* KEY(TC_SQL_EQ_, a, b): "a.c = b.c AND ...": two rows have the same key. */
#define TC_SQL_EQ_(a, b, name, kind, first) TC_SQL_AND_##first a "." #name " = " b "." #name

/* The same but the data type (a benchmark may run in another dtype than the
 * model's op, e.g. under AMP); the caller adds its dtype condition. */
#define TC_SQL_EQ_NOT_DTYPE_U32(a, b, name, first) TC_SQL_EQ_(a, b, name, U32, first)
#define TC_SQL_EQ_NOT_DTYPE_LAYOUT(a, b, name, first) TC_SQL_EQ_(a, b, name, LAYOUT, first)
#define TC_SQL_EQ_NOT_DTYPE_BOOL(a, b, name, first) TC_SQL_EQ_(a, b, name, BOOL, first)
#define TC_SQL_EQ_NOT_DTYPE_DTYPE(a, b, name, first)
#define TC_SQL_EQ_NOT_DTYPE_(a, b, name, kind, first) TC_SQL_EQ_NOT_DTYPE_##kind(a, b, name, first)

#endif
