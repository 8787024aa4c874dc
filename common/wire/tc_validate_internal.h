/* The field checks shared by the message validators (tc_validate.c),
 * defined in tc_validate_field.c. Internal to the validator. Each returns
 * 0, or TC_EINVAL with a message naming the field as PATH.FIELD (just FIELD
 * when PATH is ""). */
#ifndef TC_VALIDATE_INTERNAL_H
#define TC_VALIDATE_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Fails with "PATH.FIELD: " and the formatted reason. */
int tc_field_bad(const char *path, const char *field, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* A string field: at most `max` bytes of UTF-8; names (`text` false) have no
 * control character, texts none but tab, newline and carriage return. Empty
 * or NULL fails only when `required`. */
int tc_field_string(const char *path, const char *field, const char *s, int required,
                    size_t max, bool text);
/* A name (TC_MAX_NAME_LEN) and a text (TC_MAX_TEXT_LEN, optional). */
int tc_field_name(const char *path, const char *field, const char *s, int required);
int tc_field_text(const char *path, const char *field, const char *s);

/* A finite double in (0, max] or, with `zero`, [0, max]. */
int tc_field_range(const char *path, const char *field, double v, bool zero, double max);
/* Milliseconds in (0, TC_MAX_MS] and [0, TC_MAX_MS]. */
int tc_field_pos(const char *path, const char *field, double v);
int tc_field_nonneg(const char *path, const char *field, double v);
int tc_field_uint(const char *path, const char *field, unsigned long long v,
                  unsigned long long min, unsigned long long max);
/* A unix time in microseconds: 0 (unknown) or within 2000 .. 2100. */
int tc_field_time(const char *path, const char *field, int64_t us);
/* A repeated field of at most TC_MAX_ITEMS items. */
int tc_field_count(const char *path, const char *field, size_t n);

#endif
