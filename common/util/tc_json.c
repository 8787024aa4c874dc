#include "tc_json.h"

#include "tc_error.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DEFAULT_MAX_BYTES (1u << 20)
#define DEFAULT_MAX_DEPTH 32u
#define DEFAULT_MAX_VALUES 65536u
#define MAX_NUMBER_CHARS 64u
#define ARENA_BLOCK 4096u

struct tc_json_value {
    tc_json_type_t type;
    bool b;
    bool is_int;
    int64_t i;
    double num;
    const char *str; /* strings: decoded, NUL-terminated */
    size_t len;      /* strings: bytes; arrays/objects: elements */
    const tc_json_value_t **items;
    const char **keys; /* objects */
};

/* Everything a document holds lives in a list of arena blocks. */
typedef struct block {
    struct block *next;
    size_t used, size;
    max_align_t data[];
} block_t;

struct tc_json {
    block_t *blocks;
    const tc_json_value_t *root;
};

/* Children of the containers being parsed, innermost last. */
typedef struct {
    const tc_json_value_t *value;
    const char *key;
} slot_t;

typedef struct {
    const char *p, *end, *start;
    tc_json_t *doc;
    tc_json_limits_t lim;
    size_t values;
    slot_t *stack;
    size_t n_stack, cap_stack;
} parser_t;

static void *s_alloc(tc_json_t *doc, size_t size)
{
    size = (size + sizeof(max_align_t) - 1) / sizeof(max_align_t) * sizeof(max_align_t);
    block_t *b = doc->blocks;
    if (!b || b->size - b->used < size) {
        size_t bsize = size > ARENA_BLOCK ? size : ARENA_BLOCK;
        b = malloc(sizeof *b + bsize);
        if (!b)
            return NULL;
        b->next = doc->blocks;
        b->used = 0;
        b->size = bsize;
        doc->blocks = b;
    }
    void *mem = (char *)b->data + b->used;
    b->used += size;
    memset(mem, 0, size);
    return mem;
}

static size_t s_off(const parser_t *ps)
{
    return (size_t)(ps->p - ps->start);
}

/* Describe the byte at the cursor for an error message. */
static const char *s_found(const parser_t *ps, char buf[16])
{
    if (ps->p >= ps->end)
        return "end of input";
    unsigned char c = (unsigned char)*ps->p;
    if (c >= 0x20 && c < 0x7f)
        snprintf(buf, 16, "'%c'", c);
    else
        snprintf(buf, 16, "byte 0x%02x", c);
    return buf;
}

static int s_expected(const parser_t *ps, const char *what)
{
    char buf[16];
    return tc_fail(TC_EPARSE, "JSON at byte %zu: expected %s, found %s", s_off(ps), what,
                   s_found(ps, buf));
}

static void s_skip_ws(parser_t *ps)
{
    while (ps->p < ps->end &&
           (*ps->p == ' ' || *ps->p == '\t' || *ps->p == '\n' || *ps->p == '\r'))
        ps->p++;
}

static int s_new_value(parser_t *ps, tc_json_type_t type, tc_json_value_t **out)
{
    if (ps->values >= ps->lim.max_values)
        return tc_fail(TC_ELIMIT, "JSON at byte %zu: more than %zu values", s_off(ps),
                       ps->lim.max_values);
    tc_json_value_t *v = s_alloc(ps->doc, sizeof *v);
    if (!v)
        return tc_fail(TC_ENOMEM, "out of memory parsing JSON");
    ps->values++;
    v->type = type;
    *out = v;
    return 0;
}

static int s_literal(parser_t *ps, const char *word)
{
    size_t n = strlen(word);
    if ((size_t)(ps->end - ps->p) < n || memcmp(ps->p, word, n) != 0)
        return s_expected(ps, "a value");
    ps->p += n;
    return 0;
}

static int s_digits(parser_t *ps)
{
    if (ps->p >= ps->end || *ps->p < '0' || *ps->p > '9')
        return s_expected(ps, "a digit");
    while (ps->p < ps->end && *ps->p >= '0' && *ps->p <= '9')
        ps->p++;
    return 0;
}

