/* Validation of each message an agent sends, field by field against the
 * limits of tc_validate.h: first the field checks (UTF-8, names and texts,
 * finite ranges, unsigned ranges, unix times and counts, each failing with
 * a message naming the field by its path), then one validator per message.
 * One subject, over 600 lines. */
#include "tc_validate.h"

#include "tc_error.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* Each field check returns 0, or TC_EINVAL with a message naming the field
 * as PATH.FIELD (just FIELD when PATH is ""). s_field_bad fails with
 * "PATH.FIELD: " and the formatted reason. */
static int s_field_bad(const char *path, const char *field, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int s_field_bad(const char *path, const char *field, const char *fmt, ...)
{
    char why[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    return tc_fail(TC_EINVAL, "%s%s%s: %s", path, *path && *field ? "." : "", field, why);
}

bool tc_utf8_valid(const char *s, size_t len)
{
    const unsigned char *p = (const unsigned char *)s, *end = p + len;
    while (p < end) {
        unsigned c = *p;
        if (c < 0x80) {
            p++;
            continue;
        }
        size_t n;
        unsigned cp, min;
        if (c >= 0xc2 && c <= 0xdf) {
            n = 1, cp = c & 0x1f, min = 0x80;
        } else if (c >= 0xe0 && c <= 0xef) {
            n = 2, cp = c & 0x0f, min = 0x800;
        } else if (c >= 0xf0 && c <= 0xf4) {
            n = 3, cp = c & 0x07, min = 0x10000;
        } else {
            return false; /* a continuation byte, an overlong lead, or past U+10FFFF */
        }
        if ((size_t)(end - p) <= n)
            return false;
        for (size_t i = 1; i <= n; i++) {
            if ((p[i] & 0xc0) != 0x80)
                return false;
            cp = cp << 6 | (p[i] & 0x3f);
        }
        if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
            return false;
        p += n + 1;
    }
    return true;
}

/* A string field: at most `max` bytes of UTF-8; names (`text` false) have no
 * control character, texts none but tab, newline and carriage return. */
static int s_field_string(const char *path, const char *field, const char *s, int required,
                    size_t max, bool text)
{
    if (!s || !*s) {
        if (required)
            return s_field_bad(path, field, "must not be empty");
        return 0;
    }
    size_t n = strnlen(s, max + 1);
    if (n > max)
        return s_field_bad(path, field, "is longer than %zu bytes", max);
    if (!tc_utf8_valid(s, n))
        return s_field_bad(path, field, "is not valid UTF-8");
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if ((c < 0x20 || c == 0x7f) && !(text && (c == '\t' || c == '\n' || c == '\r')))
            return s_field_bad(path, field, "contains the control character 0x%02x at byte %zu", c,
                                i);
    }
    return 0;
}

static int s_field_name(const char *path, const char *field, const char *s, int required)
{
    return s_field_string(path, field, s, required, TC_MAX_NAME_LEN, false);
}

static int s_field_text(const char *path, const char *field, const char *s)
{
    return s_field_string(path, field, s, 0, TC_MAX_TEXT_LEN, true);
}

/* A finite double in (0, max] or, with `zero`, [0, max]. */
static int s_field_range(const char *path, const char *field, double v, bool zero, double max)
{
    if (!isfinite(v) || v > max || (zero ? v < 0 : v <= 0))
        return s_field_bad(path, field, "must be a finite number in %s0, %g] (got %g)",
                            zero ? "[" : "(", max, v);
    return 0;
}

static int s_field_pos(const char *path, const char *field, double v)
{
    return s_field_range(path, field, v, false, TC_MAX_MS);
}

static int s_field_nonneg(const char *path, const char *field, double v)
{
    return s_field_range(path, field, v, true, TC_MAX_MS);
}

static int s_field_uint(const char *path, const char *field, unsigned long long v,
                  unsigned long long min, unsigned long long max)
{
    if (v < min || v > max)
        return s_field_bad(path, field, "must be between %llu and %llu (got %llu)", min, max, v);
    return 0;
}

/* A unix time in microseconds: 0 (unknown) or within 2000 .. 2100. */
static int s_field_time(const char *path, const char *field, int64_t us)
{
    if (us != 0 && (us < TC_MIN_TIME_US || us > TC_MAX_TIME_US))
        return s_field_bad(path, field,
                            "must be 0 or a unix time in microseconds between the years "
                            "2000 and 2100 (got %lld)",
                            (long long)us);
    return 0;
}

static int s_field_count(const char *path, const char *field, size_t n)
{
    if (n > TC_MAX_ITEMS)
        return s_field_bad(path, field, "has %zu items, more than the limit of %u", n,
                            TC_MAX_ITEMS);
    return 0;
}

#define PATH_MAX_LEN 256

#define CHECK(expr)                                                                                \
    do {                                                                                           \
        int rc_ = (expr);                                                                          \
        if (rc_ < 0)                                                                               \
            return rc_;                                                                            \
    } while (0)

int tc_validate_device(const Traincast__V1__Device *d, const char *path)
{
    if (!d)
        return s_field_bad(path, "", "is missing");
    if (d->kind != TRAINCAST__V1__DEVICE_KIND__DEVICE_KIND_CPU &&
        d->kind != TRAINCAST__V1__DEVICE_KIND__DEVICE_KIND_CUDA)
        return s_field_bad(path, "kind", "must be cpu or cuda (got %d)", (int)d->kind);
    CHECK(s_field_name(path, "name", d->name, 1));
    CHECK(s_field_name(path, "uuid", d->uuid, 1));
    CHECK(s_field_name(path, "compute_capability", d->compute_capability, 0));
    CHECK(s_field_name(path, "driver_version", d->driver_version, 0));
    CHECK(s_field_name(path, "runtime_version", d->runtime_version, 0));
    CHECK(s_field_name(path, "library", d->library, 0));
    CHECK(s_field_name(path, "library_version", d->library_version, 0));
    CHECK(s_field_name(path, "host", d->host, 0));
    CHECK(s_field_name(path, "framework", d->framework, 0));
    CHECK(s_field_name(path, "routing", d->routing, 0));
    CHECK(s_field_uint(path, "multiprocessors", d->multiprocessors, 0, TC_MAX_UNITS));
    unsigned min_threads = d->kind == TRAINCAST__V1__DEVICE_KIND__DEVICE_KIND_CPU;
    CHECK(s_field_uint(path, "threads", d->threads, min_threads, TC_MAX_UNITS));
    CHECK(s_field_uint(path, "memory_bytes", d->memory_bytes, 0, TC_MAX_BYTES));
    CHECK(s_field_uint(path, "clock_mhz", d->clock_mhz, 0, TC_MAX_MHZ));
    CHECK(s_field_uint(path, "memory_clock_mhz", d->memory_clock_mhz, 0, TC_MAX_MHZ));
    CHECK(s_field_uint(path, "index", d->index, 0, TC_MAX_GPU_INDEX));
    return 0;
}

int tc_validate_conv_config(const Traincast__V1__ConvConfig *c, const char *path, int need_batch)
{
    if (!c)
        return s_field_bad(path, "", "is missing");
    if (need_batch && (c->n == 0 || c->n > TC_MAX_BATCH))
        return s_field_bad(path, "n", "must be between 1 and %u (got %u)", TC_MAX_BATCH, c->n);
    if (!need_batch && c->n != 0)
        return s_field_bad(path, "n", "must be 0 in a model's conv list (got %u)", c->n);
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
            return s_field_bad(path, dims[i].name, "must be between 1 and %u (got %u)",
                                dims[i].max, dims[i].v);
    }
    if (c->pad_h > TC_MAX_KERNEL || c->pad_w > TC_MAX_KERNEL)
        return s_field_bad(path, c->pad_h > TC_MAX_KERNEL ? "pad_h" : "pad_w",
                            "must be at most %u", TC_MAX_KERNEL);
    if (c->c % c->groups || c->k % c->groups)
        return s_field_bad(path, "groups", "must divide c (%u) and k (%u) (got %u)", c->c, c->k,
                            c->groups);
    uint64_t eff_r = (uint64_t)(c->r - 1) * c->dilation_h + 1;
    uint64_t eff_s = (uint64_t)(c->s - 1) * c->dilation_w + 1;
    if ((uint64_t)c->h + 2ull * c->pad_h < eff_r || (uint64_t)c->w + 2ull * c->pad_w < eff_s)
        return s_field_bad(path, "r",
                            "the dilated %ux%u filter does not fit the padded %ux%u input", c->r,
                            c->s, c->h, c->w);
    if (tc_dtype_name(c->dtype)[0] == 'u')
        return s_field_bad(path, "dtype", "must be fp32, fp32_strict, tf32, fp16 or bf16 (got %d)",
                            (int)c->dtype);
    if (tc_layout_name(c->layout)[0] == 'u')
        return s_field_bad(path, "layout", "must be nchw or nhwc (got %d)", (int)c->layout);
    return 0;
}

