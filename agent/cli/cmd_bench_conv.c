/* agent bench-conv: benchmark one convolution on one device and print every
 * candidate algorithm with its statistics and the chosen one. */
#include "agent_devices.h"
#include "allocator.h"
#include "operands.h"
#include "bench_opts.h"
#include "commands.h"
#include "conv_bench.h"
#include "conv_verify.h"

#include "tc_cli.h"
#include "tc_error.h"
#include "tc_table.h"
#include "tc_validate.h"

#include <stdio.h>
#include <string.h>

static bool s_text = true; /* --format table: people read stdout */

static void s_bytes(uint64_t b, char *buf, size_t size)
{
    if (b >= (1ull << 30))
        snprintf(buf, size, "%.1f GiB", (double)b / (1ull << 30));
    else if (b >= (1ull << 20))
        snprintf(buf, size, "%.1f MiB", (double)b / (1ull << 20));
    else if (b >= 1024)
        snprintf(buf, size, "%.1f KiB", (double)b / 1024);
    else
        snprintf(buf, size, "%llu B", (unsigned long long)b);
}

static void s_print(const tc_conv_outcome_t *o)
{
    printf("%s (%zu candidate%s):\n", tc_direction_name(o->spec.direction), o->n_algos,
           o->n_algos == 1 ? "" : "s");
    printf("    %-34s %-20s %10s %10s %10s %10s %9s %5s\n", "algorithm", "status", "workspace",
           "median ms", "min ms", "max ms", "stddev", "reps");
    for (size_t i = 0; i < o->n_algos; i++) {
        const tc_algo_result_t *a = &o->algos[i];
        char ws[32];
        s_bytes(a->info.workspace_bytes, ws, sizeof ws);
        bool chosen = (int)i == o->chosen;
        const tc_stats_t *st = chosen ? &o->samples.stats : &a->stats;
        printf("  %c %-34s %-20s %10s", chosen ? '*' : ' ', a->info.name,
               tc_algo_status_name(a->info.status), ws);
        if (a->timed)
            printf(" %10.4f %10.4f %10.4f %9.4f %5zu", st->median, st->min, st->max, st->stddev,
                   st->n);
        if (a->info.message[0])
            printf("%s%s", a->timed ? "  " : "  ", a->info.message);
        printf("\n");
    }
    const tc_algo_result_t *c = &o->algos[o->chosen];
    const tc_samples_t *s = &o->samples;
    double macs = tc_conv_macs(&o->spec.config);
    printf("  chosen: %s, median %.4f ms (95%% CI %.4f..%.4f), %.1f GFLOP/s; %zu repetitions "
           "after %u warm-up%s (%s), stopped: %s\n",
           c->info.name, s->stats.median, s->stats.ci_lo, s->stats.ci_hi,
           2 * macs / (s->stats.median * 1e6), s->n, s->warmups, s->warmups == 1 ? "" : "s",
           s->settled ? "settled" : "not settled", tc_stop_reason_name(s->stop));
    if (o->route[0])
        printf("  route: %s", o->route);
    if (o->telemetry.sm_clock_mhz)
        printf("; SM clock %u MHz, %.0f W", o->telemetry.sm_clock_mhz, o->telemetry.power_w);
    if (o->route[0] || o->telemetry.sm_clock_mhz)
        printf("\n");
    if (s->load.known)
        printf("  others used %.0f %% of the machine meanwhile%s%s\n", s->load.others_pct,
               s->remeasured ? " (measured again for load)" : "",
               s->disturbed ? "; DISTURBED: over the quiet threshold" : "");
}

/* --format csv|json: every candidate of every direction, one row each. */
static const tc_col_t s_cand_cols[] = {
    {"direction", TC_COL_TEXT},     {"algorithm", TC_COL_TEXT}, {"status", TC_COL_TEXT},
    {"chosen", TC_COL_BOOL},        {"workspace_bytes", TC_COL_INT},
    {"median_ms", TC_COL_NUM},      {"min_ms", TC_COL_NUM},     {"max_ms", TC_COL_NUM},
    {"stddev_ms", TC_COL_NUM},      {"repetitions", TC_COL_INT}, {"message", TC_COL_TEXT},
    {"route", TC_COL_TEXT},         {"sm_clock_mhz", TC_COL_INT}, {"power_w", TC_COL_NUM},
};

