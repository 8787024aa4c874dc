/* What a matmul costs in one training step, the matmul's counterpart of
 * tc_conv_step.h: the directions autograd runs and the GEMM each one is, as
 * PyTorch 1.13 computes them (tools/autograd/derivatives.yaml and
 * torch/csrc/autograd/FunctionsManual.cpp):
 *
 *   forward           C = op(A) op(B)
 *   BWD_DATA          the gradient of A (the layer's input), where A needs
 *                     one: not for a Linear on the training data
 *   BWD_FILTER        the gradient of B: a Linear's weight, or the second
 *                     operand of an activation x activation product (an
 *                     attention's keys or values), where it needs one
 *
 * Which routine runs: a single product with the mini-batch in its rows (or
 * nowhere) is an mm (linear, addmm; matmul folds a 3-D input into rows),
 * everything else a bmm. Their gradients differ in how they lay out the
 * operands (mm_mat1_backward / mm_mat2_backward pick the call by the
 * strides of the forward's operands; bmm's are fixed transposes). */
#ifndef TC_MATMUL_STEP_H
#define TC_MATMUL_STEP_H

#include "tc_matmul.h"
#include "traincast.pb-c.h"

#include <stdbool.h>
#include <stddef.h>

#define TC_MATMUL_STEP_MAX_DIRS 3

/* A matmul usage as the rule sees it. */
typedef struct {
    bool grad_a;   /* A needs a gradient (depends on a parameter) */
    bool grad_b;   /* B needs one (a weight always does) */
    uint32_t multiplicity;
} tc_matmul_use_t;

/* The directions of a usage, in a fixed order (fwd, bwd_data, bwd_filter,
 * the backward ones where they count); returns how many (1 to 3). */
size_t tc_matmul_step_directions(const tc_matmul_use_t *u,
                                 Traincast__V1__Direction out[TC_MATMUL_STEP_MAX_DIRS]);

/* Whether the config runs as an mm (else a bmm). */
bool tc_matmul_is_mm(const tc_matmul_config_t *c);

/* The GEMM of direction d at the config's mini-batch (0 counts as 1).
 * TC_EINVAL for a direction that is none of the three. */
int tc_matmul_step_gemm(const tc_matmul_config_t *c, Traincast__V1__Direction d,
                        tc_gemm_t *out);

/* The step time of one usage from its per-direction times (indexed like
 * tc_matmul_step_directions' output): multiplicity x their sum. */
double tc_matmul_step_ms(const tc_matmul_use_t *u, const double ms[TC_MATMUL_STEP_MAX_DIRS]);

#endif
