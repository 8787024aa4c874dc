#include "convlist.h"

#include "tc_error.h"
#include "tc_wire.h"

#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    char name[128];
    tc_conv_usage_t *convs;
    size_t n, cap;
    tc_matmul_usage_t *mms;
    size_t n_mm, cap_mm;
} s_model_t;

/* Where a model's layers go: mfn NULL for a reader of convs alone. */
typedef struct {
    tc_convlist_fn fn;
    tc_matmullist_fn mfn;
    void *arg;
} s_sink_t;

/* Hand over the model read so far: its convs, then its matmuls. */
static int s_flush(s_model_t *m, const s_sink_t *to)
{
    int rc = 0;
    if (m->n || m->n_mm)
        rc = to->fn(m->name, m->convs, m->n, to->arg);
    if (rc == 0 && m->n_mm)
        rc = to->mfn(m->name, m->mms, m->n_mm, to->arg);
    m->n = m->n_mm = 0;
    return rc;
}

/* A "model NAME" line (p just after "model"): hand over the model read so
 * far, then start the one named. */
static int s_model_line(s_model_t *m, char *p, const char *path, unsigned lineno,
                        const s_sink_t *to)
{
    int rc = s_flush(m, to);
    if (rc < 0)
        return rc;
    while (isspace((unsigned char)*p))
        p++;
    p[strcspn(p, "\r\n")] = '\0';
    if (!*p)
        return tc_fail(TC_EPARSE, "%s:%u: 'model' needs a name", path, lineno);
    snprintf(m->name, sizeof m->name, "%s", p);
    return rc;
}

/* Read up to 16 numbers (each at most 2^20) from p into v: returns how
 * many, with *end_out past them and the blanks after. */
static int s_numbers(char *p, unsigned long v[16], char **end_out)
{
    int got = 0;
    char *end = p;
    while (got < 16) {
        while (isspace((unsigned char)*end))
            end++;
        if (!isdigit((unsigned char)*end))
            break;
        errno = 0;
        v[got] = strtoul(end, &end, 10);
        if (errno || v[got] > (1ul << 20))
            break;
        got++;
    }
    while (isspace((unsigned char)*end))
        end++;
    *end_out = end;
    return got;
}

/* The conv usage a line's 15 or 16 numbers give, checked. */
static int s_conv_usage(const unsigned long v[16], int got, const char *path, unsigned lineno,
                        tc_conv_usage_t *u)
{
    memset(u, 0, sizeof *u);
    u->config = tc_conv_config_default();
    u->config.c = (uint32_t)v[0], u->config.h = (uint32_t)v[1], u->config.w = (uint32_t)v[2];
    u->config.k = (uint32_t)v[3], u->config.r = (uint32_t)v[4], u->config.s = (uint32_t)v[5];
    u->config.pad_h = (uint32_t)v[6], u->config.pad_w = (uint32_t)v[7];
    u->config.stride_h = (uint32_t)v[8], u->config.stride_w = (uint32_t)v[9];
    u->config.dilation_h = (uint32_t)v[10], u->config.dilation_w = (uint32_t)v[11];
    u->config.groups = (uint32_t)v[12];
    u->multiplicity = (uint32_t)v[13];
    u->first_layer = v[14] != 0;
    u->config.bias = got == 16 && v[15] != 0;
    if (v[14] > 1 || v[13] == 0 || (got == 16 && v[15] > 1))
        return tc_fail(TC_EPARSE, "%s:%u: count must be > 0, first and bias 0 or 1", path,
                       lineno);
    if (tc_conv_config_check(&u->config) < 0)
        return tc_err_context(TC_EPARSE, "%s:%u", path, lineno);
    return 0;
}

/* An array v of n used and *cap allocated elements of `size` bytes with
 * room for one more: v itself, or its reallocation (NULL when out of
 * memory, v then untouched). */
static void *s_grow(void *v, size_t n, size_t *cap, size_t size)
{
    if (n < *cap)
        return v;
    size_t c = *cap ? 2 * *cap : 64;
    void *nv = realloc(v, c * size);
    if (nv)
        *cap = c;
    return nv;
}

