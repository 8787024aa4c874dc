/* PyTorch traces on a GPU through the built-in harness: a small trace with
 * cudnn.benchmark on, and a batch that cannot fit, recorded as oom. Skips
 * with the reason where PyTorch sees no CUDA device. */
#include "tc_error.h"
#include "tc_resultfile.h"
#include "tc_test.h"
#include "tc_validate.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void s_need_cuda(void)
{
    const char *py = getenv("TRAINCAST_PYTHON");
    char cmd[512], out[2048];
    snprintf(cmd, sizeof cmd,
             "%s -c 'import sys, torch; sys.exit(0 if torch.cuda.is_available() else 1)'",
             py && *py ? py : "/usr/bin/python3");
    if (tc_test_run(cmd, out, sizeof out) != 0)
        cr_skip_test("PyTorch sees no CUDA device here (torch.cuda.is_available() is False or "
                     "torch is missing): %s", out);
}

typedef struct {
    size_t n;
    Traincast__V1__TraceStatus status[4];
    char reason[4][512];
    char device_name[256], library[32];
    Traincast__V1__DeviceKind kind;
    Traincast__V1__Policy policy;
    uint64_t peak;
    int bad;
} s_seen_t;

static int s_collect(const tc_envelope_t *env, void *arg)
{
    s_seen_t *s = arg;
    s->bad |= tc_validate_envelope(env) < 0;
    const Traincast__V1__TrainTrace *t = env->train_trace;
    if (!t || s->n >= 4)
        return 0;
    s->status[s->n] = t->status;
    snprintf(s->reason[s->n], sizeof s->reason[0], "%s", t->reason);
    snprintf(s->device_name, sizeof s->device_name, "%s", t->device->name);
    snprintf(s->library, sizeof s->library, "%s", t->device->library);
    s->kind = t->device->kind;
    if (s->n == 0) {
        s->policy = t->policy;
        s->peak = t->peak_memory_bytes;
    }
    s->n++;
    return 0;
}

Test(trace_cuda, resnet18_trains_and_a_huge_batch_is_oom, .timeout = 900)
{
    s_need_cuda();
    char file[256], cmd[1024], out[16384];
    snprintf(file, sizeof file, "/tmp/tc_trace_cuda_%d.tcr", (int)getpid());
    unlink(file);
    snprintf(cmd, sizeof cmd,
             "%s/agent/agent trace --models resnet18 --batches 16 --device cuda:0 "
             "--cudnn-benchmark --warmup 3 --iters 5 --repeat 2 --no-graph --out %s",
             TC_BINARY_DIR, file);
    int st = tc_test_run(cmd, out, sizeof out);
    cr_assert_eq(st, 0, "exit %d: %s", st, out);
    snprintf(cmd, sizeof cmd,
             "%s/agent/agent trace --models resnet18 --batches 65536 --device cuda:0 "
             "--warmup 1 --iters 1 --repeat 1 --no-graph --out %s",
             TC_BINARY_DIR, file);
    st = tc_test_run(cmd, out, sizeof out);
    cr_assert_eq(st, 0, "an oom trace is a result, not a failure: exit %d: %s", st, out);
    s_seen_t seen = {0};
    cr_assert_eq(tc_resultfile_read(file, false, s_collect, &seen, NULL), 0, "%s", tc_errmsg());
    unlink(file);
    cr_assert_eq(seen.n, 2);
    cr_assert(!seen.bad);
    cr_assert_eq(seen.status[0], TRAINCAST__V1__TRACE_STATUS__TRACE_STATUS_OK, "%s",
                 seen.reason[0]);
    cr_assert_eq(seen.status[1], TRAINCAST__V1__TRACE_STATUS__TRACE_STATUS_OOM, "%s",
                 seen.reason[1]);
    cr_assert(strstr(seen.reason[1], "out of memory at batch 65536"), "%s", seen.reason[1]);
    cr_assert_eq(seen.kind, TRAINCAST__V1__DEVICE_KIND__DEVICE_KIND_CUDA);
    cr_assert_neq(seen.device_name[0], '\0');
    cr_assert_str_eq(seen.library, "cudnn");
    cr_assert_eq(seen.policy, TRAINCAST__V1__POLICY__POLICY_EXHAUSTIVE, "--cudnn-benchmark");
    cr_assert_gt(seen.peak, 10u << 20, "torch.cuda.max_memory_allocated of a resnet18 step");
}
