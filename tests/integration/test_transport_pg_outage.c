/* PostgreSQL stopped for 10 s in the middle of a stream: the aggregator
 * holds what it received, acknowledges nothing it did not commit, and
 * stores everything exactly once when the database is back. Uses its own
 * cluster (deploy/pg-local.sh) so the suite's other tests are not disturbed. */
#include "tc_test.h"
#include "tc_test_gen.h"
#include "tc_test_transport.h"

#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#define COUNT_CONV "SELECT count(*) FROM conv_results"

static char s_pg_dir[1200];

static int s_pg(const char *verb, char *out, size_t size)
{
    return tc_cluster(s_pg_dir, verb, out, size);
}

static void s_stop_cluster(void)
{
    if (s_pg_dir[0])
        tc_cluster(s_pg_dir, "stop", NULL, 0);
}

Test(transport_pg, database_stopped_ten_seconds_midstream, .timeout = 600,
     .fini = s_stop_cluster)
{
    char out[8192], admin[1024];
    tc_cluster_start("pgoutage-cluster", s_pg_dir, sizeof s_pg_dir, admin, sizeof admin);

    tc_bed_t bed;
    tc_bed_init(&bed, "pgoutage", admin);
    char state[1200], file[1200], log[1200];
    tc_bed_agent(&bed, "a", true, state, sizeof state);
    tc_bed_start_server(&bed, NULL);
    snprintf(file, sizeof file, "%s/results.bin", bed.dir);
    snprintf(log, sizeof log, "%s/push.log", bed.dir);
    tc_gen_opts_t o = tc_gen_defaults("outage-agent");
    cr_assert_eq(tc_gen_write(file, &o, 0, 2000), 0);
    pid_t push = tc_bed_push(&bed, state, file, log, NULL);

    long long before = tc_bed_wait_count(&bed, COUNT_CONV, 200, 120000);
    cr_assert_geq(before, 200, "nothing stored before the outage (log %s)", bed.server_log);
    cr_assert_eq(s_pg("stop", out, sizeof out), 0, "pg-local.sh stop: %s", out);
    tc_test_sleep_ms(10000);
    cr_assert_eq(s_pg("start", out, sizeof out), 0, "pg-local.sh start again: %s", out);

    cr_expect_eq(tc_test_wait(push, 300000), 0, "agent push failed (log %s)", log);
    long long stored = tc_bed_count(&bed, COUNT_CONV);
    cr_expect_lt(before, 2000, "the stream ended before the outage; use more messages");
    cr_expect_eq(stored, 2000, "stored %lld of 2000", stored);
    cr_expect_eq(tc_bed_count(&bed, "SELECT count(DISTINCT message_id) FROM conv_results"), 2000);
    cr_expect_eq(tc_bed_count(&bed, "SELECT count(*) FROM received_messages WHERE kind = "
                                    "'conv_results'"),
                 2000);
    cr_expect(tc_test_file_contains(bed.server_log, "storing failed"),
              "the outage should be logged (log %s)", bed.server_log);
    cr_expect(tc_test_file_contains(bed.server_log, "storing again"),
              "the recovery should be logged (log %s)", bed.server_log);
    cr_expect_eq(tc_bed_waiting(state), 0);
    cr_expect_eq(tc_bed_stop_server(&bed, SIGTERM), 0, "log %s", bed.server_log);
    tc_bed_fini(&bed);
}
