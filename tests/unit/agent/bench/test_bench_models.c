/* Two independent views of the CNN set's convolutions must agree: the ONNX
 * importer's deduplicated convs (tests/data/NAME.onnx) and PyTorch's own
 * Conv2d modules seen through forward hooks (tests/data/cnn_set.convs from
 * bench/torchvision_convs.py). Compared model by model through the
 * planner, at one batch size; and a model written as a list plans as the
 * model. */
#include "convlist.h"
#include "planner.h"

#include "tc_error.h"
#include "tc_model.h"
#include "tc_test.h"

#include <criterion/criterion.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const Traincast__V1__Direction s_all[3] = {TRAINCAST__V1__DIRECTION__DIRECTION_FWD,
                                                  TRAINCAST__V1__DIRECTION__DIRECTION_BWD_DATA,
                                                  TRAINCAST__V1__DIRECTION__DIRECTION_BWD_FILTER};

/* The plan's items at batch 8 (*items: the caller frees; NULL: dropped). */
static size_t s_plan(tc_planner_t *p, tc_plan_stats_t *st, tc_bench_item_t **items_out)
{
    unsigned long batch = 8;
    tc_bench_item_t *items = NULL;
    size_t n = 0;
    cr_assert_eq(tc_planner_build(p, &batch, 1, TRAINCAST__V1__DTYPE__DTYPE_FP32,
                                  TRAINCAST__V1__LAYOUT__LAYOUT_NCHW, s_all, 3, &items, &n, st),
                 0, "%s", tc_errmsg());
    if (items_out)
        *items_out = items;
    else
        free(items);
    return n;
}

static void s_stats(tc_planner_t *p, tc_plan_stats_t *st)
{
    s_plan(p, st, NULL);
}

typedef struct {
    tc_planner_t *all_onnx, *all_hooks;
    size_t models;
} ctx_t;

static int s_compare_model(const char *model, const tc_conv_usage_t *convs, size_t n, void *arg)
{
    ctx_t *ctx = arg;
    const char *name = strchr(model, ':') ? strchr(model, ':') + 1 : model;
    char path[512];
    snprintf(path, sizeof path, "%s/tests/data/%s.onnx", TC_SOURCE_DIR, name);
    tc_model_t *m = NULL;
    tc_model_opts_t mo = {0};
    cr_assert_eq(tc_model_load_file(path, &mo, &m), 0, "%s: %s", path, tc_errmsg());
    size_t nc = tc_model_conv_count(m);
    const tc_conv_usage_t *mine = tc_model_convs(m);

    tc_planner_t *a = tc_planner_new(), *b = tc_planner_new();
    cr_assert_eq(tc_planner_add(a, mine, nc), 0, "%s", tc_errmsg());
    cr_assert_eq(tc_planner_add(b, convs, n), 0, "%s", tc_errmsg());
    cr_assert_eq(tc_planner_add(ctx->all_onnx, mine, nc), 0);
    cr_assert_eq(tc_planner_add(ctx->all_hooks, convs, n), 0);
    tc_plan_stats_t sa, sb;
    tc_bench_item_t *ia = NULL, *ib = NULL;
    size_t na = s_plan(a, &sa, &ia), nb = s_plan(b, &sb, &ib);
    /* The same configs (shape, bias, layout: the convs PyTorch hands a
     * channels-last tensor are nhwc on both sides), directions and layers. */
    for (size_t i = 0; i < na && i < nb; i++) {
        char la[128], lb[128];
        tc_conv_config_label(&ia[i].config, la, sizeof la);
        tc_conv_config_label(&ib[i].config, lb, sizeof lb);
        if (tc_conv_config_cmp(&ia[i].config, &ib[i].config) != 0 ||
            ia[i].direction != ib[i].direction || ia[i].layers != ib[i].layers) {
            cr_expect_fail("%s: item %zu is %s (%u layers) from ONNX, %s (%u) in PyTorch", name,
                           i, la, ia[i].layers, lb, ib[i].layers);
            break;
        }
    }
    free(ia);
    free(ib);
    cr_expect_eq(sa.conv_layers, sb.conv_layers, "%s: %llu conv layers from ONNX, %llu in PyTorch",
                 name, (unsigned long long)sa.conv_layers, (unsigned long long)sb.conv_layers);
    cr_expect_eq(sa.unique_configs, sb.unique_configs, "%s: %zu configs from ONNX, %zu in PyTorch",
                 name, sa.unique_configs, sb.unique_configs);
    cr_expect_eq(sa.items, sb.items, "%s: %zu items from ONNX, %zu in PyTorch", name, sa.items,
                 sb.items);
    cr_expect_eq(sa.layer_passes, sb.layer_passes, "%s: backward-data needs differ", name);
    tc_planner_destroy(&a);
    tc_planner_destroy(&b);
    tc_model_destroy(&m);
    ctx->models++;
    return 0;
}