static int s_algo_id(const char *path, const char *field, int32_t id)
{
    if (id < -1)
        return s_field_bad(path, field, "must be -1 (none) or >= 0 (got %d)", (int)id);
    return 0;
}

static int s_candidate(const Traincast__V1__AlgoTiming *a, const char *path)
{
    if (!a)
        return s_field_bad(path, "", "is missing");
    CHECK(s_field_name(path, "algo", a->algo, 1));
    CHECK(s_algo_id(path, "algo_id", a->algo_id));
    CHECK(s_field_nonneg(path, "time_ms", a->time_ms));
    CHECK(s_field_uint(path, "workspace_bytes", a->workspace_bytes, 0, TC_MAX_BYTES));
    CHECK(s_field_text(path, "message", a->message));
    if (tc_algo_status_name(a->status)[0] == 'u')
        return s_field_bad(path, "status", "is not set");
    return 0;
}

/* The load a measurement was taken under (absent: older agents). */
static int s_load(const Traincast__V1__Load *l, const char *path)
{
    if (!l)
        return 0;
    char sub[PATH_MAX_LEN];
    snprintf(sub, sizeof sub, "%s.load", path);
    CHECK(s_field_range(sub, "others_pct", l->others_pct, true, 100.0));
    CHECK(s_field_range(sub, "steal_pct", l->steal_pct, true, 100.0));
    CHECK(s_field_range(sub, "threshold_pct", l->threshold_pct, true, 100.0));
    CHECK(s_field_uint(sub, "gpu_other_processes", l->gpu_other_processes, 0, TC_MAX_UNITS));
    CHECK(s_field_uint(sub, "remeasured", l->remeasured, 0, TC_MAX_REPEATS));
    CHECK(s_field_nonneg(sub, "canary_ms", l->canary_ms));
    CHECK(s_field_time(sub, "supersedes_us", l->supersedes_us));
    return 0;
}

