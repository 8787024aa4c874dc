/* agent trace: full-training traces through the real framework, one
 * TrainTrace per (model, batch), written to a result file. */
#include "agent_id.h"
#include "agent_devices.h"
#include "allocator.h"
#include "commands.h"

#include "tc_cli.h"
#include "tc_error.h"
#include "tc_validate.h"
#include "tc_log.h"
#include "tc_progress.h"
#include "tc_resultfile.h"
#include "trace_plan.h"
#include "trace_proc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    const char *models, *batches, *device, *dtype, *amp, *optimizer, *runner, *agent_id, *out,
        *state, *allocator;
    unsigned long threads, input_size, warmup, iters, repeat;
    double timeout;
    bool cudnn_benchmark, no_profile, no_graph;
} s_opts_t;

/* Resume: traces already in the output file are not measured again. */
static int s_seen(const tc_envelope_t *env, void *arg)
{
    if (env->body_case == TRAINCAST__V1__ENVELOPE__BODY_TRAIN_TRACE && env->train_trace)
        tc_trace_plan_mark_done(arg, env->train_trace);
    return 0;
}

typedef struct {
    tc_resultfile_t *file;
    tc_progress_t *bar;
} s_sink_arg_t;

static int s_emit(tc_envelope_t *env, void *arg)
{
    return tc_resultfile_append(((s_sink_arg_t *)arg)->file, env);
}

static void s_progress(uint64_t done, uint64_t total, const char *what, void *arg)
{
    s_sink_arg_t *a = arg;
    if (!a->bar && total)
        a->bar = tc_progress_new("trace", total);
    tc_progress_update(a->bar, done, what);
}

static bool s_cancelled(void *arg)
{
    (void)arg;
    return tc_proc_interrupted();
}

static void s_print_table(tc_trace_plan_t *plan)
{
    printf("%-36s %6s  %-6s %10s %7s  %s\n", "model", "batch", "status", "median_ms", "spread",
           "repeat medians (ms) or reason");
    for (size_t i = 0; i < tc_trace_plan_count(plan); i++) {
        const tc_trace_item_t *it = tc_trace_plan_item(plan, i);
        const tc_trace_row_t *row = &it->row;
        if (!row->have)
            continue;
        printf("%-36s %6u  %-6s ", it->model_id, it->batch, tc_trace_status_name(row->status));
        if (row->status == TRAINCAST__V1__TRACE_STATUS__TRACE_STATUS_OK) {
            printf("%10.2f %6.1f%% ", row->median_ms, row->spread * 100);
            for (uint32_t r = 0; r < row->n_repeats; r++)
                printf(" %.2f", row->repeat_medians[r]);
        } else {
            printf("%10s %7s  %s", "-", "-", row->reason);
        }
        printf("\n");
    }
}

static int s_run(const s_opts_t *o)
{
    char **names = NULL;
    size_t n_models = 0, n_batches = 0, measured = 0, failed = 0;
    unsigned long *batches = NULL;
    uint32_t *b32 = NULL;
    tc_trace_plan_t *plan = NULL;
    s_sink_arg_t sa = {0};
    int rc;
    if (!*o->out)
        return tc_fail(TC_EUSAGE, "--out must name a file");
    TC_TRY(tc_parse_name_list(o->models, "--models", &names, &n_models));
    TC_TRY(tc_parse_uint_list(o->batches, "--batches", 1, TC_MAX_BATCH, &batches, &n_batches));
    if (!(b32 = calloc(n_batches, sizeof *b32)))
        TC_FAIL_GOTO(TC_ENOMEM, "out of memory");
    for (size_t i = 0; i < n_batches; i++)
        b32[i] = (uint32_t)batches[i];
    if (o->threads > 4096 || o->input_size > 8192 || o->warmup > 10000 || o->iters > 10000 ||
        o->repeat > 1000)
        TC_FAIL_GOTO(TC_EINVAL, "--threads (at most 4096), --input-size (8192), --warmup, "
                                "--iters (10000) or --repeat (1000) is too large");
    char agent_id[320];
    TC_TRY(tc_agent_id(o->agent_id, o->state, agent_id, sizeof agent_id));
    const tc_trace_settings_t settings = {
        .device = o->device, .threads = (uint32_t)o->threads,
        .input_size = (uint32_t)o->input_size, .dtype = o->dtype, .amp = o->amp,
        .optimizer = o->optimizer, .cudnn_benchmark = o->cudnn_benchmark,
        .warmup = (uint32_t)o->warmup, .iters = (uint32_t)o->iters,
        .repeats = (uint32_t)o->repeat, .timeout_s = o->timeout, .profile = !o->no_profile,
        .no_graph = o->no_graph, .runner = o->runner, .agent_id = agent_id,
    };
    TC_TRY(tc_trace_plan_new(&settings, names, n_models, b32, n_batches, &plan));
    TC_TRY(tc_resultfile_read(o->out, true, s_seen, plan, NULL));
    size_t n = tc_trace_plan_count(plan), done = 0;
    for (size_t i = 0; i < n; i++)
        done += tc_trace_plan_item(plan, i)->done;
    if (done)
        tc_log_info("%s: %zu of %zu traces are already there and are skipped", o->out, done, n);
    TC_TRY(tc_resultfile_open_append(o->out, &sa.file));
    tc_proc_catch_interrupts();
    const tc_result_sink_t sink = {.emit = s_emit, .progress = s_progress,
                                   .cancelled = s_cancelled, .arg = &sa};
    rc = tc_trace_plan_run(plan, &sink, &measured, &failed);
    tc_progress_destroy(&sa.bar);
    if (rc == TC_EINTR)
        tc_err_context(rc, "%zu traces written to %s are kept; a rerun resumes", measured,
                       o->out);
    if (rc < 0)
        goto err;
    s_print_table(plan);
    if (failed)
        rc = tc_fail(TC_ECHILD, "%zu of %zu traces failed; they are recorded in %s with the "
                                "reason, and a rerun retries them",
                     failed, measured, o->out);
err:
    tc_progress_destroy(&sa.bar);
    tc_resultfile_close(&sa.file);
    tc_trace_plan_destroy(&plan);
    free(b32);
    free(batches);
    tc_free_strv(names, n_models);
    return rc;
}

