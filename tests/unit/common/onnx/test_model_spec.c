/* Model specs ("torchvision:NAME" or a file) and `agent model describe`.
 * The PyTorch path runs the real harness when /usr/bin/python3 (or
 * $TRAINCAST_PYTHON) can import torch, and is skipped otherwise; the
 * fallback to the committed exports is tested by pointing TRAINCAST_PYTHON
 * at nothing. */
#include "tc_error.h"
#include "tc_model.h"
#include "tc_test.h"
#include "tc_test_onnx.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* No PyTorch and no usable cache (a cache directory cannot be created under
 * /dev/null), so only the committed exports remain. */
static void s_no_pytorch(void)
{
    setenv("TRAINCAST_PYTHON", "/nonexistent/python3", 1);
    setenv("TRAINCAST_CACHE", "/dev/null/cache", 1);
}

static bool s_have_pytorch(void)
{
    char out[512];
    return tc_test_run("/usr/bin/python3 -c 'import torch, torchvision, onnx'", out,
                       sizeof out) == 0;
}

static void s_tmp_cache(char *dir, size_t size)
{
    snprintf(dir, size, "/tmp/tc_model_cache_XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
    setenv("TRAINCAST_CACHE", dir, 1);
}

Test(spec, committed_export_without_pytorch, .timeout = 30)
{
    s_no_pytorch();
    tc_model_t *m = NULL;
    cr_assert_eq(tc_model_load_spec("torchvision:resnet18", NULL, &m), 0, "%s", tc_errmsg());
    cr_expect_str_eq(tc_model_id(m), "torchvision:resnet18@224");
    cr_expect_str_eq(tc_model_name(m), "resnet18");
    cr_expect_eq(tc_model_params(m), 11689512);
    tc_model_destroy(&m);
    tc_model_opts_t o = {.input_size = 299};
    cr_assert_eq(tc_model_load_spec("torchvision:inception_v3", &o, &m), 0, "%s", tc_errmsg());
    cr_expect_str_eq(tc_model_id(m), "torchvision:inception_v3@299");
    tc_model_destroy(&m);
    /* A transformer too, with its matmuls. */
    cr_assert_eq(tc_model_load_spec("torchvision:vit_b_16", NULL, &m), 0, "%s", tc_errmsg());
    cr_expect_str_eq(tc_model_id(m), "torchvision:vit_b_16@224");
    cr_expect_gt(tc_model_matmul_count(m), 5);
    tc_model_destroy(&m);
}

Test(spec, other_input_size_needs_pytorch, .timeout = 30)
{
    s_no_pytorch();
    tc_model_opts_t o = {.input_size = 160};
    tc_model_t *m = NULL;
    cr_expect_eq(tc_model_load_spec("torchvision:resnet18", &o, &m), TC_EUNSUPPORTED);
    cr_expect_null(m);
    cr_expect(strstr(tc_errmsg(), "PyTorch") && strstr(tc_errmsg(), "160"), "%s", tc_errmsg());
}

Test(spec, unknown_names, .timeout = 30)
{
    s_no_pytorch();
    tc_model_t *m = NULL;
    cr_expect_eq(tc_model_load_spec("torchvision:maxvit_t", NULL, &m), TC_ENOTFOUND);
    cr_expect(strstr(tc_errmsg(), "committed") && strstr(tc_errmsg(), "resnet50") &&
                  strstr(tc_errmsg(), "vit_b_16"),
              "the message lists what is available: %s", tc_errmsg());
    cr_expect_eq(tc_model_load_spec("torchvision:../../etc/passwd", NULL, &m), TC_EINVAL);
    cr_expect_eq(tc_model_load_spec("torchvision:", NULL, &m), TC_EINVAL);
    cr_expect_eq(tc_model_load_spec("", NULL, &m), TC_EINVAL);
    cr_expect_eq(tc_model_load_spec("resnet50", NULL, &m), TC_ENOTFOUND);
    cr_expect(strstr(tc_errmsg(), "torchvision:resnet50"), "%s", tc_errmsg());
    cr_expect_eq(tc_model_load_spec("/nonexistent/model.onnx", NULL, &m), TC_ENOTFOUND);
    cr_expect_null(m);
}

/* A typo in a torchvision name is named before anything is exported: from
 * the committed exports without PyTorch, and from the cached list of the
 * harness's names without running Python at all (TRAINCAST_PYTHON is a
 * script that leaves a mark when it runs). */
Test(spec, typos_suggest_the_name_before_any_export, .timeout = 30)
{
    s_no_pytorch();
    tc_model_t *m = NULL;
    cr_expect_eq(tc_model_load_spec("torchvision:resnt18", NULL, &m), TC_ENOTFOUND);
    cr_expect(strstr(tc_errmsg(), "did you mean torchvision:resnet18?"), "%s", tc_errmsg());
    cr_expect_eq(tc_model_load_spec("torchvision:alexnte", NULL, &m), TC_ENOTFOUND);
    cr_expect(strstr(tc_errmsg(), "did you mean torchvision:alexnet?"), "%s", tc_errmsg());

    char dir[256], path[512], python[512], mark[512];
    s_tmp_cache(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/onnx", dir);
    cr_assert_eq(mkdir(path, 0755), 0);
    snprintf(path, sizeof path, "%s/onnx/torchvision-models.txt", dir);
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f);
    fputs("alexnet\nresnet18\nresnet50\nvit_b_16\nwide_resnet50_2\n", f);
    fclose(f);
    snprintf(mark, sizeof mark, "%s/python-ran", dir);
    snprintf(python, sizeof python, "%s/python3", dir);
    f = fopen(python, "w");
    cr_assert_not_null(f);
    fprintf(f, "#!/bin/sh\ntouch '%s'\nexit 1\n", mark);
    fclose(f);
    cr_assert_eq(chmod(python, 0755), 0);
    setenv("TRAINCAST_PYTHON", python, 1);
    cr_expect_eq(tc_model_load_spec("torchvision:resnt50", NULL, &m), TC_ENOTFOUND);
    cr_expect(strstr(tc_errmsg(), "'resnt50' is not a torchvision classification model: did "
                                  "you mean torchvision:resnet50?"),
              "%s", tc_errmsg());
    cr_expect_eq(tc_model_load_spec("torchvision:vit_b16", NULL, &m), TC_ENOTFOUND);
    cr_expect(strstr(tc_errmsg(), "did you mean torchvision:vit_b_16?"), "%s", tc_errmsg());
    cr_expect_neq(access(mark, F_OK), 0, "no Python ran for a typo of a cached name");
    /* A listed name goes on as before (here: no PyTorch, the committed export). */
    cr_assert_eq(tc_model_load_spec("torchvision:resnet18", NULL, &m), 0, "%s", tc_errmsg());
    cr_expect_str_eq(tc_model_name(m), "resnet18");
    tc_model_destroy(&m);
    cr_expect_null(m);
}

/* How the agent reads a --models entry: bare names are torchvision's, files are files. */
Test(spec, bare_names_are_torchvision_and_files_are_files)
{
    char full[128];
    cr_expect_str_eq(tc_model_spec_expand("resnet18", full, sizeof full), "torchvision:resnet18");
    cr_expect_str_eq(tc_model_spec_expand("torchvision:vgg11", full, sizeof full),
                     "torchvision:vgg11");
    cr_expect_str_eq(tc_model_spec_expand("net.onnx", full, sizeof full), "net.onnx");
    cr_expect_str_eq(tc_model_spec_expand("models/net", full, sizeof full), "models/net");
    cr_expect_str_eq(tc_model_spec_expand("nets.py:small", full, sizeof full), "nets.py:small");
    cr_expect_not(tc_model_spec_is_file("resnet18"));
    cr_expect_not(tc_model_spec_is_file("torchvision:resnet18"));
    cr_expect(tc_model_spec_is_file("net.onnx"));
    cr_expect(tc_model_spec_is_file("models/net"));
    cr_expect(tc_model_spec_is_file("nets.py:small"));
    cr_expect(tc_model_spec_is_file("dir.py:x/nets.py:small"));
}

/* A file's id is its structure's: the same network in two files (weights
 * as initializers, or as graph inputs) is one model. */
Test(spec, file_spec_gets_a_structure_id, .timeout = 30)
{
    char path[1024];
    tc_test_source_path("tests/data/resnet18.onnx", path, sizeof path);
    tc_model_t *m = NULL, *other = NULL;
    cr_assert_eq(tc_model_load_spec(path, NULL, &m), 0, "%s", tc_errmsg());
    cr_expect_eq(strncmp(tc_model_id(m), "onnx:", 5), 0);
    cr_expect_eq(strlen(tc_model_id(m)), strlen("onnx:") + 12 + strlen("@224"));
    tc_test_source_path("tests/data/forms/resnet18_params_as_inputs.onnx", path, sizeof path);
    cr_assert_eq(tc_model_load_spec(path, NULL, &other), 0, "%s", tc_errmsg());
    cr_expect_str_eq(tc_model_id(other), tc_model_id(m));
    cr_expect_str_neq(tc_model_sha256(other), tc_model_sha256(m));
    tc_model_destroy(&other);
    tc_model_destroy(&m);
}

Test(spec, export_through_pytorch, .timeout = 300)
{
    if (!s_have_pytorch())
        cr_skip_test("/usr/bin/python3 cannot import torch, torchvision and onnx");
    unsetenv("TRAINCAST_PYTHON");
    char dir[64];
    s_tmp_cache(dir, sizeof dir);
    tc_model_t *m = NULL;
    cr_assert_eq(tc_model_load_spec("torchvision:squeezenet1_1", NULL, &m), 0, "%s",
                 tc_errmsg());
    cr_expect_eq(tc_model_params(m), 1235496);
    cr_expect_str_eq(tc_model_id(m), "torchvision:squeezenet1_1@224");
    cr_expect_str_eq(tc_model_meta(m, "traincast.export_mode"), "training");
    cr_expect_str_eq(tc_model_meta(m, "traincast.weights"), "stripped");
    tc_model_destroy(&m);
    char cached[256];
    snprintf(cached, sizeof cached, "%s/onnx/squeezenet1_1.onnx", dir);
    struct stat st;
    cr_assert_eq(stat(cached, &st), 0, "the export is cached at %s", cached);
    cr_expect_lt(st.st_size, 100000, "weights are stripped");
    /* A second load uses the cache: make the harness unusable to prove it. */
    setenv("TRAINCAST_HARNESS_DIR", "/nonexistent", 1);
    cr_expect_eq(tc_model_load_spec("torchvision:squeezenet1_1", NULL, &m), 0, "%s",
                 tc_errmsg());
    tc_model_destroy(&m);
    unsetenv("TRAINCAST_HARNESS_DIR");
    /* Another size is another export. */
    tc_model_opts_t o = {.input_size = 128};
    cr_assert_eq(tc_model_load_spec("torchvision:squeezenet1_1", &o, &m), 0, "%s",
                 tc_errmsg());
    cr_expect_str_eq(tc_model_id(m), "torchvision:squeezenet1_1@128");
    uint32_t h;
    tc_model_input(m, NULL, &h, NULL);
    cr_expect_eq(h, 128);
    cr_expect_eq(tc_model_params(m), 1235496);
    tc_model_destroy(&m);
    /* A name the harness does not list is refused before any export: the
     * names, or the closest one; the list is cached beside the exports. */
    cr_expect_eq(tc_model_load_spec("torchvision:not_a_model", NULL, &m), TC_ENOTFOUND);
    cr_expect(strstr(tc_errmsg(), "the names: alexnet, ") && strstr(tc_errmsg(), "resnet50"),
              "%s", tc_errmsg());
    cr_expect_eq(tc_model_load_spec("torchvision:resnt50", NULL, &m), TC_ENOTFOUND);
    cr_expect(strstr(tc_errmsg(), "did you mean torchvision:resnet50?"), "%s", tc_errmsg());
    snprintf(cached, sizeof cached, "%s/onnx/torchvision-models.txt", dir);
    cr_expect_eq(stat(cached, &st), 0, "the names are cached at %s", cached);
    snprintf(cached, sizeof cached, "%s/onnx/resnt50.onnx", dir);
    cr_expect_neq(stat(cached, &st), 0, "nothing was exported for the typo");
    cr_expect(tc_test_remove_tree(dir));
}

/* A model from a Python file: FILE.py:FUNC, exported by the harness,
 * identified as python:STEM.FUNC, cached per file content. */
static const char s_tiny_nets[] =
    "import torch\n"
    "from torch import nn\n"
    "\n"
    "def small_cnn():\n"
    "    return nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(),\n"
    "                         nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(8, 10))\n"
    "\n"
    "def sized(input_size):\n"
    "    return nn.Sequential(nn.Flatten(), nn.Linear(3 * input_size * input_size, 10))\n"
    "\n"
    "def not_a_model():\n"
    "    return 42\n";

/* A fresh cache `dir` with tiny_nets.py in it (its path in `py`) and the
 * spec of its small_cnn in `spec`. */
static void s_tiny_nets_in_cache(char dir[64], char py[128], char spec[192])
{
    s_tmp_cache(dir, 64);
    snprintf(py, 128, "%s/tiny_nets.py", dir);
    tc_test_write_file(py, s_tiny_nets);
    snprintf(spec, 192, "%s:small_cnn", py);
}

Test(spec, a_model_from_a_python_file, .timeout = 300)
{
    if (!s_have_pytorch())
        cr_skip_test("/usr/bin/python3 cannot import torch, torchvision and onnx");
    unsetenv("TRAINCAST_PYTHON");
    char dir[64], py[128], spec[192];
    s_tiny_nets_in_cache(dir, py, spec);
    tc_model_t *m = NULL;
    cr_assert_eq(tc_model_load_spec(spec, NULL, &m), 0, "%s", tc_errmsg());
    cr_expect_str_eq(tc_model_id(m), "python:tiny_nets.small_cnn@224");
    cr_expect_str_eq(tc_model_name(m), "tiny_nets.small_cnn");
    cr_expect_eq(tc_model_params(m), 3 * 8 * 9 + 8 + 2 * 8 + 8 * 10 + 10);
    cr_expect_str_eq(tc_model_meta(m, "traincast.model"), "python:tiny_nets.small_cnn");
    cr_expect_eq(tc_model_conv_count(m), 1);
    tc_model_destroy(&m);
    /* Another size is another export; a function that takes input_size
     * is told it. */
    tc_model_opts_t o = {.input_size = 16};
    cr_assert_eq(tc_model_load_spec(spec, &o, &m), 0, "%s", tc_errmsg());
    cr_expect_str_eq(tc_model_id(m), "python:tiny_nets.small_cnn@16");
    tc_model_destroy(&m);
    snprintf(spec, sizeof spec, "%s:sized", py);
    cr_assert_eq(tc_model_load_spec(spec, &o, &m), 0, "%s", tc_errmsg());
    cr_expect_eq(tc_model_params(m), 3 * 16 * 16 * 10 + 10);
    tc_model_destroy(&m);
    /* Cached by content: a second load needs no harness; an edited file
     * is exported again. */
    snprintf(spec, sizeof spec, "%s:small_cnn", py);
    setenv("TRAINCAST_HARNESS_DIR", "/nonexistent", 1);
    cr_expect_eq(tc_model_load_spec(spec, NULL, &m), 0, "%s", tc_errmsg());
    tc_model_destroy(&m);
    FILE *f = fopen(py, "a");
    cr_assert_not_null(f);
    fputs("# edited\n", f);
    fclose(f);
    cr_expect_eq(tc_model_load_spec(spec, NULL, &m), TC_ENOTFOUND, "the edit is exported again");
    cr_expect(strstr(tc_errmsg(), "harness"), "%s", tc_errmsg());
    unsetenv("TRAINCAST_HARNESS_DIR");
    /* Bad specs name what is wrong. */
    const struct {
        const char *func;
        int rc;
        const char *says;
    } bad[] = {
        {"no_such", TC_ENOTFOUND, "has no function no_such (its functions: not_a_model, sized, "
                                  "small_cnn)"},
        {"1st", TC_EINVAL, "is not a Python function name"},
        {"not_a_model", TC_ECHILD, "returned int, not a torch.nn.Module"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        snprintf(spec, sizeof spec, "%s:%s", py, bad[i].func);
        cr_expect_eq(tc_model_load_spec(spec, NULL, &m), bad[i].rc, "%s: %s", spec, tc_errmsg());
        cr_expect(strstr(tc_errmsg(), bad[i].says), "%s: %s", spec, tc_errmsg());
        cr_expect_null(m);
    }
    cr_expect_eq(tc_model_load_spec("/nonexistent/nets.py:small_cnn", NULL, &m), TC_ENOTFOUND);
    cr_expect(strstr(tc_errmsg(), "cannot read /nonexistent/nets.py"), "%s", tc_errmsg());
    cr_expect(tc_test_remove_tree(dir));
}

Test(spec, a_python_model_without_pytorch_says_what_it_needs, .timeout = 30)
{
    setenv("TRAINCAST_PYTHON", "/nonexistent/python3", 1);
    char dir[64], py[128], spec[192];
    s_tiny_nets_in_cache(dir, py, spec);
    tc_model_t *m = NULL;
    cr_expect_eq(tc_model_load_spec(spec, NULL, &m), TC_ENOTFOUND);
    cr_expect(strstr(tc_errmsg(), "PyTorch is needed to build it") &&
                  strstr(tc_errmsg(), "TRAINCAST_PYTHON"),
              "%s", tc_errmsg());
    cr_expect_null(m);
    cr_expect(tc_test_remove_tree(dir));
}

/* ---- the command line ---- */

static int s_agent(const char *args, char *out, size_t size)
{
    char cmd[2048];
    snprintf(cmd, sizeof cmd,
             "TRAINCAST_PYTHON=/nonexistent TRAINCAST_CACHE=/dev/null/cache %s/agent/agent %s",
             TC_BINARY_DIR, args);
    return tc_test_run(cmd, out, size);
}

Test(cli, describe_table, .timeout = 60)
{
    static char out[1 << 16];
    char args[1024];
    snprintf(args, sizeof args, "model describe %s/tests/data/resnet50.onnx --batch 32",
             TC_SOURCE_DIR);
    cr_assert_eq(s_agent(args, out, sizeof out), 0, "%s", out);
    cr_expect(strstr(out, "parameters         25557032"), "%s", out);
    cr_expect(strstr(out, "unique conv configs 23"), "%s", out);
    cr_expect(strstr(out, "conv layers        53"), "%s", out);
    cr_expect(strstr(out, "at batch 32"), "%s", out);
    cr_expect(strstr(out, "/conv1/Conv"), "%s", out);
    cr_expect(strstr(out, "(first layer: no backward-data)"), "%s", out);
    cr_expect(strstr(out, "exported in training mode"), "%s", out);
    /* forward GFLOPs at batch 32: 32 x 8.2 */
    const char *g = strstr(out, "forward GFLOPs");
    cr_assert_not_null(g);
    double gflops = 0;
    cr_expect_eq(sscanf(g, "forward GFLOPs %lf", &gflops), 1);
    cr_expect(gflops > 32 * 8.1 && gflops < 32 * 8.4, "%f", gflops);
}

Test(cli, describe_json_and_torchvision_spec, .timeout = 60)
{
    static char out[1 << 20];
    cr_assert_eq(s_agent("model describe torchvision:mobilenet_v3_small --format json --batch 4",
                         out, sizeof out),
                 0, "%s", out);
    cr_expect(strstr(out, "\"model_id\":\"torchvision:mobilenet_v3_small@224\""), "%.300s", out);
    cr_expect(strstr(out, "\"params\":2542856"));
    cr_expect(strstr(out, "\"batch\":4"));
    cr_expect(strstr(out, "\"convs\":[{\"config\":{\"c\":3,\"h\":224,"), "%.300s", out);
    cr_expect(strstr(out, "\"hardswish\"") == NULL);
    cr_expect(strstr(out, "\"act\":{\"layers\":"));
    cr_expect_eq(out[strlen(out) - 2], '}');
}

Test(cli, describe_errors, .timeout = 60)
{
    char out[4096], args[1024];
    cr_expect_eq(s_agent("model describe /nonexistent.onnx", out, sizeof out), 2, "%s", out);
    cr_expect(strstr(out, "/nonexistent.onnx"), "%s", out);
    snprintf(args, sizeof args, "model describe %s/tests/data/alexnet.onnx --format xml",
             TC_SOURCE_DIR);
    cr_expect_eq(s_agent(args, out, sizeof out), 2, "%s", out);
    cr_expect(strstr(out, "--format"), "%s", out);
    cr_expect_eq(s_agent("model", out, sizeof out), 2, "%s", out);
    cr_expect_eq(s_agent("model frobnicate", out, sizeof out), 2, "%s", out);
    cr_expect_eq(s_agent("model describe", out, sizeof out), 2, "%s", out);
    cr_expect_eq(s_agent("model describe --help", out, sizeof out), 0, "%s", out);
    cr_expect(strstr(out, "--allow-unknown") && strstr(out, "--input-size") &&
                  strstr(out, "--batch"),
              "%s", out);
    snprintf(args, sizeof args, "model describe %s/README.md", TC_SOURCE_DIR);
    cr_expect_eq(s_agent(args, out, sizeof out), 2, "not an ONNX file: %s", out);
}

Test(cli, allow_unknown, .timeout = 60)
{
    tc_tb_t *tb = tc_tb_new(4, 6, 6);
    tc_tb_node(tb, "Relu", "relu", "x", "r");
    tc_tb_node(tb, "Swizzle", "swizzle_7", "r", "y");
    tc_tb_output(tb, "y");
    size_t len;
    const uint8_t *b = tc_tb_pack(tb, &len);
    char path[64];
    tc_test_temp_file("unknown", b, len, path, sizeof path);
    tc_tb_free(&tb);
    char out[8192], args[256];
    snprintf(args, sizeof args, "model describe %s", path);
    cr_expect_eq(s_agent(args, out, sizeof out), 1, "%s", out);
    cr_expect(strstr(out, "Swizzle") && strstr(out, "swizzle_7") &&
                  strstr(out, "--allow-unknown"),
              "%s", out);
    snprintf(args, sizeof args, "model describe %s --allow-unknown", path);
    cr_expect_eq(s_agent(args, out, sizeof out), 0, "%s", out);
    cr_expect(strstr(out, "warn") && strstr(out, "swizzle_7 (Swizzle)"), "%s", out);
    cr_expect(strstr(out, "other"), "%s", out);
    unlink(path);
}

Test(spec, eval_fallback_names_missing_layers, .timeout = 300)
{
    if (!s_have_pytorch())
        cr_skip_test("/usr/bin/python3 cannot import torch, torchvision and onnx");
    char dir[64], cmd[1024], path[256];
    static char out[16384];
    snprintf(dir, sizeof dir, "/tmp/tc_eval_XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/googlenet_eval.onnx", dir);
    snprintf(cmd, sizeof cmd, "/usr/bin/python3 %s/agent/harness/export_onnx.py googlenet "
                              "--mode eval -o %s",
             TC_SOURCE_DIR, path);
    cr_assert_eq(tc_test_run(cmd, out, sizeof out), 0, "%s", out);
    cr_expect(strstr(out, "missing layers: aux1, aux2, dropout, 57 batch norm layers (folded "
                          "into their convs)"),
              "%s", out);
    tc_model_t *m = NULL;
    cr_assert_eq(tc_model_load_file(path, NULL, &m), 0, "%s", tc_errmsg());
    cr_expect_str_eq(tc_model_meta(m, "traincast.export_mode"), "eval");
    cr_expect(strstr(tc_model_meta(m, "traincast.missing"), "aux1, aux2, dropout, 57 batch norm"));
    cr_expect_lt(tc_model_params(m), 13004888, "the aux heads' parameters are missing");
    tc_features_t f;
    tc_model_features(m, 1, &f);
    cr_expect_eq(f.cls[TC_OPC_DROPOUT].layers, 0);
    cr_expect_eq(f.cls[TC_OPC_BN].layers, 0);
    tc_model_destroy(&m);
    snprintf(cmd, sizeof cmd, "/usr/bin/python3 %s/agent/harness/export_onnx.py no_such_net",
             TC_SOURCE_DIR);
    cr_expect_eq(tc_test_run(cmd, out, sizeof out), 2, "%s", out);
    cr_expect(strstr(out, "--list"), "%s", out);
    cr_expect(tc_test_remove_tree(dir));
}
