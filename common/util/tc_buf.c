#include "tc_buf.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int s_reserve(tc_buf_t *b, size_t extra)
{
    if (b->failed)
        return -1;
    if (b->len + extra + 1 <= b->cap)
        return 0;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->len + extra + 1) {
        if (cap > ((size_t)-1) / 2) {
            b->failed = 1;
            return -1;
        }
        cap *= 2;
    }
    char *d = realloc(b->data, cap);
    if (!d) {
        b->failed = 1;
        return -1;
    }
    b->data = d;
    b->cap = cap;
    return 0;
}

void tc_buf_append(tc_buf_t *b, const char *s, size_t n)
{
    if (s_reserve(b, n) < 0)
        return;
    memcpy(b->data + b->len, s, n);
    b->len += n;
    b->data[b->len] = '\0';
}

void tc_buf_puts(tc_buf_t *b, const char *s)
{
    tc_buf_append(b, s, strlen(s));
}

void tc_buf_putc(tc_buf_t *b, char c)
{
    tc_buf_append(b, &c, 1);
}

void tc_buf_vprintf(tc_buf_t *b, const char *fmt, va_list ap)
{
    va_list ap2;
    va_copy(ap2, ap);
    char small[256];
    int n = vsnprintf(small, sizeof small, fmt, ap);
    if (n < 0) {
        va_end(ap2);
        return;
    }
    if ((size_t)n < sizeof small) {
        tc_buf_append(b, small, (size_t)n);
    } else if (s_reserve(b, (size_t)n) == 0) {
        vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap2);
        b->len += (size_t)n;
    }
    va_end(ap2);
}

void tc_buf_printf(tc_buf_t *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    tc_buf_vprintf(b, fmt, ap);
    va_end(ap);
}

void tc_buf_json_str(tc_buf_t *b, const char *s)
{
    tc_buf_putc(b, '"');
    for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
        switch (*p) {
        case '"': tc_buf_puts(b, "\\\""); break;
        case '\\': tc_buf_puts(b, "\\\\"); break;
        case '\n': tc_buf_puts(b, "\\n"); break;
        case '\r': tc_buf_puts(b, "\\r"); break;
        case '\t': tc_buf_puts(b, "\\t"); break;
        default:
            if (*p < 0x20)
                tc_buf_printf(b, "\\u%04x", *p);
            else
                tc_buf_putc(b, (char)*p);
        }
    }
    tc_buf_putc(b, '"');
}

void tc_buf_json_num(tc_buf_t *b, double v)
{
    if (!isfinite(v))
        tc_buf_puts(b, "null");
    else
        tc_buf_printf(b, "%.10g", v);
}

void tc_buf_reset(tc_buf_t *b)
{
    b->len = 0;
    if (b->data)
        b->data[0] = '\0';
}

void tc_buf_truncate(tc_buf_t *b, size_t len)
{
    if (len >= b->len)
        return;
    b->len = len;
    b->data[len] = '\0';
}

void tc_buf_free(tc_buf_t *b)
{
    free(b->data);
    memset(b, 0, sizeof *b);
}

const char *tc_buf_str(const tc_buf_t *b)
{
    return b->data && !b->failed ? b->data : "";
}
