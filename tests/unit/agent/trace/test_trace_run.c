/* Traces from fake runners (tests/runners/fake_runner.sh): how a run that
 * finishes, runs out of memory, crashes, hangs or breaks the protocol is
 * recorded, and `agent trace` end to end (envelopes, resuming, retrying). */
#include "device.h"
#include "tc_error.h"
#include "tc_resultfile.h"
#include "tc_test.h"
#include "tc_validate.h"
#include "trace_proc.h"
#include "trace_run.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char s_dir[256];

static void s_setup(void)
{
    tc_test_scratch_dir("trace_run", NULL, s_dir, sizeof s_dir);
}

static void s_teardown(void)
{
    (void)tc_test_remove_tree(s_dir);
}

TestSuite(trace_run, .init = s_setup, .fini = s_teardown);

static char s_script[512];

static const tc_trace_request_t s_req = {
    .model = "fakenet", .batch = 4, .input_size = 32, .device = "cpu", .threads = 2,
    .dtype = "fp32", .amp = "", .optimizer = "sgd", .warmup = 1, .iters = 3,
};

/* Measure with the fake runner in `mode`, executed directly (no shell in
 * between), so a signal that kills it reaches the agent as such. */
static void s_measure(const char *mode, uint32_t repeats, double timeout_s, tc_trace_result_t *r)
{
    tc_test_source_path("tests/runners/fake_runner.sh", s_script, sizeof s_script);
    char *argv[] = {"/bin/sh", s_script, (char *)mode, NULL};
    tc_trace_job_t job = {.runner = argv, .req = s_req, .repeats = repeats,
                          .timeout_s = timeout_s, .profile = true};
    cr_assert_eq(tc_trace_measure(&job, NULL, NULL, r), 0, "%s", tc_errmsg());
}

static void s_expect(const char *mode, Traincast__V1__TraceStatus status, const char *needle)
{
    tc_trace_result_t r;
    s_measure(mode, 2, 20, &r);
    cr_assert_eq(r.status, status, "%s: status %d, reason: %s", mode, r.status, r.reason);
    cr_assert(strstr(r.reason, needle), "%s: reason '%s' lacks '%s'", mode, r.reason, needle);
    cr_assert_eq(r.n_samples, 0, "%s: a trace that did not finish keeps no samples", mode);
    cr_assert_null(r.samples);
    cr_assert_eq(r.median_ms, 0);
    tc_trace_result_free(&r);
}

Test(trace_run, repeats_give_samples_medians_and_spread, .timeout = 60)
{
    static char state[300];
    snprintf(state, sizeof state, "FAKE_STATE=%s/count", s_dir);
    putenv(state);
    tc_trace_result_t r;
    s_measure("ok", 3, 20, &r);
    cr_assert_eq(r.status, TRAINCAST__V1__TRACE_STATUS__TRACE_STATUS_OK, "%s", r.reason);
    cr_assert_str_eq(r.reason, "");
    cr_assert_eq(r.n_repeats, 3);
    /* Run k reports 10*k ms: medians 10, 20, 30. */
    cr_assert_float_eq(r.repeat_medians[0], 10, 1e-9);
    cr_assert_float_eq(r.repeat_medians[1], 20, 1e-9);
    cr_assert_float_eq(r.repeat_medians[2], 30, 1e-9);
    cr_assert_float_eq(r.median_ms, 20, 1e-9);
    cr_assert_float_eq(r.spread, (30.0 - 10.0) / 20.0, 1e-9);
    cr_assert_eq(r.n_samples, 3 * 4);
    cr_assert_eq(r.samples[4].repeat, 1);
    cr_assert_eq(r.samples[4].it.index, 0);
    cr_assert(r.samples[4].it.warmup);
    cr_assert(!r.samples[5].it.warmup);
    cr_assert_eq(r.peak_memory_bytes, 3000, "the largest peak of the repeats");
    cr_assert_str_eq(r.info.framework, "fake");
    cr_assert_str_eq(r.info.device_name, "Fake Device");
    cr_assert(r.info.have_op_times);
    cr_assert_float_eq(r.info.op_ms[TC_OPC_CONV], 1.5, 1e-12);
    cr_assert_gt(r.started_at_us, 0);
    tc_trace_result_free(&r);
    unsetenv("FAKE_STATE");
}

