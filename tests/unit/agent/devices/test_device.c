/* The device layer: device specs, the cpu device's identity, the cuda
 * backend's explanation when it cannot run here, and the agent's device
 * commands. */
#include "agent_devices.h"
#include "device.h"
#include "hostinfo.h"

#include "tc_error.h"
#include "tc_test.h"

#include <criterion/criterion.h>
#include <dirent.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

Test(device, parses_specs, .timeout = 10)
{
    const tc_backend_iface_t *b = NULL;
    unsigned idx = 99;
    cr_expect_eq(tc_device_parse("cpu", &b, &idx), 0);
    cr_expect_eq(b, &tc_backend_cpu);
    cr_expect_eq(idx, 0);
    cr_expect_eq(tc_device_parse("cuda", &b, &idx), 0);
    cr_expect_eq(b, &tc_backend_cuda);
    cr_expect_eq(idx, 0);
    cr_expect_eq(tc_device_parse("cuda:3", &b, &idx), 0);
    cr_expect_eq(idx, 3);
    const char *bad[] = {"", "gpu", "cuda:", "cuda:x", "cuda:1x", "cpu:1", "cudax", "cuda:99999"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        cr_expect_eq(tc_device_parse(bad[i], &b, &idx), TC_EUSAGE, "'%s' should be refused",
                     bad[i]);
        cr_expect(strlen(tc_errmsg()) > 10);
    }
}

Test(device, cpu_identity_follows_model_host_and_threads, .timeout = 30)
{
    char model[192];
    tc_cpu_model(model, sizeof model);
    tc_device_t *a = NULL, *b = NULL, *c = NULL;
    cr_assert_eq(tc_device_open("cpu", 1, &a), 0, "%s", tc_errmsg());
    cr_assert_eq(tc_device_open("cpu", 1, &b), 0, "%s", tc_errmsg());
    Traincast__V1__Device da = TRAINCAST__V1__DEVICE__INIT, db = TRAINCAST__V1__DEVICE__INIT;
    cr_assert_eq(tc_device_describe(a, &da), 0);
    cr_assert_eq(tc_device_describe(b, &db), 0);
    cr_expect_eq(da.kind, TRAINCAST__V1__DEVICE_KIND__DEVICE_KIND_CPU);
    cr_expect(strstr(da.name, model) == da.name, "name '%s' starts with the model", da.name);
    cr_expect(strstr(da.name, "(1 thread)") != NULL, "%s", da.name);
    cr_expect_str_eq(da.uuid, db.uuid, "the same CPU and thread count is the same device");
    cr_expect_eq(strncmp(da.uuid, "cpu-", 4), 0);
    cr_expect_eq(strlen(da.uuid), 36);
    cr_expect_eq(da.threads, 1);
    cr_expect_gt(da.multiprocessors, 0);
    cr_expect_gt(da.memory_bytes, 0);
    cr_expect_str_eq(da.library, "onednn");
    cr_expect_eq(strncmp(da.library_version, "2.", 2), 0, "%s", da.library_version);
    cr_expect(da.host && *da.host);
    unsigned logical = tc_cpu_logical();
    if (logical >= 2) {
        cr_assert_eq(tc_device_open("cpu", 2, &c), 0, "%s", tc_errmsg());
        Traincast__V1__Device dc = TRAINCAST__V1__DEVICE__INIT;
        cr_assert_eq(tc_device_describe(c, &dc), 0);
        cr_expect_str_neq(dc.uuid, da.uuid, "another thread count is another device");
        cr_expect(strstr(dc.name, "(2 threads)") != NULL, "%s", dc.name);
        tc_device_close(&c);
    }
    tc_device_close(&a);
    tc_device_close(&b);
    cr_expect_null(a);
    cr_expect_eq(tc_device_open("cpu", logical + 1, &c), TC_EINVAL);
    cr_expect(strstr(tc_errmsg(), "logical CPUs") != NULL, "%s", tc_errmsg());
    cr_expect_null(c);
}

/* Threads this process has now. */
static int s_tasks(void)
{
    DIR *d = opendir("/proc/self/task");
    cr_assert_not_null(d);
    int n = 0;
    for (struct dirent *e; (e = readdir(d));)
        n += e->d_name[0] != '.';
    closedir(d);
    return n;
}

/* The process's threads once those that have exited are gone: a joined
 * thread can stay listed in /proc/self/task for a moment while the kernel
 * reaps it, while a pool's threads stay; waits up to 2 s for at most want. */
