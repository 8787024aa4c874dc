#include "tc_run.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

const char *tc_python(void)
{
    const char *v = getenv("TRAINCAST_PYTHON");
    return v && *v ? v : "/usr/bin/python3";
}

int tc_run_capture(char *const argv[], bool with_stderr, char *out, size_t size)
{
    int fds[2];
    if (size)
        out[0] = '\0';
    if (pipe2(fds, O_CLOEXEC) < 0)
        return -1;
    pid_t pid = fork();
    if (pid < 0) {
        close(fds[0]);
        close(fds[1]);
        return -1;
    }
    if (pid == 0) {
        dup2(fds[1], 1);
        if (with_stderr)
            dup2(fds[1], 2);
        int devnull = open("/dev/null", O_RDONLY);
        if (devnull >= 0)
            dup2(devnull, 0);
        execv(argv[0], argv);
        fprintf(stderr, "cannot run %s: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    close(fds[1]);
    size_t len = 0;
    char sink[4096];
    for (;;) {
        char *dst = len + 1 < size ? out + len : sink;
        size_t room = len + 1 < size ? size - 1 - len : sizeof sink;
        ssize_t r = read(fds[0], dst, room);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        if (dst != sink)
            len += (size_t)r;
    }
    if (size)
        out[len] = '\0';
    close(fds[0]);
    int status;
    while (waitpid(pid, &status, 0) < 0) {
        if (errno != EINTR)
            return -1;
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

