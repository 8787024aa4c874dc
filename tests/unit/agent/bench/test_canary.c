/* The host-phase canary (canary.h) and how the measurement loop uses it,
 * on a device whose canary reads a scripted sequence. */
#include "bench_run.h"
#include "canary.h"
#include "measure.h"

#include "tc_error.h"
#include "tc_resultfile.h"
#include "tc_validate.h"
#include "tc_test.h"

#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct {
    const double *seq; /* readings in order; the last repeats */
    size_t len, calls;
} script_t;

static script_t s_script;

static int s_canary(void *ctx, double *ms)
{
    (void)ctx;
    size_t i = s_script.calls < s_script.len ? s_script.calls : s_script.len - 1;
    s_script.calls++;
    *ms = s_script.seq[i];
    return *ms > 0 ? 0 : tc_fail(TC_ELIB, "synthetic canary failure");
}

static const tc_backend_iface_t s_with = {.kind = "fake", .canary = s_canary};
static const tc_backend_iface_t s_without = {.kind = "fake"};

static void s_play(const double *seq, size_t len)
{
    s_script = (script_t){seq, len, 0};
}

/* The guard on, waits of 0.3 s. */
static tc_quiet_t s_guard(void)
{
    tc_quiet_t q = tc_quiet_defaults();
    q.wait_s = 0.3;
    return q;
}

static int s_one_ms(void *arg, double *ms)
{
    (*(size_t *)arg)++;
    *ms = 1.0;
    return 0;
}

static tc_device_t s_dev = {.iface = &s_with};

/* Measure an operation of 1 ms with a canary that reads `seq`, the load
 * guard itself off (threshold 100), two re-measurements. */
static void s_measure_with(const double *seq, size_t len, tc_canary_t *c, tc_samples_t *s)
{
    tc_quiet_t q = s_guard();
    s_play(seq, len);
    tc_canary_init(c, &s_dev, &q);
    tc_measure_opts_t o = tc_measure_defaults();
    o.quiet.retries = 2;
    o.canary = c;
    size_t calls = 0;
    cr_assert_eq(tc_measure(s_one_ms, &calls, &o, s), 0, "%s", tc_errmsg());
}

Test(canary, off_without_a_guard_a_ratio_or_a_device_canary, .timeout = 10)
{
    const double r[] = {1.0};
    tc_device_t with = {.iface = &s_with}, without = {.iface = &s_without};
    tc_canary_t c;
    tc_quiet_t q = s_guard();

    s_play(r, 1);
    tc_canary_init(&c, &with, &q);
    cr_expect(tc_canary_on(&c));
    cr_expect_eq(s_script.calls, 5, "five readings for a first fastest (got %zu)", s_script.calls);
    cr_expect_float_eq(c.fastest_ms, 1.0, 1e-12);

    unsetenv("TRAINCAST_QUIET_PCT");
    cr_assert_eq(tc_quiet_set_threshold(false, 0, "--quiet-threshold"), 0, "%s", tc_errmsg());
    cr_expect_float_eq(tc_quiet_get().canary_slow, 1.3, 1e-12);
    cr_assert_eq(tc_quiet_set_threshold(true, 100, "--quiet-threshold"), 0, "%s", tc_errmsg());
    cr_expect_float_eq(tc_quiet_get().canary_slow, 0, 1e-12, "the guard off turns it off");
    q = s_guard();
    q.canary_slow = 0;
    tc_canary_init(&c, &with, &q);
    cr_expect_not(tc_canary_on(&c));
    cr_expect_eq(tc_canary_read(&c), 0);
    q = s_guard();
    tc_canary_init(&c, &without, &q);
    cr_expect_not(tc_canary_on(&c), "a device without a canary");
    cr_expect(tc_canary_wait(&c, "test", true), "nothing to wait for");

    const double fails[] = {1.0, 0};
    s_play(fails, 2);
    q = s_guard();
    tc_canary_init(&c, &with, &q);
    cr_expect_not(tc_canary_on(&c), "a canary that fails turns itself off");
}

Test(canary, slow_is_against_the_fastest_reading_so_far, .timeout = 10)
{
    /* The run starts in a slow phase: 2 ms, then 1 ms. */
    const double r[] = {2.0, 2.0, 2.0, 2.0, 2.0, 2.1, 1.0};
    tc_device_t dev = {.iface = &s_with};
    tc_canary_t c;
    tc_quiet_t q = s_guard();
    s_play(r, 7);
    tc_canary_init(&c, &dev, &q);
    double first = tc_canary_read(&c);
    cr_expect_not(tc_canary_slow(&c, first), "2.1 against 2.0");
    cr_expect_float_eq(tc_canary_read(&c), 1.0, 1e-12);
    cr_expect(tc_canary_slow(&c, first), "2.1 against the later 1.0: caught at the end");
    cr_expect_float_eq(tc_canary_ratio(&c, first), 2.1, 1e-12);
    cr_expect_not(tc_canary_slow(&c, 1.29));
    cr_expect(tc_canary_slow(&c, 1.31));
}

