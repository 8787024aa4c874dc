#include "gpu_framework.h"


#include "tc_error.h"
#include "tc_json.h"
#include "tc_log.h"
#include "tc_paths.h"
#include "tc_run.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define S_PROBE_ENV "TRAINCAST_GPU_FRAMEWORK_PROBE"

static tc_gpu_framework_t s_info;
static pthread_once_t s_once = PTHREAD_ONCE_INIT;

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
    s_copy(f->cudnn_path, sizeof f->cudnn_path, root, "cudnn_path");
    const tc_json_value_t *libs = tc_json_get(root, "libraries");
    s_copy(f->nvrtc_path, sizeof f->nvrtc_path, libs, "nvrtc");
    s_copy(f->cublaslt_path, sizeof f->cublaslt_path, libs, "cublasLt");
    s_copy(f->cublas_path, sizeof f->cublas_path, libs, "cublas");
    f->cuda = tc_json_bool(tc_json_get(root, "cuda"));
    int64_t n = 0;
    f->cudnn_number = tc_json_int(tc_json_get(root, "cudnn_number"), &n) ? (long)n : 0;
    const tc_json_value_t *set = tc_json_get(root, "settings");
    f->cudnn_enabled = s_setting_true(set, "torch.backends.cudnn.enabled", true);
    f->deterministic = s_setting_true(set, "torch.backends.cudnn.deterministic", false) ||
                       s_setting_true(set, "torch.are_deterministic_algorithms_enabled", false);
    f->benchmark = s_setting_true(set, "torch.backends.cudnn.benchmark", false);
    const char *override = tc_json_string(tc_json_get(set, "env.NVIDIA_TF32_OVERRIDE"));
    f->allow_tf32 = s_setting_true(set, "torch.backends.cudnn.allow_tf32", true) &&
                    !(override && !strcmp(override, "0"));
    const char *limit = tc_json_string(tc_json_get(set, "torch.backends.cudnn.benchmark_limit"));
    f->benchmark_limit = limit ? atoi(limit) : 0;
    f->found = *f->framework && *f->version;
    if (!f->found)
        snprintf(f->why, sizeof f->why, "the framework probe named no framework");
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

int tc_cudnn_source(const char *framework_path, const char *choice, tc_cudnn_source_t *out,
                    bool *fallback)
{
    *fallback = false;
    if (choice && *choice == '/') {
        *out = TC_CUDNN_FILE;
        return 0;
    }
    if (choice && *choice && strcmp(choice, "system") && strcmp(choice, "framework"))
        return tc_fail(TC_EUSAGE, "TRAINCAST_CUDNN must be framework (the default), system or "
                                  "the absolute path of a libcudnn file (got '%s')",
                       choice);
    if (choice && !strcmp(choice, "system")) {
        *out = TC_CUDNN_SYSTEM;
        return 0;
    }
    *out = framework_path && *framework_path ? TC_CUDNN_FRAMEWORK : TC_CUDNN_SYSTEM;
    *fallback = *out == TC_CUDNN_SYSTEM;
    return 0;
}
