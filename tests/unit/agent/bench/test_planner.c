/* The bench planner (dedup, backward-data skipping), resume from a result
 * file and conv list files, on hand-built conv lists. */
#include "convlist.h"
#include "planner.h"

#include "tc_error.h"
#include "tc_resultfile.h"
#include "tc_test.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define FWD TRAINCAST__V1__DIRECTION__DIRECTION_FWD
#define BWD_DATA TRAINCAST__V1__DIRECTION__DIRECTION_BWD_DATA
#define BWD_FILTER TRAINCAST__V1__DIRECTION__DIRECTION_BWD_FILTER
#define HEUR TRAINCAST__V1__POLICY__POLICY_HEURISTIC
#define EXH TRAINCAST__V1__POLICY__POLICY_EXHAUSTIVE

static const Traincast__V1__Direction s_all[3] = {FWD, BWD_DATA, BWD_FILTER};

static tc_conv_usage_t s_use(unsigned c, unsigned hw, unsigned k, unsigned r, unsigned pad,
                             unsigned stride, unsigned groups, unsigned mult, bool first)
{
    tc_conv_usage_t u;
    memset(&u, 0, sizeof u);
    u.config = tc_conv_config_default();
    u.config.c = c, u.config.h = u.config.w = hw, u.config.k = k, u.config.r = u.config.s = r;
    u.config.pad_h = u.config.pad_w = pad;
    u.config.stride_h = u.config.stride_w = stride;
    u.config.groups = groups;
    u.multiplicity = mult;
    u.first_layer = first;
    return u;
}

/* A conv the importer found running channels-last keeps nhwc in an nchw
 * plan (a distinct config from the same shape in NCHW); an nhwc plan runs
 * every conv channels-last, the two uses of the shape merged into one. */
Test(planner, keeps_each_convs_layout_unless_the_plan_is_nhwc, .timeout = 10)
{
    tc_conv_usage_t a[] = {s_use(16, 8, 16, 3, 1, 1, 16, 2, false),
                           s_use(16, 8, 16, 3, 1, 1, 16, 1, false)};
    a[1].config.layout = TRAINCAST__V1__LAYOUT__LAYOUT_NHWC;
    const Traincast__V1__Direction fwd[1] = {FWD};
    unsigned long batch = 4;
    for (int plan_nhwc = 0; plan_nhwc <= 1; plan_nhwc++) {
        tc_planner_t *p = tc_planner_new();
        cr_assert_eq(tc_planner_add(p, a, 2), 0, "%s", tc_errmsg());
        tc_bench_item_t *items = NULL;
        size_t n = 0;
        tc_plan_stats_t st;
        cr_assert_eq(tc_planner_build(p, &batch, 1, TRAINCAST__V1__DTYPE__DTYPE_FP32,
                                      plan_nhwc ? TRAINCAST__V1__LAYOUT__LAYOUT_NHWC
                                                : TRAINCAST__V1__LAYOUT__LAYOUT_NCHW,
                                      fwd, 1, &items, &n, &st),
                     0, "%s", tc_errmsg());
        if (plan_nhwc) {
            cr_assert_eq(n, 1, "one channels-last config for both uses");
            cr_expect_eq(items[0].config.layout, TRAINCAST__V1__LAYOUT__LAYOUT_NHWC);
            cr_expect_eq(items[0].layers, 3);
        } else {
            cr_assert_eq(n, 2, "the layouts are two configs");
            int nhwc = 0;
            for (size_t i = 0; i < n; i++) {
                bool cl = items[i].config.layout == TRAINCAST__V1__LAYOUT__LAYOUT_NHWC;
                nhwc += cl;
                cr_expect_eq(items[i].layers, cl ? 1u : 2u);
            }
            cr_expect_eq(nhwc, 1);
        }
        free(items);
        tc_planner_destroy(&p);
    }
}

