/* The references of conv results, checked once per statement by triggers
 * (schema/010_batched_references.sql), hold the rules their foreign keys
 * held: against a real server (the ctest pg fixture). */
#include "store.h"
#include "tc_error.h"
#include "tc_test.h"
#include "tc_test_msg.h"
#include "tc_test_synth.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static tc_store_t *s_store;

/* A copy of stored result 0 under a new message id with one column set
 * to VALUE: the statement a writer with a wrong id would run. */
#define S_COPY_RESULT(col, value)                                                                  \
    "INSERT INTO conv_results (message_id, seq, device_id, config_id, batch, direction, "         \
    "policy, algo, median_ms, min_ms, max_ms, stddev_ms, repetitions) "                            \
    "SELECT 'copy', seq, device_id, config_id, batch, direction, policy, algo, median_ms, "        \
    "min_ms, max_ms, stddev_ms, repetitions FROM conv_results WHERE seq IN (0, 1) "                \
    "ORDER BY seq; UPDATE conv_results SET " col " = " value " WHERE message_id = 'copy' "         \
    "AND seq = 1"

static void s_setup(void)
{
    s_store = tc_synth_fresh_db("store_refs");
    /* 3 results of one device, 2 algorithm timings each. */
    tc_envelope_t *env = tc_test_envelope("agent-refs");
    env->body_case = TRAINCAST__V1__ENVELOPE__BODY_CONV_RESULTS;
    env->conv_results = tc_test_conv_results("uuid-refs", 3);
    tc_store_outcome_t out;
    cr_assert_eq(tc_store_put(s_store, env, &out), 0, "%s", tc_errmsg());
    tc_envelope_free(&env);
}

static void s_teardown(void)
{
    tc_store_destroy(&s_store);
}

static long s_count(const char *sql)
{
    return tc_synth_count(s_store, sql);
}

/* SQL fails as a foreign key would, naming `detail`; nothing of it stays. */
static void s_refused(tc_store_t *store, const char *sql, const char *detail)
{
    cr_assert_neq(tc_store_exec(store, sql, NULL, 0), 0, "%s succeeded", sql);
    cr_assert(strstr(tc_errmsg(), "SQLSTATE 23503"), "%s: %s", sql, tc_errmsg());
    cr_assert(strstr(tc_errmsg(), detail), "%s: want '%s' in: %s", sql, detail, tc_errmsg());
}

TestSuite(store_refs, .init = s_setup, .fini = s_teardown, .timeout = 120);

Test(store_refs, a_result_or_timing_naming_a_missing_row_is_refused)
{
    cr_assert_eq(s_count("SELECT count(*) FROM conv_results"), 3);
    /* In one statement with a good row: the statement's keys are checked, not only its first. */
    s_refused(s_store,
              "INSERT INTO conv_results (message_id, seq, device_id, config_id, batch, direction, "
              "policy, algo, median_ms, min_ms, max_ms, stddev_ms, repetitions) "
              "SELECT 'bad', seq, CASE seq WHEN 2 THEN 999 ELSE device_id END, config_id, batch, "
              "direction, policy, algo, median_ms, min_ms, max_ms, stddev_ms, repetitions "
              "FROM conv_results",
              "Key (device_id)=(999) is not present in table \"devices\"");
    s_refused(s_store,
              "INSERT INTO conv_results (message_id, seq, device_id, config_id, batch, direction, "
              "policy, algo, median_ms, min_ms, max_ms, stddev_ms, repetitions) "
              "SELECT 'bad', seq, device_id, config_id + seq * 1000, batch, direction, policy, "
              "algo, median_ms, min_ms, max_ms, stddev_ms, repetitions FROM conv_results",
              "is not present in table \"conv_configs\"");
    s_refused(s_store,
              "INSERT INTO conv_algo_timings (result_id, algo, status) "
              "SELECT result_id, 'x', 'ok' FROM conv_results UNION ALL SELECT -5, 'x', 'ok'",
              "Key (result_id)=(-5) is not present in table \"conv_results\"");
    /* An UPDATE is checked as an INSERT is. */
    s_refused(s_store, "BEGIN; " S_COPY_RESULT("config_id", "-7") "; COMMIT",
              "Key (config_id)=(-7) is not present");
    cr_assert_eq(tc_store_exec(s_store, "ROLLBACK", NULL, 0), 0, "%s", tc_errmsg());
    s_refused(s_store, "UPDATE conv_algo_timings SET result_id = -3 WHERE algo_id = 1",
              "Key (result_id)=(-3) is not present");
    cr_assert_eq(s_count("SELECT count(*) FROM conv_results"), 3);
    cr_assert_eq(s_count("SELECT count(*) FROM conv_algo_timings"), 6);
    cr_assert_eq(s_count("SELECT count(*) FROM conv_algo_timings WHERE result_id < 0"), 0);
}

