/* agent bench: benchmark every conv of some models at some batch sizes on
 * one device, writing ConvResults to a result file. Resumable: items the
 * file already holds for this device and policy are skipped. */
#include "agent_id.h"
#include "agent_devices.h"
#include "allocator.h"
#include "operands.h"
#include "bench_opts.h"
#include "bench_run.h"
#include "commands.h"
#include "convlist.h"
#include "planner.h"
#include "trace_peaks.h"

#include "tc_cli.h"
#include "tc_error.h"
#include "tc_validate.h"
#include "tc_progress.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int s_add_list(const char *model, const tc_conv_usage_t *convs, size_t n, void *arg)
{
    return tc_planner_add(arg, convs, n);
}

static int s_add_list_matmuls(const char *model, const tc_matmul_usage_t *mms, size_t n,
                              void *arg)
{
    return tc_planner_add_matmuls(arg, mms, n);
}

/* Import each model and add its convs. */
static int s_add_models(tc_planner_t *planner, const char *list, unsigned long input_size)
{
    char **names = NULL;
    size_t n = 0;
    int rc = tc_parse_name_list(list, "--models", &names, &n);
    if (rc == 0)
        rc = tc_planner_add_models(planner, names, n, (uint32_t)input_size);
    tc_free_strv(names, n);
    return rc;
}

/* Read each conv list file of --convs, its convs and matmuls, into the
 * planner (a missing or bad one: TC_EINVAL naming --convs). */
static int s_add_lists(tc_planner_t *planner, const char *convs)
{
    char **lists = NULL;
    size_t n_lists = 0;
    int rc = tc_parse_name_list(convs, "--convs", &lists, &n_lists);
    for (size_t i = 0; rc >= 0 && i < n_lists; i++) {
        rc = tc_oplist_read(lists[i], s_add_list, s_add_list_matmuls, planner);
        if (rc == TC_ENOTFOUND || rc == TC_EPARSE)
            rc = tc_err_context(TC_EINVAL, "--convs");
    }
    tc_free_strv(lists, n_lists);
    return rc;
}

/* The device and the settings the items are measured with. */
static void s_print_device(const Traincast__V1__Device *d, const tc_bench_settings_t *set)
{
    printf("device: %s [%s], %s %s, policy %s, %s %s\n", d->name, d->uuid, d->library,
           d->library_version, tc_policy_name(set->policy), tc_dtype_name(set->dtype),
           tc_layout_name(set->layout));
}

/* The plan: how many layer passes became how many items, and how many of
 * them the result file already holds. */
static void s_print_plan(const tc_plan_stats_t *st, size_t done, size_t todo, size_t held)
{
    size_t conv_items = st->items - st->matmul_items;
    printf("plan: %zu model%s, %llu conv layers, %zu batch size%s: %llu layer passes -> %zu "
           "unique items (%zu configs; %.1f%% of the passes)\n",
           st->models, st->models == 1 ? "" : "s", (unsigned long long)st->conv_layers,
           st->batches, st->batches == 1 ? "" : "s", (unsigned long long)st->layer_passes,
           conv_items, st->unique_configs,
           st->layer_passes ? 100.0 * (double)conv_items / (double)st->layer_passes : 0.0);
    if (st->matmul_configs)
        printf("matmuls: %llu layers: %llu layer passes -> %zu unique items (%zu configs; "
               "%.1f%% of the passes)\n",
               (unsigned long long)st->matmul_layers, (unsigned long long)st->matmul_passes,
               st->matmul_items, st->matmul_configs,
               st->matmul_passes ? 100.0 * (double)st->matmul_items / (double)st->matmul_passes
                                 : 0.0);
    if (done)
        printf("resume: %zu item%s already in the result file, %zu to measure; %zu of them to "
               "check at the plan's end (measured again if taken while the machine was busy or "
               "the host slow)\n",
               done, done == 1 ? "" : "s", todo, held);
}

/* The command's parsed options (the strings point into the parsed command
 * line: valid until tc_cli_result_free). */
typedef struct {
    const char *models, *convs, *batches_text, *out_path, *agent_id_flag, *state, *traces,
        *json_path, *direction, *ops;
    unsigned long input_size, seed;
    bool dry_run;
    tc_bench_flags_t f;
} s_bench_args_t;

/* What to measure, from the options. */
typedef struct {
    tc_bench_settings_t set;
    Traincast__V1__Direction dirs[3];
    size_t n_dirs;
    unsigned long *batches; /* malloc'ed: the caller frees it */
    size_t n_batches;
    bool convs, matmuls;    /* which ops of the models (--ops) */
} s_what_t;

