/* agent model describe: a model's layers, conv and matmul configs and
 * non-conv features as the importer sees them. */
#include "commands.h"
#include "convlist.h"

#include "tc_buf.h"
#include "tc_cli.h"
#include "tc_error.h"
#include "tc_model.h"
#include "tc_table.h"
#include "tc_validate.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

static void s_shape(const tc_model_node_t *n, char *buf, size_t size)
{
    size_t len = 0;
    buf[0] = '\0';
    for (int k = 0; k < n->rank_out && len + 1 < size; k++) {
        int w = snprintf(buf + len, size - len, "%s%lld", k ? "x" : "",
                         (long long)n->out_shape[k]);
        if (w < 0)
            break;
        len += (size_t)w;
    }
    if (!n->rank_out)
        snprintf(buf, size, "scalar");
}

static void s_print_table(const tc_model_t *m, unsigned batch)
{
    uint32_t c, h, w;
    tc_model_input(m, &c, &h, &w);
    printf("model %s (%s)\n", tc_model_id(m), tc_model_name(m));
    printf("input %ux%ux%u, batch %u, sha256 %s\n", c, h, w, batch, tc_model_sha256(m));
    const char *mode = tc_model_meta(m, "traincast.export_mode");
    const char *missing = tc_model_meta(m, "traincast.missing");
    if (mode)
        printf("exported in %s mode%s%s\n", mode, missing && *missing ? "; missing layers: " : "",
               missing && *missing ? missing : "");
    if (*tc_model_export_warning(m))
        printf("warning: %s\n", tc_model_export_warning(m));
    printf("\n%4s  %-44s %-20s %-7s %-14s %10s %10s  %s\n", "#", "layer", "op", "class",
           "output", "params", "MFLOPs", "conv or matmul config");
    for (size_t i = 0; i < tc_model_node_count(m); i++) {
        const tc_model_node_t *n = tc_model_node(m, i);
        char shape[96], conv[128] = "";
        s_shape(n, shape, sizeof shape);
        if (n->is_conv) {
            tc_conv_config_label(&n->conv, conv, sizeof conv);
            if (n->first_layer)
                strncat(conv, " (first)", sizeof conv - strlen(conv) - 1);
        } else if (n->is_matmul) {
            tc_matmul_config_label(&n->matmul, conv, sizeof conv);
        }
        /* Long names keep their end, which names the layer. */
        size_t len = strlen(n->name);
        const char *name = len > 44 ? n->name + len - 41 : n->name;
        printf("%4zu  %s%-*s %-20.20s %-7s %-14s %10llu %10.2f  %s\n", i, len > 44 ? "..." : "",
               len > 44 ? 41 : 44, name, n->op,
               tc_op_class_name(n->op_class), shape, (unsigned long long)n->params,
               n->flops * batch / 1e6, conv);
    }
    tc_features_t f;
    tc_model_features(m, batch, &f);
    printf("\nsummary\n");
    printf("  parameters         %llu\n", (unsigned long long)tc_model_params(m));
    printf("  forward GFLOPs     %.3f at batch %u (%.3f GMACs per sample)\n",
           tc_model_flops(m) * batch / 1e9, batch, tc_model_macs(m) / 1e9);
    printf("  layers             %zu (of %zu ONNX nodes; the rest is folded shape "
           "arithmetic)\n",
           tc_model_node_count(m), tc_model_onnx_node_count(m));
    printf("  conv layers        %.0f\n", f.conv_layers);
    printf("  unique conv configs %zu\n", tc_model_conv_count(m));
    for (size_t i = 0; i < tc_model_conv_count(m); i++) {
        const tc_conv_usage_t *u = tc_model_conv(m, i);
        char label[128];
        tc_conv_config_label(&u->config, label, sizeof label);
        printf("    %3ux  %s%s\n", u->multiplicity, label,
               u->first_layer ? "  (first layer: no backward-data)" : "");
    }
    printf("  unique matmul configs %zu (per sample; N: the mini-batch)\n",
           tc_model_matmul_count(m));
    for (size_t i = 0; i < tc_model_matmul_count(m); i++) {
        const tc_matmul_usage_t *u = tc_model_matmul(m, i);
        char label[128];
        tc_matmul_config_label(&u->config, label, sizeof label);
        printf("    %3ux  %s%s%s\n", u->use.multiplicity, label,
               u->use.grad_a ? "" : "  (no gradient of A)",
               u->use.grad_b ? "" : "  (no gradient of B)");
    }
    printf("  non-conv features at batch %u:\n", batch);
    printf("    %-8s %7s %14s %14s %12s %10s\n", "class", "layers", "elems in", "elems out",
           "params", "GFLOPs");
    for (int k = 0; k < TC_OPC_COUNT; k++) {
        const tc_class_features_t *cf = &f.cls[k];
        if (k == TC_OPC_CONV || cf->layers == 0)
            continue;
        printf("    %-8s %7.0f %14.0f %14.0f %12.0f %10.4f\n", tc_op_class_name(k), cf->layers,
               cf->elems_in, cf->elems_out, cf->params, cf->flops / 1e9);
    }
    printf("    total: %.0f layers, %.0f parameters\n", f.total_layers, f.total_params);
    for (size_t i = 0; i < tc_model_unknown_count(m); i++)
        printf("  unknown op counted as element-wise: %s\n", tc_model_unknown(m, i));
}

