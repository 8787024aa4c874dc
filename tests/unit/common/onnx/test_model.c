/* The importer against the framework: for every model of the CNN set and
 * the two transformers the committed weight-free export
 * (tests/data/NAME.onnx) must give PyTorch's own parameter count exactly,
 * forward MACs within 1 % of an independent count (forward hooks and the
 * profiler), and the matrix products of a training step that PyTorch's
 * profiler recorded, call for call; for several models every node output
 * shape that PyTorch (or ONNX's reference shape inference) reported. All
 * reference figures come from agent/harness/make_test_data.py. */
#include "tc_error.h"
#include "tc_model.h"
#include "tc_sha256.h"
#include "tc_test.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    char name[64];
    unsigned size;
    unsigned long long params;
    double macs;
    char mode[32];
    int outputs;
} s_ref_t;

static int s_refs(s_ref_t *refs, int max)
{
    char path[1024], line[512];
    tc_test_source_path("tests/data/reference.txt", path, sizeof path);
    FILE *f = fopen(path, "r");
    cr_assert(f, "cannot open %s", path);
    int n = 0;
    while (fgets(line, sizeof line, f) && n < max) {
        s_ref_t *r = &refs[n];
        if (sscanf(line, "model %63s %u %llu %lf %31s %d", r->name, &r->size, &r->params,
                   &r->macs, r->mode, &r->outputs) == 6)
            n++;
    }
    fclose(f);
    return n;
}

static tc_model_t *s_load(const char *name)
{
    char rel[256], path[1024];
    snprintf(rel, sizeof rel, "tests/data/%s.onnx", name);
    tc_test_source_path(rel, path, sizeof path);
    tc_model_t *m = NULL;
    int rc = tc_model_load_file(path, NULL, &m);
    cr_assert_eq(rc, 0, "loading %s: %s", name, tc_errmsg());
    return m;
}

/* The CNN set and the transformers (make_test_data.py's CNN_SET and
 * TRANSFORMER_SET). */
static const char *const s_models[] = {
    "alexnet", "vgg11", "vgg16", "vgg19", "vgg11_bn", "vgg16_bn", "resnet18", "resnet34",
    "resnet50", "resnet101", "resnet152", "resnext50_32x4d", "wide_resnet50_2", "densenet121",
    "densenet161", "densenet169", "densenet201", "squeezenet1_0", "squeezenet1_1",
    "inception_v3", "googlenet", "shufflenet_v2_x0_5", "shufflenet_v2_x1_0", "mobilenet_v2",
    "mobilenet_v3_large", "mobilenet_v3_small", "mnasnet0_5", "mnasnet1_0", "efficientnet_b0",
    "efficientnet_b1", "regnet_x_400mf", "regnet_y_400mf", "convnext_tiny", "vit_b_16",
    "swin_t",
};
#define S_SET_SIZE (sizeof s_models / sizeof s_models[0])

Test(model, reference_covers_the_models, .timeout = 10)
{
    s_ref_t refs[64];
    int n = s_refs(refs, 64);
    for (size_t i = 0; i < S_SET_SIZE; i++) {
        bool found = false;
        for (int k = 0; k < n; k++)
            found = found || !strcmp(refs[k].name, s_models[i]);
        cr_expect(found, "%s has no reference line; rerun agent/harness/make_test_data.py",
                  s_models[i]);
    }
}