/* The fake runner in a canary mode on a CPU of `threads`, two repeats,
 * the load guard off (threshold 100: the machine's load cannot rerun a
 * repeat) and the canary at `canary_slow` (0: off). */
static void s_canary_run(const char *mode, double canary_slow, uint32_t threads,
                         tc_trace_result_t *r)
{
    static char state[300];
    snprintf(state, sizeof state, "FAKE_STATE=%s/canary-%s-%g-%u", s_dir, mode, canary_slow,
             threads);
    putenv(state);
    tc_test_source_path("tests/runners/fake_runner.sh", s_script, sizeof s_script);
    char *argv[] = {"/bin/sh", s_script, (char *)mode, NULL};
    tc_trace_job_t job = {.runner = argv, .req = s_req, .repeats = 2, .timeout_s = 20,
                          .quiet = {.threshold_pct = 100, .wait_s = 1, .retries = 2,
                                    .canary_slow = canary_slow}};
    job.req.threads = threads;
    cr_assert_eq(tc_trace_measure(&job, NULL, NULL, r), 0, "%s", tc_errmsg());
    cr_assert_eq(r->status, TRAINCAST__V1__TRACE_STATUS__TRACE_STATUS_OK, "%s", r->reason);
}

Test(trace_run, iterations_the_canary_read_slow_are_left_out, .timeout = 60)
{
    tc_trace_result_t r;
    s_canary_run("canary", 1.3, 1, &r);
    /* Run 1: 10, 40 (slow), 12 -> 11; run 2 mostly slow, run again; run 3:
     * 10, 10, 10. */
    cr_expect_eq(r.n_repeats, 2);
    cr_expect_eq(r.remeasured, 1, "the mostly slow repeat ran again (%u)", r.remeasured);
    cr_expect_float_eq(r.repeat_medians[0], 11, 1e-9);
    cr_expect_float_eq(r.repeat_medians[1], 10, 1e-9);
    cr_expect_eq(r.slow_iters, 1);
    cr_expect_not(r.disturbed);
    cr_expect_eq(r.n_samples, 8, "every iteration of the repeats kept is stored");
    tc_trace_result_free(&r);

    /* The canary off, or a device of two threads: the runner is not asked,
     * every iteration counts. */
    for (int k = 0; k < 2; k++) {
        s_canary_run("canary", k ? 1.3 : 0, k ? 2 : 1, &r);
        cr_expect_eq(r.remeasured, 0);
        cr_expect_float_eq(r.repeat_medians[0], 12, 1e-9);
        cr_expect_float_eq(r.repeat_medians[1], 40, 1e-9);
        cr_expect_eq(r.slow_iters, 0);
        tc_trace_result_free(&r);
    }
}

Test(trace_run, a_repeat_slow_throughout_is_kept_whole_and_marked, .timeout = 60)
{
    tc_trace_result_t r;
    s_canary_run("canary_slow", 1.3, 1, &r);
    cr_expect_eq(r.remeasured, 4, "two more runs of each repeat, then kept (%u)",
                 r.remeasured);
    cr_expect(r.disturbed);
    cr_expect_float_eq(r.repeat_medians[0], 40, 1e-9, "all its iterations: 40, 40, 10");
    cr_expect_float_eq(r.repeat_medians[1], 40, 1e-9);
    tc_trace_result_free(&r);
}

