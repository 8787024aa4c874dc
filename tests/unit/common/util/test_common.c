/* Common helpers: command-line parsing, lists, buffers, conv arithmetic,
 * features, error messages. */
#include "tc_buf.h"
#include "tc_cli.h"
#include "tc_conv.h"
#include "tc_error.h"
#include "tc_features.h"
#include "tc_log.h"
#include "tc_paths.h"
#include "tc_test.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *o_db;
static unsigned long o_batch;
static long o_delta;
static double o_price;
static bool o_verbose;

static const tc_opt_t s_opts[] = {
    {"db", TC_OPT_STR, &o_db, "DSN", "database"},
    {"batch", TC_OPT_UINT, &o_batch, "N", "batch size", true},
    {"delta", TC_OPT_INT, &o_delta, "N", "signed"},
    {"price", TC_OPT_DOUBLE, &o_price, "X", "price"},
    {"verbose", TC_OPT_FLAG, &o_verbose, NULL, "talk"},
    {0},
};

static const tc_cmd_spec_t s_spec = {
    .prog = "test cmd",
    .summary = "a test command",
    .positional = "FILE",
    .min_positional = 0,
    .max_positional = 1,
    .config_file = true,
    .opts = s_opts,
};

/* String options may point into the config text, which the result owns:
 * keep the last result alive until the next parse. */
static tc_cli_result_t s_res;

static int s_parse(int argc, char **argv)
{
    tc_cli_result_free(&s_res);
    o_db = NULL;
    o_batch = 0;
    o_delta = 0;
    o_price = 0;
    o_verbose = false;
    return tc_cli_parse(&s_spec, argc, argv, &s_res);
}

Test(cli, parses_every_type, .timeout = 10)
{
    char *argv[] = {"cmd", "--db", "x=1", "--batch=32", "--delta", "-3", "--price", "1.5",
                    "--verbose", "file.onnx"};
    cr_assert_eq(s_parse(10, argv), 0, "%s", tc_errmsg());
    cr_assert_str_eq(o_db, "x=1");
    cr_assert_eq(o_batch, 32);
    cr_assert_eq(o_delta, -3);
    cr_assert_float_eq(o_price, 1.5, 1e-12);
    cr_assert(o_verbose);
    cr_assert(tc_cli_given(&s_spec, "price"));
}

Test(cli, errors_name_the_flag, .timeout = 10)
{
    char *a1[] = {"cmd", "--batch", "-4"};
    cr_assert_eq(s_parse(3, a1), TC_EUSAGE);
    cr_assert(strstr(tc_errmsg(), "--batch"), "%s", tc_errmsg());
    char *a2[] = {"cmd", "--batch", "8", "--bogus"};
    cr_assert_eq(s_parse(4, a2), TC_EUSAGE);
    cr_assert(strstr(tc_errmsg(), "--bogus"), "%s", tc_errmsg());
    char *a3[] = {"cmd"};
    cr_assert_eq(s_parse(1, a3), TC_EUSAGE);
    cr_assert(strstr(tc_errmsg(), "--batch is required"), "%s", tc_errmsg());
    char *a4[] = {"cmd", "--batch", "8", "a", "b"};
    cr_assert_eq(s_parse(5, a4), TC_EUSAGE);
    cr_assert(strstr(tc_errmsg(), "'b'"), "%s", tc_errmsg());
    char *a5[] = {"cmd", "--batch", "8", "--price", "cheap"};
    cr_assert_eq(s_parse(5, a5), TC_EUSAGE);
    cr_assert_eq(tc_exit_status(TC_EUSAGE), 2);
}

/* Replace the contents of the config file at `path`. */
static void s_write_config(const char *path, const char *text)
{
    int fd = open(path, O_WRONLY | O_TRUNC);
    cr_assert_geq(fd, 0);
    cr_assert_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
}

