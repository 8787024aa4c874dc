#include "identity.h"

#include "hostinfo.h"
#include "tc_error.h"
#include "tc_paths.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

struct tc_identity {
    char dir[2048];
    char agent_id[TC_AGENT_ID_MAX + 1];
    tc_keypair_t keys;
    bool have_keys;
    int lock_fd;
};

void tc_identity_default_dir(const char *flag, char *out, size_t size)
{
    tc_state_dir(flag, "TRAINCAST_AGENT_DIR", "agent", out, size);
}

/* mkdir -p with mode 0700 for what it creates. */
static int s_mkdirs(const char *dir)
{
    char buf[2048];
    snprintf(buf, sizeof buf, "%s", dir);
    for (char *p = buf + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        if (mkdir(buf, 0700) != 0 && errno != EEXIST)
            return tc_fail(TC_EIO, "cannot create directory %s: %s", buf, strerror(errno));
        *p = '/';
    }
    if (mkdir(buf, 0700) != 0 && errno != EEXIST)
        return tc_fail(TC_EIO, "cannot create directory %s: %s", buf, strerror(errno));
    return 0;
}

static void s_new_agent_id(char *out, size_t size)
{
    static const char alphabet[] = "0123456789abcdefghjkmnpqrstvwxyz";
    char host[64];
    tc_host_name(host, sizeof host);
    for (char *p = host; *p; p++) {
        if (!isalnum((unsigned char)*p) && *p != '-' && *p != '.')
            *p = '-';
    }
    uint8_t rnd[6] = {0};
    if (getrandom(rnd, sizeof rnd, 0) != (ssize_t)sizeof rnd)
        for (size_t i = 0; i < sizeof rnd; i++)
            rnd[i] = (uint8_t)(tc_now_us() >> (i * 3));
    char suffix[7];
    for (int i = 0; i < 6; i++)
        suffix[i] = alphabet[rnd[i] & 31];
    suffix[6] = '\0';
    snprintf(out, size, "%s-%s", host, suffix);
}

int tc_identity_read_agent_id(const char *dir, char *out, size_t size)
{
    int rc = s_mkdirs(dir);
    if (rc < 0)
        return rc;
    char path[2200];
    snprintf(path, sizeof path, "%s/agent_id", dir);
    FILE *f = fopen(path, "r");
    if (f) {
        char line[TC_AGENT_ID_MAX + 2] = "";
        if (!fgets(line, sizeof line, f))
            line[0] = '\0';
        fclose(f);
        line[strcspn(line, "\r\n")] = '\0';
        if (!line[0])
            return tc_fail(TC_EINVAL, "%s is empty; put the agent id on its first line or "
                                      "delete the file to get a new id",
                           path);
        snprintf(out, size, "%s", line);
        return 0;
    }
    if (errno != ENOENT)
        return tc_fail(TC_EIO, "cannot read %s: %s", path, strerror(errno));
    char id[TC_AGENT_ID_MAX + 1];
    s_new_agent_id(id, sizeof id);
    char tmp[2300];
    snprintf(tmp, sizeof tmp, "%s.tmp%d", path, (int)getpid());
    f = tc_fopen_private(tmp);
    if (!f)
        return tc_fail(TC_EIO, "cannot create %s: %s", tmp, strerror(errno));
    int ok = fprintf(f, "%s\n", id) > 0 && fflush(f) == 0 && fsync(fileno(f)) == 0;
    ok = fclose(f) == 0 && ok;
    /* link() fails if another process created the id meanwhile: use theirs. */
    if (ok && link(tmp, path) != 0 && errno != EEXIST)
        ok = 0;
    unlink(tmp);
    if (!ok)
        return tc_fail(TC_EIO, "cannot write %s: %s", path, strerror(errno));
    return tc_identity_read_agent_id(dir, out, size);
}

static int s_load_keys(tc_identity_t *self)
{
    char path[2200];
    snprintf(path, sizeof path, "%s/agent.key", self->dir);
    self->have_keys = false;
    int rc = tc_keypair_read(path, &self->keys);
    if (rc == TC_ENOTFOUND)
        return 0;
    if (rc == 0)
        self->have_keys = true;
    return rc;
}

