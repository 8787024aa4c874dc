/* The messages the aggregator refused for good: DIR/rejected/<id>.msg with
 * <id>.reason beside it, listed for `agent status` and moved back by
 * `agent push --requeue-rejected`. */
#include "spool_internal.h"

#include "tc_error.h"
#include "tc_paths.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int tc_spool_reject(tc_spool_t *self, const char *id, const char *reason)
{
    if (!tc_msgid_valid(id))
        return 0;
    char path[4200], dest[4200], why[4200];
    tc_spool_msg_path(self, id, path, sizeof path);
    snprintf(dest, sizeof dest, "%s/rejected/%s.msg", self->dir, id);
    snprintf(why, sizeof why, "%s/rejected/%s.reason", self->dir, id);
    FILE *f = tc_fopen_private(why);
    if (f) {
        fprintf(f, "%s\n", reason ? reason : "");
        fclose(f);
    }
    int rc = 0;
    if (rename(path, dest) != 0 && errno != ENOENT)
        rc = tc_fail(TC_EIO, "spool: cannot move %s to %s: %s", path, dest, strerror(errno));
    pthread_mutex_lock(&self->lock);
    tc_spool_index_erase(self, id);
    if (rc == 0)
        self->rejected++;
    pthread_mutex_unlock(&self->lock);
    if (rc == 0)
        rc = tc_spool_fsync_dir(self->dir);
    return rc;
}

static int s_cmp_id(const void *a, const void *b)
{
    return strcmp((const char *)a, (const char *)b);
}

/* The ids of DIR/rejected/ *.msg, sorted (malloc'ed; *n of them). */
static int s_rejected_ids(const char *dir, tc_spool_id_t **ids, size_t *n)
{
    *ids = NULL;
    *n = 0;
    char rej[4096];
    snprintf(rej, sizeof rej, "%s/rejected", dir);
    DIR *d = opendir(rej);
    if (!d)
        return errno == ENOENT ? 0
                               : tc_fail(TC_EIO, "cannot read %s: %s", rej, strerror(errno));
    size_t cap = 0;
    int rc = 0;
    struct dirent *e;
    while (rc == 0 && (e = readdir(d)) != NULL) {
        char id[TC_MSGID_LEN + 1];
        if (!tc_spool_is_msg_name(e->d_name, id))
            continue;
        if (*n == cap) {
            size_t nc = cap ? cap * 2 : 64;
            tc_spool_id_t *ni = realloc(*ids, nc * sizeof *ni);
            if (!ni) {
                rc = tc_fail(TC_ENOMEM, "out of memory");
                break;
            }
            *ids = ni;
            cap = nc;
        }
        memcpy((*ids)[(*n)++], id, sizeof(tc_spool_id_t));
    }
    closedir(d);
    if (rc == 0 && *n)
        qsort(*ids, *n, sizeof **ids, s_cmp_id);
    if (rc < 0) {
        free(*ids);
        *ids = NULL;
        *n = 0;
    }
    return rc;
}

static uint8_t *s_slurp(const char *path, size_t *len)
{
    *len = 0;
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    uint8_t *buf = NULL;
    size_t cap = 0;
    for (;;) {
        if (*len == cap) {
            size_t nc = cap ? cap * 2 : 4096;
            if (nc > (size_t)TC_MAX_MESSAGE_BYTES + 1)
                break;
            uint8_t *nb = realloc(buf, nc + 1);
            if (!nb)
                break;
            buf = nb;
            cap = nc;
        }
        size_t r = fread(buf + *len, 1, cap - *len, f);
        if (r == 0)
            break;
        *len += r;
    }
    fclose(f);
    if (buf)
        buf[*len] = '\0';
    return buf;
}

int tc_spool_each_rejected(const char *dir, tc_spool_rejected_fn fn, void *arg)
{
    tc_spool_id_t *ids = NULL;
    size_t n = 0;
    int rc = s_rejected_ids(dir, &ids, &n);
    for (size_t i = 0; rc == 0 && i < n; i++) {
        char path[4200];
        size_t len = 0, rlen = 0;
        snprintf(path, sizeof path, "%s/rejected/%s.msg", dir, ids[i]);
        uint8_t *data = s_slurp(path, &len);
        snprintf(path, sizeof path, "%s/rejected/%s.reason", dir, ids[i]);
        char *reason = (char *)s_slurp(path, &rlen);
        if (reason)
            reason[strcspn(reason, "\n")] = '\0';
        rc = fn(arg, ids[i], reason ? reason : "", data, len);
        free(data);
        free(reason);
    }
    free(ids);
    return rc;
}

int tc_spool_requeue_rejected(tc_spool_t *self, size_t *moved)
{
    *moved = 0;
    tc_spool_id_t *ids = NULL;
    size_t n = 0;
    int rc = s_rejected_ids(self->dir, &ids, &n);
    for (size_t i = 0; rc == 0 && i < n; i++) {
        char from[4200], to[4200], why[4200];
        snprintf(from, sizeof from, "%s/rejected/%s.msg", self->dir, ids[i]);
        snprintf(why, sizeof why, "%s/rejected/%s.reason", self->dir, ids[i]);
        tc_spool_msg_path(self, ids[i], to, sizeof to);
        if (rename(from, to) != 0) {
            rc = tc_fail(TC_EIO, "spool: cannot move %s back to %s: %s", from, to,
                         strerror(errno));
            break;
        }
        unlink(why);
        pthread_mutex_lock(&self->lock);
        rc = tc_spool_index_insert(self, ids[i]);
        if (self->rejected)
            self->rejected--;
        pthread_mutex_unlock(&self->lock);
        (*moved)++;
    }
    free(ids);
    if (rc == 0 && *moved)
        rc = tc_spool_fsync_dir(self->dir);
    if (rc == 0 && *moved) {
        char rej[4096];
        snprintf(rej, sizeof rej, "%s/rejected", self->dir);
        rc = tc_spool_fsync_dir(rej);
    }
    return rc;
}
