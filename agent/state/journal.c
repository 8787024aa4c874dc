/* The journal: its index, opening it (walking the log into the index),
 * writing and reading it, and reading it without opening (journal.h has the
 * format; journal_record.c frames and parses a record). One subject, over
 * 600 lines. */
#include "journal_internal.h"

#include "tc_error.h"
#include "tc_hash.h"
#include "tc_log.h"
#include "tc_paths.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

/* The cursor is rewritten after this many acknowledgements (and on close). */
#define S_CURSOR_EVERY_ACKS 2048

/* ---- the index ---- */

static uint32_t s_hash(const char *id)
{
    return tc_fnv1a32(TC_FNV32_INIT, id, TC_MSGID_LEN);
}

/* The entry of `id`, or NULL. */
static tc_jentry_t *s_find(const tc_journal_t *self, const char *id)
{
    if (!self->n_slots)
        return NULL;
    size_t mask = self->n_slots - 1;
    for (size_t i = s_hash(id) & mask;; i = (i + 1) & mask) {
        uint32_t s = self->slots[i];
        if (!s)
            return NULL;
        if (!memcmp(self->e[s - 1].id, id, TC_MSGID_LEN))
            return &self->e[s - 1];
    }
}

static void s_slot_insert(tc_journal_t *self, size_t idx)
{
    size_t mask = self->n_slots - 1;
    size_t i = s_hash(self->e[idx].id) & mask;
    while (self->slots[i])
        i = (i + 1) & mask;
    self->slots[i] = (uint32_t)(idx + 1);
}

/* Room for one more element in the array *p of *cap elements of `size`
 * bytes holding n (doubling, from `first`). */
static int s_grow(tc_journal_t *self, void **p, size_t *cap, size_t n, size_t size, size_t first)
{
    if (n < *cap)
        return 0;
    size_t nc = *cap ? *cap * 2 : first;
    void *np = realloc(*p, nc * size);
    if (!np)
        return tc_fail(TC_ENOMEM, "out of memory indexing %s", self->path);
    *p = np;
    *cap = nc;
    return 0;
}

/* Room for one more entry (and its slot). */
static int s_reserve(tc_journal_t *self)
{
    int rc = s_grow(self, (void **)&self->e, &self->cap, self->n, sizeof *self->e, 1024);
    if (rc < 0)
        return rc;
    if ((self->n + 1) * 2 > self->n_slots) {
        size_t ns = self->n_slots ? self->n_slots * 2 : 4096;
        uint32_t *slots = calloc(ns, sizeof *slots);
        if (!slots)
            return tc_fail(TC_ENOMEM, "out of memory indexing %s", self->path);
        free(self->slots);
        self->slots = slots;
        self->n_slots = ns;
        for (size_t i = 0; i < self->n; i++)
            s_slot_insert(self, i);
    }
    return 0;
}

static int s_name_index(tc_journal_t *self, const char *name, size_t len, uint32_t *out)
{
    for (size_t i = 0; i < self->n_names; i++) {
        if (strlen(self->names[i]) == len && !memcmp(self->names[i], name, len)) {
            *out = (uint32_t)i;
            return 0;
        }
    }
    char **nn = realloc(self->names, (self->n_names + 1) * sizeof *nn);
    if (!nn)
        return tc_fail(TC_ENOMEM, "out of memory");
    self->names = nn;
    if (!(nn[self->n_names] = strndup(name, len)))
        return tc_fail(TC_ENOMEM, "out of memory");
    *out = (uint32_t)self->n_names++;
    return 0;
}

