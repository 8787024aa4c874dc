/* The other forms an ONNX file comes in: parameters given as graph inputs
 * (torch.onnx.export(..., export_params=False)), tensors in an external data
 * file, and files that are not ONNX at all. The committed exports in
 * tests/data/forms (make_forms.py) must give what the usual form of the same
 * model gives; external data is read with every check on its location and
 * range. tests/CMakeLists.txt also builds this file with AddressSanitizer
 * and UBSan (test_model_asan). */
#include "tc_error.h"
#include "tc_model.h"
#include "tc_test_onnx.h"

#include <criterion/criterion.h>
#include <ftw.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- files ---- */

static void s_source(const char *rel, char *out, size_t size)
{
    snprintf(out, size, "%s/%s", TC_SOURCE_DIR, rel);
}

static uint8_t *s_read(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    cr_assert(f, "cannot open %s", path);
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *buf = malloc(size ? (size_t)size : 1);
    cr_assert(buf && fread(buf, 1, (size_t)size, f) == (size_t)size);
    fclose(f);
    *len = (size_t)size;
    return buf;
}

static void s_write(const char *dir, const char *name, const void *data, size_t len)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    cr_assert(f, "cannot write %s", path);
    cr_assert_eq(fwrite(data, 1, len, f), len);
    fclose(f);
}

static void s_scratch(char *dir, size_t size)
{
    snprintf(dir, size, "/tmp/tc_forms_XXXXXX");
    cr_assert(mkdtemp(dir), "mkdtemp failed");
}

static int s_rm(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path);
}

static void s_rmtree(const char *dir)
{
    nftw(dir, s_rm, 16, FTW_DEPTH | FTW_PHYS);
}

/* ---- loading ---- */

static tc_model_t *s_load(const char *rel)
{
    char path[1024];
    s_source(rel, path, sizeof path);
    tc_model_t *m = NULL;
    cr_assert_eq(tc_model_load_file(path, NULL, &m), 0, "%s: %s", rel, tc_errmsg());
    return m;
}

static int s_load_file(const char *path, tc_model_t **m)
{
    *m = NULL;
    int rc = tc_model_load_file(path, NULL, m);
    if (rc < 0) {
        cr_assert_null(*m);
        cr_assert(*tc_errmsg(), "an error without a message (code %d)", rc);
    }
    return rc;
}

/* The same layers (names, ops, shapes, parameters, conv configs), the same
 * totals and the same deduplicated convs. */
static void s_expect_same(const tc_model_t *a, const tc_model_t *b)
{
    cr_expect_eq(tc_model_params(a), tc_model_params(b));
    cr_expect_eq(tc_model_macs(a), tc_model_macs(b));
    cr_expect_eq(tc_model_flops(a), tc_model_flops(b));
    cr_assert_eq(tc_model_node_count(a), tc_model_node_count(b));
    for (size_t i = 0; i < tc_model_node_count(a); i++) {
        const tc_model_node_t *x = tc_model_node(a, i), *y = tc_model_node(b, i);
        cr_expect_str_eq(x->name, y->name, "layer %zu", i);
        cr_expect_str_eq(x->op, y->op, "layer %s", x->name);
        cr_expect_eq(x->op_class, y->op_class, "layer %s", x->name);
        cr_expect_eq(x->params, y->params, "layer %s", x->name);
        cr_expect_eq(x->rank_out, y->rank_out, "layer %s", x->name);
        cr_expect_arr_eq(x->out_shape, y->out_shape, sizeof x->out_shape, "layer %s", x->name);
        cr_expect_eq(x->is_conv, y->is_conv, "layer %s", x->name);
        cr_expect_eq(x->first_layer, y->first_layer, "layer %s", x->name);
        if (x->is_conv && y->is_conv)
            cr_expect_eq(tc_conv_config_cmp(&x->conv, &y->conv), 0, "layer %s", x->name);
    }
    cr_assert_eq(tc_model_conv_count(a), tc_model_conv_count(b));
    for (size_t i = 0; i < tc_model_conv_count(a); i++) {
        const tc_conv_usage_t *x = tc_model_conv(a, i), *y = tc_model_conv(b, i);
        cr_expect_eq(tc_conv_config_cmp(&x->config, &y->config), 0, "conv %zu", i);
        cr_expect_eq(x->multiplicity, y->multiplicity, "conv %zu", i);
        cr_expect_eq(x->first_layer, y->first_layer, "conv %zu", i);
    }
    tc_features_t fa, fb;
    tc_model_features(a, 16, &fa);
    tc_model_features(b, 16, &fb);
    cr_expect_arr_eq(fa.cls, fb.cls, sizeof fa.cls, "features at batch 16");
    cr_expect(fa.total_params == fb.total_params && fa.total_layers == fb.total_layers &&
              fa.conv_layers == fb.conv_layers && fa.conv_flops == fb.conv_flops);
}

