#include "spool_internal.h"

#include "tc_error.h"
#include "tc_paths.h"
#include "tc_log.h"
#include "tc_resultfile.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>


static int s_write_tmp(const char *tmp, const uint8_t *data, size_t len, bool sync);

int tc_spool_fsync_dir(const char *dir)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return tc_fail(TC_EIO, "cannot open spool directory %s: %s", dir, strerror(errno));
    int rc = 0;
    if (fsync(fd) != 0)
        rc = tc_fail(TC_EIO, "cannot flush spool directory %s to disk: %s", dir, strerror(errno));
    close(fd);
    return rc;
}

/* Index of `id` or where it would go. */
static size_t s_find(const tc_spool_t *self, const char *id, bool *found)
{
    size_t lo = 0, hi = self->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(self->ids[mid], id);
        if (c == 0) {
            *found = true;
            return mid;
        }
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    *found = false;
    return lo;
}

int tc_spool_index_insert(tc_spool_t *self, const char *id)
{
    bool found;
    size_t at = s_find(self, id, &found);
    if (found)
        return 0;
    if (self->n == self->cap) {
        size_t nc = self->cap ? self->cap * 2 : 256;
        tc_spool_id_t *ni = realloc(self->ids, nc * sizeof *ni);
        if (!ni)
            return tc_fail(TC_ENOMEM, "out of memory indexing the spool");
        self->ids = ni;
        self->cap = nc;
    }
    memmove(self->ids + at + 1, self->ids + at, (self->n - at) * sizeof *self->ids);
    memcpy(self->ids[at], id, TC_MSGID_LEN + 1);
    self->n++;
    return 0;
}

void tc_spool_index_erase(tc_spool_t *self, const char *id)
{
    bool found;
    size_t at = s_find(self, id, &found);
    if (!found)
        return;
    memmove(self->ids + at, self->ids + at + 1, (self->n - at - 1) * sizeof *self->ids);
    self->n--;
}

int tc_spool_is_msg_name(const char *name, char id[TC_MSGID_LEN + 1])
{
    size_t len = strlen(name);
    if (len != TC_MSGID_LEN + 4 || strcmp(name + TC_MSGID_LEN, ".msg") != 0)
        return 0;
    memcpy(id, name, TC_MSGID_LEN);
    id[TC_MSGID_LEN] = '\0';
    return tc_msgid_valid(id);
}

static int s_scan(tc_spool_t *self)
{
    DIR *d = opendir(self->dir);
    if (!d)
        return tc_fail(TC_EIO, "cannot read spool directory %s: %s", self->dir, strerror(errno));
    struct dirent *e;
    int rc = 0;
    while (rc == 0 && (e = readdir(d)) != NULL) {
        char id[TC_MSGID_LEN + 1];
        size_t len = strlen(e->d_name);
        if (e->d_name[0] == '.' && len > 4 && !strcmp(e->d_name + len - 4, ".tmp")) {
            /* A put interrupted before its rename: never acknowledged, never
             * sent; the producer will write it again. */
            if (unlinkat(dirfd(d), e->d_name, 0) == 0)
                tc_log_info("spool: removed %s left by an interrupted write", e->d_name);
        } else if (tc_spool_is_msg_name(e->d_name, id)) {
            rc = tc_spool_index_insert(self, id);
        }
    }
    closedir(d);
    if (rc < 0)
        return rc;

    char rej[4096];
    snprintf(rej, sizeof rej, "%s/rejected", self->dir);
    d = opendir(rej);
    if (d) {
        while ((e = readdir(d)) != NULL) {
            char id[TC_MSGID_LEN + 1];
            if (tc_spool_is_msg_name(e->d_name, id))
                self->rejected++;
        }
        closedir(d);
    }
    return 0;
}