/* Where `e` goes in (or is in) the waiting list, sorted by id. */
static size_t s_wait_pos(const tc_journal_t *self, const char *id, bool *found)
{
    size_t lo = 0, hi = self->n_wait;
    *found = false;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = memcmp(self->e[self->wait[mid]].id, id, TC_MSGID_LEN);
        if (c == 0) {
            *found = true;
            return mid;
        }
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* Move entry `e` to `state`, keeping the waiting list and counts. */
static int s_set_state(tc_journal_t *self, tc_jentry_t *e, uint8_t state)
{
    if (e->state == state)
        return 0;
    bool found;
    size_t at = s_wait_pos(self, e->id, &found);
    if (e->state == TC_JSTATE_WAITING && found) {
        memmove(self->wait + at, self->wait + at + 1, (self->n_wait - at - 1) * sizeof *self->wait);
        self->n_wait--;
    }
    if (state == TC_JSTATE_WAITING && !found) {
        int rc = s_grow(self, (void **)&self->wait, &self->cap_wait, self->n_wait,
                        sizeof *self->wait, 256);
        if (rc < 0)
            return rc;
        memmove(self->wait + at + 1, self->wait + at, (self->n_wait - at) * sizeof *self->wait);
        self->wait[at] = (uint32_t)(e - self->e);
        self->n_wait++;
    }
    if (e->state == TC_JSTATE_REFUSED)
        self->rejected--;
    if (state == TC_JSTATE_REFUSED)
        self->rejected++;
    e->state = state;
    return 0;
}

/* Apply one record to the index. */
static int s_apply(tc_journal_t *self, const tc_jrecord_t *r)
{
    tc_jentry_t *e = s_find(self, r->id);
    if (r->type != TC_JREC_RESULT) {
        if (!e)
            return 0; /* about a message this log does not hold: nothing to do */
        if (r->type == TC_JREC_REFUSED) {
            e->reason_off = r->payload_off;
            e->reason_len = r->payload_len;
        }
        return s_set_state(self, e, r->type == TC_JREC_ACKED     ? TC_JSTATE_ACKED
                                    : r->type == TC_JREC_REFUSED ? TC_JSTATE_REFUSED
                                                                 : TC_JSTATE_WAITING);
    }
    if (e) /* stored twice: the first copy stands, and waits again */
        return s_set_state(self, e, TC_JSTATE_WAITING);
    uint32_t name;
    int rc = s_name_index(self, r->name, r->name_len, &name);
    if (rc == 0)
        rc = s_reserve(self);
    if (rc < 0)
        return rc;
    e = &self->e[self->n];
    memset(e, 0, sizeof *e);
    memcpy(e->id, r->id, sizeof e->id);
    e->state = TC_JSTATE_ACKED; /* s_set_state below makes it wait */
    e->name = name;
    e->frame = r->frame;
    e->off = r->payload_off;
    e->len = r->payload_len;
    s_slot_insert(self, self->n++);
    return s_set_state(self, e, TC_JSTATE_WAITING);
}

/* ---- opening ---- */

/* The cursor on disk, or 0 when absent, unreadable or past `size`. */
static uint64_t s_read_cursor(const tc_journal_t *self, uint64_t size)
{
    char path[4300];
    snprintf(path, sizeof path, "%s/cursor", self->dir);
    FILE *f = fopen(path, "r");
    unsigned long long v = 0;
    if (!f)
        return 0;
    if (fscanf(f, "%llu", &v) != 1 || v > size)
        v = 0;
    fclose(f);
    return v;
}

/* The offset below which every message is settled. */
static uint64_t s_cursor(const tc_journal_t *self)
{
    uint64_t c = self->end;
    for (size_t i = 0; i < self->n_wait; i++) {
        if (self->e[self->wait[i]].frame < c)
            c = self->e[self->wait[i]].frame;
    }
    return c;
}

/* Flush the log, then write the cursor (the log first, so the cursor never
 * speaks of records the disk may not hold). Failure only costs a longer
 * check at the next open. Caller holds the lock. */
static void s_write_cursor(tc_journal_t *self)
{
    uint64_t c = s_cursor(self);
    self->acks_since_cursor = 0;
    if (self->readonly || c == self->cursor_written || fdatasync(self->fd) != 0)
        return;
    char path[4300], tmp[4400];
    snprintf(path, sizeof path, "%s/cursor", self->dir);
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = tc_fopen_private(tmp);
    if (!f)
        return;
    bool ok = fprintf(f, "%llu\n", (unsigned long long)c) > 0;
    ok = fclose(f) == 0 && ok;
    if (ok && rename(tmp, path) == 0)
        self->cursor_written = c;
    else
        unlink(tmp);
}

/* Keep the bytes from `from` on in DIR/log.damaged-<from>, then cut them. */
static int s_cut_damaged(tc_journal_t *self, uint64_t from, uint64_t size)
{
    char keep[4400];
    snprintf(keep, sizeof keep, "%s.damaged-%llu", self->path, (unsigned long long)from);
    enum { CHUNK = 1 << 20 };
    uint8_t *buf = malloc(CHUNK);
    FILE *f = buf ? tc_fopen_private(keep) : NULL;
    int rc = buf ? 0 : tc_fail(TC_ENOMEM, "out of memory");
    if (rc == 0 && !f)
        rc = tc_fail(TC_EIO, "cannot create %s: %s", keep, strerror(errno));
    for (uint64_t at = from; rc == 0 && at < size; at += CHUNK) {
        size_t n = size - at < CHUNK ? (size_t)(size - at) : CHUNK;
        if ((rc = tc_journal_pread(self, buf, n, at)) == 0 && fwrite(buf, 1, n, f) != n)
            rc = tc_fail(TC_EIO, "cannot write %s: %s", keep, strerror(errno));
    }
    if (rc == 0 && (fflush(f) != 0 || fsync(fileno(f)) != 0))
        rc = tc_fail(TC_EIO, "cannot keep the damaged end of %s in %s: %s", self->path, keep,
                     strerror(errno));
    if (f)
        fclose(f);
    free(buf);
    if (rc == 0 && (ftruncate(self->fd, (off_t)from) != 0 || fsync(self->fd) != 0))
        rc = tc_fail(TC_EIO, "cannot cut the damaged end of %s: %s", self->path, strerror(errno));
    if (rc == 0)
        tc_log_warn("%s: the last %llu bytes (from byte %llu) are not a whole record, as a crash "
                    "during a write leaves them; they are kept in %s and the journal goes on "
                    "without them",
                    self->path, (unsigned long long)(size - from), (unsigned long long)from, keep);
    return rc;
}

/* Walk the log from after the magic. Records from `verify_from` on are
 * read whole and their CRC checked. *good_end gets the end of the last
 * good record and *damaged whether the walk stopped at a bad one. */
static int s_scan(tc_journal_t *self, uint64_t size, uint64_t verify_from, uint64_t *good_end,
                  bool *damaged)
{
    const uint32_t max_body = TC_JOURNAL_PREFIX_MAX + TC_MAX_MESSAGE_BYTES;
    uint8_t head[TC_JOURNAL_HEAD + TC_JOURNAL_PREFIX_MAX];
    uint8_t *body = NULL;
    size_t cap = 0;
    uint64_t pos = TC_JOURNAL_MAGIC_LEN;
    int rc = 0;
    *damaged = false;
    while (pos < size) {
        size_t got;
        if ((rc = tc_journal_pread_some(self, head, sizeof head, pos, &got)) < 0)
            break;
        uint32_t len = got >= TC_JOURNAL_HEAD ? tc_journal_u32(head) : 0;
        if (got < TC_JOURNAL_HEAD || len < 1 + TC_MSGID_LEN || len > max_body ||
            pos + TC_JOURNAL_HEAD + len > size) {
            *damaged = true;
            break;
        }
        const uint8_t *p = head + TC_JOURNAL_HEAD;
        size_t have = got - TC_JOURNAL_HEAD < len ? got - TC_JOURNAL_HEAD : len;
        if (pos >= verify_from) {
            if (len > cap) {
                uint8_t *nb = realloc(body, len);
                if (!nb) {
                    rc = tc_fail(TC_ENOMEM, "out of memory reading %s", self->path);
                    break;
                }
                body = nb;
                cap = len;
            }
            if ((rc = tc_journal_pread(self, body, len, pos + TC_JOURNAL_HEAD)) < 0)
                break;
            if ((uint32_t)crc32(0L, body, len) != tc_journal_u32(head + 4)) {
                *damaged = true;
                break;
            }
            p = body;
            have = len;
        }
        tc_jrecord_t r = {.frame = pos};
        if (!tc_journal_parse(p, have, len, pos + TC_JOURNAL_HEAD, &r)) {
            *damaged = true;
            break;
        }
        if ((rc = s_apply(self, &r)) < 0)
            break;
        pos += TC_JOURNAL_HEAD + len;
    }
    free(body);
    *good_end = pos;
    return rc;
}

/* Read or write the magic of a log of `size` bytes. */
static int s_magic(tc_journal_t *self, uint64_t size)
{
    if (size == 0) {
        if (self->readonly)
            return 0;
        if (pwrite(self->fd, TC_JOURNAL_MAGIC, TC_JOURNAL_MAGIC_LEN, 0) != TC_JOURNAL_MAGIC_LEN ||
            fsync(self->fd) != 0)
            return tc_fail(TC_EIO, "cannot write %s: %s", self->path, strerror(errno));
        return 0;
    }
    char m[TC_JOURNAL_MAGIC_LEN] = {0};
    if (size < TC_JOURNAL_MAGIC_LEN || tc_journal_pread(self, m, sizeof m, 0) < 0 ||
        memcmp(m, TC_JOURNAL_MAGIC, TC_JOURNAL_MAGIC_LEN) != 0)
        return tc_fail(TC_EPARSE, "%s is not a traincast agent journal (it does not start with "
                                  "%s); move it away and start again",
                       self->path, TC_JOURNAL_MAGIC);
    return 0;
}

static int s_load(tc_journal_t *self)
{
    struct stat st;
    if (fstat(self->fd, &st) != 0)
        return tc_fail(TC_EIO, "cannot stat %s: %s", self->path, strerror(errno));
    uint64_t size = (uint64_t)st.st_size, good = TC_JOURNAL_MAGIC_LEN;
    int rc = s_magic(self, size);
    if (rc < 0 || size == 0) {
        self->end = TC_JOURNAL_MAGIC_LEN;
        return rc;
    }
    bool damaged = false;
    uint64_t verify_from = self->readonly ? 0 : s_read_cursor(self, size);
    if ((rc = s_scan(self, size, verify_from, &good, &damaged)) < 0)
        return rc;
    if (damaged && !self->readonly && (rc = s_cut_damaged(self, good, size)) < 0)
        return rc;
    self->end = good;
    self->cursor_written = verify_from;
    return 0;
}

static int s_new(const char *dir, bool readonly, tc_journal_t **out)
{
    *out = NULL;
    tc_journal_t *self = calloc(1, sizeof *self);
    if (!self || !(self->dir = strdup(dir)) || s_name_index(self, "", 0, &(uint32_t){0}) < 0) {
        if (self)
            free(self->dir);
        free(self);
        return tc_fail(TC_ENOMEM, "out of memory");
    }
    self->fd = -1;
    self->readonly = readonly;
    pthread_mutex_init(&self->lock, NULL);
    snprintf(self->path, sizeof self->path, "%s/log", dir);
    *out = self;
    return 0;
}

int tc_journal_open(const char *dir, tc_journal_t **out)
{
    tc_journal_t *self = NULL;
    int rc = s_new(dir, false, &self);
    if (rc < 0)
        return rc;
    if (mkdir(dir, 0700) != 0 && errno != EEXIST)
        rc = tc_fail(TC_EIO, "cannot create the journal directory %s: %s", dir, strerror(errno));
    else if ((self->fd = open(self->path, O_RDWR | O_CREAT | O_CLOEXEC, 0600)) < 0)
        rc = tc_fail(TC_EIO, "cannot open %s: %s", self->path, strerror(errno));
    else
        rc = s_load(self);
    if (rc < 0) {
        tc_journal_destroy(&self);
        return rc;
    }
    *out = self;
    return 0;
}

void tc_journal_destroy(tc_journal_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    tc_journal_t *self = *self_p;
    if (self->fd >= 0) {
        s_write_cursor(self);
        close(self->fd);
    }
    pthread_mutex_destroy(&self->lock);
    for (size_t i = 0; i < self->n_names; i++)
        free(self->names[i]);
    free(self->names);
    free(self->e);
    free(self->slots);
    free(self->wait);
    free(self->dir);
    free(self);
    *self_p = NULL;
}

const char *tc_journal_path(const tc_journal_t *self)
{
    return self->path;
}

/* ---- writing ---- */

/* Append framed records; caller holds the lock. A failed write is cut off,
 * so the log never keeps half a record. */
static int s_write(tc_journal_t *self, const tc_buf_t *b, bool sync)
{
    if (b->failed)
        return tc_fail(TC_ENOMEM, "out of memory writing %s", self->path);
    size_t done = 0;
    while (done < b->len) {
        ssize_t w = pwrite(self->fd, b->data + done, b->len - done, (off_t)(self->end + done));
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0) {
            int e = errno;
            if (ftruncate(self->fd, (off_t)self->end) != 0)
                tc_log_warn("cannot cut a failed write off %s: %s", self->path, strerror(errno));
            return tc_fail(TC_EIO, "writing %s: %s (is the disk full?)", self->path, strerror(e));
        }
        done += (size_t)w;
    }
    if (sync && fdatasync(self->fd) != 0)
        return tc_fail(TC_EIO, "flushing %s to disk: %s", self->path, strerror(errno));
    return 0;
}

