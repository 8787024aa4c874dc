/* Least privilege (schema/005_security.sql): `aggregator serve` stores
 * everything as a member of traincast_writer, refuses to start as a role
 * that lacks a privilege it needs (naming it), and warns when it runs as a
 * superuser; traincast_reader reads the analysis views and writes nothing. */
#include "store.h"
#include "tc_error.h"
#include "tc_test.h"
#include "tc_test_gen.h"
#include "tc_test_transport.h"

#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static tc_bed_t s_bed;
static char s_roles[3][64];

/* The bed's connection string as login role `role`. */
static void s_dsn_as(const char *role, char *out, size_t size)
{
    snprintf(out, size, "%s user=%s", s_bed.dsn, role);
}

static void s_setup(void)
{
    tc_bed_init(&s_bed, "roles", NULL);
    const char *kinds[3] = {"writer", "reader", "nobody"};
    for (int i = 0; i < 3; i++) {
        snprintf(s_roles[i], sizeof s_roles[i], "tc_%s_%d", kinds[i], (int)getpid());
        char sql[256];
        snprintf(sql, sizeof sql, "CREATE ROLE %s LOGIN%s%s", s_roles[i],
                 i < 2 ? " IN ROLE traincast_" : "", i < 2 ? kinds[i] : "");
        tc_test_sql(s_bed.dsn, sql);
    }
}

static void s_teardown(void)
{
    if (s_bed.server)
        tc_bed_stop_server(&s_bed, SIGTERM);
    tc_store_t *st = NULL;
    if (tc_store_open(s_bed.dsn, &st) == 0) {
        for (int i = 0; i < 3; i++) {
            char sql[128];
            snprintf(sql, sizeof sql, "DROP OWNED BY %s; DROP ROLE IF EXISTS %s", s_roles[i],
                     s_roles[i]);
            tc_store_exec(st, sql, NULL, 0);
        }
    }
    tc_store_destroy(&st);
    tc_bed_fini(&s_bed);
}

TestSuite(roles, .init = s_setup, .fini = s_teardown, .timeout = 300);

Test(roles, serve_stores_everything_as_a_writer)
{
    char dsn[1400], state[1200], file[1200], log[1200];
    s_dsn_as(s_roles[0], dsn, sizeof dsn);
    /* The bed starts serve with its own --db; a later --db wins. */
    const char *extra[] = {"--db", dsn, NULL};
    tc_bed_agent(&s_bed, "w", true, state, sizeof state);
    tc_bed_start_server(&s_bed, extra);
    snprintf(file, sizeof file, "%s/results.bin", s_bed.dir);
    snprintf(log, sizeof log, "%s/push.log", s_bed.dir);
    tc_gen_opts_t o = tc_gen_defaults("writer-agent");
    cr_assert_eq(tc_gen_write(file, &o, 0, 50), 0);
    cr_assert_eq(tc_test_wait(tc_bed_push(&s_bed, state, file, log, NULL), 120000), 0,
                 "push as a writer failed (log %s, server log %s)", log, s_bed.server_log);
    cr_expect_eq(tc_bed_count(&s_bed, "SELECT count(*) FROM conv_results"), 50);
    cr_expect_eq(tc_bed_count(&s_bed, "SELECT count(*) FROM agent_keys"), 2,
                 "the result id and the agent's own id are bound to its key");
    cr_expect(!tc_test_file_contains(s_bed.server_log, "a superuser"), "log %s",
              s_bed.server_log);
    cr_expect(!tc_test_file_contains(s_bed.server_log, "lacks privileges"), "log %s",
              s_bed.server_log);
    cr_expect_eq(tc_bed_stop_server(&s_bed, SIGTERM), 0, "log %s", s_bed.server_log);
}

Test(roles, serve_refuses_a_role_without_the_grants)
{
    char dsn[1400];
    s_dsn_as(s_roles[2], dsn, sizeof dsn);
    const char *extra[] = {"--db", dsn, NULL};
    tc_bed_spawn_server(&s_bed, extra);
    int st = tc_test_wait(s_bed.server, 30000);
    s_bed.server = 0;
    cr_expect_eq(st, 2, "serve should exit 2, got %d (log %s)", st, s_bed.server_log);
    cr_expect(tc_test_file_contains(s_bed.server_log, "lacks privileges that storing needs"),
              "log %s", s_bed.server_log);
    cr_expect(tc_test_file_contains(s_bed.server_log, "SELECT on schema_version"), "log %s",
              s_bed.server_log);
    cr_expect(tc_test_file_contains(s_bed.server_log, "GRANT traincast_writer TO"), "log %s",
              s_bed.server_log);

    /* A writer whose role lost one grant in this database: named alone. */
    tc_test_sql(s_bed.dsn, "REVOKE INSERT ON conv_results FROM traincast_writer");
    s_dsn_as(s_roles[0], dsn, sizeof dsn);
    tc_bed_spawn_server(&s_bed, extra);
    st = tc_test_wait(s_bed.server, 30000);
    s_bed.server = 0;
    cr_expect_eq(st, 2, "serve should exit 2, got %d (log %s)", st, s_bed.server_log);
    cr_expect(tc_test_file_contains(s_bed.server_log, "needs: INSERT on conv_results; grant"),
              "log %s", s_bed.server_log);
}

Test(roles, serve_warns_as_a_superuser)
{
    tc_bed_start_server(&s_bed, NULL);
    cr_expect(tc_test_file_contains(s_bed.server_log, "a superuser"), "log %s",
              s_bed.server_log);
    cr_expect_eq(tc_bed_stop_server(&s_bed, SIGTERM), 0, "log %s", s_bed.server_log);
}

Test(roles, reader_reads_and_cannot_write)
{
    char dsn[1400], v[64];
    s_dsn_as(s_roles[1], dsn, sizeof dsn);
    tc_store_t *st = NULL;
    cr_assert_eq(tc_store_open(dsn, &st), 0, "%s", tc_errmsg());
    cr_expect_eq(tc_store_exec(st, "SELECT count(*) FROM trace_summary", v, sizeof v), 0, "%s",
                 tc_errmsg());
    cr_expect_eq(tc_store_exec(st, "SELECT count(*) FROM best_conv_time", v, sizeof v), 0, "%s",
                 tc_errmsg());
    /* Tables and views of later migrations too (default privileges). */
    const char *later[] = {"SELECT count(*) FROM predictions", "SELECT count(*) FROM imports",
                           "SELECT count(*) FROM prediction_vs_trace", NULL};
    for (int i = 0; later[i]; i++)
        cr_expect_eq(tc_store_exec(st, later[i], v, sizeof v), 0, "%s: %s", later[i],
                     tc_errmsg());
    int rc = tc_store_exec(st, "INSERT INTO predictions (request_id, model_id, model_name, "
                               "input_size, device, batch, framework, dtype, iteration_ms) "
                               "VALUES ('r', 'm', 'm', 1, 'd', 1, 'f', 'fp32', 1)",
                           NULL, 0);
    cr_expect_neq(rc, 0, "a reader stored a prediction");
    rc = tc_store_exec(st, "INSERT INTO agents (agent_id) VALUES ('x')", NULL, 0);
    cr_expect_neq(rc, 0, "a reader inserted a row");
    cr_expect(strstr(tc_errmsg(), "permission denied"), "%s", tc_errmsg());
    tc_store_destroy(&st);
}
