#include "trace_proc.h"

#include "tc_error.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

/* After the child exits, how long its stdout/stderr may stay open (held by
 * a grandchild) before the group is killed; and how long SIGTERM gets
 * before SIGKILL. */
#define DRAIN_S 2.0
#define TERM_GRACE_S 2.0
#define POLL_MS 200

static volatile sig_atomic_t s_interrupted;

static void s_on_signal(int sig)
{
    (void)sig;
    s_interrupted = 1;
}

void tc_proc_catch_interrupts(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = s_on_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = 0; /* no SA_RESTART: poll returns EINTR */
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
}

bool tc_proc_interrupted(void)
{
    return s_interrupted != 0;
}

static bool s_stop_asked(const tc_proc_spec_t *spec)
{
    return s_interrupted || (spec->cancelled && spec->cancelled(spec->cancel_arg));
}

static double s_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* environ with `add` entries replacing or extending it. Caller frees the
 * array (not the strings). */
static char **s_env(char *const *add)
{
    size_t n_env = 0, n_add = 0;
    while (environ && environ[n_env])
        n_env++;
    while (add && add[n_add])
        n_add++;
    char **env = calloc(n_env + n_add + 1, sizeof *env);
    if (!env)
        return NULL;
    size_t n = 0;
    for (size_t i = 0; i < n_env; i++) {
        bool replaced = false;
        for (size_t k = 0; k < n_add && !replaced; k++) {
            size_t key = strcspn(add[k], "=");
            replaced = strncmp(environ[i], add[k], key) == 0 && environ[i][key] == '=';
        }
        if (!replaced)
            env[n++] = environ[i];
    }
    for (size_t k = 0; k < n_add; k++)
        env[n++] = add[k];
    env[n] = NULL;
    return env;
}

static void s_child(const tc_proc_spec_t *spec, char **env, int out_w, int err_w)
{
    setpgid(0, 0);
    signal(SIGPIPE, SIG_DFL); /* an ignored signal would stay ignored across exec */
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    int null = open("/dev/null", O_RDONLY);
    if (null >= 0 && null != STDIN_FILENO) {
        dup2(null, STDIN_FILENO);
        close(null);
    }
    dup2(out_w, STDOUT_FILENO);
    dup2(err_w, STDERR_FILENO);
    execvpe(spec->argv[0], spec->argv, env);
    dprintf(STDERR_FILENO, "cannot run '%s': %s\n", spec->argv[0], strerror(errno));
    _exit(127);
}

static void s_tail_append(char *tail, const char *data, size_t n)
{
    size_t cap = TC_PROC_STDERR_TAIL - 1;
    size_t have = strlen(tail);
    if (n >= cap) {
        memcpy(tail, data + n - cap, cap);
        tail[cap] = '\0';
        return;
    }
    if (have + n > cap) {
        size_t drop = have + n - cap;
        memmove(tail, tail + drop, have - drop);
        have -= drop;
    }
    memcpy(tail + have, data, n);
    tail[have + n] = '\0';
    /* A NUL from the child would hide what follows it. */
    for (size_t i = 0; i < have + n; i++) {
        if (tail[i] == '\0')
            tail[i] = ' ';
    }
}

/* waitpid that also keeps the child's peak resident memory. */
static pid_t s_wait(pid_t pid, int *status, int flags, tc_proc_result_t *res)
{
    struct rusage ru;
    pid_t r = wait4(pid, status, flags, &ru);
    if (r == pid)
        res->peak_rss_bytes = (uint64_t)ru.ru_maxrss * 1024;
    return r;
}

static void s_record_status(tc_proc_result_t *res, int status)
{
    if (WIFEXITED(status)) {
        res->exited = true;
        res->exit_status = WEXITSTATUS(status);
    } else if (WIFSIGNALED(status)) {
        res->term_signal = WTERMSIG(status);
    }
}