/* Apply the records just written in `b` (whole frames) to the index. */
static int s_apply_written(tc_journal_t *self, const tc_buf_t *b)
{
    size_t at = 0;
    int rc = 0;
    while (rc == 0 && at < b->len) {
        const uint8_t *h = (const uint8_t *)b->data + at;
        uint32_t len = tc_journal_u32(h);
        tc_jrecord_t r = {.frame = self->end + at};
        if (!tc_journal_parse(h + TC_JOURNAL_HEAD, len, len, r.frame + TC_JOURNAL_HEAD, &r))
            return tc_fail(TC_EINVAL, "internal: a record framed for %s does not parse",
                           self->path);
        rc = s_apply(self, &r);
        at += TC_JOURNAL_HEAD + len;
    }
    return rc;
}

static int s_commit(tc_journal_t *self, const tc_buf_t *b, bool sync)
{
    if (b->len == 0)
        return 0;
    int rc = s_write(self, b, sync);
    if (rc == 0)
        rc = s_apply_written(self, b);
    if (rc == 0)
        self->end += b->len;
    return rc;
}

/* Frame what putting `id` needs (an R, a Q or nothing) into `b`; caller
 * holds the lock. */
static int s_frame_put(tc_journal_t *self, tc_buf_t *b, const char *name, const char *id,
                       const uint8_t *data, size_t len, bool *added)
{
    *added = false;
    if (!tc_msgid_valid(id))
        return tc_fail(TC_EINVAL, "journal: '%.40s' is not a valid message id", id ? id : "");
    if (strlen(name) > TC_JOURNAL_NAME_MAX)
        return tc_fail(TC_EINVAL, "journal: result name '%.40s...' is longer than %d bytes", name,
                       TC_JOURNAL_NAME_MAX);
    if (len > TC_MAX_MESSAGE_BYTES)
        return tc_fail(TC_ELIMIT, "journal: a %zu-byte message is over the %u-byte limit", len,
                       TC_MAX_MESSAGE_BYTES);
    const tc_jentry_t *e = s_find(self, id);
    if (e && e->state == TC_JSTATE_WAITING)
        return 0;
    tc_journal_frame(b, e ? TC_JREC_REQUEUED : TC_JREC_RESULT, id, name, e ? NULL : data,
                     e ? 0 : len);
    *added = true;
    return 0;
}