static int s_rows(tc_table_t *t, const tc_conv_outcome_t *o)
{
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < o->n_algos; i++) {
        const tc_algo_result_t *a = &o->algos[i];
        bool chosen = (int)i == o->chosen;
        const tc_stats_t *st = chosen ? &o->samples.stats : &a->stats;
        char ws[32], v[5][64], mhz[16], watts[32];
        snprintf(mhz, sizeof mhz, "%u", o->telemetry.sm_clock_mhz);
        snprintf(watts, sizeof watts, "%.1f", o->telemetry.power_w);
        bool tele = chosen && o->telemetry.sm_clock_mhz;
        snprintf(ws, sizeof ws, "%llu", (unsigned long long)a->info.workspace_bytes);
        snprintf(v[0], sizeof v[0], "%.6g", st->median);
        snprintf(v[1], sizeof v[1], "%.6g", st->min);
        snprintf(v[2], sizeof v[2], "%.6g", st->max);
        snprintf(v[3], sizeof v[3], "%.6g", st->stddev);
        snprintf(v[4], sizeof v[4], "%zu", st->n);
        const char *row[] = {tc_direction_name(o->spec.direction),
                             a->info.name,
                             tc_algo_status_name(a->info.status),
                             chosen ? "true" : "false",
                             ws,
                             a->timed ? v[0] : NULL,
                             a->timed ? v[1] : NULL,
                             a->timed ? v[2] : NULL,
                             a->timed ? v[3] : NULL,
                             a->timed ? v[4] : NULL,
                             a->info.message[0] ? a->info.message : NULL,
                             chosen && o->route[0] ? o->route : NULL,
                             tele ? mhz : NULL,
                             tele ? watts : NULL};
        rc = tc_table_add_row(t, row);
    }
    return rc;
}

/* Run the chosen algorithm once more and compare with the reference. */
static int s_verify(tc_device_t *dev, const tc_conv_outcome_t *o)
{
    int rc = 0;
    tc_conv_plan_t *plan = NULL;
    double ms;
    TC_TRY(tc_conv_plan_create(dev, &o->spec, &plan));
    for (size_t i = 0; i < tc_conv_plan_algo_count(plan); i++) {
        if (strcmp(tc_conv_plan_algo(plan, i)->name, o->algos[o->chosen].info.name) != 0)
            continue;
        TC_TRY(tc_conv_plan_select(plan, i));
        TC_TRY(tc_conv_plan_run(plan, &ms));
        tc_verify_t v;
        TC_TRY(tc_conv_verify(plan, &o->spec, &v));
        if (v.wrong)
            TC_FAIL_GOTO(TC_ELIB, "%s gives wrong results: %zu of %zu values outside the "
                                  "tolerance; worst %s[%zu] = %g, reference %g",
                         o->algos[o->chosen].info.name, v.wrong, v.checked,
                         tc_tensor_name(v.tensor), v.worst, v.got, v.want);
        fprintf(s_text ? stdout : stderr, "  verified: %zu values match the reference\n",
                v.checked);
        break;
    }
err:
    tc_conv_plan_destroy(&plan);
    return rc;
}

/* The command's parsed options (the strings point into the parsed command
 * line: valid until tc_cli_result_free). */
typedef struct {
    unsigned long n, c, h, w, k, r, s, pad, stride, groups, dilation, seed;
    const char *direction, *path_text, *format;
    bool verify, bias;
    tc_bench_flags_t f;
} s_conv_args_t;

/* What to benchmark, from the options: the settings, the directions, the
 * path and the conv. */
typedef struct {
    tc_bench_settings_t set;
    Traincast__V1__Direction dirs[3];
    size_t n_dirs;
    tc_conv_path_t path;
    tc_conv_config_t cfg;
} s_plan_t;

/* Check the options and turn them into the plan: TC_EUSAGE / TC_EINVAL
 * naming what is wrong. */