Test(cli, config_file_keys_and_precedence, .timeout = 10)
{
    char path[] = "/tmp/tc_cfg_XXXXXX";
    close(mkstemp(path));
    s_write_config(path, "# comment\nbatch = 16\ndb = \"host=a dbname=b\"  # trailing\nprice=2.5\n");
    char *argv[] = {"cmd", "--config", path, "--price", "9"};
    cr_assert_eq(s_parse(5, argv), 0, "%s", tc_errmsg());
    cr_assert_eq(o_batch, 16);
    cr_assert_str_eq(o_db, "host=a dbname=b");
    cr_assert_float_eq(o_price, 9.0, 1e-12, "the command line wins");

    s_write_config(path, "batch = 16\ncolour = blue\n");
    char *argv2[] = {"cmd", "--config", path};
    cr_assert_eq(s_parse(3, argv2), TC_EINVAL);
    cr_assert(strstr(tc_errmsg(), "unknown key 'colour'") && strstr(tc_errmsg(), ":2:"), "%s",
              tc_errmsg());
    unlink(path);
}

/* --check-config reads everything a run would and stops: a valid file passes
 * (help_shown tells the command not to run), an unknown key, a bad value or a
 * missing required option fails as in a real run. */
Test(cli, check_config_validates_without_running, .timeout = 10)
{
    char path[] = "/tmp/tc_cfg_XXXXXX";
    close(mkstemp(path));
    s_write_config(path, "batch = 16\nprice = 2.5\nverbose = yes\n");
    char *argv[] = {"cmd", "--config", path, "--check-config"};
    cr_assert_eq(s_parse(4, argv), 0, "%s", tc_errmsg());
    cr_assert(s_res.help_shown, "a valid check must stop the command");
    cr_assert_eq(o_batch, 16);

    const char *bads[] = {"batch = 16\nwindow = 3\n", "batch = sixteen\n", "price = 2\n"};
    const char *why[] = {"unknown key 'window'", "expects a non-negative integer",
                         "--batch is required"};
    for (int i = 0; i < 3; i++) {
        s_write_config(path, bads[i]);
        int rc = s_parse(4, argv);
        cr_assert_lt(rc, 0, "'%s' must fail the check", bads[i]);
        cr_assert_not(s_res.help_shown);
        cr_assert(strstr(tc_errmsg(), why[i]), "%s", tc_errmsg());
    }
    unlink(path);

    /* Only commands that take --config know the flag. */
    tc_cmd_spec_t plain = s_spec;
    plain.config_file = false;
    char *argv2[] = {"cmd", "--batch", "8", "--check-config"};
    tc_cli_result_free(&s_res);
    cr_assert_eq(tc_cli_parse(&plain, 4, argv2, &s_res), TC_EUSAGE);
}

Test(cli, uint_lists, .timeout = 10)
{
    unsigned long *v = NULL;
    size_t n = 0;
    cr_assert_eq(tc_parse_uint_list("32,8,16,8", "--batch", 1, 4096, &v, &n), 0);
    cr_assert_eq(n, 3);
    cr_assert(v[0] == 8 && v[1] == 16 && v[2] == 32);
    free(v);
    cr_assert_eq(tc_parse_uint_list("8..256", "--batch", 1, 4096, &v, &n), 0);
    cr_assert_eq(n, 6);
    cr_assert(v[0] == 8 && v[5] == 256);
    free(v);
    cr_assert_eq(tc_parse_uint_list("8..64:8,100", "--batch", 1, 4096, &v, &n), 0);
    cr_assert_eq(n, 9);
    cr_assert(v[7] == 64 && v[8] == 100);
    free(v);
    const char *bad[] = {"", "8,", "a", "8..", "64..8", "0..8", "8..16:0", "1,99999", "-1",
                         "8;16"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        cr_assert_eq(tc_parse_uint_list(bad[i], "--batch", 1, 4096, &v, &n), TC_EUSAGE,
                     "'%s' must be refused", bad[i]);
        cr_assert(strstr(tc_errmsg(), "--batch"), "%s", tc_errmsg());
        cr_assert_null(v);
    }
}

