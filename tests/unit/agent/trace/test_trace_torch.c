/* A real PyTorch CPU trace through the built-in harness
 * (agent/harness/trace_runner.py): a small model at a small input size,
 * checked end to end from the runner's lines to the stored envelope. */
#include "tc_error.h"
#include "tc_resultfile.h"
#include "tc_test.h"
#include "tc_validate.h"
#include "trace_graph.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *s_python(void)
{
    const char *py = getenv("TRAINCAST_PYTHON");
    return py && *py ? py : "/usr/bin/python3";
}

static void s_need_torch(void)
{
    char cmd[512], out[2048];
    snprintf(cmd, sizeof cmd, "%s -c 'import torch, torchvision'", s_python());
    if (tc_test_run(cmd, out, sizeof out) != 0)
        cr_skip_test("%s cannot import torch and torchvision (set TRAINCAST_PYTHON to a Python "
                     "that can): %s", s_python(), out);
}

static tc_envelope_t *s_env;

static int s_keep(const tc_envelope_t *env, void *arg)
{
    (void)arg;
    cr_assert_null(s_env, "one record expected");
    uint8_t *buf;
    size_t len;
    cr_assert_eq(tc_envelope_pack(env, &buf, &len), 0);
    cr_assert_eq(tc_envelope_unpack(buf, len, 0, &s_env), 0);
    free(buf);
    return 0;
}

Test(trace_torch, squeezenet_trains_on_the_cpu, .timeout = 600)
{
    s_need_torch();
    char file[256], cmd[1024], out[16384];
    snprintf(file, sizeof file, "/tmp/tc_trace_torch_%d.tcr", (int)getpid());
    unlink(file);
    /* The graph is attached when this build has the model importer. */
    Traincast__V1__ModelGraph *g = NULL;
    char model_id[256];
    bool with_graph = tc_trace_graph_load("squeezenet1_1", 32, &g, model_id, sizeof model_id) == 0;
    if (!with_graph)
        cr_log_info("traced without the model graph: %s", tc_errmsg());
    tc_trace_graph_free(&g);

    snprintf(cmd, sizeof cmd,
             "%s/agent/agent trace --models squeezenet1_1 --batches 2 --input-size 32 "
             "--threads 1 --warmup 1 --iters 2 --repeat 1 --timeout 300 %s --out %s",
             TC_BINARY_DIR, with_graph ? "" : "--no-graph", file);
    int st = tc_test_run(cmd, out, sizeof out);
    cr_assert_eq(st, 0, "exit %d: %s", st, out);
    cr_assert_eq(tc_resultfile_read(file, false, s_keep, NULL, NULL), 0, "%s", tc_errmsg());
    unlink(file);
    cr_assert_not_null(s_env);
    cr_assert_eq(tc_validate_envelope(s_env), 0, "%s", tc_errmsg());
    const Traincast__V1__TrainTrace *t = s_env->train_trace;
    cr_assert_eq(t->status, TRAINCAST__V1__TRACE_STATUS__TRACE_STATUS_OK, "%s", t->reason);
    cr_assert_str_eq(t->framework, "pytorch");
    cr_assert_neq(t->framework_version[0], '\0');
    cr_assert_neq(t->library_version[0], '\0', "PyTorch reports its oneDNN version");
    cr_assert_eq(t->batch, 2);
    cr_assert_eq(t->input_size, 32);
    cr_assert_eq(t->n_iterations, 3, "1 warm-up + 2 measured");
    for (size_t i = 0; i < t->n_iterations; i++) {
        cr_assert_gt(t->iterations[i]->ms, 0);
        cr_assert_gt(t->iterations[i]->at_us, 1600000000000000LL, "a unix time in us");
    }
    cr_assert_gt(t->median_ms, 0);
    cr_assert_geq(t->spread, 0);
    cr_assert_gt(t->peak_memory_bytes, 50u << 20, "the process peak RSS includes PyTorch");
    /* The profiled extra iteration splits time into op classes; conv is there. */
    bool conv = false;
    for (size_t i = 0; i < t->n_op_times; i++)
        conv |= !strcmp(t->op_times[i]->op_class, "conv") && t->op_times[i]->ms > 0;
    cr_assert(conv, "no conv time among %zu op classes", t->n_op_times);
    cr_assert(strstr(t->device->name, "(1 thread)"), "%s", t->device->name);
    /* Every conv-relevant setting as the runner ran with it, PyTorch's
     * defaults untouched: cuDNN may use TF32, matmuls may not. */
    const char *tf32 = NULL, *matmul = NULL, *v8 = NULL;
    for (size_t i = 0; i < t->n_settings; i++) {
        if (!strcmp(t->settings[i]->name, "torch.backends.cudnn.allow_tf32"))
            tf32 = t->settings[i]->value;
        if (!strcmp(t->settings[i]->name, "torch.backends.cuda.matmul.allow_tf32"))
            matmul = t->settings[i]->value;
        if (!strcmp(t->settings[i]->name, "env.TORCH_CUDNN_V8_API_DISABLED"))
            v8 = t->settings[i]->value;
    }
    cr_assert_str_eq(tf32 ? tf32 : "(missing)", "True");
    cr_assert_str_eq(matmul ? matmul : "(missing)", "False");
    cr_assert_not_null(v8, "the environment variables are recorded, set or not");
    cr_assert_eq(t->threads, 1);
    if (with_graph) {
        cr_assert_not_null(t->graph);
        cr_assert_str_eq(t->graph->model_id, t->model_id);
        cr_assert_str_eq(t->model_id, model_id);
    } else {
        cr_assert_str_eq(t->model_id, "torchvision:squeezenet1_1@32");
    }
    tc_envelope_free(&s_env);
}