static int s_plan(const s_conv_args_t *a, s_plan_t *p)
{
    int rc;
    p->n_dirs = 0;
    TC_TRY(tc_bench_settings(&a->f, &p->set));
    TC_TRY(tc_parse_directions(a->direction, p->dirs, &p->n_dirs));
    p->path = TC_PATH_FRAMEWORK;
    if (a->path_text)
        TC_TRY(tc_conv_path_parse(a->path_text, &p->path));
    unsigned long s = a->s ? a->s : a->r;
    const unsigned long vals[] = {a->n, a->c,   a->h,      a->w,      a->k,      a->r,
                                  s,    a->pad, a->stride, a->groups, a->dilation};
    for (size_t i = 0; i < sizeof vals / sizeof vals[0]; i++)
        if (vals[i] > (1ul << 20))
            TC_FAIL_GOTO(TC_EUSAGE, "a shape value (%lu) is larger than %lu", vals[i], 1ul << 20);
    tc_conv_config_t *cfg = &p->cfg;
    *cfg = tc_conv_config_default();
    cfg->n = (uint32_t)a->n, cfg->c = (uint32_t)a->c, cfg->h = (uint32_t)a->h;
    cfg->w = (uint32_t)a->w, cfg->k = (uint32_t)a->k, cfg->r = (uint32_t)a->r;
    cfg->s = (uint32_t)s;
    cfg->pad_h = cfg->pad_w = (uint32_t)a->pad;
    cfg->stride_h = cfg->stride_w = (uint32_t)a->stride;
    cfg->groups = (uint32_t)a->groups;
    cfg->dilation_h = cfg->dilation_w = (uint32_t)a->dilation;
    cfg->dtype = p->set.dtype;
    cfg->layout = p->set.layout;
    cfg->bias = a->bias;
    if (a->n == 0 || a->n > TC_MAX_BATCH)
        TC_FAIL_GOTO(TC_EUSAGE, "--n (the batch) must be between 1 and %u (got %lu)",
                     TC_MAX_BATCH, a->n);
    TC_TRY(tc_conv_config_check(cfg));
err:
    return rc;
}

/* Describe the device and print it and the conv (to stdout for the table,
 * else to stderr). */
static int s_print_header(tc_device_t *dev, const s_plan_t *p)
{
    Traincast__V1__Device d = TRAINCAST__V1__DEVICE__INIT;
    int rc = tc_device_describe(dev, &d);
    if (rc < 0)
        return rc;
    char label[160];
    tc_conv_config_label(&p->cfg, label, sizeof label);
    tc_device_env_t env;
    tc_device_environment(dev, &env);
    FILE *info = s_text ? stdout : stderr;
    fprintf(info, "device: %s [%s] %s %s\n", d.name, d.uuid, d.library, d.library_version);
    if (env.routing[0])
        fprintf(info, "        %s, routing %s\n", env.framework, env.routing);
    fprintf(info, "conv:   %s, %s %s, policy %s, %.3f GFLOP per pass\n\n", label,
            tc_dtype_name(p->cfg.dtype), tc_layout_name(p->cfg.layout),
            tc_policy_name(p->set.policy), 2 * tc_conv_macs(&p->cfg) / 1e9);
    return rc;
}

/* Benchmark the conv in each direction in turn: print the outcome (table)
 * or add its candidates to `cands` (csv, json), then verify the chosen
 * algorithm with --verify. */
static int s_bench_dirs(tc_device_t *dev, const s_conv_args_t *a, const s_plan_t *p,
                        tc_table_t *cands)
{
    int rc = 0;
    tc_conv_outcome_t out = {0};
    tc_canary_t canary;
    tc_measure_opts_t mo = tc_measure_with_canary(&p->set.measure, dev, &canary);
    for (size_t i = 0; i < p->n_dirs; i++) {
        tc_conv_spec_t cs = {.config = p->cfg,
                             .direction = p->dirs[i],
                             .policy = p->set.policy,
                             .workspace_limit = p->set.workspace_limit,
                             .seed = a->seed,
                             .path = p->path};
        TC_TRY(tc_conv_bench(dev, &cs, &mo, &out));
        if (s_text)
            s_print(&out);
        else
            TC_TRY(s_rows(cands, &out));
        if (a->verify)
            TC_TRY(s_verify(dev, &out));
        tc_conv_outcome_free(&out);
        if (s_text)
            printf("\n");
        fflush(stdout);
    }
err:
    tc_conv_outcome_free(&out);
    return rc;
}

