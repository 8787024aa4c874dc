/* Where the framework sends a CPU convolution: oneDNN, or its own native
 * kernels (im2col + GEMM on the BLAS), decided per call from the shapes,
 * the dtype and the thread count. The agent benchmarks each conv on the
 * path the framework takes, because that is the time training pays.
 *
 * PyTorch 1.13 (aten/src/ATen/native/Convolution.cpp, _select_conv_backend
 * and ConvParams::use_mkldnn): a float conv on a CPU goes to oneDNN
 * (ConvBackend::Mkldnn) when oneDNN is enabled and
 *
 *   (strided || dilated || batch >= 16 || kernel not 1x1 || threads > 1)
 *   && (groups > 1 || (kernel height > 3 && kernel width > 3) || batch > 1
 *       || batch * C * H * W > 20480)
 *
 * ("for 1x1 filters, MKLDNN is faster than THNN when multi-threaded, but
 * THNN is faster when single-threaded"; "for some case, native is
 * faster"); otherwise to ConvBackend::SlowDilated2d when dilated, else to
 * ConvBackend::Slow2d (at::_slow_conv2d_forward / _slow_conv2d_backward,
 * ConvolutionMM2d.cpp). NNPACK needs batch >= 16, where oneDNN is chosen
 * first, and Debian builds without it. bf16 goes to oneDNN only when
 * mkldnn_bf16_device_check() holds (AVX-512 BW/VL/DQ); otherwise to the
 * native kernels, which do not use the BLAS and are not mirrored here. The
 * backward pass selects again with the same inputs (convolution_backward),
 * so all three directions of a conv take one route. */
#ifndef TC_CPU_ROUTE_H
#define TC_CPU_ROUTE_H

#include "tc_conv.h"

#include <stdbool.h>

typedef enum {
    TC_ROUTE_ONEDNN = 0,    /* ConvBackend::Mkldnn */
    TC_ROUTE_NATIVE,        /* ConvBackend::Slow2d: im2col + sgemm */
    TC_ROUTE_NATIVE_DILATED,/* ConvBackend::SlowDilated2d */
    TC_ROUTE_UNSUPPORTED,   /* a native path traincast does not mirror (bf16) */
} tc_route_t;

typedef struct {
    const char *name;     /* "pytorch-1.13", "onednn-only" */
    const char *versions; /* the framework versions it is verified for */
    bool verified;        /* checked against the source and the profiler */
    bool uses_native;     /* false: every conv on oneDNN */
} tc_route_rule_t;

/* The rule for a framework and version ("pytorch", "1.13.0a0"); NULL
 * framework: no framework found, every conv on oneDNN. A PyTorch version
 * without a verified rule gets the newest verified one, marked unverified. */
const tc_route_rule_t *tc_route_rule(const char *framework, const char *version);

/* The route of conv `c` (n set) with `threads` threads. `onednn_enabled`:
 * the framework has oneDNN and has not turned it off. `bf16_onednn`: the
 * CPU passes mkldnn_bf16_device_check(). */
tc_route_t tc_route_conv(const tc_route_rule_t *rule, const tc_conv_config_t *c, unsigned threads,
                         bool onednn_enabled, bool bf16_onednn);

/* "onednn", "native", "native-dilated", "unsupported". */
const char *tc_route_name(tc_route_t r);

#endif
