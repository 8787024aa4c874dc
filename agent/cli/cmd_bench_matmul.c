/* agent bench-matmul: benchmark one matmul (a config per sample at a
 * mini-batch) in its training directions, on the path the framework takes
 * (on the CPU: PyTorch 1.13's sgemm_ calls or its naive small-bmm loops),
 * with the conv benchmarks' measurement. */
#include "agent_devices.h"
#include "allocator.h"
#include "bench_opts.h"
#include "commands.h"
#include "matmul_bench.h"
#include "operands.h"

#include "tc_cli.h"
#include "tc_error.h"
#include "tc_matmul_step.h"
#include "tc_table.h"
#include "tc_validate.h"

#include <stdio.h>
#include <string.h>

typedef struct {
    unsigned long batch, m, n, k, minibatch, seed;
    const char *minibatch_in, *direction, *format;
    bool trans_a, trans_b, weight, bias, verify;
    tc_bench_flags_t f;
} s_args_t;

static const tc_col_t s_cols[] = {
    {"direction", TC_COL_TEXT}, {"route", TC_COL_TEXT},      {"count", TC_COL_INT},
    {"m", TC_COL_INT},          {"n", TC_COL_INT},           {"k", TC_COL_INT},
    {"trans_a", TC_COL_BOOL},   {"trans_b", TC_COL_BOOL},    {"bias", TC_COL_BOOL},
    {"median_ms", TC_COL_NUM},  {"min_ms", TC_COL_NUM},      {"max_ms", TC_COL_NUM},
    {"stddev_ms", TC_COL_NUM},  {"repetitions", TC_COL_INT}, {"verified", TC_COL_BOOL},
    {"framework_ms", TC_COL_NUM},
};

static int s_minibatch_in(const char *text, uint32_t *out)
{
    if (tc_mm_minibatch_parse(text, out) == 0)
        return 0;
    return tc_fail(TC_EUSAGE, "--minibatch-in must be rows, batch or none, not '%s'", text);
}

/* The config from the options: TC_EUSAGE / TC_EINVAL naming what is wrong. */
static int s_config(const s_args_t *a, const tc_bench_settings_t *set, tc_matmul_config_t *c)
{
    const unsigned long vals[] = {a->batch, a->m, a->n, a->k};
    for (size_t i = 0; i < sizeof vals / sizeof vals[0]; i++)
        if (vals[i] > (1ul << 24))
            return tc_fail(TC_EUSAGE, "a size (%lu) is larger than %lu", vals[i], 1ul << 24);
    if (a->minibatch == 0 || a->minibatch > TC_MAX_BATCH)
        return tc_fail(TC_EUSAGE, "--minibatch must be between 1 and %u (got %lu)", TC_MAX_BATCH,
                       a->minibatch);
    *c = tc_matmul_config_default();
    int rc = s_minibatch_in(a->minibatch_in, &c->minibatch_in);
    if (rc < 0)
        return rc;
    c->minibatch = (uint32_t)a->minibatch;
    c->batch = (uint32_t)a->batch, c->m = (uint32_t)a->m, c->n = (uint32_t)a->n;
    c->k = (uint32_t)a->k;
    c->trans_a = a->trans_a, c->trans_b = a->trans_b, c->weight = a->weight, c->bias = a->bias;
    c->dtype = set->dtype;
    return tc_matmul_config_check(c);
}

static int s_row(tc_table_t *t, const tc_matmul_outcome_t *o, bool verified)
{
    const tc_gemm_t *g = &o->gemm;
    const tc_stats_t *st = &o->samples.stats;
    char v[10][32];
    snprintf(v[0], sizeof v[0], "%llu", (unsigned long long)g->count);
    snprintf(v[1], sizeof v[1], "%llu", (unsigned long long)g->m);
    snprintf(v[2], sizeof v[2], "%llu", (unsigned long long)g->n);
    snprintf(v[3], sizeof v[3], "%llu", (unsigned long long)g->k);
    snprintf(v[4], sizeof v[4], "%.6g", st->median);
    snprintf(v[5], sizeof v[5], "%.6g", st->min);
    snprintf(v[6], sizeof v[6], "%.6g", st->max);
    snprintf(v[7], sizeof v[7], "%.6g", st->stddev);
    snprintf(v[8], sizeof v[8], "%zu", st->n);
    snprintf(v[9], sizeof v[9], "%.6g", o->framework_ms);
    const char *row[] = {tc_direction_name(o->spec.direction), o->route, v[0], v[1], v[2], v[3],
                         g->trans_a ? "true" : "false", g->trans_b ? "true" : "false",
                         g->bias ? "true" : "false", v[4], v[5], v[6], v[7], v[8],
                         verified ? "true" : "false", v[9]};
    return tc_table_add_row(t, row);
}

static int s_bench(tc_device_t *dev, const s_args_t *a, const tc_bench_settings_t *set,
                   const tc_matmul_config_t *c, const Traincast__V1__Direction *dirs,
                   size_t n_dirs, tc_table_t *t)
{
    int rc = 0;
    tc_matmul_outcome_t out = {0};
    tc_canary_t canary;
    tc_measure_opts_t mo = tc_measure_with_canary(&set->measure, dev, &canary);
    for (size_t i = 0; i < n_dirs; i++) {
        tc_matmul_spec_t spec = {.config = *c, .direction = dirs[i], .seed = a->seed};
        double worst = 0;
        if (a->verify)
            TC_TRY(tc_matmul_verify(dev, &spec, &worst));
        TC_TRY(tc_matmul_bench(dev, &spec, &mo, &out));
        TC_TRY(s_row(t, &out, a->verify));
        tc_matmul_outcome_free(&out);
    }
err:
    tc_matmul_outcome_free(&out);
    return rc;
}

