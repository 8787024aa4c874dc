#include "tc_test_proc.h"

#include "store.h"
#include "tc_error.h"

#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

void tc_test_sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

pid_t tc_test_spawn(const char *const *argv, const char *log, const char *const *env_kv)
{
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid != 0)
        return pid;
    /* A test that fails half-way leaves no server running behind it. */
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    int fd = open(log ? log : "/dev/null", O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd >= 0) {
        dup2(fd, STDOUT_FILENO);
        dup2(fd, STDERR_FILENO);
    }
    int devnull = open("/dev/null", O_RDONLY);
    if (devnull >= 0)
        dup2(devnull, STDIN_FILENO);
    setenv("TRAINCAST_PROGRESS", "plain", 1);
    for (size_t i = 0; env_kv && env_kv[i]; i++)
        putenv((char *)env_kv[i]);
    execv(argv[0], (char *const *)argv);
    fprintf(stderr, "cannot run %s: %s\n", argv[0], strerror(errno));
    _exit(127);
}

static int s_status(int st)
{
    if (WIFEXITED(st))
        return WEXITSTATUS(st);
    if (WIFSIGNALED(st))
        return 128 + WTERMSIG(st);
    return -1;
}

int tc_test_wait(pid_t pid, int timeout_ms)
{
    for (int waited = 0;; waited += 20) {
        int st;
        pid_t r = waitpid(pid, &st, WNOHANG);
        if (r == pid)
            return s_status(st);
        if (r < 0)
            return -1;
        if (waited >= timeout_ms) {
            kill(pid, SIGKILL);
            waitpid(pid, &st, 0);
            return -1;
        }
        tc_test_sleep_ms(20);
    }
}

int tc_test_stop(pid_t pid, int sig)
{
    if (pid <= 0)
        return -1;
    kill(pid, sig);
    return tc_test_wait(pid, 10000);
}

int tc_test_free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    int port = -1;
    if (fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof a) == 0 &&
        getsockname(fd, (struct sockaddr *)&a, &len) == 0)
        port = ntohs(a.sin_port);
    if (fd >= 0)
        close(fd);
    return port;
}

void tc_test_binary(const char *name, char *out, size_t size)
{
    snprintf(out, size, "%s/%s/%s", TC_BINARY_DIR, name, name);
}

void tc_test_tmpdir(const char *name, char *out, size_t size)
{
    char base[1024];
    snprintf(base, sizeof base, "%s/test-tmp", TC_BINARY_DIR);
    mkdir(base, 0755);
    snprintf(out, size, "%s/%s-%d", base, name, (int)getpid());
    char cmd[2200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", out);
    if (system(cmd) != 0)
        fprintf(stderr, "could not clear %s\n", out);
    mkdir(out, 0755);
}

int tc_test_dir_count_suffix(const char *dir, const char *suffix)
{
    DIR *d = opendir(dir);
    if (!d)
        return -1;
    int n = 0;
    struct dirent *e;
    size_t sl = strlen(suffix);
    while ((e = readdir(d)) != NULL) {
        size_t l = strlen(e->d_name);
        if (l >= sl && !strcmp(e->d_name + l - sl, suffix))
            n++;
    }
    closedir(d);
    return n;
}

bool tc_test_file_contains(const char *path, const char *needle)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return false;
    char line[8192];
    bool found = false;
    while (!found && fgets(line, sizeof line, f))
        found = strstr(line, needle) != NULL;
    fclose(f);
    return found;
}

long long tc_test_sql_count(const char *dsn, const char *sql)
{
    tc_store_t *s = NULL;
    char v[64] = "";
    int rc = tc_store_open(dsn, &s);
    if (rc == 0)
        rc = tc_store_exec(s, sql, v, sizeof v);
    tc_store_destroy(&s);
    if (rc < 0) {
        fprintf(stderr, "%s: %s\n", sql, tc_errmsg());
        return -1;
    }
    return strtoll(v, NULL, 10);
}

void tc_test_sql(const char *dsn, const char *sql)
{
    tc_store_t *s = NULL;
    int rc = tc_store_open(dsn, &s);
    if (rc == 0)
        rc = tc_store_exec(s, sql, NULL, 0);
    tc_store_destroy(&s);
    cr_assert_eq(rc, 0, "%s: %s", sql, tc_errmsg());
}
