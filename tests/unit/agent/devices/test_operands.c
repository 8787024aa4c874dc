/* Cold operands (agent/devices/operands.h, agent/devices/cpu/cpu_cold.c):
 * the setting and its validation, how many copies a plan rotates through,
 * the device identity it gives, and that a cold plan computes what a warm
 * one does (the reference check of every direction on both CPU conv paths
 * and for matmuls, over enough runs to use several copies). */
#include "conv_verify.h"
#include "device.h"
#include "matmul_bench.h"
#include "operands.h"
#include "tc_test.h"

#include "tc_error.h"
#include "tc_matmul_step.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MIB ((uint64_t)1 << 20)

Test(operands, parse_names_the_choices)
{
    tc_operands_t m = TC_OPERANDS_COLD;
    cr_expect_eq(tc_operands_parse("warm", &m), 0);
    cr_expect_eq(m, TC_OPERANDS_WARM);
    cr_expect_eq(tc_operands_parse("cold", &m), 0);
    cr_expect_eq(m, TC_OPERANDS_COLD);
    const char *bad[] = {"hot", "", "Cold", "cold ", NULL};
    for (int i = 0; bad[i]; i++) {
        cr_expect_eq(tc_operands_parse(bad[i], &m), TC_EUSAGE, "'%s'", bad[i]);
        cr_expect(strstr(tc_errmsg(), "warm or cold"), "%s", tc_errmsg());
    }
}

Test(operands, apply_checks_the_flag_and_the_environment)
{
    setenv("TRAINCAST_OPERANDS", "tepid", 1);
    cr_expect_eq(tc_operands_get(), TC_OPERANDS_DEFAULT, "a bad value reads as the default");
    cr_expect_eq(tc_operands_apply(NULL), TC_EUSAGE);
    cr_expect(strstr(tc_errmsg(), "TRAINCAST_OPERANDS") && strstr(tc_errmsg(), "'tepid'"), "%s",
              tc_errmsg());
    cr_expect_eq(tc_operands_apply("lukewarm"), TC_EUSAGE);
    cr_expect(strstr(tc_errmsg(), "--operands") && strstr(tc_errmsg(), "'lukewarm'"), "%s",
              tc_errmsg());
    cr_expect_eq(tc_operands_apply("cold"), 0);
    cr_expect_eq(tc_operands_get(), TC_OPERANDS_COLD);
    cr_expect_str_eq(getenv("TRAINCAST_OPERANDS"), "cold", "exported to what the agent starts");
    cr_expect_eq(tc_operands_apply("warm"), 0);
    cr_expect_str_eq(getenv("TRAINCAST_OPERANDS"), "warm");
    unsetenv("TRAINCAST_OPERANDS");
    cr_expect_eq(tc_operands_apply(NULL), 0);
    cr_expect_eq(tc_operands_get(), TC_OPERANDS_COLD, "cold by default");
    cr_expect_str_eq(getenv("TRAINCAST_OPERANDS"), "cold", "the default exported too");
}

/* The rotation's cache is sysfs's level-3 size where sysfs has one; a
 * level no CPU has reads 0; the level-1 size read is the data cache's. */
Test(operands, cache_sizes_by_level)
{
    uint64_t l3 = tc_operands_cache_level_bytes(3);
    if (l3)
        cr_expect_eq(tc_operands_cache_bytes(), l3);
    cr_expect_eq(tc_operands_cache_level_bytes(9), 0);
    uint64_t l1 = tc_operands_cache_level_bytes(1);
    FILE *f = fopen("/sys/devices/system/cpu/cpu0/cache/index0/size", "r");
    if (f) { /* index0 is the level-1 data cache on x86 and arm64 Linux */
        char buf[32] = "";
        cr_assert_not_null(fgets(buf, sizeof buf, f));
        fclose(f);
        cr_expect_eq(l1, strtoull(buf, NULL, 10) << 10, "level 1: %llu bytes, sysfs says %s",
                     (unsigned long long)l1, buf);
    }
}