static int s_no_keys(const char *dir)
{
    return tc_fail(TC_EINVAL,
                   "this agent has no key pair in %s; run 'agent keygen --state %s' and add the "
                   "line of agent.pub to the aggregator's allowlist (or use --insecure on a "
                   "trusted local network only)",
                   dir, dir);
}

int tc_identity_open(const char *dir, bool need_keys, tc_identity_t **out)
{
    *out = NULL;
    tc_identity_t *self = calloc(1, sizeof *self);
    if (!self)
        return tc_fail(TC_ENOMEM, "out of memory");
    self->lock_fd = -1;
    int rc = 0;
    snprintf(self->dir, sizeof self->dir, "%s", dir);
    char path[2200];
    /* A command that needs keys creates nothing where there are none: the
     * state directory is keygen's to make. */
    snprintf(path, sizeof path, "%s/agent.key", dir);
    if (need_keys && access(path, F_OK) != 0 && errno == ENOENT) {
        rc = s_no_keys(dir);
        goto err;
    }
    TC_TRY(s_mkdirs(dir));
    snprintf(path, sizeof path, "%s/lock", dir);
    self->lock_fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (self->lock_fd < 0)
        TC_FAIL_GOTO(TC_EIO, "cannot open %s: %s", path, strerror(errno));
    if (flock(self->lock_fd, LOCK_EX | LOCK_NB) != 0) {
        char pid[32] = "?";
        ssize_t n = pread(self->lock_fd, pid, sizeof pid - 1, 0);
        pid[n > 0 ? n : 1] = '\0';
        pid[strcspn(pid, "\n")] = '\0';
        TC_FAIL_GOTO(TC_EINVAL,
                     "another agent process (pid %s) is using the state directory %s; wait for "
                     "it to finish, stop it, or give this one its own --state DIR",
                     pid, dir);
    }
    char pidline[32];
    int pl = snprintf(pidline, sizeof pidline, "%d\n", (int)getpid());
    if (ftruncate(self->lock_fd, 0) != 0 || pwrite(self->lock_fd, pidline, (size_t)pl, 0) != pl)
        TC_FAIL_GOTO(TC_EIO, "cannot write %s: %s", path, strerror(errno));
    /* The state directory's own id (rule 2 of agent_id.h). */
    TC_TRY(tc_identity_read_agent_id(dir, self->agent_id, sizeof self->agent_id));
    TC_TRY(s_load_keys(self));
    if (need_keys && !self->have_keys) {
        rc = s_no_keys(dir);
        goto err;
    }
    *out = self;
    return 0;
err:
    tc_identity_destroy(&self);
    return rc;
}

void tc_identity_destroy(tc_identity_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    tc_identity_t *self = *self_p;
    if (self->lock_fd >= 0)
        close(self->lock_fd); /* releases the flock */
    memset(&self->keys, 0, sizeof self->keys);
    free(self);
    *self_p = NULL;
}

const char *tc_identity_dir(const tc_identity_t *self)
{
    return self->dir;
}

const char *tc_identity_agent_id(const tc_identity_t *self)
{
    return self->agent_id;
}

const tc_keypair_t *tc_identity_keys(const tc_identity_t *self)
{
    return self->have_keys ? &self->keys : NULL;
}

void tc_identity_journal_dir(const tc_identity_t *self, char *out, size_t size)
{
    snprintf(out, size, "%s/journal", self->dir);
}

int tc_identity_keygen(tc_identity_t *self, bool force)
{
    tc_keypair_t kp;
    int rc = tc_keypair_generate(&kp);
    if (rc == 0)
        rc = tc_keypair_write(self->dir, "agent", self->agent_id, &kp, force);
    memset(&kp, 0, sizeof kp);
    if (rc == 0)
        rc = s_load_keys(self);
    return rc;
}

int tc_identity_server_key(const tc_identity_t *self, const char *path,
                           char out[TC_KEY_Z85_LEN + 1])
{
    char def[2200];
    if (!path || !*path) {
        snprintf(def, sizeof def, "%s/aggregator.pub", self->dir);
        path = def;
    }
    int rc = tc_pubkey_read(path, out);
    if (rc == TC_ENOTFOUND)
        return tc_fail(TC_EINVAL,
                       "the aggregator's public key %s is missing; copy aggregator.pub from the "
                       "aggregator (written by 'aggregator keygen') there, or pass --server-key "
                       "FILE",
                       path);
    return rc;
}