Test(planner, dedups_across_models_and_skips_bwd_data_of_first_layers, .timeout = 10)
{
    /* Model A: stem (first layer), 3 identical 3x3 blocks, a 1x1 downsample.
     * Model B: the same 3x3 config twice, and the stem config used as an
     * inner layer (so it needs bwd_data after all), plus a depthwise conv. */
    tc_conv_usage_t a[] = {s_use(3, 32, 16, 3, 1, 1, 1, 1, true),
                           s_use(16, 32, 16, 3, 1, 1, 1, 3, false),
                           s_use(16, 32, 32, 1, 0, 2, 1, 1, false)};
    tc_conv_usage_t b[] = {s_use(16, 32, 16, 3, 1, 1, 1, 2, false),
                           s_use(3, 32, 16, 3, 1, 1, 1, 1, false),
                           s_use(16, 32, 16, 3, 1, 1, 16, 1, false)};
    tc_planner_t *p = tc_planner_new();
    cr_assert_not_null(p);
    cr_assert_eq(tc_planner_add(p, a, 3), 0);
    cr_assert_eq(tc_planner_add(p, b, 3), 0);
    unsigned long batches[] = {8, 16};
    tc_bench_item_t *items = NULL;
    size_t n = 0;
    tc_plan_stats_t st;
    cr_assert_eq(tc_planner_build(p, batches, 2, TRAINCAST__V1__DTYPE__DTYPE_BF16,
                                  TRAINCAST__V1__LAYOUT__LAYOUT_NHWC, s_all, 3, &items, &n, &st),
                 0, "%s", tc_errmsg());
    cr_expect_eq(st.models, 2);
    cr_expect_eq(st.conv_layers, 9);
    cr_expect_eq(st.unique_configs, 4);
    /* 4 configs x 3 directions x 2 batches; every config has an inner use. */
    cr_expect_eq(st.items, 24);
    cr_expect_eq(n, 24);
    /* passes: 9 layers x 3 minus the one first layer's bwd_data, x 2 batches */
    cr_expect_eq(st.layer_passes, (9 * 3 - 1) * 2);
    for (size_t i = 0; i < n; i++) {
        cr_expect(items[i].config.n == 8 || items[i].config.n == 16);
        cr_expect_eq(items[i].config.dtype, TRAINCAST__V1__DTYPE__DTYPE_BF16);
        cr_expect_eq(items[i].config.layout, TRAINCAST__V1__LAYOUT__LAYOUT_NHWC);
        if (i)
            cr_expect_leq(items[i - 1].config.n, items[i].config.n, "ordered by batch");
        if (items[i].config.c == 16 && items[i].config.r == 3 && items[i].config.groups == 1)
            cr_expect_eq(items[i].layers, 5, "the shared 3x3 config stands for 5 layers");
        if (items[i].config.c == 3 && items[i].direction == BWD_DATA)
            cr_expect_eq(items[i].layers, 1, "only model B's use needs bwd_data");
        if (items[i].config.c == 3 && items[i].direction == FWD)
            cr_expect_eq(items[i].layers, 2);
    }
    free(items);
    tc_planner_destroy(&p);
    cr_expect_null(p);
}

Test(planner, first_layer_only_configs_get_no_bwd_data, .timeout = 10)
{
    tc_conv_usage_t a[] = {s_use(3, 64, 8, 7, 3, 2, 1, 1, true),
                           s_use(8, 16, 8, 3, 1, 1, 1, 2, false)};
    tc_planner_t *p = tc_planner_new();
    cr_assert_eq(tc_planner_add(p, a, 2), 0);
    cr_assert_eq(tc_planner_add(p, a, 2), 0); /* the same model twice dedups fully */
    unsigned long batches[] = {4};
    tc_bench_item_t *items = NULL;
    size_t n = 0;
    tc_plan_stats_t st;
    cr_assert_eq(tc_planner_build(p, batches, 1, TRAINCAST__V1__DTYPE__DTYPE_FP32,
                                  TRAINCAST__V1__LAYOUT__LAYOUT_NCHW, s_all, 3, &items, &n, &st),
                 0);
    cr_expect_eq(n, 5, "stem: fwd + bwd_filter; 3x3: all three");
    for (size_t i = 0; i < n; i++)
        cr_expect(!(items[i].config.c == 3 && items[i].direction == BWD_DATA));
    cr_expect_eq(st.layer_passes, 2 * (2 + 2 * 3));
    free(items);

    /* Only forward: one item per config. */
    Traincast__V1__Direction fwd[] = {FWD};
    cr_assert_eq(tc_planner_build(p, batches, 1, TRAINCAST__V1__DTYPE__DTYPE_FP32,
                                  TRAINCAST__V1__LAYOUT__LAYOUT_NCHW, fwd, 1, &items, &n, &st),
                 0);
    cr_expect_eq(n, 2);
    cr_expect_eq(st.layer_passes, 6);
    free(items);
    tc_planner_destroy(&p);
}

