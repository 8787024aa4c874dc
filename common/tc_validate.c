#include "tc_validate.h"

#include "tc_error.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define PATH_MAX_LEN 256

static int s_bad(const char *path, const char *field, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int s_bad(const char *path, const char *field, const char *fmt, ...)
{
    char why[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    return tc_fail(TC_EINVAL, "%s%s%s: %s", path, *path && *field ? "." : "", field, why);
}

static int s_text(const char *path, const char *field, const char *s, int required, size_t max)
{
    if (!s || !*s) {
        if (required)
            return s_bad(path, field, "must not be empty");
        return 0;
    }
    size_t n = strnlen(s, max + 1);
    if (n > max)
        return s_bad(path, field, "is longer than %zu characters", max);
    return 0;
}

static int s_pos(const char *path, const char *field, double v)
{
    if (!isfinite(v) || v <= 0)
        return s_bad(path, field, "must be a finite number > 0 (got %g)", v);
    return 0;
}

static int s_nonneg(const char *path, const char *field, double v)
{
    if (!isfinite(v) || v < 0)
        return s_bad(path, field, "must be a finite number >= 0 (got %g)", v);
    return 0;
}

static int s_count(const char *path, const char *field, size_t n)
{
    if (n > TC_MAX_ITEMS)
        return s_bad(path, field, "has %zu items, more than the limit of %u", n, TC_MAX_ITEMS);
    return 0;
}

#define CHECK(expr)                                                                                \
    do {                                                                                           \
        int rc_ = (expr);                                                                          \
        if (rc_ < 0)                                                                               \
            return rc_;                                                                            \
    } while (0)

int tc_validate_device(const Traincast__V1__Device *d, const char *path)
{
    if (!d)
        return s_bad(path, "", "is missing");
    if (d->kind != TRAINCAST__V1__DEVICE_KIND__DEVICE_KIND_CPU &&
        d->kind != TRAINCAST__V1__DEVICE_KIND__DEVICE_KIND_CUDA)
        return s_bad(path, "kind", "must be cpu or cuda (got %d)", (int)d->kind);
    CHECK(s_text(path, "name", d->name, 1, TC_MAX_NAME_LEN));
    CHECK(s_text(path, "uuid", d->uuid, 1, TC_MAX_NAME_LEN));
    CHECK(s_text(path, "compute_capability", d->compute_capability, 0, TC_MAX_NAME_LEN));
    CHECK(s_text(path, "driver_version", d->driver_version, 0, TC_MAX_NAME_LEN));
    CHECK(s_text(path, "runtime_version", d->runtime_version, 0, TC_MAX_NAME_LEN));
    CHECK(s_text(path, "library", d->library, 0, TC_MAX_NAME_LEN));
    CHECK(s_text(path, "library_version", d->library_version, 0, TC_MAX_NAME_LEN));
    CHECK(s_text(path, "host", d->host, 0, TC_MAX_NAME_LEN));
    if (d->kind == TRAINCAST__V1__DEVICE_KIND__DEVICE_KIND_CPU && d->threads == 0)
        return s_bad(path, "threads", "must be > 0 for a cpu device");
    if (d->memory_bytes > (1ull << 50))
        return s_bad(path, "memory_bytes", "is implausibly large (%llu)",
                     (unsigned long long)d->memory_bytes);
    return 0;
}

int tc_validate_conv_config(const Traincast__V1__ConvConfig *c, const char *path, int need_batch)
{
    if (!c)
        return s_bad(path, "", "is missing");
    if (need_batch && (c->n == 0 || c->n > TC_MAX_DIM))
        return s_bad(path, "n", "must be between 1 and %u (got %u)", TC_MAX_DIM, c->n);
    if (!need_batch && c->n != 0)
        return s_bad(path, "n", "must be 0 in a model's conv list (got %u)", c->n);
    const struct {
        const char *name;
        uint32_t v, max;
    } dims[] = {{"c", c->c, TC_MAX_DIM},        {"h", c->h, TC_MAX_DIM},
                {"w", c->w, TC_MAX_DIM},        {"k", c->k, TC_MAX_DIM},
                {"r", c->r, TC_MAX_KERNEL},     {"s", c->s, TC_MAX_KERNEL},
                {"stride_h", c->stride_h, 1024}, {"stride_w", c->stride_w, 1024},
                {"dilation_h", c->dilation_h, 1024}, {"dilation_w", c->dilation_w, 1024},
                {"groups", c->groups, TC_MAX_DIM}};
    for (size_t i = 0; i < sizeof dims / sizeof dims[0]; i++) {
        if (dims[i].v == 0 || dims[i].v > dims[i].max)
            return s_bad(path, dims[i].name, "must be between 1 and %u (got %u)", dims[i].max,
                         dims[i].v);
    }
    if (c->pad_h > TC_MAX_KERNEL || c->pad_w > TC_MAX_KERNEL)
        return s_bad(path, c->pad_h > TC_MAX_KERNEL ? "pad_h" : "pad_w", "must be at most %u",
                     TC_MAX_KERNEL);
    if (c->c % c->groups || c->k % c->groups)
        return s_bad(path, "groups", "must divide c (%u) and k (%u) (got %u)", c->c, c->k,
                     c->groups);
    uint64_t eff_r = (uint64_t)(c->r - 1) * c->dilation_h + 1;
    uint64_t eff_s = (uint64_t)(c->s - 1) * c->dilation_w + 1;
    if ((uint64_t)c->h + 2ull * c->pad_h < eff_r || (uint64_t)c->w + 2ull * c->pad_w < eff_s)
        return s_bad(path, "r", "the dilated %ux%u filter does not fit the padded %ux%u input",
                     c->r, c->s, c->h, c->w);
    if (tc_dtype_name(c->dtype)[0] == 'u')
        return s_bad(path, "dtype", "must be fp32, tf32, fp16 or bf16 (got %d)", (int)c->dtype);
    if (tc_layout_name(c->layout)[0] == 'u')
        return s_bad(path, "layout", "must be nchw or nhwc (got %d)", (int)c->layout);
    return 0;
}

static int s_conv_result(const Traincast__V1__ConvResult *r, const char *path)
{
    char sub[PATH_MAX_LEN];
    snprintf(sub, sizeof sub, "%s.config", path);
    CHECK(tc_validate_conv_config(r->config, sub, 1));
    if (tc_direction_name(r->direction)[0] == 'u')
        return s_bad(path, "direction", "must be fwd, bwd_data or bwd_filter (got %d)",
                     (int)r->direction);
    if (tc_policy_name(r->policy)[0] == 'u')
        return s_bad(path, "policy", "must be heuristic or exhaustive (got %d)", (int)r->policy);
    CHECK(s_text(path, "algo", r->algo, 1, TC_MAX_NAME_LEN));
    CHECK(s_pos(path, "median_ms", r->median_ms));
    CHECK(s_pos(path, "min_ms", r->min_ms));
    CHECK(s_pos(path, "max_ms", r->max_ms));
    CHECK(s_nonneg(path, "stddev_ms", r->stddev_ms));
    if (r->min_ms > r->median_ms * (1 + 1e-9) || r->median_ms > r->max_ms * (1 + 1e-9))
        return s_bad(path, "median_ms", "must lie within min_ms..max_ms (%g <= %g <= %g)",
                     r->min_ms, r->median_ms, r->max_ms);
    if (r->repetitions == 0)
        return s_bad(path, "repetitions", "must be > 0");
    CHECK(s_count(path, "samples_ms", r->n_samples_ms));
    if (r->n_sample_offsets_us && r->n_sample_offsets_us != r->n_samples_ms)
        return s_bad(path, "sample_offsets_us", "has %zu items but samples_ms has %zu",
                     r->n_sample_offsets_us, r->n_samples_ms);
    for (size_t i = 0; i < r->n_samples_ms; i++) {
        snprintf(sub, sizeof sub, "samples_ms[%zu]", i);
        CHECK(s_pos(path, sub, r->samples_ms[i]));
    }
    CHECK(s_count(path, "candidates", r->n_candidates));
    for (size_t i = 0; i < r->n_candidates; i++) {
        const Traincast__V1__AlgoTiming *a = r->candidates[i];
        snprintf(sub, sizeof sub, "%s.candidates[%zu]", path, i);
        if (!a)
            return s_bad(sub, "", "is missing");
        CHECK(s_text(sub, "algo", a->algo, 1, TC_MAX_NAME_LEN));
        CHECK(s_nonneg(sub, "time_ms", a->time_ms));
        CHECK(s_text(sub, "message", a->message, 0, TC_MAX_TEXT_LEN));
        if (tc_algo_status_name(a->status)[0] == 'u')
            return s_bad(sub, "status", "is not set");
    }
    return 0;
}

int tc_validate_conv_results(const Traincast__V1__ConvResults *r, const char *path)
{
    char sub[PATH_MAX_LEN];
    snprintf(sub, sizeof sub, "%s.device", path);
    CHECK(tc_validate_device(r->device, sub));
    CHECK(s_text(path, "backend", r->backend, 0, TC_MAX_NAME_LEN));
    if (r->n_results == 0)
        return s_bad(path, "results", "must not be empty");
    CHECK(s_count(path, "results", r->n_results));
    for (size_t i = 0; i < r->n_results; i++) {
        snprintf(sub, sizeof sub, "%s.results[%zu]", path, i);
        if (!r->results[i])
            return s_bad(sub, "", "is missing");
        CHECK(s_conv_result(r->results[i], sub));
    }
    return 0;
}

int tc_validate_model_graph(const Traincast__V1__ModelGraph *g, const char *path)
{
    char sub[PATH_MAX_LEN];
    if (!g)
        return s_bad(path, "", "is missing");
    CHECK(s_text(path, "model_id", g->model_id, 1, TC_MAX_NAME_LEN));
    CHECK(s_text(path, "name", g->name, 1, TC_MAX_NAME_LEN));
    CHECK(s_text(path, "source_sha256", g->source_sha256, 0, TC_MAX_NAME_LEN));
    if (g->input_c == 0 || g->input_h == 0 || g->input_w == 0 || g->input_h > TC_MAX_DIM ||
        g->input_w > TC_MAX_DIM || g->input_c > TC_MAX_DIM)
        return s_bad(path, "input_h", "input shape %ux%ux%u must be positive and at most %u",
                     g->input_c, g->input_h, g->input_w, TC_MAX_DIM);
    CHECK(s_nonneg(path, "flops", g->flops));
    CHECK(s_count(path, "layers", g->n_layers));
    for (size_t i = 0; i < g->n_layers; i++) {
        const Traincast__V1__Layer *l = g->layers[i];
        snprintf(sub, sizeof sub, "%s.layers[%zu]", path, i);
        if (!l)
            return s_bad(sub, "", "is missing");
        CHECK(s_text(sub, "name", l->name, 0, TC_MAX_NAME_LEN));
        CHECK(s_text(sub, "op", l->op, 1, TC_MAX_NAME_LEN));
        CHECK(s_text(sub, "op_class", l->op_class, 1, TC_MAX_NAME_LEN));
        CHECK(s_nonneg(sub, "flops", l->flops));
        if (l->n_out_shape > 8)
            return s_bad(sub, "out_shape", "has %zu dimensions, more than 8", l->n_out_shape);
    }
    CHECK(s_count(path, "convs", g->n_convs));
    for (size_t i = 0; i < g->n_convs; i++) {
        const Traincast__V1__ConvUsage *u = g->convs[i];
        snprintf(sub, sizeof sub, "%s.convs[%zu]", path, i);
        if (!u)
            return s_bad(sub, "", "is missing");
        if (u->multiplicity == 0)
            return s_bad(sub, "multiplicity", "must be > 0");
        char cfg[PATH_MAX_LEN];
        snprintf(cfg, sizeof cfg, "%s.config", sub);
        CHECK(tc_validate_conv_config(u->config, cfg, 0));
    }
    return 0;
}

int tc_validate_train_trace(const Traincast__V1__TrainTrace *t, const char *path)
{
    char sub[PATH_MAX_LEN];
    snprintf(sub, sizeof sub, "%s.device", path);
    CHECK(tc_validate_device(t->device, sub));
    CHECK(s_text(path, "framework", t->framework, 1, TC_MAX_NAME_LEN));
    CHECK(s_text(path, "framework_version", t->framework_version, 0, TC_MAX_NAME_LEN));
    CHECK(s_text(path, "library_version", t->library_version, 0, TC_MAX_NAME_LEN));
    CHECK(s_text(path, "model_id", t->model_id, 1, TC_MAX_NAME_LEN));
    CHECK(s_text(path, "amp", t->amp, 0, TC_MAX_NAME_LEN));
    CHECK(s_text(path, "optimizer", t->optimizer, 0, TC_MAX_NAME_LEN));
    CHECK(s_text(path, "runner", t->runner, 0, TC_MAX_TEXT_LEN));
    CHECK(s_text(path, "reason", t->reason, 0, TC_MAX_TEXT_LEN));
    if (t->batch == 0 || t->batch > TC_MAX_DIM)
        return s_bad(path, "batch", "must be between 1 and %u (got %u)", TC_MAX_DIM, t->batch);
    if (t->input_size == 0 || t->input_size > TC_MAX_DIM)
        return s_bad(path, "input_size", "must be between 1 and %u (got %u)", TC_MAX_DIM,
                     t->input_size);
    if (tc_dtype_name(t->dtype)[0] == 'u')
        return s_bad(path, "dtype", "must be fp32, tf32, fp16 or bf16 (got %d)", (int)t->dtype);
    if (tc_trace_status_name(t->status)[0] == 'u')
        return s_bad(path, "status", "must be ok, oom or failed (got %d)", (int)t->status);
    CHECK(s_count(path, "iterations", t->n_iterations));
    int ok = t->status == TRAINCAST__V1__TRACE_STATUS__TRACE_STATUS_OK;
    if (ok) {
        size_t timed = 0;
        for (size_t i = 0; i < t->n_iterations; i++)
            timed += t->iterations[i] && !t->iterations[i]->warmup;
        if (timed == 0)
            return s_bad(path, "iterations", "an ok trace needs at least one timed iteration");
        CHECK(s_pos(path, "median_ms", t->median_ms));
        CHECK(s_nonneg(path, "spread", t->spread));
    } else if (!t->reason || !*t->reason) {
        return s_bad(path, "reason", "must say why a trace is %s",
                     tc_trace_status_name(t->status));
    }
    for (size_t i = 0; i < t->n_iterations; i++) {
        snprintf(sub, sizeof sub, "%s.iterations[%zu]", path, i);
        if (!t->iterations[i])
            return s_bad(sub, "", "is missing");
        CHECK(s_pos(sub, "ms", t->iterations[i]->ms));
    }
    CHECK(s_count(path, "op_times", t->n_op_times));
    for (size_t i = 0; i < t->n_op_times; i++) {
        snprintf(sub, sizeof sub, "%s.op_times[%zu]", path, i);
        if (!t->op_times[i])
            return s_bad(sub, "", "is missing");
        CHECK(s_text(sub, "op_class", t->op_times[i]->op_class, 1, TC_MAX_NAME_LEN));
        CHECK(s_nonneg(sub, "ms", t->op_times[i]->ms));
    }
    if (t->graph) {
        snprintf(sub, sizeof sub, "%s.graph", path);
        CHECK(tc_validate_model_graph(t->graph, sub));
        if (strcmp(t->graph->model_id, t->model_id) != 0)
            return s_bad(path, "graph.model_id", "'%s' differs from the trace's model_id '%s'",
                         t->graph->model_id, t->model_id);
    }
    return 0;
}

int tc_validate_hello(const Traincast__V1__Hello *h, const char *path)
{
    char sub[PATH_MAX_LEN];
    CHECK(s_text(path, "agent_name", h->agent_name, 1, TC_MAX_NAME_LEN));
    CHECK(s_text(path, "agent_version", h->agent_version, 0, TC_MAX_NAME_LEN));
    CHECK(s_text(path, "host", h->host, 0, TC_MAX_NAME_LEN));
    CHECK(s_count(path, "devices", h->n_devices));
    for (size_t i = 0; i < h->n_devices; i++) {
        snprintf(sub, sizeof sub, "%s.devices[%zu]", path, i);
        CHECK(tc_validate_device(h->devices[i], sub));
    }
    return 0;
}

int tc_validate_envelope(const tc_envelope_t *env)
{
    if (env->protocol_version != TC_PROTOCOL_VERSION)
        return tc_fail(TC_EVERSION,
                       "protocol_version: this aggregator speaks version %u, the message has %u; "
                       "upgrade the older side",
                       TC_PROTOCOL_VERSION, env->protocol_version);
    if (!tc_msgid_valid(env->message_id))
        return s_bad("", "message_id", "must be a 26-character ULID (got '%.40s')",
                     env->message_id ? env->message_id : "");
    CHECK(s_text("", "agent_id", env->agent_id, 1, TC_MAX_NAME_LEN));
    switch (env->body_case) {
    case TRAINCAST__V1__ENVELOPE__BODY_HELLO:
        return tc_validate_hello(env->hello, "hello");
    case TRAINCAST__V1__ENVELOPE__BODY_CONV_RESULTS:
        return tc_validate_conv_results(env->conv_results, "conv_results");
    case TRAINCAST__V1__ENVELOPE__BODY_MODEL_GRAPH:
        return tc_validate_model_graph(env->model_graph, "model_graph");
    case TRAINCAST__V1__ENVELOPE__BODY_TRAIN_TRACE:
        return tc_validate_train_trace(env->train_trace, "train_trace");
    case TRAINCAST__V1__ENVELOPE__BODY__NOT_SET:
        return s_bad("", "body", "is not set");
    default:
        return 0;
    }
}
