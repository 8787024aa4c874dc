/* The agent routes every conv where PyTorch really runs it.
 *
 * For two CNNs in settings that exercise both sides of PyTorch's rule
 * (resnet50 on 1 thread at batch 8, whose 1x1 convs stay on the native
 * path; mobilenet_v2 on 2 threads at batch 1 and 64 px, whose small convs
 * do), agent/harness/conv_routes.py trains one step under the profiler and
 * reports the op each conv's forward and backward recorded
 * (aten::mkldnn_convolution, or aten::_slow_conv2d_forward and
 * aten::_slow_conv2d_backward). The agent's cpu device with the same
 * thread count must build, for every direction of every conv, a plan on the
 * same path. Any difference fails. Skipped without PyTorch. */
#include "device.h"

#include "tc_error.h"
#include "tc_json.h"
#include "tc_run.h"
#include "tc_test.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void s_need_torch(void)
{
    char *argv[] = {(char *)tc_python(), "-c", "import torch, torchvision", NULL};
    char out[2048];
    if (tc_run_capture(argv, true, out, sizeof out) != 0)
        cr_skip_test("%s cannot import torch and torchvision (set TRAINCAST_PYTHON to a Python "
                     "that can): %s", tc_python(), out);
}

static unsigned s_num(const tc_json_value_t *o, const char *key)
{
    int64_t v = 0;
    cr_assert(tc_json_int(tc_json_get(o, key), &v), "no integer \"%s\"", key);
    return (unsigned)v;
}

static void s_compare(const char *model, unsigned batch, unsigned size, unsigned threads)
{
    s_need_torch();
    tc_device_t *dev = NULL;
    int rc = tc_device_open("cpu", threads, &dev);
    if (rc == TC_EINVAL)
        cr_skip_test("no %u CPUs here: %s", threads, tc_errmsg());
    cr_assert_eq(rc, 0, "%s", tc_errmsg());
    tc_device_env_t env;
    tc_device_environment(dev, &env);
    cr_assert(strncmp(env.framework, "pytorch ", 8) == 0, "the device found no PyTorch: %s",
              env.framework);

    char script[1024], b[16], s[16], t[16];
    tc_test_source_path("agent/harness/conv_routes.py", script, sizeof script);
    snprintf(b, sizeof b, "%u", batch);
    snprintf(s, sizeof s, "%u", size);
    snprintf(t, sizeof t, "%u", threads);
    char *argv[] = {(char *)tc_python(), script, "--model", (char *)model, "--batch", b,
                    "--input-size", s, "--threads", t, NULL};
    static char out[1 << 20];
    int status = tc_run_capture(argv, false, out, sizeof out);
    cr_assert_eq(status, 0, "%s exited %d: %s", script, status, out);

    size_t convs = 0, checked = 0, wrong = 0, native = 0;
    char diffs[4096] = "";
    for (char *line = strtok(out, "\n"); line; line = strtok(NULL, "\n")) {
        tc_json_t *doc = NULL;
        cr_assert_eq(tc_json_parse(line, strlen(line), NULL, &doc), 0, "%s: %s", line,
                     tc_errmsg());
        const tc_json_value_t *o = tc_json_root(doc);
        tc_conv_config_t c = tc_conv_config_default();
        c.n = batch, c.c = s_num(o, "c"), c.h = s_num(o, "h"), c.w = s_num(o, "w");
        c.k = s_num(o, "k"), c.r = s_num(o, "r"), c.s = s_num(o, "s");
        c.pad_h = s_num(o, "pad_h"), c.pad_w = s_num(o, "pad_w");
        c.stride_h = s_num(o, "stride_h"), c.stride_w = s_num(o, "stride_w");
        c.dilation_h = s_num(o, "dil_h"), c.dilation_w = s_num(o, "dil_w");
        c.groups = s_num(o, "groups");
        bool first = tc_json_bool(tc_json_get(o, "first"));
        const char *fwd = tc_json_string(tc_json_get(o, "fwd"));
        const char *bwd = tc_json_string(tc_json_get(o, "bwd"));
        cr_assert(fwd && bwd, "%s", line);
        cr_assert_str_neq(bwd, "missing", "no backward op found for %s", line);
        const Traincast__V1__Direction dirs[] = {TRAINCAST__V1__DIRECTION__DIRECTION_FWD,
                                                 TRAINCAST__V1__DIRECTION__DIRECTION_BWD_FILTER,
                                                 TRAINCAST__V1__DIRECTION__DIRECTION_BWD_DATA};
        for (size_t d = 0; d < (first ? 2u : 3u); d++) {
            const char *want = d == 0 ? fwd : bwd;
            tc_conv_spec_t spec = {.config = c, .direction = dirs[d],
                                   .policy = TRAINCAST__V1__POLICY__POLICY_HEURISTIC, .seed = 1};
            tc_conv_plan_t *plan = NULL;
            cr_assert_eq(tc_conv_plan_create(dev, &spec, &plan), 0, "%s: %s", line, tc_errmsg());
            const char *algo = tc_conv_plan_algo(plan, 0)->name;
            const char *got = strstr(algo, "pytorch-native:") != algo ? "onednn"
                              : strstr(algo, ":dilated")             ? "native-dilated"
                                                                     : "native";
            native += strcmp(got, "onednn") != 0;
            if (strcmp(got, want) != 0) {
                char label[128];
                tc_conv_config_label(&c, label, sizeof label);
                size_t len = strlen(diffs);
                snprintf(diffs + len, sizeof diffs - len, "\n  %s %s: PyTorch %s, agent %s (%s)",
                         label, tc_direction_name(dirs[d]), want, got, algo);
                wrong++;
            }
            checked++;
            tc_conv_plan_destroy(&plan);
        }
        convs++;
        tc_json_destroy(&doc);
    }
    tc_device_close(&dev);
    cr_assert_gt(convs, 10, "%s: only %zu convs reported", model, convs);
    cr_expect_eq(wrong, 0, "%s (batch %u, %u px, %u threads): %zu of %zu conv directions "
                 "routed elsewhere than PyTorch ran them:%s",
                 model, batch, size, threads, wrong, checked, diffs);
    /* Both paths are exercised, so the comparison can tell them apart. */
    cr_expect(native > 0 && native < checked, "%s: %zu of %zu directions native", model, native,
              checked);
}

Test(conv_route, resnet50_1_thread_batch_8, .timeout = 300) { s_compare("resnet50", 8, 64, 1); }

Test(conv_route, mobilenet_v2_2_threads_batch_1, .timeout = 300)
{
    s_compare("mobilenet_v2", 1, 64, 2);
}
