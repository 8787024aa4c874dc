/* agent routes: does this agent route GPU convs as the installed PyTorch
 * does? (agent/bench/route_check.h) */
#include "commands.h"
#include "route_check.h"

#include "agent_devices.h"
#include "tc_cli.h"
#include "tc_error.h"
#include "tc_paths.h"
#include "tc_table.h"
#include "tc_wire.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const tc_col_t s_cols[] = {{"conv", TC_COL_TEXT},   {"dtype", TC_COL_TEXT},
                                  {"layout", TC_COL_TEXT}, {"pytorch", TC_COL_TEXT},
                                  {"rule", TC_COL_TEXT},   {"agree", TC_COL_TEXT}};

typedef struct {
    tc_table_t *all;    /* every comparison (csv, json) */
    bool text;
    size_t shown;
} s_rows_t;

static void s_row(const tc_conv_config_t *c, const char *pytorch, const char *rule, void *arg)
{
    s_rows_t *r = arg;
    char label[192];
    tc_conv_config_label(c, label, sizeof label);
    bool agree = strcmp(pytorch, rule) == 0;
    if (r->text && !agree && r->shown++ < 40)
        printf("  differs: %s %s %s: PyTorch %s, rule %s\n", label, tc_dtype_name(c->dtype),
               tc_layout_name(c->layout), pytorch, rule);
    const char *cells[] = {label, tc_dtype_name(c->dtype), tc_layout_name(c->layout), pytorch,
                           rule, agree ? "yes" : "no"};
    if (r->all)
        tc_table_add_row(r->all, cells);
}

int tc_cmd_routes(int argc, char **argv)
{
    const char *device = "cuda:0", *convs = NULL, *format = "table", *allocator = NULL;
    unsigned long batch = 32;
    const tc_opt_t opts[] = {
        {"device", TC_OPT_STR, &device, "DEV", "the GPU, cuda:INDEX (default cuda:0)"},
        {"convs", TC_OPT_STR, &convs, "FILE",
         "a conv list (agent bench --help); default: the CNN set's convs"},
        {"batch", TC_OPT_UINT, &batch, "N", "the batch of every conv (default 32)"},
        {"format", TC_OPT_STR, &format, "table|csv|json",
         "output format (default table: a summary and the convs that differ; csv and json: "
         "every comparison)"},
        {"allocator", TC_OPT_STR, &allocator, "NAME", "memory allocator (as agent info)"},
        {0},
    };
    const tc_cmd_spec_t spec = {
        .prog = "agent routes",
        .summary = "Compare the agent's GPU conv routing with the installed PyTorch's own choice "
                   "(torch._C._select_conv_backend)\nfor every conv of a list, in fp32, fp16 and "
                   "bf16, NCHW and channels-last. The agent follows\nPyTorch wherever they "
                   "differ; a difference means the ported rule needs porting again.",
        .max_positional = 0,
        .epilog = "Exit status: 0 when they agree everywhere, or differ under a rule not "
                  "verified for this\nPyTorch version (said); 1 when a rule verified for it "
                  "differs, or on failure; 2 on bad usage.",
        .opts = opts,
    };
    tc_cli_result_t cli;
    int rc = tc_cli_begin(&spec, argc, argv, &cli);
    if (rc < 0 || cli.help_shown)
        return rc;
    s_rows_t rows = {0};
    tc_format_t fmt;
    char path[2048];
    TC_TRY(tc_format_parse(format, &fmt));
    if (batch < 1 || batch > 65536)
        TC_FAIL_GOTO(TC_EUSAGE, "--batch must be between 1 and 65536 (got %lu)", batch);
    TC_TRY(tc_agent_prepare(allocator, false, 0));
    if (!convs) {
        char dir[1024];
        snprintf(path, sizeof path, "%s/cnn_set.convs",
                 tc_resource_dir(TC_DIR_MODELS, dir, sizeof dir));
        convs = path;
    }
    rows.text = fmt == TC_FMT_TABLE;
    if (!rows.text && !(rows.all = tc_table_new("routes", s_cols, sizeof s_cols / sizeof s_cols[0])))
        TC_FAIL_GOTO(TC_ENOMEM, "out of memory");
    tc_route_check_t r;
    TC_TRY(tc_route_check(device, convs, (uint32_t)batch, s_row, &rows, &r));
    if (r.cannot_say)
        TC_FAIL_GOTO(TC_EUNSUPPORTED, "%s cannot name its choice of conv backend "
                                      "(torch._C._select_conv_backend): nothing to compare",
                     r.framework);
    if (rows.text) {
        if (r.differ > rows.shown)
            printf("  ... %zu more (--format csv lists every comparison)\n", r.differ - rows.shown);
        printf("%s: %zu convs of %s, batch %lu: %zu comparisons, %zu differ from the rule %s%s\n",
               r.framework, r.convs, convs, batch, r.checked, r.differ, r.rule,
               r.verified ? "" : " (not verified for this version: the agent follows PyTorch)");
    } else {
        tc_table_t *t[] = {rows.all};
        TC_TRY(tc_table_print(stdout, fmt, t, 1));
    }
    if (r.differ && r.verified)
        rc = tc_fail(TC_ELIB, "%zu of %zu routes differ from %s under the rule %s, which is "
                              "marked verified for it: the rule needs porting again",
                     r.differ, r.checked, r.framework, r.rule);
err:
    tc_table_destroy(&rows.all);
    tc_cli_result_free(&cli);
    return rc;
}
