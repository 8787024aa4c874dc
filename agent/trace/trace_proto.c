#include "trace_proto.h"

#include "tc_error.h"
#include "tc_json.h"
#include "tc_validate.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EXCERPT_BYTES 160
/* A protocol line is a flat object with at most a small op-time map. */
#define LINE_MAX_DEPTH 4
#define LINE_MAX_VALUES 1024

typedef enum { ST_HEADER, ST_ITERS, ST_DONE } state_t;

struct tc_trace_proto {
    tc_trace_request_t req;
    state_t state;
    char *line; /* TC_TRACE_MAX_LINE + 1 bytes */
    size_t len;
    size_t cap_iters;
    tc_trace_output_t out;
    int rc;
    char err[1024];
};

tc_trace_proto_t *tc_trace_proto_new(const tc_trace_request_t *req)
{
    tc_trace_proto_t *self = calloc(1, sizeof *self);
    if (!self)
        return NULL;
    self->req = *req;
    self->line = malloc(TC_TRACE_MAX_LINE + 1);
    if (!self->line) {
        free(self);
        return NULL;
    }
    return self;
}

void tc_trace_proto_destroy(tc_trace_proto_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    free((*self_p)->line);
    free((*self_p)->out.iters);
    free(*self_p);
    *self_p = NULL;
}

const char *tc_trace_proto_error(const tc_trace_proto_t *self)
{
    return self->err;
}

const tc_trace_output_t *tc_trace_proto_output(const tc_trace_proto_t *self)
{
    return &self->out;
}

/* The start of a line, printable, for messages. */
static void s_excerpt(const char *s, size_t n, char *buf, size_t size)
{
    size_t w = 0;
    for (size_t i = 0; i < n && i < EXCERPT_BYTES && w + 5 < size; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c >= 0x20 && c < 0x7f)
            buf[w++] = (char)c;
        else
            w += (size_t)snprintf(buf + w, size - w, "\\x%02x", c);
    }
    if (n > EXCERPT_BYTES && w + 4 < size)
        w += (size_t)snprintf(buf + w, size - w, "...");
    buf[w] = '\0';
}

/* Record the run's failure at the current line (number `self->out.lines`,
 * 1-based) and return TC_EPARSE. */
