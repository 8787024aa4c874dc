#include "cpu_blas.h"

#include "tc_error.h"

#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef void (*s_sgemm_fn)(const char *, const char *, const int *, const int *, const int *,
                           const float *, const float *, const int *, const float *, const int *,
                           const float *, float *, const int *);

struct tc_blas {
    void *handle;
    s_sgemm_fn sgemm;
    char name[96];
    char path[PATH_MAX];
};

static void s_identify(tc_blas_t *b)
{
    const char *(*ob_config)(void) = (const char *(*)(void))dlsym(b->handle, "openblas_get_config");
    if (ob_config) {
        const char *cfg = ob_config();
        char version[32] = "?";
        if (cfg)
            sscanf(cfg, "%*s %31s", version);
        int (*par)(void) = (int (*)(void))dlsym(b->handle, "openblas_get_parallel");
        int mode = par ? par() : -1;
        snprintf(b->name, sizeof b->name, "OpenBLAS %s%s", version,
                 mode == 0 ? " sequential" : mode == 1 ? " pthreads" : mode == 2 ? " openmp" : "");
        return;
    }
    const char *(*blis)(void) = (const char *(*)(void))dlsym(b->handle, "bli_info_get_version_str");
    if (blis) {
        snprintf(b->name, sizeof b->name, "BLIS %s", blis());
        return;
    }
    void (*mkl)(char *, int) = (void (*)(char *, int))dlsym(b->handle, "MKL_Get_Version_String");
    if (mkl) {
        char buf[256] = "";
        mkl(buf, sizeof buf);
        const char *p = buf;
        while (*p && !(p[0] >= '0' && p[0] <= '9' && p[1] == '.'))
            p++;
        snprintf(b->name, sizeof b->name, "MKL %.*s", (int)strspn(p, "0123456789."),
                 *p ? p : "?");
        return;
    }
    if (strstr(b->path, "atlas")) {
        snprintf(b->name, sizeof b->name, "ATLAS");
        return;
    }
    const char *base = strrchr(b->path, '/') ? strrchr(b->path, '/') + 1 : b->path;
    const char *v = strncmp(base, "libblas.so.", 11) == 0 ? base + 11 : "?";
    snprintf(b->name, sizeof b->name, "reference BLAS %s", v);
}

int tc_blas_open(const char *path, tc_blas_t **out)
{
    *out = NULL;
    const char *want = path && *path ? path : "libblas.so.3";
    tc_blas_t *b = calloc(1, sizeof *b);
    if (!b)
        return tc_fail(TC_ENOMEM, "out of memory opening the BLAS");
    b->handle = dlopen(want, RTLD_NOW | RTLD_LOCAL);
    if (!b->handle) {
        int rc = tc_fail(TC_ENOTFOUND, "no BLAS: %s (install the Debian package "
                                       "libopenblas0-openmp, or libblas3 for the reference BLAS)",
                         dlerror());
        free(b);
        return rc;
    }
    b->sgemm = (s_sgemm_fn)dlsym(b->handle, "sgemm_");
    if (!b->sgemm) {
        int rc = tc_fail(TC_ELIB, "%s has no sgemm_ (is it a BLAS?)", want);
        tc_blas_close(&b);
        return rc;
    }
    /* The file itself (libblas.so.3 is usually a chain of alternatives
     * links): the directory it was found in, and its name. */
    char origin[PATH_MAX] = "", found[PATH_MAX + 256];
    const char *base = strrchr(want, '/') ? strrchr(want, '/') + 1 : want;
    if (dlinfo(b->handle, RTLD_DI_ORIGIN, origin) == 0 && *origin)
        snprintf(found, sizeof found, "%s/%s", origin, base);
    else
        snprintf(found, sizeof found, "%s", want);
    if (!realpath(found, b->path))
        snprintf(b->path, sizeof b->path, "%s", found);
    s_identify(b);
    *out = b;
    return 0;
}

void tc_blas_close(tc_blas_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    if ((*self_p)->handle)
        dlclose((*self_p)->handle);
    free(*self_p);
    *self_p = NULL;
}

const char *tc_blas_name(const tc_blas_t *self) { return self->name; }
const char *tc_blas_path(const tc_blas_t *self) { return self->path; }

void tc_blas_sgemm(const tc_blas_t *self, char transa, char transb, int m, int n, int k,
                   float alpha, const float *a, int lda, const float *b, int ldb, float beta,
                   float *c, int ldc)
{
    self->sgemm(&transa, &transb, &m, &n, &k, &alpha, a, &lda, b, &ldb, &beta, c, &ldc);
}
