/* A oneDNN conv plan (cpu_conv.c) selecting a candidate and running it the
 * way PyTorch 1.13 calls oneDNN: backward primitive descriptors, the
 * primitive and every reorder are created on each call, output tensors,
 * blocked and plain copies and the scratchpad are allocated on each call,
 * all inside the timed region. */
#include "cpu_conv_plan.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

static double s_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

/* The primitive descriptor of the impl-th implementation of slot a. */
static int s_fetch_pd(tc_cpu_plan_t *p, int a, int impl, dnnl_primitive_desc_t *out)
{
    int rc = 0;
    dnnl_primitive_desc_iterator_t it = NULL;
    *out = NULL;
    TC_DNNL_TRY(dnnl_primitive_desc_iterator_create(&it, &p->op[a], p->attr, p->dev->engine,
                                                    p->hint[a]));
    for (int i = 0; i < impl; i++)
        TC_DNNL_TRY(dnnl_primitive_desc_iterator_next(it));
    *out = dnnl_primitive_desc_iterator_fetch(it);
    if (!*out)
        TC_FAIL_GOTO(TC_ELIB, "oneDNN: dnnl_primitive_desc_iterator_fetch returned no "
                              "primitive descriptor");
err:
    if (it)
        dnnl_primitive_desc_iterator_destroy(it);
    return rc;
}

void tc_cpu_dnnl_unselect(tc_cpu_plan_t *p)
{
    for (int i = 0; i < MAX_BINDINGS; i++) {
        if (p->inner[i])
            dnnl_memory_destroy(p->inner[i]);
        p->inner[i] = NULL;
    }
    if (p->scratch)
        dnnl_memory_destroy(p->scratch);
    p->scratch = NULL;
    p->scratch_bytes = 0;
    memset(p->inner_bytes, 0, sizeof p->inner_bytes);
    if (p->sel_pd)
        dnnl_primitive_desc_destroy(p->sel_pd);
    p->sel_pd = NULL;
    p->sel = -1;
}

int tc_cpu_dnnl_select(void *plan, size_t i)
{
    int rc = 0;
    tc_cpu_plan_t *p = plan;
    if (i >= p->n_cands || p->cands[i].impl < 0)
        return tc_fail(TC_EINVAL, "cpu conv plan: candidate %zu cannot be selected", i);
    tc_cpu_dnnl_unselect(p);
    TC_TRY(tc_cpu_apply_threads(p->dev));
    const tc_cpu_dnnl_cand_t *c = &p->cands[i];
    TC_TRY(s_fetch_pd(p, c->alg_slot, c->impl, &p->sel_pd));
    for (int b = 0; b < p->n_binds; b++) {
        const dnnl_memory_desc_t *md =
            dnnl_primitive_desc_query_md(p->sel_pd, dnnl_query_exec_arg_md, p->binds[b].arg);
        if (!md)
            TC_FAIL_GOTO(TC_ELIB, "oneDNN: no memory descriptor for argument %d of %s",
                         p->binds[b].arg, c->info.name);
        tc_tensor_t t = p->binds[b].t;
        /* A dense weight gradient is ideep's result copied (to_public). */
        if (p->fw_mem[t] ? p->binds[b].input && dnnl_memory_desc_equal(md, &p->fw_md[t])
                         : dnnl_memory_desc_equal(md, &p->user_md[t]))
            continue;
        /* Buffers come with each run, as PyTorch allocates them per call. */
        TC_DNNL_TRY(dnnl_memory_create(&p->inner[b], md, p->dev->engine, DNNL_MEMORY_NONE));
        p->inner_bytes[b] = dnnl_memory_desc_get_size(md);
    }
    const dnnl_memory_desc_t *sp = dnnl_primitive_desc_query_md(p->sel_pd, dnnl_query_scratchpad_md, 0);
    if (sp && dnnl_memory_desc_get_size(sp) > 0) {
        TC_DNNL_TRY(dnnl_memory_create(&p->scratch, sp, p->dev->engine, DNNL_MEMORY_NONE));
        p->scratch_bytes = dnnl_memory_desc_get_size(sp);
    }
    p->sel = (int)i;
    return 0;
err:
    tc_cpu_dnnl_unselect(p);
    return rc;
}

/* With cold operands, point the inputs and outputs at their next copy
 * (cpu_cold.h). */
static int s_cold_inputs(tc_cpu_plan_t *p)
{
    int rc = 0;
    if (!p->dev->cold)
        return 0;
    tc_cpu_cold_next(&p->cold);
    for (int b = 0; b < p->n_binds; b++) {
        tc_tensor_t t = p->binds[b].t;
        if (!p->binds[b].input && !tc_cpu_cold_rotates(&p->cold, t))
            continue;
        void *now = NULL;
        TC_DNNL_TRY(dnnl_memory_get_data_handle(p->user_mem[t], &now));
        void *buf = tc_cpu_cold_input(&p->cold, t, now);
        if (buf != now) /* setting oneDNN's own buffer again would free it */
            TC_DNNL_TRY(dnnl_memory_set_data_handle(p->user_mem[t], buf));
    }
err:
    return rc;
}

/* A new buffer for memory `mem`, as PyTorch's allocator hands one out on
 * every call; *buf owns it. `what` and `name` say what for, on failure. */