/* ---- parameters as graph inputs ---- */

Test(forms, params_as_inputs_give_the_harness_export, .timeout = 60)
{
    tc_model_t *inputs = s_load("tests/data/forms/resnet18_params_as_inputs.onnx");
    tc_model_t *inits = s_load("tests/data/resnet18.onnx");
    cr_expect_eq(tc_model_params(inputs), 11689512ull); /* PyTorch's count */
    s_expect_same(inputs, inits);
    tc_model_destroy(&inputs);
    tc_model_destroy(&inits);
}

/* An inference export is said to be one, with how to export for training;
 * training exports (with or without weights, in the harness's form or a
 * user's) are not. */
Test(forms, inference_exports_are_warned_about, .timeout = 60)
{
    tc_model_t *eval = s_load("tests/data/forms/resnet18_eval_params_as_inputs.onnx");
    const char *w = tc_model_export_warning(eval);
    cr_expect(strstr(w, "no BatchNormalization or Dropout node among its 20 convs") &&
                  strstr(w, "inference export") &&
                  strstr(w, "training=torch.onnx.TrainingMode.TRAINING") &&
                  strstr(w, "do_constant_folding=False"),
              "%s", w);
    tc_model_destroy(&eval);
    const char *training[] = {"tests/data/resnet18.onnx", "tests/data/vgg11.onnx",
                              "tests/data/forms/resnet18_params_as_inputs.onnx",
                              "tests/data/forms/small_cnn.onnx"};
    for (size_t i = 0; i < sizeof training / sizeof training[0]; i++) {
        tc_model_t *m = s_load(training[i]);
        cr_expect_str_eq(tc_model_export_warning(m), "", "%s", training[i]);
        tc_model_destroy(&m);
    }
}

Test(forms, eval_export_has_batch_norm_folded_into_the_convs, .timeout = 60)
{
    /* torch.onnx.export's defaults: same convs, no batch norm layer, and
     * each folded conv gains a bias of its output channels. */
    tc_model_t *eval = s_load("tests/data/forms/resnet18_eval_params_as_inputs.onnx");
    tc_model_t *train = s_load("tests/data/resnet18.onnx");
    size_t bn = 0, eval_bn = 0, convs = 0, eval_convs = 0;
    uint64_t bn_params = 0, bias = 0;
    for (size_t i = 0; i < tc_model_node_count(train); i++) {
        const tc_model_node_t *n = tc_model_node(train, i);
        bn += n->op_class == TC_OPC_BN;
        bn_params += n->op_class == TC_OPC_BN ? n->params : 0;
        convs += n->is_conv;
        bias += n->is_conv ? n->conv.k : 0;
    }
    for (size_t i = 0; i < tc_model_node_count(eval); i++) {
        eval_bn += tc_model_node(eval, i)->op_class == TC_OPC_BN;
        eval_convs += tc_model_node(eval, i)->is_conv;
    }
    cr_expect_eq(bn, 20);
    cr_expect_eq(eval_bn, 0);
    cr_expect_eq(eval_convs, convs);
    cr_expect_eq(tc_model_node_count(eval), tc_model_node_count(train) - bn);
    cr_expect_eq(tc_model_params(eval), tc_model_params(train) - bn_params + bias);
    /* The same shapes; the folded convs have a bias, the trained ones not
     * (batch norm follows them). */
    cr_assert_eq(tc_model_conv_count(eval), tc_model_conv_count(train));
    for (size_t i = 0; i < tc_model_conv_count(eval); i++) {
        tc_conv_config_t e = tc_model_conv(eval, i)->config, t = tc_model_conv(train, i)->config;
        cr_expect(e.bias, "conv %zu of the eval export has a bias", i);
        cr_expect_not(t.bias, "conv %zu of the training export has none", i);
        e.bias = t.bias = false;
        cr_expect_eq(tc_conv_config_cmp(&e, &t), 0, "conv %zu", i);
    }
    tc_model_destroy(&eval);
    tc_model_destroy(&train);
}

