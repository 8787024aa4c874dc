/* tc_model_load_spec: "torchvision:NAME" through the PyTorch harness (with
 * a cache) or the committed exports, "FILE.py:FUNC" (a model built by a
 * function in a Python file) through the harness, else a path to an .onnx
 * file. */
#include "tc_model.h"
#include "tc_model_internal.h"

#include "tc_error.h"
#include "tc_log.h"
#include "tc_paths.h"
#include "tc_run.h"
#include "tc_sha256.h"
#include "tc_suggest.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define S_PREFIX "torchvision:"
#define S_PYTHON_PREFIX "python:"
/* The harness's model names (export_onnx.py --list), one a line, cached
 * beside the exports so that a name is checked without Python. */
#define S_NAMES_FILE "torchvision-models.txt"
#define S_MAX_NAMES 512

static bool s_have_pytorch(void)
{
    static int cached = -1;
    if (cached >= 0)
        return cached;
    char *argv[] = {(char *)tc_python(), "-c", "import torch, torchvision, onnx", NULL};
    char out[512];
    cached = access(argv[0], X_OK) == 0 && tc_run_capture(argv, true, out, sizeof out) == 0;
    if (!cached)
        tc_log_debug("PyTorch not usable through %s; using committed exports", argv[0]);
    return cached;
}

static int s_mkdirs(const char *path)
{
    char tmp[1024];
    snprintf(tmp, sizeof tmp, "%s", path);
    for (char *p = tmp + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        if (mkdir(tmp, 0755) < 0 && errno != EEXIST)
            return -1;
        *p = '/';
    }
    return mkdir(tmp, 0755) < 0 && errno != EEXIST ? -1 : 0;
}

static int s_cache_dir(char *buf, size_t size)
{
    const char *c = getenv("TRAINCAST_CACHE");
    int n;
    if (c && *c) {
        n = snprintf(buf, size, "%s/onnx", c);
    } else {
        const char *home = getenv("HOME");
        if (!home || !*home)
            return tc_fail(TC_EIO, "no cache directory: set TRAINCAST_CACHE or HOME");
        n = snprintf(buf, size, "%s/.cache/traincast/onnx", home);
    }
    if (n < 0 || (size_t)n >= size)
        return tc_fail(TC_EINVAL, "cache path too long");
    if (s_mkdirs(buf) < 0)
        return tc_fail(TC_EIO, "cannot create the cache directory %s: %s", buf, strerror(errno));
    return 0;
}

/* The committed exports' names, comma-separated, for messages. */
static void s_list_committed(const char *dir, char *buf, size_t size)
{
    buf[0] = '\0';
    DIR *d = opendir(dir);
    if (!d)
        return;
    size_t len = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t n = strlen(e->d_name);
        if (n < 6 || strcmp(e->d_name + n - 5, ".onnx"))
            continue;
        int w = snprintf(buf + len, size - len, "%s%.*s", len ? ", " : "", (int)(n - 5),
                         e->d_name);
        if (w < 0 || (size_t)w >= size - len)
            break;
        len += (size_t)w;
    }
    closedir(d);
}

/* Names, one a line in `text` (modified), into names[] (pointing into it). */
static size_t s_split_names(char *text, const char **names, size_t cap)
{
    size_t n = 0;
    for (char *save = NULL, *t = strtok_r(text, "\n", &save); t && n < cap;
         t = strtok_r(NULL, "\n", &save)) {
        if (*t && strspn(t, "abcdefghijklmnopqrstuvwxyz0123456789_") == strlen(t))
            names[n++] = t;
    }
    return n;
}

static bool s_listed(const char *name, const char *const *names, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (!strcmp(names[i], name))
            return true;
    }
    return false;
}

/* The cached list of the harness's names in `dir` into text (size bytes),
 * or false when there is none. */
static bool s_read_names(const char *dir, char *text, size_t size)
{
    char path[1200];
    snprintf(path, sizeof path, "%s/" S_NAMES_FILE, dir);
    FILE *f = fopen(path, "r");
    if (!f)
        return false;
    size_t n = fread(text, 1, size - 1, f);
    fclose(f);
    text[n] = '\0';
    return n > 0;
}

/* Ask the harness for its names (export_onnx.py --list: imports torchvision,
 * exports nothing) and cache them in `dir`. False when it cannot say. */
static bool s_list_names(const char *dir, char *text, size_t size)
{
    char script[1200], harness[1024];
    snprintf(script, sizeof script, "%s/export_onnx.py",
             tc_resource_dir(TC_DIR_HARNESS, harness, sizeof harness));
    char *argv[] = {(char *)tc_python(), script, "--list", NULL};
    if (tc_run_capture(argv, false, text, size) != 0 || !*text)
        return false;
    char path[1200], tmp[1300];
    snprintf(path, sizeof path, "%s/" S_NAMES_FILE, dir);
    snprintf(tmp, sizeof tmp, "%s.%ld.tmp", path, (long)getpid());
    FILE *f = fopen(tmp, "w");
    if (f) {
        bool ok = fputs(text, f) >= 0;
        ok = fclose(f) == 0 && ok;
        if (!ok || rename(tmp, path) < 0)
            unlink(tmp);
    }
    return true;
}