/* SIGTERM to the group, SIGKILL after a grace period, then reap. */
static void s_kill_and_reap(pid_t pid, bool reaped, tc_proc_result_t *res)
{
    kill(-pid, SIGTERM);
    double until = s_now() + TERM_GRACE_S;
    int status;
    while (!reaped && s_now() < until) {
        pid_t r = s_wait(pid, &status, WNOHANG, res);
        if (r == pid) {
            reaped = true;
            s_record_status(res, status);
        } else if (r < 0 && errno != EINTR) {
            reaped = true;
        } else {
            nanosleep(&(struct timespec){0, 10 * 1000 * 1000}, NULL);
        }
    }
    kill(-pid, SIGKILL);
    while (!reaped) {
        pid_t r = s_wait(pid, &status, 0, res);
        if (r == pid)
            s_record_status(res, status);
        if (r == pid || (r < 0 && errno != EINTR))
            reaped = true;
    }
}

/* A child being run: its process (group), its output pipes, its times. */
typedef struct {
    pid_t pid;
    struct pollfd fds[2]; /* stdout, stderr; fd -1 once closed */
    double start, deadline, drain_until;
    bool reaped;
    int status;
} s_run_t;

/* Start the child with its stdout and stderr on pipes. */
static int s_spawn(const tc_proc_spec_t *spec, s_run_t *c)
{
    int out_p[2] = {-1, -1}, err_p[2] = {-1, -1};
    char **env = s_env(spec->env_add);
    if (!env)
        return tc_fail(TC_ENOMEM, "out of memory starting %s", spec->argv[0]);
    if (pipe2(out_p, O_CLOEXEC) != 0 || pipe2(err_p, O_CLOEXEC) != 0) {
        int e = errno;
        for (int i = 0; i < 2; i++) {
            if (out_p[i] >= 0)
                close(out_p[i]);
        }
        free(env);
        return tc_fail(TC_EIO, "cannot create pipes for %s: %s", spec->argv[0], strerror(e));
    }
    c->start = s_now();
    c->deadline = c->start + spec->timeout_s;
    c->pid = fork();
    if (c->pid < 0) {
        int e = errno;
        close(out_p[0]), close(out_p[1]), close(err_p[0]), close(err_p[1]);
        free(env);
        return tc_fail(TC_EIO, "cannot start %s: fork: %s", spec->argv[0], strerror(e));
    }
    if (c->pid == 0)
        s_child(spec, env, out_p[1], err_p[1]);
    free(env);
    setpgid(c->pid, c->pid); /* also done in the child; whichever runs first wins */
    close(out_p[1]);
    close(err_p[1]);
    c->fds[0] = (struct pollfd){out_p[0], POLLIN, 0};
    c->fds[1] = (struct pollfd){err_p[0], POLLIN, 0};
    return 0;
}

/* Read what is ready on the pipes: stdout to the spec's callback (which
 * may stop the run), stderr to the result's tail. */
static void s_read_ready(const tc_proc_spec_t *spec, s_run_t *c, tc_proc_result_t *res)
{
    char buf[65536];
    for (int i = 0; i < 2 && !res->stopped; i++) {
        struct pollfd *f = &c->fds[i];
        if (f->fd < 0 || !(f->revents & (POLLIN | POLLHUP | POLLERR)))
            continue;
        ssize_t got = read(f->fd, buf, sizeof buf);
        if (got < 0 && (errno == EINTR || errno == EAGAIN))
            continue;
        if (got <= 0) {
            close(f->fd);
            f->fd = -1;
        } else if (i == 1) {
            s_tail_append(res->stderr_tail, buf, (size_t)got);
        } else if (spec->on_stdout(buf, (size_t)got, spec->arg) < 0) {
            res->stopped = true;
        }
    }
}

/* Read the child's output until both pipes close, the deadline passes, the
 * callback stops it, or a stop is asked; reap it when it exits. */