static int s_new_buffer(dnnl_memory_t mem, size_t bytes, void **buf, const char *what,
                        const char *name)
{
    int rc = 0;
    *buf = tc_cpu_dnnl_alloc(bytes);
    if (!*buf)
        return tc_fail(TC_ENOMEM, "out of memory for %s%s (%zu bytes)", what, name, bytes);
    TC_DNNL_TRY(dnnl_memory_set_data_handle(mem, *buf));
err:
    return rc;
}

int tc_cpu_dnnl_run(void *plan, double *ms)
{
    int rc = 0;
    tc_cpu_plan_t *p = plan;
    dnnl_primitive_desc_t pd = NULL;
    dnnl_primitive_t prim = NULL;
    void *tmp[MAX_BINDINGS] = {NULL}, *scratch = NULL, *fresh[MAX_BINDINGS] = {NULL};
    void *fw[MAX_BINDINGS] = {NULL};
    if (p->sel < 0)
        return tc_fail(TC_EINVAL, "cpu conv plan: no candidate selected before run");
    TC_TRY(tc_cpu_apply_threads(p->dev));
    const tc_cpu_dnnl_cand_t *c = &p->cands[p->sel];
    TC_TRY(s_cold_inputs(p));
    double t0 = s_now_ms();
    /* ideep creates backward primitive descriptors on every call. */
    if (p->bwd)
        TC_TRY(s_fetch_pd(p, c->alg_slot, c->impl, &pd));
    TC_DNNL_TRY(dnnl_primitive_create(&prim, pd ? pd : p->sel_pd));
    dnnl_exec_arg_t args[MAX_BINDINGS + 1];
    int nargs = 0;
    for (int b = 0; b < p->n_binds; b++) {
        tc_tensor_t t = p->binds[b].t;
        if (!p->binds[b].input && !tc_cpu_cold_rotates(&p->cold, t)) {
            /* A new output tensor, as the framework returns one per call
             * (with cold operands, the next output buffer: s_cold_inputs). */
            TC_TRY(s_new_buffer(p->user_mem[t], dnnl_memory_desc_get_size(&p->user_md[t]),
                                &fresh[b], "tensor ", tc_tensor_name(t)));
        }
        /* The framework's side of the call: the tensor itself, or the plain
         * copy a channels-last conv makes of it (cpu_conv.c). */
        dnnl_memory_t side = p->user_mem[t];
        if (p->fw_mem[t]) {
            TC_TRY(s_new_buffer(p->fw_mem[t], dnnl_memory_desc_get_size(&p->fw_md[t]), &fw[b],
                                "a plain copy of ", tc_tensor_name(t)));
            if (p->binds[b].input)
                TC_TRY(tc_cpu_dnnl_reorder(p, p->user_mem[t], p->fw_mem[t]));
            side = p->fw_mem[t];
        }
        if (p->inner[b]) {
            TC_TRY(s_new_buffer(p->inner[b], p->inner_bytes[b], &tmp[b], "a blocked copy of ",
                                tc_tensor_name(t)));
            if (p->binds[b].input)
                TC_TRY(tc_cpu_dnnl_reorder(p, side, p->inner[b]));
        }
        args[nargs++] = (dnnl_exec_arg_t){p->binds[b].arg, p->inner[b] ? p->inner[b] : side};
    }
    if (p->scratch) {
        TC_TRY(s_new_buffer(p->scratch, p->scratch_bytes, &scratch, "the scratchpad", ""));
        args[nargs++] = (dnnl_exec_arg_t){DNNL_ARG_SCRATCHPAD, p->scratch};
    }
    TC_DNNL_TRY(dnnl_primitive_execute(prim, p->dev->stream, nargs, args));
    for (int b = 0; b < p->n_binds; b++) {
        tc_tensor_t t = p->binds[b].t;
        if (p->binds[b].input)
            continue;
        if (p->fw_mem[t]) {
            TC_TRY(tc_cpu_dnnl_reorder(p, p->inner[b], p->fw_mem[t]));
            TC_TRY(tc_cpu_dnnl_reorder(p, p->fw_mem[t], p->user_mem[t]));
        } else if (p->inner[b]) {
            TC_TRY(tc_cpu_dnnl_reorder(p, p->inner[b], p->user_mem[t]));
        }
    }
    TC_DNNL_TRY(dnnl_stream_wait(p->dev->stream));
    for (int b = 0; b < MAX_BINDINGS; b++) {
        free(tmp[b]);
        free(fw[b]);
        tmp[b] = fw[b] = NULL;
    }
    free(scratch);
    scratch = NULL;
    *ms = s_now_ms() - t0;
    /* The new outputs replace the old ones (freed outside the timed region,
     * as a framework frees a tensor when it is no longer needed). */
    for (int b = 0; b < p->n_binds; b++) {
        if (!fresh[b])
            continue;
        free(p->out_buf[p->binds[b].t]);
        p->out_buf[p->binds[b].t] = fresh[b];
        fresh[b] = NULL;
    }
err:
    for (int b = 0; b < MAX_BINDINGS; b++) {
        free(tmp[b]);
        free(fw[b]);
        if (fresh[b]) {
            /* Failed: point the output back at its current buffer. */
            dnnl_memory_set_data_handle(p->user_mem[p->binds[b].t], p->out_buf[p->binds[b].t]);
            free(fresh[b]);
        }
    }
    free(scratch);
    if (prim)
        dnnl_primitive_destroy(prim);
    if (pd)
        dnnl_primitive_desc_destroy(pd);
    return rc;
}
