/* Shape rules for Gemm and MatMul, and the matmul config each one runs as
 * in PyTorch (tc_matmul.h): its sizes per sample, where the mini-batch
 * enters them, the operands' transposes as the GEMM reads them, and which
 * operands need a gradient. A product one of whose sizes varies with the
 * batch other than through its rows or its count of products cannot be
 * benchmarked ahead of the batch: the import fails naming the node and the
 * dimension. */
#include "tc_shape_rules.h"

#include "tc_error.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

/* A size of the product that varies with the batch. */
static int s_dynamic(tc_graph_t *g, const tc_gnode_t *n, const char *dim, char operand, int axis,
                     int in)
{
    const tc_value_t *v = tc_node_in(g, n, in);
    return tc_node_fail(n, TC_EUNSUPPORTED,
                        "the product's dimension %s (axis %d of %c, '%s') varies with the "
                        "batch size, so it is not known at import time; traincast benchmarks "
                        "matmuls whose m, n and k are fixed (the batch may only multiply the "
                        "rows or the count of products)",
                        dim, axis, operand, v ? v->name : "?");
}

static bool s_needs_grad(const tc_value_t *v)
{
    return v->grad || v->is_param;
}

/* Whether operand v reaches the product as a transposed view, as PyTorch
 * passes x.transpose(-2, -1) to bmm without a copy: v comes from a
 * Transpose whose output's second-last axis is its input's last (the one
 * contiguous in memory). */
static bool s_transposed(tc_graph_t *g, const tc_value_t *v)
{
    if (v->producer < 0)
        return false;
    const tc_gnode_t *p = &g->nodes[v->producer];
    if (strcmp(p->op, "Transpose") || *p->domain || p->folded || v->rank < 2)
        return false;
    int64_t perm[TC_MODEL_MAX_RANK];
    int count;
    if (tc_attr_ints(p, "perm", perm, TC_MODEL_MAX_RANK, &count) < 0)
        return false;
    int r = v->rank;
    if (count < 0) { /* default: reversed */
        for (int k = 0; k < r; k++)
            perm[k] = r - 1 - k;
        count = r;
    }
    return count == r && perm[r - 2] == r - 1;
}

static int s_set_matmul(tc_gnode_t *n, const tc_matmul_config_t *c, const tc_value_t *a,
                        const tc_value_t *b)
{
    if (!c->batch || !c->m || !c->n || !c->k)
        return tc_node_fail(n, TC_ELIMIT, "a product of %u x [%u, %u] x [%u, %u] per sample: a "
                                          "size is 0 or beyond 2^32",
                            c->batch, c->m, c->k, c->k, c->n);
    n->info.is_matmul = true;
    n->info.matmul = *c;
    n->info.matmul_grad_a = s_needs_grad(a);
    n->info.matmul_grad_b = s_needs_grad(b);
    return 0;
}

/* torch.onnx writes F.linear on a 3-D input as MatMul(x, W^T) + Add(b);
 * PyTorch 1.13 runs it as one addmm with the bias when x is contiguous
 * (aten/src/ATen/native/Linear.cpp, linear: "Also hit the fused path for
 * contiguous 3D input"), else as matmul and add_. A transposed x (as
 * multi-head attention passes its input) is not contiguous. */
void tc_matmul_take_bias(tc_graph_t *g, const tc_gnode_t *add)
{
    if (*add->domain || add->n_in != 2)
        return;
    for (int i = 0; i < 2; i++) {
        const tc_value_t *y = tc_node_in(g, add, i), *b = tc_node_in(g, add, 1 - i);
        if (!y || !b || y->producer < 0 || !b->is_param || b->rank != 1)
            continue;
        tc_gnode_t *mm = &g->nodes[y->producer];
        tc_matmul_config_t *c = &mm->info.matmul;
        if (!mm->info.is_matmul || strcmp(mm->op, "MatMul") || !c->weight || c->bias ||
            b->dims[0] != (int64_t)c->n)
            continue;
        const tc_value_t *x = tc_node_in(g, mm, 0);
        const tc_gnode_t *xp = x && x->producer >= 0 ? &g->nodes[x->producer] : NULL;
        if (!x || x->rank != 3 || (xp && !strcmp(xp->op, "Transpose")))
            continue;
        c->bias = true;
        return;
    }
}

static uint32_t s_u32(int64_t v)
{
    return v > 0 && v <= UINT32_MAX ? (uint32_t)v : 0;
}