static void s_json_config(tc_buf_t *b, const tc_conv_config_t *c)
{
    tc_buf_putc(b, '{');
    tc_conv_key_json(b, c);
    tc_buf_putc(b, '}');
}

static void s_json_matmul(tc_buf_t *b, const tc_matmul_config_t *c)
{
    tc_buf_putc(b, '{');
    tc_matmul_key_json(b, c);
    tc_buf_putc(b, '}');
}

/* The model's header fields: id, name, sha256, input, batch, parameters,
 * FLOPs, MACs, ONNX nodes and export mode. */
static void s_json_head(tc_buf_t *b, const tc_model_t *m, unsigned batch)
{
    uint32_t c, h, w;
    tc_model_input(m, &c, &h, &w);
    tc_buf_puts(b, "{\"model_id\":");
    tc_buf_json_str(b, tc_model_id(m));
    tc_buf_puts(b, ",\"name\":");
    tc_buf_json_str(b, tc_model_name(m));
    tc_buf_printf(b, ",\"sha256\":\"%s\",\"input\":[%u,%u,%u],\"batch\":%u,\"params\":%llu",
                  tc_model_sha256(m), c, h, w, batch, (unsigned long long)tc_model_params(m));
    tc_buf_puts(b, ",\"flops_per_sample\":");
    tc_buf_json_num(b, tc_model_flops(m));
    tc_buf_puts(b, ",\"gflops\":");
    tc_buf_json_num(b, tc_model_flops(m) * batch / 1e9);
    tc_buf_puts(b, ",\"macs_per_sample\":");
    tc_buf_json_num(b, tc_model_macs(m));
    tc_buf_printf(b, ",\"onnx_nodes\":%zu", tc_model_onnx_node_count(m));
    const char *mode = tc_model_meta(m, "traincast.export_mode");
    if (mode) {
        tc_buf_puts(b, ",\"export_mode\":");
        tc_buf_json_str(b, mode);
    }
    tc_buf_puts(b, ",\"export_warning\":");
    if (*tc_model_export_warning(m))
        tc_buf_json_str(b, tc_model_export_warning(m));
    else
        tc_buf_puts(b, "null");
}

/* The "layers" array: one object per layer, with its conv config when it
 * is a conv, its matmul config when it is a matmul. */
