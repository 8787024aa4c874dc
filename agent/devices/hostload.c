#include "hostload.h"

#include "tc_error.h"
#include "tc_log.h"

#include <ctype.h>
#include <dirent.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

static double s_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* The "cpu" line of /proc/stat. */
static bool s_machine(uint64_t *busy, uint64_t *total, uint64_t *steal)
{
    FILE *f = fopen("/proc/stat", "r");
    if (!f)
        return false;
    unsigned long long v[10] = {0};
    int got = fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1],
                     &v[2], &v[3], &v[4], &v[5], &v[6], &v[7], &v[8], &v[9]);
    fclose(f);
    if (got < 8)
        return false;
    /* user nice system idle iowait irq softirq steal guest guest_nice;
     * guest time is already counted in user. */
    *busy = v[0] + v[1] + v[2] + v[5] + v[6];
    *steal = v[7];
    *total = v[0] + v[1] + v[2] + v[3] + v[4] + v[5] + v[6] + v[7];
    return true;
}

/* Parent and user + system jiffies of a process, with those of its children
 * it has waited for (cutime, cstime: a trace runner that ended is still the
 * agent's work), from /proc/PID/stat; the command may hold spaces and
 * parentheses, so fields count from the last ')'. */
static bool s_proc(pid_t pid, pid_t *ppid, uint64_t *jiffies)
{
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return false;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    char *p = strrchr(buf, ')');
    if (!p)
        return false;
    int parent = 0;
    unsigned long long utime = 0, stime = 0;
    long long cutime = 0, cstime = 0;
    /* ") S ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime stime
     * cutime cstime" */
    if (sscanf(p + 1, " %*c %d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu %lld %lld",
               &parent, &utime, &stime, &cutime, &cstime) != 5)
        return false;
    *ppid = (pid_t)parent;
    *jiffies = utime + stime + (uint64_t)(cutime > 0 ? cutime : 0) +
               (uint64_t)(cstime > 0 ? cstime : 0);
    return true;
}

/* The children of every thread of `pid` (/proc/PID/task/TID/children),
 * appended to `v`; false when the kernel does not offer those files. */
static bool s_children(pid_t pid, pid_t **v, size_t *n, size_t *cap)
{
    char path[96];
    snprintf(path, sizeof path, "/proc/%d/task", (int)pid);
    DIR *d = opendir(path);
    if (!d)
        return false;
    bool any = false;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (!isdigit((unsigned char)e->d_name[0]))
            continue;
        char file[160];
        snprintf(file, sizeof file, "/proc/%d/task/%s/children", (int)pid, e->d_name);
        FILE *f = fopen(file, "r");
        if (!f)
            continue;
        any = true;
        int c;
        while (fscanf(f, "%d", &c) == 1) {
            if (*n == *cap) {
                size_t cap2 = *cap ? 2 * *cap : 16;
                pid_t *w = realloc(*v, cap2 * sizeof *w);
                if (!w)
                    break;
                *v = w, *cap = cap2;
            }
            (*v)[(*n)++] = (pid_t)c;
        }
        fclose(f);
    }
    closedir(d);
    return any;
}

/* This process and every descendant alive now: through the children lists
 * where the kernel keeps them, else a scan of /proc. */
static uint64_t s_tree(void)
{
    pid_t self = getpid(), ppid;
    uint64_t sum = 0, j;
    if (s_proc(self, &ppid, &j))
        sum += j;
    pid_t *v = NULL;
    size_t n = 0, cap = 0;
    if (s_children(self, &v, &n, &cap)) {
        for (size_t i = 0; i < n; i++) {
            if (s_proc(v[i], &ppid, &j))
                sum += j;
            s_children(v[i], &v, &n, &cap);
        }
        free(v);
        return sum;
    }
    free(v);
    DIR *d = opendir("/proc");
    if (!d)
        return sum;
    size_t m = 0, mcap = 256;
    struct s_p {
        pid_t pid, ppid;
        uint64_t j;
        bool in;
    } *p = malloc(mcap * sizeof *p);
    struct dirent *e;
    while (p && (e = readdir(d))) {
        if (!isdigit((unsigned char)e->d_name[0]))
            continue;
        pid_t pid = (pid_t)atoi(e->d_name);
        if (pid == self || !s_proc(pid, &ppid, &j))
            continue;
        if (m == mcap) {
            struct s_p *w = realloc(p, 2 * mcap * sizeof *p);
            if (!w)
                break;
            p = w, mcap *= 2;
        }
        p[m++] = (struct s_p){pid, ppid, j, false};
    }
    closedir(d);
    for (bool grew = true; p && grew;) {
        grew = false;
        for (size_t i = 0; i < m; i++) {
            if (p[i].in)
                continue;
            bool parent_in = p[i].ppid == self;
            for (size_t k = 0; k < m && !parent_in; k++)
                parent_in = p[k].in && p[k].pid == p[i].ppid;
            if (parent_in) {
                p[i].in = grew = true;
                sum += p[i].j;
            }
        }
    }
    free(p);
    return sum;
}