/* K copies exceed twice the cache unless the count or the memory caps them. */
Test(operands, copies_exceed_twice_the_cache)
{
    uint64_t cache = tc_operands_cache_bytes();
    cr_assert_geq(cache, 64 * 1024, "a last-level cache of %llu bytes", (unsigned long long)cache);
    const uint64_t sizes[] = {100 * 1024, 3 * MIB, 25 * MIB, 2 * cache, 5 * cache};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        uint64_t mem = 64 * cache + 64 * sizes[i];
        size_t k = tc_operands_copies(cache, sizes[i], mem);
        cr_expect_geq(k, 2);
        if (k < TC_OPERANDS_MAX_COPIES)
            cr_expect_gt(k * sizes[i], 2 * cache, "%zu copies of %llu bytes, cache %llu", k,
                         (unsigned long long)sizes[i], (unsigned long long)cache);
    }
    cr_expect_eq(tc_operands_copies(32 * MIB, 1 * MIB, 1024 * MIB * 64), 65);
    cr_expect_eq(tc_operands_copies(32 * MIB, 64 * MIB, 1024 * MIB * 64), 2, "two at least");
    cr_expect_eq(tc_operands_copies(32 * MIB, 1024, 1024 * MIB * 64), TC_OPERANDS_MAX_COPIES);
    cr_expect_eq(tc_operands_copies(32 * MIB, 1 * MIB, 40 * MIB), 10, "a quarter of the memory");
    cr_expect_eq(tc_operands_copies(32 * MIB, 1024 * MIB, 4096 * MIB), 1, "not even two fit");
}

/* The cold device is another device; the warm one keeps its identity. */
Test(operands, cold_is_another_device, .timeout = 60)
{
    tc_device_t *dev = NULL;
    Traincast__V1__Device d = TRAINCAST__V1__DEVICE__INIT;
    cr_assert_eq(tc_operands_apply("warm"), 0);
    cr_assert_eq(tc_device_open("cpu", 1, &dev), 0, "%s", tc_errmsg());
    cr_assert_eq(tc_device_describe(dev, &d), 0);
    char warm_name[512], warm_uuid[64];
    snprintf(warm_name, sizeof warm_name, "%s", d.name);
    snprintf(warm_uuid, sizeof warm_uuid, "%s", d.uuid);
    tc_device_close(&dev);
    cr_expect(!strstr(warm_name, "cold"), "%s", warm_name);
    cr_assert_eq(tc_operands_apply("cold"), 0);
    cr_assert_eq(tc_device_open("cpu", 1, &dev), 0, "%s", tc_errmsg());
    cr_assert_eq(tc_device_describe(dev, &d), 0);
    cr_expect(strstr(d.name, "| cold operands]"), "%s", d.name);
    cr_expect_str_neq(d.uuid, warm_uuid);
    tc_device_close(&dev);
}

/* Run a plan `runs` times and return its output, verified against the
 * reference (malloc'd, `*count` values). */
static float *s_run_verified(tc_device_t *dev, const tc_conv_spec_t *spec, int runs, size_t *count,
                             const char *what)
{
    tc_conv_plan_t *plan = NULL;
    int rc = tc_conv_plan_create(dev, spec, &plan);
    if (rc == TC_ENOTFOUND)
        cr_skip_test("no BLAS: %s", tc_errmsg());
    cr_assert_eq(rc, 0, "%s: plan: %s", what, tc_errmsg());
    cr_assert_eq(tc_conv_plan_select(plan, 0), 0, "%s: %s", what, tc_errmsg());
    for (int r = 0; r < runs; r++) {
        double ms = 0;
        cr_assert_eq(tc_conv_plan_run(plan, &ms), 0, "%s: run %d: %s", what, r, tc_errmsg());
    }
    tc_verify_t v;
    cr_assert_eq(tc_conv_verify(plan, spec, &v), 0, "%s: verify: %s", what, tc_errmsg());
    cr_expect_eq(v.wrong, 0, "%s: %zu of %zu values wrong; worst %s[%zu] = %g, reference %g", what,
                 v.wrong, v.checked, tc_tensor_name(v.tensor), v.worst, v.got, v.want);
    cr_expect_gt(v.checked, 0);
    tc_tensor_t t = tc_direction_output(spec->direction);
    *count = tc_tensor_count(&spec->config, t);
    float *out = malloc(*count * sizeof *out);
    cr_assert(out);
    cr_assert_eq(tc_conv_plan_read(plan, t, out, *count), 0, "%s: %s", what, tc_errmsg());
    tc_conv_plan_destroy(&plan);
    return out;
}

/* Every direction on both paths: the cold plan (runs past several copies)
 * passes the reference check and gives the warm plan's values. */