Test(model, cnn_set_params_exact_and_macs_within_one_percent, .timeout = 120)
{
    s_ref_t refs[64];
    int n = s_refs(refs, 64);
    cr_assert_geq(n, (int)S_SET_SIZE);
    double worst = 0;
    for (int i = 0; i < n; i++) {
        tc_model_t *m = s_load(refs[i].name);
        uint32_t c, h, w;
        tc_model_input(m, &c, &h, &w);
        cr_expect_eq(c, 3, "%s channels", refs[i].name);
        cr_expect_eq(h, refs[i].size, "%s input size %u", refs[i].name, h);
        cr_expect_eq(w, refs[i].size);
        cr_expect_eq(tc_model_params(m), refs[i].params, "%s: %llu parameters, torchvision %llu",
                     refs[i].name, (unsigned long long)tc_model_params(m), refs[i].params);
        double dev = fabs(tc_model_macs(m) - refs[i].macs) / refs[i].macs;
        if (dev > worst)
            worst = dev;
        cr_expect_lt(dev, 0.01, "%s: %.4g MACs, hooks count %.4g", refs[i].name,
                     tc_model_macs(m), refs[i].macs);
        /* FLOPs include the MACs twice plus the non-conv work. */
        cr_expect_geq(tc_model_flops(m), 2 * tc_model_macs(m));
        const char *mode = tc_model_meta(m, "traincast.export_mode");
        cr_expect(mode && !strcmp(mode, refs[i].mode), "%s export mode", refs[i].name);
        tc_model_destroy(&m);
        cr_expect_null(m);
    }
    cr_log_info("largest MAC deviation over %d models: %.6f %%", n, worst * 100);
}

Test(model, resnet50_known_figures, .timeout = 20)
{
    tc_model_t *m = s_load("resnet50");
    cr_expect_eq(tc_model_params(m), 25557032);
    cr_expect(fabs(tc_model_macs(m) / 1e9 - 4.09) < 0.01, "%.4f GMACs", tc_model_macs(m) / 1e9);
    /* The id is the structure's (12 hex of a SHA-256), not the file's. */
    const char *id = tc_model_id(m);
    cr_expect(strlen(id) == strlen("onnx:") + 12 + strlen("@224") && !strncmp(id, "onnx:", 5) &&
                  !strcmp(id + 17, "@224"),
              "%s", id);
    cr_expect_neq(strncmp(id + 5, tc_model_sha256(m), 12), 0, "%s", id);
    cr_expect_str_eq(tc_model_name(m), "resnet50");
    cr_expect_eq(strlen(tc_model_sha256(m)), 64);
    tc_model_destroy(&m);
}

/* One kind of matrix-product call and how many of it a step makes. */
typedef struct {
    char op[16];
    unsigned long long count, m, n, k;
    unsigned long long calls;
} s_gemm_t;

#define S_MAX_GEMMS 128

/* The same op on the same sizes. */
static bool s_gemm_same(const s_gemm_t *a, const s_gemm_t *b)
{
    return !strcmp(a->op, b->op) && a->count == b->count && a->m == b->m && a->n == b->n &&
           a->k == b->k;
}

/* The calls of `g`'s kind in the list (0 where it is not there). */
static unsigned long long s_gemm_calls(const s_gemm_t *list, size_t n, const s_gemm_t *g)
{
    for (size_t i = 0; i < n; i++)
        if (s_gemm_same(&list[i], g))
            return list[i].calls;
    return 0;
}

/* Adds `g`'s calls to the list (merging equal kinds). */
static void s_gemm_add(s_gemm_t *list, size_t *n, const s_gemm_t *g)
{
    for (size_t i = 0; i < *n; i++) {
        if (s_gemm_same(&list[i], g)) {
            list[i].calls += g->calls;
            return;
        }
    }
    cr_assert_lt(*n, S_MAX_GEMMS);
    list[(*n)++] = *g;
}

/* The products PyTorch's profiler recorded in one training step of `name`
 * at batch 2 (tests/data/gemms.txt); false where the file has no step line
 * for the model. */
static bool s_profiled_gemms(const char *name, s_gemm_t *list, size_t *n)
{
    char path[1024], line[256];
    tc_test_source_path("tests/data/gemms.txt", path, sizeof path);
    FILE *f = fopen(path, "r");
    cr_assert(f, "cannot open %s", path);
    bool found = false;
    unsigned long long total = 0, listed = 0;
    *n = 0;
    while (fgets(line, sizeof line, f)) {
        char model[64];
        s_gemm_t g;
        unsigned long long calls;
        if (sscanf(line, "step %63s %llu", model, &calls) == 2 && !strcmp(model, name)) {
            found = true;
            total = calls;
        }
        if (sscanf(line, "gemm %63s %15s %llu %llu %llu %llu %llu", model, g.op, &g.count, &g.m,
                   &g.n, &g.k, &g.calls) == 7 &&
            !strcmp(model, name)) {
            s_gemm_add(list, n, &g);
            listed += g.calls;
        }
    }
    fclose(f);
    cr_expect_eq(listed, found ? total : 0, "%s: gemms.txt lists %llu of %llu calls", name,
                 listed, total);
    return found;
}