int tc_cmd_bench_conv(int argc, char **argv)
{
    s_conv_args_t a = {.stride = 1,
                       .groups = 1,
                       .dilation = 1,
                       .seed = 1,
                       .direction = "all",
                       .format = "table",
                       .f = {.device = "cpu"}};
    tc_bench_flags_t *f = &a.f;
    double quiet_pct = 0;
    const tc_opt_t opts[] = {
        {"n", TC_OPT_UINT, &a.n, "N", "batch size", true},
        {"c", TC_OPT_UINT, &a.c, "C", "input channels", true},
        {"h", TC_OPT_UINT, &a.h, "H", "input height", true},
        {"w", TC_OPT_UINT, &a.w, "W", "input width", true},
        {"k", TC_OPT_UINT, &a.k, "K", "output channels", true},
        {"r", TC_OPT_UINT, &a.r, "R", "filter height", true},
        {"s", TC_OPT_UINT, &a.s, "S", "filter width (default: R)"},
        {"pad", TC_OPT_UINT, &a.pad, "P", "zero padding on each side (default 0)"},
        {"stride", TC_OPT_UINT, &a.stride, "U", "stride (default 1)"},
        {"groups", TC_OPT_UINT, &a.groups, "G", "groups; C for depthwise (default 1)"},
        {"dilation", TC_OPT_UINT, &a.dilation, "D", "dilation (default 1)"},
        {"bias", TC_OPT_FLAG, &a.bias, NULL,
         "the layer adds a bias: timed with the forward and its gradient with backward-filter"},
        {"dtype", TC_OPT_STR, &f->dtype, "T",
         "fp32 (default: as PyTorch computes it by default, TF32 convs on compute capability "
         "8.0 and up), fp32_strict (no TF32), tf32, fp16 or bf16"},
        {"layout", TC_OPT_STR, &f->layout, "L", "nchw (default) or nhwc"},
        {"policy", TC_OPT_STR, &f->policy, "P",
         "heuristic (default: the library's first choice that fits, as frameworks do) or "
         "exhaustive (time every algorithm, keep the fastest)"},
        {"direction", TC_OPT_STR, &a.direction, "D", "all (default), or a list of fwd, bwd_data, bwd_filter"},
        {"device", TC_OPT_STR, &f->device, "DEV", "cpu (default) or cuda:INDEX"},
        {"threads", TC_OPT_UINT, &f->threads, "N", "cpu threads (default: all logical CPUs)"},
        TC_ALLOCATOR_OPT(f->allocator),
        TC_OPERANDS_OPT(f->operands),
        {"path", TC_OPT_STR, &a.path_text, "WHICH",
         "framework (default: where PyTorch sends this conv, oneDNN or its native im2col + "
         "GEMM), library (always oneDNN or cuDNN) or native (PyTorch's native kernels)"},
        {"budget-ms", TC_OPT_DOUBLE, &f->budget_ms, "MS",
         "time budget per direction and algorithm choice (default 1000)"},
        {"max-reps", TC_OPT_UINT, &f->max_reps, "N", "at most this many timed repetitions (default 200)"},
        {"workspace-mb", TC_OPT_UINT, &f->workspace_mb, "MB",
         "workspace limit (default: what the device has free)"},
        {"seed", TC_OPT_UINT, &a.seed, "N", "seed of the random input data (default 1)"},
        {"format", TC_OPT_STR, &a.format, "table|csv|json",
         "output format (default: table, as text; csv and json: the table candidates)"},
        {"verify", TC_OPT_FLAG, &a.verify, NULL,
         "also check the chosen algorithm's output against the naive reference (slow on "
         "large shapes)"},
        TC_QUIET_OPT(&quiet_pct),
        {0},
    };
    const tc_cmd_spec_t spec = {
        .prog = "agent bench-conv",
        .summary = "Benchmark one convolution: every candidate algorithm with its status, "
                   "workspace and timing\nstatistics, and the one the policy chooses.",
        .max_positional = 0,
        .config_file = true,
        .epilog = "Timing: warm-up until successive times settle, then repetitions until the "
                  "95% confidence\ninterval of the median is within 2% or the budget ends.\n"
                  "Example: agent bench-conv --n 32 --c 64 --h 56 --w 56 --k 64 --r 3 --pad 1",
        .opts = opts,
    };
    tc_cli_result_t cli;
    int rc = tc_cli_begin(&spec, argc, argv, &cli);
    if (rc < 0 || cli.help_shown)
        return rc;
    if ((rc = tc_operands_apply(f->operands)) < 0 ||
        (rc = tc_agent_prepare(f->allocator, tc_cli_given(&spec, "quiet-threshold"), quiet_pct)) < 0) {
        tc_cli_result_free(&cli);
        return rc;
    }
    tc_device_t *dev = NULL;
    tc_table_t *cands = NULL;
    tc_format_t fmt;
    TC_TRY(tc_format_parse(a.format, &fmt));
    s_text = fmt == TC_FMT_TABLE;
    if (!(cands = tc_table_new("candidates", s_cand_cols, sizeof s_cand_cols / sizeof s_cand_cols[0])))
        TC_FAIL_GOTO(TC_ENOMEM, "out of memory");
    s_plan_t p;
    TC_TRY(s_plan(&a, &p));

    TC_TRY(tc_device_open(f->device, (unsigned)f->threads, &dev));
    TC_TRY(s_print_header(dev, &p));
    TC_TRY(s_bench_dirs(dev, &a, &p, cands));
    if (!s_text)
        TC_TRY(tc_table_print(stdout, fmt, &cands, 1));
err:
    tc_table_destroy(&cands);
    tc_device_close(&dev);
    tc_cli_result_free(&cli);
    return rc;
}