/* TC_ENOTFOUND for a name that is not among `names`, with the closest as a
 * suggestion, or the names themselves when none is close. */
static int s_unknown_name(const char *name, const char *const *names, size_t n, const char *what)
{
    const char *best = tc_suggest(name, names, n);
    if (best)
        return tc_fail(TC_ENOTFOUND, "'%s' is not %s: did you mean torchvision:%s?", name, what,
                       best);
    char list[4096];
    size_t len = 0;
    list[0] = '\0';
    for (size_t i = 0; i < n && len + 1 < sizeof list; i++) {
        int w = snprintf(list + len, sizeof list - len, "%s%s", i ? ", " : "", names[i]);
        if (w < 0 || (size_t)w >= sizeof list - len)
            break;
        len += (size_t)w;
    }
    return tc_fail(TC_ENOTFOUND, "'%s' is not %s; the names: %s", name, what,
                   n ? list : "none");
}

/* Check `name` against the harness's names before anything is exported:
 * from the cached list (a typo near a listed name fails at once, without
 * Python), else, when PyTorch is there, from a fresh list (cached for the
 * next time). Without PyTorch the committed exports decide. */
static int s_check_name(const char *name, const char *dir)
{
    static char text[32768];
    const char *names[S_MAX_NAMES];
    size_t n = 0;
    const char *what = "a torchvision classification model";
    if (s_read_names(dir, text, sizeof text)) {
        n = s_split_names(text, names, S_MAX_NAMES);
        if (s_listed(name, names, n))
            return 0;
        if (tc_suggest(name, names, n))
            return s_unknown_name(name, names, n, what);
    }
    /* No list yet, or a name far from every listed one (torchvision may have
     * been upgraded since): list again where PyTorch is. */
    if (!s_have_pytorch())
        return 0;
    if (!s_list_names(dir, text, sizeof text))
        return 0; /* the export says what went wrong */
    n = s_split_names(text, names, S_MAX_NAMES);
    return s_listed(name, names, n) ? 0 : s_unknown_name(name, names, n, what);
}

/* Export `arg` (a torchvision name, or FILE.py:FUNC) at `size` (0: its
 * default) to `path` through the harness; `label` names it in messages. */
static int s_export(const char *arg, const char *label, uint32_t size, const char *path)
{
    char script[1200], size_arg[16], harness[1024];
    snprintf(script, sizeof script, "%s/export_onnx.py",
             tc_resource_dir(TC_DIR_HARNESS, harness, sizeof harness));
    /* Python exits 2 for a missing script too: say so before it runs. */
    if (access(script, R_OK) != 0)
        return tc_fail(TC_ENOTFOUND, "%s: the PyTorch harness %s is missing (the "
                                     "traincast-common package installs it; "
                                     "TRAINCAST_HARNESS_DIR names another folder)",
                       label, script);
    snprintf(size_arg, sizeof size_arg, "%u", size);
    char *argv[] = {(char *)tc_python(), script,  (char *)arg,  "--output", (char *)path,
                    size ? "--input-size" : NULL, size_arg, NULL};
    tc_log_info("exporting %s with PyTorch (once; cached in %s)", label, path);
    char out[8192];
    int status = tc_run_capture(argv, true, out, sizeof out);
    if (status == 0) {
        const char *warn = strstr(out, "warning:");
        if (warn)
            tc_log_warn("%.*s", (int)strcspn(warn, "\n"), warn);
        return 0;
    }
    size_t len = strlen(out);
    const char *tail = len > 1500 ? out + len - 1500 : out;
    /* 2: no such model; 3: it cannot be built at that size. The script's
     * own line says which. */
    const char *why = strstr(out, "export_onnx: ");
    int n = why ? (int)strcspn(why + 13, "\n") : 0;
    while (n > 0 && (why[13 + n - 1] == '.' || why[13 + n - 1] == '!'))
        n--;
    if (status == 3)
        return tc_fail(TC_EINVAL, "%.*s; choose another --input-size", why ? n : (int)len,
                       why ? why + 13 : tail);
    if (status == 2 && !strchr(arg, ':'))
        return tc_fail(TC_ENOTFOUND, "'%s' is not a torchvision classification model; '%s %s "
                                     "--list' prints the names",
                       arg, argv[0], script);
    if (status == 2 && why)
        return tc_fail(TC_ENOTFOUND, "%.*s", n, why + 13);
    return tc_fail(TC_ECHILD, "exporting %s failed (exit %d): %s", label, status, tail);
}