/* The products the importer's plan runs in one training step at batch 2:
 * every usage's directions (tc_matmul_step.h) as often as it is used. The
 * forward of an mm config with a bias is PyTorch's addmm. */
static size_t s_planned_gemms(const tc_model_t *m, s_gemm_t *list)
{
    size_t n = 0;
    for (size_t i = 0; i < tc_model_matmul_count(m); i++) {
        const tc_matmul_usage_t *u = tc_model_matmul(m, i);
        tc_matmul_config_t c = u->config;
        c.minibatch = 2;
        Traincast__V1__Direction dirs[TC_MATMUL_STEP_MAX_DIRS];
        size_t nd = tc_matmul_step_directions(&u->use, dirs);
        bool mm = tc_matmul_is_mm(&c);
        for (size_t d = 0; d < nd; d++) {
            tc_gemm_t g;
            cr_assert_eq(tc_matmul_step_gemm(&c, dirs[d], &g), 0, "%s", tc_errmsg());
            s_gemm_t e = {.count = g.count, .m = g.m, .n = g.n, .k = g.k,
                          .calls = u->use.multiplicity};
            bool fwd = dirs[d] == TRAINCAST__V1__DIRECTION__DIRECTION_FWD;
            snprintf(e.op, sizeof e.op, "%s", !mm ? "bmm" : fwd && c.bias ? "addmm" : "mm");
            s_gemm_add(list, &n, &e);
        }
    }
    return n;
}

/* The matmul plan is what PyTorch runs: each model's planned products at
 * batch 2 are the profiler's, op, sizes and calls, none missing and none
 * extra. A planned product with the wrong transpose shows here as sizes
 * swapped; one PyTorch fuses differently (a bias in addmm or an add_ after
 * mm) as the other op. */
Test(model, matmul_plan_is_the_steps_products, .timeout = 60)
{
    unsigned long long total = 0;
    size_t kinds = 0;
    for (size_t i = 0; i < S_SET_SIZE; i++) {
        s_gemm_t want[S_MAX_GEMMS], got[S_MAX_GEMMS];
        size_t nw, ng;
        cr_expect(s_profiled_gemms(s_models[i], want, &nw),
                  "%s: no step line in tests/data/gemms.txt; rerun "
                  "agent/harness/make_test_data.py",
                  s_models[i]);
        tc_model_t *m = s_load(s_models[i]);
        ng = s_planned_gemms(m, got);
        for (size_t w = 0; w < nw; w++) {
            unsigned long long planned = s_gemm_calls(got, ng, &want[w]);
            cr_expect_eq(planned, want[w].calls,
                         "%s: PyTorch calls %s %llux[%llu x %llu] k%llu %llu times, the plan "
                         "%llu",
                         s_models[i], want[w].op, want[w].count, want[w].m, want[w].n,
                         want[w].k, want[w].calls, planned);
            total += want[w].calls;
        }
        for (size_t g = 0; g < ng; g++)
            cr_expect(s_gemm_calls(want, nw, &got[g]) > 0, "%s: the plan runs %s %llux[%llu x %llu] k%llu %llu times, "
                                "PyTorch never",
                      s_models[i], got[g].op, got[g].count, got[g].m, got[g].n, got[g].k,
                      got[g].calls);
        kinds += nw;
        tc_model_destroy(&m);
    }
    cr_log_info("%llu products of %zu kinds checked over %zu models", total, kinds,
                (size_t)S_SET_SIZE);
}

/* Every shape PyTorch reported for a module output (and ONNX's reference
 * inference for the rest) must be what the importer inferred. */