/* --ops: "all" (convs, and matmuls where the device benchmarks them), or a
 * list of "conv" and "matmul" (matmuls then required). *convs and *matmuls
 * say which ops the plan keeps; TC_EUSAGE for an unknown op or matmuls
 * asked of a device that benchmarks none. */
static int s_ops(const char *ops, const char *device, bool *convs, bool *matmuls)
{
    const tc_backend_iface_t *iface = NULL;
    unsigned index = 0;
    int rc = tc_device_parse(device, &iface, &index);
    if (rc < 0)
        return rc;
    bool can = iface->matmul_create != NULL;
    *convs = true;
    if (!strcmp(ops, "all")) {
        *matmuls = can;
        return 0;
    }
    char **names = NULL;
    size_t n = 0;
    TC_TRY(tc_parse_name_list(ops, "--ops", &names, &n));
    *convs = *matmuls = false;
    for (size_t i = 0; i < n; i++) {
        if (!strcmp(names[i], "matmul"))
            *matmuls = true;
        else if (!strcmp(names[i], "conv"))
            *convs = true;
        else
            TC_FAIL_GOTO(TC_EUSAGE, "--ops: unknown op '%s' (all, conv, matmul)", names[i]);
    }
    if (*matmuls && !can)
        TC_FAIL_GOTO(TC_EUSAGE, "--ops matmul: the %s backend benchmarks no matmuls yet",
                     iface->kind);
err:
    tc_free_strv(names, n);
    return rc;
}

/* Check the options and turn them into what to measure (w->batches, once
 * set, is the caller's to free): TC_EUSAGE / TC_EINVAL naming what is
 * wrong. */
static int s_check(const s_bench_args_t *a, s_what_t *w)
{
    int rc;
    TC_TRY(tc_bench_settings(&a->f, &w->set));
    TC_TRY(tc_parse_directions(a->direction, w->dirs, &w->n_dirs));
    TC_TRY(tc_parse_uint_list(a->batches_text, "--batches", 1, TC_MAX_BATCH, &w->batches,
                              &w->n_batches));
    TC_TRY(s_ops(a->ops, a->f.device, &w->convs, &w->matmuls));
    if (!a->models && !a->convs)
        TC_FAIL_GOTO(TC_EUSAGE, "nothing to benchmark: give --models LIST or --convs FILE,...");
    if (a->input_size > 16384)
        TC_FAIL_GOTO(TC_EUSAGE, "--input-size %lu is implausible", a->input_size);
    if (!a->out_path && !a->dry_run)
        TC_FAIL_GOTO(TC_EUSAGE, "--out FILE is required (or use --dry-run)");
err:
    return rc;
}

/* Plan the work: the ops of --models and of the --convs lists at each
 * batch and direction, deduplicated. *items is malloc'ed (the caller frees
 * it). */
static int s_build_plan(const s_bench_args_t *a, const s_what_t *w, tc_bench_item_t **items,
                        size_t *n_items, tc_plan_stats_t *st)
{
    int rc = 0;
    tc_planner_t *planner = tc_planner_new();
    if (!planner)
        TC_FAIL_GOTO(TC_ENOMEM, "out of memory");
    tc_planner_set_matmuls(planner, w->matmuls);
    if (a->models)
        TC_TRY(s_add_models(planner, a->models, a->input_size));
    if (a->convs)
        TC_TRY(s_add_lists(planner, a->convs));
    TC_TRY(tc_planner_build(planner, w->batches, w->n_batches, w->set.dtype, w->set.layout,
                            w->dirs, w->n_dirs, items, n_items, st));
    if (!w->convs) { /* --ops matmul: the matmul items alone */
        size_t k = 0;
        for (size_t i = 0; i < *n_items; i++)
            if ((*items)[i].kind == TC_OP_MATMUL)
                (*items)[k++] = (*items)[i];
        *n_items = k;
        st->items = st->matmul_items;
        st->conv_layers = st->layer_passes = 0;
        st->unique_configs = 0;
    }
err:
    tc_planner_destroy(&planner);
    return rc;
}

/* Drop the items that the result file at out_path already holds for the
 * device with this uuid and this policy; *done: how many, and *held those
 * of them the plan's end has yet to check (tc_resume_held). */
static int s_resume(const char *out_path, const char *uuid, Traincast__V1__Policy policy,
                    tc_bench_item_t *items, size_t *n_items, size_t *done,
                    tc_bench_held_t **held, size_t *n_held)
{
    tc_resume_t *resume = NULL;
    int rc = tc_resume_load(out_path, uuid, policy, &resume);
    if (rc >= 0)
        rc = tc_resume_held(resume, items, *n_items, held, n_held);
    if (rc >= 0)
        *done = tc_resume_filter(resume, items, n_items);
    tc_resume_destroy(&resume);
    return rc;
}

