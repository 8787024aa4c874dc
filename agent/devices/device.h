/* The device layer: one interface over every compute backend (oneDNN on the
 * CPU, cuDNN on NVIDIA GPUs). A backend is a table of functions plus a
 * context; the conv runner, the planner, the statistics and the CLI only
 * ever call the inline wrappers below, never a backend directly.
 *
 * Life cycle:
 *   tc_device_open("cpu" | "cuda:I", threads) -> describe -> conv plans ->
 *   tc_device_close.
 * A conv plan owns the tensors of one (config, direction): it allocates them
 * and fills the inputs with random data once, lists the candidate
 * algorithms (in the library's heuristic order for the heuristic policy, all
 * of them for the exhaustive one), and times single executions of the
 * selected algorithm. Outputs can be read back for verification. */
#ifndef TC_DEVICE_H
#define TC_DEVICE_H

#include "tc_conv.h"
#include "tc_matmul.h"
#include "tc_wire.h"
#include "traincast.pb-c.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Tensors of a conv, in logical NCHW / KCRS order whatever the layout. */
typedef enum {
    TC_TENSOR_X = 0, /* input activations (n, c, h, w) */
    TC_TENSOR_W,     /* filter (k, c / groups, r, s) */
    TC_TENSOR_B,     /* bias (k) */
    TC_TENSOR_Y,     /* output (n, k, p, q) */
    TC_TENSOR_DY,    /* gradient of the output */
    TC_TENSOR_DX,    /* gradient of the input */
    TC_TENSOR_DW,    /* gradient of the filter */
    TC_TENSOR_DB,    /* gradient of the bias */
    TC_TENSOR_COUNT
} tc_tensor_t;

/* "x", "w", ... */
const char *tc_tensor_name(tc_tensor_t t);
/* Elements of tensor `t` for config `c` (n must be set). */
size_t tc_tensor_count(const tc_conv_config_t *c, tc_tensor_t t);
/* The output tensor of a direction (Y, DX or DW). */
tc_tensor_t tc_direction_output(Traincast__V1__Direction d);

/* Which code a plan times. The framework chooses per conv between the
 * vendor library and its own kernels (on the CPU, PyTorch's im2col + GEMM
 * path; agent/devices/cpu/cpu_route.h); a benchmark follows that choice unless told
 * otherwise (comparisons and tests). */
typedef enum {
    TC_PATH_FRAMEWORK = 0, /* where the framework sends this conv */
    TC_PATH_LIBRARY,       /* the vendor library (oneDNN, cuDNN) */
    TC_PATH_NATIVE,        /* the framework's own kernels */
} tc_conv_path_t;

/* "framework", "library", "native"; parse returns TC_EUSAGE naming them. */
const char *tc_conv_path_name(tc_conv_path_t p);
int tc_conv_path_parse(const char *text, tc_conv_path_t *out);

/* What a plan is built for. */
typedef struct {
    tc_conv_config_t config;            /* n > 0 */
    Traincast__V1__Direction direction;
    Traincast__V1__Policy policy;       /* decides which candidates are listed */
    uint64_t workspace_limit;           /* bytes; 0 = the backend's default */
    uint64_t seed;                      /* random input data */
    tc_conv_path_t path;                /* default: the framework's choice */
} tc_conv_spec_t;

#define TC_ALGO_NAME_MAX 96
#define TC_ALGO_MSG_MAX 200

/* One candidate algorithm as the backend lists it. `status` is OK when it
 * can run, else NOT_SUPPORTED or WORKSPACE_TOO_LARGE with a reason. */
typedef struct {
    char name[TC_ALGO_NAME_MAX];
    int32_t id;                         /* backend's numeric id, -1 if none */
    uint64_t workspace_bytes;
    Traincast__V1__AlgoStatus status;
    char message[TC_ALGO_MSG_MAX];
} tc_algo_t;

/* The software a device measures with besides its library: on a CPU the
 * memory allocator, the BLAS and the framework (with the conv routing
 * that follows its version), which make two machines with the same
 * processor two different devices. Empty strings where they do not apply. */
typedef struct {
    char allocator[96];  /* "tcmalloc 2.10" */
    char blas[96];       /* "OpenBLAS 0.3.21 openmp" */
    char framework[96];  /* "pytorch 1.13.0a0", or "no framework" */
    char routing[64];    /* "pytorch-1.13", "pytorch-1.13 unverified", "onednn-only" */
} tc_device_env_t;

/* The device's clocks and power now, for the record of a measurement. */
typedef struct {
    unsigned sm_clock_mhz; /* 0: unknown */
    double power_w;        /* 0: unknown */
} tc_telemetry_t;

/* What a matmul plan is built for: the GEMM of one training direction of a
 * matmul config at its mini-batch (tc_matmul_step_gemm). */
