/* The BLAS the framework calls, opened by the agent so that PyTorch's
 * native convolutions (im2col + GEMM) are timed on the very same library:
 * Debian's PyTorch calls the Fortran sgemm_ of libblas.so.3 (through
 * at::native::cpublas::gemm), whichever implementation the libblas.so.3
 * alternative selects (the reference BLAS, OpenBLAS, BLIS, ...). */
#ifndef TC_CPU_BLAS_H
#define TC_CPU_BLAS_H

#include <stddef.h>

typedef struct tc_blas tc_blas_t;

/* Open the BLAS at `path` (NULL or "": libblas.so.3 as the dynamic linker
 * finds it) and identify it. TC_ENOTFOUND naming the Debian packages when
 * there is none; TC_ELIB when it has no sgemm_. */
int tc_blas_open(const char *path, tc_blas_t **out);
void tc_blas_close(tc_blas_t **self_p);

/* "OpenBLAS 0.3.21 openmp", "BLIS 0.9.0", "MKL 2020.0.4", "reference BLAS
 * 3.11.0" (agent/harness/cpu_env.py names them the same way). */
const char *tc_blas_name(const tc_blas_t *self);
/* The library's real path. */
const char *tc_blas_path(const tc_blas_t *self);

/* C = alpha op(A) op(B) + beta C, column-major, as Fortran sgemm_ with
 * transa/transb 'N' or 'T'. */
void tc_blas_sgemm(const tc_blas_t *self, char transa, char transb, int m, int n, int k,
                   float alpha, const float *a, int lda, const float *b, int ldb, float beta,
                   float *c, int ldc);

#endif
