/* Agents and devices a connection recorded lately (store_internal.h). */
#include "store_internal.h"
#include "tc_hash.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

/* An agent or device this connection recorded. */
typedef struct {
    uint64_t key;     /* hash of what it is: "agent" or "device" and its id */
    uint64_t details; /* hash of the values recorded */
    char id[32];      /* the device's id */
    int64_t at_ms;    /* when (monotonic) */
    bool pending;     /* recorded in the open transaction, not yet committed */
} s_seen_t;
#define S_MAX 64

typedef struct {
    s_seen_t seen[S_MAX];
    size_t n;
} s_state_t;

/* The open transaction committed (pending entries stand) or rolled back, or
 * a message's savepoint was (they go: and those of the batch's earlier
 * messages, which only costs an upsert). */
static void s_settle(void *state, bool committed, bool message)
{
    (void)message;
    s_state_t *st = state;
    size_t w = 0;
    for (size_t i = 0; i < st->n; i++) {
        if (st->seen[i].pending && !committed)
            continue;
        st->seen[w] = st->seen[i];
        st->seen[w++].pending = false;
    }
    st->n = w;
}

static void s_forget(void *state)
{
    ((s_state_t *)state)->n = 0;
}

static const tc_store_part_t s_part = {
    .size = sizeof(s_state_t), .settle = s_settle, .reset = s_forget};

void tc_store_seen_forget(tc_store_t *s)
{
    s_state_t *st = tc_store_part_state(s, &s_part);
    if (st)
        s_forget(st);
}

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
    s_state_t *st = tc_store_part_state(s, &s_part);
    if (!st)
        return false; /* only a cache */
    int64_t now = s_now_ms();
    for (size_t i = 0; i < st->n; i++) {
        const s_seen_t *e = &st->seen[i];
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
    s_state_t *st = tc_store_part_state(s, &s_part);
    if (!st)
        return;
    size_t at = st->n;
    for (size_t i = 0; i < st->n; i++)
        if (st->seen[i].key == key)
            at = i;
    if (at == S_MAX) { /* full: the oldest goes */
        at = 0;
        for (size_t i = 1; i < st->n; i++)
            if (st->seen[i].at_ms < st->seen[at].at_ms)
                at = i;
    }
    s_seen_t *e = &st->seen[at];
    e->key = key;
    e->details = details;
    e->at_ms = s_now_ms();
    e->pending = true;
    snprintf(e->id, sizeof e->id, "%s", id ? id : "");
    if (at == st->n)
        st->n++;
}
