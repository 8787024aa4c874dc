/* Moving an older agent's state (results/ *.tcr with their .spooled marks,
 * spool/ *.msg and spool/rejected/) into the journal, once. */
#include "journal_internal.h"

#include "tc_error.h"
#include "tc_log.h"
#include "tc_paths.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

typedef char s_id_t[TC_MSGID_LEN + 1];

/* A sorted list of names in a directory ending in `suffix`, suffix cut. */
typedef struct {
    char **v;
    size_t n;
} s_names_t;

static void s_names_free(s_names_t *l)
{
    for (size_t i = 0; i < l->n; i++)
        free(l->v[i]);
    free(l->v);
    l->v = NULL;
    l->n = 0;
}

static int s_cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static int s_list(const char *dir, const char *suffix, s_names_t *out)
{
    memset(out, 0, sizeof *out);
    DIR *d = opendir(dir);
    if (!d)
        return errno == ENOENT ? 0 : tc_fail(TC_EIO, "cannot read %s: %s", dir, strerror(errno));
    size_t sl = strlen(suffix), cap = 0;
    struct dirent *e;
    int rc = 0;
    while (rc == 0 && (e = readdir(d)) != NULL) {
        size_t len = strlen(e->d_name);
        if (e->d_name[0] == '.' || len <= sl || strcmp(e->d_name + len - sl, suffix) != 0)
            continue;
        if (out->n == cap) {
            cap = cap ? cap * 2 : 64;
            char **nv = realloc(out->v, cap * sizeof *nv);
            if (!nv) {
                rc = tc_fail(TC_ENOMEM, "out of memory");
                break;
            }
            out->v = nv;
        }
        if (!(out->v[out->n] = strndup(e->d_name, len - sl)))
            rc = tc_fail(TC_ENOMEM, "out of memory");
        else
            out->n++;
    }
    closedir(d);
    if (rc == 0 && out->n)
        qsort(out->v, out->n, sizeof *out->v, s_cmp_str);
    if (rc < 0)
        s_names_free(out);
    return rc;
}

static bool s_has(const s_names_t *l, const char *id)
{
    return l->n && bsearch(&id, l->v, l->n, sizeof *l->v, s_cmp_str) != NULL;
}