Test(planner, rejects_bad_input, .timeout = 10)
{
    tc_conv_usage_t bad[] = {s_use(6, 8, 4, 3, 1, 1, 4, 1, false)}; /* groups 4 do not divide 6 */
    tc_planner_t *p = tc_planner_new();
    cr_expect_eq(tc_planner_add(p, bad, 1), TC_EINVAL);
    tc_conv_usage_t zero[] = {s_use(8, 8, 8, 3, 1, 1, 1, 0, false)};
    cr_expect_eq(tc_planner_add(p, zero, 1), TC_EINVAL);
    tc_conv_usage_t ok[] = {s_use(8, 8, 8, 3, 1, 1, 1, 1, false)};
    cr_assert_eq(tc_planner_add(p, ok, 1), 0);
    unsigned long batches[] = {0};
    tc_bench_item_t *items = NULL;
    size_t n = 0;
    tc_plan_stats_t st;
    cr_expect_eq(tc_planner_build(p, batches, 1, TRAINCAST__V1__DTYPE__DTYPE_FP32,
                                  TRAINCAST__V1__LAYOUT__LAYOUT_NCHW, s_all, 3, &items, &n, &st),
                 TC_EINVAL);
    tc_planner_destroy(&p);
}

/* Append one ConvResults envelope holding `n` results. */
static void s_append(tc_resultfile_t *rf, const char *uuid, Traincast__V1__Policy policy,
                     const tc_conv_config_t *cfgs, const Traincast__V1__Direction *dirs, size_t n)
{
    Traincast__V1__Device dev = TRAINCAST__V1__DEVICE__INIT;
    dev.kind = TRAINCAST__V1__DEVICE_KIND__DEVICE_KIND_CPU;
    dev.name = "test cpu (1 thread)";
    dev.uuid = (char *)uuid;
    dev.threads = 1;
    Traincast__V1__ConvResult rs[8], *rp[8];
    Traincast__V1__ConvConfig cc[8];
    double sample = 1.0;
    int64_t off = 0;
    for (size_t i = 0; i < n; i++) {
        traincast__v1__conv_result__init(&rs[i]);
        traincast__v1__conv_config__init(&cc[i]);
        tc_conv_config_to_proto(&cfgs[i], &cc[i]);
        rs[i].config = &cc[i];
        rs[i].direction = dirs[i];
        rs[i].policy = policy;
        rs[i].algo = "test";
        rs[i].median_ms = rs[i].min_ms = rs[i].max_ms = 1.0;
        rs[i].repetitions = 1;
        rs[i].n_samples_ms = rs[i].n_sample_offsets_us = 1;
        rs[i].samples_ms = &sample;
        rs[i].sample_offsets_us = &off;
        rp[i] = &rs[i];
    }
    Traincast__V1__ConvResults cr = TRAINCAST__V1__CONV_RESULTS__INIT;
    cr.device = &dev;
    cr.backend = "onednn";
    cr.results = rp;
    cr.n_results = n;
    tc_envelope_t env = TRAINCAST__V1__ENVELOPE__INIT;
    env.body_case = TRAINCAST__V1__ENVELOPE__BODY_CONV_RESULTS;
    env.conv_results = &cr;
    char id[TC_MSGID_LEN + 1];
    tc_envelope_stamp(&env, "test-agent", id);
    cr_assert_eq(tc_resultfile_append(rf, &env), 0, "%s", tc_errmsg());
}

