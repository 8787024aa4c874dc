#include "allocator.h"

#include "tc_error.h"
#include "tc_log.h"

#include <dlfcn.h>
#include <errno.h>
#include <gnu/libc-version.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

/* Set (to the choice) in the environment of the re-executed process. */
#define REEXEC_ENV "TRAINCAST_ALLOCATOR_REEXEC"

typedef struct {
    const char *name;
    const char *library; /* file to preload; NULL: glibc's own malloc */
    const char *package; /* the Debian package that ships it */
    const char *env[3];  /* NAME=VALUE set with it */
} s_alloc_t;

/* jemalloc: the settings of PyTorch's launcher (run_cpu.py,
 * set_memory_allocator) with purging off, so freed pages are reused rather
 * than returned (its default decay returns them within seconds, and the
 * next tensor faults them in again). glibc: never serve a request with
 * mmap (whose blocks go back to the kernel on free) and never trim. */
static const s_alloc_t s_allocs[] = {
    {"tcmalloc", "libtcmalloc_minimal.so.4", "libtcmalloc-minimal4", {NULL}},
    {"jemalloc", "libjemalloc.so.2", "libjemalloc2",
     {"MALLOC_CONF=oversize_threshold:1,background_thread:true,metadata_thp:auto,"
      "dirty_decay_ms:-1,muzzy_decay_ms:-1",
      NULL}},
    {"glibc-tuned", NULL, "libc6",
     {"MALLOC_MMAP_MAX_=0", "MALLOC_TRIM_THRESHOLD_=4000000000", NULL}},
    {"system", NULL, "libc6", {NULL}},
};
#define N_ALLOCS (sizeof s_allocs / sizeof s_allocs[0])

static char **s_argv;
static const char *s_choice = "system";

const char *tc_allocator_choices(void) { return "tcmalloc, jemalloc, glibc-tuned or system"; }

static const s_alloc_t *s_find(const char *name)
{
    for (size_t i = 0; name && i < N_ALLOCS; i++)
        if (!strcmp(s_allocs[i].name, name))
            return &s_allocs[i];
    return NULL;
}

int tc_allocator_check(const char *name)
{
    if (!s_find(name))
        return tc_fail(TC_EUSAGE, "--allocator: unknown allocator '%s'; choose %s", name ? name : "",
                       tc_allocator_choices());
    return 0;
}

void tc_allocator_set_argv(int argc, char **argv)
{
    (void)argc;
    s_argv = argv;
}

const char *tc_allocator_choice(void) { return s_choice; }

/* The shared object whose malloc this process calls: the first definition
 * after the program in the dynamic linker's search order (a preloaded
 * allocator, else libc). This file is linked into the program itself, so
 * RTLD_NEXT starts the search right after it. agent/harness/cpu_env.py
 * walks the same order. */
static void s_malloc_object(char *buf, size_t size)
{
    buf[0] = '\0';
    void *fn = dlsym(RTLD_NEXT, "malloc");
    Dl_info info;
    if (fn && dladdr(fn, &info) && info.dli_fname)
        snprintf(buf, size, "%s", info.dli_fname);
}

static bool s_env_is(const char *name, const char *value)
{
    const char *v = getenv(name);
    return v && !strcmp(v, value);
}

static bool s_glibc_tuned(void)
{
    return s_env_is("MALLOC_MMAP_MAX_", "0") && getenv("MALLOC_TRIM_THRESHOLD_") &&
           atof(getenv("MALLOC_TRIM_THRESHOLD_")) >= 1e9;
}

void tc_allocator_describe(char *buf, size_t size)
{
    char obj[1024];
    s_malloc_object(obj, sizeof obj);
    const char *base = strrchr(obj, '/') ? strrchr(obj, '/') + 1 : obj;
    if (strstr(base, "tcmalloc")) {
        const char *(*ver)(int *, int *, const char **) =
            (const char *(*)(int *, int *, const char **))dlsym(RTLD_DEFAULT, "tc_version");
        int major = 0, minor = 0;
        const char *patch = "";
        if (ver)
            ver(&major, &minor, &patch);
        snprintf(buf, size, "tcmalloc %d.%d%s", major, minor, patch ? patch : "");
        return;
    }
    if (strstr(base, "jemalloc")) {
        int (*ctl)(const char *, void *, size_t *, void *, size_t) =
            (int (*)(const char *, void *, size_t *, void *, size_t))dlsym(RTLD_DEFAULT, "mallctl");
        const char *version = "?";
        ssize_t dirty = 0, muzzy = 0;
        size_t vs = sizeof version, ds = sizeof dirty;
        if (ctl) {
            ctl("version", &version, &vs, NULL, 0);
            ctl("opt.dirty_decay_ms", &dirty, &ds, NULL, 0);
            ds = sizeof muzzy;
            ctl("opt.muzzy_decay_ms", &muzzy, &ds, NULL, 0);
        }
        int vlen = (int)strcspn(version, "-");
        snprintf(buf, size, "jemalloc %.*s decay %zd/%zd", vlen, version, dirty, muzzy);
        return;
    }
    if (strstr(base, "libc.so") || strstr(base, "libc-")) {
        snprintf(buf, size, "glibc %s%s", gnu_get_libc_version(), s_glibc_tuned() ? " tuned" : "");
        return;
    }
    snprintf(buf, size, "%s", *base ? base : "unknown allocator");
}