static int s_try_tb(tc_tb_t *tb)
{
    size_t len;
    const uint8_t *b = tc_tb_pack(tb, &len);
    tc_model_t *m = NULL;
    int rc = tc_model_load_bytes(b, len, "t", NULL, &m);
    if (rc < 0)
        cr_assert(*tc_errmsg());
    tc_model_destroy(&m);
    return rc;
}

/* x [B, 3, 8, 8] -> Conv(w [4, 3, 3, 3]) -> y, w a graph input. */
static tc_tb_t *s_conv_with_param_input(void)
{
    tc_tb_t *tb = tc_tb_new(3, 8, 8);
    int64_t w[4] = {4, 3, 3, 3};
    tc_tb_param_input(tb, "w", 4, w);
    tc_tb_node(tb, "Conv", "conv", "x,w", "y");
    tc_tb_output(tb, "y");
    return tb;
}

Test(forms, param_input_is_a_weight, .timeout = 10)
{
    tc_tb_t *tb = s_conv_with_param_input();
    size_t len;
    const uint8_t *b = tc_tb_pack(tb, &len);
    tc_model_t *m = NULL;
    cr_assert_eq(tc_model_load_bytes(b, len, "t", NULL, &m), 0, "%s", tc_errmsg());
    cr_expect_eq(tc_model_params(m), 108);
    cr_assert_eq(tc_model_conv_count(m), 1);
    const tc_conv_usage_t *c = tc_model_conv(m, 0);
    cr_expect(c->config.c == 3 && c->config.k == 4 && c->config.r == 3 && c->config.h == 8);
    cr_expect(c->first_layer);
    tc_model_destroy(&m);
    tc_tb_free(&tb);
}

Test(forms, param_inputs_hostile, .timeout = 10)
{
    tc_tb_t *tb = s_conv_with_param_input();
    Onnx__GraphProto *g = tc_tb_model(tb)->graph;
    Onnx__TensorShapeProto *sh = g->input[1]->type->tensor_type->shape;
    /* A symbolic dimension: a second data input, still refused. */
    sh->dim[0]->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM;
    sh->dim[0]->dim_param = "n";
    cr_expect_eq(s_try_tb(tb), TC_EUNSUPPORTED);
    cr_expect(strstr(tc_errmsg(), "2 data inputs") && strstr(tc_errmsg(), "'w'"), "%s",
              tc_errmsg());
    sh->dim[0]->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
    /* Dimensions out of range, too many of them, no shape at all. */
    sh->dim[0]->dim_value = -1;
    cr_expect_eq(s_try_tb(tb), TC_EPARSE);
    sh->dim[0]->dim_value = 1ll << 40;
    cr_expect_eq(s_try_tb(tb), TC_EPARSE);
    sh->dim[0]->dim_value = 1ll << 30;
    sh->dim[1]->dim_value = 1ll << 30;
    cr_expect_eq(s_try_tb(tb), TC_ELIMIT);
    sh->dim[0]->dim_value = 4;
    sh->dim[1]->dim_value = 3;
    size_t rank = sh->n_dim;
    Onnx__TensorShapeProto__Dimension **dims = sh->dim;
    Onnx__TensorShapeProto__Dimension **many = tc_tb_alloc(tb, 9 * sizeof *many);
    for (int k = 0; k < 9; k++)
        many[k] = dims[0];
    sh->dim = many;
    sh->n_dim = 9;
    cr_expect_eq(s_try_tb(tb), TC_ELIMIT);
    sh->dim = dims;
    sh->n_dim = rank;
    g->input[1]->type->tensor_type->shape = NULL;
    cr_expect_eq(s_try_tb(tb), TC_EUNSUPPORTED, "no shape: a data input");
    g->input[1]->type->tensor_type->shape = sh;
    cr_expect_eq(s_try_tb(tb), 0, "%s", tc_errmsg());
    /* The same parameter twice. */
    int64_t w[4] = {4, 3, 3, 3};
    tc_tb_param_input(tb, "w", 4, w);
    cr_expect_eq(s_try_tb(tb), TC_EPARSE);
    cr_expect(strstr(tc_errmsg(), "'w'"), "%s", tc_errmsg());
    tc_tb_free(&tb);
}