static int s_number(parser_t *ps, tc_json_value_t **out)
{
    const char *begin = ps->p;
    bool integral = true;
    int rc;
    if (*ps->p == '-')
        ps->p++;
    if (ps->p < ps->end && (*ps->p == 'I' || *ps->p == 'i'))
        return tc_fail(TC_EPARSE, "JSON at byte %zu: Infinity is not a JSON number", s_off(ps));
    if (ps->p < ps->end && *ps->p == '0') {
        ps->p++;
        if (ps->p < ps->end && *ps->p >= '0' && *ps->p <= '9')
            return tc_fail(TC_EPARSE, "JSON at byte %zu: numbers must not have leading zeros",
                           s_off(ps));
    } else if ((rc = s_digits(ps)) < 0) {
        return rc;
    }
    if (ps->p < ps->end && *ps->p == '.') {
        ps->p++;
        integral = false;
        if ((rc = s_digits(ps)) < 0)
            return rc;
    }
    if (ps->p < ps->end && (*ps->p == 'e' || *ps->p == 'E')) {
        ps->p++;
        integral = false;
        if (ps->p < ps->end && (*ps->p == '+' || *ps->p == '-'))
            ps->p++;
        if ((rc = s_digits(ps)) < 0)
            return rc;
    }
    size_t n = (size_t)(ps->p - begin);
    if (n > MAX_NUMBER_CHARS)
        return tc_fail(TC_ELIMIT, "JSON at byte %zu: number literal longer than %u characters",
                       (size_t)(begin - ps->start), MAX_NUMBER_CHARS);
    char tmp[MAX_NUMBER_CHARS + 1];
    memcpy(tmp, begin, n);
    tmp[n] = '\0';
    tc_json_value_t *v;
    if ((rc = s_new_value(ps, TC_JSON_NUMBER, &v)) < 0)
        return rc;
    v->num = strtod(tmp, NULL);
    if (!isfinite(v->num))
        return tc_fail(TC_EPARSE, "JSON at byte %zu: number %s is out of range",
                       (size_t)(begin - ps->start), tmp);
    if (integral) {
        errno = 0;
        long long ll = strtoll(tmp, NULL, 10);
        if (errno == 0) {
            v->is_int = true;
            v->i = ll;
        }
    }
    *out = v;
    return 0;
}

static int s_hex4(parser_t *ps, unsigned *out)
{
    unsigned v = 0;
    for (int k = 0; k < 4; k++) {
        if (ps->p >= ps->end)
            return s_expected(ps, "4 hex digits after \\u");
        char c = *ps->p;
        unsigned d;
        if (c >= '0' && c <= '9')
            d = (unsigned)(c - '0');
        else if (c >= 'a' && c <= 'f')
            d = (unsigned)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F')
            d = (unsigned)(c - 'A' + 10);
        else
            return s_expected(ps, "4 hex digits after \\u");
        v = v << 4 | d;
        ps->p++;
    }
    *out = v;
    return 0;
}