/* Recent marks, so that a short block's load is read over a window long
 * enough for the kernel's tick counters (tc_load_since). */
#define S_RING 64
static tc_load_mark_t s_ring[S_RING];
static size_t s_ring_n, s_ring_next;
static pthread_mutex_t s_ring_lock = PTHREAD_MUTEX_INITIALIZER;

void tc_load_mark(tc_load_mark_t *m)
{
    memset(m, 0, sizeof *m);
    m->at_s = s_now();
    m->ok = s_machine(&m->busy, &m->total, &m->steal);
    m->tree = s_tree();
    if (!m->ok)
        return;
    pthread_mutex_lock(&s_ring_lock);
    s_ring[s_ring_next] = *m;
    s_ring_next = (s_ring_next + 1) % S_RING;
    s_ring_n += s_ring_n < S_RING;
    pthread_mutex_unlock(&s_ring_lock);
}

void tc_load_since(const tc_load_mark_t *start, double min_s, tc_load_t *out)
{
    tc_load_mark_t now, from = *start;
    tc_load_mark(&now);
    if (now.at_s - from.at_s < min_s) {
        /* The newest earlier mark far enough back, else the oldest kept. */
        pthread_mutex_lock(&s_ring_lock);
        for (size_t k = 0; k < s_ring_n; k++) {
            const tc_load_mark_t *m = &s_ring[(s_ring_next + S_RING - 1 - k) % S_RING];
            if (m->at_s < from.at_s)
                from = *m;
            if (now.at_s - from.at_s >= min_s)
                break;
        }
        pthread_mutex_unlock(&s_ring_lock);
    }
    double short_s = min_s - (now.at_s - from.at_s);
    if (short_s > 0) {
        /* No mark of this process goes back far enough (its first blocks):
         * a few milliseconds hold a tick or two, which read 0 % or 100 % by
         * chance. Read on until the window is long enough. */
        usleep((useconds_t)(short_s * 1e6) + 1000);
        tc_load_mark(&now);
    }
    tc_load_between(&from, &now, out);
}

void tc_load_between(const tc_load_mark_t *a, const tc_load_mark_t *b, tc_load_t *out)
{
    memset(out, 0, sizeof *out);
    out->seconds = b->at_s - a->at_s;
    if (!a->ok || !b->ok || b->total <= a->total)
        return;
    double total = (double)(b->total - a->total);
    double busy = (double)(b->busy - a->busy);
    /* A descendant that ended unwaited for leaves the tree's sum: never below
     * zero. */
    double tree = b->tree > a->tree ? (double)(b->tree - a->tree) : 0;
    double others = busy - tree;
    out->others_pct = others > 0 ? 100.0 * others / total : 0;
    out->others_pct = out->others_pct > 100 ? 100 : out->others_pct;
    out->steal_pct = 100.0 * (double)(b->steal - a->steal) / total;
    out->known = true;
}

void tc_load_combine(const tc_load_t *v, unsigned long n, tc_load_t *out)
{
    memset(out, 0, sizeof *out);
    double w = 0;
    for (unsigned long i = 0; i < n; i++) {
        if (!v[i].known)
            continue;
        out->others_pct += v[i].others_pct * v[i].seconds;
        out->steal_pct += v[i].steal_pct * v[i].seconds;
        w += v[i].seconds;
    }
    out->seconds = w;
    if (w > 0) {
        out->others_pct /= w;
        out->steal_pct /= w;
        out->known = true;
    }
}

tc_quiet_t tc_quiet_defaults(void)
{
    return (tc_quiet_t){.threshold_pct = 10.0, .wait_s = 60.0, .retries = 2, .canary_slow = 1.3};
}

static tc_quiet_t s_quiet;
static bool s_quiet_set;

