#include "cpu_framework.h"

#include "tc_json.h"
#include "tc_log.h"
#include "tc_paths.h"
#include "tc_run.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static tc_framework_t s_info;
static pthread_once_t s_once = PTHREAD_ONCE_INIT;

static void s_copy(char *dst, size_t size, const tc_json_value_t *root, const char *key)
{
    const char *v = tc_json_string(tc_json_get(root, key));
    snprintf(dst, size, "%s", v ? v : "");
}

/* The probe's batched-matmul timing; left at 0 ms unless every field is
 * there and in range (sizes of 1 to 4096, a positive time). */
static void s_bmm_split(tc_framework_t *f, const tc_json_value_t *v)
{
    const char *keys[] = {"count", "m", "n", "k"};
    int64_t n[4];
    for (int i = 0; i < 4; i++)
        if (!tc_json_int(tc_json_get(v, keys[i]), &n[i]) || n[i] < 1 || n[i] > 4096)
            return;
    double ms = tc_json_number(tc_json_get(v, "ms"));
    if (!(ms > 0))
        return;
    f->bmm_split.count = (unsigned)n[0], f->bmm_split.m = (unsigned)n[1];
    f->bmm_split.n = (unsigned)n[2], f->bmm_split.k = (unsigned)n[3];
    f->bmm_split.ms = ms;
}

static void s_probe(void)
{
    tc_framework_t *f = &s_info;
    char harness[1024], script[1100];
    snprintf(script, sizeof script, "%s/cpu_env.py",
             tc_resource_dir(TC_DIR_HARNESS, harness, sizeof harness));
    /* "system": the probe keeps this process's allocator (its preload is
     * inherited), whatever TRAINCAST_TRACE_ALLOCATOR says. */
    char *argv[] = {(char *)tc_python(), script, "--probe", "--allocator", "system", NULL};
    if (access(argv[0], X_OK) != 0) {
        snprintf(f->why, sizeof f->why, "no Python at %s (set TRAINCAST_PYTHON)", argv[0]);
        return;
    }
    char out[8192];
    int status = tc_run_capture(argv, false, out, sizeof out);
    /* The answer is the last line. */
    size_t len = strlen(out);
    while (len && out[len - 1] == '\n')
        out[--len] = '\0';
    const char *line = strrchr(out, '\n') ? strrchr(out, '\n') + 1 : out;
    tc_json_t *doc = NULL;
    if (tc_json_parse(line, strlen(line), NULL, &doc) < 0) {
        snprintf(f->why, sizeof f->why, "%s %s --probe exited %d without an answer: %.300s",
                 argv[0], script, status, out);
        return;
    }
    const tc_json_value_t *root = tc_json_root(doc);
    const char *type = tc_json_string(tc_json_get(root, "type"));
    if (status != 0 || !type || strcmp(type, "probe") != 0) {
        const char *msg = tc_json_string(tc_json_get(root, "message"));
        snprintf(f->why, sizeof f->why, "%s", msg ? msg : "the probe failed");
        tc_json_destroy(&doc);
        return;
    }
    s_copy(f->framework, sizeof f->framework, root, "framework");
    s_copy(f->version, sizeof f->version, root, "framework_version");
    s_copy(f->allocator, sizeof f->allocator, root, "allocator");
    s_copy(f->blas, sizeof f->blas, root, "blas");
    s_copy(f->blas_path, sizeof f->blas_path, root, "blas_path");
    f->mkldnn = tc_json_bool(tc_json_get(root, "mkldnn"));
    s_bmm_split(f, tc_json_get(root, "bmm_split"));
    f->found = *f->framework && *f->version;
    if (!f->found)
        snprintf(f->why, sizeof f->why, "the probe named no framework");
    tc_json_destroy(&doc);
    tc_log_debug("framework: %s %s, allocator %s, blas %s (%s)", f->framework, f->version,
                 f->allocator, f->blas, f->blas_path);
}

const tc_framework_t *tc_framework_probe(void)
{
    pthread_once(&s_once, s_probe);
    return &s_info;
}
