/* ONNX external data (TensorProto.data_location EXTERNAL, external_data
 * entries location/offset/length): the bytes of a small integer tensor whose
 * values the importer needs, read from a file in the model's directory.
 * Weights are never read; their shape is all traincast uses.
 *
 * The file name comes from the model, so it is checked like any hostile
 * input: relative, no '..' component, no symbolic link that leads out of the
 * model's directory, a regular file, and the claimed range inside it and
 * exactly as long as the tensor's shape says. */
#include "tc_graph.h"

#include "tc_error.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct {
    const char *location;
    int64_t offset;
    int64_t length; /* -1: to the end of the file */
} s_ext_t;

/* A non-negative decimal number, as onnx writes offset and length. */
static int s_number(const char *what, const char *key, const char *s, int64_t *out)
{
    int64_t v = 0;
    if (!*s)
        return tc_fail(TC_EPARSE, "%s: external data %s is empty", what, key);
    for (const char *p = s; *p; p++) {
        if (*p < '0' || *p > '9' || tc_mul64(v, 10, &v) < 0 || tc_add64(v, *p - '0', &v) < 0)
            return tc_fail(TC_EPARSE, "%s: external data %s '%.40s' is not a byte count", what,
                           key, s);
    }
    *out = v;
    return 0;
}

static int s_entries(const Onnx__TensorProto *t, const char *what, s_ext_t *e)
{
    bool has_offset = false;
    e->location = NULL;
    e->offset = 0;
    e->length = -1;
    for (size_t i = 0; i < t->n_external_data; i++) {
        const Onnx__StringStringEntryProto *kv = t->external_data[i];
        const char *key = kv->key ? kv->key : "";
        const char *val = kv->value ? kv->value : "";
        int rc = 0;
        bool dup = false;
        if (!strcmp(key, "location")) {
            dup = e->location != NULL;
            e->location = val;
        } else if (!strcmp(key, "offset")) {
            dup = has_offset;
            has_offset = true;
            rc = s_number(what, key, val, &e->offset);
        } else if (!strcmp(key, "length")) {
            dup = e->length >= 0;
            rc = s_number(what, key, val, &e->length);
        } /* "checksum" and keys of later versions are not needed */
        if (rc < 0)
            return rc;
        if (dup)
            return tc_fail(TC_EPARSE, "%s: external data names its %s twice", what, key);
    }
    if (!e->location || !*e->location)
        return tc_fail(TC_EPARSE, "%s: external data without a location", what);
    return 0;
}

/* Relative, inside the model's directory as written: no absolute path and
 * no '..' component. */
static int s_check_location(const char *what, const char *loc)
{
    if (loc[0] == '/')
        return tc_fail(TC_EPARSE, "%s: external data location '%.200s' is an absolute path; "
                                  "ONNX locations are relative to the model's directory",
                       what, loc);
    for (const char *p = loc; *p;) {
        size_t n = strcspn(p, "/");
        if (n == 2 && p[0] == '.' && p[1] == '.')
            return tc_fail(TC_EPARSE, "%s: external data location '%.200s' leaves the model's "
                                      "directory ('..')",
                           what, loc);
        p += n;
        p += *p == '/';
    }
    return 0;
}

static int s_open(const char *dir, const char *loc, const char *what, int *fd_out)
{
    char path[PATH_MAX], real_dir[PATH_MAX], real[PATH_MAX];
    if ((size_t)snprintf(path, sizeof path, "%s/%s", dir, loc) >= sizeof path)
        return tc_fail(TC_ELIMIT, "%s: external data location '%.200s' is too long", what, loc);
    if (!realpath(dir, real_dir))
        return tc_fail(TC_EIO, "%s: cannot resolve the model's directory %s: %s", what, dir,
                       strerror(errno));
    if (!realpath(path, real))
        return tc_fail(errno == ENOENT ? TC_ENOTFOUND : TC_EIO,
                       "%s: cannot open its external data file '%.200s' in %s: %s", what, loc,
                       dir, strerror(errno));
    /* A symbolic link may stay inside the model's directory, not leave it. */
    size_t n = strlen(real_dir);
    if (strcmp(real_dir, "/") && (strncmp(real, real_dir, n) || real[n] != '/'))
        return tc_fail(TC_EPARSE, "%s: external data file '%.200s' is a symbolic link that "
                                  "leads out of the model's directory (to %s)",
                       what, loc, real);
    /* O_NONBLOCK: a FIFO planted as the data file must not hang the open. */
    int fd = open(real, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    if (fd < 0)
        return tc_fail(TC_EIO, "%s: cannot open its external data file '%.200s' in %s: %s",
                       what, loc, dir, strerror(errno));
    *fd_out = fd;
    return 0;
}

int tc_external_read(const tc_graph_t *g, const Onnx__TensorProto *t, const char *what,
                     size_t need, uint8_t *buf)
{
    s_ext_t e;
    int rc = s_entries(t, what, &e);
    if (rc < 0)
        return rc;
    if (!g->ext_dir)
        return tc_fail(TC_EUNSUPPORTED, "%s keeps its values in the external data file "
                                        "'%.200s', which a model loaded from memory has no "
                                        "directory to find; load the model from its file",
                       what, e.location);
    rc = s_check_location(what, e.location);
    int fd = -1;
    if (rc == 0)
        rc = s_open(g->ext_dir, e.location, what, &fd);
    if (rc < 0)
        return rc;
    struct stat st;
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return tc_fail(TC_EPARSE, "%s: external data file '%.200s' is not a regular file", what,
                       e.location);
    }
    int64_t size = (int64_t)st.st_size;
    if (e.offset > size)
        rc = tc_fail(TC_EPARSE, "%s: external data offset %lld is past the end of '%.200s' "
                                "(%lld bytes)",
                     what, (long long)e.offset, e.location, (long long)size);
    else if (e.length < 0)
        e.length = size - e.offset;
    if (rc == 0 && (uint64_t)e.length != (uint64_t)need)
        rc = tc_fail(TC_EPARSE, "%s: external data length %lld, but its shape and type take %zu "
                                "bytes",
                     what, (long long)e.length, need);
    if (rc == 0 && e.length > size - e.offset)
        rc = tc_fail(TC_EPARSE, "%s: external data bytes %lld..%lld lie past the end of "
                                "'%.200s' (%lld bytes)",
                     what, (long long)e.offset, (long long)e.offset + e.length, e.location,
                     (long long)size);
    for (size_t got = 0; rc == 0 && got < need;) {
        ssize_t r = pread(fd, buf + got, need - got, (off_t)(e.offset + (int64_t)got));
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            rc = tc_fail(TC_EIO, "%s: reading external data file '%.200s': %s", what,
                         e.location, r < 0 ? strerror(errno) : "the file shrank");
        else
            got += (size_t)r;
    }
    close(fd);
    return rc;
}
