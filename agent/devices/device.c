#include "device.h"

#include "tc_error.h"
#include "tc_matmul_step.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const tc_backend_iface_t *const s_backends[] = {&tc_backend_cpu, &tc_backend_cuda, NULL};

const tc_backend_iface_t *const *tc_backends(void) { return s_backends; }

const char *tc_tensor_name(tc_tensor_t t)
{
    static const char *const names[TC_TENSOR_COUNT] = {"x", "w", "b", "y", "dy", "dx", "dw", "db"};
    return (unsigned)t < TC_TENSOR_COUNT ? names[t] : "?";
}

size_t tc_tensor_count(const tc_conv_config_t *c, tc_tensor_t t)
{
    size_t n = c->n, p = tc_conv_out_h(c), q = tc_conv_out_w(c);
    switch (t) {
    case TC_TENSOR_X:
    case TC_TENSOR_DX:
        return n * c->c * c->h * c->w;
    case TC_TENSOR_W:
    case TC_TENSOR_DW:
        return (size_t)tc_conv_weight_count(c);
    case TC_TENSOR_B:
    case TC_TENSOR_DB:
        return c->k;
    case TC_TENSOR_Y:
    case TC_TENSOR_DY:
        return n * c->k * p * q;
    default:
        return 0;
    }
}

tc_tensor_t tc_direction_output(Traincast__V1__Direction d)
{
    switch (d) {
    case TRAINCAST__V1__DIRECTION__DIRECTION_BWD_DATA:
        return TC_TENSOR_DX;
    case TRAINCAST__V1__DIRECTION__DIRECTION_BWD_FILTER:
        return TC_TENSOR_DW;
    default:
        return TC_TENSOR_Y;
    }
}

int tc_device_parse(const char *spec, const tc_backend_iface_t **iface, unsigned *index)
{
    if (!spec || !*spec)
        return tc_fail(TC_EUSAGE, "--device: empty device; use cpu or cuda:INDEX");
    for (const tc_backend_iface_t *const *b = s_backends; *b; b++) {
        size_t len = strlen((*b)->kind);
        if (strncmp(spec, (*b)->kind, len) != 0)
            continue;
        const char *rest = spec + len;
        if (*rest == '\0') {
            *iface = *b;
            *index = 0;
            return 0;
        }
        if (*rest == ':' && rest[1] >= '0' && rest[1] <= '9') {
            char *end;
            unsigned long v = strtoul(rest + 1, &end, 10);
            if (*end == '\0' && v < 1024) {
                if (!strcmp((*b)->kind, "cpu") && v != 0)
                    return tc_fail(TC_EUSAGE, "--device '%s': the CPU is one device, use 'cpu' "
                                              "(choose its size with --threads)", spec);
                *iface = *b;
                *index = (unsigned)v;
                return 0;
            }
        }
    }
    return tc_fail(TC_EUSAGE, "--device '%s' is not a device; use cpu, cuda or cuda:INDEX "
                              "('agent info' lists this machine's devices)", spec);
}

int tc_device_open(const char *spec, unsigned threads, tc_device_t **out)
{
    *out = NULL;
    const tc_backend_iface_t *iface;
    unsigned index;
    int rc = tc_device_parse(spec, &iface, &index);
    if (rc < 0)
        return rc;
    tc_device_t *self = calloc(1, sizeof *self);
    if (!self)
        return tc_fail(TC_ENOMEM, "out of memory opening device %s", spec);
    self->iface = iface;
    if (strcmp(iface->kind, "cpu") == 0)
        snprintf(self->spec, sizeof self->spec, "cpu");
    else
        snprintf(self->spec, sizeof self->spec, "%s:%u", iface->kind, index);
    rc = iface->open(index, threads, &self->ctx);
    if (rc < 0) {
        free(self);
        return rc;
    }
    *out = self;
    return 0;
}

void tc_device_close(tc_device_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    tc_device_t *self = *self_p;
    if (self->ctx)
        self->iface->close(self->ctx);
    free(self);
    *self_p = NULL;
}