static bool s_is_dir(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* A whole small file (*data malloc'ed, NUL-terminated). */
static int s_slurp(const char *path, uint8_t **data, size_t *len)
{
    *data = NULL;
    *len = 0;
    FILE *f = fopen(path, "rb");
    if (!f)
        return tc_fail(TC_EIO, "cannot read %s: %s", path, strerror(errno));
    uint8_t *buf = NULL;
    size_t cap = 0;
    int rc = 0;
    for (;;) {
        if (*len == cap) {
            cap = cap ? cap * 2 : 4096;
            uint8_t *nb = cap <= (size_t)TC_MAX_MESSAGE_BYTES + 1 ? realloc(buf, cap + 1) : NULL;
            if (!nb) {
                rc = tc_fail(TC_ELIMIT, "%s is larger than a message can be", path);
                break;
            }
            buf = nb;
        }
        size_t r = fread(buf + *len, 1, cap - *len, f);
        if (r == 0)
            break;
        *len += r;
    }
    if (rc == 0 && ferror(f))
        rc = tc_fail(TC_EIO, "cannot read %s", path);
    fclose(f);
    if (rc < 0) {
        free(buf);
        return rc;
    }
    buf[*len] = '\0';
    *data = buf;
    return 0;
}

/* What one migration reads and writes. */
typedef struct {
    const char *agent_id;
    char results[2300], spool[2300], rejected[2400];
    s_names_t files;         /* results/NAME.tcr: NAME */
    s_names_t waiting;       /* spool/ID.msg: ID */
    s_names_t refused;       /* spool/rejected/ID.msg: ID */
    size_t *spooled;         /* per file: its first records that were spooled */
    tc_journal_t *j;         /* NULL in the checking pass */
    /* the file being read */
    const char *name;
    size_t record, mark;
    char mark_id[TC_MSGID_LEN + 1];
    bool mark_ok;
    size_t n_records, n_waiting, n_refused, n_skipped;
} s_mig_t;

/* NAME.tcr.spooled: "<count> <message id>". */
static void s_read_mark(s_mig_t *m, const char *tcr)
{
    char path[2600];
    snprintf(path, sizeof path, "%s.spooled", tcr);
    m->mark = 0;
    m->mark_id[0] = '\0';
    FILE *f = fopen(path, "r");
    if (!f)
        return;
    unsigned long long n = 0;
    char buf[64] = "";
    if (fscanf(f, "%llu %40s", &n, buf) == 2 && tc_msgid_valid(buf)) {
        m->mark = (size_t)n;
        snprintf(m->mark_id, sizeof m->mark_id, "%s", buf);
    }
    fclose(f);
}

/* The reason the aggregator gave for a refused message ("" if none). */
static void s_reason(const s_mig_t *m, const char *id, char *out, size_t size)
{
    char path[2600];
    size_t len;
    snprintf(path, sizeof path, "%s/%s.reason", m->rejected, id);
    uint8_t *r = NULL;
    s_slurp(path, &r, &len);
    snprintf(out, size, "%.*s", r ? (int)strcspn((char *)r, "\n") : 0, r ? (char *)r : "");
    free(r);
}

/* Append one message in the state the old layout gives it. */
static int s_put(s_mig_t *m, const char *name, const char *id, const uint8_t *data, size_t len,
                 uint8_t state)
{
    char reason[4200] = "";
    if (state == TC_JSTATE_REFUSED)
        s_reason(m, id, reason, sizeof reason);
    bool added = false;
    int rc = tc_journal_migrate_put(m->j, name, id, data, len, state, reason, &added);
    if (rc == 0 && added) {
        m->n_records++;
        m->n_waiting += state == TC_JSTATE_WAITING;
        m->n_refused += state == TC_JSTATE_REFUSED;
    }
    return rc;
}

static int s_on_record(const tc_envelope_t *env, void *arg)
{
    s_mig_t *m = arg;
    m->record++;
    const char *id = env->message_id ? env->message_id : "";
    if (!m->j) { /* checking: does the mark speak of this file? */
        if (m->record == m->mark)
            m->mark_ok = !strcmp(id, m->mark_id);
        return 0;
    }
    if (!tc_msgid_valid(id)) {
        m->n_skipped++;
        return 0;
    }
    uint8_t state = TC_JSTATE_WAITING;
    if (m->record <= m->mark && !s_has(&m->waiting, id))
        state = s_has(&m->refused, id) ? TC_JSTATE_REFUSED : TC_JSTATE_ACKED;
    tc_envelope_t copy = *env;
    if (!copy.agent_id || !*copy.agent_id)
        copy.agent_id = (char *)m->agent_id;
    uint8_t *buf = NULL;
    size_t len = 0;
    int rc = tc_envelope_pack(&copy, &buf, &len);
    if (rc == 0)
        rc = s_put(m, m->name, id, buf, len, state);
    free(buf);
    return rc;
}

/* Every results/NAME.tcr: read whole (checking: and its mark weighed) or
 * into the journal. */
static int s_files(s_mig_t *m)
{
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < m->files.n; i++) {
        char path[2600];
        snprintf(path, sizeof path, "%s/%s.tcr", m->results, m->files.v[i]);
        m->name = m->files.v[i];
        m->record = 0;
        if (strlen(m->name) > TC_JOURNAL_NAME_MAX)
            return tc_fail(TC_EINVAL, "%s: the name is longer than %d bytes", path,
                           TC_JOURNAL_NAME_MAX);
        if (m->j) {
            m->mark = m->spooled[i];
            rc = tc_resultfile_read(path, true, s_on_record, m, NULL);
            continue;
        }
        s_read_mark(m, path);
        m->mark_ok = false;
        rc = tc_resultfile_read(path, true, s_on_record, m, NULL);
        if (rc == 0 && m->mark && !m->mark_ok)
            tc_log_warn("%s.spooled does not match its file: all of %s is sent again (the "
                        "aggregator stores each record once)", path, path);
        m->spooled[i] = m->mark_ok ? m->mark : 0;
    }
    return rc;
}

/* spool/ID.msg (or spool/rejected/ID.msg) that no result file holds. */
static int s_messages(s_mig_t *m, const s_names_t *ids, const char *dir, uint8_t state)
{
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < ids->n; i++) {
        if (!tc_msgid_valid(ids->v[i]))
            continue;
        char path[2600];
        size_t len;
        snprintf(path, sizeof path, "%s/%s.msg", dir, ids->v[i]);
        uint8_t *data = NULL;
        if ((rc = s_slurp(path, &data, &len)) < 0)
            return rc;
        if (m->j)
            rc = s_put(m, "", ids->v[i], data, len, state);
        free(data);
    }
    return rc;
}