Test(canary, a_block_in_a_slow_phase_is_measured_again, .timeout = 10)
{
    /* Five readings of 1 ms; around the first block 1 and 2 (slow); the
     * wait reads 2, then 1; around the second block 1 and 1. */
    const double r[] = {1, 1, 1, 1, 1, 1, 2, 2, 1, 1, 1};
    tc_canary_t c;
    tc_samples_t s;
    s_measure_with(r, 11, &c, &s);
    cr_expect_eq(s.remeasured, 1);
    cr_expect_not(s.disturbed);
    cr_expect_not(s.host_slow);
    cr_expect_float_eq(s.canary_ms, 1.0, 1e-12);
    cr_expect_eq(s_script.calls, 11, "readings: 5 + 2 + 2 + 2 (got %zu)", s_script.calls);
    tc_samples_free(&s);
}

Test(canary, a_phase_that_outlasts_the_wait_leaves_the_block_marked, .timeout = 10)
{
    const double r[] = {1, 1, 1, 1, 1, 2};
    tc_canary_t c;
    tc_samples_t s;
    s_measure_with(r, 6, &c, &s);
    cr_expect_eq(s.remeasured, 0, "the wait ran out: this block is kept");
    cr_expect(s.disturbed);
    cr_expect(s.host_slow);
    cr_expect_float_eq(s.canary_ms, 2.0, 1e-12);
    tc_samples_free(&s);
    /* For a while after, blocks are not held up by waits. */
    size_t before = s_script.calls;
    cr_expect_not(tc_canary_wait(&c, "test", true));
    cr_expect_eq(s_script.calls, before, "held: no reading");
    cr_expect_not(tc_canary_wait(&c, "test", false), "the end of a plan waits anyway");
    cr_expect_gt(s_script.calls, before);
}

Test(canary, the_ratio_from_the_environment, .timeout = 10)
{
    unsetenv("TRAINCAST_QUIET_PCT"); /* the tests run with the guard off */
    setenv("TRAINCAST_CANARY_SLOW", "1.5", 1);
    cr_assert_eq(tc_quiet_set_threshold(false, 0, "--quiet-threshold"), 0, "%s", tc_errmsg());
    cr_expect_float_eq(tc_quiet_get().canary_slow, 1.5, 1e-12);
    setenv("TRAINCAST_CANARY_SLOW", "0", 1);
    cr_assert_eq(tc_quiet_set_threshold(false, 0, "--quiet-threshold"), 0);
    cr_expect_float_eq(tc_quiet_get().canary_slow, 0, 1e-12);
    setenv("TRAINCAST_CANARY_SLOW", "0.9", 1);
    cr_expect_eq(tc_quiet_set_threshold(false, 0, "--quiet-threshold"), TC_EUSAGE);
    cr_expect(strstr(tc_errmsg(), "TRAINCAST_CANARY_SLOW must be a ratio over 1"), "%s",
              tc_errmsg());
    unsetenv("TRAINCAST_CANARY_SLOW");
}

/* What a bench run's results say of the canary, in the order written. */
typedef struct {
    size_t n;
    uint32_t m[8];
    int64_t at_us[8], supersedes_us[8];
    double canary_ms[8];
    bool disturbed[8];
    int bad;
} results_t;

static int s_collect(const tc_envelope_t *env, void *arg)
{
    results_t *x = arg;
    if (tc_validate_envelope(env) < 0)
        x->bad++;
    if (env->body_case != TRAINCAST__V1__ENVELOPE__BODY_CONV_RESULTS)
        return 0;
    for (size_t i = 0; i < env->conv_results->n_matmul_results && x->n < 8; i++, x->n++) {
        const Traincast__V1__ConvResult *r = env->conv_results->matmul_results[i];
        cr_assert(r->load, "every result carries its load and canary reading");
        x->m[x->n] = r->matmul->m;
        x->at_us[x->n] = r->measured_at_us;
        x->supersedes_us[x->n] = r->load->supersedes_us;
        x->canary_ms[x->n] = r->load->canary_ms;
        x->disturbed[x->n] = r->load->disturbed;
    }
    return 0;
}

/* A CPU device whose canary reads the script (s_play). */
static tc_device_t *s_scripted_cpu(tc_backend_iface_t *scripted)
{
    tc_device_t *dev = NULL;
    cr_assert_eq(tc_device_open("cpu", 1, &dev), 0, "%s", tc_errmsg());
    *scripted = *dev->iface;
    scripted->canary = s_canary;
    dev->iface = scripted;
    return dev;
}