static int s_tasks_settled(int want)
{
    int n = s_tasks();
    for (int i = 0; i < 200 && n > want; i++) {
        nanosleep(&(struct timespec){.tv_nsec = 10 * 1000 * 1000}, NULL);
        n = s_tasks();
    }
    return n;
}

/* The agent describes its devices when it starts (agent run, agent serve)
 * and benchmarks on a job thread. Describing the cpu device opens it, which
 * runs an OpenMP team: on the calling thread that would leave an OpenMP
 * pool behind, and the benchmarks' own pool would then find more OpenMP
 * threads than CPUs (libgomp's cue to stop spinning: every parallel region
 * paid a wake-up). Describing leaves no thread behind; opening the device
 * on this thread, as the control, does. */
Test(device, describing_the_devices_leaves_no_openmp_pool, .timeout = 30)
{
    if (tc_cpu_logical() < 2)
        cr_skip_test("one logical CPU: no OpenMP team to leave behind");
    int before = s_tasks();
    tc_agent_devices_t *devs = NULL;
    cr_assert_eq(tc_agent_devices_new("cpu", 2, &devs), 0, "%s", tc_errmsg());
    cr_expect_eq(tc_agent_devices_count(devs), 1);
    int after = s_tasks_settled(before);
    cr_expect_eq(after, before, "describing the cpu device left %d threads behind",
                 after - before);
    tc_agent_devices_destroy(&devs);
    tc_device_t *dev = NULL;
    cr_assert_eq(tc_device_open("cpu", 2, &dev), 0, "%s", tc_errmsg());
    tc_device_close(&dev);
    cr_expect_gt(s_tasks(), before, "control: a 2-thread team on this thread keeps its pool");
    /* An error raised on the describing thread reaches the caller. */
    cr_expect_eq(tc_agent_devices_new("cpu", tc_cpu_logical() + 1, &devs), TC_EINVAL);
    cr_expect(strstr(tc_errmsg(), "logical CPUs") != NULL, "%s", tc_errmsg());
    cr_expect_null(devs);
}

Test(device, cuda_explains_why_it_cannot_run, .timeout = 60)
{
    unsigned count = 0;
    char why[512];
    cr_assert_eq(tc_backend_cuda.enumerate(&count, why, sizeof why), 0);
    if (count > 0)
        cr_skip_test("this machine has %u NVIDIA GPU(s); tests/gpu covers them", count);
    cr_expect(strlen(why) > 20, "a reason is given: '%s'", why);
    cr_expect(strstr(why, "built without CUDA") || strstr(why, "driver") || strstr(why, "GPU"),
              "the reason names the cause: %s", why);
    tc_device_t *dev = NULL;
    int rc = tc_device_open("cuda:0", 0, &dev);
    cr_expect(rc == TC_ENODEV || rc == TC_EUNSUPPORTED, "rc %d", rc);
    cr_expect_null(dev);
    cr_expect(strstr(tc_errmsg(), why) != NULL, "open says the same: %s", tc_errmsg());
    char v[256];
    tc_backend_cuda.versions(v, sizeof v);
    cr_expect(strstr(v, "cuDNN") != NULL, "%s", v);
}

static void s_agent(const char *args, char *out, size_t size, int *status)
{
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "%s/agent/agent %s", TC_BINARY_DIR, args);
    *status = tc_test_run(cmd, out, size);
}

Test(device_cli, info_and_bad_devices, .timeout = 120)
{
    char out[8192];
    int st;
    s_agent("info --threads 1", out, sizeof out, &st);
    cr_expect_eq(st, 0, "%s", out);
    cr_expect(strstr(out, "(1 thread)") && strstr(out, "oneDNN 2."), "%s", out);
    cr_expect(strstr(out, "cuda"), "%s", out);

    s_agent("bench-conv --n 1 --c 4 --h 8 --w 8 --k 4 --r 3 --device cuda:0", out, sizeof out,
            &st);
    unsigned count = 0;
    char why[512];
    tc_backend_cuda.enumerate(&count, why, sizeof why);
    if (count == 0) {
        cr_expect_eq(st, 1, "no GPU here is a runtime failure: %s", out);
        cr_expect(strstr(out, "cuda:0") && strstr(out, why), "%s", out);
    }
    s_agent("bench-conv --n 1 --c 4 --h 8 --w 8 --k 4 --r 3 --device tpu", out, sizeof out, &st);
    cr_expect_eq(st, 2, "%s", out);
    s_agent("bench-conv --n 1 --c 6 --h 8 --w 8 --k 4 --r 3 --groups 4", out, sizeof out, &st);
    cr_expect_eq(st, 2, "%s", out);
    cr_expect(strstr(out, "groups"), "%s", out);
    s_agent("bench-conv --n 1 --c 4 --h 8 --w 8 --k 4 --r 3 --dtype fp64", out, sizeof out, &st);
    cr_expect_eq(st, 2, "%s", out);
    s_agent("bench-conv --n 1 --c 4 --h 8 --w 8 --k 4 --r 3 --dtype fp16", out, sizeof out, &st);
    cr_expect_eq(st, 1, "fp16 is not a cpu type: %s", out);
    cr_expect(strstr(out, "fp16"), "%s", out);
    s_agent("bench --batches 2 --convs /nonexistent/list.convs --out /tmp/x.tcr", out, sizeof out,
            &st);
    cr_expect_eq(st, 2, "%s", out);
    cr_expect(strstr(out, "/nonexistent/list.convs"), "%s", out);
}

