/* The workspace a conv may take is what training leaves free: the
 * device's memory less the largest peak memory traced at the item's batch
 * (agent/bench/bench_run.h), read from the traces of that device only, its
 * successful ones only; an explicit limit wins, and without a trace the
 * backend decides (what is free now). */
#include "bench_run.h"
#include "trace_peaks.h"

#include "tc_error.h"
#include "tc_resultfile.h"
#include "tc_wire.h"
#include "tc_test.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define GiB (1ull << 30)

static void s_trace(tc_resultfile_t *f, const char *uuid, unsigned batch, uint64_t peak,
                    Traincast__V1__TraceStatus status)
{
    Traincast__V1__Device d = TRAINCAST__V1__DEVICE__INIT;
    d.kind = TRAINCAST__V1__DEVICE_KIND__DEVICE_KIND_CUDA;
    d.name = "NVIDIA H200";
    d.uuid = (char *)uuid;
    Traincast__V1__TrainTrace t = TRAINCAST__V1__TRAIN_TRACE__INIT;
    t.device = &d;
    t.framework = "pytorch";
    t.model_id = "torchvision:resnet50@224";
    t.batch = batch;
    t.input_size = 224;
    t.dtype = TRAINCAST__V1__DTYPE__DTYPE_FP32;
    t.status = status;
    t.peak_memory_bytes = peak;
    t.reason = status == TRAINCAST__V1__TRACE_STATUS__TRACE_STATUS_OK ? "" : "out of memory";
    tc_envelope_t env = TRAINCAST__V1__ENVELOPE__INIT;
    env.body_case = TRAINCAST__V1__ENVELOPE__BODY_TRAIN_TRACE;
    env.train_trace = &t;
    char id[TC_MSGID_LEN + 1];
    tc_envelope_stamp(&env, "agent", id);
    cr_assert_eq(tc_resultfile_append(f, &env), 0, "%s", tc_errmsg());
}

Test(workspace, limit_is_memory_less_the_traced_peak, .timeout = 30)
{
    char path[64];
    tc_test_temp_file("ws", NULL, 0, path, sizeof path);
    tc_resultfile_t *f = NULL;
    cr_assert_eq(tc_resultfile_open_append(path, &f), 0, "%s", tc_errmsg());
    const uint64_t ok = TRAINCAST__V1__TRACE_STATUS__TRACE_STATUS_OK;
    s_trace(f, "GPU-a", 32, 30 * GiB, ok);
    s_trace(f, "GPU-a", 32, 50 * GiB, ok);   /* another model: the larger peak counts */
    s_trace(f, "GPU-a", 64, 90 * GiB, ok);
    s_trace(f, "GPU-a", 128, 200 * GiB, TRAINCAST__V1__TRACE_STATUS__TRACE_STATUS_OOM);
    s_trace(f, "GPU-b", 16, 10 * GiB, ok);   /* another device */
    tc_resultfile_close(&f);

    tc_trace_peak_t *peaks = NULL;
    size_t n = 0;
    cr_assert_eq(tc_trace_peaks_load(path, "GPU-a", &peaks, &n), 0, "%s", tc_errmsg());
    cr_expect_eq(n, 2);
    tc_bench_run_opts_t o = {.peaks = peaks, .n_peaks = n};
    const uint64_t memory = 140 * GiB;
    cr_expect_eq(tc_bench_workspace_limit(&o, memory, 32), 90 * GiB);
    cr_expect_eq(tc_bench_workspace_limit(&o, memory, 64), 50 * GiB);
    cr_expect_eq(tc_bench_workspace_limit(&o, memory, 128), 0, "no successful trace");
    cr_expect_eq(tc_bench_workspace_limit(&o, memory, 16), 0, "another device's trace");
    cr_expect_eq(tc_bench_workspace_limit(&o, 40 * GiB, 32), 0, "a peak beyond the memory");
    o.workspace_limit = 1 * GiB;
    cr_expect_eq(tc_bench_workspace_limit(&o, memory, 32), 1 * GiB, "an explicit limit wins");
    free(peaks);

    cr_expect_eq(tc_trace_peaks_load("/nonexistent/traces.tcr", "GPU-a", &peaks, &n),
                 TC_ENOTFOUND);
    cr_expect(strstr(tc_errmsg(), "--traces /nonexistent/traces.tcr") != NULL, "%s", tc_errmsg());
    unlink(path);
}
