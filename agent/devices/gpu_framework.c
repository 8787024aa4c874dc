#include "gpu_framework.h"

#include "allocator.h"
#include "device.h"

#include "tc_error.h"
#include "tc_json.h"
#include "tc_log.h"
#include "tc_paths.h"
#include "tc_run.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define S_PROBE_ENV "TRAINCAST_GPU_FRAMEWORK_PROBE"
#define S_REEXEC_ENV "TRAINCAST_CUDNN_REEXEC"

static tc_gpu_framework_t s_info;
static pthread_once_t s_once = PTHREAD_ONCE_INIT;
static char s_answer[16384]; /* the probe's JSON line, for a restarted process */

static void s_copy(char *dst, size_t size, const tc_json_value_t *o, const char *key)
{
    const char *v = tc_json_string(tc_json_get(o, key));
    snprintf(dst, size, "%s", v ? v : "");
}

static bool s_setting_true(const tc_json_value_t *set, const char *key, bool dflt)
{
    const char *v = tc_json_string(tc_json_get(set, key));
    return v ? strcmp(v, "True") == 0 : dflt;
}

static void s_parse(const char *line)
{
    tc_gpu_framework_t *f = &s_info;
    tc_json_t *doc = NULL;
    if (tc_json_parse(line, strlen(line), NULL, &doc) < 0) {
        snprintf(f->why, sizeof f->why, "the framework probe answered: %.300s", line);
        return;
    }
    const tc_json_value_t *root = tc_json_root(doc);
    const char *type = tc_json_string(tc_json_get(root, "type"));
    if (!type || strcmp(type, "probe") != 0) {
        const char *msg = tc_json_string(tc_json_get(root, "message"));
        snprintf(f->why, sizeof f->why, "%s", msg ? msg : "the framework probe failed");
        tc_json_destroy(&doc);
        return;
    }
    s_copy(f->framework, sizeof f->framework, root, "framework");
    s_copy(f->version, sizeof f->version, root, "framework_version");
    s_copy(f->cudnn_version, sizeof f->cudnn_version, root, "cudnn_version");
    s_copy(f->cudnn_dir, sizeof f->cudnn_dir, root, "cudnn_dir");
    f->cuda = tc_json_bool(tc_json_get(root, "cuda"));
    int64_t n = 0;
    f->cudnn_number = tc_json_int(tc_json_get(root, "cudnn_number"), &n) ? (long)n : 0;
    const tc_json_value_t *set = tc_json_get(root, "settings");
    f->cudnn_enabled = s_setting_true(set, "torch.backends.cudnn.enabled", true);
    f->deterministic = s_setting_true(set, "torch.backends.cudnn.deterministic", false) ||
                       s_setting_true(set, "torch.are_deterministic_algorithms_enabled", false);
    f->benchmark = s_setting_true(set, "torch.backends.cudnn.benchmark", false);
    const char *limit = tc_json_string(tc_json_get(set, "torch.backends.cudnn.benchmark_limit"));
    f->benchmark_limit = limit ? atoi(limit) : 0;
    f->found = *f->framework && *f->version;
    if (!f->found)
        snprintf(f->why, sizeof f->why, "the framework probe named no framework");
    else
        snprintf(s_answer, sizeof s_answer, "%s", line);
    tc_json_destroy(&doc);
}

static void s_probe(void)
{
    const char *cached = getenv(S_PROBE_ENV);
    if (cached && *cached) {
        s_parse(cached);
        if (s_info.found)
            return;
        memset(&s_info, 0, sizeof s_info);
    }
    char dir[1024], script[1100];
    snprintf(script, sizeof script, "%s/gpu_env.py",
             tc_resource_dir(TC_DIR_HARNESS, dir, sizeof dir));
    char *argv[] = {(char *)tc_python(), script, "--probe", NULL};
    if (access(argv[0], X_OK) != 0) {
        snprintf(s_info.why, sizeof s_info.why, "no Python at %s (set TRAINCAST_PYTHON)",
                 argv[0]);
        return;
    }
    static char out[32768];
    int status = tc_run_capture(argv, false, out, sizeof out);
    size_t len = strlen(out);
    while (len && out[len - 1] == '\n')
        out[--len] = '\0';
    const char *line = strrchr(out, '\n') ? strrchr(out, '\n') + 1 : out;
    s_parse(line);
    if (!s_info.found && status != 0 && !s_info.why[0])
        snprintf(s_info.why, sizeof s_info.why, "%s --probe exited %d: %.300s", script, status,
                 out);
    tc_log_debug("gpu framework: %s %s, cuda %d, cuDNN %s in %s", s_info.framework,
                 s_info.version, s_info.cuda, s_info.cudnn_version, s_info.cudnn_dir);
}