static int s_pump(const tc_proc_spec_t *spec, s_run_t *c, tc_proc_result_t *res)
{
    while (c->fds[0].fd >= 0 || c->fds[1].fd >= 0) {
        if (s_stop_asked(spec))
            return tc_fail(TC_EINTR, "interrupted while %s was running; it was stopped",
                           spec->argv[0]);
        double now = s_now();
        if (now >= c->deadline) {
            res->timed_out = true;
            return 0;
        }
        if (c->reaped && now >= c->drain_until)
            return 0; /* a grandchild holds the pipes open; the group is killed later */
        double wait_s = (c->reaped ? c->drain_until : c->deadline) - now;
        int wait_ms = wait_s * 1000 < POLL_MS ? (int)(wait_s * 1000) + 1 : POLL_MS;
        int n = poll(c->fds, 2, wait_ms);
        if (n < 0 && errno != EINTR)
            return tc_fail(TC_EIO, "poll on %s's output: %s", spec->argv[0], strerror(errno));
        if (n > 0)
            s_read_ready(spec, c, res);
        if (res->stopped)
            return 0;
        if (!c->reaped && s_wait(c->pid, &c->status, WNOHANG, res) == c->pid) {
            c->reaped = true;
            s_record_status(res, c->status);
            c->drain_until = s_now() + DRAIN_S;
        }
    }
    return 0;
}

/* Wait for a child that closed its output but has not exited yet, up to
 * the deadline. */
static int s_await(const tc_proc_spec_t *spec, s_run_t *c, tc_proc_result_t *res)
{
    while (!c->reaped && !res->timed_out && !res->stopped) {
        if (s_wait(c->pid, &c->status, WNOHANG, res) == c->pid) {
            c->reaped = true;
            s_record_status(res, c->status);
        } else if (s_stop_asked(spec)) {
            return tc_fail(TC_EINTR, "interrupted while %s was running; it was stopped",
                           spec->argv[0]);
        } else if (s_now() >= c->deadline) {
            res->timed_out = true;
        } else {
            nanosleep(&(struct timespec){0, 10 * 1000 * 1000}, NULL);
        }
    }
    return 0;
}

int tc_proc_run(const tc_proc_spec_t *spec, tc_proc_result_t *res)
{
    memset(res, 0, sizeof *res);
    s_run_t c = {.fds = {{-1, 0, 0}, {-1, 0, 0}}};
    int rc = s_spawn(spec, &c);
    if (rc < 0)
        return rc;
    rc = s_pump(spec, &c, res);
    for (int i = 0; i < 2; i++) {
        if (c.fds[i].fd >= 0)
            close(c.fds[i].fd);
    }
    if (rc == 0)
        rc = s_await(spec, &c, res);
    if (!c.reaped) {
        s_kill_and_reap(c.pid, false, res);
        if (res->timed_out || res->stopped || rc < 0)
            res->exited = false; /* its end is ours, not its own */
    } else {
        kill(-c.pid, SIGKILL); /* whatever it left behind in its group */
    }
    res->wall_s = s_now() - c.start;
    return rc;
}

void tc_proc_tail_lines(const char *tail, unsigned max_lines, char *out, size_t size)
{
    size_t n = strlen(tail);
    while (n > 0 && (tail[n - 1] == '\n' || tail[n - 1] == ' ' || tail[n - 1] == '\r'))
        n--;
    size_t begin = n;
    unsigned lines = 0;
    while (begin > 0 && lines < max_lines) {
        begin--;
        if (tail[begin] == '\n' && ++lines == max_lines) {
            begin++;
            break;
        }
    }
    size_t w = 0;
    for (size_t i = begin; i < n && w + 4 < size; i++) {
        unsigned char c = (unsigned char)tail[i];
        if (c == '\n') {
            memcpy(out + w, " | ", 3);
            w += 3;
        } else {
            out[w++] = c < 0x20 || c == 0x7f ? ' ' : (char)c;
        }
    }
    if (size)
        out[w < size ? w : size - 1] = '\0';
}
