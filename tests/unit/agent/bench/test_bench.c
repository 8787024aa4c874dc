/* The conv runner (policies, candidates, wire form) and bench runs into a
 * result file with resume, on the cpu device with tiny shapes. */
#include "bench_run.h"
#include "conv_bench.h"
#include "planner.h"

#include "tc_error.h"
#include "tc_resultfile.h"
#include "tc_validate.h"
#include "tc_test.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static tc_measure_opts_t s_fast(void)
{
    tc_measure_opts_t o = tc_measure_defaults();
    o.budget_ms = 20;
    o.max_reps = 20;
    return o;
}

static tc_conv_spec_t s_spec(Traincast__V1__Direction d, Traincast__V1__Policy p)
{
    tc_conv_spec_t s = {.config = tc_conv_config_default(), .direction = d, .policy = p, .seed = 7};
    s.config.n = 2, s.config.c = 8, s.config.h = s.config.w = 12, s.config.k = 16;
    s.config.r = s.config.s = 3, s.config.pad_h = s.config.pad_w = 1;
    return s;
}

/* Check the wire form of an outcome with the aggregator's validator. */
static void s_check_proto(tc_device_t *dev, const tc_conv_outcome_t *o)
{
    Traincast__V1__ConvResult *r = NULL;
    cr_assert_eq(tc_conv_outcome_to_proto(o, &r), 0, "%s", tc_errmsg());
    Traincast__V1__Device d = TRAINCAST__V1__DEVICE__INIT;
    cr_assert_eq(tc_device_describe(dev, &d), 0);
    Traincast__V1__ConvResults cr = TRAINCAST__V1__CONV_RESULTS__INIT;
    cr.device = &d;
    cr.backend = "onednn";
    cr.results = &r;
    cr.n_results = 1;
    cr_expect_eq(tc_validate_conv_results(&cr, "conv_results"), 0, "%s", tc_errmsg());
    cr_expect_eq(r->n_candidates, o->n_algos);
    cr_expect_eq(r->repetitions, o->samples.n);
    cr_expect_eq(r->n_samples_ms, o->samples.n);
    cr_expect_str_eq(r->algo, o->algos[o->chosen].info.name);
    cr_expect_eq(r->config->n, 2);
    cr_expect_gt(r->measured_at_us, 0);
    tc_conv_result_proto_free(&r);
    cr_expect_null(r);
}

Test(conv_bench, heuristic_times_the_first_candidate_only, .timeout = 120)
{
    tc_device_t *dev = NULL;
    cr_assert_eq(tc_device_open("cpu", 1, &dev), 0, "%s", tc_errmsg());
    tc_measure_opts_t mo = s_fast();
    for (int d = 1; d <= 3; d++) {
        tc_conv_spec_t spec = s_spec((Traincast__V1__Direction)d, TRAINCAST__V1__POLICY__POLICY_HEURISTIC);
        tc_conv_outcome_t o;
        cr_assert_eq(tc_conv_bench(dev, &spec, &mo, &o), 0, "%s", tc_errmsg());
        cr_expect_eq(o.chosen, 0, "oneDNN's first implementation is PyTorch's");
        cr_expect(o.algos[0].timed);
        for (size_t i = 1; i < o.n_algos; i++) {
            cr_expect_not(o.algos[i].timed, "%s was timed", o.algos[i].info.name);
            cr_expect(o.algos[i].info.status == TRAINCAST__V1__ALGO_STATUS__ALGO_STATUS_SKIPPED ||
                      o.algos[i].info.status == TRAINCAST__V1__ALGO_STATUS__ALGO_STATUS_NOT_SUPPORTED);
        }
        cr_expect_geq(o.samples.n, mo.min_reps);
        cr_expect_leq(o.samples.n, mo.max_reps);
        cr_expect_gt(o.samples.stats.median, 0);
        s_check_proto(dev, &o);
        tc_conv_outcome_free(&o);
    }
    tc_device_close(&dev);
}

