/* A growable byte buffer for building text (COPY rows, JSON, reports).
 * A failed allocation sets `failed` and later appends do nothing, so callers
 * check once at the end. Zero-initialize before use. */
#ifndef TC_BUF_H
#define TC_BUF_H

#include <stdarg.h>
#include <stddef.h>

typedef struct {
    char *data; /* NUL-terminated when len > 0 */
    size_t len;
    size_t cap;
    int failed;
} tc_buf_t;

void tc_buf_append(tc_buf_t *b, const char *s, size_t n);
void tc_buf_puts(tc_buf_t *b, const char *s);
void tc_buf_putc(tc_buf_t *b, char c);
void tc_buf_printf(tc_buf_t *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void tc_buf_vprintf(tc_buf_t *b, const char *fmt, va_list ap);
/* Append `s` as a JSON string literal, quotes included. */
void tc_buf_json_str(tc_buf_t *b, const char *s);
/* Append a double as JSON (null for NaN and infinities). */
void tc_buf_json_num(tc_buf_t *b, double v);
void tc_buf_reset(tc_buf_t *b);
/* Drop what was appended after the first `len` bytes (no-op when shorter). */
void tc_buf_truncate(tc_buf_t *b, size_t len);
void tc_buf_free(tc_buf_t *b);
/* The text so far ("" when empty). */
const char *tc_buf_str(const tc_buf_t *b);

#endif