/* Put n messages as results of `name` with one write and one flush;
 * *count gets how many wait now and did not before. */
static int s_put_batch(tc_journal_t *self, const char *name, size_t n, const char *const *ids,
                       const uint8_t *const *data, const size_t *lens, size_t *count)
{
    tc_buf_t b = {0};
    int rc = 0;
    *count = 0;
    pthread_mutex_lock(&self->lock);
    for (size_t i = 0; rc == 0 && i < n; i++) {
        bool add = false, repeated = false;
        for (size_t j = 0; j < i && !repeated; j++)
            repeated = !strcmp(ids[j], ids[i]);
        if (!repeated)
            rc = s_frame_put(self, &b, name, ids[i], data[i], lens[i], &add);
        *count += add;
    }
    if (rc == 0)
        rc = s_commit(self, &b, true);
    pthread_mutex_unlock(&self->lock);
    tc_buf_free(&b);
    if (rc < 0)
        *count = 0;
    return rc;
}

static int s_put_named(tc_journal_t *self, const char *name, const char *id, const uint8_t *data,
                       size_t len, bool *added)
{
    size_t count = 0;
    int rc = s_put_batch(self, name, 1, &id, &data, &len, &count);
    if (added)
        *added = count == 1;
    return rc;
}

int tc_journal_put(tc_journal_t *self, const char *id, const uint8_t *data, size_t len,
                   bool *added)
{
    return s_put_named(self, "", id, data, len, added);
}