static void s_json_layers(tc_buf_t *b, const tc_model_t *m)
{
    tc_buf_puts(b, ",\"layers\":[");
    for (size_t i = 0; i < tc_model_node_count(m); i++) {
        const tc_model_node_t *n = tc_model_node(m, i);
        tc_buf_puts(b, i ? ",{\"name\":" : "{\"name\":");
        tc_buf_json_str(b, n->name);
        tc_buf_puts(b, ",\"op\":");
        tc_buf_json_str(b, n->op);
        tc_buf_printf(b, ",\"class\":\"%s\",\"out_shape\":[", tc_op_class_name(n->op_class));
        for (int k = 0; k < n->rank_out; k++)
            tc_buf_printf(b, "%s%lld", k ? "," : "", (long long)n->out_shape[k]);
        tc_buf_printf(b, "],\"params\":%llu,\"flops\":", (unsigned long long)n->params);
        tc_buf_json_num(b, n->flops);
        tc_buf_printf(b, ",\"elems_in\":%llu,\"elems_out\":%llu",
                      (unsigned long long)n->elems_in, (unsigned long long)n->elems_out);
        if (n->is_conv) {
            tc_buf_puts(b, ",\"conv\":");
            s_json_config(b, &n->conv);
            tc_buf_printf(b, ",\"first_layer\":%s", n->first_layer ? "true" : "false");
        }
        if (n->is_matmul) {
            tc_buf_puts(b, ",\"matmul\":");
            s_json_matmul(b, &n->matmul);
        }
        tc_buf_putc(b, '}');
    }
    tc_buf_putc(b, ']');
}

/* The "convs" array: each unique conv config with its multiplicity. */
static void s_json_convs(tc_buf_t *b, const tc_model_t *m)
{
    tc_buf_puts(b, ",\"convs\":[");
    for (size_t i = 0; i < tc_model_conv_count(m); i++) {
        const tc_conv_usage_t *u = tc_model_conv(m, i);
        tc_buf_puts(b, i ? ",{\"config\":" : "{\"config\":");
        s_json_config(b, &u->config);
        tc_buf_printf(b, ",\"multiplicity\":%u,\"first_layer\":%s}", u->multiplicity,
                      u->first_layer ? "true" : "false");
    }
    tc_buf_putc(b, ']');
}

/* The "matmuls" array: each unique matmul config with its multiplicity
 * and which operands need a gradient. */
static void s_json_matmuls(tc_buf_t *b, const tc_model_t *m)
{
    tc_buf_puts(b, ",\"matmuls\":[");
    for (size_t i = 0; i < tc_model_matmul_count(m); i++) {
        const tc_matmul_usage_t *u = tc_model_matmul(m, i);
        tc_buf_puts(b, i ? ",{\"config\":" : "{\"config\":");
        s_json_matmul(b, &u->config);
        tc_buf_printf(b, ",\"multiplicity\":%u,\"grad_a\":%s,\"grad_b\":%s}",
                      u->use.multiplicity, u->use.grad_a ? "true" : "false",
                      u->use.grad_b ? "true" : "false");
    }
    tc_buf_putc(b, ']');
}

/* The "features" object: per op class, its layers, elements, parameters
 * and FLOPs. */
static void s_json_features(tc_buf_t *b, const tc_features_t *f)
{
    tc_buf_puts(b, ",\"features\":{");
    for (int k = 0; k < TC_OPC_COUNT; k++) {
        const tc_class_features_t *cf = &f->cls[k];
        tc_buf_printf(b, "%s\"%s\":{\"layers\":", k ? "," : "", tc_op_class_name(k));
        tc_buf_json_num(b, cf->layers);
        tc_buf_puts(b, ",\"elems_in\":");
        tc_buf_json_num(b, cf->elems_in);
        tc_buf_puts(b, ",\"elems_out\":");
        tc_buf_json_num(b, cf->elems_out);
        tc_buf_puts(b, ",\"params\":");
        tc_buf_json_num(b, cf->params);
        tc_buf_puts(b, ",\"flops\":");
        tc_buf_json_num(b, cf->flops);
        tc_buf_putc(b, '}');
    }
    tc_buf_putc(b, '}');
}

