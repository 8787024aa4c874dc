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

struct tc_store_config_ids {
    struct s_slot {
        tc_conv_config_t key; /* n = 0 */
        long long id;         /* 0: an empty slot */
        bool pending;
    } *slot;
    size_t cap, n; /* cap: a power of two, at least twice n */
    size_t pending; /* slots with pending set: settling has work only then */
};

static struct s_slot *s_find(const struct tc_store_config_ids *t, const tc_conv_config_t *key)
{
    size_t mask = t->cap - 1;
    for (size_t i = tc_conv_key_hash(key) & mask;; i = (i + 1) & mask)
        if (!t->slot[i].id || tc_conv_key_cmp(&t->slot[i].key, key) == 0)
            return &t->slot[i];
}

/* A table of `cap` empty slots in place of *t's (freed); false when out of
 * memory (*t then is left as it was). */
static bool s_resize(struct tc_store_config_ids *t, size_t cap, bool keep_pending)
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

long long tc_store_config_id_get(const tc_store_t *s, const tc_conv_config_t *key)
{
    const struct tc_store_config_ids *t = s->config_ids;
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
    if (!s->config_ids && !(s->config_ids = calloc(1, sizeof *s->config_ids)))
        return; /* only a cache */
    struct tc_store_config_ids *t = s->config_ids;
    if (t->n >= S_MAX)
        tc_store_config_ids_clear(s);
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

void tc_store_config_ids_settle(tc_store_t *s, bool committed)
{
    struct tc_store_config_ids *t = s->config_ids;
    /* Every commit and every message's rollback (a duplicate message, say)
     * comes here: the table is walked only when the transaction resolved
     * ids of its own. */
    if (!t || !t->pending)
        return;
    if (committed) {
        for (size_t i = 0; i < t->cap; i++)
            t->slot[i].pending = false;
        t->pending = 0;
    } else if (!s_resize(t, t->cap, false)) {
        tc_store_config_ids_clear(s);
    }
}

void tc_store_config_ids_clear(tc_store_t *s)
{
    if (!s->config_ids)
        return;
    free(s->config_ids->slot);
    memset(s->config_ids, 0, sizeof *s->config_ids);
}

void tc_store_config_ids_free(tc_store_t *s)
{
    tc_store_config_ids_clear(s);
    free(s->config_ids);
    s->config_ids = NULL;
}