Test(conv_bench, exhaustive_times_every_runnable_candidate, .timeout = 120)
{
    tc_device_t *dev = NULL;
    cr_assert_eq(tc_device_open("cpu", 1, &dev), 0, "%s", tc_errmsg());
    tc_measure_opts_t mo = s_fast();
    tc_conv_spec_t spec = s_spec(TRAINCAST__V1__DIRECTION__DIRECTION_FWD,
                                 TRAINCAST__V1__POLICY__POLICY_EXHAUSTIVE);
    tc_conv_outcome_t o;
    cr_assert_eq(tc_conv_bench(dev, &spec, &mo, &o), 0, "%s", tc_errmsg());
    size_t timed = 0;
    for (size_t i = 0; i < o.n_algos; i++) {
        const tc_algo_result_t *a = &o.algos[i];
        if (a->info.status == TRAINCAST__V1__ALGO_STATUS__ALGO_STATUS_OK)
            cr_expect(a->timed, "%s should have been timed", a->info.name);
        timed += a->timed;
    }
    cr_expect_gt(timed, 1, "oneDNN offers several implementations here");
    cr_expect(o.algos[o.chosen].timed);
    s_check_proto(dev, &o);
    tc_conv_outcome_free(&o);
    tc_device_close(&dev);
}

Test(conv_bench, unsupported_requests_fail_clearly, .timeout = 60)
{
    tc_device_t *dev = NULL;
    cr_assert_eq(tc_device_open("cpu", 1, &dev), 0, "%s", tc_errmsg());
    tc_measure_opts_t mo = s_fast();
    tc_conv_spec_t spec = s_spec(TRAINCAST__V1__DIRECTION__DIRECTION_FWD,
                                 TRAINCAST__V1__POLICY__POLICY_HEURISTIC);
    spec.config.dtype = TRAINCAST__V1__DTYPE__DTYPE_FP16;
    tc_conv_outcome_t o;
    cr_expect_eq(tc_conv_bench(dev, &spec, &mo, &o), TC_EUNSUPPORTED);
    cr_expect(strstr(tc_errmsg(), "fp16"), "%s", tc_errmsg());
    spec = s_spec(TRAINCAST__V1__DIRECTION__DIRECTION_FWD, TRAINCAST__V1__POLICY__POLICY_HEURISTIC);
    spec.config.n = 0;
    cr_expect_eq(tc_conv_bench(dev, &spec, &mo, &o), TC_EINVAL);
    spec.config.n = 1;
    spec.config.r = 30; /* does not fit 12 + 2 */
    cr_expect_eq(tc_conv_bench(dev, &spec, &mo, &o), TC_EINVAL);
    tc_device_close(&dev);
}

typedef struct {
    size_t envelopes, results;
    int bad;
} count_t;

static int s_count(const tc_envelope_t *env, void *arg)
{
    count_t *c = arg;
    c->envelopes++;
    if (tc_validate_envelope(env) < 0)
        c->bad++;
    if (env->body_case == TRAINCAST__V1__ENVELOPE__BODY_CONV_RESULTS)
        c->results += env->conv_results->n_results;
    return 0;
}