static int s_bad(tc_trace_proto_t *self, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static int s_bad(tc_trace_proto_t *self, const char *fmt, ...)
{
    char why[512], text[EXCERPT_BYTES * 4 + 8];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    s_excerpt(self->line, self->len, text, sizeof text);
    snprintf(self->err, sizeof self->err, "line %u: %s: %s", self->out.lines, why, text);
    self->rc = tc_fail(TC_EPARSE, "%s", self->err);
    return self->rc;
}

static const char *s_article(tc_json_type_t t)
{
    return t == TC_JSON_ARRAY || t == TC_JSON_OBJECT ? "an" : "a";
}

/* Field access: each returns 0, or fails the run naming the field. */
static int s_field(tc_trace_proto_t *self, const tc_json_value_t *obj, const char *key,
                   tc_json_type_t type, bool required, const tc_json_value_t **out)
{
    const tc_json_value_t *v = tc_json_get(obj, key);
    *out = v;
    if (!v)
        return required ? s_bad(self, "\"%s\" is missing", key) : 0;
    tc_json_type_t got = tc_json_type(v);
    if (got != type)
        return s_bad(self, "\"%s\" must be %s %s, not %s %s", key, s_article(type),
                     tc_json_type_name(type), s_article(got), tc_json_type_name(got));
    return 0;
}

static int s_str(tc_trace_proto_t *self, const tc_json_value_t *obj, const char *key,
                 bool required, char *buf, size_t size)
{
    const tc_json_value_t *v;
    int rc = s_field(self, obj, key, TC_JSON_STRING, required, &v);
    if (rc < 0 || !v)
        return rc;
    if (tc_json_string_len(v) >= size)
        return s_bad(self, "\"%s\" is longer than %zu bytes", key, size - 1);
    memcpy(buf, tc_json_string(v), tc_json_string_len(v) + 1);
    return 0;
}

static int s_int(tc_trace_proto_t *self, const tc_json_value_t *obj, const char *key,
                 bool required, int64_t min, int64_t max, int64_t *out, bool *present)
{
    const tc_json_value_t *v;
    int rc = s_field(self, obj, key, TC_JSON_NUMBER, required, &v);
    if (present)
        *present = v != NULL;
    if (rc < 0 || !v)
        return rc;
    if (!tc_json_int(v, out))
        return s_bad(self, "\"%s\" must be an integer (got %g)", key, tc_json_number(v));
    if (*out < min || *out > max)
        return s_bad(self, "\"%s\" must be between %lld and %lld (got %lld)", key, (long long)min,
                     (long long)max, (long long)*out);
    return 0;
}

/* A header value that must equal what was asked for. */
static int s_echo_int(tc_trace_proto_t *self, const tc_json_value_t *obj, const char *key,
                      bool required, int64_t want)
{
    int64_t got;
    bool present;
    int rc = s_int(self, obj, key, required, 0, INT64_MAX, &got, &present);
    if (rc == 0 && present && got != want)
        return s_bad(self, "\"%s\" is %lld but the runner was asked for %lld", key,
                     (long long)got, (long long)want);
    return rc;
}

static int s_echo_str(tc_trace_proto_t *self, const tc_json_value_t *obj, const char *key,
                      bool required, const char *want)
{
    char got[256] = "";
    int rc = s_str(self, obj, key, required, got, sizeof got);
    if (rc == 0 && tc_json_get(obj, key) && strcmp(got, want ? want : "") != 0)
        return s_bad(self, "\"%s\" is \"%s\" but the runner was asked for \"%s\"", key, got,
                     want ? want : "");
    return rc;
}

static int s_setting_cmp(const void *a, const void *b)
{
    return strcmp(((const tc_trace_setting_t *)a)->name, ((const tc_trace_setting_t *)b)->name);
}

/* "settings": {"name": "value", ...}, strings only, each name once. */
static int s_settings(tc_trace_proto_t *self, const tc_json_value_t *o)
{
    tc_trace_output_t *out = &self->out;
    const tc_json_value_t *set;
    int rc = s_field(self, o, "settings", TC_JSON_OBJECT, false, &set);
    if (rc < 0 || !set)
        return rc;
    size_t n = tc_json_len(set);
    if (n > TC_TRACE_MAX_SETTINGS)
        return s_bad(self, "\"settings\" has %zu entries, more than the limit of %u", n,
                     TC_TRACE_MAX_SETTINGS);
    size_t i = 0;
    for (const tc_json_member_t *m = tc_json_first(set); m; m = tc_json_next(set, m), i++) {
        const char *name = tc_json_member_key(m);
        const tc_json_value_t *v = tc_json_member_value(m);
        if (!*name || strlen(name) >= TC_TRACE_SETTING_NAME)
            return s_bad(self, "\"settings\" has a name that is empty or longer than %u bytes",
                         TC_TRACE_SETTING_NAME - 1);
        if (tc_json_type(v) != TC_JSON_STRING)
            return s_bad(self, "\"settings\".\"%s\" must be a string (got %s)", name,
                         tc_json_type_name(tc_json_type(v)));
        if (tc_json_string_len(v) >= TC_TRACE_SETTING_VALUE ||
            strlen(tc_json_string(v)) != tc_json_string_len(v))
            return s_bad(self, "\"settings\".\"%s\" is longer than %u bytes or holds a NUL",
                         name, TC_TRACE_SETTING_VALUE - 1);
        tc_trace_setting_t *st = &out->settings[i];
        snprintf(st->name, sizeof st->name, "%s", name);
        snprintf(st->value, sizeof st->value, "%s", tc_json_string(v));
    }
    qsort(out->settings, n, sizeof *out->settings, s_setting_cmp);
    for (i = 1; i < n; i++) {
        if (!strcmp(out->settings[i - 1].name, out->settings[i].name))
            return s_bad(self, "\"settings\" names \"%s\" twice", out->settings[i].name);
    }
    out->n_settings = n;
    return 0;
}

static int s_header(tc_trace_proto_t *self, const tc_json_value_t *o)
{
    tc_trace_output_t *out = &self->out;
    const tc_trace_request_t *req = &self->req;
    int64_t version, threads = 0;
    bool have_threads;
    const tc_json_value_t *bench;
    int rc;
    if ((rc = s_int(self, o, "protocol", true, 0, INT64_MAX, &version, NULL)) < 0)
        return rc;
    if (version != TC_TRACE_PROTOCOL_VERSION)
        return s_bad(self, "protocol version %lld is not supported (this agent speaks %d)",
                     (long long)version, TC_TRACE_PROTOCOL_VERSION);
    if ((rc = s_str(self, o, "framework", true, out->framework, sizeof out->framework)) < 0)
        return rc;
    if (!out->framework[0])
        return s_bad(self, "\"framework\" must not be empty");
    struct {
        const char *key;
        char *buf;
        size_t size;
    } opt[] = {{"framework_version", out->framework_version, sizeof out->framework_version},
               {"library", out->library, sizeof out->library},
               {"library_version", out->library_version, sizeof out->library_version},
               {"driver_version", out->driver_version, sizeof out->driver_version},
               {"runtime_version", out->runtime_version, sizeof out->runtime_version},
               {"device_name", out->device_name, sizeof out->device_name},
               {"device_uuid", out->device_uuid, sizeof out->device_uuid}};
    for (size_t i = 0; i < sizeof opt / sizeof opt[0]; i++) {
        if ((rc = s_str(self, o, opt[i].key, false, opt[i].buf, opt[i].size)) < 0)
            return rc;
    }
    if ((rc = s_echo_str(self, o, "model", true, req->model)) < 0 ||
        (rc = s_echo_int(self, o, "batch", true, req->batch)) < 0 ||
        (rc = s_echo_int(self, o, "input_size", true, req->input_size)) < 0 ||
        (rc = s_echo_str(self, o, "device", true, req->device)) < 0 ||
        (rc = s_echo_int(self, o, "warmup", true, req->warmup)) < 0 ||
        (rc = s_echo_int(self, o, "iters", true, req->iters)) < 0 ||
        (rc = s_echo_str(self, o, "dtype", false, req->dtype)) < 0 ||
        (rc = s_echo_str(self, o, "amp", false, req->amp)) < 0 ||
        (rc = s_echo_str(self, o, "optimizer", false, req->optimizer)) < 0)
        return rc;
    /* The device's environment, when the runner reports it. */
    if ((req->allocator && (rc = s_echo_str(self, o, "allocator", false, req->allocator)) < 0) ||
        (req->blas && (rc = s_echo_str(self, o, "blas", false, req->blas)) < 0))
        return rc;
    if (req->framework_version && out->framework_version[0] &&
        !strcmp(out->framework, "pytorch") &&
        strcmp(out->framework_version, req->framework_version) != 0)
        return s_bad(self, "\"framework_version\" is \"%s\" but the device measures with %s",
                     out->framework_version, req->framework_version);
    if ((rc = s_settings(self, o)) < 0)
        return rc;
    if ((rc = s_int(self, o, "threads", false, 0, 1 << 20, &threads, &have_threads)) < 0)
        return rc;
    if (have_threads && req->threads && strcmp(req->device, "cpu") == 0 &&
        threads != (int64_t)req->threads)
        return s_bad(self, "\"threads\" is %lld but the runner was asked for %u",
                     (long long)threads, req->threads);
    out->threads = (uint32_t)threads;
    if ((rc = s_field(self, o, "cudnn_benchmark", TC_JSON_BOOL, false, &bench)) < 0)
        return rc;
    if (bench && tc_json_bool(bench) != req->cudnn_benchmark)
        return s_bad(self, "\"cudnn_benchmark\" is %s but the runner was asked for %s",
                     tc_json_bool(bench) ? "true" : "false",
                     req->cudnn_benchmark ? "true" : "false");
    size_t total = (size_t)req->warmup + req->iters;
    if (total > TC_TRACE_MAX_ITERS)
        return s_bad(self, "%zu iterations are more than the limit of %u", total,
                     TC_TRACE_MAX_ITERS);
    out->iters = calloc(total ? total : 1, sizeof *out->iters);
    if (!out->iters)
        return s_bad(self, "out of memory for %zu iterations", total);
    self->cap_iters = total;
    out->have_header = true;
    self->state = ST_ITERS;
    return 0;
}

static int s_iter(tc_trace_proto_t *self, const tc_json_value_t *o)
{
    tc_trace_output_t *out = &self->out;
    int64_t index, at_us;
    const tc_json_value_t *warm, *ms, *canary;
    int rc;
    if (self->state != ST_ITERS)
        return s_bad(self, "an iteration line before the header");
    if ((rc = s_int(self, o, "index", true, 0, INT64_MAX, &index, NULL)) < 0 ||
        (rc = s_field(self, o, "warmup", TC_JSON_BOOL, true, &warm)) < 0 ||
        (rc = s_field(self, o, "ms", TC_JSON_NUMBER, true, &ms)) < 0 ||
        (rc = s_int(self, o, "at_us", true, 1, INT64_MAX, &at_us, NULL)) < 0 ||
        (rc = s_field(self, o, "canary_ms", TC_JSON_NUMBER, false, &canary)) < 0)
        return rc;
    double c = canary ? tc_json_number(canary) : 0;
    if (canary && !(c > 0 && isfinite(c)))
        return s_bad(self, "\"canary_ms\" must be a finite time > 0 (got %g)", c);
    if (out->n_iters >= self->cap_iters)
        return s_bad(self, "more iterations than the %zu announced (warmup %u + iters %u)",
                     self->cap_iters, self->req.warmup, self->req.iters);
    if (index != (int64_t)out->n_iters)
        return s_bad(self, "iteration index %lld out of order (expected %zu)", (long long)index,
                     out->n_iters);
    bool want_warm = out->n_iters < self->req.warmup;
    if (tc_json_bool(warm) != want_warm)
        return s_bad(self, "iteration %lld must have \"warmup\": %s (%u warm-up iterations "
                           "come first)", (long long)index, want_warm ? "true" : "false",
                     self->req.warmup);
    double v = tc_json_number(ms);
    if (!(v > 0) || !isfinite(v))
        return s_bad(self, "\"ms\" must be a finite time > 0 (got %g)", v);
    if (out->n_iters > 0 && at_us <= out->iters[out->n_iters - 1].at_us)
        return s_bad(self, "\"at_us\" %lld is not after the previous iteration's %lld: "
                           "timestamps must increase", (long long)at_us,
                     (long long)out->iters[out->n_iters - 1].at_us);
    out->iters[out->n_iters++] = (tc_trace_iter_t){
        .index = (uint32_t)index, .warmup = want_warm, .ms = v, .at_us = at_us, .canary_ms = c};
    return 0;
}

static int s_footer(tc_trace_proto_t *self, const tc_json_value_t *o)
{
    tc_trace_output_t *out = &self->out;
    const tc_json_value_t *ops;
    int64_t peak;
    int rc;
    if (self->state != ST_ITERS)
        return s_bad(self, "a footer before the header");
    if (out->n_iters != self->cap_iters)
        return s_bad(self, "footer after %zu iterations; %zu were announced", out->n_iters,
                     self->cap_iters);
    if ((rc = s_int(self, o, "peak_memory_bytes", true, 0, INT64_MAX, &peak, NULL)) < 0 ||
        (rc = s_field(self, o, "op_times_ms", TC_JSON_OBJECT, false, &ops)) < 0)
        return rc;
    out->peak_memory_bytes = (uint64_t)peak;
    const tc_json_value_t *clock, *power;
    if ((rc = s_field(self, o, "sm_clock_mhz", TC_JSON_NUMBER, false, &clock)) < 0 ||
        (rc = s_field(self, o, "power_w", TC_JSON_NUMBER, false, &power)) < 0)
        return rc;
    if (clock && !(tc_json_number(clock) >= 0 && tc_json_number(clock) <= 100000))
        return s_bad(self, "\"sm_clock_mhz\" must be a number between 0 and 100000");
    if (power && !(tc_json_number(power) >= 0 && tc_json_number(power) <= 100000))
        return s_bad(self, "\"power_w\" must be a number between 0 and 100000");
    out->sm_clock_mhz = clock ? (uint32_t)(tc_json_number(clock) + 0.5) : 0;
    out->power_w = power ? tc_json_number(power) : 0;
    /* Energy per step and its counter, or why there is none. */
    const tc_json_value_t *energy;
    if ((rc = s_field(self, o, "energy_j", TC_JSON_NUMBER, false, &energy)) < 0 ||
        (rc = s_str(self, o, "energy_source", energy != NULL, out->energy_source,
                    sizeof out->energy_source)) < 0 ||
        (rc = s_str(self, o, "energy_absent", false, out->energy_absent,
                    sizeof out->energy_absent)) < 0)
        return rc;
    out->energy_j = -1;
    if (energy) {
        if (!(tc_json_number(energy) >= 0 && tc_json_number(energy) <= TC_MAX_ENERGY_J))
            return s_bad(self, "\"energy_j\" must be a number of joules between 0 and %g",
                         TC_MAX_ENERGY_J);
        if (strcmp(out->energy_source, "nvml") && strcmp(out->energy_source, "rapl"))
            return s_bad(self, "\"energy_source\" must be \"nvml\" or \"rapl\" (got \"%s\")",
                         out->energy_source);
        out->energy_j = tc_json_number(energy);
    } else {
        out->energy_source[0] = '\0';
    }
    for (const tc_json_member_t *m = tc_json_first(ops); m; m = tc_json_next(ops, m)) {
        const char *name = tc_json_member_key(m);
        const tc_json_value_t *v = tc_json_member_value(m);
        int cls = tc_op_class_parse(name);
        if (cls < 0)
            return s_bad(self, "\"op_times_ms\" has an unknown op class \"%s\"", name);
        if (tc_json_type(v) != TC_JSON_NUMBER || !(tc_json_number(v) >= 0))
            return s_bad(self, "\"op_times_ms\".\"%s\" must be a number >= 0", name);
        out->op_present[cls] = true;
        out->op_ms[cls] = tc_json_number(v);
    }
    out->have_op_times = ops != NULL;
    out->have_footer = true;
    self->state = ST_DONE;
    return 0;
}

static int s_line(tc_trace_proto_t *self)
{
    self->out.lines++;
    size_t i = 0;
    while (i < self->len && strchr(" \t\r", self->line[i]))
        i++;
    if (i == self->len)
        return 0; /* blank lines carry nothing */
    if (self->state == ST_DONE)
        return s_bad(self, "output after the %s line",
                     self->out.have_footer ? "footer" : self->out.oom ? "oom" : "error");
    tc_json_t *doc = NULL;
    tc_json_limits_t lim = {TC_TRACE_MAX_LINE, LINE_MAX_DEPTH, LINE_MAX_VALUES};
    if (tc_json_parse(self->line, self->len, &lim, &doc) < 0) {
        char why[256];
        snprintf(why, sizeof why, "not a valid JSON line (%s)", tc_errmsg());
        return s_bad(self, "%s", why);
    }
    const tc_json_value_t *o = tc_json_root(doc);
    const tc_json_value_t *type;
    int rc;
    char msg[sizeof self->out.message];
    if (tc_json_type(o) != TC_JSON_OBJECT)
        rc = s_bad(self, "a protocol line must be a JSON object");
    else if ((rc = s_field(self, o, "type", TC_JSON_STRING, true, &type)) < 0)
        ;
    else if (!strcmp(tc_json_string(type), "header"))
        rc = self->state == ST_HEADER ? s_header(self, o) : s_bad(self, "a second header");
    else if (!strcmp(tc_json_string(type), "iter"))
        rc = s_iter(self, o);
    else if (!strcmp(tc_json_string(type), "footer"))
        rc = s_footer(self, o);
    else if (!strcmp(tc_json_string(type), "oom") || !strcmp(tc_json_string(type), "error")) {
        bool oom = tc_json_string(type)[0] == 'o';
        msg[0] = '\0';
        rc = s_str(self, o, "message", !oom, msg, sizeof msg);
        if (rc == 0) {
            snprintf(self->out.message, sizeof self->out.message, "%s", msg);
            self->out.oom = oom;
            self->out.error = !oom;
            self->state = ST_DONE;
        }
    } else
        rc = s_bad(self, "unknown line type \"%s\" (header, iter, footer, oom or error)",
                   tc_json_string(type));
    tc_json_destroy(&doc);
    return rc;
}

int tc_trace_proto_feed(tc_trace_proto_t *self, const char *data, size_t n)
{
    if (self->rc < 0)
        return self->rc;
    for (size_t i = 0; i < n; i++) {
        if (data[i] == '\n') {
            int rc = s_line(self);
            self->len = 0;
            if (rc < 0)
                return rc;
            continue;
        }
        if (self->len == TC_TRACE_MAX_LINE) {
            self->out.lines++;
            return s_bad(self, "longer than %u bytes", TC_TRACE_MAX_LINE);
        }
        self->line[self->len++] = data[i];
    }
    return 0;
}

int tc_trace_proto_finish(tc_trace_proto_t *self)
{
    if (self->rc < 0)
        return self->rc;
    if (self->len > 0) {
        self->out.lines++;
        return s_bad(self, "truncated: the output ended without a newline");
    }
    if (self->state == ST_DONE)
        return 0;
    if (self->state == ST_HEADER) {
        snprintf(self->err, sizeof self->err,
                 "line %u: the output ended without a header (%u lines)", self->out.lines,
                 self->out.lines);
    } else {
        snprintf(self->err, sizeof self->err,
                 "line %u: the output ended after %zu of %zu iterations without a footer",
                 self->out.lines, self->out.n_iters, self->cap_iters);
    }
    self->rc = tc_fail(TC_EPARSE, "%s", self->err);
    return self->rc;
}