int tc_cmd_trace(int argc, char **argv)
{
    s_opts_t o = {.device = "cpu", .dtype = "fp32", .amp = "", .optimizer = "sgd",
                  .warmup = 3, .iters = 10, .repeat = 3, .timeout = 1800};
    double quiet_pct = 0;
    const tc_opt_t opts[] = {
        {"models", TC_OPT_STR, &o.models, "LIST",
         "torchvision names (resnet50 or torchvision:resnet50) or FILE.py:FUNC (the model "
         "that function of a Python file builds), comma-separated",
         true},
        {"batches", TC_OPT_STR, &o.batches, "LIST", "batch sizes: 8,16,32 or 8..256", true},
        {"out", TC_OPT_STR, &o.out, "FILE",
         "result file to append TrainTrace records to; traces already in it are skipped", true},
        {"device", TC_OPT_STR, &o.device, "D", "cpu or cuda:I (default cpu)"},
        {"threads", TC_OPT_UINT, &o.threads, "N",
         "CPU threads for training (default: the CPUs this process may use)"},
        TC_ALLOCATOR_OPT(o.allocator),
        {"input-size", TC_OPT_UINT, &o.input_size, "S",
         "image height and width (default: 224, 299 for inception_v3)"},
        {"dtype", TC_OPT_STR, &o.dtype, "T",
         "fp32 (default: PyTorch's defaults, TF32 convs on compute capability 8.0 and up), "
         "fp32_strict (no TF32), tf32 (convs and matmuls), fp16 or bf16"},
        {"amp", TC_OPT_STR, &o.amp, "T", "automatic mixed precision: fp16 or bf16 (default off)"},
        {"optimizer", TC_OPT_STR, &o.optimizer, "SPEC",
         "sgd (default: momentum 0, weight decay 0), adam or adamw, with ,key=value options"},
        {"cudnn-benchmark", TC_OPT_FLAG, &o.cudnn_benchmark, NULL,
         "train with cudnn.benchmark on (policy exhaustive); default off (heuristic)"},
        {"warmup", TC_OPT_UINT, &o.warmup, "W", "warm-up iterations per run (default 3)"},
        {"iters", TC_OPT_UINT, &o.iters, "N", "measured iterations per run (default 10)"},
        {"repeat", TC_OPT_UINT, &o.repeat, "R",
         "runs per trace, each a fresh process; spread = (max - min) / median of the run "
         "medians (default 3)"},
        {"runner", TC_OPT_STR, &o.runner, "CMD",
         "trace runner command (docs/trace-protocol.md); default: the PyTorch harness"},
        {"timeout", TC_OPT_DOUBLE, &o.timeout, "SEC",
         "kill a run that takes longer, and record the trace as failed (default 1800)"},
        {"no-profile", TC_OPT_FLAG, &o.no_profile, NULL,
         "skip the profiled extra iteration (time per op class) of the first run"},
        {"no-graph", TC_OPT_FLAG, &o.no_graph, NULL,
         "do not attach the model graph (for models the importer cannot read)"},
        {"agent-id", TC_OPT_STR, &o.agent_id, "ID",
         "agent id in the records (default: the state directory's, as 'agent run' sends with; "
         "without one, derived from this machine)"},
        {"state", TC_OPT_STR, &o.state, "DIR",
         "the agent state directory whose id to use (default $TRAINCAST_AGENT_DIR or "
         "~/.traincast/agent, when it exists)"},
        TC_QUIET_OPT(&quiet_pct),
        {0},
    };
    const tc_cmd_spec_t spec = {
        .prog = "agent trace",
        .summary = "Train each model at each batch size through the real framework and record "
                   "every iteration's time.",
        .max_positional = 0,
        .config_file = true,
        .epilog =
            "Each run trains on synthetic data held on the device: forward, loss, backward,\n"
            "optimizer step, zero_grad. A run that reports out of memory gives a trace with\n"
            "status oom; one that crashes, hangs past --timeout or prints a malformed line gives\n"
            "status failed with the reason; nothing of it is used. The closing table lists every\n"
            "trace of the plan. Exit status 1 when a trace failed.\n"
            "Environment: TRAINCAST_PYTHON (default /usr/bin/python3) runs the PyTorch harness;\n"
            "TRAINCAST_HARNESS_DIR is where its trace_runner.py is (default: the source tree's\n"
            "agent/harness, else the installed share/traincast/harness next to the binary).\n"
            "The runner protocol: docs/trace-protocol.md.",
        .opts = opts,
    };
    tc_cli_result_t cli;
    int rc = tc_cli_parse(&spec, argc, argv, &cli);
    if (rc == 0 && !cli.help_shown)
        rc = tc_agent_prepare(o.allocator, tc_cli_given(&spec, "quiet-threshold"), quiet_pct);
    if (rc == 0 && !cli.help_shown)
        rc = s_run(&o);
    tc_cli_result_free(&cli);
    return rc;
}