Test(trace_run, out_of_memory_is_oom_with_the_batch, .timeout = 60)
{
    s_expect("oom", TRAINCAST__V1__TRACE_STATUS__TRACE_STATUS_OOM,
             "repeat 1 of 2: out of memory at batch 4: CUDA out of memory. Tried to allocate");
    s_expect("oom_exit_only", TRAINCAST__V1__TRACE_STATUS__TRACE_STATUS_OOM,
             "out of memory at batch 4: the runner exited with status 3");
}

Test(trace_run, crashes_are_failed_with_the_signal_and_stderr, .timeout = 60)
{
    s_expect("crash", TRAINCAST__V1__TRACE_STATUS__TRACE_STATUS_FAILED,
             "crashed: the runner was killed by signal 11 (Segmentation fault) after 2 lines");
    s_expect("sigkill", TRAINCAST__V1__TRACE_STATUS__TRACE_STATUS_FAILED,
             "crashed: the runner was killed by signal 9 (Killed) after 1 line of output "
             "(SIGKILL from outside: often a memory limit); stderr: fake runner: mode sigkill");
    s_expect("exit1", TRAINCAST__V1__TRACE_STATUS__TRACE_STATUS_FAILED,
             "crashed: the runner exited with status 1 after 1 line of output; stderr: fake "
             "runner: mode exit1, run 1 | Traceback (most recent call last): | RuntimeError: "
             "boom in the model");
    s_expect("error", TRAINCAST__V1__TRACE_STATUS__TRACE_STATUS_FAILED,
             "the runner reported an error: unknown torchvision model fakenet");
}

Test(trace_run, a_runner_that_cannot_start_is_failed, .timeout = 30)
{
    char *argv[] = {"/nonexistent/runner", NULL};
    tc_trace_job_t job = {.runner = argv, .req = s_req, .repeats = 1, .timeout_s = 10};
    tc_trace_result_t r;
    cr_assert_eq(tc_trace_measure(&job, NULL, NULL, &r), 0, "%s", tc_errmsg());
    cr_assert_eq(r.status, TRAINCAST__V1__TRACE_STATUS__TRACE_STATUS_FAILED);
    cr_assert(strstr(r.reason, "status 127") && strstr(r.reason, "cannot run '/nonexistent"),
              "%s", r.reason);
}

static bool s_process_gone(pid_t pid)
{
    /* Gone, or a zombie waiting for its new parent to reap it. */
    char path[64], stat[256] = "";
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return true;
    bool zombie = fgets(stat, sizeof stat, f) && strstr(stat, ") Z ");
    fclose(f);
    return zombie;
}

static pid_t s_read_pid(const char *file)
{
    FILE *f = fopen(file, "r");
    cr_assert_not_null(f, "%s was not written", file);
    int pid = 0;
    cr_assert_eq(fscanf(f, "%d", &pid), 1);
    fclose(f);
    return (pid_t)pid;
}

Test(trace_run, hangs_are_killed_with_their_whole_group, .timeout = 60)
{
    static char env[300], pidfile[280];
    snprintf(pidfile, sizeof pidfile, "%s/pid", s_dir);
    snprintf(env, sizeof env, "FAKE_PIDFILE=%s", pidfile);
    putenv(env);
    tc_trace_result_t r;
    s_measure("hang", 2, 1.5, &r);
    cr_assert_eq(r.status, TRAINCAST__V1__TRACE_STATUS__TRACE_STATUS_FAILED);
    cr_assert(strstr(r.reason, "repeat 1 of 2: hung: still running after the 1.5 s timeout "
                               "(killed) after 2 lines of output"), "%s", r.reason);
    cr_assert_eq(r.n_samples, 0);
    /* The runner's child (a sleep 60) went down with it. */
    pid_t child = s_read_pid(pidfile);
    for (int i = 0; i < 50 && !s_process_gone(child); i++)
        usleep(20000);
    cr_assert(s_process_gone(child), "process %d outlived the timeout", (int)child);
    tc_trace_result_free(&r);
    unsetenv("FAKE_PIDFILE");
}