int tc_validate_matmul_config(const Traincast__V1__MatmulConfig *c, const char *path,
                              int need_batch)
{
    if (!c)
        return s_field_bad(path, "", "is missing");
    if (need_batch && (c->minibatch == 0 || c->minibatch > TC_MAX_BATCH))
        return s_field_bad(path, "minibatch", "must be between 1 and %u (got %u)", TC_MAX_BATCH,
                            c->minibatch);
    if (!need_batch && c->minibatch != 0)
        return s_field_bad(path, "minibatch", "must be 0 in a model's matmul list (got %u)",
                            c->minibatch);
    const struct {
        const char *name;
        uint32_t v;
    } dims[] = {{"batch", c->batch}, {"m", c->m}, {"n", c->n}, {"k", c->k}};
    for (size_t i = 0; i < sizeof dims / sizeof dims[0]; i++) {
        if (dims[i].v == 0 || dims[i].v > TC_MAX_DIM)
            return s_field_bad(path, dims[i].name, "must be between 1 and %u (got %u)",
                                TC_MAX_DIM, dims[i].v);
    }
    if (c->minibatch_in > 2)
        return s_field_bad(path, "minibatch_in", "must be 0 (none), 1 (rows) or 2 (batch) (got %u)",
                            c->minibatch_in);
    /* A, B and the product at the mini-batch (0 counts as 1): it scales
     * all three where it is in the batch, A and C where it is in the rows. */
    double mb = c->minibatch ? c->minibatch : 1, b = c->batch;
    double scale_b = c->minibatch_in == 2 ? mb : 1, scale_ac = c->minibatch_in ? mb : 1;
    const struct {
        const char *field, *operand;
        double elems;
    } ops[] = {{"m", "A", b * c->m * c->k * scale_ac},
               {"n", "B", b * c->k * c->n * scale_b},
               {"m", "the product", b * c->m * c->n * scale_ac}};
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++) {
        if (ops[i].elems > (double)TC_MAX_ELEMS)
            return s_field_bad(path, ops[i].field, "makes %s %.3g elements, more than %.3g",
                                ops[i].operand, ops[i].elems, (double)TC_MAX_ELEMS);
    }
    if (tc_dtype_name(c->dtype)[0] == 'u')
        return s_field_bad(path, "dtype", "must be fp32, fp32_strict, tf32, fp16 or bf16 (got %d)",
                            (int)c->dtype);
    return 0;
}

/* One result; `matmul` says which list it is in, and so which key it has
 * (a conv's config or a matmul's, never both). */
