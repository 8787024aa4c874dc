/* Command-line parsing (common/util/tc_cli.h): every option type, errors that
 * name the flag, config files and --check-config, uint and name lists. */
#include "tc_cli.h"
#include "tc_error.h"
#include "tc_test.h"

#include <criterion/criterion.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

/* A flag or key one typo away from a known one is named: a swap of two
 * letters, a letter missing, a name cut short; nothing is suggested for a
 * name far from every flag. */
Test(cli, unknown_flags_suggest_the_closest, .timeout = 10)
{
    char *a1[] = {"cmd", "--bacth", "8"};
    cr_assert_eq(s_parse(3, a1), TC_EUSAGE);
    cr_assert(strstr(tc_errmsg(), "unknown option '--bacth' (did you mean --batch? see test cmd "
                                  "--help)"),
              "%s", tc_errmsg());
    char *a2[] = {"cmd", "--batch", "8", "--verbse"};
    cr_assert_eq(s_parse(4, a2), TC_EUSAGE);
    cr_assert(strstr(tc_errmsg(), "did you mean --verbose?"), "%s", tc_errmsg());
    char *a3[] = {"cmd", "--batch", "8", "--pric=2"};
    cr_assert_eq(s_parse(4, a3), TC_EUSAGE);
    cr_assert(strstr(tc_errmsg(), "'--pric' (did you mean --price?"), "%s", tc_errmsg());
    char *a4[] = {"cmd", "--batch", "8", "--check-confg"};
    cr_assert_eq(s_parse(4, a4), TC_EUSAGE);
    cr_assert(strstr(tc_errmsg(), "did you mean --check-config?"), "%s", tc_errmsg());
    char *a5[] = {"cmd", "--batch", "8", "--quantum"};
    cr_assert_eq(s_parse(4, a5), TC_EUSAGE);
    cr_assert(strstr(tc_errmsg(), "unknown option '--quantum' (see test cmd --help)"), "%s",
              tc_errmsg());
    cr_assert_not(strstr(tc_errmsg(), "did you mean"), "%s", tc_errmsg());

    char path[64];
    const char cfg[] = "batch = 8\ndeltta = 1\n";
    tc_test_temp_file("cfg", cfg, strlen(cfg), path, sizeof path);
    char *a6[] = {"cmd", "--config", path};
    cr_assert_eq(s_parse(3, a6), TC_EINVAL);
    cr_assert(strstr(tc_errmsg(), ":2: unknown key 'deltta' (did you mean --delta? keys are"),
              "%s", tc_errmsg());
    unlink(path);
}

/* --help of `spec` as printed, into `out`. */
static void s_help_text(const tc_cmd_spec_t *spec, char *out, size_t size)
{
    char path[] = "/tmp/tc_help_XXXXXX";
    int fd = mkstemp(path);
    cr_assert_geq(fd, 0);
    fflush(stdout);
    int saved = dup(1);
    dup2(fd, 1);
    tc_cli_print_help(spec);
    fflush(stdout);
    dup2(saved, 1);
    close(saved);
    ssize_t n = pread(fd, out, size - 1, 0);
    close(fd);
    unlink(path);
    cr_assert_geq(n, 0);
    out[n] = '\0';
}

/* An option too long for its column stands on its own line with its
 * description under it; long descriptions wrap at words, indented under
 * themselves; no line runs past 100 columns. */
Test(cli, help_wraps_long_options_and_descriptions, .timeout = 10)
{
    static const char *o_s;
    const tc_opt_t opts[] = {
        {"dtype", TC_OPT_STR, &o_s, "fp32|fp32_strict|tf32|fp16|bf16", "data type of the fits"},
        {"plot-metric", TC_OPT_STR, &o_s, "iteration|epoch", "what the chart shows"},
        {"db", TC_OPT_STR, &o_s, "DSN",
         "the database, a libpq connection string or URI; without it TRAINCAST_DB, then "
         "libpq's environment (PGHOST, PGDATABASE, ...) and its service file decide"},
        {0},
    };
    const tc_cmd_spec_t spec = {.prog = "wrap", .max_positional = 0, .opts = opts};
    char out[4096];
    s_help_text(&spec, out, sizeof out);
    cr_assert(strstr(out, "  --dtype fp32|fp32_strict|tf32|fp16|bf16\n"
                          "                             data type of the fits\n"),
              "%s", out);
    cr_assert(strstr(out, "  --plot-metric iteration|epoch\n"
                          "                             what the chart shows\n"),
              "%s", out);
    cr_assert(strstr(out, "  --db DSN                   the database,"), "%s", out);
    cr_assert(strstr(out, "\n                             "), "%s", out);
    for (const char *line = out; *line;) {
        size_t len = strcspn(line, "\n");
        cr_expect_leq(len, 100, "%.*s", (int)len, line);
        line += len + (line[len] == '\n');
    }
    cr_assert(strstr(out, "its service file decide\n"), "no word lost:\n%s", out);
}

Test(cli, config_file_keys_and_precedence, .timeout = 10)
{
    char path[64];
    tc_test_temp_file("cfg", "", 0, path, sizeof path);
    tc_test_write_file(path,
                       "# comment\nbatch = 16\ndb = \"host=a dbname=b\"  # trailing\nprice=2.5\n");
    char *argv[] = {"cmd", "--config", path, "--price", "9"};
    cr_assert_eq(s_parse(5, argv), 0, "%s", tc_errmsg());
    cr_assert_eq(o_batch, 16);
    cr_assert_str_eq(o_db, "host=a dbname=b");
    cr_assert_float_eq(o_price, 9.0, 1e-12, "the command line wins");

    tc_test_write_file(path, "batch = 16\ncolour = blue\n");
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
    char path[64];
    tc_test_temp_file("cfg", "", 0, path, sizeof path);
    tc_test_write_file(path, "batch = 16\nprice = 2.5\nverbose = yes\n");
    char *argv[] = {"cmd", "--config", path, "--check-config"};
    cr_assert_eq(s_parse(4, argv), 0, "%s", tc_errmsg());
    cr_assert(s_res.help_shown, "a valid check must stop the command");
    cr_assert_eq(o_batch, 16);

    const char *bads[] = {"batch = 16\nwindow = 3\n", "batch = sixteen\n", "price = 2\n"};
    const char *why[] = {"unknown key 'window'", "expects a non-negative integer",
                         "--batch is required"};
    for (int i = 0; i < 3; i++) {
        tc_test_write_file(path, bads[i]);
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

/* A command's start: what does not run leaves nothing to free, and says
 * why (the status, or help_shown); what runs keeps its result. */
Test(cli, begin_frees_what_does_not_run, .timeout = 10)
{
    tc_cli_result_t res;
    char *help[] = {"cmd", "--batch", "8", "--help"};
    cr_assert_eq(tc_cli_begin(&s_spec, 4, help, &res), 0);
    cr_assert(res.help_shown);
    cr_assert_null(res.positional);

    char *bad[] = {"cmd", "--bogus"};
    cr_assert_eq(tc_cli_begin(&s_spec, 2, bad, &res), TC_EUSAGE);
    cr_assert_not(res.help_shown);
    cr_assert_null(res.positional);

    char *run[] = {"cmd", "--batch", "8", "file.onnx"};
    cr_assert_eq(tc_cli_begin(&s_spec, 4, run, &res), 0, "%s", tc_errmsg());
    cr_assert_not(res.help_shown);
    cr_assert_eq(res.n_positional, 1);
    cr_assert_str_eq(res.positional[0], "file.onnx");
    tc_cli_result_free(&res);
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
