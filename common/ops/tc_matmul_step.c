#include "tc_matmul_step.h"

#include "tc_error.h"

size_t tc_matmul_step_directions(const tc_matmul_use_t *u,
                                 Traincast__V1__Direction out[TC_MATMUL_STEP_MAX_DIRS])
{
    size_t n = 0;
    out[n++] = TRAINCAST__V1__DIRECTION__DIRECTION_FWD;
    if (u->grad_a)
        out[n++] = TRAINCAST__V1__DIRECTION__DIRECTION_BWD_DATA;
    if (u->grad_b)
        out[n++] = TRAINCAST__V1__DIRECTION__DIRECTION_BWD_FILTER;
    return n;
}

bool tc_matmul_is_mm(const tc_matmul_config_t *c)
{
    return c->batch == 1 && c->minibatch_in != TC_MM_MB_BATCH;
}

int tc_matmul_step_gemm(const tc_matmul_config_t *c, Traincast__V1__Direction d, tc_gemm_t *out)
{
    tc_gemm_t f = tc_matmul_forward(c);
    bool mm = tc_matmul_is_mm(c);
    switch (d) {
    case TRAINCAST__V1__DIRECTION__DIRECTION_FWD:
        *out = f;
        return 0;
    case TRAINCAST__V1__DIRECTION__DIRECTION_BWD_DATA:
        /* mm_mat1_backward: grad.mm(mat2.t()), or for a column-major mat1
         * (mat2.mm(grad.t())).t(); bmm: grad.bmm(mat2.transpose(1, 2)). */
        if (mm && f.trans_a)
            *out = (tc_gemm_t){1, f.k, f.m, f.n, f.trans_b, true, false};
        else
            *out = (tc_gemm_t){f.count, f.m, f.k, f.n, false, !f.trans_b, false};
        return 0;
    case TRAINCAST__V1__DIRECTION__DIRECTION_BWD_FILTER:
        /* mm_mat2_backward: mat1.t().mm(grad), or for a column-major mat2
         * (a Linear's weight.t()) (grad.t().mm(mat1)).t(); bmm:
         * mat1.transpose(1, 2).bmm(grad). */
        if (mm && f.trans_b)
            *out = (tc_gemm_t){1, f.n, f.k, f.m, true, f.trans_a, false};
        else
            *out = (tc_gemm_t){f.count, f.k, f.n, f.m, !f.trans_a, false, false};
        return 0;
    default:
        return tc_fail(TC_EINVAL, "a matmul has no direction %d", (int)d);
    }
}

double tc_matmul_step_ms(const tc_matmul_use_t *u, const double ms[TC_MATMUL_STEP_MAX_DIRS])
{
    Traincast__V1__Direction dirs[TC_MATMUL_STEP_MAX_DIRS];
    size_t n = tc_matmul_step_directions(u, dirs);
    double sum = 0;
    for (size_t i = 0; i < n; i++)
        sum += ms[i];
    return u->multiplicity * sum;
}