/* Four small matmul items, m = 8, 9, 10, 11. */
static void s_four_items(tc_bench_item_t items[4])
{
    memset(items, 0, 4 * sizeof *items);
    for (size_t i = 0; i < 4; i++) {
        items[i].kind = TC_OP_MATMUL;
        items[i].matmul = tc_matmul_config_default();
        items[i].matmul.minibatch = 2;
        items[i].matmul.m = 8 + (uint32_t)i, items[i].matmul.n = 16, items[i].matmul.k = 16;
        items[i].direction = TRAINCAST__V1__DIRECTION__DIRECTION_FWD;
    }
}

/* Short measurements with the canary on and the load guard off. */
static tc_bench_run_opts_t s_canary_opts(void)
{
    tc_bench_run_opts_t ro = {.policy = TRAINCAST__V1__POLICY__POLICY_HEURISTIC,
                              .measure = tc_measure_defaults(),
                              .seed = 1,
                              .agent_id = "test-agent"};
    ro.measure.budget_ms = 5;
    ro.measure.max_reps = 5;
    ro.measure.quiet = s_guard();
    ro.measure.quiet.threshold_pct = 100;
    return ro;
}

static results_t s_results(const char *path)
{
    results_t x = {0};
    cr_assert_eq(tc_resultfile_read(path, false, s_collect, &x, NULL), 0, "%s", tc_errmsg());
    cr_expect_eq(x.bad, 0, "every envelope validates");
    return x;
}

/* A run that starts in a slow phase: its first items read 2 ms against its
 * first fastest of 2 ms (not slow then), the rest 1 ms. At the plan's end
 * the first items are slow against the run's fastest: measured again, and
 * their new results name the ones they supersede (the store then counts
 * those as disturbed: test_load). */
Test(canary, a_plan_measures_its_late_slow_items_again_superseding_them, .timeout = 120)
{
    /* Five readings for a first fastest, two around each of the first two
     * items, then 1 ms for ever after. */
    const double r[] = {2, 2, 2, 2, 2, 2, 2, 2, 2, 1};
    tc_backend_iface_t scripted;
    tc_device_t *dev = s_scripted_cpu(&scripted);
    s_play(r, 10);
    tc_bench_item_t items[4];
    s_four_items(items);
    tc_bench_run_opts_t ro = s_canary_opts();
    char path[64];
    tc_test_temp_file("canary_late", NULL, 0, path, sizeof path);
    tc_bench_report_t rep;
    cr_assert_eq(tc_bench_run(dev, items, 4, &ro, path, &rep), 0, "%s", tc_errmsg());
    results_t x = s_results(path);
    cr_assert_eq(x.n, 6, "four items, the first two again (got %zu results)", x.n);
    for (size_t i = 0; i < 4; i++) {
        cr_expect_eq(x.m[i], 8 + i);
        cr_expect_float_eq(x.canary_ms[i], i < 2 ? 2.0 : 1.0, 1e-12, "item %zu", i);
        cr_expect_eq(x.supersedes_us[i], 0, "item %zu's first result supersedes nothing", i);
    }
    for (size_t i = 4; i < 6; i++) {
        cr_expect_eq(x.m[i], 8 + (i - 4), "the late items, in plan order");
        cr_expect_float_eq(x.canary_ms[i], 1.0, 1e-12);
        cr_expect_eq(x.supersedes_us[i], x.at_us[i - 4], "result %zu names the first one", i);
        cr_expect_gt(x.at_us[i], x.at_us[i - 4]);
    }
    unlink(path);
    tc_device_close(&dev);
}

/* The items a resumed run holds (tc_resume_held) from its result file. */
static size_t s_held(tc_device_t *dev, const char *path, tc_bench_item_t *items, size_t *n,
                     tc_bench_held_t **held)
{
    Traincast__V1__Device d = TRAINCAST__V1__DEVICE__INIT;
    cr_assert_eq(tc_device_describe(dev, &d), 0, "%s", tc_errmsg());
    tc_resume_t *r = NULL;
    cr_assert_eq(tc_resume_load(path, d.uuid, TRAINCAST__V1__POLICY__POLICY_HEURISTIC, &r), 0,
                 "%s", tc_errmsg());
    size_t n_held = 0;
    cr_assert_eq(tc_resume_held(r, items, *n, held, &n_held), 0, "%s", tc_errmsg());
    tc_resume_filter(r, items, n);
    tc_resume_destroy(&r);
    return n_held;
}

/* A four-item plan on a scripted CPU device, its result file, and the
 * options of its runs. */
