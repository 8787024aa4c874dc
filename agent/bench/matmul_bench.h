/* Benchmarking one matmul (config with its mini-batch, direction) on a
 * device, with the measurement the convs get (measure.h: warm-up, the
 * median's confidence interval, budget, repetition cap, quiet guard), and
 * checking its result against a naive reference. The matmul's counterpart
 * of conv_bench.h; a GEMM has no algorithms to choose among: it runs where
 * the framework's routing sends it (the plan's route). */
#ifndef TC_MATMUL_BENCH_H
#define TC_MATMUL_BENCH_H

#include "device.h"
#include "measure.h"

typedef struct {
    tc_matmul_spec_t spec;
    tc_gemm_t gemm;        /* the GEMM that ran */
    tc_samples_t samples;
    char route[32];        /* which code ran it ("blas", "naive") */
    double framework_ms;   /* of each sample, the framework's own time
                              besides the library (device.h) */
    double spec_quiet_pct; /* the quiet threshold it was measured under */
} tc_matmul_outcome_t;

/* Plan and measure. TC_EUNSUPPORTED when the device benchmarks no
 * matmuls; backend errors otherwise. */
int tc_matmul_bench(tc_device_t *dev, const tc_matmul_spec_t *spec, const tc_measure_opts_t *mo,
                    tc_matmul_outcome_t *out);
void tc_matmul_outcome_free(tc_matmul_outcome_t *o);

/* "addmm", "mm" or "bmm": the call PyTorch makes for the config (the
 * result's algo; its route says which code ran it). */
const char *tc_matmul_call_name(const tc_matmul_config_t *c);

/* The wire form: a result whose key is `matmul` (the config at its
 * mini-batch), with the conv's statistics (tc_samples_to_result), measured
 * under `policy`. Free with tc_conv_result_proto_free. */
int tc_matmul_outcome_to_proto(const tc_matmul_outcome_t *o, Traincast__V1__Policy policy,
                               Traincast__V1__ConvResult **out);

/* C = op(A) op(B) (+ bias) of a GEMM in double precision, from operands
 * stored as the plan stores them (device.h: tc_mm_tensor_t). */
void tc_gemm_reference(const tc_gemm_t *g, const float *a, const float *b, const float *bias,
                       double *c);

/* The largest |error| / (1 + |reference|) a result of `dtype` may have:
 * 1e-3 for float sums over k of values in [-1, 1); 1e-2 where the
 * operands are rounded to TF32 or the result is fp16; 3e-2 for bf16. */
double tc_matmul_tolerance(Traincast__V1__DType dtype);

/* Run the plan of `spec` once and compare its result with the reference
 * (computed from the operands as the plan stores them): 0 with *worst the
 * largest |error| / (1 + |reference|); TC_ELIB naming the worst element
 * when it is over tc_matmul_tolerance of the config's dtype. */
int tc_matmul_verify(tc_device_t *dev, const tc_matmul_spec_t *spec, double *worst);

#endif
