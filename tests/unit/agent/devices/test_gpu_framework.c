/* The GPU device measures with the cuDNN PyTorch loads (agent/
 * gpu_framework.h, agent/devices/cuda/cuda_libs.c): which file to load,
 * over the cases a machine presents; the probe of the framework (here a
 * CPU-only PyTorch: no CUDA, no cuDNN, TF32 allowed by default); and the
 * library line of `agent info`, for a cuDNN that loads and for one that
 * does not. */
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

Test(gpu_framework, which_cudnn_to_load)
{
    tc_cudnn_source_t src = TC_CUDNN_FILE;
    bool fallback = true;
    /* PyTorch has its own: that file, by default or when asked. */
    cr_expect_eq(tc_cudnn_source(s_torch_lib, NULL, &src, &fallback), 0);
    cr_expect_eq(src, TC_CUDNN_FRAMEWORK);
    cr_expect_not(fallback);
    cr_expect_eq(tc_cudnn_source(s_torch_lib, "", &src, &fallback), 0);
    cr_expect_eq(src, TC_CUDNN_FRAMEWORK);
    cr_expect_eq(tc_cudnn_source(s_torch_lib, "framework", &src, &fallback), 0);
    cr_expect_eq(src, TC_CUDNN_FRAMEWORK);
    /* Asked for the system's: the loader's search, not a fallback. */
    cr_expect_eq(tc_cudnn_source(s_torch_lib, "system", &src, &fallback), 0);
    cr_expect_eq(src, TC_CUDNN_SYSTEM);
    cr_expect_not(fallback);
    /* PyTorch has none (CPU-only, or no PyTorch): the system's, said. */
    cr_expect_eq(tc_cudnn_source("", NULL, &src, &fallback), 0);
    cr_expect_eq(src, TC_CUDNN_SYSTEM);
    cr_expect(fallback);
    cr_expect_eq(tc_cudnn_source(NULL, "framework", &src, &fallback), 0);
    cr_expect_eq(src, TC_CUDNN_SYSTEM);
    cr_expect(fallback);
    /* A file named: that one, whatever PyTorch has. */
    cr_expect_eq(tc_cudnn_source(s_torch_lib, s_system_lib, &src, &fallback), 0);
    cr_expect_eq(src, TC_CUDNN_FILE);
    cr_expect_not(fallback);
    /* Anything else is refused with the choices named. */
    cr_expect_eq(tc_cudnn_source(s_torch_lib, "pytorch", &src, &fallback), TC_EUSAGE);
    cr_expect(strstr(tc_errmsg(), "TRAINCAST_CUDNN must be framework") != NULL, "%s",
              tc_errmsg());
    cr_expect_eq(tc_cudnn_source(s_torch_lib, "lib/libcudnn.so.9", &src, &fallback), TC_EUSAGE);
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
    cr_expect(f->allow_tf32);
    cr_expect_str_eq(f->cudnn_path, "");
    cr_expect_str_eq(f->nvrtc_path, "");
}

/* `agent info`'s line for the CUDA library: the cuDNN loaded at run time
 * and where from, or why none could be. */
static void s_versions(char *buf, size_t size)
{
    tc_backend_cuda.versions(buf, size);
    if (strstr(buf, "built without CUDA"))
        cr_skip_test("this agent was built without CUDA");
}

Test(gpu_framework, cudnn_is_loaded_at_run_time_and_named, .timeout = 120)
{
    char v[4096];
    s_versions(v, sizeof v);
    if (strstr(v, "cuDNN not loaded"))
        cr_skip_test("no cuDNN on this machine: %s", v);
    /* A version, the file's path, and whose it is. */
    cr_expect(strncmp(v, "cuDNN ", 6) == 0 && strstr(v, "/libcudnn.so") &&
                  (strstr(v, "PyTorch's") || strstr(v, "the system's")),
              "%s", v);
    cr_expect(strstr(v, "CUDA runtime") != NULL, "%s", v);
}

Test(gpu_framework, a_cudnn_that_cannot_load_is_named, .timeout = 120)
{
    char path[400];
    snprintf(path, sizeof path, "%s/libcudnn.so.9", s_system); /* an empty file */
    setenv("TRAINCAST_CUDNN", path, 1);
    char v[4096];
    s_versions(v, sizeof v);
    cr_expect(strstr(v, "cuDNN not loaded (cannot load cuDNN (") && strstr(v, path) &&
                  strstr(v, "set TRAINCAST_CUDNN to a libcudnn file that loads"),
              "%s", v);
}

Test(gpu_framework, a_bad_cudnn_choice_is_named, .timeout = 120)
{
    setenv("TRAINCAST_CUDNN", "newest", 1);
    char v[4096];
    s_versions(v, sizeof v);
    cr_expect(strstr(v, "TRAINCAST_CUDNN must be framework (the default), system or the "
                        "absolute path") != NULL,
              "%s", v);
}
