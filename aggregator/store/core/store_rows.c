/* Rows for COPY, without libpq (store_rows.h). */
#include "store_rows.h"

#include "tc_conv_key.h"

#include <math.h>
#include <stdio.h>
#include <time.h>

static void s_copy_sep(tc_buf_t *b, int last)
{
    tc_buf_putc(b, last ? '\n' : '\t');
}

void tc_copy_text(tc_buf_t *b, const char *v, int last)
{
    if (!v) {
        tc_buf_puts(b, "\\N");
    } else {
        for (const char *p = v; *p; p++) {
            switch (*p) {
            case '\\': tc_buf_puts(b, "\\\\"); break;
            case '\t': tc_buf_puts(b, "\\t"); break;
            case '\n': tc_buf_puts(b, "\\n"); break;
            case '\r': tc_buf_puts(b, "\\r"); break;
            default: tc_buf_putc(b, *p);
            }
        }
    }
    s_copy_sep(b, last);
}

void tc_copy_int(tc_buf_t *b, long long v, int last)
{
    tc_buf_printf(b, "%lld", v);
    s_copy_sep(b, last);
}

void tc_copy_double(tc_buf_t *b, double v, int last)
{
    if (isfinite(v))
        tc_buf_printf(b, "%.17g", v);
    else
        tc_buf_puts(b, "\\N");
    s_copy_sep(b, last);
}

void tc_copy_bool(tc_buf_t *b, int v, int last)
{
    tc_buf_putc(b, v ? 't' : 'f');
    s_copy_sep(b, last);
}

void tc_store_time_param(long long us, char *buf, size_t size)
{
    time_t secs = (time_t)(us / 1000000);
    struct tm tm;
    gmtime_r(&secs, &tm);
    char day[40];
    strftime(day, sizeof day, "%Y-%m-%d %H:%M:%S", &tm);
    snprintf(buf, size, "%s.%06lld+00", day, us % 1000000);
}

void tc_copy_time_us(tc_buf_t *b, long long us, int last)
{
    if (us <= 0) {
        tc_buf_puts(b, "\\N");
    } else {
        char t[64];
        tc_store_time_param(us, t, sizeof t);
        tc_buf_puts(b, t);
    }
    s_copy_sep(b, last);
}

void tc_copy_double_array(tc_buf_t *b, const double *v, size_t n, int last)
{
    tc_buf_putc(b, '{');
    for (size_t i = 0; i < n; i++)
        tc_buf_printf(b, i ? ",%.17g" : "%.17g", v[i]);
    tc_buf_putc(b, '}');
    s_copy_sep(b, last);
}

void tc_copy_int_array(tc_buf_t *b, const long long *v, size_t n, int last)
{
    tc_buf_putc(b, '{');
    for (size_t i = 0; i < n; i++)
        tc_buf_printf(b, i ? ",%lld" : "%lld", v[i]);
    tc_buf_putc(b, '}');
    s_copy_sep(b, last);
}

/* The conv key's columns of a staging row, in tc_conv_key.h's order. */
static void s_copy_U32(tc_buf_t *b, uint32_t v)
{
    tc_copy_int(b, v, 0);
}

static void s_copy_DTYPE(tc_buf_t *b, Traincast__V1__DType v)
{
    tc_copy_text(b, tc_dtype_name(v), 0);
}

static void s_copy_LAYOUT(tc_buf_t *b, Traincast__V1__Layout v)
{
    tc_copy_text(b, tc_layout_name(v), 0);
}

static void s_copy_BOOL(tc_buf_t *b, protobuf_c_boolean v)
{
    tc_copy_bool(b, v, 0);
}

void tc_copy_conv_key(tc_buf_t *b, const Traincast__V1__ConvConfig *c)
{
#define X(x, y, name, kind, first) s_copy_##kind(b, c->name);
    TC_CONV_KEY(X, , )
#undef X
}

static void s_json_U32(tc_buf_t *b, const char *name, uint32_t v)
{
    tc_buf_printf(b, "\"%s\":%u,", name, v);
}

static void s_json_DTYPE(tc_buf_t *b, const char *name, Traincast__V1__DType v)
{
    tc_buf_printf(b, "\"%s\":\"%s\",", name, tc_dtype_name(v));
}

static void s_json_LAYOUT(tc_buf_t *b, const char *name, Traincast__V1__Layout v)
{
    tc_buf_printf(b, "\"%s\":\"%s\",", name, tc_layout_name(v));
}

static void s_json_BOOL(tc_buf_t *b, const char *name, protobuf_c_boolean v)
{
    tc_buf_printf(b, "\"%s\":%s,", name, v ? "true" : "false");
}

void tc_json_conv_key(tc_buf_t *b, const Traincast__V1__ConvConfig *c)
{
#define X(x, y, name, kind, first) s_json_##kind(b, #name, c->name);
    TC_CONV_KEY(X, , )
#undef X
}

void tc_rows_model_graph(const Traincast__V1__ModelGraph *g, tc_buf_t *layers, tc_buf_t *convs)
{
    for (size_t i = 0; i < g->n_layers; i++) {
        const Traincast__V1__Layer *l = g->layers[i];
        tc_copy_text(layers, g->model_id, 0);
        tc_copy_int(layers, (long long)i, 0);
        tc_copy_text(layers, l->name && *l->name ? l->name : NULL, 0);
        tc_copy_text(layers, l->op, 0);
        tc_copy_text(layers, l->op_class, 0);
        tc_copy_int(layers, (long long)l->params, 0);
        tc_copy_double(layers, l->flops, 0);
        tc_copy_int(layers, (long long)l->elems_in, 0);
        tc_copy_int(layers, (long long)l->elems_out, 0);
        tc_copy_int_array(layers, (const long long *)l->out_shape, l->n_out_shape, 1);
    }
    for (size_t i = 0; i < g->n_convs; i++) {
        tc_copy_conv_key(convs, g->convs[i]->config);
        tc_copy_bool(convs, g->convs[i]->first_layer, 0);
        tc_copy_int(convs, g->convs[i]->multiplicity, 1);
    }
}

void tc_rows_trace(long long trace_id, const Traincast__V1__TrainTrace *t, tc_buf_t *iters,
                   tc_buf_t *ops)
{
    for (size_t i = 0; i < t->n_iterations; i++) {
        const Traincast__V1__Iteration *it = t->iterations[i];
        tc_copy_int(iters, trace_id, 0);
        tc_copy_int(iters, it->repeat, 0);
        tc_copy_int(iters, it->index, 0);
        tc_copy_double(iters, it->ms, 0);
        tc_copy_time_us(iters, it->at_us, 0);
        tc_copy_bool(iters, it->warmup, 1);
    }
    for (size_t i = 0; i < t->n_op_times; i++) {
        tc_copy_int(ops, trace_id, 0);
        tc_copy_text(ops, t->op_times[i]->op_class, 0);
        tc_copy_double(ops, t->op_times[i]->ms, 1);
    }
}

void tc_rows_settings(const Traincast__V1__TrainTrace *t, tc_buf_t *json, tc_buf_t *key)
{
    tc_buf_putc(json, '{');
    for (size_t i = 0; i < t->n_settings; i++) {
        const Traincast__V1__Setting *st = t->settings[i];
        const char *v = st->value ? st->value : "";
        if (i) {
            tc_buf_puts(json, ", ");
            tc_buf_puts(key, "; ");
        }
        tc_buf_json_str(json, st->name);
        tc_buf_puts(json, ": ");
        tc_buf_json_str(json, v);
        tc_buf_printf(key, "%s=%s", st->name, v);
    }
    tc_buf_putc(json, '}');
}