Test(store_refs, a_referenced_device_or_config_stays)
{
    s_refused(s_store, "DELETE FROM devices", "is still referenced from table \"conv_results\"");
    s_refused(s_store, "DELETE FROM conv_configs WHERE c = 17",
              "is still referenced from table \"conv_results\"");
    s_refused(s_store, "TRUNCATE devices CASCADE", "Truncate table \"conv_results\" first");
    s_refused(s_store, "UPDATE devices SET device_id = device_id + 100", "does not change");
    s_refused(s_store, "UPDATE conv_configs SET config_id = config_id + 100", "does not change");
    s_refused(s_store, "UPDATE conv_results SET result_id = result_id + 100", "does not change");
    cr_assert_eq(s_count("SELECT count(*) FROM conv_results JOIN devices USING (device_id) "
                         "JOIN conv_configs USING (config_id)"),
                 3);
    /* Other columns change as before (the upsert of a device seen again). */
    cr_assert_eq(tc_store_exec(s_store, "UPDATE devices SET host = 'h2'", NULL, 0), 0, "%s",
                 tc_errmsg());
    /* Without its results a config goes. */
    cr_assert_eq(tc_store_exec(s_store,
                               "DELETE FROM conv_results WHERE config_id = (SELECT config_id "
                               "FROM conv_configs WHERE c = 17); "
                               "DELETE FROM conv_configs WHERE c = 17",
                               NULL, 0),
                 0, "%s", tc_errmsg());
    cr_assert_eq(s_count("SELECT count(*) FROM conv_configs"), 2);
}

Test(store_refs, deleting_results_deletes_their_timings)
{
    cr_assert_eq(tc_store_exec(s_store, "DELETE FROM conv_results WHERE seq = 0", NULL, 0), 0,
                 "%s", tc_errmsg());
    cr_assert_eq(s_count("SELECT count(*) FROM conv_algo_timings"), 4);
    cr_assert_eq(s_count("SELECT count(*) FROM conv_algo_timings t WHERE NOT EXISTS "
                         "(SELECT 1 FROM conv_results r WHERE r.result_id = t.result_id)"),
                 0);
    cr_assert_eq(tc_store_exec(s_store, "TRUNCATE conv_results", NULL, 0), 0, "%s", tc_errmsg());
    cr_assert_eq(s_count("SELECT count(*) FROM conv_algo_timings"), 0);
}

/* The check locks the rows it found, as a foreign key does: a device
 * deleted while a writer's results that name it are not yet committed
 * waits for the writer (here: gives up after its lock timeout) instead of
 * going and leaving the results without their device. */
Test(store_refs, a_device_being_written_to_is_not_deleted_under_the_writer)
{
    char dev[32];
    cr_assert_eq(tc_store_exec(s_store,
                               "INSERT INTO devices (uuid, kind, name) VALUES ('uuid-new', "
                               "'cpu', 'New CPU') RETURNING device_id",
                               dev, sizeof dev),
                 0, "%s", tc_errmsg());
    char sql[2048];
    snprintf(sql, sizeof sql, "BEGIN; " S_COPY_RESULT("device_id", "%s"), dev);
    cr_assert_eq(tc_store_exec(s_store, sql, NULL, 0), 0, "%s", tc_errmsg());

    tc_store_t *other = NULL;
    cr_assert_eq(tc_store_open(getenv("TRAINCAST_DB"), &other), 0, "%s", tc_errmsg());
    snprintf(sql, sizeof sql,
             "SET lock_timeout = '300ms'; DELETE FROM devices WHERE device_id = %s", dev);
    cr_assert_neq(tc_store_exec(other, sql, NULL, 0), 0, "the device went under the writer");
    cr_assert(strstr(tc_errmsg(), "lock timeout"), "%s", tc_errmsg());

    cr_assert_eq(tc_store_exec(s_store, "COMMIT", NULL, 0), 0, "%s", tc_errmsg());
    snprintf(sql, sizeof sql, "SET lock_timeout = 0; DELETE FROM devices WHERE device_id = %s",
             dev);
    s_refused(other, sql, "is still referenced from table \"conv_results\"");
    tc_store_destroy(&other);
    cr_assert_eq(s_count("SELECT count(*) FROM conv_results r WHERE NOT EXISTS "
                         "(SELECT 1 FROM devices d WHERE d.device_id = r.device_id)"),
                 0);
}
