/* The graph IR's storage: the string and node arena, checked int64
 * arithmetic, the value table (names hashed to indices), failures naming a
 * node, and freeing a graph. Filled from an ONNX file by tc_onnx.c, shaped
 * by tc_shape*.c; both fail through tc_node_fail. */
#include "tc_graph.h"

#include "tc_error.h"
#include "tc_hash.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- arena ---- */

struct tc_arena_block {
    tc_arena_block_t *next;
    size_t used, cap;
    max_align_t data[];
};

void *tc_arena_alloc(tc_arena_t *a, size_t size)
{
    size = (size + sizeof(max_align_t) - 1) / sizeof(max_align_t) * sizeof(max_align_t);
    tc_arena_block_t *b = a->head;
    if (!b || b->cap - b->used < size) {
        size_t cap = size > 65536 ? size : 65536;
        b = malloc(sizeof *b + cap);
        if (!b)
            return NULL;
        b->used = 0;
        b->cap = cap;
        b->next = a->head;
        a->head = b;
    }
    void *p = (char *)b->data + b->used;
    b->used += size;
    memset(p, 0, size);
    return p;
}

char *tc_arena_strdup(tc_arena_t *a, const char *s)
{
    if (!s)
        s = "";
    size_t n = strlen(s) + 1;
    char *p = tc_arena_alloc(a, n);
    if (p)
        memcpy(p, s, n);
    return p;
}

void tc_arena_free(tc_arena_t *a)
{
    while (a->head) {
        tc_arena_block_t *next = a->head->next;
        free(a->head);
        a->head = next;
    }
}

/* ---- checked arithmetic ---- */

int tc_mul64(int64_t a, int64_t b, int64_t *out)
{
    return __builtin_mul_overflow(a, b, out) ? -1 : 0;
}

int tc_add64(int64_t a, int64_t b, int64_t *out)
{
    return __builtin_add_overflow(a, b, out) ? -1 : 0;
}

int64_t tc_value_elems(const tc_value_t *v)
{
    int64_t e = 1;
    for (int i = 0; i < v->rank; i++)
        e *= v->dims[i]; /* bounded by tc_set_shape */
    return e;
}

/* ---- value table ---- */

static uint64_t s_hash(const char *s)
{
    return tc_fnv1a64_str(TC_FNV64_INIT, s);
}

int tc_graph_value(const tc_graph_t *g, const char *name)
{
    if (!g->hash_cap || !name)
        return -1;
    size_t mask = g->hash_cap - 1;
    for (size_t i = s_hash(name) & mask;; i = (i + 1) & mask) {
        uint32_t slot = g->hash[i];
        if (!slot)
            return -1;
        if (!strcmp(g->values[slot - 1].name, name))
            return (int)slot - 1;
    }
}

static int s_rehash(tc_graph_t *g, size_t cap)
{
    uint32_t *h = calloc(cap, sizeof *h);
    if (!h)
        return tc_fail(TC_ENOMEM, "out of memory for the value table");
    free(g->hash);
    g->hash = h;
    g->hash_cap = cap;
    for (size_t v = 0; v < g->n_values; v++) {
        size_t i = s_hash(g->values[v].name) & (cap - 1);
        while (h[i])
            i = (i + 1) & (cap - 1);
        h[i] = (uint32_t)v + 1;
    }
    return 0;
}

int tc_graph_add_value(tc_graph_t *g, const char *name, int *index)
{
    if (tc_graph_value(g, name) >= 0)
        return tc_fail(TC_EPARSE, "value '%s' is defined twice", name);
    if (g->n_values >= TC_GRAPH_MAX_VALUES)
        return tc_fail(TC_ELIMIT, "more than %d values in the graph", TC_GRAPH_MAX_VALUES);
    if (g->n_values == g->cap_values) {
        size_t cap = g->cap_values ? g->cap_values * 2 : 256;
        tc_value_t *v = realloc(g->values, cap * sizeof *v);
        if (!v)
            return tc_fail(TC_ENOMEM, "out of memory for %zu values", cap);
        g->values = v;
        g->cap_values = cap;
    }
    if ((g->n_values + 1) * 2 > g->hash_cap) {
        int rc = s_rehash(g, g->hash_cap ? g->hash_cap * 2 : 512);
        if (rc < 0)
            return rc;
    }
    tc_value_t *v = &g->values[g->n_values];
    memset(v, 0, sizeof *v);
    v->name = tc_arena_strdup(&g->arena, name);
    if (!v->name)
        return tc_fail(TC_ENOMEM, "out of memory");
    v->producer = -1;
    v->batch_axis = -1;
    v->n_data = -1;
    v->owner = -1;
    size_t i = s_hash(name) & (g->hash_cap - 1);
    while (g->hash[i])
        i = (i + 1) & (g->hash_cap - 1);
    g->hash[i] = (uint32_t)g->n_values + 1;
    *index = (int)g->n_values++;
    return 0;
}

/* ---- failures ---- */

int tc_node_fail(const tc_gnode_t *n, int code, const char *fmt, ...)
{
    char msg[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return tc_fail(code, "node '%.200s' (%.60s): %s", n->name, n->op, msg);
}

void tc_graph_free(tc_graph_t *g)
{
    for (size_t i = 0; i < g->n_values; i++)
        free(g->values[i].data);
    free(g->values);
    free(g->hash);
    for (size_t i = 0; i < g->n_nodes; i++) {
        free(g->nodes[i].in);
        free(g->nodes[i].out);
    }
    free(g->nodes);
    free(g->order);
    tc_arena_free(&g->arena);
    memset(g, 0, sizeof *g);
}