Test(trace_run, a_process_left_holding_stdout_does_not_hang_the_agent, .timeout = 60)
{
    static char env[300], pidfile[280];
    snprintf(pidfile, sizeof pidfile, "%s/pid", s_dir);
    snprintf(env, sizeof env, "FAKE_PIDFILE=%s", pidfile);
    putenv(env);
    tc_trace_result_t r;
    s_measure("lingering", 1, 30, &r);
    cr_assert_eq(r.status, TRAINCAST__V1__TRACE_STATUS__TRACE_STATUS_OK, "%s", r.reason);
    pid_t child = s_read_pid(pidfile);
    for (int i = 0; i < 50 && !s_process_gone(child); i++)
        usleep(20000);
    cr_assert(s_process_gone(child), "process %d was left running", (int)child);
    tc_trace_result_free(&r);
    unsetenv("FAKE_PIDFILE");
}

Test(trace_run, protocol_violations_fail_with_line_and_text, .timeout = 60)
{
    const Traincast__V1__TraceStatus F = TRAINCAST__V1__TRACE_STATUS__TRACE_STATUS_FAILED;
    s_expect("malformed", F, "invalid runner output, line 3: not a valid JSON line");
    s_expect("malformed", F, ": {\"type\":\"iter\",\"index\":1,\"warmup\":false,\"ms\":5,");
    s_expect("noise", F, "line 2: not a valid JSON line (invalid JSON at byte ");
    s_expect("noise", F, "): epoch 1: loss 6.9");
    s_expect("truncated", F, "line 3: truncated: the output ended without a newline");
    s_expect("nonmono", F, "line 3: \"at_us\" 1700000000000400 is not after the previous "
                           "iteration's 1700000000000500: timestamps must increase");
    s_expect("nan", F, "line 2: not a valid JSON line (invalid JSON at byte ");
    s_expect("huge", F, "line 2: longer than 65536 bytes: xxxx");
    s_expect("nofooter", F, "line 2: the output ended after 1 of 4 iterations without a footer");
    s_expect("mismatch", F, "line 1: \"batch\" is 5 but the runner was asked for 4");
}

Test(trace_run, failure_in_a_later_repeat_discards_the_earlier_ones, .timeout = 60)
{
    /* Repeat 1 is fine, repeat 2 crashes: the whole trace is failed. */
    char script[600], state[300];
    snprintf(script, sizeof script, "%s/flaky.sh", s_dir);
    snprintf(state, sizeof state, "%s/count", s_dir);
    FILE *f = fopen(script, "w");
    cr_assert_not_null(f);
    tc_test_source_path("tests/runners/fake_runner.sh", s_script, sizeof s_script);
    fprintf(f, "n=$(cat %s 2>/dev/null || echo 0); echo $((n+1)) > %s\n"
               "if [ $n -ge 1 ]; then exec sh %s crash; fi\nexec sh %s ok\n",
            state, state, s_script, s_script);
    fclose(f);
    char *argv[] = {"/bin/sh", script, NULL};
    tc_trace_job_t job = {.runner = argv, .req = s_req, .repeats = 3, .timeout_s = 20};
    tc_trace_result_t r;
    cr_assert_eq(tc_trace_measure(&job, NULL, NULL, &r), 0, "%s", tc_errmsg());
    cr_assert_eq(r.status, TRAINCAST__V1__TRACE_STATUS__TRACE_STATUS_FAILED);
    cr_assert(strstr(r.reason, "repeat 2 of 3: crashed"), "%s", r.reason);
    cr_assert_eq(r.n_samples, 0);
    cr_assert_eq(r.n_repeats, 0);
    cr_assert_str_eq(r.info.framework, "fake", "what ran is still known");
}