/* Print the workspace limit at each batch as the traced peaks leave it. */
static void s_print_limits(const tc_bench_run_opts_t *ro, uint64_t memory_bytes,
                           const unsigned long *batches, size_t n_batches)
{
    for (size_t i = 0; i < n_batches; i++) {
        uint64_t lim = tc_bench_workspace_limit(ro, memory_bytes, (uint32_t)batches[i]);
        if (lim)
            printf("batch %lu: workspace limit %.0f MiB (memory less the traced peak)\n",
                   batches[i], (double)lim / (1 << 20));
        else
            printf("batch %lu: no trace of it: workspace limit what is free\n", batches[i]);
    }
}

/* Print what was measured, how fast and how precisely. */
static void s_print_report(const tc_bench_report_t *rep, double ci_rel)
{
    char el[32];
    tc_format_duration(rep->elapsed_s, el, sizeof el);
    printf("measured %zu item%s in %s: %.2f items/s, %.1f repetitions per item, %zu of them "
           "(%.0f%%) with the median's 95%% CI within %.0f%%; the medians sum to %.1f s%s\n",
           rep->measured, rep->measured == 1 ? "" : "s", el,
           rep->elapsed_s > 0 ? (double)rep->measured / rep->elapsed_s : 0.0,
           rep->measured ? (double)rep->repetitions / (double)rep->measured : 0.0,
           rep->converged,
           rep->measured ? 100.0 * (double)rep->converged / (double)rep->measured : 0.0,
           100 * ci_rel, rep->measured_ms / 1e3, rep->failed ? "" : "; all done");
}

/* Measure the items on the device, appending them to the result file (and
 * to --json), with the workspace limits that --traces leave, and report;
 * TC_ELIB when some items could not be measured. */
static int s_measure(tc_device_t *dev, const Traincast__V1__Device *d, const s_bench_args_t *a,
                     const s_what_t *w, const tc_bench_item_t *items, size_t n_items,
                     const tc_bench_held_t *held, size_t n_held)
{
    int rc;
    FILE *json = NULL;
    tc_trace_peak_t *peaks = NULL;
    size_t n_peaks = 0;
    char agent_id[320];
    TC_TRY(tc_agent_id(a->agent_id_flag, a->state, agent_id, sizeof agent_id));
    tc_bench_run_opts_t ro = {.policy = w->set.policy,
                              .workspace_limit = w->set.workspace_limit,
                              .measure = w->set.measure,
                              .seed = a->seed,
                              .agent_id = agent_id,
                              .held = held,
                              .n_held = n_held};
    tc_bench_report_t rep;
    if (a->json_path) {
        json = fopen(a->json_path, "a");
        if (!json)
            TC_FAIL_GOTO(TC_EIO, "--json %s: %s", a->json_path, strerror(errno));
        ro.json = json;
    }
    if (a->traces) {
        TC_TRY(tc_trace_peaks_load(a->traces, d->uuid, &peaks, &n_peaks));
        ro.peaks = peaks;
        ro.n_peaks = n_peaks;
        s_print_limits(&ro, d->memory_bytes, w->batches, w->n_batches);
    }
    TC_TRY(tc_bench_run(dev, items, n_items, &ro, a->out_path, &rep));
    s_print_report(&rep, w->set.measure.ci_rel);
    if (rep.failed)
        rc = tc_fail(TC_ELIB, "%zu of %zu items could not be measured (warnings above); run "
                              "the same command again to retry them",
                     rep.failed, n_items);
err:
    if (json)
        fclose(json);
    free(peaks);
    return rc;
}