/* results/ and spool/ to STATE/migrated-<date>[-N]/; `where` gets it. */
static int s_move_away(const char *state, s_mig_t *m, char *where, size_t size)
{
    char day[32];
    time_t now = time(NULL);
    struct tm tm;
    strftime(day, sizeof day, "%Y-%m-%d", gmtime_r(&now, &tm));
    snprintf(where, size, "%s/migrated-%s", state, day);
    for (int k = 2; mkdir(where, 0700) != 0; k++) {
        if (errno != EEXIST || k > 99)
            return tc_fail(TC_EIO, "cannot create %s: %s", where, strerror(errno));
        snprintf(where, size, "%s/migrated-%s-%d", state, day, k);
    }
    const char *from[2] = {m->results, m->spool}, *leaf[2] = {"results", "spool"};
    for (int i = 0; i < 2; i++) {
        char to[2600];
        snprintf(to, sizeof to, "%s/%s", where, leaf[i]);
        if (s_is_dir(from[i]) && rename(from[i], to) != 0)
            return tc_fail(TC_EIO, "cannot move %s to %s: %s", from[i], to, strerror(errno));
    }
    int fd = open(state, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) {
        fsync(fd);
        close(fd);
    }
    return 0;
}

static int s_read_old(s_mig_t *m)
{
    int rc;
    TC_TRY(s_list(m->results, ".tcr", &m->files));
    TC_TRY(s_list(m->spool, ".msg", &m->waiting));
    TC_TRY(s_list(m->rejected, ".msg", &m->refused));
    if (!(m->spooled = calloc(m->files.n + 1, sizeof *m->spooled)))
        TC_FAIL_GOTO(TC_ENOMEM, "out of memory");
    TC_TRY(s_files(m));
    TC_TRY(s_messages(m, &m->waiting, m->spool, TC_JSTATE_WAITING));
    TC_TRY(s_messages(m, &m->refused, m->rejected, TC_JSTATE_REFUSED));
err:
    return rc;
}

static int s_write_new(s_mig_t *m, const char *journal_dir)
{
    int rc;
    TC_TRY(tc_journal_open(journal_dir, &m->j));
    TC_TRY(s_files(m));
    TC_TRY(s_messages(m, &m->waiting, m->spool, TC_JSTATE_WAITING));
    TC_TRY(s_messages(m, &m->refused, m->rejected, TC_JSTATE_REFUSED));
    TC_TRY(tc_journal_sync(m->j));
err:
    tc_journal_destroy(&m->j);
    return rc;
}

int tc_journal_migrate(const char *state_dir, const char *agent_id, bool dry, bool *found)
{
    s_mig_t m = {.agent_id = agent_id};
    snprintf(m.results, sizeof m.results, "%s/results", state_dir);
    snprintf(m.spool, sizeof m.spool, "%s/spool", state_dir);
    snprintf(m.rejected, sizeof m.rejected, "%s/rejected", m.spool);
    bool old = s_is_dir(m.results) || s_is_dir(m.spool);
    if (found)
        *found = old;
    if (!old || dry)
        return 0;
    char journal_dir[2300], where[2400];
    snprintf(journal_dir, sizeof journal_dir, "%s/journal", state_dir);
    int rc = s_read_old(&m);
    if (rc < 0) {
        char why[2048];
        snprintf(why, sizeof why, "%s", tc_errmsg());
        rc = tc_fail(rc, "cannot move the older agent's state in %s (results/ and spool/) into "
                         "the journal: %s. Nothing was changed; move the unreadable file out of "
                         "the way and start again",
                     state_dir, why);
        goto done;
    }
    if ((rc = s_write_new(&m, journal_dir)) < 0) {
        rc = tc_err_context(rc, "moving the older agent's state in %s into %s (the old files "
                                "are untouched; the next start tries again)",
                            state_dir, journal_dir);
        goto done;
    }
    if ((rc = s_move_away(state_dir, &m, where, sizeof where)) < 0)
        goto done;
    tc_log_info("moved this agent's state from the older layout into %s/log: %zu message%s "
                "from %zu result file%s and the spool, %zu waiting, %zu refused%s; the old "
                "files are kept in %s and no longer read",
                journal_dir, m.n_records, m.n_records == 1 ? "" : "s", m.files.n,
                m.files.n == 1 ? "" : "s", m.n_waiting, m.n_refused,
                m.n_skipped ? " (records without a message id skipped)" : "", where);
done:
    s_names_free(&m.files);
    s_names_free(&m.waiting);
    s_names_free(&m.refused);
    free(m.spooled);
    return rc;
}