static int s_conv_result(const Traincast__V1__ConvResult *r, const char *path, bool matmul)
{
    char sub[PATH_MAX_LEN];
    if (matmul) {
        if (r->config)
            return s_field_bad(path, "config", "must be absent in a matmul result");
        snprintf(sub, sizeof sub, "%s.matmul", path);
        CHECK(tc_validate_matmul_config(r->matmul, sub, 1));
    } else {
        if (r->matmul)
            return s_field_bad(path, "matmul", "must be absent in a conv result");
        snprintf(sub, sizeof sub, "%s.config", path);
        CHECK(tc_validate_conv_config(r->config, sub, 1));
    }
    if (tc_direction_name(r->direction)[0] == 'u')
        return s_field_bad(path, "direction", "must be fwd, bwd_data or bwd_filter (got %d)",
                            (int)r->direction);
    if (tc_policy_name(r->policy)[0] == 'u')
        return s_field_bad(path, "policy", "must be heuristic or exhaustive (got %d)",
                            (int)r->policy);
    CHECK(s_field_name(path, "algo", r->algo, 1));
    CHECK(s_algo_id(path, "algo_id", r->algo_id));
    CHECK(s_field_pos(path, "median_ms", r->median_ms));
    CHECK(s_field_pos(path, "min_ms", r->min_ms));
    CHECK(s_field_pos(path, "max_ms", r->max_ms));
    CHECK(s_field_nonneg(path, "stddev_ms", r->stddev_ms));
    if (r->min_ms > r->median_ms * (1 + 1e-9) || r->median_ms > r->max_ms * (1 + 1e-9))
        return s_field_bad(path, "median_ms", "must lie within min_ms..max_ms (%g <= %g <= %g)",
                            r->min_ms, r->median_ms, r->max_ms);
    CHECK(s_field_uint(path, "repetitions", r->repetitions, 1, TC_MAX_ITEMS));
    CHECK(s_field_uint(path, "workspace_bytes", r->workspace_bytes, 0, TC_MAX_BYTES));
    CHECK(s_field_time(path, "measured_at_us", r->measured_at_us));
    CHECK(s_field_name(path, "route", r->route, 0));
    CHECK(s_field_uint(path, "sm_clock_mhz", r->sm_clock_mhz, 0, TC_MAX_MHZ));
    CHECK(s_field_range(path, "power_w", r->power_w, true, TC_MAX_WATTS));
    CHECK(s_load(r->load, path));
    if (r->load && r->load->supersedes_us &&
        (!r->measured_at_us || r->load->supersedes_us >= r->measured_at_us))
        return s_field_bad(path, "load.supersedes_us",
                            "must name a time before measured_at_us (%lld; got %lld)",
                            (long long)r->measured_at_us, (long long)r->load->supersedes_us);
    CHECK(s_field_count(path, "samples_ms", r->n_samples_ms));
    if (r->n_sample_offsets_us && r->n_sample_offsets_us != r->n_samples_ms)
        return s_field_bad(path, "sample_offsets_us", "has %zu items but samples_ms has %zu",
                            r->n_sample_offsets_us, r->n_samples_ms);
    for (size_t i = 0; i < r->n_samples_ms; i++) {
        snprintf(sub, sizeof sub, "samples_ms[%zu]", i);
        CHECK(s_field_pos(path, sub, r->samples_ms[i]));
    }
    for (size_t i = 0; i < r->n_sample_offsets_us; i++) {
        int64_t o = r->sample_offsets_us[i];
        if (o < 0 || o > TC_MAX_OFFSET_US) {
            snprintf(sub, sizeof sub, "sample_offsets_us[%zu]", i);
            return s_field_bad(path, sub, "must be between 0 and %lld (got %lld)",
                                TC_MAX_OFFSET_US, (long long)o);
        }
    }
    CHECK(s_field_count(path, "candidates", r->n_candidates));
    for (size_t i = 0; i < r->n_candidates; i++) {
        snprintf(sub, sizeof sub, "%s.candidates[%zu]", path, i);
        CHECK(s_candidate(r->candidates[i], sub));
    }
    return 0;
}

int tc_validate_conv_results(const Traincast__V1__ConvResults *r, const char *path)
{
    char sub[PATH_MAX_LEN];
    if (!r)
        return s_field_bad(path, "", "is missing");
    snprintf(sub, sizeof sub, "%s.device", path);
    CHECK(tc_validate_device(r->device, sub));
    CHECK(s_field_name(path, "backend", r->backend, 0));
    if (r->n_results == 0 && r->n_matmul_results == 0)
        return s_field_bad(path, "results", "must not be empty (nor matmul_results)");
    if (r->n_results + r->n_matmul_results > TC_MAX_RESULTS_PER_MESSAGE)
        return s_field_bad(path, "results",
                            "has %zu results, more than the limit of %u per message",
                            r->n_results + r->n_matmul_results, TC_MAX_RESULTS_PER_MESSAGE);
    for (size_t i = 0; i < r->n_results; i++) {
        snprintf(sub, sizeof sub, "%s.results[%zu]", path, i);
        if (!r->results[i])
            return s_field_bad(sub, "", "is missing");
        CHECK(s_conv_result(r->results[i], sub, false));
    }
    for (size_t i = 0; i < r->n_matmul_results; i++) {
        snprintf(sub, sizeof sub, "%s.matmul_results[%zu]", path, i);
        if (!r->matmul_results[i])
            return s_field_bad(sub, "", "is missing");
        CHECK(s_conv_result(r->matmul_results[i], sub, true));
    }
    return 0;
}