int tc_spool_open(const char *dir, tc_spool_t **out)
{
    *out = NULL;
    tc_spool_t *self = calloc(1, sizeof *self);
    if (!self || !(self->dir = strdup(dir))) {
        free(self);
        return tc_fail(TC_ENOMEM, "out of memory");
    }
    pthread_mutex_init(&self->lock, NULL);
    int rc = 0;
    char rej[4096];
    snprintf(rej, sizeof rej, "%s/rejected", dir);
    if (mkdir(dir, 0700) != 0 && errno != EEXIST)
        rc = tc_fail(TC_EIO, "cannot create spool directory %s: %s", dir, strerror(errno));
    else if (mkdir(rej, 0700) != 0 && errno != EEXIST)
        rc = tc_fail(TC_EIO, "cannot create %s: %s", rej, strerror(errno));
    if (rc == 0)
        rc = s_scan(self);
    if (rc < 0) {
        tc_spool_destroy(&self);
        return rc;
    }
    *out = self;
    return 0;
}

void tc_spool_destroy(tc_spool_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    tc_spool_t *self = *self_p;
    pthread_mutex_destroy(&self->lock);
    free(self->ids);
    free(self->dir);
    free(self);
    *self_p = NULL;
}

const char *tc_spool_dir(const tc_spool_t *self)
{
    return self->dir;
}

void tc_spool_msg_path(const tc_spool_t *self, const char *id, char *out, size_t size)
{
    snprintf(out, size, "%s/%s.msg", self->dir, id);
}

int tc_spool_put(tc_spool_t *self, const char *id, const uint8_t *data, size_t len,
                 bool sync_dir, bool *added)
{
    if (added)
        *added = false;
    if (!tc_msgid_valid(id))
        return tc_fail(TC_EINVAL, "spool: '%.40s' is not a valid message id", id ? id : "");
    pthread_mutex_lock(&self->lock);
    bool found;
    s_find(self, id, &found);
    pthread_mutex_unlock(&self->lock);
    if (found)
        return 0;

    char tmp[4200], path[4200];
    snprintf(tmp, sizeof tmp, "%s/.%s.tmp", self->dir, id);
    tc_spool_msg_path(self, id, path, sizeof path);
    int rc = s_write_tmp(tmp, data, len, true);
    if (rc == 0 && rename(tmp, path) != 0)
        rc = tc_fail(TC_EIO, "spool: renaming %s: %s", tmp, strerror(errno));
    if (rc < 0) {
        unlink(tmp);
        return rc;
    }
    if (sync_dir && (rc = tc_spool_fsync_dir(self->dir)) < 0)
        return rc;
    pthread_mutex_lock(&self->lock);
    rc = tc_spool_index_insert(self, id);
    pthread_mutex_unlock(&self->lock);
    if (rc == 0 && added)
        *added = true;
    return rc;
}

static int s_write_tmp(const char *tmp, const uint8_t *data, size_t len, bool sync)
{
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0)
        return tc_fail(TC_EIO, "spool: cannot create %s: %s", tmp, strerror(errno));
    size_t done = 0;
    int rc = 0;
    while (done < len) {
        ssize_t w = write(fd, data + done, len - done);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0) {
            rc = tc_fail(TC_EIO, "spool: writing %s: %s (is the disk full?)", tmp, strerror(errno));
            break;
        }
        done += (size_t)w;
    }
    if (rc == 0 && sync && fsync(fd) != 0)
        rc = tc_fail(TC_EIO, "spool: flushing %s to disk: %s", tmp, strerror(errno));
    close(fd);
    if (rc < 0)
        unlink(tmp);
    return rc;
}