Test(cli, name_lists, .timeout = 10)
{
    char **v = NULL;
    size_t n = 0;
    cr_assert_eq(tc_parse_name_list("resnet18, vgg11 ,alexnet", "--models", &v, &n), 0);
    cr_assert_eq(n, 3);
    cr_assert_str_eq(v[1], "vgg11");
    tc_free_strv(v, n);
    cr_assert_eq(tc_parse_name_list("a,,b", "--models", &v, &n), TC_EUSAGE);
}

Test(buf, grows_and_escapes, .timeout = 10)
{
    tc_buf_t b = {0};
    for (int i = 0; i < 1000; i++)
        tc_buf_printf(&b, "%04d", i);
    cr_assert_eq(b.len, 4000);
    cr_assert_eq(strncmp(b.data + 3996, "0999", 4), 0);
    tc_buf_reset(&b);
    tc_buf_json_str(&b, "a\"b\\c\n\x01");
    cr_assert_str_eq(tc_buf_str(&b), "\"a\\\"b\\\\c\\n\\u0001\"");
    tc_buf_reset(&b);
    tc_buf_json_num(&b, 0.0 / 0.0);
    cr_assert_str_eq(tc_buf_str(&b), "null");
    tc_buf_free(&b);
}

Test(conv, output_size_macs_and_labels, .timeout = 10)
{
    tc_conv_config_t c = tc_conv_config_default();
    c.n = 32, c.c = 64, c.h = c.w = 56, c.k = 64, c.r = c.s = 3, c.pad_h = c.pad_w = 1;
    cr_assert_eq(tc_conv_out_h(&c), 56);
    cr_assert_float_eq(tc_conv_macs(&c), 32.0 * 64 * 56 * 56 * 64 * 9, 1);
    cr_assert_eq(tc_conv_weight_count(&c), 64 * 64 * 9);
    char label[128];
    tc_conv_config_label(&c, label, sizeof label);
    cr_assert_str_eq(label, "n32 c64 56x56 k64 3x3/1 p1");
    /* resnet stem: 7x7/2 pad 3 on 224 -> 112 */
    c.c = 3, c.h = c.w = 224, c.r = c.s = 7, c.stride_h = c.stride_w = 2, c.pad_h = c.pad_w = 3;
    cr_assert_eq(tc_conv_out_w(&c), 112);
    /* depthwise with dilation */
    c = tc_conv_config_default();
    c.c = c.k = c.groups = 32, c.h = c.w = 14, c.r = c.s = 3, c.dilation_h = c.dilation_w = 2;
    c.pad_h = c.pad_w = 2;
    cr_assert_eq(tc_conv_out_h(&c), 14);
    cr_assert_eq(tc_conv_weight_count(&c), 32 * 9);
    cr_assert_eq(tc_conv_config_check(&c), 0);
    c.groups = 5;
    cr_assert_eq(tc_conv_config_check(&c), TC_EINVAL);
    c.groups = 1, c.pad_h = c.pad_w = 0, c.h = c.w = 3;
    cr_assert_eq(tc_conv_out_h(&c), 0, "a 5x5 effective filter does not fit 3x3");
    cr_assert_eq(tc_conv_config_check(&c), TC_EINVAL);
}

Test(conv, proto_round_trip_and_order, .timeout = 10)
{
    tc_conv_config_t a = tc_conv_config_default(), b;
    a.n = 8, a.c = 3, a.h = 224, a.w = 200, a.k = 64, a.r = 7, a.s = 5, a.pad_h = 3, a.pad_w = 2;
    a.stride_h = 2, a.stride_w = 1, a.groups = 1, a.layout = TRAINCAST__V1__LAYOUT__LAYOUT_NHWC;
    Traincast__V1__ConvConfig p = TRAINCAST__V1__CONV_CONFIG__INIT;
    tc_conv_config_to_proto(&a, &p);
    tc_conv_config_from_proto(&p, &b);
    cr_assert_eq(tc_conv_config_cmp(&a, &b), 0);
    b.k = 65;
    cr_assert_lt(tc_conv_config_cmp(&a, &b), 0);
    cr_assert_gt(tc_conv_config_cmp(&b, &a), 0);
}

