/* Conv config ids a connection has resolved (store_internal.h). A config's
 * row is only ever inserted, so its id, once committed, holds for good: a
 * message whose configs are all known skips the statement that looks them
 * up. Ids resolved in the open transaction are pending and are dropped when
 * it (or the savepoint of their message) is rolled back. */
#include "store_internal.h"

#include <stdlib.h>
#include <string.h>

/* At most this many ids are kept; when full, the table starts again empty. */
#define S_MAX 16384u

typedef struct {
    struct s_slot {
        tc_conv_config_t key; /* n = 0 */
        long long id;         /* 0: an empty slot */
        bool pending;
    } *slot;
    size_t cap, n; /* cap: a power of two, at least twice n */
    size_t pending; /* slots with pending set: settling has work only then */
} s_ids_t;

static void s_clear(void *state)
{
    s_ids_t *t = state;
    free(t->slot);
    memset(t, 0, sizeof *t);
}

static bool s_resize(s_ids_t *t, size_t cap, bool keep_pending);

/* The open transaction (or a message's savepoint) ended: the ids it
 * resolved are kept when it committed, dropped when it was rolled back. */
static void s_settle(void *state, bool committed, bool message)
{
    (void)message;
    s_ids_t *t = state;
    /* Every commit and every message's rollback (a duplicate message, say)
     * comes here: the table is walked only when the transaction resolved
     * ids of its own. */
    if (!t->pending)
        return;
    if (committed) {
        for (size_t i = 0; i < t->cap; i++)
            t->slot[i].pending = false;
        t->pending = 0;
    } else if (!s_resize(t, t->cap, false)) {
        s_clear(t);
    }
}

static const tc_store_part_t s_part = {
    .size = sizeof(s_ids_t), .settle = s_settle, .reset = s_clear, .release = s_clear};

static struct s_slot *s_find(const s_ids_t *t, const tc_conv_config_t *key)
{
    size_t mask = t->cap - 1;
    for (size_t i = tc_conv_key_hash(key) & mask;; i = (i + 1) & mask)
        if (!t->slot[i].id || tc_conv_key_cmp(&t->slot[i].key, key) == 0)
            return &t->slot[i];
}

/* A table of `cap` empty slots in place of *t's (freed); false when out of
 * memory (*t then is left as it was). */
static bool s_resize(s_ids_t *t, size_t cap, bool keep_pending)
{
    struct s_slot *old = t->slot;
    size_t old_cap = t->cap;
    t->slot = calloc(cap, sizeof *t->slot);
    if (!t->slot) {
        t->slot = old;
        return false;
    }
    t->cap = cap;
    t->n = 0;
    if (!keep_pending)
        t->pending = 0;
    for (size_t i = 0; i < old_cap; i++) {
        if (!old[i].id || (old[i].pending && !keep_pending))
            continue;
        *s_find(t, &old[i].key) = old[i];
        t->n++;
    }
    free(old);
    return true;
}

long long tc_store_config_id_get(tc_store_t *s, const tc_conv_config_t *key)
{
    const s_ids_t *t = tc_store_part_state(s, &s_part);
    if (!t || !t->cap)
        return 0;
    tc_conv_config_t k = *key;
    k.n = 0;
    return s_find(t, &k)->id;
}

void tc_store_config_id_put(tc_store_t *s, const tc_conv_config_t *key, long long id)
{
    if (id <= 0)
        return;
    s_ids_t *t = tc_store_part_state(s, &s_part);
    if (!t)
        return; /* only a cache */
    if (t->n >= S_MAX)
        s_clear(t);
    if (2 * (t->n + 1) > t->cap && !s_resize(t, t->cap ? 2 * t->cap : 256, true))
        return;
    tc_conv_config_t k = *key;
    k.n = 0;
    struct s_slot *e = s_find(t, &k);
    if (e->id == id && !e->pending)
        return; /* known and committed already */
    if (!e->id)
        t->n++;
    if (!e->pending)
        t->pending++;
    e->key = k;
    e->id = id;
    e->pending = true;
}

void tc_store_config_ids_clear(tc_store_t *s)
{
    s_ids_t *t = tc_store_part_state(s, &s_part);
    if (t)
        s_clear(t);
}
