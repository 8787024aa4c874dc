#include "job_results.h"

#include "tc_error.h"
#include "tc_paths.h"
#include "tc_log.h"
#include "tc_resultfile.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct tc_job_results {
    tc_job_t *job;
    char path[2300];
    tc_resultfile_t *file;
    size_t spooled;                    /* records known to be spooled */
    char last_id[TC_MSGID_LEN + 1];    /* the id of the last of them */
    size_t mark_written;
};

void tc_job_results_name(char *out, size_t size, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(out, size, fmt, ap);
    va_end(ap);
    for (char *p = out; *p; p++) {
        if (!isalnum((unsigned char)*p) && *p != '-' && *p != '.' && *p != '_')
            *p = '_';
    }
}

const char *tc_job_results_path(const tc_job_results_t *self)
{
    return self->path;
}

/* The mark: "<count> <message id>\n". Missing or unreadable: nothing. */
static void s_read_mark(const char *path, size_t *count, char id[TC_MSGID_LEN + 1])
{
    char mark[2400];
    snprintf(mark, sizeof mark, "%s.spooled", path);
    *count = 0;
    id[0] = '\0';
    FILE *f = fopen(mark, "r");
    if (!f)
        return;
    unsigned long long n = 0;
    char buf[64] = "";
    if (fscanf(f, "%llu %40s", &n, buf) == 2 && tc_msgid_valid(buf)) {
        *count = (size_t)n;
        snprintf(id, TC_MSGID_LEN + 1, "%s", buf);
    }
    fclose(f);
}

static int s_write_mark(const char *path, size_t count, const char *id)
{
    char mark[2400], tmp[2500];
    snprintf(mark, sizeof mark, "%s.spooled", path);
    snprintf(tmp, sizeof tmp, "%s.tmp", mark);
    FILE *f = tc_fopen_private(tmp);
    if (!f)
        return tc_fail(TC_EIO, "cannot create %s: %s", tmp, strerror(errno));
    int ok = fprintf(f, "%zu %s\n", count, id) > 0 && fflush(f) == 0 && fsync(fileno(f)) == 0;
    ok = fclose(f) == 0 && ok;
    if (!ok || rename(tmp, mark) != 0) {
        int e = errno;
        unlink(tmp);
        return tc_fail(TC_EIO, "cannot write %s: %s", mark, strerror(e));
    }
    return 0;
}

typedef struct {
    size_t records;
    size_t want;                    /* the mark's count */
    const char *want_id;
    bool match;                     /* record `want` has the mark's id */
    char last_id[TC_MSGID_LEN + 1]; /* of the last record */
} s_scan_t;

static int s_scan(const tc_envelope_t *env, void *arg)
{
    s_scan_t *sc = arg;
    sc->records++;
    const char *id = env->message_id ? env->message_id : "";
    if (sc->records == sc->want)
        sc->match = !strcmp(id, sc->want_id);
    snprintf(sc->last_id, sizeof sc->last_id, "%s", id);
    return 0;
}

static int s_mkdir(const char *dir)
{
    if (mkdir(dir, 0700) != 0 && errno != EEXIST)
        return tc_fail(TC_EIO, "cannot create directory %s: %s", dir, strerror(errno));
    return 0;
}

int tc_job_results_open(tc_job_t *job, const char *dir, const char *name,
                        tc_job_results_t **out)
{
    *out = NULL;
    int rc = s_mkdir(dir);
    if (rc < 0)
        return rc;
    tc_job_results_t *self = calloc(1, sizeof *self);
    if (!self)
        return tc_fail(TC_ENOMEM, "out of memory");
    self->job = job;
    snprintf(self->path, sizeof self->path, "%s/%s.tcr", dir, name);

    char mark_id[TC_MSGID_LEN + 1];
    size_t mark = 0;
    s_read_mark(self->path, &mark, mark_id);
    s_scan_t sc = {.want = mark, .want_id = mark_id};
    TC_TRY(tc_resultfile_read(self->path, true, s_scan, &sc, NULL));
    size_t skip = mark > 0 && sc.match ? mark : 0;
    if (mark > 0 && !sc.match)
        tc_log_warn("%s does not hold the records %s.spooled speaks of; spooling all %zu of "
                    "them again (the aggregator stores each once)",
                    self->path, self->path, sc.records);
    if (sc.records > skip) {
        size_t before = tc_job_emitted(job);
        TC_TRY(tc_job_emit_file_from(job, self->path, skip, NULL));
        tc_log_info("%s: spooled %llu record%s a previous run had not", self->path,
                    (unsigned long long)(tc_job_emitted(job) - before),
                    tc_job_emitted(job) - before == 1 ? "" : "s");
    }
    self->spooled = sc.records;
    snprintf(self->last_id, sizeof self->last_id, "%s", sc.last_id);
    if (sc.records != mark || !sc.match)
        TC_TRY(s_write_mark(self->path, self->spooled, self->last_id));
    self->mark_written = self->spooled;
    TC_TRY(tc_resultfile_open_append(self->path, &self->file));
    *out = self;
    return 0;
err:
    tc_job_results_close(&self);
    return rc;
}

int tc_job_results_append(tc_job_results_t *self, tc_envelope_t *env)
{
    int rc = tc_resultfile_append(self->file, env);
    if (rc == 0)
        rc = tc_job_emit_record(self->job, env);
    if (rc == 0) {
        self->spooled++;
        snprintf(self->last_id, sizeof self->last_id, "%s", env->message_id);
    }
    return rc;
}

void tc_job_results_close(tc_job_results_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    tc_job_results_t *self = *self_p;
    if (self->file && self->spooled != self->mark_written) {
        /* Closing runs on error paths too: keep the caller's message. */
        char saved[2048];
        snprintf(saved, sizeof saved, "%s", tc_errmsg());
        if (s_write_mark(self->path, self->spooled, self->last_id) < 0)
            tc_log_warn("%s (its records are spooled again by the next job; harmless)",
                        tc_errmsg());
        tc_fail(0, "%s", saved);
    }
    tc_resultfile_close(&self->file);
    free(self);
    *self_p = NULL;
}