/* Add a conv usage to the model's layers. */
static int s_append(s_model_t *m, const tc_conv_usage_t *u, const char *path)
{
    tc_conv_usage_t *convs = s_grow(m->convs, m->n, &m->cap, sizeof *convs);
    if (!convs)
        return tc_fail(TC_ENOMEM, "out of memory reading %s", path);
    m->convs = convs;
    m->convs[m->n++] = *u;
    return 0;
}

/* A conv line (p at its first number): parse and check it, and add it to
 * the model. */
static int s_conv_line(s_model_t *m, char *p, const char *path, unsigned lineno)
{
    unsigned long v[16];
    char *end;
    int got = s_numbers(p, v, &end);
    char word[8] = "nchw";
    if (isalpha((unsigned char)*end)) {
        size_t k = strcspn(end, " \t\r\n#");
        snprintf(word, sizeof word, "%.*s", k < sizeof word ? (int)k : (int)sizeof word, end);
        end += k;
        while (isspace((unsigned char)*end))
            end++;
    }
    if ((got != 15 && got != 16) || (*end && *end != '#'))
        return tc_fail(TC_EPARSE, "%s:%u: expected 15 or 16 numbers (c h w k r s pad_h pad_w "
                                  "stride_h stride_w dil_h dil_w groups count first [bias]) "
                                  "and an optional layout (nchw or nhwc)",
                       path, lineno);
    tc_conv_usage_t u;
    int rc = s_conv_usage(v, got, path, lineno, &u);
    if (rc < 0)
        return rc;
    if (tc_layout_parse(word, &u.config.layout) < 0)
        return tc_err_context(TC_EPARSE, "%s:%u: the layout", path, lineno);
    return s_append(m, &u, path);
}

/* A matmul line (p just after "matmul"): where the mini-batch goes, then
 * batch m n k trans_a trans_b weight bias count grad_a grad_b, checked and
 * added to the model. */
static int s_matmul_line(s_model_t *m, char *p, const char *path, unsigned lineno)
{
    while (isspace((unsigned char)*p))
        p++;
    size_t wlen = strcspn(p, " \t\r\n#");
    tc_matmul_usage_t u;
    memset(&u, 0, sizeof u);
    u.config = tc_matmul_config_default();
    char word[8];
    snprintf(word, sizeof word, "%.*s", (int)(wlen < sizeof word ? wlen : sizeof word - 1), p);
    bool named = wlen < sizeof word && tc_mm_minibatch_parse(word, &u.config.minibatch_in) == 0;
    unsigned long v[16];
    char *end = p;
    int got = named ? s_numbers(p + wlen, v, &end) : 0;
    if (!named || got != 11 || (*end && *end != '#'))
        return tc_fail(TC_EPARSE, "%s:%u: expected 'matmul', where the mini-batch goes (none, "
                                  "rows or batch) and 11 numbers (batch m n k trans_a trans_b "
                                  "weight bias count grad_a grad_b)",
                       path, lineno);
    for (int i = 4; i < 11; i++)
        if (i != 8 && v[i] > 1)
            return tc_fail(TC_EPARSE, "%s:%u: trans_a, trans_b, weight, bias, grad_a and "
                                      "grad_b must be 0 or 1",
                           path, lineno);
    u.config.batch = (uint32_t)v[0], u.config.m = (uint32_t)v[1];
    u.config.n = (uint32_t)v[2], u.config.k = (uint32_t)v[3];
    u.config.trans_a = v[4], u.config.trans_b = v[5];
    u.config.weight = v[6], u.config.bias = v[7];
    u.use.multiplicity = (uint32_t)v[8];
    u.use.grad_a = v[9], u.use.grad_b = v[10];
    if (u.use.multiplicity == 0)
        return tc_fail(TC_EPARSE, "%s:%u: count must be > 0", path, lineno);
    if (u.config.weight && !u.use.grad_b)
        return tc_fail(TC_EPARSE, "%s:%u: a weight (weight 1) always needs its gradient "
                                  "(grad_b 1)",
                       path, lineno);
    if (tc_matmul_config_check(&u.config) < 0)
        return tc_err_context(TC_EPARSE, "%s:%u", path, lineno);
    tc_matmul_usage_t *mms = s_grow(m->mms, m->n_mm, &m->cap_mm, sizeof *mms);
    if (!mms)
        return tc_fail(TC_ENOMEM, "out of memory reading %s", path);
    m->mms = mms;
    m->mms[m->n_mm++] = u;
    return 0;
}