Test(features, aggregate_by_class_times_batch, .timeout = 10)
{
    tc_layer_summary_t layers[] = {
        {TC_OPC_CONV, 1728, 1e6, 3072, 16384},
        {TC_OPC_BN, 32, 5e4, 16384, 16384},
        {TC_OPC_ACT, 0, 1.6e4, 16384, 16384},
        {TC_OPC_BN, 64, 5e4, 8192, 8192},
        {TC_OPC_GEMM, 1010, 2e3, 100, 10},
    };
    tc_features_t f;
    tc_features_from_layers(layers, 5, 8, &f);
    cr_assert_eq(f.batch, 8);
    cr_assert_float_eq(f.cls[TC_OPC_BN].layers, 2, 1e-12);
    cr_assert_float_eq(f.cls[TC_OPC_BN].elems_in, 8.0 * (16384 + 8192), 1e-9);
    cr_assert_float_eq(f.cls[TC_OPC_BN].params, 96, 1e-12);
    cr_assert_float_eq(f.total_params, 1728 + 32 + 64 + 1010, 1e-9);
    cr_assert_float_eq(f.total_layers, 5, 1e-12);
    cr_assert_float_eq(f.conv_layers, 1, 1e-12);
    cr_assert_float_eq(f.conv_flops, 8e6, 1e-6);
    double v;
    cr_assert_eq(tc_feature_value(&f, "bn.elems", &v), 0);
    cr_assert_float_eq(v, 2 * 8.0 * (16384 + 8192), 1e-9);
    cr_assert_eq(tc_feature_value(&f, "gemm.flops", &v), 0);
    cr_assert_float_eq(v, 16e3, 1e-9);
    cr_assert_eq(tc_feature_value(&f, "total.params", &v), 0);
    cr_assert_eq(tc_feature_value(&f, "total.one", &v), 0);
    cr_assert_float_eq(v, 1, 0);
    cr_assert_eq(tc_feature_value(&f, "bn.colour", &v), TC_EINVAL);
    cr_assert_eq(tc_feature_value(&f, "lstm.layers", &v), TC_EINVAL);
    cr_assert_eq(tc_op_class_parse("eltwise"), TC_OPC_ELTWISE);
    cr_assert_eq(tc_op_class_parse("nope"), -1);
}

Test(error, context_and_exit_status, .timeout = 10)
{
    int rc = tc_fail(TC_EPARSE, "bad byte %d", 7);
    rc = tc_err_context(rc, "reading %s", "x.onnx");
    cr_assert_eq(rc, TC_EPARSE);
    cr_assert_str_eq(tc_errmsg(), "reading x.onnx: bad byte 7");
    cr_assert_eq(tc_exit_status(TC_EPARSE), 2);
    cr_assert_eq(tc_exit_status(TC_EDB), 1);
    cr_assert_eq(tc_exit_status(0), 0);
    cr_assert_str_eq(tc_strerror(TC_ETIMEOUT), "timed out");
    tc_err_clear();
    cr_assert_str_eq(tc_errmsg(), "");
}

/* The harness and the exports: environment, else the source tree while it
 * exists, else the installed share/traincast next to the executable. */
