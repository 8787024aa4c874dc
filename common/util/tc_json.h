/* Strict, bounded JSON reading (RFC 8259) for protocol lines such as the
 * trace runner's (docs/trace-protocol.md) and benchmark-set headers, on
 * jansson.
 *
 * Strict: exactly one value, optional whitespace around it; no comments,
 * trailing commas, single quotes, leading zeros, NaN or Infinity; strings
 * must be valid UTF-8 without raw control characters; duplicate object keys
 * and "\u0000" are rejected (jansson's rules with JSON_REJECT_DUPLICATES).
 * Bounded: the text length is capped before parsing, the nesting depth and
 * the number of values after (jansson itself stops at 2048 levels, so a
 * hostile nesting costs at most that).
 *
 * A parsed document owns every value and string in it; values are valid
 * until tc_json_destroy. Object members keep the document's order. */
#ifndef TC_JSON_H
#define TC_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum {
    TC_JSON_NULL = 0,
    TC_JSON_BOOL,
    TC_JSON_NUMBER,
    TC_JSON_STRING,
    TC_JSON_ARRAY,
    TC_JSON_OBJECT,
} tc_json_type_t;

typedef struct tc_json tc_json_t;
typedef struct tc_json_value tc_json_value_t;

typedef struct {
    size_t max_bytes;  /* 0: 1 MiB */
    size_t max_depth;  /* 0: 32 (nesting of arrays and objects) */
    size_t max_values; /* 0: 65536 (every value counts, keys excluded) */
} tc_json_limits_t;

/* Parse `len` bytes of `text` (need not be NUL-terminated). Returns 0, or
 * TC_EPARSE (with the byte offset and what was expected), TC_ELIMIT (over a
 * cap) or TC_ENOMEM, with a message. `limits` may be NULL for defaults. */
int tc_json_parse(const char *text, size_t len, const tc_json_limits_t *limits, tc_json_t **out);
/* Accepts NULL; nulls the caller's pointer. */
void tc_json_destroy(tc_json_t **self_p);

const tc_json_value_t *tc_json_root(const tc_json_t *doc);

tc_json_type_t tc_json_type(const tc_json_value_t *v);
/* "null", "bool", "number", "string", "array", "object". */
const char *tc_json_type_name(tc_json_type_t t);

bool tc_json_bool(const tc_json_value_t *v);        /* false unless a true bool */
double tc_json_number(const tc_json_value_t *v);    /* 0 unless a number; always finite */
/* True when the number was written as an integer literal (no fraction or
 * exponent) that fits int64; *out gets its exact value. */
bool tc_json_int(const tc_json_value_t *v, int64_t *out);
const char *tc_json_string(const tc_json_value_t *v); /* NULL unless a string */
size_t tc_json_string_len(const tc_json_value_t *v);

/* Arrays and objects: number of elements or members. */
size_t tc_json_len(const tc_json_value_t *v);
/* The i-th element of an array, or NULL. */
const tc_json_value_t *tc_json_at(const tc_json_value_t *v, size_t i);

/* The members of an object in document order:
 *   for (const tc_json_member_t *m = tc_json_first(o); m; m = tc_json_next(o, m))
 *       use(tc_json_member_key(m), tc_json_member_value(m));
 * tc_json_first is NULL for an empty object or a value that is not one. */
typedef struct tc_json_member tc_json_member_t;
const tc_json_member_t *tc_json_first(const tc_json_value_t *obj);
const tc_json_member_t *tc_json_next(const tc_json_value_t *obj, const tc_json_member_t *m);
const char *tc_json_member_key(const tc_json_member_t *m);
const tc_json_value_t *tc_json_member_value(const tc_json_member_t *m);
/* Member `key` of an object, or NULL when absent (or `v` is not an object). */
const tc_json_value_t *tc_json_get(const tc_json_value_t *v, const char *key);

#endif
