/* agent trace: full-training traces through the real framework, one
 * TrainTrace per (model, batch), written to a result file. */
#include "commands.h"

#include "hostinfo.h"
#include "tc_cli.h"
#include "tc_error.h"
#include "tc_log.h"
#include "tc_progress.h"
#include "tc_resultfile.h"
#include "trace_device.h"
#include "trace_graph.h"
#include "trace_proc.h"
#include "trace_record.h"
#include "trace_run.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KEY_LEN 600

/* What a finished trace looked like, for the closing table. */
typedef struct {
    bool have;
    Traincast__V1__TraceStatus status;
    double median_ms, spread;
    double *repeat_medians;
    uint32_t n_repeats;
    char reason[2048];
} s_row_t;

typedef struct {
    const char *spec;         /* as given in --models */
    const char *runner_model; /* passed to the runner */
    uint32_t input_size;
    char model_id[256];
    Traincast__V1__ModelGraph *graph;
} s_model_t;

typedef struct {
    s_model_t *model;
    uint32_t batch;
    char key[KEY_LEN];
    bool done;  /* already in the output file */
    s_row_t row;
} s_item_t;

typedef struct {
    s_item_t *items;
    size_t n_items;
} s_plan_t;

typedef struct {
    tc_progress_t *progress;
    uint64_t runs_done;
    char label[320];
} s_prog_t;

static void s_row_free(s_row_t *row)
{
    free(row->repeat_medians);
    row->repeat_medians = NULL;
}

/* Resume: traces already in the output file with status ok or oom are not
 * measured again; failed ones are retried. */
static int s_seen(const tc_envelope_t *env, void *arg)
{
    s_plan_t *plan = arg;
    if (env->body_case != TRAINCAST__V1__ENVELOPE__BODY_TRAIN_TRACE || !env->train_trace)
        return 0;
    const Traincast__V1__TrainTrace *t = env->train_trace;
    if (t->status != TRAINCAST__V1__TRACE_STATUS__TRACE_STATUS_OK &&
        t->status != TRAINCAST__V1__TRACE_STATUS__TRACE_STATUS_OOM)
        return 0;
    char key[KEY_LEN];
    tc_trace_key(t, key, sizeof key);
    for (size_t i = 0; i < plan->n_items; i++) {
        s_item_t *it = &plan->items[i];
        if (strcmp(it->key, key) != 0)
            continue;
        it->done = true;
        s_row_free(&it->row);
        it->row = (s_row_t){.have = true, .status = t->status, .median_ms = t->median_ms,
                            .spread = t->spread};
        snprintf(it->row.reason, sizeof it->row.reason, "%s", t->reason);
        /* Repeat medians from the stored iterations. */
        uint32_t reps = 0;
        for (size_t k = 0; k < t->n_iterations; k++)
            reps = t->iterations[k]->repeat + 1 > reps ? t->iterations[k]->repeat + 1 : reps;
        double *med = calloc(reps + 1, sizeof *med), *tmp = calloc(t->n_iterations + 1, sizeof *tmp);
        if (med && tmp) {
            for (uint32_t r = 0; r < reps; r++) {
                size_t n = 0;
                for (size_t k = 0; k < t->n_iterations; k++) {
                    if (t->iterations[k]->repeat == r && !t->iterations[k]->warmup)
                        tmp[n++] = t->iterations[k]->ms;
                }
                med[r] = n ? tc_trace_median(tmp, n) : 0;
            }
            it->row.repeat_medians = med;
            it->row.n_repeats = reps;
            med = NULL;
        }
        free(med);
        free(tmp);
    }
    return 0;
}

static void s_on_repeat(uint32_t repeat, void *arg)
{
    s_prog_t *p = arg;
    char item[400];
    snprintf(item, sizeof item, "%s repeat %u", p->label, repeat + 1);
    tc_progress_update(p->progress, p->runs_done, item);
    p->runs_done++;
}

