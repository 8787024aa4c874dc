/* tc_resource_dir: the harness and the committed exports, from the
 * environment, the installed share directory or the source tree. */
#include "tc_paths.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The source tree's copies, as the program was told them at start-up
 * (tc_resource_set_built); relative to the working directory until then. */
static char s_built_harness[PATH_MAX] = "agent/harness";
static char s_built_models[PATH_MAX] = "tests/data";

void tc_resource_set_built(const char *harness, const char *models)
{
    if (harness && *harness)
        snprintf(s_built_harness, sizeof s_built_harness, "%s", harness);
    if (models && *models)
        snprintf(s_built_models, sizeof s_built_models, "%s", models);
}

static int s_is_dir(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

void tc_resource_pick(const char *env, const char *built, const char *exe,
                      const char *installed_name, char *out, size_t size)
{
    if (env && *env) {
        snprintf(out, size, "%s", env);
        return;
    }
    if (!exe || !*exe) {
        snprintf(out, size, "%s", built);
        return;
    }
    /* EXE is BINDIR/agent: the installed copy is BINDIR/../share/traincast/NAME. */
    char bindir[PATH_MAX];
    snprintf(bindir, sizeof bindir, "%s", exe);
    char *slash = strrchr(bindir, '/');
    if (slash)
        *slash = '\0';
    else
        snprintf(bindir, sizeof bindir, ".");
    char installed[PATH_MAX + 64];
    snprintf(installed, sizeof installed, "%s/../share/traincast/%s", bindir, installed_name);
    char real[PATH_MAX];
    if (s_is_dir(installed) && realpath(installed, real)) {
        snprintf(out, size, "%s", real);
        return;
    }
    if (s_is_dir(built)) {
        snprintf(out, size, "%s", built);
        return;
    }
    /* Neither: the installed place, without the "bin/..", so that errors
     * name where the package puts it. */
    char prefix[PATH_MAX];
    if (realpath(bindir, real) && (slash = strrchr(real, '/')))
        snprintf(prefix, sizeof prefix, "%.*s", (int)(slash - real), real);
    else
        snprintf(prefix, sizeof prefix, "%s/..", bindir);
    snprintf(out, size, "%s/share/traincast/%s", prefix, installed_name);
}

const char *tc_resource_dir(tc_dir_t which, char *buf, size_t size)
{
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    exe[n > 0 ? n : 0] = '\0';
    if (which == TC_DIR_MODELS)
        tc_resource_pick(getenv("TRAINCAST_DATA_DIR"), s_built_models, exe, "models", buf,
                         size);
    else
        tc_resource_pick(getenv("TRAINCAST_HARNESS_DIR"), s_built_harness, exe, "harness",
                         buf, size);
    return buf;
}

void tc_state_dir(const char *flag, const char *env_name, const char *sub, char *out,
                  size_t size)
{
    const char *env = getenv(env_name);
    const char *home = getenv("HOME");
    if (flag && *flag)
        snprintf(out, size, "%s", flag);
    else if (env && *env)
        snprintf(out, size, "%s", env);
    else
        snprintf(out, size, "%s/.traincast/%s", home && *home ? home : ".", sub);
}

FILE *tc_fopen_private(const char *path)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0)
        return NULL;
    /* An existing file keeps its mode through O_CREAT: narrow it. */
    if (fchmod(fd, 0600) != 0) {
        int e = errno;
        close(fd);
        errno = e;
        return NULL;
    }
    FILE *f = fdopen(fd, "w");
    if (!f) {
        int e = errno;
        close(fd);
        errno = e;
    }
    return f;
}
