/* The allocator is part of the CPU device: `agent --allocator` restarts
 * the agent with it (allocator.h), the device's name says which one runs
 * and its uuid differs per allocator, an unknown name lists the choices,
 * and a trace whose runner allocates differently from the device is
 * refused rather than stored under it. */
#include "tc_run.h"
#include "tc_test.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int s_agent(const char *args, char *out, size_t size)
{
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "TRAINCAST_LOG=error %s/agent/agent %s", TC_BINARY_DIR, args);
    return tc_test_run(cmd, out, size);
}

/* The cpu line of `agent info` and its uuid. */
static void s_cpu(const char *allocator, char *name, size_t name_size, char *uuid,
                  size_t uuid_size)
{
    char args[256], out[16384];
    snprintf(args, sizeof args, "info --threads 1 --allocator %s", allocator);
    int st = s_agent(args, out, sizeof out);
    if (st == 1 && strstr(out, "is not installed"))
        cr_skip_test("%s", out);
    cr_assert_eq(st, 0, "agent %s exited %d:\n%s", args, st, out);
    const char *devices = strstr(out, "\ndevices:\n");
    cr_assert_not_null(devices, "%s", out);
    const char *cpu = strstr(devices, "\n  cpu     ");
    cr_assert_not_null(cpu, "%s", out);
    cpu += 10;
    snprintf(name, name_size, "%.*s", (int)strcspn(cpu, "\n"), cpu);
    const char *u = strstr(cpu, "uuid ");
    cr_assert_not_null(u, "%s", out);
    snprintf(uuid, uuid_size, "%.*s", (int)strcspn(u + 5, "\n"), u + 5);
}

Test(allocator, each_allocator_is_another_device, .timeout = 120)
{
    const struct {
        const char *choice, *says;
    } cases[] = {
        {"tcmalloc", "[tcmalloc "},
        {"jemalloc", "[jemalloc "},
        {"glibc-tuned", " tuned | "},
        {"system", "[glibc "},
    };
    char uuids[4][64];
    for (size_t i = 0; i < 4; i++) {
        char name[512];
        s_cpu(cases[i].choice, name, sizeof name, uuids[i], sizeof uuids[i]);
        cr_expect(strstr(name, cases[i].says), "--allocator %s: %s", cases[i].choice, name);
        cr_expect(strstr(name, " (1 thread) ["), "%s", name);
        for (size_t j = 0; j < i; j++)
            cr_expect_str_neq(uuids[i], uuids[j], "%s and %s share a uuid", cases[i].choice,
                              cases[j].choice);
    }
    /* The same choice again is the same device. */
    char name[512], again[64];
    s_cpu("tcmalloc", name, sizeof name, again, sizeof again);
    cr_expect_str_eq(again, uuids[0]);
}

/* An agent whose allocator changed since it last measured this CPU says
 * that it measures a new device. */
Test(allocator, a_changed_allocator_says_it_is_a_new_device, .timeout = 60)
{
    char dir[256], cmd[2048], out[16384];
    tc_test_scratch_dir("allocator_change", NULL, dir, sizeof dir);
    const char *choices[] = {"jemalloc", "tcmalloc", "tcmalloc"};
    for (int i = 0; i < 3; i++) {
        snprintf(cmd, sizeof cmd, "TRAINCAST_CACHE=%s TRAINCAST_LOG=warn %s/agent/agent info "
                 "--threads 1 --allocator %s", dir, TC_BINARY_DIR, choices[i]);
        int st = tc_test_run(cmd, out, sizeof out);
        if (st == 1 && strstr(out, "is not installed"))
            cr_skip_test("%s", out);
        cr_assert_eq(st, 0, "%s", out);
        bool says = strstr(out, "is a new device") != NULL;
        if (i == 1)
            cr_expect(says && strstr(out, "[jemalloc ") && strstr(out, "[tcmalloc "),
                      "jemalloc, then tcmalloc: %s", out);
        else
            cr_expect(!says, "run %d (%s): %s", i, choices[i], out);
    }
    tc_test_remove_tree(dir);
}

Test(allocator, unknown_names_list_the_choices, .timeout = 60)
{
    char out[4096];
    int st = s_agent("info --allocator mimalloc", out, sizeof out);
    cr_expect_eq(st, 2, "%s", out);
    cr_expect(strstr(out, "unknown allocator 'mimalloc'") &&
                  strstr(out, "tcmalloc, jemalloc, glibc-tuned or system"),
              "%s", out);
}

static void s_need_torch(void)
{
    char *argv[] = {(char *)tc_python(), "-c", "import torch, torchvision", NULL};
    char out[2048];
    if (tc_run_capture(argv, true, out, sizeof out) != 0)
        cr_skip_test("%s cannot import torch and torchvision: %s", tc_python(), out);
}

/* The built-in runner reports the allocator, BLAS and framework version it
 * trained with; the agent accepts the trace only when they are the
 * device's. */
Test(allocator, traces_run_with_the_device_allocator, .timeout = 300)
{
    s_need_torch();
    char dir[256], args[4096], runner[1024];
    static char out[65536];
    tc_test_scratch_dir("allocator", NULL, dir, sizeof dir);
    const char *common = "trace --models squeezenet1_1 --batches 2 --input-size 32 --threads 1 "
                         "--warmup 1 --iters 1 --repeat 1 --no-profile --no-graph";
    snprintf(args, sizeof args, "%s --allocator tcmalloc --out %s/ok.tcr", common, dir);
    int st = s_agent(args, out, sizeof out);
    if (st == 1 && strstr(out, "is not installed"))
        cr_skip_test("%s", out);
    cr_assert_eq(st, 0, "the harness under the agent's own allocator:\n%s", out);

    /* A runner that drops the preload allocates with glibc: not this
     * device's trace. */
    tc_test_source_path("agent/harness/trace_runner.py", runner, sizeof runner);
    snprintf(args, sizeof args,
             "%s --allocator tcmalloc --out %s/other.tcr --runner 'env -u LD_PRELOAD "
             "TRAINCAST_TRACE_ALLOCATOR=system %s %s'",
             common, dir, tc_python(), runner);
    st = s_agent(args, out, sizeof out);
    cr_expect_eq(st, 1, "%s", out);
    cr_expect(strstr(out, "\"allocator\" is \"glibc"), "the reason names the allocator:\n%s",
              out);
    tc_test_remove_tree(dir);
}