Test(planner, resume_skips_items_of_this_device_and_policy_only, .timeout = 10)
{
    char path[64];
    tc_test_temp_file("resume", NULL, 0, path, sizeof path);

    tc_conv_usage_t a[] = {s_use(3, 16, 8, 3, 1, 1, 1, 1, true),
                           s_use(8, 16, 8, 3, 1, 1, 1, 1, false)};
    tc_planner_t *p = tc_planner_new();
    cr_assert_eq(tc_planner_add(p, a, 2), 0);
    unsigned long batches[] = {2, 4};
    tc_bench_item_t *items = NULL;
    size_t n = 0;
    tc_plan_stats_t st;
    cr_assert_eq(tc_planner_build(p, batches, 2, TRAINCAST__V1__DTYPE__DTYPE_FP32,
                                  TRAINCAST__V1__LAYOUT__LAYOUT_NCHW, s_all, 3, &items, &n, &st),
                 0);
    cr_assert_eq(n, 10);

    /* Missing file: nothing done. */
    tc_resume_t *r = NULL;
    cr_assert_eq(tc_resume_load(path, "cpu-A", HEUR, &r), 0, "%s", tc_errmsg());
    cr_expect_eq(tc_resume_count(r), 0);
    tc_resume_destroy(&r);

    tc_resultfile_t *rf = NULL;
    cr_assert_eq(tc_resultfile_open_append(path, &rf), 0);
    tc_conv_config_t c3[3] = {items[0].config, items[1].config, items[2].config};
    Traincast__V1__Direction d3[3] = {items[0].direction, items[1].direction, items[2].direction};
    s_append(rf, "cpu-A", HEUR, c3, d3, 2);         /* items 0 and 1 done for A/heuristic */
    s_append(rf, "cpu-B", HEUR, &c3[2], &d3[2], 1); /* another device */
    s_append(rf, "cpu-A", EXH, &c3[2], &d3[2], 1);  /* another policy */
    tc_conv_config_t other = items[3].config;
    other.dtype = TRAINCAST__V1__DTYPE__DTYPE_BF16;  /* another dtype */
    s_append(rf, "cpu-A", HEUR, &other, &items[3].direction, 1);
    s_append(rf, "cpu-A", HEUR, &items[9].config, &items[9].direction, 1);
    tc_resultfile_close(&rf);
    /* A crash mid-write leaves a truncated record: it is ignored. */
    FILE *f = fopen(path, "ab");
    cr_assert_not_null(f);
    fwrite("\x40\x00\x00\x00\x0a\x01", 1, 6, f);
    fclose(f);

    cr_assert_eq(tc_resume_load(path, "cpu-A", HEUR, &r), 0, "%s", tc_errmsg());
    cr_expect_eq(tc_resume_count(r), 4);
    cr_expect(tc_resume_done(r, &items[0].config, items[0].direction));
    cr_expect(tc_resume_done(r, &items[1].config, items[1].direction));
    cr_expect_not(tc_resume_done(r, &items[2].config, items[2].direction));
    cr_expect_not(tc_resume_done(r, &items[0].config, BWD_DATA), "direction is part of the key");
    size_t before = n;
    tc_bench_item_t first_kept = items[2];
    size_t dropped = tc_resume_filter(r, items, &n);
    cr_expect_eq(dropped, 3);
    cr_expect_eq(n, before - 3);
    cr_expect_eq(tc_conv_config_cmp(&items[0].config, &first_kept.config), 0);
    cr_expect_eq(items[0].direction, first_kept.direction);
    tc_resume_destroy(&r);
    free(items);
    tc_planner_destroy(&p);
    unlink(path);
}

typedef struct {
    size_t models, layers, nhwc_layers;
    char names[4][64];
} seen_t;