/* The model as one JSON object on stdout. */
static int s_print_json(const tc_model_t *m, unsigned batch)
{
    tc_buf_t b = {0};
    s_json_head(&b, m, batch);
    s_json_layers(&b, m);
    s_json_convs(&b, m);
    s_json_matmuls(&b, m);
    tc_features_t f;
    tc_model_features(m, batch, &f);
    s_json_features(&b, &f);
    tc_buf_printf(&b, ",\"total_layers\":%.0f,\"conv_layers\":%.0f,\"unknown\":[",
                  f.total_layers, f.conv_layers);
    for (size_t i = 0; i < tc_model_unknown_count(m); i++) {
        if (i)
            tc_buf_putc(&b, ',');
        tc_buf_json_str(&b, tc_model_unknown(m, i));
    }
    tc_buf_puts(&b, "]}\n");
    if (b.failed) {
        tc_buf_free(&b);
        return tc_fail(TC_ENOMEM, "out of memory formatting JSON");
    }
    fputs(tc_buf_str(&b), stdout);
    tc_buf_free(&b);
    return 0;
}

/* --format csv: the layers, one row each, with the keys of the JSON's
 * "layers" (out_shape as 64x56x56, conv and matmul as their labels). */
static const tc_col_t s_layer_cols[] = {
    {"name", TC_COL_TEXT},    {"op", TC_COL_TEXT},       {"class", TC_COL_TEXT},
    {"out_shape", TC_COL_TEXT}, {"params", TC_COL_INT},  {"flops", TC_COL_NUM},
    {"elems_in", TC_COL_INT}, {"elems_out", TC_COL_INT}, {"conv", TC_COL_TEXT},
    {"first_layer", TC_COL_BOOL}, {"matmul", TC_COL_TEXT},
};

static int s_print_csv(const tc_model_t *m)
{
    tc_table_t *t = tc_table_new("layers", s_layer_cols, 11);
    int rc = t ? 0 : tc_fail(TC_ENOMEM, "out of memory");
    for (size_t i = 0; rc == 0 && i < tc_model_node_count(m); i++) {
        const tc_model_node_t *n = tc_model_node(m, i);
        char shape[96], params[32], flops[64], in[32], out[32], conv[128] = "", mm[128] = "";
        s_shape(n, shape, sizeof shape);
        snprintf(params, sizeof params, "%llu", (unsigned long long)n->params);
        snprintf(flops, sizeof flops, "%.17g", n->flops);
        snprintf(in, sizeof in, "%llu", (unsigned long long)n->elems_in);
        snprintf(out, sizeof out, "%llu", (unsigned long long)n->elems_out);
        if (n->is_conv)
            tc_conv_config_label(&n->conv, conv, sizeof conv);
        if (n->is_matmul)
            tc_matmul_config_label(&n->matmul, mm, sizeof mm);
        const char *row[] = {n->name, n->op, tc_op_class_name(n->op_class), shape, params,
                             flops, in, out, n->is_conv ? conv : NULL,
                             n->is_conv ? (n->first_layer ? "true" : "false") : NULL,
                             n->is_matmul ? mm : NULL};
        rc = tc_table_add_row(t, row);
    }
    if (rc == 0)
        rc = tc_table_print(stdout, TC_FMT_CSV, &t, 1);
    tc_table_destroy(&t);
    return rc;
}

/* --format list: the conv and matmul classes as a list that `agent bench
 * --convs` reads (convlist.h). */
static int s_print_list(const tc_model_t *m)
{
    return tc_oplist_write(stdout, tc_model_id(m), tc_model_convs(m), tc_model_conv_count(m),
                           tc_model_matmuls(m), tc_model_matmul_count(m));
}