typedef struct {
    tc_matmul_config_t config;          /* minibatch > 0 */
    Traincast__V1__Direction direction;
    uint64_t seed;                      /* random input data */
} tc_matmul_spec_t;

/* Operands of a matmul plan's GEMM, as stored (row-major; op(A) and op(B)
 * read them transposed where the GEMM says so), products one after the
 * other. */
typedef enum {
    TC_MM_TENSOR_A = 0, /* count x ([m, k], or [k, m] transposed) */
    TC_MM_TENSOR_B,     /* count x ([k, n], or [n, k] transposed) */
    TC_MM_TENSOR_C,     /* count x [m, n], the result */
    TC_MM_TENSOR_BIAS,  /* [n], where the call adds a bias */
    TC_MM_TENSOR_COUNT
} tc_mm_tensor_t;

/* The backend interface. Functions return 0 or a negative TC_E* code with a
 * message (tc_fail). `ctx` is the opened device; `plan` a conv plan. */
typedef struct tc_backend_iface {
    const char *kind;     /* "cpu" or "cuda": the device spec prefix */
    const char *library;  /* "onednn" or "cudnn" (ConvResults.backend) */

    /* How many devices of this kind the machine has. With none, *count is 0
     * and `why` says why (no GPU, no driver, built without CUDA). */
    int (*enumerate)(unsigned *count, char *why, size_t why_size);
    /* The library and runtime versions this build uses, for `agent info`
     * (no device needed). */
    void (*versions)(char *buf, size_t size);
    /* Open device `index`; `threads` is the CPU thread count (0 = all
     * logical CPUs), ignored by GPU backends. */
    int (*open)(unsigned index, unsigned threads, void **ctx);
    void (*close)(void *ctx);
    /* Fill `out` (already initialized); its strings point into ctx and stay
     * valid until close. */
    int (*describe)(void *ctx, Traincast__V1__Device *out);
    /* Fill `out` (NULL: nothing beyond the library). */
    void (*environment)(void *ctx, tc_device_env_t *out);

    int (*plan_create)(void *ctx, const tc_conv_spec_t *spec, void **plan);
    size_t (*algo_count)(void *plan);
    const tc_algo_t *(*algo)(void *plan, size_t i);
    /* Prepare candidate i (status OK) for run(). */
    int (*select)(void *plan, size_t i);
    /* Execute the selected algorithm once, as the framework would, and
     * return its duration in milliseconds. */
    int (*run)(void *plan, double *ms);
    /* Copy tensor `t` as float in logical order into out[count]. TC_ENOTFOUND
     * when the plan has no such tensor. */
    int (*read)(void *plan, tc_tensor_t t, float *out, size_t count);
    void (*plan_destroy)(void *plan);
    /* Which code the plan runs, as the framework routes it ("onednn",
     * "native", "cudnn", "cudnn-v8", "native-depthwise", ...). */
    const char *(*plan_route)(void *plan);
    /* Optional (NULL: none): the device's SM clock and power now. */
    int (*telemetry)(void *ctx, tc_telemetry_t *out);
    /* Optional (NULL: none): run the device's canary, a short fixed kernel
     * of the kind its benchmarks run, and return its duration in ms
     * (agent/bench/canary.h). */
    int (*canary)(void *ctx, double *ms);

    /* Optional (NULL: this backend benchmarks no matmuls): a matmul plan
     * owns the operands of one spec's GEMM, filled with random data once,
     * and runs it as the framework does. */
    int (*matmul_create)(void *ctx, const tc_matmul_spec_t *spec, void **plan);
    /* Run the GEMM once and return its duration in milliseconds. */
    int (*matmul_run)(void *plan, double *ms);
    /* Copy operand `t` as float into out[count] (count as stored).
     * TC_ENOTFOUND when the plan has no such operand. */
    int (*matmul_read)(void *plan, tc_mm_tensor_t t, float *out, size_t count);
    /* Which code runs it, as the framework routes it ("blas", "naive" on
     * the CPU; "cublas", "cublaslt" on a GPU). */
    const char *(*matmul_route)(void *plan);
    /* Optional (NULL: none): the framework's own time in each run besides
     * the library's calls, already in what matmul_run returns (on the CPU,
     * a split bmm's cost per product; cpu_matmul.c). */
    double (*matmul_framework_ms)(void *plan);
    void (*matmul_destroy)(void *plan);
} tc_backend_iface_t;

/* Backends linked into this build. The cpu one is always there; the cuda
 * one is either the real cuDNN backend or one that says it was not built. */
extern const tc_backend_iface_t tc_backend_cpu;
extern const tc_backend_iface_t tc_backend_cuda;

typedef struct {
    const tc_backend_iface_t *iface;
    void *ctx;
    char spec[32];  /* "cpu" or "cuda:0" */
} tc_device_t;

typedef struct {
    const tc_backend_iface_t *iface;
    void *impl;
} tc_conv_plan_t;