int tc_cmd_bench(int argc, char **argv)
{
    s_bench_args_t a = {.direction = "all", .ops = "all", .seed = 1, .f = {.device = "cpu"}};
    tc_bench_flags_t *f = &a.f;
    double quiet_pct = 0;
    const tc_opt_t opts[] = {
        {"models", TC_OPT_STR, &a.models, "LIST",
         "models: torchvision:NAME (or NAME), FILE.py:FUNC or FILE.onnx, comma-separated"},
        {"input-size", TC_OPT_UINT, &a.input_size, "S",
         "input height and width of --models (default: each model's own)"},
        {"convs", TC_OPT_STR, &a.convs, "FILE,...",
         "conv list files (see docs/conv-benchmarks.md: one layer class per line; a "
         "'matmul' line is a matmul class)"},
        {"batches", TC_OPT_STR, &a.batches_text, "LIST",
         "batch sizes: 8,16,32 or 8..256 (powers of two) or 8..64:8", true},
        {"device", TC_OPT_STR, &f->device, "DEV", "cpu (default) or cuda:INDEX"},
        {"threads", TC_OPT_UINT, &f->threads, "N", "cpu threads (default: all logical CPUs)"},
        TC_ALLOCATOR_OPT(f->allocator),
        TC_OPERANDS_OPT(f->operands),
        {"policy", TC_OPT_STR, &f->policy, "P", "heuristic (default) or exhaustive"},
        {"dtype", TC_OPT_STR, &f->dtype, "T",
         "fp32 (default: as PyTorch computes it by default), fp32_strict, tf32, fp16 or bf16"},
        {"layout", TC_OPT_STR, &f->layout, "L",
         "nchw (default: each conv as the framework lays it out, channels-last where its "
         "input is) or nhwc (every conv channels-last)"},
        {"direction", TC_OPT_STR, &a.direction, "D",
         "all (default), or a list of fwd, bwd_data, bwd_filter"},
        {"ops", TC_OPT_STR, &a.ops, "LIST",
         "which ops of --models and --convs: all (default: convs, and matmuls where the "
         "device benchmarks them), or a list of conv, matmul"},
        {"budget-ms", TC_OPT_DOUBLE, &f->budget_ms, "MS", "time budget per item (default 1000)"},
        {"max-reps", TC_OPT_UINT, &f->max_reps, "N", "at most this many repetitions per item (default 200)"},
        {"workspace-mb", TC_OPT_UINT, &f->workspace_mb, "MB",
         "workspace limit (default: what training leaves free, from --traces; else what the "
         "device has free now)"},
        {"traces", TC_OPT_STR, &a.traces, "FILE,...",
         "result files with this device's training traces: at each batch the workspace "
         "limit is the device's memory less the largest peak memory traced at that batch"},
        {"seed", TC_OPT_UINT, &a.seed, "N", "seed of the random input data (default 1)"},
        {"out", TC_OPT_STR, &a.out_path, "FILE",
         "result file to append to (required unless --dry-run); items it already holds for "
         "this device and policy are skipped"},
        {"agent-id", TC_OPT_STR, &a.agent_id_flag, "ID",
         "agent id for the envelopes (default: the state directory's, as 'agent run' sends "
         "with; without one, derived from this machine)"},
        {"state", TC_OPT_STR, &a.state, "DIR",
         "the agent state directory whose id to use (default $TRAINCAST_AGENT_DIR or "
         "~/.traincast/agent, when it exists)"},
        {"json", TC_OPT_STR, &a.json_path, "FILE",
         "also write one JSON line per measured item there (config, direction, route, "
         "algorithm, median, min, SM clock, power)"},
        {"dry-run", TC_OPT_FLAG, &a.dry_run, NULL,
         "print the plan (and what the result file already holds) without measuring"},
        TC_QUIET_OPT(&quiet_pct),
        {0},
    };
    const tc_cmd_spec_t spec = {
        .prog = "agent bench",
        .summary = "Benchmark every convolution (and matmul, where the device times them) of "
                   "some models at some\nbatch sizes on one device: the deduplicated (config, "
                   "batch, direction) items, without\nthe backward passes that a training "
                   "step does not run.",
        .max_positional = 0,
        .config_file = true,
        .epilog = "Example: agent bench --models torchvision:resnet50 --batches 16,32,64 --out "
                  "results.tcr",
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
    tc_bench_item_t *items = NULL;
    tc_bench_held_t *held = NULL;
    size_t n_items = 0, done = 0, n_held = 0;
    s_what_t w = {0};
    TC_TRY(s_check(&a, &w));
    tc_plan_stats_t st;
    TC_TRY(s_build_plan(&a, &w, &items, &n_items, &st));

    TC_TRY(tc_device_open(f->device, (unsigned)f->threads, &dev));
    Traincast__V1__Device d = TRAINCAST__V1__DEVICE__INIT;
    TC_TRY(tc_device_describe(dev, &d));
    if (a.out_path)
        TC_TRY(s_resume(a.out_path, d.uuid, w.set.policy, items, &n_items, &done, &held,
                        &n_held));
    s_print_device(&d, &w.set);
    s_print_plan(&st, done, n_items, n_held);
    fflush(stdout);
    if (a.dry_run || (n_items == 0 && n_held == 0))
        goto err; /* rc is 0: nothing to measure */
    rc = s_measure(dev, &d, &a, &w, items, n_items, held, n_held);
err:
    tc_device_close(&dev);
    free(held);
    free(items);
    free(w.batches);
    tc_cli_result_free(&cli);
    return rc;
}