static void s_same_as_warm(tc_conv_path_t path)
{
    static const Traincast__V1__Direction dirs[] = {
        TRAINCAST__V1__DIRECTION__DIRECTION_FWD, TRAINCAST__V1__DIRECTION__DIRECTION_BWD_DATA,
        TRAINCAST__V1__DIRECTION__DIRECTION_BWD_FILTER};
    tc_conv_config_t c = tc_conv_config_default();
    c.n = 2, c.c = 8, c.h = 9, c.w = 9, c.k = 16, c.r = 3, c.s = 3, c.pad_h = 1, c.pad_w = 1;
    c.bias = true;
    tc_conv_config_t dw = c;
    dw.k = 8, dw.groups = 8, dw.bias = false, dw.stride_h = dw.stride_w = 2;
    const tc_conv_config_t *cfgs[] = {&c, &dw};
    for (size_t i = 0; i < 2; i++) {
        for (size_t d = 0; d < 3; d++) {
            tc_conv_spec_t spec = {.config = *cfgs[i], .direction = dirs[d],
                                   .policy = TRAINCAST__V1__POLICY__POLICY_HEURISTIC,
                                   .seed = 11 + i, .path = path};
            char what[160];
            snprintf(what, sizeof what, "config %zu %s %s", i, tc_direction_name(dirs[d]),
                     tc_conv_path_name(path));
            size_t n_warm = 0, n_cold = 0;
            float *warm = NULL, *cold = NULL;
            for (int mode = 0; mode < 2; mode++) {
                tc_device_t *dev = NULL;
                cr_assert_eq(tc_operands_apply(mode ? "cold" : "warm"), 0);
                cr_assert_eq(tc_device_open("cpu", 1, &dev), 0, "%s", tc_errmsg());
                if (mode)
                    cold = s_run_verified(dev, &spec, 7, &n_cold, what);
                else
                    warm = s_run_verified(dev, &spec, 2, &n_warm, what);
                tc_device_close(&dev);
            }
            cr_assert_eq(n_warm, n_cold);
            size_t differ = 0;
            for (size_t k = 0; k < n_warm; k++)
                differ += warm[k] != cold[k];
            cr_expect_eq(differ, 0, "%s: %zu of %zu values differ from the warm plan's", what,
                         differ, n_warm);
            free(warm);
            free(cold);
        }
    }
}

Test(operands, cold_onednn_plans_compute_what_warm_ones_do, .timeout = 300)
{
    s_same_as_warm(TC_PATH_LIBRARY);
}

Test(operands, cold_native_plans_compute_what_warm_ones_do, .timeout = 300)
{
    s_same_as_warm(TC_PATH_NATIVE);
}

/* A matmul plan with cold operands, run past several copies, passes the
 * reference check and gives the warm plan's values in every direction, for
 * a Linear (addmm) and an attention bmm. */
Test(operands, cold_matmul_plans_compute_what_warm_ones_do, .timeout = 300)
{
    static const Traincast__V1__Direction dirs[] = {
        TRAINCAST__V1__DIRECTION__DIRECTION_FWD, TRAINCAST__V1__DIRECTION__DIRECTION_BWD_DATA,
        TRAINCAST__V1__DIRECTION__DIRECTION_BWD_FILTER};
    tc_matmul_config_t lin = tc_matmul_config_default();
    lin.m = 49, lin.n = 96, lin.k = 64, lin.trans_b = lin.weight = lin.bias = true;
    tc_matmul_config_t att = tc_matmul_config_default();
    att.batch = 4, att.m = 64, att.n = 64, att.k = 64, att.trans_b = true;
    att.minibatch_in = TC_MM_MB_BATCH;
    const tc_matmul_config_t *cfgs[] = {&lin, &att};
    for (size_t i = 0; i < 2; i++)
        for (size_t d = 0; d < 3; d++) {
            tc_matmul_spec_t spec = {.config = *cfgs[i], .direction = dirs[d], .seed = 5 + i};
            spec.config.minibatch = 3;
            char what[160];
            tc_matmul_config_label(&spec.config, what, sizeof what);
            tc_gemm_t g;
            cr_assert_eq(tc_matmul_step_gemm(&spec.config, dirs[d], &g), 0);
            size_t n = tc_gemm_tensor_count(&g, TC_MM_TENSOR_C);
            float *out[2] = {malloc(n * sizeof(float)), malloc(n * sizeof(float))};
            cr_assert(out[0] && out[1]);
            for (int mode = 0; mode < 2; mode++) {
                tc_device_t *dev = NULL;
                cr_assert_eq(tc_operands_apply(mode ? "cold" : "warm"), 0);
                cr_assert_eq(tc_device_open("cpu", 1, &dev), 0, "%s", tc_errmsg());
                double worst = -1;
                int rc = tc_matmul_verify(dev, &spec, &worst);
                if (rc == TC_ENOTFOUND)
                    cr_skip_test("no BLAS: %s", tc_errmsg());
                cr_expect_eq(rc, 0, "%s %s %s: %s", what, tc_direction_name(dirs[d]),
                             mode ? "cold" : "warm", tc_errmsg());
                tc_matmul_plan_t *plan = NULL;
                cr_assert_eq(tc_matmul_plan_create(dev, &spec, &plan), 0, "%s", tc_errmsg());
                for (int r = 0; r < 7; r++) {
                    double ms = 0;
                    cr_assert_eq(tc_matmul_plan_run(plan, &ms), 0, "%s", tc_errmsg());
                }
                cr_assert_eq(tc_matmul_plan_read(plan, TC_MM_TENSOR_C, out[mode], n), 0, "%s",
                             tc_errmsg());
                tc_matmul_plan_destroy(&plan);
                tc_device_close(&dev);
            }
            size_t differ = 0;
            for (size_t k = 0; k < n; k++)
                differ += out[0][k] != out[1][k];
            cr_expect_eq(differ, 0, "%s %s: %zu of %zu values differ from the warm plan's", what,
                         tc_direction_name(dirs[d]), differ, n);
            free(out[0]);
            free(out[1]);
        }
    cr_assert_eq(tc_operands_apply("warm"), 0);
}

