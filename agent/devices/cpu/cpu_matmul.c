/* Matmul plans on the CPU: the call PyTorch 1.13 makes for a float32
 * linear / addmm / mm / bmm / matmul in Debian's build (BLAS_INFO=generic,
 * no MKL), ported from aten/src/ATen/native/LinearAlgebra.cpp and
 * CPUBlas.cpp of v1.13.0:
 *
 *   mm, addmm      addmm_impl_cpu_: the result is row-major, so the
 *                  operands are swapped and the call is at::native::cpublas
 *                  ::gemm (column-major), which for float goes to the
 *                  Fortran sgemm_ of libblas.so.3 (use_blas_gemm holds for
 *                  every size here). addmm first copies the broadcast bias
 *                  into the result and calls sgemm_ with beta = 1.
 *   bmm            bmm_out_or_baddbmm_: a product of fewer than 400
 *                  multiply-accumulates runs baddbmm_cpu_kernel, plain
 *                  loops; larger ones (without MKL there is no batched
 *                  call) go product by product through addmm_impl_cpu_,
 *                  one sgemm_ each. Around each product that split loop
 *                  makes three Tensor::select views and runs
 *                  addmm_impl_cpu_'s checks, resize_ and resolve_conj: the
 *                  framework's own work, which a loop of sgemm_ calls does
 *                  not do. It is measured, not modelled
 *                  (s_bmm_product_ms), and each run of a split bmm
 *                  adds it once per product to the time it took.
 *
 * The GEMM of each training direction is tc_matmul_step_gemm's; operands
 * are stored contiguous (a transposed operand as the transpose it is a
 * view of). The result is allocated once, outside the timing. With cold
 * operands (operands.h) each run reads the next of K copies of A, B and
 * the bias and writes the next of K results, as the conv plans do
 * (cpu_cold.h). */
#include "cpu_cold.h"
#include "cpu_framework.h"
#include "cpu_internal.h"

#include "tc_log.h"
#include "tc_matmul_step.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct {
    tc_cpu_ctx_t *dev;
    tc_gemm_t g;
    bool naive;     /* baddbmm_cpu_kernel */
    double framework_ms; /* the split loop's own cost per run */
    float *t[TC_MM_TENSOR_COUNT];
    size_t n[TC_MM_TENSOR_COUNT];
    tc_cpu_cold_t cold; /* copies of the operands with cold operands */
} s_plan_t;

static const char *const s_names[TC_MM_TENSOR_COUNT] = {"A", "B", "C", "bias"};

static double s_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* baddbmm_cpu_kernel<float, is_bmm = true>: r[i][j] = sum_k s1[i][k] *
 * s2[k][j], products in order (its parallel_for over the batch runs them
 * on one thread at these sizes). */
static void s_naive(const tc_gemm_t *g, const float *a, const float *b, float *c)
{
    int64_t m = (int64_t)g->m, n = (int64_t)g->n, k = (int64_t)g->k;
    for (uint64_t p = 0; p < g->count; p++) {
        const float *ap = a + p * (uint64_t)(m * k), *bp = b + p * (uint64_t)(k * n);
        float *cp = c + p * (uint64_t)(m * n);
        for (int64_t i = 0; i < m; i++)
            for (int64_t j = 0; j < n; j++) {
                float acc = 0;
                for (int64_t l = 0; l < k; l++)
                    acc += (g->trans_a ? ap[l * m + i] : ap[i * k + l]) *
                           (g->trans_b ? bp[j * k + l] : bp[l * n + j]);
                cp[i * n + j] = acc;
            }
    }
}

/* addmm_impl_cpu_ on row-major operands: C^T = op(B)^T op(A)^T in
 * column-major terms, B first. */
static void s_blas(const tc_blas_t *blas, const tc_gemm_t *g, const float *a, const float *b,
                   const float *bias, float *c)
{
    int m = (int)g->m, n = (int)g->n, k = (int)g->k;
    int lda = g->trans_a ? m : k, ldb = g->trans_b ? k : n;
    for (uint64_t p = 0; p < g->count; p++) {
        float *cp = c + p * g->m * g->n;
        if (bias)
            for (int i = 0; i < m; i++)
                memcpy(cp + (size_t)i * (size_t)n, bias, (size_t)n * sizeof *bias);
        tc_blas_sgemm(blas, g->trans_b ? 'T' : 'N', g->trans_a ? 'T' : 'N', n, m, k, 1.0f,
                      b + p * g->k * g->n, ldb, a + p * g->m * g->k, lda, bias ? 1.0f : 0.0f,
                      cp, n);
    }
}

