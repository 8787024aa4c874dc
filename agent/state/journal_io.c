/* Writing the journal, and reading what it holds (journal.c keeps the
 * index; journal.h has the format). */
#include "journal_internal.h"

#include "tc_error.h"
#include "tc_log.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The cursor is rewritten after this many acknowledgements (and on close). */
#define S_CURSOR_EVERY_ACKS 2048

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
        rc = tc_journal_apply(self, &r);
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
    const tc_jentry_t *e = tc_journal_find(self, id);
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
    *added = !tc_journal_find(self, id);
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
    const tc_jentry_t *e = tc_journal_find(self, id);
    if (e && e->state == TC_JSTATE_WAITING) {
        size_t rlen = reason ? strnlen(reason, 4096) : 0;
        tc_journal_frame(&b, type, id, NULL, reason, rlen);
        rc = s_commit(self, &b, type != TC_JREC_ACKED);
        if (rc == 0 && type == TC_JREC_ACKED &&
            ++self->acks_since_cursor >= S_CURSOR_EVERY_ACKS)
            tc_journal_write_cursor(self);
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
    const tc_jentry_t *e = tc_msgid_valid(id) ? tc_journal_find(self, id) : NULL;
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
    const tc_jentry_t *e = tc_journal_find(self, id);
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