/* `agent bench-matmul --operands cold` rotates its operands through copies
 * (it logs how many: more than one), on the cold device; warm makes none;
 * without the flag or TRAINCAST_OPERANDS it is cold. */
Test(operands, a_cold_matmul_benchmark_rotates_copies, .timeout = 120)
{
    static char out[1 << 15];
    char cmd[2048];
    const struct {
        const char *flag;
        int cold;
    } modes[] = {{"--operands warm", 0}, {"--operands cold", 1}, {"", 1}};
    for (size_t i = 0; i < sizeof modes / sizeof modes[0]; i++) {
        snprintf(cmd, sizeof cmd,
                 "env -u TRAINCAST_OPERANDS TRAINCAST_LOG=debug %s/agent/agent bench-matmul "
                 "--m 64 --n 64 --k 64 --batch 4 --minibatch 3 --minibatch-in batch --trans-b "
                 "--direction fwd --threads 1 --budget-ms 20 --max-reps 5 %s 2>&1",
                 TC_BINARY_DIR, modes[i].flag);
        cr_assert_eq(tc_test_run(cmd, out, sizeof out), 0, "%s:\n%s", cmd, out);
        const char *at = strstr(out, "cold operands: ");
        if (!modes[i].cold) {
            cr_expect_null(at, "warm operands make no copies:\n%s", out);
            continue;
        }
        cr_assert_not_null(at, "%s:\n%s", cmd, out);
        unsigned long copies = strtoul(at + strlen("cold operands: "), NULL, 10);
        cr_expect_gt(copies, 1, "%lu copies:\n%s", copies, out);
    }
}

/* `agent bench --operands` takes warm or cold and says so otherwise. */
Test(operands, the_flag_is_checked, .timeout = 120)
{
    static char out[1 << 14];
    char cmd[2048];
    const struct {
        const char *env, *args, *says;
    } cases[] = {
        {"", "--operands lukewarm", "--operands: operands must be warm or cold, not 'lukewarm'"},
        {"TRAINCAST_OPERANDS=tepid", "",
         "TRAINCAST_OPERANDS: operands must be warm or cold, not 'tepid'"},
        {"", "--device cuda:0 --operands cold", "the setting is the cpu device's"},
        {NULL, NULL, NULL},
    };
    for (int i = 0; cases[i].args; i++) {
        snprintf(cmd, sizeof cmd,
                 "cd %s && env -u TRAINCAST_OPERANDS %s %s/agent/agent bench --models "
                 "tests/data/alexnet.onnx --batches 8 --dry-run %s",
                 TC_SOURCE_DIR, cases[i].env, TC_BINARY_DIR, cases[i].args);
        cr_expect_eq(tc_test_run(cmd, out, sizeof out), 2, "%s:\n%s", cmd, out);
        cr_expect(strstr(out, cases[i].says), "%s:\n%s", cmd, out);
    }
}
