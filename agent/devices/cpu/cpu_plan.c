/* The CPU backend's conv plans: each conv is timed on the path the
 * framework sends it to (cpu_route.h), oneDNN (cpu_conv.c) or PyTorch's
 * native im2col + GEMM kernels (cpu_native.c), unless the spec forces one. */
#include "cpu_internal.h"

#include <stdlib.h>

typedef struct {
    bool native;
    tc_route_t route;
    void *impl;
} s_plan_t;

int tc_cpu_plan_create(void *ctx, const tc_conv_spec_t *spec, void **out)
{
    *out = NULL;
    tc_cpu_ctx_t *dev = ctx;
    tc_route_t route = TC_ROUTE_ONEDNN;
    switch (spec->path) {
    case TC_PATH_LIBRARY:
        break;
    case TC_PATH_NATIVE:
        route = spec->config.dilation_h != 1 || spec->config.dilation_w != 1
                    ? TC_ROUTE_NATIVE_DILATED
                    : TC_ROUTE_NATIVE;
        break;
    default:
        route = tc_route_conv(dev->rule, &spec->config, dev->threads, dev->onednn_enabled,
                              dev->bf16_onednn);
        break;
    }
    s_plan_t *p = calloc(1, sizeof *p);
    if (!p)
        return tc_fail(TC_ENOMEM, "out of memory creating a cpu conv plan");
    p->route = route;
    int rc;
    if (route == TC_ROUTE_ONEDNN) {
        rc = tc_cpu_dnnl_create(dev, spec, &p->impl);
    } else {
        p->native = true;
        /* bf16 on a CPU without oneDNN's bf16 support: the native
         * create explains that it is not mirrored. */
        rc = tc_cpu_native_create(dev, spec, route == TC_ROUTE_NATIVE_DILATED, &p->impl);
    }
    if (rc < 0) {
        free(p);
        return rc;
    }
    *out = p;
    return 0;
}

#define S_FORWARD(call_native, call_dnnl) (p->native ? (call_native) : (call_dnnl))

size_t tc_cpu_algo_count(void *plan)
{
    s_plan_t *p = plan;
    return S_FORWARD(tc_cpu_native_algo_count(p->impl), tc_cpu_dnnl_algo_count(p->impl));
}

const tc_algo_t *tc_cpu_algo(void *plan, size_t i)
{
    s_plan_t *p = plan;
    return S_FORWARD(tc_cpu_native_algo(p->impl, i), tc_cpu_dnnl_algo(p->impl, i));
}

int tc_cpu_select(void *plan, size_t i)
{
    s_plan_t *p = plan;
    return S_FORWARD(tc_cpu_native_select(p->impl, i), tc_cpu_dnnl_select(p->impl, i));
}

int tc_cpu_run(void *plan, double *ms)
{
    s_plan_t *p = plan;
    return S_FORWARD(tc_cpu_native_run(p->impl, ms), tc_cpu_dnnl_run(p->impl, ms));
}

int tc_cpu_read(void *plan, tc_tensor_t t, float *out, size_t count)
{
    s_plan_t *p = plan;
    return S_FORWARD(tc_cpu_native_read(p->impl, t, out, count),
                     tc_cpu_dnnl_read(p->impl, t, out, count));
}

const char *tc_cpu_plan_route(void *plan) { return tc_route_name(((s_plan_t *)plan)->route); }

void tc_cpu_plan_destroy(void *plan)
{
    s_plan_t *p = plan;
    if (!p)
        return;
    if (p->native)
        tc_cpu_native_destroy(p->impl);
    else
        tc_cpu_dnnl_destroy(p->impl);
    free(p);
}