/* Whether the process already allocates with `a`. */
static bool s_active(const s_alloc_t *a)
{
    char obj[1024];
    s_malloc_object(obj, sizeof obj);
    if (a->library)
        return strstr(obj, a->library) != NULL || (strstr(obj, a->name) != NULL);
    bool glibc = strstr(obj, "libc.so") != NULL;
    if (!strcmp(a->name, "glibc-tuned"))
        return glibc && s_glibc_tuned();
    return true; /* system: whatever is there */
}

/* The library's path: next to this program in ../lib (a relocatable bundle,
 * deploy/package.sh --bundle), else in the dynamic linker's usual
 * directories (those of this process's libc first), or "" if it is not
 * installed. */
static void s_locate(const char *file, char *out, size_t size)
{
    out[0] = '\0';
    char exe[1024], bundled[1200];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n > 0) {
        exe[n] = '\0';
        snprintf(bundled, sizeof bundled, "%s/../lib/%s", dirname(exe), file);
        if (access(bundled, R_OK) == 0) {
            char *real = realpath(bundled, NULL);
            snprintf(out, size, "%s", real ? real : bundled);
            free(real);
            return;
        }
    }
    char libc[1024] = "";
    Dl_info info;
    int (*fn)(const char *) = puts;
    if (dladdr((void *)fn, &info) && info.dli_fname)
        snprintf(libc, sizeof libc, "%s", info.dli_fname);
    char dir[1024], usr_dir[1100] = "";
    snprintf(dir, sizeof dir, "%s", libc);
    char *d = dirname(dir);
    if (strncmp(d, "/usr/", 5) != 0)
        snprintf(usr_dir, sizeof usr_dir, "/usr%s", d);
    const char *dirs[] = {d, usr_dir, "/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu",
                          "/usr/lib64", "/usr/lib", "/usr/local/lib"};
    for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++) {
        if (!*dirs[i] || !strcmp(dirs[i], "."))
            continue;
        char p[2048];
        snprintf(p, sizeof p, "%s/%s", dirs[i], file);
        if (access(p, R_OK) == 0) {
            snprintf(out, size, "%s", p);
            return;
        }
    }
}

char **tc_process_argv(void) { return s_argv; }

int tc_allocator_apply(const char *name)
{
    bool explicit_choice = name && *name;
    if (!explicit_choice) {
        const char *env = getenv("TRAINCAST_ALLOCATOR");
        explicit_choice = env && *env;
        name = explicit_choice ? env : TC_ALLOCATOR_DEFAULT;
    }
    int rc = tc_allocator_check(name);
    if (rc < 0)
        return rc;
    const s_alloc_t *a = s_find(name);
    s_choice = a->name;
    if (s_active(a))
        return 0;
    if (!s_argv)
        return 0; /* linked into another program: it keeps its allocator */
    if (dlsym(RTLD_DEFAULT, "__asan_init")) {
        tc_log_warn("built with AddressSanitizer, which brings its own allocator: not preloading "
                    "%s",
                    a->name);
        s_choice = "system";
        return 0;
    }
    if (s_env_is(REEXEC_ENV, a->name))
        return tc_fail(TC_EUNSUPPORTED, "--allocator %s: the process was started again with it "
                                        "in LD_PRELOAD, but it is not the allocator in use (is "
                                        "LD_PRELOAD ignored here?)",
                       a->name);
    char path[2048] = "";
    if (a->library) {
        s_locate(a->library, path, sizeof path);
        if (!*path) {
            if (explicit_choice)
                return tc_fail(TC_ENOTFOUND, "--allocator %s: %s is not installed; install the "
                                             "Debian package %s (deploy/setup.sh does), or choose "
                                             "--allocator system",
                               a->name, a->library, a->package);
            tc_log_warn("the default allocator %s is not installed (%s; Debian package %s): "
                        "measuring with the system allocator, a different CPU device (install it "
                        "with deploy/setup.sh)",
                        a->name, a->library, a->package);
            s_choice = "system";
            return 0;
        }
        const char *old = getenv("LD_PRELOAD");
        char preload[4096];
        snprintf(preload, sizeof preload, "%s%s%s", path, old && *old ? ":" : "",
                 old ? old : "");
        setenv("LD_PRELOAD", preload, 1);
    }
    for (size_t i = 0; a->env[i]; i++) {
        const char *eq = strchr(a->env[i], '=');
        char key[64];
        snprintf(key, sizeof key, "%.*s", (int)(eq - a->env[i]), a->env[i]);
        setenv(key, eq + 1, 1);
    }
    setenv(REEXEC_ENV, a->name, 1);
    tc_log_debug("re-executing with allocator %s%s%s", a->name, *path ? " from " : "", path);
    fflush(stdout);
    fflush(stderr);
    execv("/proc/self/exe", s_argv);
    return tc_fail(TC_EIO, "--allocator %s: could not execute /proc/self/exe again: %s", a->name,
                   strerror(errno));
}
