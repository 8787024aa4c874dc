/* Bad input classed one way everywhere: a directory where a file is
 * expected is bad input (exit 2, the message says so), like a missing file;
 * `--input-size 0` is refused; a result file whose last record is cut short
 * is refused whole by `agent push` (exit 2, the byte offset named, nothing
 * in the journal) unless --accept-truncated; libpq's messages go through
 * the log with its prefix. */
#include "store.h"

#include "tc_error.h"
#include "tc_test.h"
#include "tc_test_proc.h"
#include "tc_test_synth.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char s_agent[1024], s_aggregator[1024], s_dir[1024];

static void s_setup(void)
{
    tc_test_binary("agent", s_agent, sizeof s_agent);
    tc_test_binary("aggregator", s_aggregator, sizeof s_aggregator);
    tc_test_scratch_dir("bad_paths", "a_directory", s_dir, sizeof s_dir);
}

TestSuite(bad_paths, .init = s_setup);

/* Run CMD (a shell command line), expect exit `want` and `needle` in its output. */
static void s_expect(const char *cmd, int want, const char *needle)
{
    char out[16384];
    int st = tc_test_run(cmd, out, sizeof out);
    cr_expect_eq(st, want, "'%s' exited %d, want %d:\n%s", cmd, st, want, out);
    cr_expect(strstr(out, needle) != NULL, "'%s' should say \"%s\":\n%s", cmd, needle, out);
}

Test(bad_paths, a_directory_where_a_file_is_expected_is_bad_input, .timeout = 120)
{
    char cmd[4096], d[1200], dsn[1024];
    snprintf(d, sizeof d, "%s/a_directory", s_dir);
    tc_test_fresh_db("tc_test_bad_paths", dsn, sizeof dsn);
    snprintf(cmd, sizeof cmd, "%s model describe %s 2>&1", s_agent, d);
    s_expect(cmd, 2, "is a directory, not a file");
    snprintf(cmd, sizeof cmd, "%s push %s --aggregator tcp://127.0.0.1:9 --state %s/state 2>&1",
             s_agent, d, s_dir);
    s_expect(cmd, 2, "is a directory, not a file");
    snprintf(cmd, sizeof cmd, "%s migrate --db '%s' >/dev/null 2>&1 && %s import %s --db '%s' 2>&1",
             s_aggregator, dsn, s_aggregator, d, dsn);
    s_expect(cmd, 2, "is a directory, not a file");
    snprintf(cmd, sizeof cmd, "%s predict --gpu all --model %s --batch 8 --db '%s' 2>&1",
             s_aggregator, d, dsn);
    s_expect(cmd, 2, "is a directory, not a file");
    /* A missing one: the same class. */
    snprintf(cmd, sizeof cmd, "%s model describe %s/missing.onnx 2>&1", s_agent, s_dir);
    s_expect(cmd, 2, "missing.onnx");
    /* --input-size 0 is not the model's own size in disguise. */
    snprintf(cmd, sizeof cmd, "%s model describe torchvision:resnet18 --input-size 0 2>&1",
             s_agent);
    s_expect(cmd, 2, "--input-size must be between 1 and 16384");
}

Test(bad_paths, a_result_file_cut_short_is_refused_whole, .timeout = 300)
{
    char cmd[4096], convs[1200], file[1200], out[16384];
    snprintf(convs, sizeof convs, "%s/tiny.convs", s_dir);
    FILE *f = fopen(convs, "w");
    cr_assert_not_null(f);
    fprintf(f, "model tiny\n8 8 8 8 3 3 1 1 1 1 1 1 1 1 0\n4 6 6 4 1 1 0 0 1 1 1 1 1 1 0\n");
    fclose(f);
    snprintf(file, sizeof file, "%s/results.tcr", s_dir);
    snprintf(cmd, sizeof cmd,
             "%s bench --convs %s --batches 1,2 --device cpu --threads 1 --budget-ms 5 "
             "--max-reps 5 --out %s --agent-id bad-paths-test 2>&1",
             s_agent, convs, file);
    cr_assert_eq(tc_test_run(cmd, out, sizeof out), 0, "%s", out);
    struct stat st;
    cr_assert_eq(stat(file, &st), 0);
    cr_assert_gt(st.st_size, 64);
    cr_assert_eq(truncate(file, st.st_size - 37), 0);
    snprintf(cmd, sizeof cmd,
             "%s push %s --insecure --aggregator tcp://127.0.0.1:9 --state %s/push-state "
             "--timeout 1 2>&1",
             s_agent, file, s_dir);
    char want[128];
    snprintf(want, sizeof want, "of %lld (the file was copied or written incompletely)",
             (long long)st.st_size - 37);
    s_expect(cmd, 2, want);
    s_expect(cmd, 2, "--accept-truncated");
    /* Refused before anything else: no state, no journal. */
    char state[1300];
    snprintf(state, sizeof state, "%s/push-state", s_dir);
    cr_expect_neq(stat(state, &st), 0, "the refused push made %s", state);
    /* Asked to, it takes the whole records (then fails to reach nobody). */
    snprintf(cmd, sizeof cmd,
             "%s push %s --accept-truncated --insecure --aggregator tcp://127.0.0.1:9 --state "
             "%s/push-state --timeout 1 2>&1",
             s_agent, file, s_dir);
    tc_test_run(cmd, out, sizeof out);
    cr_expect(strstr(out, "an incomplete last record was skipped") != NULL, "%s", out);
}

Test(bad_paths, postgresql_messages_go_through_the_log, .timeout = 60)
{
    char dsn[1024];
    tc_test_fresh_db("tc_test_bad_paths_log", dsn, sizeof dsn);
    /* A warning the server sends outside a result: through the log. */
    tc_store_t *st = NULL;
    cr_assert_eq(tc_store_open(dsn, &st), 0, "%s", tc_errmsg());
    int fds[2];
    cr_assert_eq(pipe(fds), 0);
    int saved = dup(2);
    dup2(fds[1], 2);
    char v[64];
    int rc = tc_store_exec(st, "DO $$ BEGIN RAISE WARNING 'from the server'; END $$", v, sizeof v);
    fflush(stderr);
    dup2(saved, 2);
    close(fds[1]);
    char buf[4096] = "";
    ssize_t n = read(fds[0], buf, sizeof buf - 1);
    buf[n > 0 ? n : 0] = '\0';
    close(fds[0]);
    tc_store_destroy(&st);
    cr_assert_eq(rc, 0, "%s", tc_errmsg());
    cr_expect(strstr(buf, "warn: PostgreSQL: WARNING:  from the server") != NULL, "%s", buf);
    cr_expect(strchr(buf, '\n') == strrchr(buf, '\n'), "one line: %s", buf);
}