Test(paths, env_then_source_then_installed, .timeout = 10)
{
    char root[] = "/tmp/tc-paths-XXXXXX", src[128], bin[128], share[160], exe[160], out[512];
    cr_assert_not_null(mkdtemp(root));
    snprintf(src, sizeof src, "%s/src-harness", root);
    snprintf(bin, sizeof bin, "%s/prefix/bin", root);
    snprintf(share, sizeof share, "%s/prefix/share", root);
    snprintf(exe, sizeof exe, "%s/agent", bin);

    tc_resource_pick("/from/env", src, exe, "harness", out, sizeof out);
    cr_expect_str_eq(out, "/from/env");

    /* Nothing exists: the source path, so errors name what a build expects. */
    tc_resource_pick("", src, exe, "harness", out, sizeof out);
    cr_expect_str_eq(out, src);

    /* Installed only: the copy next to the binary. */
    char path[256];
    snprintf(path, sizeof path, "%s/prefix", root);
    cr_assert_eq(mkdir(path, 0700), 0);
    cr_assert_eq(mkdir(bin, 0700), 0);
    cr_assert_eq(mkdir(share, 0700), 0);
    snprintf(path, sizeof path, "%s/traincast", share);
    cr_assert_eq(mkdir(path, 0700), 0);
    snprintf(path, sizeof path, "%s/traincast/harness", share);
    cr_assert_eq(mkdir(path, 0700), 0);
    char want[PATH_MAX];
    cr_assert_not_null(realpath(path, want));
    tc_resource_pick(NULL, src, exe, "harness", out, sizeof out);
    cr_expect_str_eq(out, want);
    tc_resource_pick(NULL, src, exe, "models", out, sizeof out);
    cr_expect_str_eq(out, src, "no installed models directory: the source path");

    /* The source tree wins while it exists. */
    cr_assert_eq(mkdir(src, 0700), 0);
    tc_resource_pick(NULL, src, exe, "harness", out, sizeof out);
    cr_expect_str_eq(out, src);

    /* The live lookup honours the environment on every call. */
    setenv("TRAINCAST_DATA_DIR", "/elsewhere/models", 1);
    cr_expect_str_eq(tc_resource_dir(TC_DIR_MODELS, out, sizeof out), "/elsewhere/models");
    unsetenv("TRAINCAST_DATA_DIR");
    cr_expect_str_neq(tc_resource_dir(TC_DIR_MODELS, out, sizeof out), "/elsewhere/models");

    cr_expect(tc_test_remove_tree(root));
}

Test(log, ratelimit_caps_lines_per_window, .timeout = 10)
{
    tc_ratelimit_t rl = {.burst = 3, .window_ms = 1000};
    int allowed = 0;
    for (int i = 0; i < 50; i++)
        allowed += tc_ratelimit_allow(&rl, 100 + i);
    cr_expect_eq(allowed, 3);
    cr_expect_eq(tc_ratelimit_flush(&rl, 500), 0, "the window is still open");
    cr_expect_eq(tc_ratelimit_flush(&rl, 1200), 47, "one summary of what was suppressed");
    cr_expect_eq(tc_ratelimit_flush(&rl, 1300), 0, "and only one");
    cr_expect(tc_ratelimit_allow(&rl, 1200), "a new window logs again");
}

/* The cap holds in any window, not per fixed window: a burst at the end of
 * one window and another at the start of the next cannot double it. */
Test(log, ratelimit_window_slides, .timeout = 10)
{
    tc_ratelimit_t rl = {.burst = 4, .window_ms = 1000};
    int allowed = 0;
    for (int i = 0; i < 10; i++)
        allowed += tc_ratelimit_allow(&rl, 990 + i);
    cr_expect_eq(allowed, 4);
    allowed = 0;
    for (int i = 0; i < 10; i++)
        allowed += tc_ratelimit_allow(&rl, 1100 + i);
    cr_expect_eq(allowed, 0, "the window from 990 still holds 4 lines at 1100");
    cr_expect(tc_ratelimit_allow(&rl, 1990), "the first line left the window");
    cr_expect_eq(tc_ratelimit_flush(&rl, 1900), 0, "a window has not passed since 994");
    cr_expect_eq(tc_ratelimit_flush(&rl, 1994), 16);
}
