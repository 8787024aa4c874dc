/* Checking a backend's result against the naive reference (conv_ref.h):
 * reads the plan's inputs back, computes the reference in double precision
 * and compares every output element within a tolerance that follows the
 * data type and the number of summed terms. Small shapes only. */
#ifndef TC_CONV_VERIFY_H
#define TC_CONV_VERIFY_H

#include "device.h"

typedef struct {
    size_t checked;        /* output elements compared */
    size_t wrong;          /* outside the tolerance */
    tc_tensor_t tensor;    /* the tensor of the worst element */
    size_t worst;          /* its index (logical order) */
    double got, want;      /* its values */
    double atol, rtol;     /* tolerance used for the main output */
} tc_verify_t;

/* Tolerance for a dtype and the number of terms per output value. */
void tc_conv_tolerance(Traincast__V1__DType dtype, double terms, double *atol, double *rtol);

/* Compare the plan's current output (run it first) with the reference.
 * Returns 0 with res filled (res->wrong may be > 0), or an error. */
int tc_conv_verify(tc_conv_plan_t *plan, const tc_conv_spec_t *spec, tc_verify_t *res);

#endif