static void s_check_shapes(const char *name, int *torch_n, int *onnx_n)
{
    char rel[256], path[1024], line[1024];
    snprintf(rel, sizeof rel, "tests/data/shapes/%s.txt", name);
    tc_test_source_path(rel, path, sizeof path);
    FILE *f = fopen(path, "r");
    cr_assert(f, "cannot open %s", path);
    tc_model_t *m = s_load(name);
    *torch_n = *onnx_n = 0;
    while (fgets(line, sizeof line, f)) {
        char src[16], value[768], dims[128];
        if (line[0] == '#' || sscanf(line, "%15s %767s %127s", src, value, dims) != 3)
            continue;
        int64_t want[TC_MODEL_MAX_RANK], got[TC_MODEL_MAX_RANK];
        int wr = 0, gr;
        bool batched;
        for (char *p = dims, *end; *p && wr < TC_MODEL_MAX_RANK; p = *end ? end + 1 : end) {
            want[wr++] = strtoll(p, &end, 10);
            if (end == p)
                break;
        }
        int rc = tc_model_value_shape(m, value, &gr, got, &batched);
        cr_expect_eq(rc, 0, "%s: %s", name, tc_errmsg());
        if (rc < 0)
            continue;
        cr_expect(batched, "%s: %s should carry the batch", name, value);
        bool same = gr == wr;
        for (int k = 0; same && k < wr; k++)
            same = got[k] == want[k];
        cr_expect(same, "%s: %s is %s per %s, inferred rank %d [%lld, %lld, %lld]", name, value,
                  dims, src, gr, gr > 0 ? (long long)got[0] : -1LL,
                  gr > 1 ? (long long)got[1] : -1LL, gr > 2 ? (long long)got[2] : -1LL);
        ++*(strcmp(src, "torch") ? onnx_n : torch_n);
    }
    fclose(f);
    tc_model_destroy(&m);
}

Test(model, shapes_match_the_framework, .timeout = 60)
{
    static const char *const models[] = {
        "alexnet",         "resnet50",        "googlenet",   "inception_v3",
        "shufflenet_v2_x1_0", "mobilenet_v3_large", "efficientnet_b0", "densenet121",
        "squeezenet1_1",   "regnet_y_400mf",  "convnext_tiny",  "vit_b_16",
        "swin_t",
    };
    int total = 0;
    for (size_t i = 0; i < sizeof models / sizeof models[0]; i++) {
        int t, o;
        s_check_shapes(models[i], &t, &o);
        cr_expect_gt(t, 10, "%s: only %d shapes from PyTorch", models[i], t);
        total += t + o;
    }
    cr_log_info("%d node output shapes checked", total);
}

/* Every layer of every model has its output shape set and the summary
 * numbers hold together. */
Test(model, layers_are_consistent, .timeout = 60)
{
    for (size_t i = 0; i < S_SET_SIZE; i++) {
        tc_model_t *m = s_load(s_models[i]);
        uint64_t params = 0;
        size_t convs = 0;
        double macs = 0;
        for (size_t k = 0; k < tc_model_node_count(m); k++) {
            const tc_model_node_t *n = tc_model_node(m, k);
            params += n->params;
            macs += n->macs;
            cr_expect(n->name && *n->name && n->op && *n->op);
            if (n->is_conv) {
                convs++;
                cr_expect_eq(n->op_class, TC_OPC_CONV);
                cr_expect_eq(tc_conv_config_check(&n->conv), 0, "%s %s: %s", s_models[i],
                             n->name, tc_errmsg());
                cr_expect_eq(n->conv.n, 0);
                cr_expect_eq(n->conv.dtype, TRAINCAST__V1__DTYPE__DTYPE_FP32);
                /* ConvNeXt's blocks hand every conv but the stem a
                 * channels-last tensor (tc_shape_layout.c). */
                bool nhwc = !strncmp(s_models[i], "convnext", 8) && !n->first_layer;
                cr_expect_eq(n->conv.layout,
                             nhwc ? TRAINCAST__V1__LAYOUT__LAYOUT_NHWC
                                  : TRAINCAST__V1__LAYOUT__LAYOUT_NCHW,
                             "%s %s", s_models[i], n->name);
                /* The config reproduces the node's output and MACs. */
                cr_expect_eq(tc_conv_out_h(&n->conv), (uint32_t)n->out_shape[1], "%s %s",
                             s_models[i], n->name);
                cr_expect_eq(tc_conv_out_w(&n->conv), (uint32_t)n->out_shape[2]);
                cr_expect(fabs(tc_conv_macs(&n->conv) - n->macs) < 0.5);
            }
        }
        cr_expect_eq(params, tc_model_params(m));
        cr_expect(fabs(macs - tc_model_macs(m)) < 1);
        size_t listed = 0, first = 0;
        for (size_t k = 0; k < tc_model_conv_count(m); k++) {
            listed += tc_model_conv(m, k)->multiplicity;
            first += tc_model_conv(m, k)->first_layer;
        }
        cr_expect_eq(listed, convs, "%s: multiplicities add to %zu of %zu convs", s_models[i],
                     listed, convs);
        cr_expect_eq(first, 1, "%s: %zu first-layer convs", s_models[i], first);
        tc_model_destroy(&m);
    }
}