int tc_spool_put_many(tc_spool_t *self, size_t n, const char *const *ids,
                      const uint8_t *const *data, const size_t *lens, size_t *added)
{
    if (added)
        *added = 0;
    bool *todo = calloc(n ? n : 1, sizeof *todo);
    if (!todo)
        return tc_fail(TC_ENOMEM, "out of memory");
    int rc = 0;
    char tmp[4200], path[4200];
    for (size_t i = 0; rc == 0 && i < n; i++) {
        if (!tc_msgid_valid(ids[i])) {
            rc = tc_fail(TC_EINVAL, "spool: '%.40s' is not a valid message id", ids[i]);
            break;
        }
        bool found = false;
        for (size_t j = 0; j < i && !found; j++)
            found = todo[j] && !strcmp(ids[j], ids[i]);
        if (!found)
            found = tc_spool_contains(self, ids[i]);
        if (found)
            continue;
        snprintf(tmp, sizeof tmp, "%s/.%s.tmp", self->dir, ids[i]);
        rc = s_write_tmp(tmp, data[i], lens[i], false);
        todo[i] = rc == 0;
    }
    /* One flush for all the data before any of it gets its final name. */
    if (rc == 0) {
        int dfd = open(self->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dfd < 0 || syncfs(dfd) != 0)
            rc = tc_fail(TC_EIO, "spool: flushing %s to disk: %s", self->dir, strerror(errno));
        if (dfd >= 0)
            close(dfd);
    }
    for (size_t i = 0; i < n; i++) {
        if (!todo[i])
            continue;
        snprintf(tmp, sizeof tmp, "%s/.%s.tmp", self->dir, ids[i]);
        tc_spool_msg_path(self, ids[i], path, sizeof path);
        if (rc == 0 && rename(tmp, path) != 0)
            rc = tc_fail(TC_EIO, "spool: renaming %s: %s", tmp, strerror(errno));
        if (rc < 0) {
            unlink(tmp);
            todo[i] = false;
        }
    }
    int src = tc_spool_fsync_dir(self->dir);
    if (rc == 0)
        rc = src;
    pthread_mutex_lock(&self->lock);
    for (size_t i = 0; i < n; i++) {
        if (todo[i] && tc_spool_index_insert(self, ids[i]) == 0 && added)
            (*added)++;
    }
    pthread_mutex_unlock(&self->lock);
    free(todo);
    return rc;
}

#define S_CHUNK_RECORDS 256
#define S_CHUNK_BYTES (32u << 20)

typedef struct {
    tc_spool_t *spool;
    const char *agent_id;
    char ids[S_CHUNK_RECORDS][TC_MSGID_LEN + 1];
    const char *idp[S_CHUNK_RECORDS];
    uint8_t *data[S_CHUNK_RECORDS];
    const uint8_t *datap[S_CHUNK_RECORDS];
    size_t lens[S_CHUNK_RECORDS];
    size_t n, bytes, records, added, skip;
} s_import_t;

static int s_import_flush(s_import_t *im)
{
    size_t added = 0;
    int rc = im->n ? tc_spool_put_many(im->spool, im->n, im->idp, im->datap, im->lens, &added)
                   : 0;
    for (size_t i = 0; i < im->n; i++)
        free(im->data[i]);
    im->added += added;
    im->n = 0;
    im->bytes = 0;
    return rc;
}

static int s_import_record(const tc_envelope_t *env, void *arg)
{
    s_import_t *im = arg;
    if (++im->records <= im->skip)
        return 0;
    if (!tc_msgid_valid(env->message_id))
        return tc_fail(TC_EINVAL, "record %zu has no valid message id", im->records);
    tc_envelope_t copy = *env;
    if (!copy.agent_id || !*copy.agent_id)
        copy.agent_id = (char *)im->agent_id;
    int rc = tc_envelope_pack(&copy, &im->data[im->n], &im->lens[im->n]);
    if (rc < 0)
        return rc;
    memcpy(im->ids[im->n], env->message_id, TC_MSGID_LEN + 1);
    im->idp[im->n] = im->ids[im->n];
    im->datap[im->n] = im->data[im->n];
    im->bytes += im->lens[im->n];
    im->n++;
    if (im->n == S_CHUNK_RECORDS || im->bytes >= S_CHUNK_BYTES)
        return s_import_flush(im);
    return 0;
}

int tc_spool_import(tc_spool_t *self, const char *path, const char *agent_id, size_t *records,
                    size_t *added)
{
    return tc_spool_import_from(self, path, 0, agent_id, records, added);
}

int tc_spool_import_from(tc_spool_t *self, const char *path, size_t skip, const char *agent_id,
                         size_t *records, size_t *added)
{
    s_import_t *im = calloc(1, sizeof *im);
    if (!im)
        return tc_fail(TC_ENOMEM, "out of memory");
    im->spool = self;
    im->agent_id = agent_id;
    im->skip = skip;
    int rc = tc_resultfile_read(path, false, s_import_record, im, NULL);
    int frc = s_import_flush(im);
    if (rc == 0)
        rc = frc;
    if (records)
        *records = im->records;
    if (added)
        *added = im->added;
    free(im);
    return rc;
}