typedef struct {
    tc_backend_iface_t scripted;
    tc_device_t *dev;
    tc_bench_item_t plan[4];
    tc_bench_run_opts_t ro;
    char path[64];
} s_plan_t;

static void s_plan_open(s_plan_t *p)
{
    p->dev = s_scripted_cpu(&p->scripted);
    s_four_items(p->plan);
    p->ro = s_canary_opts();
    tc_test_temp_file("canary_plan", NULL, 0, p->path, sizeof p->path);
}

static void s_plan_close(s_plan_t *p)
{
    unlink(p->path);
    tc_device_close(&p->dev);
}

/* A run of the plan cut off after its first two items, while the canary
 * read `seq` (ms, s_play's last value repeating). */
static void s_cut_run(s_plan_t *p, const double *seq)
{
    s_play(seq, 1);
    tc_bench_report_t rep;
    cr_assert_eq(tc_bench_run(p->dev, p->plan, 2, &p->ro, p->path, &rep), 0, "%s",
                 tc_errmsg());
}

/* A run resuming the plan (the items done skipped, the held ones checked at
 * the end) while the canary reads `seq`; *n: the items it had left to
 * measure, *n_held: those it held. */
static void s_resume_run(s_plan_t *p, const double *seq, size_t *n, size_t *n_held)
{
    tc_bench_item_t items[4];
    memcpy(items, p->plan, sizeof items);
    *n = 4;
    tc_bench_held_t *held = NULL;
    tc_bench_run_opts_t ro = p->ro;
    ro.n_held = *n_held = s_held(p->dev, p->path, items, n, &held);
    ro.held = held;
    s_play(seq, 1);
    tc_bench_report_t rep;
    cr_assert_eq(tc_bench_run(p->dev, items, *n, &ro, p->path, &rep), 0, "%s", tc_errmsg());
    free(held);
}

static const double s_slow[] = {2}, s_fast[] = {1};

/* A run cut off before its plan's end: its first two items, all in a slow
 * phase, so that neither is slow against that run's own fastest. The run
 * that resumes the plan measures the other two in a fast phase and checks
 * the held two at its end against its fastest: measured again, superseding
 * the cut run's results. A third run has nothing to measure and measures
 * nothing again: those two are settled, and the other two were fast. */
Test(canary, a_resumed_plan_checks_the_items_of_the_run_it_resumes, .timeout = 120)
{
    s_plan_t p;
    s_plan_open(&p);
    s_cut_run(&p, s_slow);
    cr_assert_eq(s_results(p.path).n, 2, "the cut run measured nothing again");

    size_t n, n_held;
    s_resume_run(&p, s_fast, &n, &n_held);
    cr_expect_eq(n, 2, "two items left to measure");
    cr_expect_eq(n_held, 2, "two held to check");
    results_t x = s_results(p.path);
    cr_assert_eq(x.n, 6, "the other two, and the cut run's two again (got %zu)", x.n);
    for (size_t i = 4; i < 6; i++) {
        cr_expect_eq(x.m[i], 8 + (i - 4), "result %zu: the cut run's items, in plan order", i);
        cr_expect_float_eq(x.canary_ms[i], 1.0, 1e-12);
        cr_expect_eq(x.supersedes_us[i], x.at_us[i - 4], "result %zu names the cut run's", i);
    }

    s_resume_run(&p, s_fast, &n, &n_held);
    cr_expect_eq(n, 0, "all measured");
    cr_expect_eq(n_held, 2, "the settled ones are not held");
    cr_expect_eq(s_results(p.path).n, 6, "nothing measured again");
    s_plan_close(&p);
}

/* The fastest reading is the plan's: a run resuming a plan that an earlier
 * run measured in a fast phase, itself all in a slow phase, finds its own
 * items slow against the earlier run's readings; it waits for a fast one
 * (in vain here) and marks them disturbed, where by its own readings alone
 * it would have stored them as quiet. */
Test(canary, a_resumed_run_judges_by_the_plans_fastest_reading, .timeout = 120)
{
    s_plan_t p;
    s_plan_open(&p);
    p.ro.measure.quiet.retries = 1;
    s_cut_run(&p, s_fast);

    size_t n, n_held;
    s_resume_run(&p, s_slow, &n, &n_held);
    cr_expect_eq(n, 2);
    results_t x = s_results(p.path);
    cr_assert_geq(x.n, 4, "got %zu results", x.n);
    for (size_t i = 0; i < 2; i++)
        cr_expect_not(x.disturbed[i], "the earlier run's item %zu was fast", i);
    for (size_t i = 2; i < 4; i++) {
        cr_expect_eq(x.m[i], 8 + i);
        cr_expect(x.disturbed[i], "item %zu: 2 ms against the plan's fastest of 1 ms", i);
    }
    s_plan_close(&p);
}