/* TC_ENOTFOUND for a name without PyTorch and without a committed export:
 * the closest committed name, or what is committed. */
static int s_no_committed_export(const char *name, const char *data_dir)
{
    char list[4096], copy[4096];
    const char *names[S_MAX_NAMES];
    size_t n = 0;
    s_list_committed(data_dir, list, sizeof list);
    snprintf(copy, sizeof copy, "%s", list);
    for (char *save = NULL, *t = strtok_r(copy, ", ", &save); t && n < S_MAX_NAMES;
         t = strtok_r(NULL, ", ", &save))
        names[n++] = t;
    const char *best = tc_suggest(name, names, n);
    if (best)
        return tc_fail(TC_ENOTFOUND, "torchvision:%s: no committed export of that name: did you "
                                     "mean torchvision:%s? (without PyTorch, only the committed "
                                     "exports can be used)",
                       name, best);
    return tc_fail(TC_ENOTFOUND, "torchvision:%s: PyTorch is not available (%s cannot import "
                                 "torch, torchvision and onnx; set TRAINCAST_PYTHON) and there is "
                                 "no committed export; committed: %s",
                   name, tc_python(), *list ? list : "none");
}

static int s_load_torchvision(const char *name, const tc_model_opts_t *opts, tc_model_t **out)
{
    size_t n = strlen(name);
    if (!n || n > 64 || strspn(name, "abcdefghijklmnopqrstuvwxyz0123456789_") != n)
        return tc_fail(TC_EINVAL, "'%s' is not a torchvision model name (lowercase letters, "
                                  "digits and '_')",
                       name);
    uint32_t size = opts ? opts->input_size : 0;
    tc_model_opts_t o = opts ? *opts : (tc_model_opts_t){0};
    o.input_size = 0; /* the export is at the requested size already */
    char path[1200], dir[1024];
    int rc;
    char data_buf[1024];
    const char *data_dir = tc_resource_dir(TC_DIR_MODELS, data_buf, sizeof data_buf);
    /* A cached export needs no Python at all. */
    bool cache = s_cache_dir(dir, sizeof dir) == 0;
    if (cache) {
        if (size)
            snprintf(path, sizeof path, "%s/%s@%u.onnx", dir, name, size);
        else
            snprintf(path, sizeof path, "%s/%s.onnx", dir, name);
    }
    if (cache && access(path, R_OK) == 0) {
        /* use it */
    } else if (cache && (rc = s_check_name(name, dir)) < 0) {
        return rc;
    } else if (cache && s_have_pytorch()) {
        char label[128];
        snprintf(label, sizeof label, S_PREFIX "%s", name);
        rc = s_export(name, label, size, path);
        if (rc < 0)
            return rc;
    } else {
        tc_err_clear();
        snprintf(path, sizeof path, "%s/%s.onnx", data_dir, name);
        if (access(path, R_OK) != 0) {
            struct stat st;
            if (stat(data_dir, &st) != 0)
                return tc_fail(TC_ENOTFOUND, "torchvision:%s: PyTorch is not available (%s "
                                             "cannot import torch, torchvision and onnx; set "
                                             "TRAINCAST_PYTHON) and the weight-free exports "
                                             "%s are missing (the traincast-common package "
                                             "installs them; TRAINCAST_DATA_DIR names another "
                                             "folder)",
                               name, tc_python(), data_dir);
            return s_no_committed_export(name, data_dir);
        }
    }
    rc = tc_model_load_file(path, &o, out);
    if (rc < 0)
        return rc;
    uint32_t h;
    tc_model_input(*out, NULL, &h, NULL);
    if (size && h != size) {
        tc_model_destroy(out);
        return tc_fail(TC_EUNSUPPORTED, "torchvision:%s at input size %u needs PyTorch to "
                                        "re-export it (the committed export is at %u); install "
                                        "python3-torch and python3-torchvision or set "
                                        "TRAINCAST_PYTHON",
                       name, size, h);
    }
    return tc_model_set_identity(*out, name, S_PREFIX);
}

/* "FILE.py:FUNC": where the spec names a Python file, its end (the ':' of
 * ".py:"), else NULL. */
static const char *s_python_sep(const char *spec)
{
    const char *sep = NULL;
    for (const char *p = strstr(spec, ".py:"); p; p = strstr(p + 1, ".py:"))
        sep = p + 3;
    return sep;
}