static int s_layer(const Traincast__V1__Layer *l, const char *path)
{
    if (!l)
        return s_field_bad(path, "", "is missing");
    CHECK(s_field_name(path, "name", l->name, 0));
    CHECK(s_field_name(path, "op", l->op, 1));
    CHECK(s_field_name(path, "op_class", l->op_class, 1));
    CHECK(s_field_uint(path, "params", l->params, 0, TC_MAX_PARAMS));
    CHECK(s_field_range(path, "flops", l->flops, true, TC_MAX_FLOPS));
    CHECK(s_field_uint(path, "elems_in", l->elems_in, 0, TC_MAX_ELEMS));
    CHECK(s_field_uint(path, "elems_out", l->elems_out, 0, TC_MAX_ELEMS));
    if (l->n_out_shape > 8)
        return s_field_bad(path, "out_shape", "has %zu dimensions, more than 8", l->n_out_shape);
    for (size_t i = 0; i < l->n_out_shape; i++) {
        if (l->out_shape[i] < 0 || l->out_shape[i] > TC_MAX_SHAPE) {
            char sub[32];
            snprintf(sub, sizeof sub, "out_shape[%zu]", i);
            return s_field_bad(path, sub, "must be between 0 and %lld (got %lld)", TC_MAX_SHAPE,
                                (long long)l->out_shape[i]);
        }
    }
    return 0;
}

int tc_validate_model_graph(const Traincast__V1__ModelGraph *g, const char *path)
{
    char sub[PATH_MAX_LEN];
    if (!g)
        return s_field_bad(path, "", "is missing");
    CHECK(s_field_name(path, "model_id", g->model_id, 1));
    CHECK(s_field_name(path, "name", g->name, 1));
    CHECK(s_field_name(path, "source_sha256", g->source_sha256, 0));
    CHECK(s_field_uint(path, "input_c", g->input_c, 1, TC_MAX_DIM));
    CHECK(s_field_uint(path, "input_h", g->input_h, 1, TC_MAX_DIM));
    CHECK(s_field_uint(path, "input_w", g->input_w, 1, TC_MAX_DIM));
    CHECK(s_field_uint(path, "params", g->params, 0, TC_MAX_PARAMS));
    CHECK(s_field_range(path, "flops", g->flops, true, TC_MAX_FLOPS));
    CHECK(s_field_count(path, "layers", g->n_layers));
    for (size_t i = 0; i < g->n_layers; i++) {
        snprintf(sub, sizeof sub, "%s.layers[%zu]", path, i);
        CHECK(s_layer(g->layers[i], sub));
    }
    CHECK(s_field_count(path, "convs", g->n_convs));
    for (size_t i = 0; i < g->n_convs; i++) {
        const Traincast__V1__ConvUsage *u = g->convs[i];
        snprintf(sub, sizeof sub, "%s.convs[%zu]", path, i);
        if (!u)
            return s_field_bad(sub, "", "is missing");
        CHECK(s_field_uint(sub, "multiplicity", u->multiplicity, 1, TC_MAX_ITEMS));
        char cfg[PATH_MAX_LEN];
        snprintf(cfg, sizeof cfg, "%s.config", sub);
        CHECK(tc_validate_conv_config(u->config, cfg, 0));
    }
    CHECK(s_field_count(path, "matmuls", g->n_matmuls));
    if (g->n_matmuls && !g->matmuls_listed)
        return s_field_bad(path, "matmuls_listed", "must be true when matmuls are listed");
    for (size_t i = 0; i < g->n_matmuls; i++) {
        const Traincast__V1__MatmulUsage *u = g->matmuls[i];
        snprintf(sub, sizeof sub, "%s.matmuls[%zu]", path, i);
        if (!u)
            return s_field_bad(sub, "", "is missing");
        CHECK(s_field_uint(sub, "multiplicity", u->multiplicity, 1, TC_MAX_ITEMS));
        char cfg[PATH_MAX_LEN];
        snprintf(cfg, sizeof cfg, "%s.config", sub);
        CHECK(tc_validate_matmul_config(u->config, cfg, 0));
    }
    return 0;
}

static int s_iteration(const Traincast__V1__Iteration *it, const char *path)
{
    if (!it)
        return s_field_bad(path, "", "is missing");
    CHECK(s_field_uint(path, "repeat", it->repeat, 0, TC_MAX_REPEATS));
    CHECK(s_field_uint(path, "index", it->index, 0, TC_MAX_ITEMS));
    CHECK(s_field_pos(path, "ms", it->ms));
    CHECK(s_field_time(path, "at_us", it->at_us));
    return 0;
}

/* A trace's clock, power and energy, and the counter that measured it. */
static int s_trace_energy(const Traincast__V1__TrainTrace *t, const char *path)
{
    CHECK(s_field_uint(path, "sm_clock_mhz", t->sm_clock_mhz, 0, TC_MAX_MHZ));
    CHECK(s_field_range(path, "power_w", t->power_w, true, TC_MAX_WATTS));
    CHECK(s_field_range(path, "energy_j", t->energy_j, true, TC_MAX_ENERGY_J));
    CHECK(s_field_name(path, "energy_source", t->energy_source, 0));
    CHECK(s_field_text(path, "energy_absent", t->energy_absent));
    if (t->energy_source && *t->energy_source && strcmp(t->energy_source, "nvml") &&
        strcmp(t->energy_source, "rapl"))
        return s_field_bad(path, "energy_source",
                            "must be \"nvml\", \"rapl\" or empty (got \"%s\")", t->energy_source);
    if (t->energy_j > 0 && !(t->energy_source && *t->energy_source))
        return s_field_bad(path, "energy_j",
                            "needs an energy_source saying which counter measured it");
    return 0;
}