/* ---- external data ---- */

Test(forms, external_data_gives_the_inline_export, .timeout = 30)
{
    tc_model_t *ext = s_load("tests/data/forms/small_cnn_external.onnx");
    tc_model_t *plain = s_load("tests/data/forms/small_cnn.onnx");
    cr_expect_eq(tc_model_params(ext), 11690);
    s_expect_same(ext, plain);
    tc_model_destroy(&ext);
    tc_model_destroy(&plain);
}

Test(forms, external_data_needs_its_file, .timeout = 30)
{
    char path[1024], dir[256];
    s_source("tests/data/forms/small_cnn_external.onnx", path, sizeof path);
    size_t len;
    uint8_t *bytes = s_read(path, &len);
    tc_model_t *m = NULL;
    cr_expect_eq(tc_model_load_bytes(bytes, len, "x", NULL, &m), TC_EUNSUPPORTED);
    cr_expect(strstr(tc_errmsg(), "initializer '") &&
                  strstr(tc_errmsg(), "'small_cnn_external.data'") &&
                  strstr(tc_errmsg(), "load the model from its file"),
              "%s", tc_errmsg());
    /* Copied without its data file. */
    s_scratch(dir, sizeof dir);
    s_write(dir, "m.onnx", bytes, len);
    snprintf(path, sizeof path, "%s/m.onnx", dir);
    cr_expect_eq(s_load_file(path, &m), TC_ENOTFOUND);
    cr_expect(strstr(tc_errmsg(), "small_cnn_external.data") && strstr(tc_errmsg(), path),
              "%s", tc_errmsg());
    s_rmtree(dir);
    free(bytes);
}

/* x [B, 2, 3, 4] -> Reshape(x, shape) -> y, `shape` an int64 initializer
 * with n values, moved to external data. */
static tc_tb_t *s_reshape(int n, const int64_t *shape, const char *location, const char *offset,
                          const char *length)
{
    tc_tb_t *tb = tc_tb_new(2, 3, 4);
    tc_tb_ints(tb, "shape", n, shape);
    tc_tb_external(tb, "shape", location, offset, length);
    tc_tb_node(tb, "Reshape", "reshape", "x,shape", "y");
    tc_tb_output(tb, "y");
    return tb;
}

/* The model as DIR/m.onnx; 0 or the error. *y gets y's shape. */
static int s_try_ext(tc_tb_t *tb, const char *dir, int *rank, int64_t *y)
{
    size_t len;
    const uint8_t *b = tc_tb_pack(tb, &len);
    s_write(dir, "m.onnx", b, len);
    char path[512];
    snprintf(path, sizeof path, "%s/m.onnx", dir);
    tc_model_t *m = NULL;
    int rc = s_load_file(path, &m);
    if (rc == 0) {
        bool batched;
        cr_assert_eq(tc_model_value_shape(m, "y", rank, y, &batched), 0);
        cr_expect(batched);
    }
    tc_model_destroy(&m);
    tc_tb_free(&tb);
    return rc;
}