int tc_journal_put_many(tc_journal_t *self, size_t n, const char *const *ids,
                        const uint8_t *const *data, const size_t *lens, size_t *added)
{
    size_t count = 0;
    int rc = s_put_batch(self, "", n, ids, data, lens, &count);
    if (added)
        *added = count;
    return rc;
}

int tc_journal_put_envelope(tc_journal_t *self, const tc_envelope_t *env)
{
    return tc_journal_append(self, "", env, NULL);
}

int tc_journal_append(tc_journal_t *self, const char *name, const tc_envelope_t *env,
                      bool *added)
{
    uint8_t *buf = NULL;
    size_t len = 0;
    int rc = tc_envelope_pack(env, &buf, &len);
    if (rc == 0)
        rc = s_put_named(self, name ? name : "", env->message_id, buf, len, added);
    free(buf);
    return rc;
}

int tc_journal_migrate_put(tc_journal_t *self, const char *name, const char *id,
                           const uint8_t *data, size_t len, uint8_t state, const char *reason,
                           bool *added)
{
    tc_buf_t b = {0};
    pthread_mutex_lock(&self->lock);
    *added = !s_find(self, id);
    int rc = *added ? s_frame_put(self, &b, name, id, data, len, added) : 0;
    if (rc == 0 && *added && state == TC_JSTATE_ACKED)
        tc_journal_frame(&b, TC_JREC_ACKED, id, NULL, NULL, 0);
    if (rc == 0 && *added && state == TC_JSTATE_REFUSED)
        tc_journal_frame(&b, TC_JREC_REFUSED, id, NULL, reason, strlen(reason ? reason : ""));
    if (rc == 0)
        rc = s_commit(self, &b, false);
    pthread_mutex_unlock(&self->lock);
    tc_buf_free(&b);
    return rc;
}