/* The loop below is timed as the probe times PyTorch's (cpu_env.py,
 * bmm_split_ms): the fastest call of S_SPLIT_BLOCKS blocks, each on
 * operands newly allocated while the earlier ones are kept. */
enum { S_SPLIT_BLOCKS = 6, S_SPLIT_WARMUP = 3, S_SPLIT_REPS = 15 };

/* The framework's cost per product of a batched matmul on its split path
 * besides the product's sgemm_, in ms: PyTorch's time for the probe's bmm
 * `torch` less this BLAS's loop on the same products, per product, never
 * below 0; 0 without a timing or a BLAS. */
static double s_bmm_product_ms(const tc_blas_t *blas, const tc_bmm_split_t *torch)
{
    if (!blas || !(torch->ms > 0) || !torch->count)
        return 0;
    tc_gemm_t g = {.count = torch->count, .m = torch->m, .n = torch->n, .k = torch->k};
    const size_t n[3] = {g.count * g.m * g.k, g.count * g.k * g.n, g.count * g.m * g.n};
    float *t[S_SPLIT_BLOCKS][3] = {{NULL}};
    double best = -1;
    for (int blk = 0; blk < S_SPLIT_BLOCKS; blk++) {
        for (int i = 0; i < 3; i++) {
            t[blk][i] = malloc(n[i] * sizeof(float));
            if (!t[blk][i])
                goto out;
            for (size_t j = 0; j < n[i]; j++)
                t[blk][i][j] = tc_random_value((uint64_t)(3 * blk + i), j);
        }
        for (int r = 0; r < S_SPLIT_WARMUP + S_SPLIT_REPS; r++) {
            double t0 = s_now_ms();
            s_blas(blas, &g, t[blk][0], t[blk][1], NULL, t[blk][2]);
            double ms = s_now_ms() - t0;
            if (r >= S_SPLIT_WARMUP && (best < 0 || ms < best))
                best = ms;
        }
    }
out:
    for (int blk = 0; blk < S_SPLIT_BLOCKS; blk++)
        for (int i = 0; i < 3; i++)
            free(t[blk][i]);
    if (best < 0)
        return 0;
    double per = (torch->ms - best) / (double)g.count;
    tc_log_debug("a split bmm's product costs the framework %.3f us besides its sgemm_ "
                 "(PyTorch %.4f ms, this loop %.4f ms for %u products of %ux%u by %ux%u)",
                 per * 1e3, torch->ms, best, torch->count, torch->m, torch->k, torch->k,
                 torch->n);
    return per > 0 ? per : 0;
}

/* The device's cost per product, measured once, when its first split bmm
 * plan is made (no other device work pays for it). */
static double s_device_product_ms(tc_cpu_ctx_t *dev)
{
    if (dev->bmm_product_ms < 0) {
        const tc_framework_t *f = tc_framework_probe();
        dev->bmm_product_ms = f->found ? s_bmm_product_ms(dev->blas, &f->bmm_split) : 0;
    }
    return dev->bmm_product_ms;
}

void tc_cpu_matmul_destroy(void *plan)
{
    s_plan_t *p = plan;
    if (!p)
        return;
    tc_cpu_cold_release(&p->cold);
    for (int i = 0; i < TC_MM_TENSOR_COUNT; i++)
        free(p->t[i]);
    free(p);
}