Test(bench_models, onnx_import_and_pytorch_agree_on_the_cnn_set, .timeout = 300)
{
    char path[512];
    snprintf(path, sizeof path, "%s/tests/data/cnn_set.convs", TC_SOURCE_DIR);
    ctx_t ctx = {tc_planner_new(), tc_planner_new(), 0};
    cr_assert_eq(tc_convlist_read(path, s_compare_model, &ctx), 0, "%s", tc_errmsg());
    cr_expect_eq(ctx.models, 33);
    tc_plan_stats_t sa, sb;
    s_stats(ctx.all_onnx, &sa);
    s_stats(ctx.all_hooks, &sb);
    cr_expect_eq(sa.items, sb.items, "whole set: %zu items from ONNX, %zu in PyTorch", sa.items,
                 sb.items);
    cr_expect_eq(sa.unique_configs, sb.unique_configs);
    tc_planner_destroy(&ctx.all_onnx);
    tc_planner_destroy(&ctx.all_hooks);
}

static int s_add_convs(const char *model, const tc_conv_usage_t *convs, size_t n, void *arg)
{
    return tc_planner_add(arg, convs, n);
}

static int s_add_matmuls(const char *model, const tc_matmul_usage_t *mms, size_t n, void *arg)
{
    return tc_planner_add_matmuls(arg, mms, n);
}

/* A model written as a list (`agent model describe --format list`) plans as
 * the model itself: the same items, directions and layers, for convs (first
 * layers, biases, channels-last inputs) and matmuls (which operands need a
 * gradient) alike. */
Test(bench_models, a_models_list_plans_as_the_model, .timeout = 120)
{
    const char *names[] = {"convnext_tiny", "squeezenet1_0", "resnet18"};
    for (size_t k = 0; k < sizeof names / sizeof names[0]; k++) {
        char path[512], list[64];
        snprintf(path, sizeof path, "%s/tests/data/%s.onnx", TC_SOURCE_DIR, names[k]);
        tc_model_t *m = NULL;
        tc_model_opts_t mo = {0};
        cr_assert_eq(tc_model_load_file(path, &mo, &m), 0, "%s: %s", path, tc_errmsg());
        size_t nc = tc_model_conv_count(m), nm = tc_model_matmul_count(m);
        const tc_conv_usage_t *convs = tc_model_convs(m);
        const tc_matmul_usage_t *mms = tc_model_matmuls(m);

        tc_test_temp_file("model_list", "", 0, list, sizeof list);
        FILE *f = fopen(list, "w");
        cr_assert_not_null(f);
        cr_assert_eq(tc_oplist_write(f, tc_model_id(m), convs, nc, mms, nm), 0, "%s",
                     tc_errmsg());
        fclose(f);

        tc_planner_t *a = tc_planner_new(), *b = tc_planner_new();
        tc_planner_set_matmuls(a, true);
        tc_planner_set_matmuls(b, true);
        cr_assert_eq(tc_planner_add(a, convs, nc), 0, "%s", tc_errmsg());
        cr_assert_eq(tc_planner_add_matmuls(a, mms, nm), 0, "%s", tc_errmsg());
        cr_assert_eq(tc_oplist_read(list, s_add_convs, s_add_matmuls, b), 0, "%s: %s", names[k],
                     tc_errmsg());
        tc_plan_stats_t sa, sb;
        tc_bench_item_t *ia = NULL, *ib = NULL;
        size_t na = s_plan(a, &sa, &ia), nb = s_plan(b, &sb, &ib);
        cr_expect_eq(na, nb, "%s: %zu items from the model, %zu from its list", names[k], na, nb);
        cr_expect_eq(sa.models, 1);
        cr_expect_eq(sb.models, 1, "%s: the list is one model", names[k]);
        cr_expect_eq(sa.matmul_items, sb.matmul_items);
        if (!strcmp(names[k], "convnext_tiny"))
            cr_expect_gt(sa.matmul_items, 0, "convnext_tiny's pointwise Linear layers");
        for (size_t i = 0; i < na && i < nb; i++) {
            bool same = ia[i].kind == ib[i].kind && ia[i].direction == ib[i].direction &&
                        ia[i].layers == ib[i].layers &&
                        (ia[i].kind == TC_OP_MATMUL
                             ? tc_matmul_config_cmp(&ia[i].matmul, &ib[i].matmul) == 0
                             : tc_conv_config_cmp(&ia[i].config, &ib[i].config) == 0);
            if (!same) {
                cr_expect_fail("%s: item %zu differs between the model and its list", names[k],
                               i);
                break;
            }
        }
        free(ia);
        free(ib);
        tc_planner_destroy(&a);
        tc_planner_destroy(&b);
        tc_model_destroy(&m);
        unlink(list);
    }
}