/* 8 bytes of padding, then the int64 values little-endian. */
static size_t s_data(const int64_t *vals, int n, uint8_t *out)
{
    memset(out, 'J', 8);
    for (int i = 0; i < n; i++)
        for (int k = 0; k < 8; k++)
            out[8 + 8 * i + k] = (uint8_t)((uint64_t)vals[i] >> (8 * k));
    return 8 + 8 * (size_t)n;
}

Test(forms, external_values_come_from_the_file, .timeout = 10)
{
    char dir[256];
    s_scratch(dir, sizeof dir);
    int64_t shape[3] = {0, 12, 2}, y[8];
    uint8_t data[64];
    s_write(dir, "w.data", data, s_data(shape, 3, data));
    int rank;
    int64_t zeros[3] = {0, 0, 0};
    cr_expect_eq(s_try_ext(s_reshape(3, zeros, "w.data", "8", "24"), dir, &rank, y), 0, "%s",
                 tc_errmsg());
    cr_expect(rank == 2 && y[0] == 12 && y[1] == 2, "rank %d: %lld %lld", rank,
              (long long)y[0], (long long)y[1]);
    /* No length: to the end of the file. A link that stays inside. */
    char link[300];
    snprintf(link, sizeof link, "%s/in.data", dir);
    cr_expect_eq(symlink("w.data", link), 0);
    cr_expect_eq(s_try_ext(s_reshape(3, zeros, "in.data", "8", NULL), dir, &rank, y), 0, "%s",
                 tc_errmsg());
    cr_expect_eq(rank, 2);
    /* A subdirectory, and "./". */
    char sub[300];
    snprintf(sub, sizeof sub, "%s/sub", dir);
    cr_assert_eq(mkdir(sub, 0700), 0);
    s_data(shape, 3, data);
    s_write(sub, "w.data", data, 32);
    cr_expect_eq(s_try_ext(s_reshape(3, zeros, "./sub/w.data", "8", "24"), dir, &rank, y), 0,
                 "%s", tc_errmsg());
    /* A Constant node whose value tensor is external (onnx's converter with
     * convert_attribute=True). */
    tc_tb_t *tb = tc_tb_new(2, 3, 4);
    tc_tb_const_ints(tb, "shape", 3, zeros);
    tc_tb_external(tb, "shape", "w.data", "8", "24");
    tc_tb_node(tb, "Reshape", "reshape", "x,shape", "y");
    tc_tb_output(tb, "y");
    cr_expect_eq(s_try_ext(tb, dir, &rank, y), 0, "%s", tc_errmsg());
    cr_expect(rank == 2 && y[0] == 12 && y[1] == 2);
    s_rmtree(dir);
}

Test(forms, external_weights_are_never_read, .timeout = 10)
{
    char dir[256];
    s_scratch(dir, sizeof dir);
    tc_tb_t *tb = tc_tb_new(3, 8, 8);
    int64_t w[4] = {4, 3, 3, 3};
    tc_tb_weight(tb, "w", 4, w);
    tc_tb_external(tb, "w", "/nonexistent/../weights.bin", "x", NULL);
    tc_tb_node(tb, "Conv", "conv", "x,w", "y");
    tc_tb_output(tb, "y");
    cr_expect_eq(s_try_tb(tb), 0, "from memory: %s", tc_errmsg());
    int rank;
    int64_t y[8];
    cr_expect_eq(s_try_ext(tb, dir, &rank, y), 0, "%s", tc_errmsg());
    s_rmtree(dir);
}