static int s_seen(const char *model, const tc_conv_usage_t *convs, size_t n, void *arg)
{
    seen_t *s = arg;
    if (s->models < 4)
        snprintf(s->names[s->models], sizeof s->names[0], "%s", model);
    s->models++;
    for (size_t i = 0; i < n; i++) {
        s->layers += convs[i].multiplicity;
        if (convs[i].config.layout == TRAINCAST__V1__LAYOUT__LAYOUT_NHWC)
            s->nhwc_layers += convs[i].multiplicity;
    }
    return 0;
}

Test(convlist, reads_models_and_rejects_bad_lines, .timeout = 10)
{
    char path[64];
    tc_test_temp_file("convlist", "", 0, path, sizeof path);
    tc_test_write_file(path, "# test list\n"
                             "3 32 32 16 3 3 1 1 1 1 1 1 1 1 1\n"
                             "\n"
                             "model second\n"
                             "  16 32 32 16 3 3 1 1 1 1 1 1 16 4 0   # depthwise\n"
                             "16 16 16 32 1 1 0 0 2 2 1 1 1 2 0\n"
                             "16 16 16 16 7 7 3 3 1 1 1 1 16 3 0 1 nhwc # channels-last input\n"
                             "16 16 16 16 2 2 0 0 2 2 1 1 1 1 0 nchw\n");
    seen_t s = {0};
    cr_assert_eq(tc_convlist_read(path, s_seen, &s), 0, "%s", tc_errmsg());
    cr_expect_eq(s.models, 2);
    cr_expect_eq(s.layers, 11);
    cr_expect_eq(s.nhwc_layers, 3);
    cr_expect_str_eq(s.names[1], "second");
    cr_expect(strstr(path, s.names[0]) != NULL, "the first model is named after the file");

    tc_test_write_file(path, "3 32 32 16 3 3 1 1 1 1 1 1 1 1\n");
    cr_expect_eq(tc_convlist_read(path, s_seen, &s), TC_EPARSE);
    cr_expect(strstr(tc_errmsg(), ":1:") != NULL, "names the line: %s", tc_errmsg());
    tc_test_write_file(path, "model a\n6 8 8 4 3 3 1 1 1 1 1 1 4 1 0\n");
    cr_expect_eq(tc_convlist_read(path, s_seen, &s), TC_EPARSE, "groups must divide c");
    cr_expect(strstr(tc_errmsg(), ":2") != NULL, "%s", tc_errmsg());
    tc_test_write_file(path, "3 32 32 16 3 3 1 1 1 1 1 1 1 1 2\n");
    cr_expect_eq(tc_convlist_read(path, s_seen, &s), TC_EPARSE);
    tc_test_write_file(path, "3 32 32 16 3 3 1 1 1 1 1 1 1 1 1 extra\n");
    cr_expect_eq(tc_convlist_read(path, s_seen, &s), TC_EPARSE);
    cr_expect(strstr(tc_errmsg(), "layout") != NULL, "names the layout: %s", tc_errmsg());
    tc_test_write_file(path, "3 32 32 16 3 3 1 1 1 1 1 1 1 1 1 nhwc 7\n");
    cr_expect_eq(tc_convlist_read(path, s_seen, &s), TC_EPARSE, "the layout comes last");
    unlink(path);
    cr_expect_eq(tc_convlist_read(path, s_seen, &s), TC_ENOTFOUND);
}

static int s_plan_add(const char *model, const tc_conv_usage_t *convs, size_t n, void *arg)
{
    return tc_planner_add(arg, convs, n);
}

static int s_plan_add_matmuls(const char *model, const tc_matmul_usage_t *mms, size_t n,
                              void *arg)
{
    return tc_planner_add_matmuls(arg, mms, n);
}

typedef struct {
    char model[3][64];
    tc_matmul_usage_t mm[4];
    size_t n_models, n;
} seen_mm_t;