static size_t s_put_utf8(char *o, unsigned cp)
{
    if (cp < 0x80) {
        o[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        o[0] = (char)(0xc0 | cp >> 6);
        o[1] = (char)(0x80 | (cp & 0x3f));
        return 2;
    }
    if (cp < 0x10000) {
        o[0] = (char)(0xe0 | cp >> 12);
        o[1] = (char)(0x80 | (cp >> 6 & 0x3f));
        o[2] = (char)(0x80 | (cp & 0x3f));
        return 3;
    }
    o[0] = (char)(0xf0 | cp >> 18);
    o[1] = (char)(0x80 | (cp >> 12 & 0x3f));
    o[2] = (char)(0x80 | (cp >> 6 & 0x3f));
    o[3] = (char)(0x80 | (cp & 0x3f));
    return 4;
}

/* Length of the valid UTF-8 sequence at p (1..4), or 0 if invalid
 * (overlong forms, surrogates and code points above U+10FFFF included). */
static size_t s_utf8_len(const unsigned char *p, const unsigned char *end)
{
    unsigned c = p[0];
    size_t n;
    unsigned cp, min;
    if (c < 0x80)
        return 1;
    if ((c & 0xe0) == 0xc0) {
        n = 2, cp = c & 0x1f, min = 0x80;
    } else if ((c & 0xf0) == 0xe0) {
        n = 3, cp = c & 0x0f, min = 0x800;
    } else if ((c & 0xf8) == 0xf0) {
        n = 4, cp = c & 0x07, min = 0x10000;
    } else {
        return 0;
    }
    if ((size_t)(end - p) < n)
        return 0;
    for (size_t k = 1; k < n; k++) {
        if ((p[k] & 0xc0) != 0x80)
            return 0;
        cp = cp << 6 | (p[k] & 0x3f);
    }
    if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
        return 0;
    return n;
}

/* A string literal at the cursor (on the opening quote), decoded. */
static int s_string(parser_t *ps, const char **out, size_t *out_len)
{
    ps->p++; /* opening quote */
    const char *q = ps->p;
    /* Find the closing quote to size the output; escapes only shrink. */
    while (q < ps->end && *q != '"') {
        if (*q == '\\' && q + 1 < ps->end)
            q++;
        q++;
    }
    if (q >= ps->end)
        return tc_fail(TC_EPARSE, "JSON at byte %zu: unterminated string", s_off(ps) - 1);
    char *buf = s_alloc(ps->doc, (size_t)(q - ps->p) + 1);
    if (!buf)
        return tc_fail(TC_ENOMEM, "out of memory parsing JSON");
    size_t n = 0;
    while (*ps->p != '"') {
        unsigned char c = (unsigned char)*ps->p;
        if (c < 0x20)
            return tc_fail(TC_EPARSE, "JSON at byte %zu: control character 0x%02x in a string "
                                      "(must be escaped)", s_off(ps), c);
        if (c != '\\') {
            size_t k = s_utf8_len((const unsigned char *)ps->p, (const unsigned char *)ps->end);
            if (k == 0)
                return tc_fail(TC_EPARSE, "JSON at byte %zu: invalid UTF-8 in a string",
                               s_off(ps));
            memcpy(buf + n, ps->p, k);
            n += k;
            ps->p += k;
            continue;
        }
        ps->p++;
        char e = *ps->p++;
        switch (e) {
        case '"': buf[n++] = '"'; break;
        case '\\': buf[n++] = '\\'; break;
        case '/': buf[n++] = '/'; break;
        case 'b': buf[n++] = '\b'; break;
        case 'f': buf[n++] = '\f'; break;
        case 'n': buf[n++] = '\n'; break;
        case 'r': buf[n++] = '\r'; break;
        case 't': buf[n++] = '\t'; break;
        case 'u': {
            unsigned cp, lo;
            int rc = s_hex4(ps, &cp);
            if (rc < 0)
                return rc;
            if (cp >= 0xdc00 && cp <= 0xdfff)
                return tc_fail(TC_EPARSE, "JSON at byte %zu: lone low surrogate \\u%04x",
                               s_off(ps) - 6, cp);
            if (cp >= 0xd800 && cp <= 0xdbff) {
                if (ps->end - ps->p < 2 || ps->p[0] != '\\' || ps->p[1] != 'u')
                    return tc_fail(TC_EPARSE, "JSON at byte %zu: high surrogate \\u%04x without "
                                              "its low half", s_off(ps) - 6, cp);
                ps->p += 2;
                if ((rc = s_hex4(ps, &lo)) < 0)
                    return rc;
                if (lo < 0xdc00 || lo > 0xdfff)
                    return tc_fail(TC_EPARSE, "JSON at byte %zu: \\u%04x is not a low surrogate",
                                   s_off(ps) - 6, lo);
                cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
            }
            if (cp == 0)
                return tc_fail(TC_EPARSE, "JSON at byte %zu: \\u0000 is not allowed in a string",
                               s_off(ps) - 6);
            n += s_put_utf8(buf + n, cp);
            break;
        }
        default:
            ps->p--;
            return tc_fail(TC_EPARSE, "JSON at byte %zu: invalid escape '\\%c'", s_off(ps) - 1,
                           e >= 0x20 && e < 0x7f ? e : '?');
        }
    }
    ps->p++; /* closing quote */
    buf[n] = '\0';
    *out = buf;
    *out_len = n;
    return 0;
}

static int s_push(parser_t *ps, const tc_json_value_t *v, const char *key)
{
    if (ps->n_stack == ps->cap_stack) {
        size_t cap = ps->cap_stack ? ps->cap_stack * 2 : 64;
        slot_t *ns = realloc(ps->stack, cap * sizeof *ns);
        if (!ns)
            return tc_fail(TC_ENOMEM, "out of memory parsing JSON");
        ps->stack = ns;
        ps->cap_stack = cap;
    }
    ps->stack[ps->n_stack++] = (slot_t){v, key};
    return 0;
}

/* Move the children pushed since `base` into the container. */
static int s_collect(parser_t *ps, tc_json_value_t *c, size_t base)
{
    size_t n = ps->n_stack - base;
    c->len = n;
    if (n == 0)
        return 0;
    c->items = s_alloc(ps->doc, n * sizeof *c->items);
    if (c->type == TC_JSON_OBJECT)
        c->keys = s_alloc(ps->doc, n * sizeof *c->keys);
    if (!c->items || (c->type == TC_JSON_OBJECT && !c->keys))
        return tc_fail(TC_ENOMEM, "out of memory parsing JSON");
    for (size_t k = 0; k < n; k++) {
        c->items[k] = ps->stack[base + k].value;
        if (c->keys)
            c->keys[k] = ps->stack[base + k].key;
    }
    ps->n_stack = base;
    return 0;
}

static int s_value(parser_t *ps, size_t depth, tc_json_value_t **out);

static int s_container(parser_t *ps, size_t depth, tc_json_value_t **out)
{
    bool object = *ps->p == '{';
    char close = object ? '}' : ']';
    if (depth >= ps->lim.max_depth)
        return tc_fail(TC_ELIMIT, "JSON at byte %zu: nested deeper than %zu levels", s_off(ps),
                       ps->lim.max_depth);
    tc_json_value_t *c;
    int rc = s_new_value(ps, object ? TC_JSON_OBJECT : TC_JSON_ARRAY, &c);
    if (rc < 0)
        return rc;
    ps->p++;
    size_t base = ps->n_stack;
    s_skip_ws(ps);
    if (ps->p < ps->end && *ps->p == close) {
        ps->p++;
        *out = c;
        return 0;
    }
    for (;;) {
        const char *key = NULL;
        size_t key_len;
        s_skip_ws(ps);
        if (object) {
            if (ps->p >= ps->end || *ps->p != '"')
                return s_expected(ps, "a string key");
            size_t key_at = s_off(ps);
            if ((rc = s_string(ps, &key, &key_len)) < 0)
                return rc;
            for (size_t k = base; k < ps->n_stack; k++) {
                if (strcmp(ps->stack[k].key, key) == 0)
                    return tc_fail(TC_EPARSE, "JSON at byte %zu: duplicate key \"%s\"", key_at,
                                   key);
            }
            s_skip_ws(ps);
            if (ps->p >= ps->end || *ps->p != ':')
                return s_expected(ps, "':' after a key");
            ps->p++;
        }
        tc_json_value_t *v;
        if ((rc = s_value(ps, depth + 1, &v)) < 0)
            return rc;
        if ((rc = s_push(ps, v, key)) < 0)
            return rc;
        s_skip_ws(ps);
        if (ps->p < ps->end && *ps->p == ',') {
            ps->p++;
            s_skip_ws(ps);
            if (ps->p < ps->end && *ps->p == close)
                return tc_fail(TC_EPARSE, "JSON at byte %zu: trailing comma", s_off(ps));
            continue;
        }
        if (ps->p < ps->end && *ps->p == close) {
            ps->p++;
            break;
        }
        return s_expected(ps, object ? "',' or '}'" : "',' or ']'");
    }
    if ((rc = s_collect(ps, c, base)) < 0)
        return rc;
    *out = c;
    return 0;
}

static int s_value(parser_t *ps, size_t depth, tc_json_value_t **out)
{
    s_skip_ws(ps);
    if (ps->p >= ps->end)
        return s_expected(ps, "a value");
    int rc;
    tc_json_value_t *v;
    switch (*ps->p) {
    case '{':
    case '[':
        return s_container(ps, depth, out);
    case '"': {
        const char *s;
        size_t n;
        if ((rc = s_string(ps, &s, &n)) < 0)
            return rc;
        if ((rc = s_new_value(ps, TC_JSON_STRING, &v)) < 0)
            return rc;
        v->str = s;
        v->len = n;
        *out = v;
        return 0;
    }
    case 't':
    case 'f': {
        bool truth = *ps->p == 't';
        if ((rc = s_literal(ps, truth ? "true" : "false")) < 0)
            return rc;
        if ((rc = s_new_value(ps, TC_JSON_BOOL, &v)) < 0)
            return rc;
        v->b = truth;
        *out = v;
        return 0;
    }
    case 'n':
        if ((rc = s_literal(ps, "null")) < 0)
            return rc;
        if ((rc = s_new_value(ps, TC_JSON_NULL, &v)) < 0)
            return rc;
        *out = v;
        return 0;
    case 'N':
    case 'I':
        return tc_fail(TC_EPARSE, "JSON at byte %zu: NaN and Infinity are not JSON numbers",
                       s_off(ps));
    default:
        if (*ps->p == '-' || (*ps->p >= '0' && *ps->p <= '9'))
            return s_number(ps, out);
        return s_expected(ps, "a value");
    }
}

int tc_json_parse(const char *text, size_t len, const tc_json_limits_t *limits, tc_json_t **out)
{
    *out = NULL;
    parser_t ps = {.p = text, .end = text + len, .start = text};
    ps.lim.max_bytes = limits && limits->max_bytes ? limits->max_bytes : DEFAULT_MAX_BYTES;
    ps.lim.max_depth = limits && limits->max_depth ? limits->max_depth : DEFAULT_MAX_DEPTH;
    ps.lim.max_values = limits && limits->max_values ? limits->max_values : DEFAULT_MAX_VALUES;
    if (len > ps.lim.max_bytes)
        return tc_fail(TC_ELIMIT, "JSON text of %zu bytes is over the %zu byte limit", len,
                       ps.lim.max_bytes);
    ps.doc = calloc(1, sizeof *ps.doc);
    if (!ps.doc)
        return tc_fail(TC_ENOMEM, "out of memory parsing JSON");
    tc_json_value_t *root = NULL;
    int rc = s_value(&ps, 0, &root);
    if (rc == 0) {
        s_skip_ws(&ps);
        if (ps.p < ps.end)
            rc = s_expected(&ps, "end of input after the value");
    }
    free(ps.stack);
    if (rc < 0) {
        tc_json_destroy(&ps.doc);
        return rc;
    }
    ps.doc->root = root;
    *out = ps.doc;
    return 0;
}

void tc_json_destroy(tc_json_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    block_t *b = (*self_p)->blocks;
    while (b) {
        block_t *next = b->next;
        free(b);
        b = next;
    }
    free(*self_p);
    *self_p = NULL;
}

const tc_json_value_t *tc_json_root(const tc_json_t *doc)
{
    return doc ? doc->root : NULL;
}

tc_json_type_t tc_json_type(const tc_json_value_t *v)
{
    return v ? v->type : TC_JSON_NULL;
}

const char *tc_json_type_name(tc_json_type_t t)
{
    static const char *const names[] = {"null", "bool", "number", "string", "array", "object"};
    return (unsigned)t < sizeof names / sizeof names[0] ? names[t] : "unknown";
}

bool tc_json_bool(const tc_json_value_t *v)
{
    return v && v->type == TC_JSON_BOOL && v->b;
}

double tc_json_number(const tc_json_value_t *v)
{
    return v && v->type == TC_JSON_NUMBER ? v->num : 0;
}

bool tc_json_int(const tc_json_value_t *v, int64_t *out)
{
    if (!v || v->type != TC_JSON_NUMBER || !v->is_int)
        return false;
    *out = v->i;
    return true;
}

const char *tc_json_string(const tc_json_value_t *v)
{
    return v && v->type == TC_JSON_STRING ? v->str : NULL;
}

size_t tc_json_string_len(const tc_json_value_t *v)
{
    return v && v->type == TC_JSON_STRING ? v->len : 0;
}

size_t tc_json_len(const tc_json_value_t *v)
{
    return v && (v->type == TC_JSON_ARRAY || v->type == TC_JSON_OBJECT) ? v->len : 0;
}

const tc_json_value_t *tc_json_at(const tc_json_value_t *v, size_t i)
{
    return i < tc_json_len(v) ? v->items[i] : NULL;
}

const char *tc_json_key_at(const tc_json_value_t *v, size_t i)
{
    return v && v->type == TC_JSON_OBJECT && i < v->len ? v->keys[i] : NULL;
}

const tc_json_value_t *tc_json_get(const tc_json_value_t *v, const char *key)
{
    if (!v || v->type != TC_JSON_OBJECT)
        return NULL;
    for (size_t k = 0; k < v->len; k++) {
        if (strcmp(v->keys[k], key) == 0)
            return v->items[k];
    }
    return NULL;
}