/* The settings a trace ran with: named, sorted by name, each once. */
static int s_trace_settings(const Traincast__V1__TrainTrace *t, const char *path)
{
    char sub[PATH_MAX_LEN];
    if (t->n_settings > TC_MAX_SETTINGS)
        return s_field_bad(path, "settings", "has %zu items, more than the limit of %u",
                            t->n_settings, TC_MAX_SETTINGS);
    for (size_t i = 0; i < t->n_settings; i++) {
        snprintf(sub, sizeof sub, "%s.settings[%zu]", path, i);
        if (!t->settings[i])
            return s_field_bad(sub, "", "is missing");
        CHECK(s_field_name(sub, "name", t->settings[i]->name, 1));
        CHECK(s_field_name(sub, "value", t->settings[i]->value, 0));
        if (i > 0 && strcmp(t->settings[i - 1]->name, t->settings[i]->name) >= 0)
            return s_field_bad(sub, "name",
                                "'%s' is out of order or repeated (settings are sorted by "
                                "name, each once)",
                                t->settings[i]->name);
    }
    return 0;
}

/* Its status and iterations: an ok trace has a timed iteration, a median
 * and a spread; any other says why. */
static int s_trace_outcome(const Traincast__V1__TrainTrace *t, const char *path)
{
    char sub[PATH_MAX_LEN];
    if (tc_trace_status_name(t->status)[0] == 'u')
        return s_field_bad(path, "status", "must be ok, oom or failed (got %d)", (int)t->status);
    CHECK(s_field_count(path, "iterations", t->n_iterations));
    if (t->status == TRAINCAST__V1__TRACE_STATUS__TRACE_STATUS_OK) {
        size_t timed = 0;
        for (size_t i = 0; i < t->n_iterations; i++)
            timed += t->iterations[i] && !t->iterations[i]->warmup;
        if (timed == 0)
            return s_field_bad(path, "iterations",
                                "an ok trace needs at least one timed iteration");
        CHECK(s_field_pos(path, "median_ms", t->median_ms));
        CHECK(s_field_range(path, "spread", t->spread, true, TC_MAX_SPREAD));
    } else if (!t->reason || !*t->reason) {
        return s_field_bad(path, "reason", "must say why a trace is %s",
                            tc_trace_status_name(t->status));
    }
    for (size_t i = 0; i < t->n_iterations; i++) {
        snprintf(sub, sizeof sub, "%s.iterations[%zu]", path, i);
        CHECK(s_iteration(t->iterations[i], sub));
    }
    return 0;
}

/* The profiler's time per op class. */
static int s_trace_op_times(const Traincast__V1__TrainTrace *t, const char *path)
{
    char sub[PATH_MAX_LEN];
    CHECK(s_field_count(path, "op_times", t->n_op_times));
    for (size_t i = 0; i < t->n_op_times; i++) {
        snprintf(sub, sizeof sub, "%s.op_times[%zu]", path, i);
        if (!t->op_times[i])
            return s_field_bad(sub, "", "is missing");
        CHECK(s_field_name(sub, "op_class", t->op_times[i]->op_class, 1));
        CHECK(s_field_nonneg(sub, "ms", t->op_times[i]->ms));
    }
    return 0;
}

int tc_validate_train_trace(const Traincast__V1__TrainTrace *t, const char *path)
{
    char sub[PATH_MAX_LEN];
    if (!t)
        return s_field_bad(path, "", "is missing");
    snprintf(sub, sizeof sub, "%s.device", path);
    CHECK(tc_validate_device(t->device, sub));
    CHECK(s_field_name(path, "framework", t->framework, 1));
    CHECK(s_field_name(path, "framework_version", t->framework_version, 0));
    CHECK(s_field_name(path, "library_version", t->library_version, 0));
    CHECK(s_field_name(path, "model_id", t->model_id, 1));
    CHECK(s_field_name(path, "amp", t->amp, 0));
    CHECK(s_field_name(path, "optimizer", t->optimizer, 0));
    CHECK(s_field_text(path, "runner", t->runner));
    CHECK(s_field_text(path, "reason", t->reason));
    CHECK(s_field_uint(path, "batch", t->batch, 1, TC_MAX_BATCH));
    CHECK(s_field_uint(path, "input_size", t->input_size, 1, TC_MAX_DIM));
    if (tc_dtype_name(t->dtype)[0] == 'u')
        return s_field_bad(path, "dtype", "must be fp32, fp32_strict, tf32, fp16 or bf16 (got %d)",
                            (int)t->dtype);
    if (t->policy && tc_policy_name(t->policy)[0] == 'u')
        return s_field_bad(path, "policy", "must be unset, heuristic or exhaustive (got %d)",
                            (int)t->policy);
    CHECK(s_field_uint(path, "warmup", t->warmup, 0, TC_MAX_ITEMS));
    CHECK(s_field_uint(path, "iters", t->iters, 0, TC_MAX_ITEMS));
    CHECK(s_field_uint(path, "repeats", t->repeats, 0, TC_MAX_REPEATS));
    CHECK(s_field_uint(path, "threads", t->threads, 0, TC_MAX_UNITS));
    CHECK(s_field_uint(path, "peak_memory_bytes", t->peak_memory_bytes, 0, TC_MAX_BYTES));
    CHECK(s_field_time(path, "started_at_us", t->started_at_us));
    CHECK(s_trace_energy(t, path));
    CHECK(s_load(t->load, path));
    CHECK(s_trace_settings(t, path));
    CHECK(s_trace_outcome(t, path));
    CHECK(s_trace_op_times(t, path));
    if (t->graph) {
        snprintf(sub, sizeof sub, "%s.graph", path);
        CHECK(tc_validate_model_graph(t->graph, sub));
        if (strcmp(t->graph->model_id, t->model_id) != 0)
            return s_field_bad(path, "graph.model_id",
                                "'%s' differs from the trace's model_id '%s'", t->graph->model_id,
                                t->model_id);
    }
    return 0;
}