static bool s_identifier(const char *s, size_t n)
{
    static const char first[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_";
    if (!n || n > 64 || !strchr(first, s[0]))
        return false;
    for (size_t i = 1; i < n; i++) {
        if (!strchr(first, s[i]) && !(s[i] >= '0' && s[i] <= '9'))
            return false;
    }
    return true;
}

/* A model built by a function in a Python file, exported through the
 * harness like a torchvision one and cached under the file's SHA-256 (an
 * edited file exports again); its identity is python:STEM.FUNC. */
static int s_load_python(const char *spec, const char *sep, const tc_model_opts_t *opts,
                         tc_model_t **out)
{
    char file[1024];
    const char *func = sep + 1;
    if ((size_t)(sep - spec) >= sizeof file)
        return tc_fail(TC_EINVAL, "model %s: the file's path is too long", spec);
    snprintf(file, sizeof file, "%.*s", (int)(sep - spec), spec);
    if (!s_identifier(func, strlen(func)))
        return tc_fail(TC_EINVAL, "model %s: '%s' is not a Python function name (FILE.py:FUNC, "
                                  "FUNC a function of FILE.py that returns a torch.nn.Module)",
                       spec, func);
    const char *base = strrchr(file, '/');
    base = base ? base + 1 : file;
    size_t stem_len = strlen(base) - 3; /* without ".py" */
    if (!s_identifier(base, stem_len))
        return tc_fail(TC_EINVAL, "model %s: the file's name '%s' is not a Python module name "
                                  "(letters, digits and '_')",
                       spec, base);
    FILE *f = fopen(file, "rb");
    if (!f)
        return tc_fail(TC_ENOTFOUND, "model %s: cannot read %s: %s", spec, file, strerror(errno));
    tc_sha256_t h;
    tc_sha256_init(&h);
    char buf[8192], hex[65];
    size_t got;
    while ((got = fread(buf, 1, sizeof buf, f)) > 0)
        tc_sha256_update(&h, buf, got);
    bool bad = ferror(f);
    fclose(f);
    if (bad)
        return tc_fail(TC_EIO, "model %s: reading %s failed", spec, file);
    tc_sha256_final_hex(&h, hex);

    char name[160], dir[1024], path[1400];
    snprintf(name, sizeof name, "%.*s.%s", (int)stem_len, base, func);
    uint32_t size = opts ? opts->input_size : 0;
    int rc = s_cache_dir(dir, sizeof dir);
    if (rc < 0)
        return rc;
    if (size)
        snprintf(path, sizeof path, "%s/python/%s-%.12s@%u.onnx", dir, name, hex, size);
    else
        snprintf(path, sizeof path, "%s/python/%s-%.12s.onnx", dir, name, hex);
    if (access(path, R_OK) != 0) {
        if (!s_have_pytorch())
            return tc_fail(TC_ENOTFOUND, "model %s: PyTorch is needed to build it (%s cannot "
                                         "import torch, torchvision and onnx; set "
                                         "TRAINCAST_PYTHON), or export it to ONNX yourself "
                                         "and give the .onnx file",
                           spec, tc_python());
        char sub[1100];
        snprintf(sub, sizeof sub, "%s/python", dir);
        if (s_mkdirs(sub) < 0)
            return tc_fail(TC_EIO, "cannot create %s: %s", sub, strerror(errno));
        char label[1200];
        snprintf(label, sizeof label, "model %s", spec);
        if ((rc = s_export(spec, label, size, path)) < 0)
            return rc;
    }
    tc_model_opts_t o = opts ? *opts : (tc_model_opts_t){0};
    o.input_size = 0; /* the export is at the requested size already */
    if ((rc = tc_model_load_file(path, &o, out)) < 0)
        return rc;
    return tc_model_set_identity(*out, name, S_PYTHON_PREFIX);
}

static bool s_bare(const char *spec)
{
    return !strchr(spec, ':') && !strchr(spec, '/') && !strstr(spec, ".onnx");
}

const char *tc_model_spec_expand(const char *spec, char *out, size_t size)
{
    snprintf(out, size, "%s%s", s_bare(spec) ? S_PREFIX : "", spec);
    return out;
}

bool tc_model_spec_is_file(const char *spec)
{
    return !s_bare(spec) && strncmp(spec, S_PREFIX, strlen(S_PREFIX)) != 0;
}

int tc_model_load_spec(const char *spec, const tc_model_opts_t *opts, tc_model_t **out)
{
    *out = NULL;
    if (!spec || !*spec)
        return tc_fail(TC_EINVAL, "empty model spec; give FILE.onnx, torchvision:NAME or "
                                  "FILE.py:FUNC");
    if (!strncmp(spec, S_PREFIX, strlen(S_PREFIX)))
        return s_load_torchvision(spec + strlen(S_PREFIX), opts, out);
    const char *sep = s_python_sep(spec);
    if (sep)
        return s_load_python(spec, sep, opts, out);
    int rc = tc_model_load_file(spec, opts, out);
    if (rc == TC_ENOTFOUND && !strchr(spec, '/') && !strstr(spec, ".onnx"))
        return tc_err_context(rc, "(for a torchvision model write torchvision:%s)", spec);
    return rc;
}