Test(trace_run, median_and_tail_helpers, .timeout = 10)
{
    double a[] = {5, 1, 3};
    cr_assert_float_eq(tc_trace_median(a, 3), 3, 1e-12);
    double b[] = {4, 1, 3, 2};
    cr_assert_float_eq(tc_trace_median(b, 4), 2.5, 1e-12);
    char out[64];
    tc_proc_tail_lines("one\ntwo\nthree\nfour\n\n", 2, out, sizeof out);
    cr_assert_str_eq(out, "three | four");
    tc_proc_tail_lines("only", 3, out, sizeof out);
    cr_assert_str_eq(out, "only");
    tc_proc_tail_lines("a\tb\x01" "c", 1, out, sizeof out);
    cr_assert_str_eq(out, "a b c");
    tc_proc_tail_lines("", 3, out, sizeof out);
    cr_assert_str_eq(out, "");
}

/* ---- agent trace, end to end through the binary ---- */

typedef struct {
    size_t n;
    size_t ok, oom, failed;
    char reasons[4][1024];
    char keys[4][128];
    int bad;
    char bad_why[512];
} s_seen_t;

static int s_collect(const tc_envelope_t *env, void *arg)
{
    s_seen_t *s = arg;
    if (tc_validate_envelope(env) < 0 && !s->bad) {
        s->bad = 1;
        snprintf(s->bad_why, sizeof s->bad_why, "%s", tc_errmsg());
    }
    const Traincast__V1__TrainTrace *t = env->train_trace;
    if (!t)
        return 0;
    if (s->n < 4) {
        snprintf(s->reasons[s->n], sizeof s->reasons[0], "%s", t->reason);
        snprintf(s->keys[s->n], sizeof s->keys[0], "%s b%u", t->model_id, t->batch);
    }
    s->n++;
    s->ok += t->status == TRAINCAST__V1__TRACE_STATUS__TRACE_STATUS_OK;
    s->oom += t->status == TRAINCAST__V1__TRACE_STATUS__TRACE_STATUS_OOM;
    s->failed += t->status == TRAINCAST__V1__TRACE_STATUS__TRACE_STATUS_FAILED;
    return 0;
}

static int s_agent(const char *mode, const char *out_file, const char *extra, char *output,
                   size_t size)
{
    char cmd[2048];
    tc_test_source_path("tests/runners/fake_runner.sh", s_script, sizeof s_script);
    snprintf(cmd, sizeof cmd,
             "FAKE_STATE=%s/count %s/agent/agent trace --models fakenet --batches 4,8 "
             "--input-size 32 --threads 1 --warmup 1 --iters 2 --repeat 2 --no-graph "
             "--agent-id test-agent --allocator system --runner '%s %s' --out %s %s",
             s_dir, TC_BINARY_DIR, s_script, mode, out_file, extra);
    return tc_test_run(cmd, output, size);
}