int tc_journal_sync(tc_journal_t *self)
{
    if (fdatasync(self->fd) != 0)
        return tc_fail(TC_EIO, "flushing %s to disk: %s", self->path, strerror(errno));
    return 0;
}

/* Append an A, X or Q about `id` when it moves the message on. */
static int s_mark(tc_journal_t *self, const char *id, char type, const char *reason)
{
    if (!tc_msgid_valid(id))
        return 0;
    tc_buf_t b = {0};
    int rc = 0;
    pthread_mutex_lock(&self->lock);
    const tc_jentry_t *e = s_find(self, id);
    if (e && e->state == TC_JSTATE_WAITING) {
        size_t rlen = reason ? strnlen(reason, 4096) : 0;
        tc_journal_frame(&b, type, id, NULL, reason, rlen);
        rc = s_commit(self, &b, type != TC_JREC_ACKED);
        if (rc == 0 && type == TC_JREC_ACKED &&
            ++self->acks_since_cursor >= S_CURSOR_EVERY_ACKS)
            s_write_cursor(self);
    }
    pthread_mutex_unlock(&self->lock);
    tc_buf_free(&b);
    return rc;
}

int tc_journal_ack(tc_journal_t *self, const char *id)
{
    return s_mark(self, id, TC_JREC_ACKED, NULL);
}