static void s_print_table(const s_plan_t *plan)
{
    printf("%-36s %6s  %-6s %10s %7s  %s\n", "model", "batch", "status", "median_ms", "spread",
           "repeat medians (ms) or reason");
    for (size_t i = 0; i < plan->n_items; i++) {
        const s_item_t *it = &plan->items[i];
        const s_row_t *row = &it->row;
        if (!row->have)
            continue;
        printf("%-36s %6u  %-6s ", it->model->model_id, it->batch,
               tc_trace_status_name(row->status));
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

/* The runner's command words: the built-in PyTorch harness, or --runner
 * CMD run by /bin/sh with the agent's flags as its arguments. */
static void s_runner_argv(const char *runner, char *argv[6], char *script, size_t size,
                          char *label, size_t label_size)
{
    if (runner) {
        snprintf(script, size, "%s \"$@\"", runner);
        argv[0] = "/bin/sh", argv[1] = "-c", argv[2] = script, argv[3] = "traincast-runner";
        argv[4] = NULL;
        snprintf(label, label_size, "%s", runner);
        return;
    }
    const char *py = getenv("TRAINCAST_PYTHON");
    const char *dir = getenv("TRAINCAST_HARNESS_DIR");
    snprintf(script, size, "%s/trace_runner.py", dir && *dir ? dir : TC_HARNESS_DIR);
    argv[0] = (char *)(py && *py ? py : "/usr/bin/python3");
    argv[1] = script;
    argv[2] = NULL;
    snprintf(label, label_size, "traincast pytorch harness (trace_runner.py)");
}

typedef struct {
    const char *models, *batches, *device, *dtype, *amp, *optimizer, *runner, *agent_id, *out;
    unsigned long threads, input_size, warmup, iters, repeat;
    double timeout;
    bool cudnn_benchmark, no_profile, no_graph;
} s_opts_t;

static int s_check_opts(const s_opts_t *o, Traincast__V1__DeviceKind *kind, uint32_t *index)
{
    int rc = tc_trace_device_parse(o->device, kind, index);
    if (rc < 0)
        return rc;
    Traincast__V1__DType dt;
    if (tc_dtype_parse(o->dtype, &dt) < 0)
        return tc_fail(TC_EINVAL, "--dtype: expected fp32, tf32, fp16 or bf16, got '%s'",
                       o->dtype);
    if (strcmp(o->amp, "") && strcmp(o->amp, "fp16") && strcmp(o->amp, "bf16"))
        return tc_fail(TC_EINVAL, "--amp: expected fp16 or bf16 (or leave it out), got '%s'",
                       o->amp);
    if (o->iters < 1 || o->iters > 10000 || o->warmup > 10000)
        return tc_fail(TC_EINVAL, "--iters must be 1..10000 and --warmup 0..10000");
    if (o->repeat < 1 || o->repeat > 1000)
        return tc_fail(TC_EINVAL, "--repeat must be 1..1000 (got %lu)", o->repeat);
    if (!(o->timeout > 0))
        return tc_fail(TC_EINVAL, "--timeout must be a number of seconds > 0");
    if (o->threads > 4096)
        return tc_fail(TC_EINVAL, "--threads must be at most 4096 (got %lu)", o->threads);
    if (o->input_size > 8192)
        return tc_fail(TC_EINVAL, "--input-size must be at most 8192 (got %lu)", o->input_size);
    if (o->runner && (!*o->runner || strlen(o->runner) > 1000))
        return tc_fail(TC_EINVAL, "--runner must be a command of 1 to 1000 characters");
    if (!*o->optimizer || strlen(o->optimizer) > 200)
        return tc_fail(TC_EINVAL, "--optimizer must be 1 to 200 characters (e.g. sgd or "
                                  "sgd,momentum=0.9)");
    if (!*o->out)
        return tc_fail(TC_EUSAGE, "--out must name a file");
    return 0;
}

static int s_run(const s_opts_t *o)
{
    Traincast__V1__DeviceKind kind;
    uint32_t index;
    int rc = s_check_opts(o, &kind, &index);
    if (rc < 0)
        return rc;
    bool cpu = kind == TRAINCAST__V1__DEVICE_KIND__DEVICE_KIND_CPU;
    uint32_t threads = cpu ? (uint32_t)(o->threads ? o->threads : tc_cpu_logical()) : 0;
    char device_arg[32];
    snprintf(device_arg, sizeof device_arg, cpu ? "cpu" : "cuda:%u", index);

    char **names = NULL;
    size_t n_models = 0, n_batches = 0;
    unsigned long *batches = NULL;
    s_model_t *models = NULL;
    s_plan_t plan = {0};
    tc_resultfile_t *file = NULL;
    s_prog_t prog = {0};
    tc_trace_result_t result = {0};
    size_t failed = 0, measured = 0;
    TC_TRY(tc_parse_name_list(o->models, "--models", &names, &n_models));
    TC_TRY(tc_parse_uint_list(o->batches, "--batches", 1, 65536, &batches, &n_batches));
    models = calloc(n_models, sizeof *models);
    plan.items = calloc(n_models * n_batches, sizeof *plan.items);
    if (!models || !plan.items)
        TC_FAIL_GOTO(TC_ENOMEM, "out of memory");

    /* Every model's graph first: a bad name fails before any training. */
    for (size_t m = 0; m < n_models; m++) {
        s_model_t *mod = &models[m];
        mod->spec = names[m];
        mod->runner_model = tc_trace_runner_model(names[m]);
        mod->input_size = o->input_size ? (uint32_t)o->input_size
                                        : tc_trace_default_input(mod->runner_model);
        bool is_file = strchr(mod->spec, '/') || strstr(mod->spec, ".onnx");
        if (o->no_graph && is_file) {
            TC_FAIL_GOTO(TC_EUSAGE, "--models %s: an ONNX file is identified by its graph; "
                                    "drop --no-graph", mod->spec);
        } else if (o->no_graph) {
            tc_trace_model_id(mod->runner_model, mod->input_size, mod->model_id,
                              sizeof mod->model_id);
        } else if ((rc = tc_trace_graph_load(mod->spec, mod->input_size, &mod->graph,
                                             mod->model_id, sizeof mod->model_id)) < 0) {
            goto err;
        }
    }

    char script[1200], runner_label[1100];
    char *runner_argv[6];
    s_runner_argv(o->runner, runner_argv, script, sizeof script, runner_label,
                  sizeof runner_label);
    tc_trace_job_t job = {
        .runner = runner_argv,
        .req = {.device = device_arg, .threads = threads, .dtype = o->dtype, .amp = o->amp,
                .optimizer = o->optimizer, .cudnn_benchmark = o->cudnn_benchmark,
                .warmup = (uint32_t)o->warmup, .iters = (uint32_t)o->iters},
        .repeats = (uint32_t)o->repeat,
        .timeout_s = o->timeout,
        .profile = !o->no_profile,
    };
    for (size_t m = 0; m < n_models; m++) {
        for (size_t b = 0; b < n_batches; b++) {
            char key[KEY_LEN];
            job.req.batch = (uint32_t)batches[b];
            tc_trace_plan_key(&job, models[m].model_id, kind, index, key, sizeof key);
            bool dup = false;
            for (size_t i = 0; i < plan.n_items && !dup; i++)
                dup = strcmp(plan.items[i].key, key) == 0;
            if (dup)
                continue; /* the same model named twice */
            s_item_t *it = &plan.items[plan.n_items++];
            it->model = &models[m];
            it->batch = (uint32_t)batches[b];
            snprintf(it->key, sizeof it->key, "%s", key);
        }
    }
    TC_TRY(tc_resultfile_read(o->out, true, s_seen, &plan, NULL));
    size_t todo = 0;
    for (size_t i = 0; i < plan.n_items; i++)
        todo += !plan.items[i].done;
    if (todo < plan.n_items)
        tc_log_info("%s: %zu of %zu traces are already there and are skipped", o->out,
                    plan.n_items - todo, plan.n_items);
    TC_TRY(tc_resultfile_open_append(o->out, &file));

    tc_trace_device_t dev;
    if (cpu)
        tc_trace_device_cpu(threads, &dev);
    char agent_id[256];
    if (o->agent_id && *o->agent_id)
        snprintf(agent_id, sizeof agent_id, "%s", o->agent_id);
    else
        tc_host_name(agent_id, sizeof agent_id);

    tc_proc_catch_interrupts();
    if (todo)
        prog.progress = tc_progress_new("trace", (uint64_t)todo * job.repeats);
    for (size_t i = 0; i < plan.n_items; i++) {
        s_item_t *it = &plan.items[i];
        if (it->done)
            continue;
        job.req.model = it->model->runner_model;
        job.req.batch = it->batch;
        job.req.input_size = it->model->input_size;
        snprintf(prog.label, sizeof prog.label, "%s batch %u", it->model->runner_model,
                 it->batch);
        prog.runs_done = (uint64_t)measured * job.repeats;
        rc = tc_trace_measure(&job, s_on_repeat, &prog, &result);
        if (rc == TC_EINTR)
            tc_err_context(rc, "%zu traces written to %s are kept; a rerun resumes", measured,
                           o->out);
        if (rc < 0)
            goto err;
        if (!cpu)
            tc_trace_device_cuda(index, &result.info, &dev);
        tc_trace_record_t rec = {.job = &job, .model_id = it->model->model_id, .device = &dev,
                                 .graph = it->model->graph, .runner = runner_label,
                                 .result = &result};
        TC_TRY(tc_trace_record_write(file, agent_id, &rec));
        measured++;
        it->row = (s_row_t){.have = true, .status = result.status,
                            .median_ms = result.median_ms, .spread = result.spread,
                            .repeat_medians = result.repeat_medians,
                            .n_repeats = result.n_repeats};
        snprintf(it->row.reason, sizeof it->row.reason, "%s", result.reason);
        result.repeat_medians = NULL; /* now the row's */
        tc_trace_result_free(&result);
        if (it->row.status == TRAINCAST__V1__TRACE_STATUS__TRACE_STATUS_FAILED) {
            failed++;
            tc_log_warn("%s batch %u failed: %s", it->model->model_id, it->batch,
                        it->row.reason);
        } else if (it->row.status == TRAINCAST__V1__TRACE_STATUS__TRACE_STATUS_OOM) {
            tc_log_info("%s batch %u: %s", it->model->model_id, it->batch, it->row.reason);
        }
    }
    tc_progress_update(prog.progress, (uint64_t)todo * job.repeats, NULL);
    tc_progress_destroy(&prog.progress);
    s_print_table(&plan);
    if (failed)
        rc = tc_fail(TC_ECHILD, "%zu of %zu traces failed; they are recorded in %s with the "
                                "reason, and a rerun retries them",
                     failed, measured, o->out);
err:
    tc_trace_result_free(&result);
    tc_progress_destroy(&prog.progress);
    tc_resultfile_close(&file);
    for (size_t i = 0; i < plan.n_items; i++)
        s_row_free(&plan.items[i].row);
    free(plan.items);
    for (size_t m = 0; models && m < n_models; m++)
        tc_trace_graph_free(&models[m].graph);
    free(models);
    free(batches);
    tc_free_strv(names, n_models);
    return rc;
}

int tc_cmd_trace(int argc, char **argv)
{
    s_opts_t o = {.device = "cpu", .dtype = "fp32", .amp = "", .optimizer = "sgd",
                  .warmup = 3, .iters = 10, .repeat = 3, .timeout = 1800};
    const tc_opt_t opts[] = {
        {"models", TC_OPT_STR, &o.models, "LIST",
         "torchvision names (resnet50 or torchvision:resnet50), comma-separated", true},
        {"batches", TC_OPT_STR, &o.batches, "LIST", "batch sizes: 8,16,32 or 8..256", true},
        {"out", TC_OPT_STR, &o.out, "FILE",
         "result file to append TrainTrace records to; traces already in it are skipped", true},
        {"device", TC_OPT_STR, &o.device, "D", "cpu or cuda:I (default cpu)"},
        {"threads", TC_OPT_UINT, &o.threads, "N",
         "CPU threads for training (default: the CPUs this process may use)"},
        {"input-size", TC_OPT_UINT, &o.input_size, "S",
         "image height and width (default: 224, 299 for inception_v3)"},
        {"dtype", TC_OPT_STR, &o.dtype, "T", "fp32 (default), tf32, fp16 or bf16"},
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
        {"agent-id", TC_OPT_STR, &o.agent_id, "ID", "agent id in the records (default: host name)"},
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
            "agent/harness). The runner protocol: docs/trace-protocol.md.",
        .opts = opts,
    };
    tc_cli_result_t cli;
    int rc = tc_cli_parse(&spec, argc, argv, &cli);
    if (rc == 0 && !cli.help_shown)
        rc = s_run(&o);
    tc_cli_result_free(&cli);
    return rc;
}