Test(trace_run, agent_trace_writes_valid_envelopes_and_resumes, .timeout = 120)
{
    char out_file[300], output[8192];
    snprintf(out_file, sizeof out_file, "%s/traces.tcr", s_dir);
    int st = s_agent("ok", out_file, "", output, sizeof output);
    cr_assert_eq(st, 0, "exit %d: %s", st, output);
    cr_assert(strstr(output, "torchvision:fakenet@32                    4  ok"), "%s", output);
    cr_assert(strstr(output, "torchvision:fakenet@32                    8  ok"), "%s", output);

    /* Read back with the generated reader: every record valid, fields as run. */
    s_seen_t seen = {0};
    cr_assert_eq(tc_resultfile_read(out_file, false, s_collect, &seen, NULL), 0, "%s",
                 tc_errmsg());
    cr_assert_eq(seen.n, 2);
    cr_assert_eq(seen.ok, 2);
    cr_assert(!seen.bad, "%s", seen.bad_why);

    /* A second run finds both and measures nothing. */
    st = s_agent("crash", out_file, "", output, sizeof output);
    cr_assert_eq(st, 0, "exit %d: %s", st, output);
    cr_assert(strstr(output, "2 of 2 traces are already there"), "%s", output);
    memset(&seen, 0, sizeof seen);
    cr_assert_eq(tc_resultfile_read(out_file, false, s_collect, &seen, NULL), 0);
    cr_assert_eq(seen.n, 2, "nothing new was written");

    /* A new batch in the plan is measured; a crash is recorded as failed
     * and makes the exit status 1. */
    char crash_file[300];
    snprintf(crash_file, sizeof crash_file, "%s/crash.tcr", s_dir);
    st = s_agent("crash", crash_file, "", output, sizeof output);
    cr_assert_eq(st, 1, "exit %d: %s", st, output);
    cr_assert(strstr(output, "2 of 2 traces failed"), "%s", output);
    memset(&seen, 0, sizeof seen);
    cr_assert_eq(tc_resultfile_read(crash_file, false, s_collect, &seen, NULL), 0);
    cr_assert_eq(seen.failed, 2);
    cr_assert(!seen.bad, "%s", seen.bad_why);
    cr_assert(strstr(seen.reasons[0], "repeat 1 of 2: crashed: the runner exited with status "
                                      "139 (signal 11, Segmentation fault, as a shell reports "
                                      "it)"), "%s", seen.reasons[0]);
    /* Failed traces are retried on the next run. */
    st = s_agent("oom", crash_file, "", output, sizeof output);
    cr_assert_eq(st, 0, "exit %d: %s", st, output);
    memset(&seen, 0, sizeof seen);
    cr_assert_eq(tc_resultfile_read(crash_file, false, s_collect, &seen, NULL), 0);
    cr_assert_eq(seen.n, 4);
    cr_assert_eq(seen.oom, 2);
    cr_assert(strstr(seen.reasons[2], "out of memory at batch 4"), "%s", seen.reasons[2]);
    cr_assert(strstr(seen.reasons[3], "out of memory at batch 8"), "%s", seen.reasons[3]);
}

static const Traincast__V1__TrainTrace *s_first;
static tc_envelope_t *s_first_env;

static int s_keep_first(const tc_envelope_t *env, void *arg)
{
    (void)arg;
    if (!s_first_env) {
        uint8_t *buf;
        size_t len;
        cr_assert_eq(tc_envelope_pack(env, &buf, &len), 0);
        cr_assert_eq(tc_envelope_unpack(buf, len, 0, &s_first_env), 0);
        free(buf);
        s_first = s_first_env->train_trace;
    }
    return 0;
}