int tc_spool_put_envelope(tc_spool_t *self, const tc_envelope_t *env)
{
    uint8_t *buf = NULL;
    size_t len = 0;
    int rc = tc_envelope_pack(env, &buf, &len);
    if (rc == 0)
        rc = tc_spool_put(self, env->message_id, buf, len, true, NULL);
    free(buf);
    return rc;
}

int tc_spool_sync(tc_spool_t *self)
{
    return tc_spool_fsync_dir(self->dir);
}

int tc_spool_read(tc_spool_t *self, const char *id, uint8_t **data, size_t *len)
{
    *data = NULL;
    *len = 0;
    char path[4200];
    tc_spool_msg_path(self, id, path, sizeof path);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return tc_fail(errno == ENOENT ? TC_ENOTFOUND : TC_EIO, "spool: cannot open %s: %s", path,
                       strerror(errno));
    struct stat st;
    int rc = 0;
    uint8_t *buf = NULL;
    if (fstat(fd, &st) != 0) {
        rc = tc_fail(TC_EIO, "spool: cannot stat %s: %s", path, strerror(errno));
    } else if ((uint64_t)st.st_size > TC_MAX_MESSAGE_BYTES) {
        rc = tc_fail(TC_ELIMIT, "spool: %s is %lld bytes, more than the message limit", path,
                     (long long)st.st_size);
    } else if (!(buf = malloc(st.st_size ? (size_t)st.st_size : 1))) {
        rc = tc_fail(TC_ENOMEM, "out of memory reading %s", path);
    } else {
        size_t done = 0, want = (size_t)st.st_size;
        while (done < want) {
            ssize_t r = read(fd, buf + done, want - done);
            if (r < 0 && errno == EINTR)
                continue;
            if (r <= 0) {
                rc = tc_fail(TC_EIO, "spool: reading %s: %s", path,
                             r < 0 ? strerror(errno) : "file shrank while reading");
                break;
            }
            done += (size_t)r;
        }
    }
    close(fd);
    if (rc < 0) {
        free(buf);
        return rc;
    }
    *data = buf;
    *len = (size_t)st.st_size;
    return 0;
}

int tc_spool_remove(tc_spool_t *self, const char *id)
{
    if (!tc_msgid_valid(id))
        return 0;
    char path[4200];
    tc_spool_msg_path(self, id, path, sizeof path);
    pthread_mutex_lock(&self->lock);
    tc_spool_index_erase(self, id);
    pthread_mutex_unlock(&self->lock);
    /* Not fsynced: if the deletion is lost in a crash, the message is sent
     * again and acknowledged as a duplicate. */
    if (unlink(path) != 0 && errno != ENOENT)
        return tc_fail(TC_EIO, "spool: cannot delete %s: %s", path, strerror(errno));
    return 0;
}


size_t tc_spool_count(tc_spool_t *self)
{
    pthread_mutex_lock(&self->lock);
    size_t n = self->n;
    pthread_mutex_unlock(&self->lock);
    return n;
}

size_t tc_spool_rejected_count(tc_spool_t *self)
{
    pthread_mutex_lock(&self->lock);
    size_t n = self->rejected;
    pthread_mutex_unlock(&self->lock);
    return n;
}

size_t tc_spool_oldest(tc_spool_t *self, char (*ids)[TC_MSGID_LEN + 1], size_t max)
{
    pthread_mutex_lock(&self->lock);
    size_t n = self->n < max ? self->n : max;
    memcpy(ids, self->ids, n * sizeof *self->ids);
    pthread_mutex_unlock(&self->lock);
    return n;
}

bool tc_spool_contains(tc_spool_t *self, const char *id)
{
    pthread_mutex_lock(&self->lock);
    bool found;
    s_find(self, id, &found);
    pthread_mutex_unlock(&self->lock);
    return found;
}