int tc_validate_hello(const Traincast__V1__Hello *h, const char *path)
{
    char sub[PATH_MAX_LEN];
    if (!h)
        return s_field_bad(path, "", "is missing");
    CHECK(s_field_name(path, "agent_name", h->agent_name, 1));
    CHECK(s_field_name(path, "agent_version", h->agent_version, 0));
    CHECK(s_field_name(path, "host", h->host, 0));
    CHECK(s_field_count(path, "devices", h->n_devices));
    for (size_t i = 0; i < h->n_devices; i++) {
        snprintf(sub, sizeof sub, "%s.devices[%zu]", path, i);
        CHECK(tc_validate_device(h->devices[i], sub));
    }
    return 0;
}

static int s_job_id(const char *path, const char *id)
{
    if (!id || !*id || strlen(id) > TC_MAX_JOB_ID_LEN)
        return s_field_bad(path, "job_id", "must be 1 to %d bytes", TC_MAX_JOB_ID_LEN);
    return s_field_name(path, "job_id", id, 1);
}

int tc_validate_heartbeat(const Traincast__V1__Heartbeat *h, const char *path)
{
    if (!h)
        return s_field_bad(path, "", "is missing");
    CHECK(s_field_uint(path, "spool_backlog", h->spool_backlog, 0, TC_MAX_COUNT));
    CHECK(s_field_uint(path, "uptime_s", h->uptime_s, 0, TC_MAX_UPTIME_S));
    if (h->running_job_id && strlen(h->running_job_id) > TC_MAX_JOB_ID_LEN)
        return s_field_bad(path, "running_job_id", "must be at most %d bytes", TC_MAX_JOB_ID_LEN);
    CHECK(s_field_name(path, "running_job_id", h->running_job_id, 0));
    return 0;
}

int tc_validate_job_progress(const Traincast__V1__JobProgress *p, const char *path)
{
    if (!p)
        return s_field_bad(path, "", "is missing");
    CHECK(s_job_id(path, p->job_id));
    if (p->state != TRAINCAST__V1__JOB_STATE__JOB_STATE_RUNNING &&
        p->state != TRAINCAST__V1__JOB_STATE__JOB_STATE_DONE &&
        p->state != TRAINCAST__V1__JOB_STATE__JOB_STATE_FAILED)
        return s_field_bad(path, "state", "must be running, done or failed (got %d)",
                            (int)p->state);
    CHECK(s_field_uint(path, "done", p->done, 0, TC_MAX_COUNT));
    CHECK(s_field_uint(path, "total", p->total, 0, TC_MAX_COUNT));
    if (p->total && p->done > p->total)
        return s_field_bad(path, "done", "%u is more than total %u", p->done, p->total);
    CHECK(s_field_text(path, "message", p->message));
    return 0;
}

