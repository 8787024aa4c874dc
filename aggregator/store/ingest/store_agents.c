/* The agents and devices messages come from: their rows (upserted, or
 * locked in id order for a batch), the agent's key, and which of them this
 * connection recorded lately (an upsert locks the row until commit, so every
 * message doing it made concurrent workers wait for each other; within
 * TC_STORE_SEEN_MS of a committed upsert with the same values, a message
 * skips it: last_seen is that fresh). */
#include "store_internal.h"

#include "tc_error.h"
#include "tc_hash.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef Traincast__V1__Device device_t;

/* How long a recorded agent or device needs no new upsert. */
#define TC_STORE_SEEN_MS 5000

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

static uint64_t s_seen_hash(uint64_t h, const char *text)
{
    h = tc_fnv1a64_str(h ? h : TC_FNV64_INIT, text ? text : "\x01");
    return tc_fnv1a64_byte(h, 0xff); /* a separator: "ab","c" is not "a","bc" */
}

static bool s_seen_get(tc_store_t *s, uint64_t key, uint64_t details, char id[32])
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

static void s_seen_put(tc_store_t *s, uint64_t key, uint64_t details, const char *id)
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

int tc_store_put_agent(tc_store_t *s, const tc_envelope_t *env, const Traincast__V1__Hello *h)
{
    if (s->import_id)
        return 0; /* an agent of another fleet: not one of ours */
    uint64_t key = s_seen_hash(s_seen_hash(0, "agent"), env->agent_id);
    if (!h && s_seen_get(s, key, 0, NULL))
        return 0;
    const char *params[] = {env->agent_id, h ? h->agent_name : NULL, h ? h->host : NULL,
                            h ? h->agent_version : NULL};
    s_seen_put(s, key, 0, NULL);
    return tc_store_query_prepared(
        s, NULL, "recording the agent",
        "INSERT INTO agents (agent_id, name, host, version) "
        "VALUES ($1, $2, $3, $4) ON CONFLICT (agent_id) DO UPDATE SET "
        "last_seen = now(), name = coalesce(EXCLUDED.name, agents.name), "
        "host = coalesce(EXCLUDED.host, agents.host), "
        "version = coalesce(EXCLUDED.version, agents.version)",
        4, params);
}

static int s_cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

int tc_store_lock_agents(tc_store_t *s, const char *const *agent_ids, size_t n)
{
    if (s->import_id || n < 2)
        return 0; /* one row cannot close a cycle */
    const char **ids = malloc(n * sizeof *ids);
    if (!ids)
        return tc_fail(TC_ENOMEM, "out of memory");
    memcpy(ids, agent_ids, n * sizeof *ids);
    qsort(ids, n, sizeof *ids, s_cmp_str);
    /* An array literal of the distinct ids, in order: {"a","b"}. */
    size_t cap = 3, distinct = 0;
    for (size_t i = 0; i < n; i++)
        cap += 2 * strlen(ids[i]) + 3;
    char *arr = malloc(cap), *w = arr;
    if (!arr) {
        free(ids);
        return tc_fail(TC_ENOMEM, "out of memory");
    }
    *w++ = '{';
    for (size_t i = 0; i < n; i++) {
        if (i && !strcmp(ids[i], ids[i - 1]))
            continue;
        if (distinct++)
            *w++ = ',';
        *w++ = '"';
        for (const char *r = ids[i]; *r; r++) {
            if (*r == '"' || *r == '\\')
                *w++ = '\\';
            *w++ = *r;
        }
        *w++ = '"';
    }
    *w++ = '}';
    *w = '\0';
    free(ids);
    int rc = 0;
    if (distinct > 1) {
        /* The upsert takes the rows in the order of the sorted input, a new
         * one included (its insert holds it until commit). */
        const char *params[] = {arr};
        rc = tc_store_query_prepared(
            s, NULL, "locking the batch's agents",
            "INSERT INTO agents (agent_id) SELECT a FROM unnest($1::text[]) AS a ORDER BY a "
            "ON CONFLICT (agent_id) DO UPDATE SET last_seen = now()",
            1, params);
    }
    free(arr);
    return rc;
}

/* The columns of a device row as s_put_device's parameters give them. */
#define S_DEVICE_COLUMNS                                                                       \
    "uuid, kind, name, host, gpu_index, compute_capability, multiprocessors, threads, "        \
    "memory_bytes, clock_mhz, memory_clock_mhz, driver_version, runtime_version, library, "   \
    "library_version, agent_id, framework, routing"

/* A device of an imported set: inserted with the import's id when its uuid
 * is new here, left as it is otherwise (the importer chose its name).
 * `params` as s_put_device's, the import's id last. */
static int s_put_imported_device(tc_store_t *s, const device_t *d, const char *const *params,
                                 char device_id[32])
{
    PGresult *res = NULL;
    int rc = tc_store_query(
        s, &res, "recording the imported device",
        "WITH ins AS (INSERT INTO devices (" S_DEVICE_COLUMNS ", import_id) VALUES ($1, $2, $3, "
        "$4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19) "
        "ON CONFLICT (uuid) DO NOTHING RETURNING device_id) "
        "SELECT device_id FROM ins UNION ALL SELECT device_id FROM devices WHERE uuid = $1 "
        "LIMIT 1",
        19, params);
    if (rc < 0)
        return rc;
    if (PQntuples(res) != 1) {
        PQclear(res);
        return tc_fail(TC_EDB, "database: the imported device %s could not be read back",
                       d->uuid);
    }
    snprintf(device_id, 32, "%s", PQgetvalue(res, 0, 0));
    PQclear(res);
    return 0;
}