Test(bench_run, writes_results_and_resumes, .timeout = 300)
{
    char path[64];
    tc_test_temp_file("bench", NULL, 0, path, sizeof path);
    tc_conv_usage_t u[2];
    memset(u, 0, sizeof u);
    u[0].config = s_spec(1, 1).config;
    u[0].config.n = 0;
    u[0].config.c = 3;
    u[0].multiplicity = 1;
    u[0].first_layer = true;
    u[1].config = s_spec(1, 1).config;
    u[1].config.n = 0;
    u[1].multiplicity = 2;
    tc_planner_t *p = tc_planner_new();
    cr_assert_eq(tc_planner_add(p, u, 2), 0);
    const Traincast__V1__Direction all[3] = {1, 2, 3};
    unsigned long batches[] = {1, 2};
    tc_bench_item_t *items = NULL;
    size_t n = 0;
    tc_plan_stats_t st;
    cr_assert_eq(tc_planner_build(p, batches, 1, TRAINCAST__V1__DTYPE__DTYPE_FP32,
                                  TRAINCAST__V1__LAYOUT__LAYOUT_NCHW, all, 3, &items, &n, &st),
                 0);
    cr_assert_eq(n, 5);

    tc_device_t *dev = NULL;
    cr_assert_eq(tc_device_open("cpu", 1, &dev), 0, "%s", tc_errmsg());
    Traincast__V1__Device d = TRAINCAST__V1__DEVICE__INIT;
    cr_assert_eq(tc_device_describe(dev, &d), 0);
    tc_bench_run_opts_t ro = {.policy = TRAINCAST__V1__POLICY__POLICY_HEURISTIC,
                              .measure = s_fast(),
                              .seed = 1,
                              .agent_id = "test-agent"};
    tc_bench_report_t rep;
    cr_assert_eq(tc_bench_run(dev, items, n, &ro, path, &rep), 0, "%s", tc_errmsg());
    cr_expect_eq(rep.measured, 5);
    cr_expect_eq(rep.failed, 0);
    count_t c = {0};
    cr_assert_eq(tc_resultfile_read(path, false, s_count, &c, NULL), 0);
    cr_expect(c.envelopes >= 1 && c.envelopes <= 5, "%zu envelopes", (size_t)c.envelopes);
    cr_expect_eq(c.results, 5, "every result once, several to a message");
    cr_expect_eq(c.bad, 0, "every envelope validates");
    free(items);

    /* A second run with one more batch size measures only the new items. */
    cr_assert_eq(tc_planner_build(p, batches, 2, TRAINCAST__V1__DTYPE__DTYPE_FP32,
                                  TRAINCAST__V1__LAYOUT__LAYOUT_NCHW, all, 3, &items, &n, &st),
                 0);
    cr_assert_eq(n, 10);
    tc_resume_t *r = NULL;
    cr_assert_eq(tc_resume_load(path, d.uuid, ro.policy, &r), 0, "%s", tc_errmsg());
    cr_expect_eq(tc_resume_filter(r, items, &n), 5);
    cr_expect_eq(n, 5);
    for (size_t i = 0; i < n; i++)
        cr_expect_eq(items[i].config.n, 2);
    cr_assert_eq(tc_bench_run(dev, items, n, &ro, path, &rep), 0, "%s", tc_errmsg());
    tc_resume_destroy(&r);
    free(items);
    cr_assert_eq(tc_planner_build(p, batches, 2, TRAINCAST__V1__DTYPE__DTYPE_FP32,
                                  TRAINCAST__V1__LAYOUT__LAYOUT_NCHW, all, 3, &items, &n, &st),
                 0);
    cr_assert_eq(tc_resume_load(path, d.uuid, ro.policy, &r), 0);
    cr_expect_eq(tc_resume_filter(r, items, &n), 10);
    cr_expect_eq(n, 0, "everything is done");
    tc_resume_destroy(&r);
    /* Another policy on the same device has nothing yet. */
    cr_assert_eq(tc_resume_load(path, d.uuid, TRAINCAST__V1__POLICY__POLICY_EXHAUSTIVE, &r), 0);
    cr_expect_eq(tc_resume_count(r), 0);
    tc_resume_destroy(&r);
    free(items);
    tc_device_close(&dev);
    tc_planner_destroy(&p);
    unlink(path);
}

typedef struct {
    size_t convs, matmuls;
    int bad, mixed;
} kinds_t;

static int s_kinds(const tc_envelope_t *env, void *arg)
{
    kinds_t *k = arg;
    if (tc_validate_envelope(env) < 0)
        k->bad++;
    if (env->body_case != TRAINCAST__V1__ENVELOPE__BODY_CONV_RESULTS)
        return 0;
    const Traincast__V1__ConvResults *cr = env->conv_results;
    k->convs += cr->n_results;
    k->matmuls += cr->n_matmul_results;
    k->mixed += cr->n_results && cr->n_matmul_results;
    for (size_t i = 0; i < cr->n_results; i++)
        cr_expect(cr->results[i]->config && !cr->results[i]->matmul);
    for (size_t i = 0; i < cr->n_matmul_results; i++) {
        const Traincast__V1__ConvResult *r = cr->matmul_results[i];
        cr_expect(r->matmul && !r->config);
        cr_expect_eq(r->matmul->minibatch, 2);
        cr_expect_eq(r->matmul->m, 10);
        cr_expect_eq(r->matmul->n, 24);
        cr_expect_eq(r->matmul->k, 16);
        cr_expect(r->matmul->trans_b && r->matmul->weight && r->matmul->bias);
        cr_expect_str_eq(r->algo, "addmm");
        cr_expect(!strcmp(r->route, "blas") || !strcmp(r->route, "naive"), "%s", r->route);
        cr_expect_gt(r->median_ms, 0);
        cr_expect_eq(r->n_samples_ms, r->repetitions);
    }
    return 0;
}

