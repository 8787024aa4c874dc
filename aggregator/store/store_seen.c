/* Agents and devices a connection recorded lately (store_internal.h). */
#include "store_internal.h"
#include "tc_hash.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

static int64_t s_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

uint64_t tc_store_seen_hash(uint64_t h, const char *text)
{
    h = tc_fnv1a64_str(h ? h : TC_FNV64_INIT, text ? text : "\x01");
    return tc_fnv1a64_byte(h, 0xff); /* a separator: "ab","c" is not "a","bc" */
}

bool tc_store_seen_get(tc_store_t *s, uint64_t key, uint64_t details, char id[32])
{
    int64_t now = s_now_ms();
    for (size_t i = 0; i < s->n_seen; i++) {
        const tc_store_seen_t *e = &s->seen[i];
        if (e->key == key && e->details == details && !e->pending &&
            now - e->at_ms < TC_STORE_SEEN_MS) {
            if (id)
                snprintf(id, 32, "%s", e->id);
            return true;
        }
    }
    return false;
}

void tc_store_seen_put(tc_store_t *s, uint64_t key, uint64_t details, const char *id)
{
    size_t at = s->n_seen;
    for (size_t i = 0; i < s->n_seen; i++)
        if (s->seen[i].key == key)
            at = i;
    if (at == TC_STORE_SEEN_MAX) { /* full: the oldest goes */
        at = 0;
        for (size_t i = 1; i < s->n_seen; i++)
            if (s->seen[i].at_ms < s->seen[at].at_ms)
                at = i;
    }
    tc_store_seen_t *e = &s->seen[at];
    e->key = key;
    e->details = details;
    e->at_ms = s_now_ms();
    e->pending = true;
    snprintf(e->id, sizeof e->id, "%s", id ? id : "");
    if (at == s->n_seen)
        s->n_seen++;
}

void tc_store_seen_settle(tc_store_t *s, bool committed)
{
    size_t w = 0;
    for (size_t i = 0; i < s->n_seen; i++) {
        if (s->seen[i].pending && !committed)
            continue;
        s->seen[w] = s->seen[i];
        s->seen[w++].pending = false;
    }
    s->n_seen = w;
}