static int s_describe(int argc, char **argv)
{
    unsigned long batch = 1, input_size = 0;
    const char *format = "table";
    bool allow_unknown = false;
    const tc_opt_t opts[] = {
        {"batch", TC_OPT_UINT, &batch, "N", "mini-batch size for FLOPs and features (default 1)"},
        {"input-size", TC_OPT_UINT, &input_size, "S",
         "spatial input size in pixels (default: the model's own; torchvision and Python "
         "models are exported at S, ONNX files are re-inferred)"},
        {"format", TC_OPT_STR, &format, "table|csv|json|list",
         "output format (default table; csv: the layers, with the keys of json's layers; "
         "list: the conv and matmul classes as a list for 'agent bench --convs')"},
        {"allow-unknown", TC_OPT_FLAG, &allow_unknown, NULL,
         "count ops the importer does not know as generic element-wise layers (with a "
         "warning) instead of failing"},
        {0},
    };
    const tc_cmd_spec_t spec = {
        .prog = "agent model describe",
        .summary = "Import a model (an ONNX file, a torchvision model or a Python one) and "
                   "print its "
                   "layers, conv and matmul configs and non-conv features.",
        .positional = "FILE.onnx|torchvision:NAME|FILE.py:FUNC",
        .min_positional = 1,
        .max_positional = 1,
        .config_file = true,
        .epilog = "torchvision:NAME is exported through agent/harness/export_onnx.py when "
                  "PyTorch is installed\n($TRAINCAST_PYTHON, default /usr/bin/python3; cached "
                  "under $TRAINCAST_CACHE or ~/.cache/traincast),\nelse the committed "
                  "weight-free export is used (tests/data of the source tree, or\n"
                  "share/traincast/models of an install; $TRAINCAST_DATA_DIR overrides).\n"
                  "FILE.py:FUNC is the torch.nn.Module that FUNC (no arguments) of FILE.py "
                  "returns,\nexported the same way (PyTorch needed; cached per file "
                  "content);\nits id is python:STEM.FUNC, STEM the file name without .py.",
        .opts = opts,
    };
    tc_cli_result_t cli;
    int rc = tc_cli_begin(&spec, argc, argv, &cli);
    if (rc < 0 || cli.help_shown)
        return rc;
    tc_model_t *m = NULL;
    tc_format_t fmt = TC_FMT_TABLE;
    bool list = !strcmp(format, "list");
    if (!list && tc_format_parse(format, &fmt) < 0) {
        rc = tc_fail(TC_EUSAGE, "--format must be table, csv, json or list (got '%s')", format);
    } else if (batch < 1 || batch > TC_MAX_BATCH) {
        rc = tc_fail(TC_EUSAGE, "--batch must be between 1 and %u", TC_MAX_BATCH);
    } else if (tc_cli_given(&spec, "input-size") && (input_size < 1 || input_size > 16384)) {
        rc = tc_fail(TC_EUSAGE, "--input-size must be between 1 and 16384 pixels (got %lu; leave "
                                "it out for the model's own size)",
                     input_size);
    } else {
        tc_model_opts_t mo = {.allow_unknown = allow_unknown, .input_size = (uint32_t)input_size};
        rc = tc_model_load_spec(cli.positional[0], &mo, &m);
    }
    if (rc == 0 && list)
        rc = s_print_list(m);
    else if (rc == 0 && fmt == TC_FMT_JSON)
        rc = s_print_json(m, (unsigned)batch);
    else if (rc == 0 && fmt == TC_FMT_CSV)
        rc = s_print_csv(m);
    else if (rc == 0)
        s_print_table(m, (unsigned)batch);
    tc_model_destroy(&m);
    tc_cli_result_free(&cli);
    return rc;
}

int tc_cmd_model(int argc, char **argv)
{
    if (argc >= 2 && !strcmp(argv[1], "describe"))
        return s_describe(argc - 1, argv + 1);
    bool help = argc >= 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"));
    FILE *out = help ? stdout : stderr;
    fprintf(out, "usage: agent model describe FILE.onnx|torchvision:NAME|FILE.py:FUNC "
                 "[--batch N] [--input-size S]\n"
                 "                            [--format table|csv|json|list] [--allow-unknown]\n\n"
                 "'agent model describe --help' describes the options.\n");
    if (help)
        return 0;
    if (argc < 2)
        return tc_fail(TC_EUSAGE, "a model subcommand is required (describe)");
    return tc_fail(TC_EUSAGE, "unknown model subcommand '%s' (describe)", argv[1]);
}