int tc_journal_reject(tc_journal_t *self, const char *id, const char *reason)
{
    return s_mark(self, id, TC_JREC_REFUSED, reason ? reason : "");
}

int tc_journal_requeue_rejected(tc_journal_t *self, size_t *moved)
{
    tc_buf_t b = {0};
    pthread_mutex_lock(&self->lock);
    size_t n = 0;
    for (size_t i = 0; i < self->n; i++) {
        if (self->e[i].state == TC_JSTATE_REFUSED) {
            tc_journal_frame(&b, TC_JREC_REQUEUED, self->e[i].id, NULL, NULL, 0);
            n++;
        }
    }
    int rc = s_commit(self, &b, true);
    pthread_mutex_unlock(&self->lock);
    tc_buf_free(&b);
    *moved = rc == 0 ? n : 0;
    return rc;
}

/* ---- reading ---- */

int tc_journal_read(tc_journal_t *self, const char *id, uint8_t **data, size_t *len)
{
    *data = NULL;
    *len = 0;
    pthread_mutex_lock(&self->lock);
    const tc_jentry_t *e = tc_msgid_valid(id) ? s_find(self, id) : NULL;
    bool waiting = e && e->state == TC_JSTATE_WAITING;
    uint64_t off = e ? e->off : 0;
    uint32_t n = e ? e->len : 0;
    pthread_mutex_unlock(&self->lock);
    if (!waiting)
        return tc_fail(TC_ENOTFOUND, "journal: message %.40s is not waiting", id ? id : "");
    uint8_t *buf = malloc(n ? n : 1);
    if (!buf)
        return tc_fail(TC_ENOMEM, "out of memory reading %s", self->path);
    int rc = tc_journal_pread(self, buf, n, off);
    if (rc < 0) {
        free(buf);
        return rc;
    }
    *data = buf;
    *len = n;
    return 0;
}

size_t tc_journal_waiting(tc_journal_t *self)
{
    pthread_mutex_lock(&self->lock);
    size_t n = self->n_wait;
    pthread_mutex_unlock(&self->lock);
    return n;
}

size_t tc_journal_rejected_count(tc_journal_t *self)
{
    pthread_mutex_lock(&self->lock);
    size_t n = self->rejected;
    pthread_mutex_unlock(&self->lock);
    return n;
}

size_t tc_journal_oldest(tc_journal_t *self, char (*ids)[TC_MSGID_LEN + 1], size_t max)
{
    pthread_mutex_lock(&self->lock);
    size_t n = self->n_wait < max ? self->n_wait : max;
    for (size_t i = 0; i < n; i++)
        memcpy(ids[i], self->e[self->wait[i]].id, TC_MSGID_LEN + 1);
    pthread_mutex_unlock(&self->lock);
    return n;
}

bool tc_journal_is_waiting(tc_journal_t *self, const char *id)
{
    if (!tc_msgid_valid(id))
        return false;
    pthread_mutex_lock(&self->lock);
    const tc_jentry_t *e = s_find(self, id);
    bool w = e && e->state == TC_JSTATE_WAITING;
    pthread_mutex_unlock(&self->lock);
    return w;
}

/* The places of `name`'s results (malloc'ed; *n of them), or of every
 * refused message when `name` is NULL. */