Test(trace_run, the_envelope_carries_the_trace, .timeout = 60)
{
    char out_file[300], output[8192];
    snprintf(out_file, sizeof out_file, "%s/one.tcr", s_dir);
    int st = s_agent("ok", out_file, "--batches 4", output, sizeof output);
    cr_assert_eq(st, 0, "exit %d: %s", st, output);
    cr_assert_eq(tc_resultfile_read(out_file, false, s_keep_first, NULL, NULL), 0);
    cr_assert_not_null(s_first);
    const Traincast__V1__TrainTrace *t = s_first;
    cr_assert_str_eq(s_first_env->agent_id, "test-agent");
    cr_assert(tc_msgid_valid(s_first_env->message_id));
    cr_assert_eq(t->status, TRAINCAST__V1__TRACE_STATUS__TRACE_STATUS_OK);
    cr_assert_str_eq(t->model_id, "torchvision:fakenet@32");
    cr_assert_eq(t->batch, 4);
    cr_assert_eq(t->input_size, 32);
    cr_assert_eq(t->dtype, TRAINCAST__V1__DTYPE__DTYPE_FP32);
    cr_assert_str_eq(t->optimizer, "sgd");
    cr_assert_eq(t->policy, TRAINCAST__V1__POLICY__POLICY_HEURISTIC);
    cr_assert_str_eq(t->framework, "fake");
    cr_assert_str_eq(t->framework_version, "0.1");
    cr_assert_eq(t->warmup, 1);
    cr_assert_eq(t->iters, 2);
    cr_assert_eq(t->repeats, 2);
    cr_assert_eq(t->n_iterations, 6);
    cr_assert_eq(t->iterations[3]->repeat, 1);
    cr_assert_eq(t->iterations[3]->index, 0);
    cr_assert(t->iterations[3]->warmup);
    cr_assert_gt(t->iterations[5]->at_us, t->iterations[4]->at_us);
    cr_assert_float_eq(t->median_ms, 15, 1e-9);
    cr_assert_float_eq(t->spread, (20.0 - 10.0) / 15.0, 1e-9);
    cr_assert_eq(t->peak_memory_bytes, 2000);
    cr_assert_eq(t->n_op_times, 2, "op times of the profiled first repeat");
    cr_assert_str_eq(t->op_times[0]->op_class, "conv");
    cr_assert_float_eq(t->op_times[0]->ms, 1.5, 1e-12);
    cr_assert_str_eq(t->op_times[1]->op_class, "bn");
    cr_assert_null(t->graph, "--no-graph");
    cr_assert_eq(t->threads, 1);
    cr_assert(strstr(t->runner, "fake_runner.sh ok"), "%s", t->runner);
    /* The device is the one the conv benchmarks record: the device layer's
     * identity of the CPU with 1 thread (and this process's allocator, which
     * `--allocator system` kept for the agent). */
    const Traincast__V1__Device *d = t->device;
    tc_device_t *dev = NULL;
    cr_assert_eq(tc_device_open("cpu", 1, &dev), 0, "%s", tc_errmsg());
    Traincast__V1__Device want = TRAINCAST__V1__DEVICE__INIT;
    cr_assert_eq(tc_device_describe(dev, &want), 0);
    cr_assert_eq(d->kind, TRAINCAST__V1__DEVICE_KIND__DEVICE_KIND_CPU);
    cr_assert_str_eq(d->name, want.name);
    cr_assert_str_eq(d->uuid, want.uuid);
    cr_assert(strstr(d->name, " (1 thread)"), "%s", d->name);
    cr_assert_eq(d->threads, 1);
    cr_assert_str_eq(d->library, "onednn");
    cr_assert_str_eq(d->library_version, want.library_version);
    cr_assert_gt(d->multiprocessors, 0);
    tc_device_close(&dev);
    tc_envelope_free(&s_first_env);
}

Test(trace_run, bad_usage_is_exit_2, .timeout = 30)
{
    char out[4096], cmd[1024];
    const char *cases[][2] = {
        {"--models x --batches 4 --out /dev/null --device gpu0", "expected cpu or cuda:I"},
        {"--models x --batches 0 --out /dev/null", "--batches"},
        {"--models x --batches 4 --out /dev/null --repeat 0", "repeat must be 1..1000"},
        {"--models x --batches 4 --out /dev/null --amp fp8", "amp: expected fp16 or bf16"},
        {"--models x --batches 4 --out /dev/null --dtype int8", "dtype: expected fp32"},
        {"--models x --batches 4 --out /dev/null --threads 5000", "too large"},
        {"--models x --batches 4 --out /dev/null --threads 4000", "logical CPUs"},
        {"--models x.onnx --batches 4 --out /dev/null", "identified by its graph"},
        {"--batches 4 --out /dev/null", "--models is required"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        snprintf(cmd, sizeof cmd, "%s/agent/agent trace --no-graph %s", TC_BINARY_DIR,
                 cases[i][0]);
        int st = tc_test_run(cmd, out, sizeof out);
        cr_assert_eq(st, 2, "%s: exit %d: %s", cases[i][0], st, out);
        cr_assert(strstr(out, cases[i][1]), "%s: %s", cases[i][0], out);
    }
}
