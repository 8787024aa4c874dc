/* The field checks the message validators use (tc_validate_internal.h):
 * UTF-8, names and texts, finite ranges, unsigned ranges, unix times and
 * counts, each failing with a message naming the field by its path. */
#include "tc_validate_internal.h"

#include "tc_validate.h"
#include "tc_error.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

int tc_field_bad(const char *path, const char *field, const char *fmt, ...)
{
    char why[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    return tc_fail(TC_EINVAL, "%s%s%s: %s", path, *path && *field ? "." : "", field, why);
}

bool tc_utf8_valid(const char *s, size_t len)
{
    const unsigned char *p = (const unsigned char *)s, *end = p + len;
    while (p < end) {
        unsigned c = *p;
        if (c < 0x80) {
            p++;
            continue;
        }
        size_t n;
        unsigned cp, min;
        if (c >= 0xc2 && c <= 0xdf) {
            n = 1, cp = c & 0x1f, min = 0x80;
        } else if (c >= 0xe0 && c <= 0xef) {
            n = 2, cp = c & 0x0f, min = 0x800;
        } else if (c >= 0xf0 && c <= 0xf4) {
            n = 3, cp = c & 0x07, min = 0x10000;
        } else {
            return false; /* a continuation byte, an overlong lead, or past U+10FFFF */
        }
        if ((size_t)(end - p) <= n)
            return false;
        for (size_t i = 1; i <= n; i++) {
            if ((p[i] & 0xc0) != 0x80)
                return false;
            cp = cp << 6 | (p[i] & 0x3f);
        }
        if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
            return false;
        p += n + 1;
    }
    return true;
}

/* A string field: at most `max` bytes of UTF-8; names (`text` false) have no
 * control character, texts none but tab, newline and carriage return. */
int tc_field_string(const char *path, const char *field, const char *s, int required,
                    size_t max, bool text)
{
    if (!s || !*s) {
        if (required)
            return tc_field_bad(path, field, "must not be empty");
        return 0;
    }
    size_t n = strnlen(s, max + 1);
    if (n > max)
        return tc_field_bad(path, field, "is longer than %zu bytes", max);
    if (!tc_utf8_valid(s, n))
        return tc_field_bad(path, field, "is not valid UTF-8");
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if ((c < 0x20 || c == 0x7f) && !(text && (c == '\t' || c == '\n' || c == '\r')))
            return tc_field_bad(path, field, "contains the control character 0x%02x at byte %zu", c,
                                i);
    }
    return 0;
}

int tc_field_name(const char *path, const char *field, const char *s, int required)
{
    return tc_field_string(path, field, s, required, TC_MAX_NAME_LEN, false);
}

int tc_field_text(const char *path, const char *field, const char *s)
{
    return tc_field_string(path, field, s, 0, TC_MAX_TEXT_LEN, true);
}

/* A finite double in (0, max] or, with `zero`, [0, max]. */
int tc_field_range(const char *path, const char *field, double v, bool zero, double max)
{
    if (!isfinite(v) || v > max || (zero ? v < 0 : v <= 0))
        return tc_field_bad(path, field, "must be a finite number in %s0, %g] (got %g)",
                            zero ? "[" : "(", max, v);
    return 0;
}

int tc_field_pos(const char *path, const char *field, double v)
{
    return tc_field_range(path, field, v, false, TC_MAX_MS);
}

int tc_field_nonneg(const char *path, const char *field, double v)
{
    return tc_field_range(path, field, v, true, TC_MAX_MS);
}

int tc_field_uint(const char *path, const char *field, unsigned long long v,
                  unsigned long long min, unsigned long long max)
{
    if (v < min || v > max)
        return tc_field_bad(path, field, "must be between %llu and %llu (got %llu)", min, max, v);
    return 0;
}

/* A unix time in microseconds: 0 (unknown) or within 2000 .. 2100. */
int tc_field_time(const char *path, const char *field, int64_t us)
{
    if (us != 0 && (us < TC_MIN_TIME_US || us > TC_MAX_TIME_US))
        return tc_field_bad(path, field,
                            "must be 0 or a unix time in microseconds between the years "
                            "2000 and 2100 (got %lld)",
                            (long long)us);
    return 0;
}

int tc_field_count(const char *path, const char *field, size_t n)
{
    if (n > TC_MAX_ITEMS)
        return tc_field_bad(path, field, "has %zu items, more than the limit of %u", n,
                            TC_MAX_ITEMS);
    return 0;
}