int tc_infer_gemm(tc_graph_t *g, tc_gnode_t *n, const tc_op_rule_t *r)
{
    tc_value_t *a = NULL, *b = NULL;
    int64_t ta, tb;
    int rc = tc_node_need(g, n, 0, &a);
    if (rc == 0)
        rc = tc_node_need(g, n, 1, &b);
    if (rc == 0)
        rc = tc_attr_int(n, "transA", 0, &ta);
    if (rc == 0)
        rc = tc_attr_int(n, "transB", 0, &tb);
    if (rc < 0)
        return rc;
    if (a->rank != 2 || b->rank != 2)
        return tc_node_fail(n, TC_EPARSE, "Gemm needs 2-D inputs (ranks %d and %d)", a->rank,
                            b->rank);
    int am = ta ? 1 : 0, ak = 1 - am, bk = tb ? 1 : 0, bn = 1 - bk;
    if (a->batch_axis == ak)
        return s_dynamic(g, n, "k", 'A', ak, 0);
    if (b->batch_axis == bk)
        return s_dynamic(g, n, "k", 'B', bk, 1);
    if (a->batch_axis >= 0 && b->batch_axis >= 0)
        return tc_node_fail(n, TC_EUNSUPPORTED, "both operands carry the batch");
    if (b->batch_axis == bn)
        return s_dynamic(g, n, "n", 'B', bn, 1);
    if (a->dims[ak] != b->dims[bk])
        return tc_node_fail(n, TC_EPARSE, "inner dimensions %" PRId64 " and %" PRId64 " differ",
                            a->dims[ak], b->dims[bk]);
    int64_t dims[2] = {a->dims[am], b->dims[bn]};
    int batch = a->batch_axis == am ? 0 : -1;
    rc = tc_set_shape(g, n, 0, 2, dims, batch);
    if (rc < 0)
        return rc;
    tc_set_type(g, n, 0, a->elem_type);
    /* C must broadcast to the output. */
    const tc_value_t *c = tc_node_in(g, n, 2);
    if (c) {
        if (c->rank > 2)
            return tc_node_fail(n, TC_EPARSE, "C has rank %d", c->rank);
        for (int k = 0; k < c->rank; k++) {
            int oa = 2 - c->rank + k;
            int64_t d = oa == batch ? -1 : dims[oa];
            if (k != c->batch_axis && c->dims[k] != 1 && c->dims[k] != d)
                return tc_node_fail(n, TC_EPARSE, "C does not broadcast to the output");
        }
    }
    /* From the dims, not the output value: a node may have none. */
    double out = (double)dims[0] * (double)dims[1];
    n->macs = out * (double)a->dims[ak];
    n->info.flops = 2.0 * n->macs + (c ? out : 0.0);
    /* torch.onnx writes a 2-D Linear as Gemm(x, W, b, transB=1): addmm. */
    tc_matmul_config_t mc = tc_matmul_config_default();
    mc.m = s_u32(dims[0]);
    mc.n = s_u32(dims[1]);
    mc.k = s_u32(a->dims[ak]);
    mc.minibatch_in = batch == 0 ? TC_MM_MB_ROWS : TC_MM_MB_NONE;
    mc.trans_a = ta != 0;
    mc.trans_b = tb != 0;
    mc.weight = b->is_param;
    mc.bias = c != NULL;
    mc.dtype = tc_dtype_of(a->elem_type);
    return s_set_matmul(n, &mc, a, b);
}

/* The config of a MatMul of operands of rank >= 2 (ad, bd their dims, ab,
 * bb their batch axes), as PyTorch 1.13's at::matmul runs it
 * (aten/src/ATen/native/LinearAlgebra.cpp, _matmul_impl): a 2-D B folds
 * A's leading dims into the rows of one mm (a Linear on a sequence);
 * otherwise the leading dims broadcast into the count of a bmm. */
static int s_matmul_config(tc_graph_t *g, tc_gnode_t *n, const tc_value_t *a,
                           const tc_value_t *b, const int64_t *dims, int rank, int batch)
{
    int ar = a->rank, br = b->rank;
    tc_matmul_config_t mc = tc_matmul_config_default();
    int64_t lead = 1; /* the leading dims' product (the batch axis counts 1) */
    for (int k = 0; k < rank - 2; k++)
        lead *= dims[k];
    mc.n = s_u32(dims[rank - 1]);
    mc.k = s_u32(a->dims[ar - 1]);
    if (br == 2) {
        mc.batch = 1;
        mc.m = s_u32(lead * dims[rank - 2]);
        mc.minibatch_in = batch >= 0 ? TC_MM_MB_ROWS : TC_MM_MB_NONE;
        /* A folded from more than two dims is reshaped, a copy when
         * transposed. */
        mc.trans_a = ar == 2 && s_transposed(g, a);
        /* torch.onnx writes a Linear on a sequence as MatMul(x, W^T): the
         * weight is PyTorch's [n, k], read transposed. */
        mc.weight = b->is_param;
        mc.trans_b = b->is_param || s_transposed(g, b);
    } else {
        mc.batch = s_u32(lead);
        mc.m = s_u32(dims[rank - 2]);
        mc.minibatch_in = batch == rank - 2 ? TC_MM_MB_ROWS
                          : batch >= 0      ? TC_MM_MB_BATCH
                                            : TC_MM_MB_NONE;
        mc.trans_a = s_transposed(g, a);
        mc.trans_b = s_transposed(g, b);
    }
    mc.dtype = tc_dtype_of(a->elem_type);
    return s_set_matmul(n, &mc, a, b);
}