int tc_validate_bench_request(const Traincast__V1__BenchRequest *r, const char *path)
{
    char sub[PATH_MAX_LEN];
    if (!r)
        return s_field_bad(path, "", "is missing");
    CHECK(s_job_id(path, r->job_id));
    CHECK(s_field_name(path, "device_uuid", r->device_uuid, 1));
    if (r->n_configs == 0 && r->n_matmuls == 0)
        return s_field_bad(path, "configs", "must not be empty (nor matmuls)");
    CHECK(s_field_count(path, "configs", r->n_configs));
    CHECK(s_field_count(path, "matmuls", r->n_matmuls));
    for (size_t i = 0; i < r->n_configs; i++) {
        snprintf(sub, sizeof sub, "%s.configs[%zu]", path, i);
        CHECK(tc_validate_conv_config(r->configs[i], sub, 1));
    }
    for (size_t i = 0; i < r->n_matmuls; i++) {
        snprintf(sub, sizeof sub, "%s.matmuls[%zu]", path, i);
        CHECK(tc_validate_matmul_config(r->matmuls[i], sub, 1));
    }
    if (r->n_directions > 3)
        return s_field_bad(path, "directions", "has %zu items, at most 3", r->n_directions);
    for (size_t i = 0; i < r->n_directions; i++) {
        if (tc_direction_name(r->directions[i])[0] == 'u') {
            snprintf(sub, sizeof sub, "directions[%zu]", i);
            return s_field_bad(path, sub, "must be fwd, bwd_data or bwd_filter (got %d)",
                                (int)r->directions[i]);
        }
    }
    if (r->policy && tc_policy_name(r->policy)[0] == 'u')
        return s_field_bad(path, "policy", "must be unset, heuristic or exhaustive (got %d)",
                            (int)r->policy);
    return 0;
}

int tc_validate_trace_request(const Traincast__V1__TraceRequest *r, const char *path)
{
    char sub[PATH_MAX_LEN];
    if (!r)
        return s_field_bad(path, "", "is missing");
    CHECK(s_job_id(path, r->job_id));
    CHECK(s_field_name(path, "device_uuid", r->device_uuid, 1));
    if (r->n_models == 0 || r->n_models > 10000)
        return s_field_bad(path, "models", "must have 1 to 10000 items (got %zu)", r->n_models);
    for (size_t i = 0; i < r->n_models; i++) {
        snprintf(sub, sizeof sub, "models[%zu]", i);
        CHECK(s_field_string(path, sub, r->models[i], 1, TC_MAX_TEXT_LEN, false));
    }
    if (r->n_batches == 0 || r->n_batches > 10000)
        return s_field_bad(path, "batches", "must have 1 to 10000 items (got %zu)", r->n_batches);
    for (size_t i = 0; i < r->n_batches; i++) {
        snprintf(sub, sizeof sub, "batches[%zu]", i);
        CHECK(s_field_uint(path, sub, r->batches[i], 1, TC_MAX_BATCH));
    }
    CHECK(s_field_uint(path, "input_size", r->input_size, 0, TC_MAX_DIM));
    CHECK(s_field_uint(path, "warmup", r->warmup, 0, TC_MAX_ITEMS));
    CHECK(s_field_uint(path, "iters", r->iters, 0, TC_MAX_ITEMS));
    CHECK(s_field_uint(path, "repeats", r->repeats, 0, TC_MAX_REPEATS));
    return 0;
}

int tc_validate_agent_id(const char *agent_id)
{
    return s_field_name("", "agent_id", agent_id, 1);
}

int tc_validate_envelope(const tc_envelope_t *env)
{
    if (env->protocol_version != TC_PROTOCOL_VERSION)
        return tc_fail(TC_EVERSION,
                       "protocol_version: this aggregator speaks version %u, the message has %u; "
                       "upgrade the older side",
                       TC_PROTOCOL_VERSION, env->protocol_version);
    if (!tc_msgid_valid(env->message_id))
        return s_field_bad("", "message_id", "must be a 26-character ULID (got '%.40s')",
                            env->message_id ? env->message_id : "");
    CHECK(s_field_name("", "agent_id", env->agent_id, 1));
    CHECK(s_field_time("", "sent_at_us", env->sent_at_us));
    switch (env->body_case) {
    case TRAINCAST__V1__ENVELOPE__BODY_HELLO:
        return tc_validate_hello(env->hello, "hello");
    case TRAINCAST__V1__ENVELOPE__BODY_CONV_RESULTS:
        return tc_validate_conv_results(env->conv_results, "conv_results");
    case TRAINCAST__V1__ENVELOPE__BODY_MODEL_GRAPH:
        return tc_validate_model_graph(env->model_graph, "model_graph");
    case TRAINCAST__V1__ENVELOPE__BODY_TRAIN_TRACE:
        return tc_validate_train_trace(env->train_trace, "train_trace");
    case TRAINCAST__V1__ENVELOPE__BODY_HEARTBEAT:
        return tc_validate_heartbeat(env->heartbeat, "heartbeat");
    case TRAINCAST__V1__ENVELOPE__BODY_JOB_PROGRESS:
        return tc_validate_job_progress(env->job_progress, "job_progress");
    case TRAINCAST__V1__ENVELOPE__BODY_BENCH_REQUEST:
        return tc_validate_bench_request(env->bench_request, "bench_request");
    case TRAINCAST__V1__ENVELOPE__BODY_TRACE_REQUEST:
        return tc_validate_trace_request(env->trace_request, "trace_request");
    case TRAINCAST__V1__ENVELOPE__BODY__NOT_SET:
        return s_field_bad("", "body", "is not set");
    default:
        return 0;
    }
}