int tc_cpu_matmul_create(void *ctx, const tc_matmul_spec_t *spec, void **plan)
{
    *plan = NULL;
    tc_cpu_ctx_t *dev = ctx;
    if (spec->config.dtype != TRAINCAST__V1__DTYPE__DTYPE_FP32)
        return tc_fail(TC_EUNSUPPORTED, "CPU matmul benchmarks run in fp32, not %s",
                       tc_dtype_name(spec->config.dtype));
    if (!dev->blas)
        return tc_fail(TC_ENOTFOUND, "no BLAS to run matmuls on: %s", dev->blas_why);
    s_plan_t *p = calloc(1, sizeof *p);
    if (!p)
        return tc_fail(TC_ENOMEM, "out of memory creating a matmul plan");
    p->dev = dev;
    int rc = tc_matmul_step_gemm(&spec->config, spec->direction, &p->g);
    if (rc < 0)
        goto err;
    const tc_gemm_t *g = &p->g;
    if (g->m > INT32_MAX || g->n > INT32_MAX || g->k > INT32_MAX) {
        rc = tc_fail(TC_EUNSUPPORTED, "a GEMM of %llu x %llu x %llu is beyond the BLAS's int "
                                      "sizes",
                     (unsigned long long)g->m, (unsigned long long)g->n,
                     (unsigned long long)g->k);
        goto err;
    }
    p->naive = !tc_matmul_is_mm(&spec->config) && g->m * g->n * g->k < 400;
    if (!tc_matmul_is_mm(&spec->config) && !p->naive)
        p->framework_ms = (double)g->count * s_device_product_ms(dev);
    for (int i = 0; i < TC_MM_TENSOR_COUNT; i++) {
        p->n[i] = tc_gemm_tensor_count(g, (tc_mm_tensor_t)i);
        if (!p->n[i])
            continue;
        /* PyTorch's CPU allocator aligns to 64 bytes. */
        void *mem = NULL;
        if (posix_memalign(&mem, 64, p->n[i] * sizeof(float)) != 0)
            mem = NULL;
        p->t[i] = mem;
        if (!p->t[i]) {
            rc = tc_fail(TC_ENOMEM, "out of memory for a %zu-element matmul operand", p->n[i]);
            goto err;
        }
        for (size_t j = 0; j < p->n[i]; j++)
            p->t[i][j] = i == TC_MM_TENSOR_C ? 0.0f : tc_random_value(spec->seed + (uint64_t)i, j);
    }
    uint64_t bytes = 0;
    for (int i = 0; i < TC_MM_TENSOR_COUNT; i++)
        bytes += p->n[i] * sizeof(float);
    rc = tc_cpu_cold_init(&p->cold, dev, bytes);
    for (int i = 0; rc == 0 && i < TC_MM_TENSOR_COUNT; i++)
        if (p->t[i])
            rc = i == TC_MM_TENSOR_C
                     ? tc_cpu_cold_add_output(&p->cold, (unsigned)i, s_names[i],
                                              p->n[i] * sizeof(float))
                     : tc_cpu_cold_add_input(&p->cold, (unsigned)i, s_names[i], p->t[i],
                                             p->n[i] * sizeof(float));
    if (rc < 0)
        goto err;
    rc = tc_cpu_apply_threads(dev);
    if (rc < 0)
        goto err;
    *plan = p;
    return 0;
err:
    tc_cpu_matmul_destroy(p);
    return rc;
}

/* Operand t as the current run uses it: its copy with cold operands. */
static float *s_operand(const s_plan_t *p, tc_mm_tensor_t t)
{
    return tc_cpu_cold_input(&p->cold, (unsigned)t, p->t[t]);
}

int tc_cpu_matmul_run(void *plan, double *ms)
{
    s_plan_t *p = plan;
    int rc = tc_cpu_apply_threads(p->dev);
    if (rc < 0)
        return rc;
    tc_cpu_cold_next(&p->cold);
    const float *a = s_operand(p, TC_MM_TENSOR_A), *b = s_operand(p, TC_MM_TENSOR_B);
    float *c = s_operand(p, TC_MM_TENSOR_C);
    double t0 = s_now_ms();
    if (p->naive)
        s_naive(&p->g, a, b, c);
    else
        s_blas(p->dev->blas, &p->g, a, b, s_operand(p, TC_MM_TENSOR_BIAS), c);
    *ms = s_now_ms() - t0 + p->framework_ms;
    return 0;
}

double tc_cpu_matmul_framework_ms(void *plan)
{
    const s_plan_t *p = plan;
    return p->framework_ms;
}

int tc_cpu_matmul_read(void *plan, tc_mm_tensor_t t, float *out, size_t count)
{
    s_plan_t *p = plan;
    if ((unsigned)t >= TC_MM_TENSOR_COUNT || !p->t[t])
        return tc_fail(TC_ENOTFOUND, "the matmul plan has no operand %d", (int)t);
    if (count != p->n[t])
        return tc_fail(TC_EINVAL, "operand %d has %zu elements, not %zu", (int)t, p->n[t],
                       count);
    memcpy(out, s_operand(p, t), count * sizeof *out);
    return 0;
}

const char *tc_cpu_matmul_route(void *plan)
{
    const s_plan_t *p = plan;
    return p->naive ? "naive" : "blas";
}