/* Upsert a device by uuid; its id goes to device_id (a decimal string). */
int tc_store_put_device(tc_store_t *s, const char *agent_id, const device_t *d,
                        char device_id[32])
{
    char idx[16], mp[16], thr[16], mem[32], clk[16], mclk[16];
    snprintf(idx, sizeof idx, "%u", d->index);
    snprintf(mp, sizeof mp, "%u", d->multiprocessors);
    snprintf(thr, sizeof thr, "%u", d->threads);
    snprintf(mem, sizeof mem, "%" PRIu64, d->memory_bytes);
    snprintf(clk, sizeof clk, "%u", d->clock_mhz);
    snprintf(mclk, sizeof mclk, "%u", d->memory_clock_mhz);
    char import_id[32];
    snprintf(import_id, sizeof import_id, "%lld", s->import_id);
    /* An imported device has no agent here; the import's id comes last. */
    const char *params[] = {d->uuid,           tc_device_kind_name(d->kind),
                            d->name,           d->host,
                            idx,               d->compute_capability,
                            mp,                thr,
                            mem,               clk,
                            mclk,              d->driver_version,
                            d->runtime_version, d->library,
                            d->library_version, s->import_id ? NULL : agent_id,
                            d->framework && *d->framework ? d->framework : NULL,
                            d->routing && *d->routing ? d->routing : NULL,
                            import_id};
    if (s->import_id)
        return s_put_imported_device(s, d, params, device_id);
    uint64_t key = s_seen_hash(s_seen_hash(0, "device"), d->uuid), details = 0;
    for (size_t i = 0; i < 18; i++)
        details = s_seen_hash(details, params[i]);
    if (s_seen_get(s, key, details, device_id))
        return 0;
    PGresult *res = NULL;
    int rc = tc_store_query_prepared(
        s, &res, "recording the device",
        "INSERT INTO devices (" S_DEVICE_COLUMNS ") VALUES ($1, $2, $3, $4, $5, $6, $7, $8, "
        "$9, $10, $11, $12, $13, $14, $15, $16, $17, $18) "
        "ON CONFLICT (uuid) DO UPDATE SET "
        "kind = EXCLUDED.kind, name = EXCLUDED.name, host = EXCLUDED.host, "
        "gpu_index = EXCLUDED.gpu_index, compute_capability = EXCLUDED.compute_capability, "
        "multiprocessors = EXCLUDED.multiprocessors, threads = EXCLUDED.threads, "
        "memory_bytes = EXCLUDED.memory_bytes, clock_mhz = EXCLUDED.clock_mhz, "
        "memory_clock_mhz = EXCLUDED.memory_clock_mhz, driver_version = EXCLUDED.driver_version, "
        "runtime_version = EXCLUDED.runtime_version, library = EXCLUDED.library, "
        "library_version = EXCLUDED.library_version, agent_id = EXCLUDED.agent_id, "
        "framework = coalesce(EXCLUDED.framework, devices.framework), "
        "routing = coalesce(EXCLUDED.routing, devices.routing), "
        "last_seen = now() RETURNING device_id",
        18, params);
    if (rc < 0)
        return rc;
    snprintf(device_id, 32, "%s", PQgetvalue(res, 0, 0));
    PQclear(res);
    s_seen_put(s, key, details, device_id);
    return 0;
}

/* Bind `agent_id` to `key` if it is free, or check that it is bound to
 * `key`. No key (an --insecure aggregator, a local import) binds nothing. */
int tc_store_bind_key(tc_store_t *s, const char *agent_id, const char *key)
{
    if (!key || !*key)
        return 0;
    const char *params[] = {agent_id, key};
    for (int attempt = 0; attempt < 2; attempt++) {
        PGresult *res = NULL;
        /* A concurrent first use may commit between the insert and the
         * statement's snapshot: then neither part sees a row, and the next
         * statement (a new snapshot) does. */
        int rc = tc_store_query_prepared(
            s, &res, "checking the agent's key",
            "WITH ins AS (INSERT INTO agent_keys (agent_id, public_key) VALUES ($1, $2) "
            "ON CONFLICT (agent_id) DO NOTHING RETURNING public_key, registered_at) "
            "SELECT public_key, registered_at FROM ins UNION ALL "
            "SELECT public_key, registered_at FROM agent_keys WHERE agent_id = $1 LIMIT 1",
            2, params);
        if (rc < 0)
            return rc;
        if (PQntuples(res) == 0) {
            PQclear(res);
            continue;
        }
        char bound[64], since[64];
        snprintf(bound, sizeof bound, "%s", PQgetvalue(res, 0, 0));
        snprintf(since, sizeof since, "%.19s", PQgetvalue(res, 0, 1));
        PQclear(res);
        if (strcmp(bound, key) != 0)
            return tc_fail(TC_EINVAL,
                           "agent_id: '%s' belongs to the agent with key %s (since %s), not to "
                           "this key %s; each agent sends under its own id (its state "
                           "directory's agent_id file); an operator who rotated the agent's key "
                           "releases the old one (docs/transport.md, \"Agent identity\")",
                           agent_id, bound, since, key);
        return 0;
    }
    return tc_fail(TC_EDB, "database: the key of agent %s could not be read back", agent_id);
}

int tc_store_agent_key(tc_store_t *self, const char *agent_id, char key[41], bool *found)
{
    key[0] = '\0';
    *found = false;
    const char *params[] = {agent_id};
    PGresult *res = NULL;
    int rc = tc_store_query(self, &res, "reading the agent's key",
                            "SELECT public_key FROM agent_keys WHERE agent_id = $1", 1, params);
    if (rc < 0)
        return rc;
    if (PQntuples(res) == 1) {
        snprintf(key, 41, "%s", PQgetvalue(res, 0, 0));
        *found = true;
    }
    PQclear(res);
    return 0;
}