Test(device_cli, bench_conv_prints_every_algorithm_and_verifies, .timeout = 120)
{
    char out[16384];
    int st;
    s_agent("bench-conv --n 2 --c 8 --h 10 --w 10 --k 8 --r 3 --pad 1 --stride 2 --threads 1 "
            "--policy exhaustive --budget-ms 20 --verify",
            out, sizeof out, &st);
    cr_expect_eq(st, 0, "%s", out);
    for (const char *d = "fwd\0bwd_data\0bwd_filter\0"; *d; d += strlen(d) + 1)
        cr_expect(strstr(out, d), "direction %s missing: %s", d, out);
    cr_expect(strstr(out, "chosen: "), "%s", out);
    cr_expect(strstr(out, "verified: "), "%s", out);
    cr_expect(strstr(out, "winograd") || strstr(out, "wino"), "the exhaustive list shows "
              "winograd too: %s", out);
}

Test(device_cli, bench_plans_from_onnx_models_and_conv_lists, .timeout = 120)
{
    char out[8192], args[1024];
    int st;
    snprintf(args, sizeof args,
             "bench --models %s/tests/data/resnet18.onnx,%s/tests/data/alexnet.onnx --batches "
             "8,16 --threads 1 --dry-run",
             TC_SOURCE_DIR, TC_SOURCE_DIR);
    s_agent(args, out, sizeof out, &st);
    cr_expect_eq(st, 0, "%s", out);
    /* resnet18: 20 conv layers in 11 configs; alexnet: 5 in 5 (its first conv among them). */
    cr_expect(strstr(out, "2 models, 25 conv layers, 2 batch sizes: 146 layer passes -> 92 unique "
                          "items (16 configs"),
              "%s", out);
    /* The cpu times matmuls: the four Linear layers (resnet18's fc, alexnet's three) in 4
     * configs, each direction at each batch. */
    cr_expect(strstr(out, "matmuls: 4 layers: 24 layer passes -> 24 unique items (4 configs"),
              "%s", out);
    snprintf(args, sizeof args,
             "bench --models %s/tests/data/resnet18.onnx,%s/tests/data/alexnet.onnx --batches "
             "8,16 --threads 1 --dry-run --ops matmul",
             TC_SOURCE_DIR, TC_SOURCE_DIR);
    s_agent(args, out, sizeof out, &st);
    cr_expect_eq(st, 0, "%s", out);
    cr_expect(strstr(out, "-> 0 unique items"), "--ops matmul leaves the convs out: %s", out);
    cr_expect(strstr(out, "-> 24 unique items (4 configs"), "%s", out);
    snprintf(args, sizeof args,
             "bench --models %s/tests/data/resnet18.onnx --batches 8 --dry-run --ops conv",
             TC_SOURCE_DIR);
    s_agent(args, out, sizeof out, &st);
    cr_expect_eq(st, 0, "%s", out);
    cr_expect(!strstr(out, "matmuls:"), "--ops conv plans no matmuls: %s", out);
    s_agent("bench --batches 8 --dry-run --models resnet18 --ops gemm", out, sizeof out, &st);
    cr_expect_eq(st, 2, "%s", out);
    cr_expect(strstr(out, "unknown op 'gemm'"), "%s", out);
    snprintf(args, sizeof args, "bench --models %s/tests/data/no_such_model.onnx --batches 8 "
                                "--dry-run",
             TC_SOURCE_DIR);
    s_agent(args, out, sizeof out, &st);
    cr_expect_eq(st, 2, "%s", out);
    cr_expect(strstr(out, "no_such_model.onnx"), "%s", out);
    s_agent("bench --batches 8 --dry-run", out, sizeof out, &st);
    cr_expect_eq(st, 2, "%s", out);
    cr_expect(strstr(out, "--models"), "%s", out);
}