/* A model a Python file builds trains like a torchvision one, under its
 * own id, with labels drawn from its own number of classes (10 here). */
Test(trace_torch, a_model_from_a_python_file_trains, .timeout = 600)
{
    s_need_torch();
    char dir[64], py[128], file[160], cmd[1024], out[16384];
    snprintf(dir, sizeof dir, "/tmp/tc_trace_py_XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
    snprintf(py, sizeof py, "%s/tiny_nets.py", dir);
    snprintf(file, sizeof file, "%s/traces.tcr", dir);
    FILE *f = fopen(py, "w");
    cr_assert_not_null(f);
    fputs("from torch import nn\n"
          "def small_cnn():\n"
          "    return nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8),\n"
          "                         nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(),\n"
          "                         nn.Linear(8, 10))\n",
          f);
    cr_assert_eq(fclose(f), 0);
    snprintf(cmd, sizeof cmd,
             "TRAINCAST_CACHE=%s %s/agent/agent trace --models %s:small_cnn --batches 2 "
             "--input-size 32 --threads 1 --warmup 1 --iters 2 --repeat 1 --timeout 300 --out %s",
             dir, TC_BINARY_DIR, py, file);
    int st = tc_test_run(cmd, out, sizeof out);
    cr_assert_eq(st, 0, "exit %d: %s", st, out);
    cr_assert_eq(tc_resultfile_read(file, false, s_keep, NULL, NULL), 0, "%s", tc_errmsg());
    cr_assert_not_null(s_env);
    const Traincast__V1__TrainTrace *t = s_env->train_trace;
    cr_assert_eq(t->status, TRAINCAST__V1__TRACE_STATUS__TRACE_STATUS_OK, "%s", t->reason);
    cr_assert_str_eq(t->model_id, "python:tiny_nets.small_cnn@32");
    cr_assert_not_null(t->graph, "a model from a file is identified by its graph");
    cr_assert_str_eq(t->graph->model_id, t->model_id);
    cr_assert_gt(t->median_ms, 0);
    tc_envelope_free(&s_env);
    /* --no-graph cannot name it */
    snprintf(cmd, sizeof cmd,
             "%s/agent/agent trace --models %s:small_cnn --batches 2 --no-graph --out %s",
             TC_BINARY_DIR, py, file);
    cr_expect_eq(tc_test_run(cmd, out, sizeof out), 2, "%s", out);
    cr_expect(strstr(out, "identified by its graph"), "%s", out);
    cr_expect(tc_test_remove_tree(dir));
}

/* The harness's own failures come back as protocol lines, so the agent
 * records why. */
Test(trace_torch, harness_errors_are_reported, .timeout = 300)
{
    s_need_torch();
    char runner[600], cmd[2048], out[16384];
    tc_test_source_path("agent/harness/trace_runner.py", runner, sizeof runner);
    const char *cases[][2] = {
        {"--model nonet --batch 2", "\"type\":\"error\",\"message\":\"unknown torchvision "
                                    "classification model 'nonet'\""},
        {"--model squeezenet1_1 --batch 2 --device cuda:0", "has no usable CUDA device"},
        {"--model squeezenet1_1 --batch 2 --optimizer sgd,momentum", "is not key=value"},
        {"--model squeezenet1_1 --batch 0", "--batch and --iters must be >= 1"},
        {"--model /nonexistent/nets.py:small_cnn --batch 2",
         "model /nonexistent/nets.py:small_cnn: no such file /nonexistent/nets.py"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        snprintf(cmd, sizeof cmd, "%s %s %s", s_python(), runner, cases[i][0]);
        int st = tc_test_run(cmd, out, sizeof out);
        cr_assert_neq(st, 0, "%s: %s", cases[i][0], out);
        cr_assert(strstr(out, cases[i][1]), "%s: %s", cases[i][0], out);
    }
}