const tc_gpu_framework_t *tc_gpu_framework_probe(void)
{
    pthread_once(&s_once, s_probe);
    return &s_info;
}

void tc_gpu_loaded_cudnn(char *buf, unsigned long size)
{
    buf[0] = '\0';
    FILE *f = fopen("/proc/self/maps", "r");
    if (!f)
        return;
    char line[4096];
    while (fgets(line, sizeof line, f)) {
        char *path = strchr(line, '/');
        if (!path)
            continue;
        path[strcspn(path, "\n")] = '\0';
        const char *base = strrchr(path, '/') + 1;
        if (strncmp(base, "libcudnn.so", 11) == 0) {
            char *real = realpath(path, NULL);
            snprintf(buf, size, "%s", real ? real : path);
            free(real);
            break;
        }
    }
    fclose(f);
}

/* Whether `path` lies in directory `dir` (both made canonical). */
static bool s_in_dir(const char *path, const char *dir)
{
    char *rp = realpath(path, NULL), *rd = realpath(dir, NULL);
    bool in = false;
    if (rp && rd) {
        size_t n = strlen(rd);
        in = strncmp(rp, rd, n) == 0 && rp[n] == '/' && !strchr(rp + n + 1, '/');
    }
    free(rp);
    free(rd);
    return in;
}

tc_cudnn_action_t tc_cudnn_action(const char *loaded, const char *framework_dir,
                                  const char *choice, bool restarted)
{
    bool want_system = choice && !strcmp(choice, "system");
    if (!framework_dir || !*framework_dir)
        return TC_CUDNN_WARN; /* no framework cuDNN to load: the system's */
    if (loaded && *loaded && s_in_dir(loaded, framework_dir))
        return TC_CUDNN_KEEP;
    if (want_system || restarted)
        return TC_CUDNN_WARN;
    return TC_CUDNN_REEXEC;
}

int tc_gpu_use_framework_cudnn(void)
{
    const tc_gpu_framework_t *f = tc_gpu_framework_probe();
    char loaded[1024];
    tc_gpu_loaded_cudnn(loaded, sizeof loaded);
    const char *choice = getenv("TRAINCAST_CUDNN");
    if (choice && *choice && strcmp(choice, "system") && strcmp(choice, "framework"))
        return tc_fail(TC_EUSAGE, "TRAINCAST_CUDNN must be framework (the default) or system "
                                  "(got '%s')",
                       choice);
    bool restarted = getenv(S_REEXEC_ENV) != NULL;
    switch (tc_cudnn_action(loaded, f->found && f->cuda ? f->cudnn_dir : "", choice, restarted)) {
    case TC_CUDNN_KEEP:
        return 0;
    case TC_CUDNN_WARN:
        if (!f->found || !f->cuda || !f->cudnn_dir[0])
            tc_log_warn("measuring with the system's cuDNN%s%s: PyTorch's could not be found "
                        "(%s)",
                        *loaded ? " " : "", loaded,
                        !f->found  ? f->why
                        : !f->cuda ? "its torch.cuda.is_available() is False"
                                   : "it reports no cuDNN library");
        else
            tc_log_warn("measuring with the system's cuDNN %s, not PyTorch's in %s (%s)", loaded,
                        f->cudnn_dir,
                        restarted ? "started again with it first in LD_LIBRARY_PATH, the system's "
                                    "still loaded"
                                  : "TRAINCAST_CUDNN=system");
        return 0;
    default:
        break;
    }
    char **argv = tc_process_argv();
    if (!argv)
        return 0; /* linked into another program: it keeps its libraries */
    const char *old = getenv("LD_LIBRARY_PATH");
    char path[4096];
    snprintf(path, sizeof path, "%s%s%s", f->cudnn_dir, old && *old ? ":" : "", old ? old : "");
    setenv("LD_LIBRARY_PATH", path, 1);
    setenv(S_REEXEC_ENV, f->cudnn_dir, 1);
    setenv(S_PROBE_ENV, s_answer, 1);
    tc_log_debug("re-executing with PyTorch's cuDNN from %s", f->cudnn_dir);
    fflush(stdout);
    fflush(stderr);
    execv("/proc/self/exe", argv);
    return tc_fail(TC_EIO, "could not start again with PyTorch's cuDNN (%s): %s", f->cudnn_dir,
                   strerror(errno));
}

int tc_gpu_prepare(const char *device_spec)
{
    if (!device_spec || (strncmp(device_spec, "cuda", 4) != 0 && strcmp(device_spec, "any") != 0))
        return 0;
    unsigned count = 0;
    char why[256];
    tc_backend_cuda.enumerate(&count, why, sizeof why);
    return count ? tc_gpu_use_framework_cudnn() : 0;
}