int tc_oplist_read(const char *path, tc_convlist_fn fn, tc_matmullist_fn mfn, void *arg)
{
    const s_sink_t to = {fn, mfn, arg};
    FILE *f = fopen(path, "r");
    if (!f)
        return tc_fail(errno == ENOENT ? TC_ENOTFOUND : TC_EIO, "cannot open conv list %s: %s",
                       path, strerror(errno));
    s_model_t m = {0};
    const char *base = strrchr(path, '/');
    snprintf(m.name, sizeof m.name, "%s", base ? base + 1 : path);
    char line[1024];
    unsigned lineno = 0;
    int rc = 0;
    while (fgets(line, sizeof line, f)) {
        lineno++;
        if (!strchr(line, '\n') && !feof(f)) {
            rc = tc_fail(TC_EPARSE, "%s:%u: line too long", path, lineno);
            break;
        }
        char *p = line;
        while (isspace((unsigned char)*p))
            p++;
        if (*p == '#' || *p == '\0')
            continue;
        if (strncmp(p, "model", 5) == 0 && isspace((unsigned char)p[5]))
            rc = s_model_line(&m, p + 5, path, lineno, &to);
        else if (strncmp(p, "matmul", 6) == 0 && isspace((unsigned char)p[6]))
            rc = mfn ? s_matmul_line(&m, p + 6, path, lineno)
                     : tc_fail(TC_EPARSE, "%s:%u: a matmul, where only convs are read", path,
                               lineno);
        else
            rc = s_conv_line(&m, p, path, lineno);
        if (rc < 0)
            break;
    }
    if (rc == 0 && ferror(f))
        rc = tc_fail(TC_EIO, "reading %s: %s", path, strerror(errno));
    if (rc == 0)
        rc = s_flush(&m, &to);
    free(m.convs);
    free(m.mms);
    fclose(f);
    return rc;
}

int tc_convlist_read(const char *path, tc_convlist_fn fn, void *arg)
{
    return tc_oplist_read(path, fn, NULL, arg);
}

int tc_oplist_write(FILE *f, const char *model, const tc_conv_usage_t *convs, size_t n,
                    const tc_matmul_usage_t *mms, size_t n_mm)
{
    fprintf(f, "model %s\n", model);
    if (n)
        fputs("# c h w k r s pad_h pad_w stride_h stride_w dil_h dil_w groups count first bias "
              "[layout]\n",
              f);
    for (size_t i = 0; i < n; i++) {
        const tc_conv_config_t *c = &convs[i].config;
        fprintf(f, "%u %u %u %u %u %u %u %u %u %u %u %u %u %u %d %d%s\n", c->c, c->h, c->w, c->k,
                c->r, c->s, c->pad_h, c->pad_w, c->stride_h, c->stride_w, c->dilation_h,
                c->dilation_w, c->groups, convs[i].multiplicity, convs[i].first_layer ? 1 : 0,
                c->bias ? 1 : 0, c->layout == TRAINCAST__V1__LAYOUT__LAYOUT_NHWC ? " nhwc" : "");
    }
    if (n_mm)
        fputs("# matmul minibatch_in batch m n k trans_a trans_b weight bias count grad_a "
              "grad_b\n",
              f);
    for (size_t i = 0; i < n_mm; i++) {
        const tc_matmul_config_t *c = &mms[i].config;
        fprintf(f, "matmul %s %u %u %u %u %d %d %d %d %u %d %d\n",
                tc_mm_minibatch_name((tc_mm_minibatch_t)c->minibatch_in), c->batch, c->m, c->n,
                c->k, c->trans_a, c->trans_b, c->weight, c->bias, mms[i].use.multiplicity,
                mms[i].use.grad_a, mms[i].use.grad_b);
    }
    if (fflush(f) != 0 || ferror(f))
        return tc_fail(TC_EIO, "writing the list of %s: %s", model, strerror(errno));
    return 0;
}