Test(forms, external_data_hostile, .timeout = 30)
{
    char root[256], dir[300], path[400];
    s_scratch(root, sizeof root);
    snprintf(dir, sizeof dir, "%s/model", root);
    cr_assert_eq(mkdir(dir, 0700), 0);
    int64_t shape[2] = {0, -1}, y[8];
    uint8_t data[64];
    size_t n = s_data(shape, 2, data); /* 24 bytes: values at 8..24 */
    s_write(dir, "w.data", data, n);
    s_write(root, "outside.data", data, n);
    snprintf(path, sizeof path, "%s/escape.data", dir);
    cr_assert_eq(symlink("../outside.data", path), 0);
    snprintf(path, sizeof path, "%s/abs.data", dir);
    char target[400];
    snprintf(target, sizeof target, "%s/outside.data", root);
    cr_assert_eq(symlink(target, path), 0);
    snprintf(path, sizeof path, "%s/fifo.data", dir);
    cr_assert_eq(mkfifo(path, 0600), 0);
    snprintf(path, sizeof path, "%s/subdir", dir);
    cr_assert_eq(mkdir(path, 0700), 0);
    int rank;
    cr_expect_eq(s_try_ext(s_reshape(2, shape, "w.data", "8", "16"), dir, &rank, y), 0, "%s",
                 tc_errmsg());

    static const struct {
        const char *location, *offset, *length, *says;
        int rc;
    } cases[] = {
        {"/etc/passwd", "0", "16", "absolute path", TC_EPARSE},
        {"../outside.data", "8", "16", "'..'", TC_EPARSE},
        {"subdir/../../outside.data", "8", "16", "'..'", TC_EPARSE},
        {"escape.data", "8", "16", "symbolic link", TC_EPARSE},
        {"abs.data", "8", "16", "symbolic link", TC_EPARSE},
        {"fifo.data", "0", "16", "not a regular file", TC_EPARSE},
        {"subdir", "0", "16", "not a regular file", TC_EPARSE},
        {"missing.data", "0", "16", "missing.data", TC_ENOTFOUND},
        {"w.data", "1000", "16", "past the end", TC_EPARSE},
        {"w.data", "16", "16", "past the end", TC_EPARSE},
        {"w.data", "8", "8", "length 8", TC_EPARSE},
        {"w.data", "0", NULL, "length 24", TC_EPARSE},
        {"w.data", "-1", "16", "not a byte count", TC_EPARSE},
        {"w.data", "8x", "16", "not a byte count", TC_EPARSE},
        {"w.data", "8", "99999999999999999999", "not a byte count", TC_EPARSE},
        {"w.data", "", "16", "empty", TC_EPARSE},
        {NULL, "8", "16", "without a location", TC_EPARSE},
        {"", "8", "16", "without a location", TC_EPARSE},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int rc = s_try_ext(s_reshape(2, shape, cases[i].location, cases[i].offset,
                                     cases[i].length),
                           dir, &rank, y);
        cr_expect_eq(rc, cases[i].rc, "case %zu (%s): %d %s", i,
                     cases[i].location ? cases[i].location : "no location", rc, tc_errmsg());
        cr_expect(strstr(tc_errmsg(), cases[i].says) && strstr(tc_errmsg(), "'shape'") &&
                      strstr(tc_errmsg(), "node 'reshape'"),
                  "case %zu: %s", i, tc_errmsg());
    }
    /* Entries named twice. */
    tc_tb_t *tb = s_reshape(2, shape, "w.data", "8", "16");
    tc_tb_external(tb, "shape", "w.data", "8", "16");
    Onnx__TensorProto *t = tc_tb_model(tb)->graph->initializer[0];
    Onnx__StringStringEntryProto **e = tc_tb_alloc(tb, 4 * sizeof *e);
    memcpy(e, t->external_data, 3 * sizeof *e);
    e[3] = e[0];
    t->external_data = e;
    t->n_external_data = 4;
    cr_expect_eq(s_try_ext(tb, dir, &rank, y), TC_EPARSE);
    cr_expect(strstr(tc_errmsg(), "twice"), "%s", tc_errmsg());
    s_rmtree(root);
}