/* A plan of convs and matmuls runs on the cpu into one result file: the
 * matmuls in matmul_results with their keys, in envelopes apart from the
 * convs', and resume finds every item done. */
Test(bench_run, convs_and_matmuls_into_one_file, .timeout = 300)
{
    char path[64];
    tc_test_temp_file("bench_mm", NULL, 0, path, sizeof path);
    tc_conv_usage_t u;
    memset(&u, 0, sizeof u);
    u.config = s_spec(1, 1).config;
    u.config.n = 0;
    u.multiplicity = 1;
    tc_matmul_usage_t mm;
    memset(&mm, 0, sizeof mm);
    mm.config = tc_matmul_config_default();
    mm.config.m = 10, mm.config.n = 24, mm.config.k = 16;
    mm.config.trans_b = mm.config.weight = mm.config.bias = true;
    mm.use = (tc_matmul_use_t){.grad_a = true, .grad_b = true, .multiplicity = 2};
    tc_planner_t *p = tc_planner_new();
    cr_assert_eq(tc_planner_add(p, &u, 1), 0);
    cr_assert_eq(tc_planner_add_matmuls(p, &mm, 1), 0);
    tc_planner_set_matmuls(p, true);
    const Traincast__V1__Direction all[3] = {1, 2, 3};
    unsigned long batches[] = {2};
    tc_bench_item_t *items = NULL;
    size_t n = 0;
    tc_plan_stats_t st;
    cr_assert_eq(tc_planner_build(p, batches, 1, TRAINCAST__V1__DTYPE__DTYPE_FP32,
                                  TRAINCAST__V1__LAYOUT__LAYOUT_NCHW, all, 3, &items, &n, &st),
                 0);
    cr_assert_eq(n, 6);
    cr_assert_eq(st.matmul_items, 3);

    tc_device_t *dev = NULL;
    cr_assert_eq(tc_device_open("cpu", 1, &dev), 0, "%s", tc_errmsg());
    Traincast__V1__Device d = TRAINCAST__V1__DEVICE__INIT;
    cr_assert_eq(tc_device_describe(dev, &d), 0);
    tc_bench_run_opts_t ro = {.policy = TRAINCAST__V1__POLICY__POLICY_HEURISTIC,
                              .measure = s_fast(),
                              .seed = 1,
                              .agent_id = "test-agent"};
    tc_bench_report_t rep;
    cr_assert_eq(tc_bench_run(dev, items, n, &ro, path, &rep), 0, "%s", tc_errmsg());
    cr_expect_eq(rep.measured, 6);
    cr_expect_eq(rep.failed, 0);
    kinds_t k = {0};
    cr_assert_eq(tc_resultfile_read(path, false, s_kinds, &k, NULL), 0);
    cr_expect_eq(k.convs, 3);
    cr_expect_eq(k.matmuls, 3);
    cr_expect_eq(k.bad, 0, "every envelope validates");
    cr_expect_eq(k.mixed, 0, "convs and matmuls in envelopes of their own");

    /* Resume knows both kinds apart: all done; a matmul of another
     * mini-batch is not. */
    tc_resume_t *r = NULL;
    cr_assert_eq(tc_resume_load(path, d.uuid, ro.policy, &r), 0, "%s", tc_errmsg());
    cr_expect_eq(tc_resume_count(r), 6);
    tc_matmul_config_t other = items[5].matmul;
    cr_expect(tc_resume_matmul_done(r, &other, items[5].direction));
    other.minibatch = 4;
    cr_expect(!tc_resume_matmul_done(r, &other, items[5].direction));
    cr_expect_eq(tc_resume_filter(r, items, &n), 6);
    cr_expect_eq(n, 0);
    tc_resume_destroy(&r);
    free(items);
    tc_device_close(&dev);
    tc_planner_destroy(&p);
    unlink(path);
}