typedef struct {
    const tc_backend_iface_t *iface;
    void *impl;
    tc_matmul_spec_t spec;
    tc_gemm_t gemm; /* the GEMM it runs */
} tc_matmul_plan_t;

/* All backends, NULL-terminated. */
const tc_backend_iface_t *const *tc_backends(void);

/* Parse "cpu", "cuda" (= cuda:0) or "cuda:I". TC_EUSAGE naming the spec. */
int tc_device_parse(const char *spec, const tc_backend_iface_t **iface, unsigned *index);

/* Open a device. TC_EUSAGE for a bad spec, TC_ENODEV / TC_EUNSUPPORTED with
 * the backend's reason when it is not there. */
int tc_device_open(const char *spec, unsigned threads, tc_device_t **out);
void tc_device_close(tc_device_t **self_p);

/* Build a plan; NULL-safe destroy that nulls the pointer. */
int tc_conv_plan_create(tc_device_t *dev, const tc_conv_spec_t *spec, tc_conv_plan_t **out);
void tc_conv_plan_destroy(tc_conv_plan_t **self_p);

static inline int tc_device_describe(tc_device_t *d, Traincast__V1__Device *out)
{
    return d->iface->describe(d->ctx, out);
}

static inline const char *tc_device_library(const tc_device_t *d) { return d->iface->library; }

/* The device's software environment (all strings empty when the backend
 * has none to tell). */
void tc_device_environment(tc_device_t *d, tc_device_env_t *out);

static inline size_t tc_conv_plan_algo_count(tc_conv_plan_t *p) { return p->iface->algo_count(p->impl); }

static inline const tc_algo_t *tc_conv_plan_algo(tc_conv_plan_t *p, size_t i)
{
    return p->iface->algo(p->impl, i);
}

static inline int tc_conv_plan_select(tc_conv_plan_t *p, size_t i) { return p->iface->select(p->impl, i); }

static inline int tc_conv_plan_run(tc_conv_plan_t *p, double *ms) { return p->iface->run(p->impl, ms); }

static inline int tc_conv_plan_read(tc_conv_plan_t *p, tc_tensor_t t, float *out, size_t count)
{
    return p->iface->read(p->impl, t, out, count);
}

static inline const char *tc_conv_plan_route(tc_conv_plan_t *p)
{
    const char *r = p->iface->plan_route ? p->iface->plan_route(p->impl) : NULL;
    return r ? r : "";
}

/* The device's clocks and power now; zeros where it cannot tell. */
static inline void tc_device_telemetry(tc_device_t *d, tc_telemetry_t *out)
{
    out->sm_clock_mhz = 0;
    out->power_w = 0;
    if (d->iface->telemetry && d->iface->telemetry(d->ctx, out) < 0) {
        out->sm_clock_mhz = 0;
        out->power_w = 0;
    }
}

/* Run the device's canary once: its duration in ms, or TC_EUNSUPPORTED
 * when the device has none. */
int tc_device_canary(tc_device_t *d, double *ms);

/* Build a matmul plan: TC_EINVAL for a bad config or direction,
 * TC_EUNSUPPORTED when the backend benchmarks no matmuls. NULL-safe destroy
 * that nulls the pointer. */
int tc_matmul_plan_create(tc_device_t *dev, const tc_matmul_spec_t *spec,
                          tc_matmul_plan_t **out);
void tc_matmul_plan_destroy(tc_matmul_plan_t **self_p);

static inline int tc_matmul_plan_run(tc_matmul_plan_t *p, double *ms)
{
    return p->iface->matmul_run(p->impl, ms);
}

static inline int tc_matmul_plan_read(tc_matmul_plan_t *p, tc_mm_tensor_t t, float *out,
                                      size_t count)
{
    return p->iface->matmul_read(p->impl, t, out, count);
}

static inline const char *tc_matmul_plan_route(tc_matmul_plan_t *p)
{
    const char *r = p->iface->matmul_route ? p->iface->matmul_route(p->impl) : NULL;
    return r ? r : "";
}

static inline double tc_matmul_plan_framework_ms(tc_matmul_plan_t *p)
{
    return p->iface->matmul_framework_ms ? p->iface->matmul_framework_ms(p->impl) : 0;
}

/* Elements of operand t of a GEMM (0 for BIAS without a bias). */
size_t tc_gemm_tensor_count(const tc_gemm_t *g, tc_mm_tensor_t t);

/* Deterministic uniform values in [-1, 1) for input tensors: value i of
 * stream `seed`. Backends fill inputs with it (or with an equivalent device
 * kernel) so every run of the same spec sees the same data. */
static inline float tc_random_value(uint64_t seed, uint64_t i)
{
    uint64_t z = seed * 0x9E3779B97F4A7C15ull + i + 1;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    return (float)((double)(z >> 40) * (2.0 / 16777216.0) - 1.0);
}

#endif
