#include "allowlist.h"

#include "tc_error.h"
#include "tc_zmq.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    char key[TC_KEY_Z85_LEN + 1];
    char label[TC_ALLOWLIST_LABEL_MAX + 1];
} s_entry_t;

struct tc_allowlist {
    s_entry_t *entries;
    size_t n;
};

int tc_allowlist_load(const char *path, tc_allowlist_t **out)
{
    *out = NULL;
    FILE *f = fopen(path, "r");
    if (!f)
        return tc_fail(errno == ENOENT ? TC_ENOTFOUND : TC_EIO,
                       "cannot read the allowlist %s: %s (create it with one agent public key "
                       "per line: the contents of each agent's agent.pub)",
                       path, strerror(errno));
    tc_allowlist_t *self = calloc(1, sizeof *self);
    if (!self) {
        fclose(f);
        return tc_fail(TC_ENOMEM, "out of memory");
    }
    char line[1024];
    int lineno = 0, rc = 0;
    size_t cap = 0;
    while (rc == 0 && fgets(line, sizeof line, f)) {
        lineno++;
        char *p = line;
        while (isspace((unsigned char)*p))
            p++;
        if (!*p)
            continue;
        /* '#' is a z85 character, but never the first one of a 32-byte key
         * (its value would overflow the first 4-byte group): a line that
         * starts with it is a comment. */
        if (*p == '#')
            continue;
        size_t klen = strcspn(p, " \t\r\n");
        char key[TC_KEY_Z85_LEN + 1] = "";
        if (klen == TC_KEY_Z85_LEN) {
            memcpy(key, p, klen);
            key[klen] = '\0';
        }
        if (klen != TC_KEY_Z85_LEN) {
            rc = tc_fail(TC_EINVAL, "%s:%d: expected a 40-character z85 public key, got '%.60s'",
                         path, lineno, p);
            break;
        }
        if (!tc_key_z85_valid(key)) {
            rc = tc_fail(TC_EINVAL, "%s:%d: '%s' is not a valid z85 key", path, lineno, key);
            break;
        }
        char *label = p + klen;
        while (isspace((unsigned char)*label))
            label++;
        label[strcspn(label, "\r\n")] = '\0';
        size_t ll = strlen(label);
        while (ll && isspace((unsigned char)label[ll - 1]))
            label[--ll] = '\0';
        if (self->n == cap) {
            size_t nc = cap ? cap * 2 : 16;
            s_entry_t *ne = realloc(self->entries, nc * sizeof *ne);
            if (!ne) {
                rc = tc_fail(TC_ENOMEM, "out of memory");
                break;
            }
            self->entries = ne;
            cap = nc;
        }
        s_entry_t *e = &self->entries[self->n++];
        memcpy(e->key, key, sizeof e->key);
        snprintf(e->label, sizeof e->label, "%s", label);
    }
    fclose(f);
    if (rc < 0) {
        tc_allowlist_destroy(&self);
        return rc;
    }
    *out = self;
    return 0;
}

void tc_allowlist_destroy(tc_allowlist_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    free((*self_p)->entries);
    free(*self_p);
    *self_p = NULL;
}

size_t tc_allowlist_count(const tc_allowlist_t *self)
{
    return self->n;
}

const char *tc_allowlist_find(const tc_allowlist_t *self, const char *key_z85)
{
    for (size_t i = 0; i < self->n; i++) {
        if (!strcmp(self->entries[i].key, key_z85))
            return self->entries[i].label;
    }
    return NULL;
}
