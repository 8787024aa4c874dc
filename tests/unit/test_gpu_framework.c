/* The GPU device measures with the cuDNN PyTorch loads (agent/
 * gpu_framework.h): the decision to start the agent again with the
 * framework's cuDNN directory first, over the cases a machine presents;
 * the probe of the framework (here a CPU-only PyTorch: no CUDA, no cuDNN);
 * and that preparing for a GPU does nothing on a machine without one. */
#include "device.h"
#include "gpu_framework.h"

#include "tc_error.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char s_root[256], s_torch[300], s_system[300], s_torch_lib[400], s_system_lib[400];

static void s_touch(const char *path)
{
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f, "%s", path);
    fclose(f);
}

static void s_setup(void)
{
    snprintf(s_root, sizeof s_root, "/tmp/tc-gpufw-XXXXXX");
    cr_assert_not_null(mkdtemp(s_root));
    snprintf(s_torch, sizeof s_torch, "%s/site-packages/nvidia/cudnn/lib", s_root);
    snprintf(s_system, sizeof s_system, "%s/usr-lib", s_root);
    char mid[320];
    snprintf(mid, sizeof mid, "%s/site-packages", s_root);
    mkdir(mid, 0700);
    snprintf(mid, sizeof mid, "%s/site-packages/nvidia", s_root);
    mkdir(mid, 0700);
    snprintf(mid, sizeof mid, "%s/site-packages/nvidia/cudnn", s_root);
    mkdir(mid, 0700);
    cr_assert_eq(mkdir(s_torch, 0700), 0);
    cr_assert_eq(mkdir(s_system, 0700), 0);
    snprintf(s_torch_lib, sizeof s_torch_lib, "%s/libcudnn.so.9", s_torch);
    snprintf(s_system_lib, sizeof s_system_lib, "%s/libcudnn.so.9", s_system);
    s_touch(s_torch_lib);
    s_touch(s_system_lib);
}

static void s_teardown(void)
{
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", s_root);
    cr_expect_eq(system(cmd), 0);
}

TestSuite(gpu_framework, .init = s_setup, .fini = s_teardown);

Test(gpu_framework, which_cudnn_to_measure_with)
{
    /* The system's is loaded, PyTorch has its own: start again with it. */
    cr_expect_eq(tc_cudnn_action(s_system_lib, s_torch, NULL, false), TC_CUDNN_REEXEC);
    cr_expect_eq(tc_cudnn_action(s_system_lib, s_torch, "framework", false), TC_CUDNN_REEXEC);
    /* Already PyTorch's (also through another path to the same directory). */
    cr_expect_eq(tc_cudnn_action(s_torch_lib, s_torch, NULL, false), TC_CUDNN_KEEP);
    char dotted[512];
    snprintf(dotted, sizeof dotted, "%s/../lib/libcudnn.so.9", s_torch);
    cr_expect_eq(tc_cudnn_action(dotted, s_torch, NULL, true), TC_CUDNN_KEEP);
    /* Started again and still the system's: warn instead of looping. */
    cr_expect_eq(tc_cudnn_action(s_system_lib, s_torch, NULL, true), TC_CUDNN_WARN);
    /* Asked for the system's, or PyTorch has none: warn. */
    cr_expect_eq(tc_cudnn_action(s_system_lib, s_torch, "system", false), TC_CUDNN_WARN);
    cr_expect_eq(tc_cudnn_action(s_system_lib, "", NULL, false), TC_CUDNN_WARN);
    cr_expect_eq(tc_cudnn_action(s_system_lib, NULL, NULL, false), TC_CUDNN_WARN);
    /* A library in a subdirectory of the framework's is not its own. */
    char sub[512], sub_lib[600];
    snprintf(sub, sizeof sub, "%s/old", s_torch);
    cr_assert_eq(mkdir(sub, 0700), 0);
    snprintf(sub_lib, sizeof sub_lib, "%s/libcudnn.so.9", sub);
    s_touch(sub_lib);
    cr_expect_eq(tc_cudnn_action(sub_lib, s_torch, NULL, false), TC_CUDNN_REEXEC);
}

Test(gpu_framework, probe_of_a_cpu_only_pytorch, .timeout = 120)
{
    const tc_gpu_framework_t *f = tc_gpu_framework_probe();
    if (!f->found)
        cr_skip_test("no PyTorch: %s", f->why);
    cr_expect_str_eq(f->framework, "pytorch");
    cr_expect(strlen(f->version) > 0);
    if (f->cuda)
        cr_skip_test("this PyTorch sees a GPU; the CPU-only case is not checked here");
    cr_expect_str_eq(f->cudnn_dir, "");
    cr_expect_eq(f->cudnn_number, 0);
    /* PyTorch's defaults. */
    cr_expect(f->cudnn_enabled);
    cr_expect_not(f->deterministic);
    cr_expect_not(f->benchmark);
}

Test(gpu_framework, preparing_without_a_gpu_does_nothing, .timeout = 120)
{
    /* A CPU device never restarts the program; neither does a machine
     * without a GPU (this call would not return if it did). */
    cr_expect_eq(tc_gpu_prepare("cpu"), 0);
    cr_expect_eq(tc_gpu_prepare(NULL), 0);
    unsigned count = 0;
    char why[256];
    tc_backend_cuda.enumerate(&count, why, sizeof why);
    if (count)
        cr_skip_test("this machine has a GPU");
    cr_expect_eq(tc_gpu_prepare("cuda:0"), 0, "%s", tc_errmsg());
    cr_expect_eq(tc_gpu_prepare("any"), 0, "%s", tc_errmsg());
}