int tc_infer_matmul(tc_graph_t *g, tc_gnode_t *n, const tc_op_rule_t *r)
{
    tc_value_t *a = NULL, *b = NULL;
    int rc = tc_node_need(g, n, 0, &a);
    if (rc == 0)
        rc = tc_node_need(g, n, 1, &b);
    if (rc < 0)
        return rc;
    if (a->rank < 1 || b->rank < 1)
        return tc_node_fail(n, TC_EPARSE, "MatMul of a scalar");
    /* Promote 1-D operands as numpy does. */
    int ar = a->rank, br = b->rank;
    int64_t ad[TC_MODEL_MAX_RANK + 1], bd[TC_MODEL_MAX_RANK + 1];
    int ab = a->batch_axis, bb = b->batch_axis;
    if (ar == 1) {
        ad[0] = 1;
        ad[1] = a->dims[0];
        ab = ab == 0 ? 1 : -1;
        ar = 2;
    } else {
        memcpy(ad, a->dims, (size_t)ar * sizeof *ad);
    }
    if (br == 1) {
        bd[0] = b->dims[0];
        bd[1] = 1;
        bb = bb == 0 ? 0 : -1;
        br = 2;
    } else {
        memcpy(bd, b->dims, (size_t)br * sizeof *bd);
    }
    if (ab == ar - 1)
        return s_dynamic(g, n, "k", 'A', a->batch_axis, 0);
    if (bb == br - 2)
        return s_dynamic(g, n, "k", 'B', b->batch_axis, 1);
    if (bb == br - 1 && b->rank >= 2)
        return s_dynamic(g, n, "n", 'B', b->batch_axis, 1);
    int64_t kdim = ad[ar - 1];
    if (kdim != bd[br - 2])
        return tc_node_fail(n, TC_EPARSE, "inner dimensions %" PRId64 " and %" PRId64 " differ",
                            kdim, bd[br - 2]);
    int rank = ar > br ? ar : br;
    int64_t dims[TC_MODEL_MAX_RANK];
    int batch = -1;
    for (int k = 0; k < rank - 2; k++) {
        int ia = k - (rank - ar), ib = k - (rank - br);
        bool ba = ia >= 0 && ia == ab, bbb = ib >= 0 && ib == bb;
        int64_t da = ia >= 0 && !ba ? ad[ia] : 1, db = ib >= 0 && !bbb ? bd[ib] : 1;
        /* Both may carry the batch on the same axis (an attention's
         * queries and keys), as the same multiple of it (heads folded in);
         * one alone broadcasts only against 1. */
        if ((ba && !bbb && db != 1) || (bbb && !ba && da != 1) ||
            (ba && bbb && ad[ia] != bd[ib]))
            return tc_node_fail(n, TC_EPARSE, "cannot broadcast the batch");
        if (da != 1 && db != 1 && da != db)
            return tc_node_fail(n, TC_EPARSE, "cannot broadcast %" PRId64 " and %" PRId64, da,
                                db);
        dims[k] = ba ? ad[ia] : bbb ? bd[ib] : da != 1 ? da : db;
        if (ba || bbb)
            batch = k;
    }
    dims[rank - 2] = ad[ar - 2];
    dims[rank - 1] = bd[br - 1];
    if (ab == ar - 2)
        batch = rank - 2;
    if (bb == br - 1)
        batch = rank - 1;
    /* A product of matrices (no vector) is a GEMM; matrix-vector products
     * (mv, dot) are not benchmarked. */
    if (a->rank >= 2 && b->rank >= 2) {
        rc = s_matmul_config(g, n, a, b, dims, rank, batch);
        if (rc < 0)
            return rc;
    }
    /* Drop the promoted axes again. */
    int out_rank = rank;
    if (a->rank == 1) {
        memmove(&dims[rank - 2], &dims[rank - 1], sizeof *dims);
        out_rank--;
        if (batch == rank - 1)
            batch = rank - 2;
    }
    if (b->rank == 1) {
        out_rank--;
        if (batch == out_rank)
            batch = -1;
    }
    rc = tc_set_shape(g, n, 0, out_rank, dims, batch);
    if (rc < 0)
        return rc;
    tc_set_type(g, n, 0, a->elem_type);
    double out = 1; /* from the dims, not the output value: a node may have none */
    for (int k = 0; k < out_rank; k++)
        out *= (double)dims[k];
    n->macs = out * (double)kdim;
    n->info.flops = 2.0 * n->macs;
    return 0;
}