/* The defaults with the environment's values; TC_EUSAGE naming a bad one. */
static int s_quiet_env(tc_quiet_t *q)
{
    *q = tc_quiet_defaults();
    const char *pct = getenv("TRAINCAST_QUIET_PCT"), *wait = getenv("TRAINCAST_QUIET_WAIT_S"),
               *canary = getenv("TRAINCAST_CANARY_SLOW");
    char *end;
    if (pct && *pct) {
        q->threshold_pct = strtod(pct, &end);
        if (*end || tc_quiet_check(q, "TRAINCAST_QUIET_PCT") < 0)
            return tc_fail(TC_EUSAGE, "TRAINCAST_QUIET_PCT must be a share of the machine "
                                      "between 0 and 100 (got '%s')",
                           pct);
    }
    if (wait && *wait) {
        q->wait_s = strtod(wait, &end);
        if (*end || !(q->wait_s >= 0))
            return tc_fail(TC_EUSAGE, "TRAINCAST_QUIET_WAIT_S must be a number of seconds, 0 or "
                                      "more (got '%s')",
                           wait);
    }
    if (canary && *canary) {
        q->canary_slow = strtod(canary, &end);
        if (*end || !(q->canary_slow == 0 || q->canary_slow > 1))
            return tc_fail(TC_EUSAGE, "TRAINCAST_CANARY_SLOW must be a ratio over 1 (a "
                                      "benchmark is measured again when the canary around it "
                                      "read that many times its fastest), or 0 to turn the "
                                      "canary off (got '%s')",
                           canary);
    }
    return 0;
}

tc_quiet_t tc_quiet_get(void)
{
    if (!s_quiet_set) {
        if (s_quiet_env(&s_quiet) < 0) {
            tc_log_warn("%s; measuring with the default guard", tc_errmsg());
            s_quiet = tc_quiet_defaults();
        }
        s_quiet_set = true;
    }
    tc_quiet_t q = s_quiet;
    if (q.threshold_pct >= 100)
        q.canary_slow = 0; /* the guard off: the canary too */
    return q;
}

int tc_quiet_set_threshold(bool given, double pct, const char *flag)
{
    tc_quiet_t q;
    int rc = s_quiet_env(&q);
    if (rc < 0)
        return rc;
    if (given) {
        q.threshold_pct = pct;
        if ((rc = tc_quiet_check(&q, flag)) < 0)
            return rc;
    }
    s_quiet = q;
    s_quiet_set = true;
    return 0;
}

int tc_quiet_check(const tc_quiet_t *q, const char *flag)
{
    if (!(q->threshold_pct >= 0 && q->threshold_pct <= 100))
        return tc_fail(TC_EUSAGE, "%s must be a share of the machine between 0 and 100 %% (got "
                                  "%g)",
                       flag, q->threshold_pct);
    if (!(q->wait_s >= 0))
        return tc_fail(TC_EUSAGE, "the time to wait for a quiet machine must be 0 s or more (got "
                                  "%g)",
                       q->wait_s);
    if (!(q->canary_slow == 0 || q->canary_slow > 1))
        return tc_fail(TC_EUSAGE, "the canary's ratio must be over 1, or 0 for none (got %g)",
                       q->canary_slow);
    return 0;
}

bool tc_quiet_disturbed(const tc_quiet_t *q, const tc_load_t *l)
{
    return q->threshold_pct < 100 && l->known && l->others_pct > q->threshold_pct;
}

/* When a wait last ran out: for a while after, nothing waits again (a
 * machine that stays busy would otherwise cost every block a wait). */
static double s_gave_up_at = -1e9;
#define S_BUSY_HOLD 5.0 /* times the wait */

static bool s_wait(const tc_quiet_t *q, const char *what, bool hold, tc_load_t *last)
{
    memset(last, 0, sizeof *last);
    if (q->threshold_pct >= 100)
        return true;
    double start = s_now();
    if (hold && start - s_gave_up_at < S_BUSY_HOLD * q->wait_s)
        return false;
    bool said = false;
    for (;;) {
        tc_load_mark_t a, b;
        tc_load_mark(&a);
        usleep(1000 * 1000);
        tc_load_mark(&b);
        tc_load_between(&a, &b, last);
        if (!last->known || last->others_pct <= q->threshold_pct) {
            if (said)
                tc_log_info("%s: the machine is quiet again (others %.0f %%) after %.0f s", what,
                            last->others_pct, s_now() - start);
            return true;
        }
        if (!said) {
            tc_log_warn("%s: other processes use %.0f %% of this machine (over the %.0f %% a "
                        "measurement tolerates); waiting up to %.0f s for it to be quiet",
                        what, last->others_pct, q->threshold_pct, q->wait_s);
            said = true;
        }
        if (s_now() - start >= q->wait_s) {
            s_gave_up_at = s_now();
            tc_log_warn("%s: still busy after %.0f s (others %.0f %%): measuring on without "
                        "waiting for the next %.0f s; what is measured under load is marked "
                        "disturbed",
                        what, s_now() - start, last->others_pct, S_BUSY_HOLD * q->wait_s);
            return false;
        }
    }
}

bool tc_quiet_wait(const tc_quiet_t *q, const char *what, tc_load_t *last)
{
    return s_wait(q, what, true, last);
}

bool tc_quiet_wait_again(const tc_quiet_t *q, const char *what, tc_load_t *last)
{
    return s_wait(q, what, false, last);
}