static int s_places(tc_journal_t *self, const char *name, uint64_t **offs, uint32_t **lens,
                    size_t *n)
{
    *n = 0;
    *offs = NULL;
    *lens = NULL;
    pthread_mutex_lock(&self->lock);
    int rc = 0;
    uint32_t want = UINT32_MAX;
    for (size_t i = 0; name && i < self->n_names; i++)
        if (!strcmp(self->names[i], name))
            want = (uint32_t)i;
    size_t cap = 0;
    for (size_t i = 0; i < self->n && rc == 0; i++) {
        if (name ? self->e[i].name != want : self->e[i].state != TC_JSTATE_REFUSED)
            continue;
        if (*n == cap) {
            cap = cap ? cap * 2 : 64;
            uint64_t *no = realloc(*offs, cap * sizeof *no);
            uint32_t *nl = no ? realloc(*lens, cap * sizeof *nl) : NULL;
            if (no)
                *offs = no;
            if (!no || !nl) {
                rc = tc_fail(TC_ENOMEM, "out of memory");
                break;
            }
            *lens = nl;
        }
        (*offs)[*n] = self->e[i].off;
        (*lens)[(*n)++] = self->e[i].len;
    }
    pthread_mutex_unlock(&self->lock);
    return rc;
}

size_t tc_journal_count(tc_journal_t *self, const char *name)
{
    uint64_t *offs;
    uint32_t *lens;
    size_t n = 0;
    s_places(self, name, &offs, &lens, &n);
    free(offs);
    free(lens);
    return n;
}

int tc_journal_each(tc_journal_t *self, const char *name, tc_resultfile_fn fn, void *arg)
{
    uint64_t *offs;
    uint32_t *lens;
    size_t n;
    int rc = s_places(self, name ? name : "", &offs, &lens, &n);
    uint8_t *buf = NULL;
    size_t cap = 0;
    for (size_t i = 0; rc == 0 && i < n; i++) {
        if (lens[i] > cap) {
            uint8_t *nb = realloc(buf, lens[i]);
            if (!nb) {
                rc = tc_fail(TC_ENOMEM, "out of memory reading %s", self->path);
                break;
            }
            buf = nb;
            cap = lens[i];
        }
        tc_envelope_t *env = NULL;
        if ((rc = tc_journal_pread(self, buf, lens[i], offs[i])) < 0)
            break;
        if ((rc = tc_envelope_unpack(buf, lens[i], TC_MAX_MESSAGE_BYTES, &env)) < 0) {
            rc = tc_err_context(rc, "the result at byte %llu of %s",
                                (unsigned long long)offs[i], self->path);
            break;
        }
        rc = fn(env, arg);
        tc_envelope_free(&env);
    }
    free(buf);
    free(offs);
    free(lens);
    return rc;
}

/* ---- reading without opening ---- */

static int s_each_refused(tc_journal_t *self, tc_journal_rejected_fn fn, void *arg)
{
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < self->n; i++) {
        const tc_jentry_t *e = &self->e[i];
        if (e->state != TC_JSTATE_REFUSED)
            continue;
        char *reason = calloc(1, (size_t)e->reason_len + 1);
        uint8_t *data = malloc(e->len ? e->len : 1);
        if (!reason || !data)
            rc = tc_fail(TC_ENOMEM, "out of memory");
        if (rc == 0 && (rc = tc_journal_pread(self, reason, e->reason_len, e->reason_off)) == 0 &&
            (rc = tc_journal_pread(self, data, e->len, e->off)) == 0)
            rc = fn(arg, e->id, reason, data, e->len);
        free(reason);
        free(data);
    }
    return rc;
}

int tc_journal_summary(const char *dir, tc_journal_summary_t *out, tc_journal_rejected_fn fn,
                       void *arg)
{
    memset(out, 0, sizeof *out);
    tc_journal_t *self = NULL;
    int rc = s_new(dir, true, &self);
    if (rc < 0)
        return rc;
    self->fd = open(self->path, O_RDONLY | O_CLOEXEC);
    if (self->fd < 0 && errno != ENOENT)
        rc = tc_fail(TC_EIO, "cannot open %s: %s", self->path, strerror(errno));
    if (self->fd >= 0 && (rc = s_load(self)) == 0) {
        out->waiting = self->n_wait;
        out->records = self->n;
        out->rejected = self->rejected;
        if (self->n_wait)
            memcpy(out->oldest, self->e[self->wait[0]].id, TC_MSGID_LEN + 1);
        if (fn)
            rc = s_each_refused(self, fn, arg);
    }
    tc_journal_destroy(&self);
    return rc;
}