Test(model, resnet50_conv_dedup, .timeout = 20)
{
    tc_model_t *m = s_load("resnet50");
    cr_expect_eq(tc_model_conv_count(m), 23);
    const tc_conv_usage_t *u = tc_model_conv(m, 0);
    cr_expect(u->first_layer);
    cr_expect_eq(u->multiplicity, 1);
    cr_expect_eq(u->config.c, 3);
    cr_expect_eq(u->config.h, 224);
    cr_expect_eq(u->config.k, 64);
    cr_expect_eq(u->config.r, 7);
    cr_expect_eq(u->config.stride_h, 2);
    cr_expect_eq(u->config.pad_h, 3);
    /* layer1's 3x3 convs: three blocks share one config. */
    bool found = false;
    for (size_t k = 0; k < tc_model_conv_count(m); k++) {
        const tc_conv_usage_t *v = tc_model_conv(m, k);
        if (v->config.c == 64 && v->config.k == 64 && v->config.r == 3 && v->config.h == 56) {
            cr_expect_eq(v->multiplicity, 3);
            cr_expect(!v->first_layer);
            found = true;
        }
        for (size_t j = 0; j < k; j++)
            cr_expect(tc_conv_config_cmp(&v->config, &tc_model_conv(m, j)->config) != 0 ||
                          v->first_layer != tc_model_conv(m, j)->first_layer,
                      "configs %zu and %zu are duplicates", j, k);
    }
    cr_expect(found);
    tc_model_destroy(&m);
}

Test(model, grouped_and_depthwise_convs, .timeout = 20)
{
    tc_model_t *m = s_load("resnext50_32x4d");
    size_t grouped = 0;
    for (size_t k = 0; k < tc_model_conv_count(m); k++)
        grouped += tc_model_conv(m, k)->config.groups == 32;
    cr_expect_gt(grouped, 0);
    tc_model_destroy(&m);
    m = s_load("mobilenet_v2");
    size_t depthwise = 0;
    for (size_t k = 0; k < tc_model_conv_count(m); k++) {
        const tc_conv_config_t *c = &tc_model_conv(m, k)->config;
        depthwise += c->groups > 1 && c->groups == c->c && c->groups == c->k;
    }
    cr_expect_gt(depthwise, 5);
    tc_model_destroy(&m);
}

