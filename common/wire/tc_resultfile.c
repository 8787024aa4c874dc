#include "tc_resultfile.h"

#include "tc_error.h"
#include "tc_log.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct tc_resultfile {
    int fd;
    char *path;
};

static int s_read_full(int fd, void *buf, size_t n, size_t *got)
{
    size_t done = 0;
    while (done < n) {
        ssize_t r = read(fd, (char *)buf + done, n - done);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return -1;
        if (r == 0)
            break;
        done += (size_t)r;
    }
    *got = done;
    return 0;
}

/* Walk the records; returns the offset just after the last complete one. */
static int s_scan(int fd, const char *path, tc_resultfile_fn fn, void *arg, off_t *good_end,
                  bool *truncated)
{
    off_t pos = 0;
    uint8_t *buf = NULL;
    size_t cap = 0;
    int rc = 0;
    *truncated = false;
    for (;;) {
        uint8_t hdr[4];
        size_t got;
        if (s_read_full(fd, hdr, 4, &got) < 0) {
            rc = tc_fail(TC_EIO, "reading %s: %s", path, strerror(errno));
            break;
        }
        if (got == 0)
            break;
        if (got < 4) {
            *truncated = true;
            break;
        }
        uint32_t len = (uint32_t)hdr[0] | (uint32_t)hdr[1] << 8 | (uint32_t)hdr[2] << 16 |
                       (uint32_t)hdr[3] << 24;
        if (len > TC_MAX_MESSAGE_BYTES) {
            rc = tc_fail(TC_EPARSE, "%s: record at byte %lld claims %u bytes, more than the %u "
                                    "byte limit; the file is not a traincast result file or is corrupt",
                         path, (long long)pos, len, TC_MAX_MESSAGE_BYTES);
            break;
        }
        if (len > cap) {
            uint8_t *nb = realloc(buf, len ? len : 1);
            if (!nb) {
                rc = tc_fail(TC_ENOMEM, "out of memory reading %s", path);
                break;
            }
            buf = nb;
            cap = len;
        }
        if (s_read_full(fd, buf, len, &got) < 0) {
            rc = tc_fail(TC_EIO, "reading %s: %s", path, strerror(errno));
            break;
        }
        if (got < len) {
            *truncated = true;
            break;
        }
        if (fn) {
            tc_envelope_t *env = NULL;
            rc = tc_envelope_unpack(buf, len, 0, &env);
            if (rc < 0) {
                tc_err_context(rc, "%s: record at byte %lld", path, (long long)pos);
                break;
            }
            rc = fn(env, arg);
            tc_envelope_free(&env);
            if (rc < 0)
                break;
        }
        pos += 4 + (off_t)len;
    }
    free(buf);
    *good_end = pos;
    return rc;
}

int tc_resultfile_read(const char *path, bool missing_ok, tc_resultfile_fn fn, void *arg,
                       bool *truncated)
{
    bool trunc = false;
    if (truncated)
        *truncated = false;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        if (errno == ENOENT && missing_ok)
            return 0;
        return tc_fail(errno == ENOENT ? TC_ENOTFOUND : TC_EIO, "cannot open result file %s: %s",
                       path, strerror(errno));
    }
    struct stat st;
    if (fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
        close(fd);
        return tc_fail(TC_EINVAL, "%s is a directory, not a file: give the path of a result "
                                  "file (agent bench --out, agent trace --out)",
                       path);
    }
    off_t end;
    int rc = s_scan(fd, path, fn, arg, &end, &trunc);
    close(fd);
    if (trunc)
        tc_log_warn("%s: ignoring an incomplete last record after byte %lld (interrupted write)",
                    path, (long long)end);
    if (truncated)
        *truncated = trunc;
    return rc;
}

int tc_resultfile_open_append(const char *path, tc_resultfile_t **out)
{
    *out = NULL;
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0)
        return tc_fail(TC_EIO, "cannot open result file %s for writing: %s", path,
                       strerror(errno));
    off_t end;
    bool trunc = false;
    int rc = s_scan(fd, path, NULL, NULL, &end, &trunc);
    if (rc == 0 && trunc) {
        tc_log_warn("%s: cutting off an incomplete last record after byte %lld", path,
                    (long long)end);
        if (ftruncate(fd, end) != 0)
            rc = tc_fail(TC_EIO, "truncating %s: %s", path, strerror(errno));
    }
    if (rc == 0 && lseek(fd, end, SEEK_SET) < 0)
        rc = tc_fail(TC_EIO, "seeking in %s: %s", path, strerror(errno));
    tc_resultfile_t *self = rc == 0 ? calloc(1, sizeof *self) : NULL;
    if (rc == 0 && (!self || !(self->path = strdup(path)))) {
        free(self);
        rc = tc_fail(TC_ENOMEM, "out of memory");
    }
    if (rc < 0) {
        close(fd);
        return rc;
    }
    self->fd = fd;
    *out = self;
    return 0;
}

int tc_resultfile_append(tc_resultfile_t *self, const tc_envelope_t *env)
{
    uint8_t *buf = NULL;
    size_t len = 0;
    int rc = tc_envelope_pack(env, &buf, &len);
    if (rc < 0)
        return rc;
    uint8_t *rec = malloc(len + 4);
    if (!rec) {
        free(buf);
        return tc_fail(TC_ENOMEM, "out of memory");
    }
    rec[0] = (uint8_t)len;
    rec[1] = (uint8_t)(len >> 8);
    rec[2] = (uint8_t)(len >> 16);
    rec[3] = (uint8_t)(len >> 24);
    memcpy(rec + 4, buf, len);
    free(buf);
    size_t done = 0;
    while (done < len + 4) {
        ssize_t w = write(self->fd, rec + done, len + 4 - done);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0) {
            rc = tc_fail(TC_EIO, "writing %s: %s", self->path, strerror(errno));
            break;
        }
        done += (size_t)w;
    }
    free(rec);
    if (rc == 0 && fsync(self->fd) != 0)
        rc = tc_fail(TC_EIO, "flushing %s to disk: %s", self->path, strerror(errno));
    return rc;
}

void tc_resultfile_close(tc_resultfile_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    close((*self_p)->fd);
    free((*self_p)->path);
    free(*self_p);
    *self_p = NULL;
}

int tc_resultfile_whole(const char *path, long long *whole_bytes, long long *size)
{
    *whole_bytes = *size = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return tc_fail(errno == ENOENT ? TC_ENOTFOUND : TC_EIO, "cannot open result file %s: %s",
                       path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) < 0 || S_ISDIR(st.st_mode)) {
        close(fd);
        return tc_fail(TC_EINVAL, "%s is a directory, not a file: give the path of a result "
                                  "file (agent bench --out, agent trace --out)",
                       path);
    }
    off_t end = 0;
    bool trunc = false;
    int rc = s_scan(fd, path, NULL, NULL, &end, &trunc);
    close(fd);
    *whole_bytes = (long long)end;
    *size = (long long)st.st_size;
    return rc;
}