int tc_conv_plan_create(tc_device_t *dev, const tc_conv_spec_t *spec, tc_conv_plan_t **out)
{
    *out = NULL;
    int rc = tc_conv_config_check(&spec->config);
    if (rc < 0)
        return rc;
    if (spec->config.n == 0)
        return tc_fail(TC_EINVAL, "conv config: the batch n must be > 0 to run it");
    if (tc_direction_name(spec->direction)[0] == 'u')
        return tc_fail(TC_EINVAL, "conv plan: direction must be fwd, bwd_data or bwd_filter");
    if (tc_policy_name(spec->policy)[0] == 'u')
        return tc_fail(TC_EINVAL, "conv plan: policy must be heuristic or exhaustive");
    tc_conv_plan_t *self = calloc(1, sizeof *self);
    if (!self)
        return tc_fail(TC_ENOMEM, "out of memory creating a conv plan");
    self->iface = dev->iface;
    rc = dev->iface->plan_create(dev->ctx, spec, &self->impl);
    if (rc < 0) {
        free(self);
        return rc;
    }
    *out = self;
    return 0;
}

int tc_matmul_plan_create(tc_device_t *dev, const tc_matmul_spec_t *spec,
                          tc_matmul_plan_t **out)
{
    *out = NULL;
    int rc = tc_matmul_config_check(&spec->config);
    if (rc < 0)
        return rc;
    if (spec->config.minibatch == 0)
        return tc_fail(TC_EINVAL, "matmul config: the mini-batch must be > 0 to run it");
    if (!dev->iface->matmul_create)
        return tc_fail(TC_EUNSUPPORTED, "the %s backend benchmarks no matmuls yet",
                       dev->iface->kind);
    tc_matmul_plan_t *self = calloc(1, sizeof *self);
    if (!self)
        return tc_fail(TC_ENOMEM, "out of memory creating a matmul plan");
    self->iface = dev->iface;
    self->spec = *spec;
    rc = tc_matmul_step_gemm(&spec->config, spec->direction, &self->gemm);
    if (rc == 0)
        rc = dev->iface->matmul_create(dev->ctx, spec, &self->impl);
    if (rc < 0) {
        free(self);
        return rc;
    }
    *out = self;
    return 0;
}

void tc_matmul_plan_destroy(tc_matmul_plan_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    tc_matmul_plan_t *self = *self_p;
    if (self->impl)
        self->iface->matmul_destroy(self->impl);
    free(self);
    *self_p = NULL;
}

size_t tc_gemm_tensor_count(const tc_gemm_t *g, tc_mm_tensor_t t)
{
    switch (t) {
    case TC_MM_TENSOR_A:
        return (size_t)(g->count * g->m * g->k);
    case TC_MM_TENSOR_B:
        return (size_t)(g->count * g->k * g->n);
    case TC_MM_TENSOR_C:
        return (size_t)(g->count * g->m * g->n);
    case TC_MM_TENSOR_BIAS:
        return g->bias ? (size_t)g->n : 0;
    default:
        return 0;
    }
}

void tc_conv_plan_destroy(tc_conv_plan_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    tc_conv_plan_t *self = *self_p;
    if (self->impl)
        self->iface->plan_destroy(self->impl);
    free(self);
    *self_p = NULL;
}

const char *tc_conv_path_name(tc_conv_path_t p)
{
    switch (p) {
    case TC_PATH_LIBRARY: return "library";
    case TC_PATH_NATIVE: return "native";
    default: return "framework";
    }
}

int tc_conv_path_parse(const char *text, tc_conv_path_t *out)
{
    for (int p = TC_PATH_FRAMEWORK; p <= TC_PATH_NATIVE; p++) {
        if (text && !strcmp(text, tc_conv_path_name((tc_conv_path_t)p))) {
            *out = (tc_conv_path_t)p;
            return 0;
        }
    }
    return tc_fail(TC_EUSAGE, "--path: expected framework (where the framework sends the conv), "
                              "library (always the vendor library) or native (the framework's "
                              "own kernels), got '%s'",
                   text ? text : "");
}

void tc_device_environment(tc_device_t *d, tc_device_env_t *out)
{
    memset(out, 0, sizeof *out);
    if (d->iface->environment)
        d->iface->environment(d->ctx, out);
}

int tc_device_canary(tc_device_t *d, double *ms)
{
    *ms = 0;
    if (!d->iface->canary)
        return tc_fail(TC_EUNSUPPORTED, "the %s device has no canary", d->iface->kind);
    return d->iface->canary(d->ctx, ms);
}