Test(model, features_scale_with_batch, .timeout = 20)
{
    tc_model_t *m = s_load("resnet50");
    tc_features_t f1, f32;
    tc_model_features(m, 1, &f1);
    tc_model_features(m, 32, &f32);
    cr_expect_eq(f32.batch, 32);
    cr_expect_eq(f1.conv_layers, 53);
    cr_expect_eq(f1.cls[TC_OPC_BN].layers, 53);
    cr_expect_eq(f1.cls[TC_OPC_ACT].layers, 49);
    cr_expect_eq(f1.cls[TC_OPC_ELTWISE].layers, 16); /* the residual adds */
    cr_expect_eq(f1.cls[TC_OPC_POOL].layers, 2);
    cr_expect_eq(f1.cls[TC_OPC_GEMM].layers, 1);
    cr_expect_eq(f1.cls[TC_OPC_GEMM].params, 2048 * 1000 + 1000);
    cr_expect_eq(f1.total_params, 25557032);
    cr_expect_eq(f1.total_layers, tc_model_node_count(m));
    /* BN after conv1 alone reads 64x112x112 per sample. */
    cr_expect_gt(f1.cls[TC_OPC_BN].elems_in, 64.0 * 112 * 112);
    for (int c = 0; c < TC_OPC_COUNT; c++) {
        cr_expect_eq(f32.cls[c].elems_in, 32 * f1.cls[c].elems_in);
        cr_expect_eq(f32.cls[c].elems_out, 32 * f1.cls[c].elems_out);
        cr_expect_eq(f32.cls[c].flops, 32 * f1.cls[c].flops);
        cr_expect_eq(f32.cls[c].params, f1.cls[c].params);
        cr_expect_eq(f32.cls[c].layers, f1.cls[c].layers);
    }
    double v;
    cr_expect_eq(tc_feature_value(&f32, "bn.layers", &v), 0);
    cr_expect_eq(v, 53);
    tc_model_destroy(&m);
}

Test(model, folded_shape_arithmetic_is_not_a_layer, .timeout = 20)
{
    tc_model_t *m = s_load("shufflenet_v2_x1_0");
    cr_expect_lt(tc_model_node_count(m), tc_model_onnx_node_count(m) / 2,
                 "%zu layers of %zu nodes", tc_model_node_count(m),
                 tc_model_onnx_node_count(m));
    for (size_t k = 0; k < tc_model_node_count(m); k++) {
        const tc_model_node_t *n = tc_model_node(m, k);
        cr_expect(strcmp(n->op, "Shape") && strcmp(n->op, "Constant") &&
                      strcmp(n->op, "Unsqueeze"),
                  "%s (%s) should be folded", n->name, n->op);
        cr_expect(n->out_batched, "%s carries no batch", n->name);
    }
    tc_model_destroy(&m);
}

Test(model, aux_heads_and_aten_pool, .timeout = 20)
{
    tc_model_t *m = s_load("googlenet");
    size_t aten = 0;
    for (size_t k = 0; k < tc_model_node_count(m); k++) {
        const tc_model_node_t *n = tc_model_node(m, k);
        if (!strcmp(n->op, "adaptive_avg_pool2d")) {
            aten++;
            cr_expect_eq(n->op_class, TC_OPC_POOL);
            cr_expect_eq(n->rank_out, 3);
            cr_expect_eq(n->out_shape[1], 4);
            cr_expect_eq(n->out_shape[2], 4);
        }
    }
    cr_expect_eq(aten, 2, "the two auxiliary heads");
    cr_expect_str_eq(tc_model_meta(m, "traincast.export_mode"), "training+aten");
    tc_model_destroy(&m);
}

Test(model, dropout_and_training_batchnorm_kept, .timeout = 20)
{
    tc_model_t *m = s_load("vgg16_bn");
    tc_features_t f;
    tc_model_features(m, 1, &f);
    cr_expect_eq(f.cls[TC_OPC_DROPOUT].layers, 2);
    cr_expect_eq(f.cls[TC_OPC_BN].layers, 13);
    tc_model_destroy(&m);
}