/* ---- not ONNX ---- */

static int s_try_bytes(const void *data, size_t len)
{
    tc_model_t *m = NULL;
    int rc = tc_model_load_bytes(data, len, "x", NULL, &m);
    tc_model_destroy(&m);
    return rc;
}

Test(forms, not_onnx_says_so, .timeout = 10)
{
    static const struct {
        const char *bytes;
        size_t len;
        const char *says;
    } cases[] = {
#define S_CASE(bytes, says) {bytes, sizeof bytes - 1, says}
        S_CASE("", "(empty)"),
        S_CASE("this is not an ONNX file\n", "(text)"),
        S_CASE("# Title\n\nSome \xc3\xa9t\xc3\xa9 text.\n", "(text)"),
        S_CASE("<\n  ir_version: 8,\n  opset_import: [\"\" : 17]\n>\nagraph (float[N] x) => ()\n",
               "ONNX in a text form"),
        S_CASE("\x89PNG\r\n\x1a\n\0\0\0\rIHDR", "PNG image"),
        S_CASE("\xff\xd8\xff\xe0\0\x10JFIF", "JPEG image"),
        S_CASE("PK\x03\x04\x14\0\0\0\0\0", "zip archive"),
        S_CASE("\x80\x02\x8a\x0a\x6c\xfc\x9c\x46\xf9\x20\x6a\xa8\x50\x19", "Python pickle"),
        S_CASE("\x1f\x8b\x08\0\0\0\0\0", "gzip"),
        S_CASE("\x7f" "ELF\x02\x01\x01", "ELF"),
        S_CASE("\x93NUMPY\x01\0v\0{'descr'", "NumPy"),
        S_CASE("\x0a\0\0\0\0\0\0\0{\"a\":{}}  ", "safetensors"),
        S_CASE("\xde\xad\xbe\xef\x01", "bytes de ad be ef"),
        S_CASE("\x0b\x0c", "bytes 0b 0c"),
#undef S_CASE
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        cr_expect_eq(s_try_bytes(cases[i].bytes, cases[i].len), TC_EPARSE, "case %zu", i);
        cr_expect(strstr(tc_errmsg(), "not an ONNX file (") && strstr(tc_errmsg(), cases[i].says),
                  "case %zu: %s", i, tc_errmsg());
    }
    /* From a file, the message starts with its path. */
    char path[1024];
    s_source("tests/data/forms/not_onnx.pt", path, sizeof path);
    tc_model_t *m = NULL;
    cr_expect_eq(s_load_file(path, &m), TC_EPARSE);
    cr_expect(strstr(tc_errmsg(), path) == tc_errmsg() &&
                  strstr(tc_errmsg(), ": not an ONNX file (a zip archive"),
              "%s", tc_errmsg());
    s_source("README.md", path, sizeof path);
    cr_expect_eq(s_load_file(path, &m), TC_EPARSE);
    cr_expect(strstr(tc_errmsg(), "not an ONNX file (text)"), "%s", tc_errmsg());
}

Test(forms, truncated_onnx_keeps_its_precise_error, .timeout = 30)
{
    char path[1024];
    s_source("tests/data/forms/small_cnn.onnx", path, sizeof path);
    size_t len;
    uint8_t *full = s_read(path, &len);
    for (size_t cut = 1; cut < len; cut += 1 + cut / 16) {
        cr_expect_lt(s_try_bytes(full, cut), 0, "cut at %zu", cut);
        cr_expect_null(strstr(tc_errmsg(), "not an ONNX file"), "cut at %zu: %s", cut,
                       tc_errmsg());
    }
    /* A corrupted field deep inside, too. */
    full[len / 2] = 0xff;
    full[len / 2 + 1] = 0xff;
    if (s_try_bytes(full, len) < 0)
        cr_expect_null(strstr(tc_errmsg(), "not an ONNX file"), "%s", tc_errmsg());
    free(full);
}