static int s_seen_mm(const char *model, const tc_matmul_usage_t *mms, size_t n, void *arg)
{
    seen_mm_t *s = arg;
    snprintf(s->model[s->n_models++ % 3], sizeof s->model[0], "%s", model);
    for (size_t i = 0; i < n && s->n < 4; i++)
        s->mm[s->n++] = mms[i];
    return 0;
}

static int s_no_convs(const char *model, const tc_conv_usage_t *convs, size_t n, void *arg)
{
    return 0;
}

/* A list's matmul lines: each a matmul class of its model (a model may have
 * matmuls alone), planned with the directions its gradients ask for; a bad
 * line names itself, and a reader of convs alone refuses matmuls. */
Test(convlist, reads_matmul_lines, .timeout = 10)
{
    char path[64];
    tc_test_temp_file("oplist", "", 0, path, sizeof path);
    const char list[] =
        "model vit\n"
        "3 32 32 16 3 3 1 1 1 1 1 1 1 1 1\n"
        "# matmul minibatch_in batch m n k trans_a trans_b weight bias count grad_a grad_b\n"
        "matmul rows 1 50 2304 768 0 1 1 1 12 1 1\n"
        "  matmul batch 12 50 50 64 0 1 0 0 12 1 1 # attention scores\n"
        "model head_only\n"
        "matmul rows 1 1 10 768 0 1 1 1 1 0 1\n";
    tc_test_write_file(path, list);
    seen_mm_t s = {0};
    cr_assert_eq(tc_oplist_read(path, s_no_convs, s_seen_mm, &s), 0, "%s", tc_errmsg());
    cr_expect_eq(s.n_models, 2);
    cr_expect_str_eq(s.model[0], "vit");
    cr_expect_str_eq(s.model[1], "head_only");
    cr_assert_eq(s.n, 3);
    cr_expect_eq(s.mm[0].config.minibatch_in, TC_MM_MB_ROWS);
    cr_expect(s.mm[0].config.trans_b && s.mm[0].config.weight && s.mm[0].config.bias);
    cr_expect(!s.mm[0].config.trans_a);
    cr_expect_eq(s.mm[0].config.n, 2304);
    cr_expect_eq(s.mm[0].config.k, 768);
    cr_expect_eq(s.mm[0].use.multiplicity, 12);
    cr_expect_eq(s.mm[1].config.minibatch_in, TC_MM_MB_BATCH);
    cr_expect_eq(s.mm[1].config.batch, 12);
    cr_expect(!s.mm[1].config.weight && s.mm[1].use.grad_a && s.mm[1].use.grad_b);
    cr_expect(!s.mm[2].use.grad_a && s.mm[2].use.grad_b);

    /* Planned: the conv reads the input (fwd, bwd_filter); the two vit
     * matmuls run all three directions, the head no input gradient. */
    tc_planner_t *p = tc_planner_new();
    tc_planner_set_matmuls(p, true);
    cr_assert_eq(tc_oplist_read(path, s_plan_add, s_plan_add_matmuls, p), 0, "%s", tc_errmsg());
    unsigned long batch = 4;
    tc_bench_item_t *items = NULL;
    size_t n = 0;
    tc_plan_stats_t st;
    cr_assert_eq(tc_planner_build(p, &batch, 1, TRAINCAST__V1__DTYPE__DTYPE_FP32,
                                  TRAINCAST__V1__LAYOUT__LAYOUT_NCHW, s_all, 3, &items, &n, &st),
                 0);
    cr_expect_eq(st.models, 2);
    cr_expect_eq(st.matmul_configs, 3);
    cr_expect_eq(st.matmul_items, 8);
    cr_expect_eq(n, 2 + 8);
    free(items);
    tc_planner_destroy(&p);

    const struct {
        const char *line, *says;
    } bad[] = {
        {"matmul cols 1 50 64 32 0 1 1 0 1 0 1\n", "none, rows or batch"},
        {"matmul rows 1 50 64 32 0 1 1 0 1 0\n", "11 numbers"},
        {"matmul rows 1 50 64 32 0 1 1 0 1 0 1 2\n", "11 numbers"},
        {"matmul rows 1 50 64 32 2 1 1 0 1 0 1\n", "0 or 1"},
        {"matmul rows 1 50 64 32 0 1 1 0 0 0 1\n", "count"},
        {"matmul rows 1 50 64 32 0 1 1 0 1 0 0\n", "grad_b 1"},
        {"matmul rows 2 50 64 32 0 1 1 1 1 0 1\n", "bias"},
        {"matmul rows 1 0 64 32 0 1 1 0 1 0 1\n", "> 0"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        tc_test_write_file(path, bad[i].line);
        cr_expect_eq(tc_oplist_read(path, s_no_convs, s_seen_mm, &s), TC_EPARSE, "%s",
                     bad[i].line);
        cr_expect(strstr(tc_errmsg(), ":1:") != NULL, "names the line: %s", tc_errmsg());
        cr_expect(strstr(tc_errmsg(), bad[i].says) != NULL, "%s: %s", bad[i].line, tc_errmsg());
    }
    tc_test_write_file(path, "matmul rows 1 50 64 32 0 1 1 0 1 0 1\n");
    seen_t c = {0};
    cr_expect_eq(tc_convlist_read(path, s_seen, &c), TC_EPARSE);
    cr_expect(strstr(tc_errmsg(), "only convs") != NULL, "%s", tc_errmsg());
    unlink(path);
}

/* The CNN set's conv layers as PyTorch itself reports them (forward hooks,
 * bench/torchvision_convs.py). The expected counts were computed from the
 * same file by that script's independent Python dedup; a layer with a bias
 * is another config than the same shape without one (646 configs, one
 * more than without the bias flag). */
Test(planner, cnn_set_dedup_counts, .timeout = 30)
{
    char path[512];
    snprintf(path, sizeof path, "%s/tests/data/cnn_set.convs", TC_SOURCE_DIR);
    tc_planner_t *p = tc_planner_new();
    cr_assert_eq(tc_convlist_read(path, s_plan_add, p), 0, "%s", tc_errmsg());
    unsigned long batches[] = {8, 16, 32, 64, 128, 256};
    tc_bench_item_t *items = NULL;
    size_t n = 0;
    tc_plan_stats_t st;
    cr_assert_eq(tc_planner_build(p, batches, 6, TRAINCAST__V1__DTYPE__DTYPE_FP32,
                                  TRAINCAST__V1__LAYOUT__LAYOUT_NCHW, s_all, 3, &items, &n, &st),
                 0);
    cr_expect_eq(st.models, 33);
    cr_expect_eq(st.conv_layers, 2148);
    cr_expect_eq(st.unique_configs, 646);
    cr_expect_eq(st.layer_passes, 6411 * 6);
    cr_expect_eq(st.items, 1927 * 6);
    cr_expect_eq(n, st.items);
    free(items);
    tc_planner_destroy(&p);
}

static tc_matmul_usage_t s_mm(unsigned m, unsigned n, unsigned k, bool grad_a, bool grad_b,
                              unsigned mult)
{
    tc_matmul_usage_t u;
    memset(&u, 0, sizeof u);
    u.config = tc_matmul_config_default();
    u.config.m = m, u.config.n = n, u.config.k = k;
    u.config.trans_b = u.config.weight = grad_b;
    u.use.grad_a = grad_a;
    u.use.grad_b = grad_b;
    u.use.multiplicity = mult;
    return u;
}

/* Matmuls are planned beside the convs when the plan asks for them:
 * deduplicated across models, each direction for the layers whose step
 * runs it (the input's gradient only where A needs one), after the convs
 * of each batch. */
Test(planner, matmuls_dedup_and_directions, .timeout = 10)
{
    tc_planner_t *p = tc_planner_new();
    tc_conv_usage_t conv = s_use(16, 8, 16, 3, 1, 1, 1, 1, false);
    /* Model A: a first Linear on the data (no input gradient) and two
     * blocks' Linear; model B: the block Linear again and a product of
     * activations without a weight (both operands need a gradient). */
    tc_matmul_usage_t a[2] = {s_mm(50, 64, 32, false, true, 1), s_mm(50, 64, 64, true, true, 2)};
    tc_matmul_usage_t b[2] = {s_mm(50, 64, 64, true, true, 3), s_mm(50, 50, 64, true, false, 1)};
    b[1].config.minibatch_in = TC_MM_MB_BATCH;
    b[1].use.grad_b = true;
    cr_assert_eq(tc_planner_add(p, &conv, 1), 0);
    cr_assert_eq(tc_planner_add_matmuls(p, a, 2), 0, "%s", tc_errmsg());
    cr_assert_eq(tc_planner_add(p, &conv, 1), 0);
    cr_assert_eq(tc_planner_add_matmuls(p, b, 2), 0, "%s", tc_errmsg());
    unsigned long batches[] = {4, 8};
    tc_bench_item_t *items = NULL;
    size_t n = 0;
    tc_plan_stats_t st;

    /* Not asked for: convs alone, as before. */
    cr_assert_eq(tc_planner_build(p, batches, 2, TRAINCAST__V1__DTYPE__DTYPE_FP32,
                                  TRAINCAST__V1__LAYOUT__LAYOUT_NCHW, s_all, 3, &items, &n, &st),
                 0);
    cr_expect_eq(n, 6);
    cr_expect_eq(st.matmul_items, 0);
    cr_expect_eq(st.matmul_configs, 0);
    for (size_t i = 0; i < n; i++)
        cr_expect_eq(items[i].kind, TC_OP_CONV);
    free(items);

    tc_planner_set_matmuls(p, true);
    cr_assert_eq(tc_planner_build(p, batches, 2, TRAINCAST__V1__DTYPE__DTYPE_FP32,
                                  TRAINCAST__V1__LAYOUT__LAYOUT_NCHW, s_all, 3, &items, &n, &st),
                 0);
    /* Per batch: 3 conv items; the first Linear fwd + bwd_filter, the block
     * Linear and the activation product 3 each: 8 matmul items. */
    cr_expect_eq(st.matmul_configs, 3);
    cr_expect_eq(st.matmul_layers, 7);
    cr_expect_eq(st.matmul_items, 16);
    cr_expect_eq(st.matmul_passes, 2 * (1 * 2 + 5 * 3 + 1 * 3));
    cr_expect_eq(st.unique_configs, 1, "conv configs alone");
    cr_assert_eq(n, 2 * (3 + 8));
    cr_expect_eq(st.items, n);
    for (size_t i = 0; i < n; i++) {
        size_t in_batch = i % 11;
        cr_expect_eq(items[i].kind, in_batch < 3 ? TC_OP_CONV : TC_OP_MATMUL, "item %zu", i);
        if (items[i].kind == TC_OP_CONV) {
            cr_expect_eq(items[i].config.n, batches[i / 11]);
            continue;
        }
        const tc_matmul_config_t *c = &items[i].matmul;
        cr_expect_eq(c->minibatch, batches[i / 11]);
        if (c->k == 32) {
            cr_expect_neq(items[i].direction, BWD_DATA, "the first Linear has no input gradient");
            cr_expect_eq(items[i].layers, 1);
        } else if (c->k == 64 && c->weight) {
            cr_expect_eq(items[i].layers, 5, "2 + 3 layers of two models");
        } else {
            cr_expect_eq(c->minibatch_in, TC_MM_MB_BATCH);
            cr_expect_eq(items[i].layers, 1);
        }
    }
    free(items);

    /* A bad matmul names itself. */
    tc_matmul_usage_t bad = s_mm(0, 64, 64, true, true, 1);
    cr_expect_eq(tc_planner_add_matmuls(p, &bad, 1), TC_EINVAL);
    bad = s_mm(4, 64, 64, true, true, 0);
    cr_expect_eq(tc_planner_add_matmuls(p, &bad, 1), TC_EINVAL);
    cr_expect(strstr(tc_errmsg(), "multiplicity"), "%s", tc_errmsg());
    tc_planner_destroy(&p);
}