Test(model, wire_form, .timeout = 20)
{
    tc_model_t *m = s_load("mobilenet_v3_small");
    Traincast__V1__ModelGraph *g = NULL;
    cr_assert_eq(tc_model_to_proto(m, &g), 0, "%s", tc_errmsg());
    cr_expect_str_eq(g->model_id, tc_model_id(m));
    cr_expect_str_eq(g->source_sha256, tc_model_sha256(m));
    cr_expect_eq(g->params, tc_model_params(m));
    cr_expect_eq(g->n_layers, tc_model_node_count(m));
    cr_expect_eq(g->n_convs, tc_model_conv_count(m));
    cr_expect_eq(g->input_h, 224);
    for (size_t i = 0; i < g->n_layers; i++) {
        const tc_model_node_t *n = tc_model_node(m, i);
        cr_expect_str_eq(g->layers[i]->op_class, tc_op_class_name(n->op_class));
        cr_expect_eq(g->layers[i]->n_out_shape, (size_t)n->rank_out);
    }
    /* It packs and unpacks. */
    size_t len = traincast__v1__model_graph__get_packed_size(g);
    uint8_t *buf = malloc(len);
    traincast__v1__model_graph__pack(g, buf);
    Traincast__V1__ModelGraph *back = traincast__v1__model_graph__unpack(NULL, len, buf);
    cr_assert_not_null(back);
    cr_expect_eq(back->n_layers, g->n_layers);
    cr_expect_eq(back->convs[0]->multiplicity, g->convs[0]->multiplicity);
    traincast__v1__model_graph__free_unpacked(back, NULL);
    free(buf);
    tc_model_proto_free(&g);
    cr_expect_null(g);
    tc_model_destroy(&m);
}

Test(model, same_bytes_same_id, .timeout = 20)
{
    tc_model_t *a = s_load("squeezenet1_1"), *b = s_load("squeezenet1_1");
    cr_expect_str_eq(tc_model_id(a), tc_model_id(b));
    tc_model_t *c = s_load("squeezenet1_0");
    cr_expect_str_neq(tc_model_id(a), tc_model_id(c));
    tc_model_destroy(&a);
    tc_model_destroy(&b);
    tc_model_destroy(&c);
}

Test(model, input_size_override_reinfers, .timeout = 20)
{
    char path[1024];
    tc_test_source_path("tests/data/resnet50.onnx", path, sizeof path);
    tc_model_opts_t o = {.input_size = 160};
    tc_model_t *m = NULL;
    cr_assert_eq(tc_model_load_file(path, &o, &m), 0, "%s", tc_errmsg());
    uint32_t h;
    tc_model_input(m, NULL, &h, NULL);
    cr_expect_eq(h, 160);
    /* MACs scale with the area (stride 32 divides 160 too). */
    tc_model_t *ref = s_load("resnet50");
    double conv_ratio = 0;
    for (size_t k = 0; k < tc_model_node_count(m); k++)
        if (tc_model_node(m, k)->is_conv)
            conv_ratio += tc_model_node(m, k)->macs;
    double ref_conv = 0;
    for (size_t k = 0; k < tc_model_node_count(ref); k++)
        if (tc_model_node(ref, k)->is_conv)
            ref_conv += tc_model_node(ref, k)->macs;
    cr_expect(fabs(conv_ratio / ref_conv - (160.0 * 160) / (224.0 * 224)) < 0.01);
    cr_expect_eq(tc_model_params(m), tc_model_params(ref));
    tc_model_destroy(&m);
    tc_model_destroy(&ref);
}

Test(sha256, known_vectors, .timeout = 10)
{
    char hex[65];
    tc_sha256_hex("", 0, hex);
    cr_expect_str_eq(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    tc_sha256_hex("abc", 3, hex);
    cr_expect_str_eq(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    const char *two = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
    tc_sha256_hex(two, strlen(two), hex);
    cr_expect_str_eq(hex, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
    /* One million 'a', fed in uneven pieces. */
    tc_sha256_t s;
    uint8_t d[32];
    char buf[1000];
    memset(buf, 'a', sizeof buf);
    tc_sha256_init(&s);
    size_t left = 1000000;
    for (size_t step = 1; left; step = step % 991 + 7) {
        size_t n = step < left ? step : left;
        tc_sha256_update(&s, buf, n);
        left -= n;
    }
    tc_sha256_final(&s, d);
    char got[65];
    for (int i = 0; i < 32; i++)
        snprintf(got + 2 * i, 3, "%02x", d[i]);
    cr_expect_str_eq(got, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}