int tc_cmd_bench_matmul(int argc, char **argv)
{
    s_args_t a = {.batch = 1,
                  .minibatch = 1,
                  .seed = 1,
                  .minibatch_in = "rows",
                  .direction = "all",
                  .format = "table",
                  .f = {.device = "cpu"}};
    tc_bench_flags_t *f = &a.f;
    double quiet_pct = 0;
    const tc_opt_t opts[] = {
        {"m", TC_OPT_UINT, &a.m, "M", "rows of the product per sample", true},
        {"n", TC_OPT_UINT, &a.n, "N", "columns of the product", true},
        {"k", TC_OPT_UINT, &a.k, "K", "the contracted dimension", true},
        {"batch", TC_OPT_UINT, &a.batch, "B", "products per sample (default 1)"},
        {"minibatch", TC_OPT_UINT, &a.minibatch, "N", "the mini-batch (default 1)"},
        {"minibatch-in", TC_OPT_STR, &a.minibatch_in, "WHERE",
         "what the mini-batch multiplies: rows (default: a Linear), batch (the products of a "
         "batched matmul) or none"},
        {"trans-a", TC_OPT_FLAG, &a.trans_a, NULL, "A is read transposed (stored [k, m])"},
        {"trans-b", TC_OPT_FLAG, &a.trans_b, NULL,
         "B is read transposed (stored [n, k], as a Linear's weight)"},
        {"weight", TC_OPT_FLAG, &a.weight, NULL, "B is a parameter (a Linear's weight)"},
        {"bias", TC_OPT_FLAG, &a.bias, NULL, "the forward adds a bias (addmm)"},
        {"direction", TC_OPT_STR, &a.direction, "D",
         "all (default), or a list of fwd, bwd_data (the gradient of A), bwd_filter (of B)"},
        {"dtype", TC_OPT_STR, &f->dtype, "T",
         "fp32 (default; the CPU runs fp32 only), or on a GPU tf32, fp32_strict, fp16, bf16"},
        {"device", TC_OPT_STR, &f->device, "DEV", "cpu (default) or cuda:INDEX"},
        {"threads", TC_OPT_UINT, &f->threads, "N", "cpu threads (default: all logical CPUs)"},
        TC_ALLOCATOR_OPT(f->allocator),
        TC_OPERANDS_OPT(f->operands),
        {"budget-ms", TC_OPT_DOUBLE, &f->budget_ms, "MS",
         "time budget per direction (default 1000)"},
        {"max-reps", TC_OPT_UINT, &f->max_reps, "N",
         "at most this many timed repetitions (default 200)"},
        {"seed", TC_OPT_UINT, &a.seed, "N", "seed of the random input data (default 1)"},
        {"format", TC_OPT_STR, &a.format, "table|csv|json", "output format (default table)"},
        {"verify", TC_OPT_FLAG, &a.verify, NULL,
         "also check each direction's result against a naive reference first"},
        TC_QUIET_OPT(&quiet_pct),
        {0},
    };
    const tc_cmd_spec_t spec = {
        .prog = "agent bench-matmul",
        .summary = "Benchmark one matmul in its training directions (forward, the gradient of "
                   "A, the gradient\nof B) as the framework runs them.",
        .max_positional = 0,
        .config_file = true,
        .epilog = "Sizes are per sample, as 'agent model describe' lists them; the GEMM of "
                  "each direction\nfollows PyTorch's autograd (docs/matmul-benchmarks.md). "
                  "framework_ms is the part of each\ntime that is the framework's own work "
                  "(on the CPU, a bmm's cost per product besides\nits sgemm_, measured once "
                  "per process).\n"
                  "Example (a ViT-B/16 MLP at 112 px, batch 8): agent bench-matmul --m 50 "
                  "--n 3072 --k 768\n  --trans-b --weight --bias --minibatch 8",
        .opts = opts,
    };
    tc_cli_result_t cli;
    int rc = tc_cli_begin(&spec, argc, argv, &cli);
    if (rc < 0 || cli.help_shown)
        return rc;
    if ((rc = tc_operands_apply(f->operands)) < 0 ||
        (rc = tc_agent_prepare(f->allocator, tc_cli_given(&spec, "quiet-threshold"),
                               quiet_pct)) < 0) {
        tc_cli_result_free(&cli);
        return rc;
    }
    tc_device_t *dev = NULL;
    tc_table_t *t = NULL;
    tc_format_t fmt;
    tc_bench_settings_t set;
    tc_matmul_config_t c;
    Traincast__V1__Direction dirs[3];
    size_t n_dirs = 0;
    TC_TRY(tc_format_parse(a.format, &fmt));
    TC_TRY(tc_bench_settings(f, &set));
    TC_TRY(tc_parse_directions(a.direction, dirs, &n_dirs));
    TC_TRY(s_config(&a, &set, &c));
    if (!(t = tc_table_new("matmul", s_cols, sizeof s_cols / sizeof s_cols[0])))
        TC_FAIL_GOTO(TC_ENOMEM, "out of memory");
    TC_TRY(tc_device_open(f->device, (unsigned)f->threads, &dev));
    if (fmt == TC_FMT_TABLE) {
        char label[128];
        tc_matmul_config_label(&c, label, sizeof label);
        printf("matmul: %s, %.3f GFLOP per forward\n\n", label, 2 * tc_matmul_macs(&c) / 1e9);
    }
    TC_TRY(s_bench(dev, &a, &set, &c, dirs, n_dirs, t));
    TC_TRY(tc_table_print(stdout, fmt, &t, 1));
err:
    tc_table_destroy(&t);
    tc_device_close(&dev);
    tc_cli_result_free(&cli);
    return rc;
}
