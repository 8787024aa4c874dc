/* The PostgreSQL store against a real server (the ctest pg fixture). */
#include "store.h"
#include "store_report.h"
#include "store_server.h"
#include "tc_conv_key.h"
#include "tc_matmul_key.h"
#include "tc_error.h"
#include "tc_test.h"
#include "tc_test_msg.h"
#include "tc_test_proc.h"
#include "tc_test_synth.h"

#include <criterion/criterion.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static tc_store_t *s_store;

static void s_setup(void)
{
    char dsn[1024];
    tc_test_fresh_db("store", dsn, sizeof dsn);
    cr_assert_eq(tc_store_open(dsn, &s_store), 0, "%s", tc_errmsg());
    int applied = 0;
    cr_assert_eq(tc_store_migrate(s_store, &applied), 0, "%s", tc_errmsg());
}

static void s_teardown(void)
{
    tc_store_destroy(&s_store);
}

static long s_count(const char *sql)
{
    return tc_synth_count(s_store, sql);
}

static void s_put_ok(tc_envelope_t *env, tc_store_outcome_t want)
{
    tc_store_outcome_t out;
    int rc = tc_store_put(s_store, env, &out);
    cr_assert_eq(rc, 0, "put %s: %s", tc_body_name(env), tc_errmsg());
    cr_assert_eq(out, want);
}

/* A ConvResults message of `agent` with n results on the device `uuid`. */
static tc_envelope_t *s_conv_results_env(const char *agent, const char *uuid, size_t n)
{
    tc_envelope_t *env = tc_test_envelope(agent);
    env->body_case = TRAINCAST__V1__ENVELOPE__BODY_CONV_RESULTS;
    env->conv_results = tc_test_conv_results(uuid, n);
    return env;
}

TestSuite(store, .init = s_setup, .fini = s_teardown, .timeout = 120);

Test(store, migrate_twice_is_noop)
{
    int applied = -1, version = 0;
    cr_assert_eq(tc_store_migrate(s_store, &applied), 0, "%s", tc_errmsg());
    cr_assert_eq(applied, 0);
    cr_assert_eq(tc_store_schema_version(s_store, &version), 0);
    cr_assert_eq(version, tc_store_binary_schema_version());
    cr_assert_eq(tc_store_check_schema(s_store), 0);
    cr_assert_eq(s_count("SELECT count(*) FROM schema_version"), version);
}

/* The conv key is defined once (tc_conv_key.h): the schema's UNIQUE key of
 * conv_configs must be that list, in that order, or every join the store
 * generates from it would miss or double rows. */
Test(store, conv_configs_key_is_the_conv_key)
{
    char cols[512];
    cr_assert_eq(tc_store_exec(s_store,
                               "SELECT string_agg(a.attname, ', ' ORDER BY k.ord) FROM "
                               "pg_constraint con CROSS JOIN LATERAL unnest(con.conkey) WITH "
                               "ORDINALITY AS k(attnum, ord) JOIN pg_attribute a ON a.attrelid "
                               "= con.conrelid AND a.attnum = k.attnum WHERE con.conrelid = "
                               "'conv_configs'::regclass AND con.contype = 'u'",
                               cols, sizeof cols),
                 0, "%s", tc_errmsg());
    cr_assert_str_eq(cols, TC_SQL_CONV_KEY_COLS(""));
    cr_assert_eq(s_count("SELECT count(*) FROM information_schema.columns WHERE table_name = "
                         "'conv_configs' AND column_name <> 'config_id'"),
                 TC_CONV_KEY_FIELDS, "conv_configs has a column the key does not name");
}

Test(store, newer_database_is_refused)
{
    cr_assert_eq(tc_store_exec(s_store,
                               "INSERT INTO schema_version (version, name) VALUES (999, '999_future')",
                               NULL, 0),
                 0);
    int applied = 0;
    int rc = tc_store_migrate(s_store, &applied);
    cr_assert_eq(rc, TC_EVERSION);
    cr_assert(strstr(tc_errmsg(), "999") && strstr(tc_errmsg(), "newer"), "%s", tc_errmsg());
    cr_assert_eq(tc_store_check_schema(s_store), TC_EVERSION);
}

Test(store, empty_database_check_says_migrate)
{
    char dsn[1024];
    tc_test_fresh_db("store_empty", dsn, sizeof dsn);
    tc_store_t *s = NULL;
    cr_assert_eq(tc_store_open(dsn, &s), 0, "%s", tc_errmsg());
    int v = -1;
    cr_assert_eq(tc_store_schema_version(s, &v), 0);
    cr_assert_eq(v, 0);
    cr_assert_eq(tc_store_check_schema(s), TC_EVERSION);
    cr_assert(strstr(tc_errmsg(), "aggregator migrate"), "%s", tc_errmsg());
    tc_store_destroy(&s);
}

Test(store, hello_round_trip)
{
    tc_envelope_t *env = tc_test_envelope("agent-1");
    env->body_case = TRAINCAST__V1__ENVELOPE__BODY_HELLO;
    env->hello = tc_test_hello("box1", "uuid-hello");
    s_put_ok(env, TC_STORE_STORED);
    char v[256];
    cr_assert_eq(tc_store_exec(s_store,
                               "SELECT name || '|' || host || '|' || version FROM agents WHERE "
                               "agent_id = 'agent-1'",
                               v, sizeof v),
                 0);
    cr_assert_str_eq(v, "box1|testhost|0.1.0");
    cr_assert_eq(tc_store_exec(s_store,
                               "SELECT name || '|' || kind || '|' || threads || '|' || "
                               "library_version || '|' || agent_id FROM devices WHERE uuid = "
                               "'uuid-hello'",
                               v, sizeof v),
                 0);
    cr_assert_str_eq(v, "Test CPU (2 threads)|cpu|2|2.6.3|agent-1");
}

/* An agent whose CPU device changed (another allocator, BLAS or framework:
 * another name and uuid) registers a new device; the old one keeps its
 * name and its results. */
Test(store, a_changed_device_is_a_new_row_and_the_old_one_stays)
{
    tc_envelope_t *env = s_conv_results_env("agent-1", "uuid-glibc", 2);
    env->conv_results->device->name =
        "Test CPU (2 threads) [glibc 2.36 | reference BLAS 3.11.0 | pytorch 1.13.0a0]";
    s_put_ok(env, TC_STORE_STORED);
    env = tc_test_envelope("agent-1");
    env->body_case = TRAINCAST__V1__ENVELOPE__BODY_HELLO;
    env->hello = tc_test_hello("box1", "uuid-tcmalloc");
    env->hello->devices[0]->name =
        "Test CPU (2 threads) [tcmalloc 2.10 | OpenBLAS 0.3.21 openmp | pytorch 1.13.0a0]";
    s_put_ok(env, TC_STORE_STORED);
    char v[512];
    cr_assert_eq(tc_store_exec(s_store,
                               "SELECT string_agg(d.name || ':' || (SELECT count(*) FROM "
                               "conv_results r WHERE r.device_id = d.device_id), ',' ORDER BY "
                               "d.uuid) FROM devices d WHERE d.agent_id = 'agent-1'",
                               v, sizeof v),
                 0);
    cr_assert_str_eq(v, "Test CPU (2 threads) [glibc 2.36 | reference BLAS 3.11.0 | pytorch "
                        "1.13.0a0]:2,Test CPU (2 threads) [tcmalloc 2.10 | OpenBLAS 0.3.21 "
                        "openmp | pytorch 1.13.0a0]:0");
}

Test(store, conv_results_round_trip)
{
    tc_envelope_t *env = s_conv_results_env("agent-1", "uuid-conv", 5);
    s_put_ok(env, TC_STORE_STORED);
    cr_assert_eq(s_count("SELECT count(*) FROM conv_results"), 5);
    cr_assert_eq(s_count("SELECT count(*) FROM conv_configs"), 5);
    cr_assert_eq(s_count("SELECT count(*) FROM conv_algo_timings"), 10);
    char v[256];
    cr_assert_eq(tc_store_exec(s_store,
                               "SELECT c || ',' || h || ',' || k || ',' || batch || ',' || "
                               "direction || ',' || policy || ',' || median_ms || ',' || "
                               "array_length(samples_ms, 1) || ',' || sample_offsets_us[3] FROM "
                               "conv_results r JOIN conv_configs USING (config_id) WHERE seq = 4",
                               v, sizeof v),
                 0);
    cr_assert_str_eq(v, "20,28,32,8,bwd_data,heuristic,5.5,3,2500");
    cr_assert_eq(tc_store_exec(s_store,
                               "SELECT algo || '/' || status || '/' || message FROM conv_algo_timings WHERE "
                               "algo_id = 1 LIMIT 1",
                               v, sizeof v),
                 0);
    cr_assert_str_eq(v, "gemm:ref/skipped/heuristic policy\tstops at the first fit");
    /* The same configs again in another message reuse the config rows. */
    tc_envelope_t *again = s_conv_results_env("agent-1", "uuid-conv", 5);
    s_put_ok(again, TC_STORE_STORED);
    cr_assert_eq(s_count("SELECT count(*) FROM conv_configs"), 5);
    cr_assert_eq(s_count("SELECT count(*) FROM conv_results"), 10);
    cr_assert_eq(s_count("SELECT count(*) FROM best_conv_time"), 5);
}

/* Every column of conv_results and conv_algo_timings reads back as sent
 * (they go in by binary COPY: store_rows_bin.c), NULLs and empty arrays
 * included. */
Test(store, every_column_of_a_conv_result_reads_back_as_sent)
{
    tc_envelope_t *env = s_conv_results_env("agent-cols", "uuid-cols", 3);
    Traincast__V1__ConvResult **r = env->conv_results->results;
    r[0]->route = strdup("mkldnn");
    r[0]->sm_clock_mhz = 1410;
    r[0]->power_w = 250.5;
    r[0]->sample_offsets_us[0] = 5000000000; /* more than 32 bits */
    r[1]->n_samples_ms = 0;                /* no samples kept */
    r[1]->n_sample_offsets_us = 0;
    r[2]->n_sample_offsets_us = 0; /* samples without offsets */
    r[2]->measured_at_us = 0;      /* time not known */
    r[2]->stddev_ms = 0.1 + 0.2;   /* a double that needs all 17 digits */
    s_put_ok(env, TC_STORE_STORED);
    static const char *const want[] = {
        "(0,8,fwd,heuristic,onednn,jit:avx2,1,1.5,1,2,0.25,3,4096,\"2023-11-14 22:13:20\","
        "\"{1,1.5,2}\",\"{5000000000,1000,2500}\",mkldnn,2.6.3,1410,250.5)",
        "(1,8,bwd_data,heuristic,onednn,jit:avx2,1,2.5,2,3,0.25,3,4096,"
        "\"2023-11-14 22:13:20.000001\",{},{},,2.6.3,,)",
        "(2,8,bwd_filter,heuristic,onednn,jit:avx2,1,3.5,3,4,0.30000000000000004,3,4096,,"
        "\"{3,3.5,4}\",{},,2.6.3,,)",
    };
    for (int i = 0; i < 3; i++) {
        char sql[512], v[512];
        snprintf(sql, sizeof sql,
                 "SELECT (seq, batch, direction, policy, backend, algo, algo_id, median_ms, "
                 "min_ms, max_ms, stddev_ms, repetitions, workspace_bytes, measured_at AT TIME "
                 "ZONE 'UTC', samples_ms, sample_offsets_us, route, library_version, "
                 "sm_clock_mhz, power_w)::text FROM conv_results WHERE seq = %d",
                 i);
        cr_assert_eq(tc_store_exec(s_store, sql, v, sizeof v), 0, "%s", tc_errmsg());
        cr_assert_str_eq(v, want[i]);
    }
    char v[512];
    cr_assert_eq(tc_store_exec(s_store,
                               "SELECT string_agg((t.algo, t.algo_id, t.time_ms, "
                               "t.workspace_bytes, t.status, t.message)::text, ' ' ORDER BY "
                               "t.algo_id) FROM conv_algo_timings t JOIN conv_results r "
                               "USING (result_id) WHERE r.seq = 0",
                               v, sizeof v),
                 0, "%s", tc_errmsg());
    cr_assert_str_eq(v, "(jit:avx2,0,1.5,0,ok,) (gemm:ref,1,0,0,skipped,\"heuristic "
                        "policy\tstops at the first fit\")");
}

/* A device first recorded in a batch that is rolled back is recorded again
 * by the next message (the connection remembers recent agents and devices
 * only once their transaction committed), and a device seen lately is not
 * recorded anew by every message. */
Test(store, a_device_of_a_rolled_back_batch_is_recorded_again)
{
    cr_assert_eq(tc_store_batch_begin(s_store, NULL, 0), 0, "%s", tc_errmsg());
    tc_envelope_t *first = s_conv_results_env("agent-rb", "uuid-rolled-back", 2);
    s_put_ok(first, TC_STORE_STORED);
    tc_store_batch_rollback(s_store);
    cr_assert_eq(s_count("SELECT count(*) FROM devices WHERE uuid = 'uuid-rolled-back'"), 0);

    for (int i = 0; i < 3; i++) {
        tc_envelope_t *env = s_conv_results_env("agent-rb", "uuid-rolled-back", 2);
        s_put_ok(env, TC_STORE_STORED);
    }
    cr_assert_eq(s_count("SELECT count(*) FROM devices WHERE uuid = 'uuid-rolled-back'"), 1);
    cr_assert_eq(s_count("SELECT count(*) FROM agents WHERE agent_id = 'agent-rb'"), 1);
    cr_assert_eq(s_count("SELECT count(*) FROM conv_results r JOIN devices d USING (device_id) "
                         "WHERE d.uuid = 'uuid-rolled-back'"),
                 6);
    /* Changed details are recorded at once (a new name: an update). */
    tc_envelope_t *renamed = s_conv_results_env("agent-rb", "uuid-rolled-back", 1);
    renamed->conv_results->device->name = "renamed device";
    s_put_ok(renamed, TC_STORE_STORED);
    cr_assert_eq(s_count("SELECT count(*) FROM devices WHERE name = 'renamed device'"), 1);
}

/* A connection remembers the conv configs' ids it resolved, but only once
 * their transaction committed: configs first inserted in a batch that is
 * rolled back are inserted again by the next message (with a remembered
 * id the results' reference check would refuse them). */
Test(store, a_config_of_a_rolled_back_batch_is_recorded_again)
{
    cr_assert_eq(tc_store_batch_begin(s_store, NULL, 0), 0, "%s", tc_errmsg());
    s_put_ok(s_conv_results_env("agent-cfg", "uuid-cfg", 3), TC_STORE_STORED);
    tc_store_batch_rollback(s_store);
    cr_assert_eq(s_count("SELECT count(*) FROM conv_configs"), 0);

    s_put_ok(s_conv_results_env("agent-cfg", "uuid-cfg", 3), TC_STORE_STORED);
    s_put_ok(s_conv_results_env("agent-cfg", "uuid-cfg", 3), TC_STORE_STORED);
    cr_assert_eq(s_count("SELECT count(*) FROM conv_configs"), 3);
    cr_assert_eq(s_count("SELECT count(DISTINCT config_id) FROM conv_results"), 3);
    cr_assert_eq(s_count("SELECT count(*) FROM conv_results"), 6);

    /* Many configs (the connection's table grows), the second time all
     * known: each result still points at its own config. */
    s_put_ok(s_conv_results_env("agent-cfg", "uuid-cfg", 600), TC_STORE_STORED);
    s_put_ok(s_conv_results_env("agent-cfg", "uuid-cfg", 600), TC_STORE_STORED);
    cr_assert_eq(s_count("SELECT count(*) FROM conv_configs"), 600);
    cr_assert_eq(s_count("SELECT count(*) FROM conv_results"), 1206);
    cr_assert_eq(s_count("SELECT count(*) FROM conv_results JOIN conv_configs USING (config_id) "
                         "WHERE c <> 16 + seq"),
                 0);
}

/* A config deleted by hand after the connection learned its id: the next
 * message with it fails as an outage would (to be tried again, not
 * refused), and the retry records the config anew. */
Test(store, a_config_deleted_by_hand_is_looked_up_again)
{
    s_put_ok(s_conv_results_env("agent-del", "uuid-del", 2), TC_STORE_STORED);
    cr_assert_eq(tc_store_exec(s_store,
                               "DELETE FROM conv_algo_timings; DELETE FROM conv_results; "
                               "DELETE FROM conv_configs",
                               NULL, 0),
                 0, "%s", tc_errmsg());
    tc_envelope_t *env = s_conv_results_env("agent-del", "uuid-del", 2);
    tc_store_outcome_t out;
    int rc = tc_store_put(s_store, env, &out);
    cr_assert_eq(rc, TC_EDB, "want a retry, got %d: %s", rc, tc_errmsg());
    cr_assert(strstr(tc_errmsg(), "trying again"), "%s", tc_errmsg());
    s_put_ok(env, TC_STORE_STORED);
    cr_assert_eq(s_count("SELECT count(*) FROM conv_configs"), 2);
    cr_assert_eq(s_count("SELECT count(*) FROM conv_results"), 2);
}

Test(store, model_graph_round_trip)
{
    tc_envelope_t *env = tc_test_envelope("agent-1");
    env->body_case = TRAINCAST__V1__ENVELOPE__BODY_MODEL_GRAPH;
    env->model_graph = tc_test_model_graph("torchvision:tinynet@32");
    s_put_ok(env, TC_STORE_STORED);
    cr_assert_eq(s_count("SELECT count(*) FROM model_layers WHERE model_id = "
                         "'torchvision:tinynet@32'"),
                 6);
    cr_assert_eq(s_count("SELECT sum(multiplicity) FROM model_convs"), 4);
    cr_assert_eq(s_count("SELECT count(*) FROM model_convs WHERE first_layer"), 1);
    cr_assert_eq(s_count("SELECT params FROM models"), 3 * 16 * 9 + 16 * 2 + 16 * 10 + 10);
    cr_assert_eq(s_count("SELECT out_shape[2] FROM model_layers WHERE idx = 0"), 32);
}

Test(store, trace_round_trip_with_graph)
{
    tc_envelope_t *env = tc_test_envelope("agent-2");
    env->body_case = TRAINCAST__V1__ENVELOPE__BODY_TRAIN_TRACE;
    env->train_trace = tc_test_trace("uuid-trace", "torchvision:tinynet@32", 16, 40.0);
    s_put_ok(env, TC_STORE_STORED);
    cr_assert_eq(s_count("SELECT count(*) FROM traces WHERE status = 'ok' AND batch = 16"), 1);
    cr_assert_eq(s_count("SELECT count(*) FROM trace_iterations"), 4);
    cr_assert_eq(s_count("SELECT count(*) FROM trace_iterations WHERE warmup"), 1);
    cr_assert_eq(s_count("SELECT count(*) FROM trace_op_times"), 1);
    cr_assert_eq(s_count("SELECT count(*) FROM models"), 1);
    cr_assert_eq(s_count("SELECT round(median_ms)::int FROM trace_summary"), 40);
    /* A second trace of the same model keeps one copy of the graph. */
    tc_envelope_t *env2 = tc_test_envelope("agent-2");
    env2->body_case = TRAINCAST__V1__ENVELOPE__BODY_TRAIN_TRACE;
    env2->train_trace = tc_test_trace("uuid-trace", "torchvision:tinynet@32", 16, 44.0);
    s_put_ok(env2, TC_STORE_STORED);
    cr_assert_eq(s_count("SELECT count(*) FROM model_layers"), 6);
    cr_assert_eq(s_count("SELECT traces FROM trace_summary"), 2);
    cr_assert_eq(s_count("SELECT round(1000 * spread_between_traces)::int FROM trace_summary"),
                 95);
    /* The comparison page's measured point is the truth the fit takes, the
     * geometric mean sqrt(40 x 44) = 41.95, not the median 42; its range
     * the two traces; the device's floor |40 - 44| / (2 x 41.95). */
    char device[256];
    cr_assert_eq(tc_store_exec(s_store, "SELECT device FROM trace_summary", device, sizeof device),
                 0, "%s", tc_errmsg());
    const char *devices[] = {device};
    tc_measured_point_t *m = NULL;
    size_t n = 0;
    cr_assert_eq(tc_store_measured_points(s_store, "torchvision:tinynet@32", devices, 1,
                                          "pytorch", "fp32", "", &m, &n),
                 0, "%s", tc_errmsg());
    cr_assert_eq(n, 1);
    cr_assert_float_eq(m[0].measured_ms, sqrt(40.0 * 44.0), 1e-9, "measured %.6f",
                       m[0].measured_ms);
    cr_assert_float_eq(m[0].min_ms, 40.0, 1e-9);
    cr_assert_float_eq(m[0].max_ms, 44.0, 1e-9);
    free(m);
    tc_device_spread_t sp;
    cr_assert_eq(tc_store_device_spread_each(s_store, devices, 1, "pytorch", "fp32", &sp), 0, "%s",
                 tc_errmsg());
    cr_assert_float_eq(sp.noise_floor, 4.0 / (2 * sqrt(40.0 * 44.0)), 1e-9, "floor %.6f",
                       sp.noise_floor);
}

Test(store, oom_trace_is_stored_with_reason)
{
    tc_envelope_t *env = tc_test_envelope("agent-2");
    env->body_case = TRAINCAST__V1__ENVELOPE__BODY_TRAIN_TRACE;
    Traincast__V1__TrainTrace *t = tc_test_trace("uuid-oom", "torchvision:tinynet@32", 512, 1);
    t->status = TRAINCAST__V1__TRACE_STATUS__TRACE_STATUS_OOM;
    t->reason = "CUDA out of memory at batch 512";
    t->n_iterations = 0;
    env->train_trace = t;
    s_put_ok(env, TC_STORE_STORED);
    cr_assert_eq(s_count("SELECT count(*) FROM trace_failures WHERE status = 'oom' AND batch = 512"),
                 1);
    cr_assert_eq(s_count("SELECT count(*) FROM trace_summary"), 0);
}

Test(store, duplicate_message_id_stores_nothing)
{
    tc_envelope_t *env = s_conv_results_env("agent-1", "uuid-dup", 3);
    s_put_ok(env, TC_STORE_STORED);
    s_put_ok(env, TC_STORE_DUPLICATE);
    cr_assert_eq(s_count("SELECT count(*) FROM conv_results"), 3);
    cr_assert_eq(s_count("SELECT count(*) FROM received_messages"), 1);

    tc_envelope_t *tr = tc_test_envelope("agent-1");
    tr->body_case = TRAINCAST__V1__ENVELOPE__BODY_TRAIN_TRACE;
    tr->train_trace = tc_test_trace("uuid-dup", "torchvision:tinynet@32", 8, 10.0);
    s_put_ok(tr, TC_STORE_STORED);
    s_put_ok(tr, TC_STORE_DUPLICATE);
    cr_assert_eq(s_count("SELECT count(*) FROM traces"), 1);
}

/* Matmul results go into matmul_configs and matmul_results beside the
 * convs of the same message: every field reads back as sent, a config is
 * one row however many results and messages name it, and a message of
 * matmuls alone is stored as well. */
Test(store, matmul_results_round_trip)
{
    tc_envelope_t *env = s_conv_results_env("agent-1", "uuid-mm", 2);
    tc_test_add_matmul_results(env->conv_results, 3);
    Traincast__V1__ConvResult *r1 = env->conv_results->matmul_results[1];
    r1->matmul->n = 3072; /* the config of result 0 again, another direction */
    env->conv_results->matmul_results[2]->matmul->n = 3073;
    static Traincast__V1__Load load = TRAINCAST__V1__LOAD__INIT;
    load.others_pct = 12.5;
    load.threshold_pct = 10;
    load.remeasured = 1;
    load.disturbed = 1;
    load.canary_ms = 0.625;
    load.supersedes_us = r1->measured_at_us - 5000000;
    r1->load = &load;
    s_put_ok(env, TC_STORE_STORED);
    cr_assert_eq(s_count("SELECT count(*) FROM conv_results"), 2);
    cr_assert_eq(s_count("SELECT count(*) FROM matmul_results"), 3);
    cr_assert_eq(s_count("SELECT count(*) FROM matmul_configs"), 2);
    char v[512];
    cr_assert_eq(tc_store_exec(s_store,
                               "SELECT r.batch || ',' || c.batch || ',' || m || ',' || n || ',' || k "
                               "|| ',' || minibatch_in || ',' || trans_a || ',' || trans_b || ',' "
                               "|| weight || ',' || bias || ',' || dtype || ',' || direction || ',' "
                               "|| policy || ',' || backend || ',' || algo || ',' || route || ',' "
                               "|| median_ms || ',' || min_ms || ',' || max_ms || ',' || "
                               "repetitions || ',' || array_length(samples_ms, 1) || ',' || "
                               "samples_ms[2] || ',' || load_others_pct || ',' || remeasured || ','"
                               " || disturbed || ',' || extract(epoch FROM measured_at)::bigint || "
                               "',' || d.uuid || ',' || canary_ms || ',' || "
                               "extract(epoch FROM measured_at - supersedes_at) FROM "
                               "matmul_results r JOIN matmul_configs c USING "
                               "(config_id) JOIN devices d USING (device_id) WHERE seq = 1",
                               v, sizeof v),
                 0, "%s", tc_errmsg());
    cr_assert_str_eq(v, "8,1,50,3072,768,1,false,true,true,true,fp32,bwd_data,heuristic,onednn,"
                        "sgemm,blas,3.5,3,4,3,3,3.5,12.5,1,true,1700000000,uuid-mm,0.625,"
                        "5.000000");
    cr_assert_eq(tc_store_exec(s_store,
                               "SELECT count(DISTINCT config_id) || ',' || bool_and(load_others_pct "
                               "IS NULL AND canary_ms IS NULL AND supersedes_at IS NULL) FROM "
                               "matmul_results WHERE seq <> 1",
                               v, sizeof v),
                 0);
    cr_assert_str_eq(v, "2,true");
    /* Matmuls alone, on the same configs: no new config rows. */
    tc_envelope_t *alone = s_conv_results_env("agent-1", "uuid-mm", 0);
    tc_test_add_matmul_results(alone->conv_results, 2);
    s_put_ok(alone, TC_STORE_STORED);
    cr_assert_eq(s_count("SELECT count(*) FROM matmul_results"), 5);
    cr_assert_eq(s_count("SELECT count(*) FROM matmul_configs"), 2);
    cr_assert_eq(s_count("SELECT count(*) FROM conv_results"), 2);
    s_put_ok(alone, TC_STORE_DUPLICATE);
    cr_assert_eq(s_count("SELECT count(*) FROM matmul_results"), 5);
}

Test(store, matmul_configs_key_is_the_matmul_key)
{
    char cols[512];
    cr_assert_eq(tc_store_exec(s_store,
                               "SELECT string_agg(a.attname, ', ' ORDER BY k.ord) FROM "
                               "pg_constraint con CROSS JOIN LATERAL unnest(con.conkey) WITH "
                               "ORDINALITY AS k(attnum, ord) JOIN pg_attribute a ON a.attrelid "
                               "= con.conrelid AND a.attnum = k.attnum WHERE con.conrelid = "
                               "'matmul_configs'::regclass AND con.contype = 'u'",
                               cols, sizeof cols),
                 0, "%s", tc_errmsg());
    cr_assert_str_eq(cols, TC_SQL_MATMUL_KEY_COLS(""));
    cr_assert_eq(s_count("SELECT count(*) FROM information_schema.columns WHERE table_name = "
                         "'matmul_configs' AND column_name <> 'config_id'"),
                 TC_MATMUL_KEY_FIELDS, "matmul_configs has a column the key does not name");
}

/* Each bad value: rejected with TC_EINVAL naming the field; nothing stored. */
static void s_expect_rejected(tc_envelope_t *env, const char *field)
{
    tc_store_outcome_t out;
    int rc = tc_store_put(s_store, env, &out);
    cr_assert_eq(rc, TC_EINVAL, "expected rejection naming %s, got %d: %s", field, rc,
                 tc_errmsg());
    cr_assert(strstr(tc_errmsg(), field), "message '%s' does not name %s", tc_errmsg(), field);
    cr_assert_eq(s_count("SELECT count(*) FROM received_messages"), 0);
    cr_assert_eq(s_count("SELECT count(*) FROM conv_results"), 0);
    cr_assert_eq(s_count("SELECT count(*) FROM traces"), 0);
    cr_assert_eq(s_count("SELECT count(*) FROM devices"), 0);
}

static tc_envelope_t *s_conv_env(void)
{
    return s_conv_results_env("agent-1", "uuid-bad", 4);
}

static tc_envelope_t *s_trace_env(void)
{
    tc_envelope_t *env = tc_test_envelope("agent-1");
    env->body_case = TRAINCAST__V1__ENVELOPE__BODY_TRAIN_TRACE;
    env->train_trace = tc_test_trace("uuid-bad", "torchvision:tinynet@32", 8, 10.0);
    return env;
}

Test(store, rejects_negative_time)
{
    tc_envelope_t *env = s_conv_env();
    env->conv_results->results[2]->median_ms = -1.0;
    s_expect_rejected(env, "conv_results.results[2].median_ms");
}

Test(store, rejects_nan_time)
{
    tc_envelope_t *env = s_conv_env();
    env->conv_results->results[3]->samples_ms[1] = NAN;
    s_expect_rejected(env, "results[3].samples_ms[1]");
    tc_envelope_t *tr = s_trace_env();
    tr->train_trace->iterations[2]->ms = NAN;
    s_expect_rejected(tr, "train_trace.iterations[2].ms");
}

Test(store, rejects_empty_device_name)
{
    tc_envelope_t *env = s_conv_env();
    env->conv_results->device->name = "";
    s_expect_rejected(env, "conv_results.device.name");
}

Test(store, rejects_zero_batch)
{
    tc_envelope_t *env = s_conv_env();
    env->conv_results->results[0]->config->n = 0;
    s_expect_rejected(env, "conv_results.results[0].config.n");
    tc_envelope_t *tr = s_trace_env();
    tr->train_trace->batch = 0;
    s_expect_rejected(tr, "train_trace.batch");
}

Test(store, rejects_oversize_string)
{
    char *big = malloc(5000);
    memset(big, 'x', 4999);
    big[4999] = '\0';
    tc_envelope_t *env = s_conv_env();
    env->conv_results->results[1]->algo = big;
    s_expect_rejected(env, "conv_results.results[1].algo");
    tc_envelope_t *tr = s_trace_env();
    tr->train_trace->reason = big;
    s_expect_rejected(tr, "train_trace.reason");
    free(big);
}

Test(store, rejects_wrong_version_and_bad_id)
{
    tc_envelope_t *env = s_conv_env();
    env->protocol_version = 7;
    tc_store_outcome_t out;
    cr_assert_eq(tc_store_put(s_store, env, &out), TC_EVERSION);
    cr_assert(strstr(tc_errmsg(), "protocol_version"), "%s", tc_errmsg());
    env->protocol_version = TC_PROTOCOL_VERSION;
    env->message_id = "not-a-ulid";
    s_expect_rejected(env, "message_id");
}

Test(store, rejects_invalid_utf8_without_storing)
{
    /* Refused by validation before any SQL, naming the field; nothing is
     * left behind. */
    tc_envelope_t *env = s_conv_env();
    env->conv_results->results[0]->algo = "bad\xff\xfe";
    tc_store_outcome_t out;
    cr_assert_eq(tc_store_put(s_store, env, &out), TC_EINVAL, "%s", tc_errmsg());
    cr_assert(strstr(tc_errmsg(), "conv_results.results[0].algo: is not valid UTF-8"), "%s",
              tc_errmsg());
    cr_assert_eq(s_count("SELECT count(*) FROM received_messages"), 0);
    cr_assert_eq(s_count("SELECT count(*) FROM devices"), 0);
    /* The connection is usable afterwards. */
    s_put_ok(s_conv_env(), TC_STORE_STORED);
}

/* A message the database refuses for its content, in a batch on a fresh
 * connection: the batch's conv results go in one COPY when it commits, so
 * the commit is what refuses it (TC_EINVAL, naming the constraint) and
 * nothing of the batch is kept; stored again one at a time, as the serve
 * workers then do, it is refused alone and the others are stored; and
 * later batches on the same connection are stored. */
Test(store, refused_message_does_not_stall_the_connection)
{
    cr_assert_eq(tc_store_exec(s_store,
                               "ALTER TABLE conv_algo_timings ADD CONSTRAINT test_no_poison "
                               "CHECK (algo <> 'poison')",
                               NULL, 0),
                 0, "%s", tc_errmsg());
    char dsn[1024];
    tc_test_fresh_db("store", dsn, sizeof dsn);
    tc_store_t *fresh = NULL;
    cr_assert_eq(tc_store_open(dsn, &fresh), 0, "%s", tc_errmsg());
    tc_store_outcome_t out;
    for (int round = 0; round < 2; round++) {
        tc_envelope_t *msgs[4];
        for (int i = 0; i < 4; i++)
            msgs[i] = s_conv_env();
        Traincast__V1__AlgoTiming *poisoned = msgs[round]->conv_results->results[0]->candidates[0];
        free(poisoned->algo);
        poisoned->algo = strdup("poison");

        cr_assert_eq(tc_store_batch_begin(fresh, NULL, 0), 0, "%s", tc_errmsg());
        for (int i = 0; i < 4; i++)
            cr_assert_eq(tc_store_put(fresh, msgs[i], &out), 0, "round %d, message %d: %s",
                         round, i, tc_errmsg());
        int rc = tc_store_batch_commit(fresh);
        cr_assert_eq(rc, TC_EINVAL, "round %d: want a refusal, got %d: %s", round, rc,
                     tc_errmsg());
        cr_assert(strstr(tc_errmsg(), "test_no_poison") && strstr(tc_errmsg(), "23514"), "%s",
                  tc_errmsg());
        tc_store_batch_rollback(fresh);
        cr_assert_eq(s_count("SELECT count(*) FROM received_messages"), 3 * round);

        for (int i = 0; i < 4; i++) {
            rc = tc_store_put(fresh, msgs[i], &out);
            if (i == round) {
                cr_assert_eq(rc, TC_EINVAL, "round %d: want a refusal, got %d", round, rc);
                cr_assert(strstr(tc_errmsg(), "test_no_poison"), "%s", tc_errmsg());
            } else {
                cr_assert_eq(rc, 0, "round %d, message %d: %s", round, i, tc_errmsg());
            }
            tc_envelope_free(&msgs[i]);
        }
    }
    /* A batch of good messages on the same connection. */
    cr_assert_eq(tc_store_batch_begin(fresh, NULL, 0), 0, "%s", tc_errmsg());
    for (int i = 0; i < 3; i++) {
        tc_envelope_t *env = s_conv_env();
        cr_assert_eq(tc_store_put(fresh, env, &out), 0, "%s", tc_errmsg());
        tc_envelope_free(&env);
    }
    cr_assert_eq(tc_store_batch_commit(fresh), 0, "%s", tc_errmsg());
    tc_store_destroy(&fresh);
    cr_assert_eq(s_count("SELECT count(*) FROM received_messages"), 9);
    cr_assert_eq(s_count("SELECT count(*) FROM conv_results"), 9 * 4);
    cr_assert_eq(s_count("SELECT count(*) FROM conv_algo_timings WHERE algo = 'poison'"), 0);
}

Test(store, error_classes)
{
    /* Only what says nothing about the message is an outage. */
    cr_assert_eq(tc_store_error_code(NULL, false), TC_EDB);
    cr_assert_eq(tc_store_error_code(NULL, true), TC_EDB);
    cr_assert_eq(tc_store_error_code("08006", true), TC_EDB);
    cr_assert_eq(tc_store_error_code("57P01", true), TC_EDB);
    cr_assert_eq(tc_store_error_code("53100", true), TC_EDB);
    cr_assert_eq(tc_store_error_code("40P01", true), TC_EDB);
    cr_assert_eq(tc_store_error_code("42501", true), TC_EDB);
    cr_assert_eq(tc_store_error_code("22021", false), TC_EDB);
    cr_assert_eq(tc_store_error_code("22021", true), TC_EINVAL);
    cr_assert_eq(tc_store_error_code("23505", true), TC_EINVAL);
    cr_assert_eq(tc_store_error_code("42P01", true), TC_EINVAL);
    cr_assert_eq(tc_store_error_code("54000", true), TC_EINVAL);
}

/* The connection dies under the store: an outage (retry), not a refusal;
 * the new connection prepares its statements again (those of the old one
 * went with it: had it not, the message after the reconnect would be
 * refused). */
Test(store, lost_connection_is_an_outage)
{
    s_put_ok(s_conv_env(), TC_STORE_STORED); /* statements prepared on this connection */
    char pid[32];
    cr_assert_eq(tc_store_exec(s_store, "SELECT pg_backend_pid()", pid, sizeof pid), 0);
    char dsn[1024];
    tc_test_fresh_db("store", dsn, sizeof dsn);
    tc_store_t *killer = NULL;
    cr_assert_eq(tc_store_open(dsn, &killer), 0, "%s", tc_errmsg());
    char sql[96], v[16];
    snprintf(sql, sizeof sql, "SELECT pg_terminate_backend(%s)", pid);
    cr_assert_eq(tc_store_exec(killer, sql, v, sizeof v), 0, "%s", tc_errmsg());
    tc_store_destroy(&killer);
    tc_store_outcome_t out;
    int rc = tc_store_put(s_store, s_conv_env(), &out);
    cr_assert_eq(rc, TC_EDB, "got %d: %s", rc, tc_errmsg());
    cr_assert_eq(tc_store_ensure_connected(s_store), 0, "%s", tc_errmsg());
    s_put_ok(s_conv_env(), TC_STORE_STORED);
}

/* Two aggregators storing batches of the same two agents at once, in
 * opposite orders (as two serve processes do when agents send to both),
 * on fresh connections (nothing remembered): each batch takes its agents'
 * rows first, in the order of their ids, so the second waits for the first
 * instead of the two deadlocking (40P01) on the agents rows: when the
 * agents are new (inserts), and when they exist (updates). */
typedef struct {
    tc_store_t *store;
    int rc;
    char err[512];
} s_batch_t;

static void *s_batch_y_then_x(void *arg)
{
    s_batch_t *b = arg;
    const char *ids[] = {"dl-agent-y", "dl-agent-x"};
    tc_store_outcome_t out;
    tc_envelope_t *y = s_conv_results_env("dl-agent-y", "dl-uuid-y", 1);
    tc_envelope_t *x = s_conv_results_env("dl-agent-x", "dl-uuid-x", 1);
    b->rc = tc_store_batch_begin(b->store, ids, 2);
    if (b->rc == 0)
        b->rc = tc_store_put(b->store, y, &out);
    if (b->rc == 0)
        b->rc = tc_store_put(b->store, x, &out);
    if (b->rc == 0)
        b->rc = tc_store_batch_commit(b->store);
    if (b->rc < 0) {
        snprintf(b->err, sizeof b->err, "%s", tc_errmsg());
        tc_store_batch_rollback(b->store);
    }
    tc_envelope_free(&y);
    tc_envelope_free(&x);
    return NULL;
}

Test(store, two_batches_of_the_same_agents_in_opposite_orders_do_not_deadlock)
{
    char dsn[1024];
    tc_test_fresh_db("store", dsn, sizeof dsn);
    for (int round = 0; round < 2; round++) {
        /* One connection: x then y; the other: y then x, started while the
         * first holds x. */
        tc_store_t *one = NULL;
        s_batch_t other = {0};
        cr_assert_eq(tc_store_open(dsn, &one), 0, "%s", tc_errmsg());
        cr_assert_eq(tc_store_open(dsn, &other.store), 0, "%s", tc_errmsg());
        const char *ids[] = {"dl-agent-x", "dl-agent-y"};
        tc_store_outcome_t out;
        tc_envelope_t *x = s_conv_results_env("dl-agent-x", "dl-uuid-x", 1);
        tc_envelope_t *y = s_conv_results_env("dl-agent-y", "dl-uuid-y", 1);
        cr_assert_eq(tc_store_batch_begin(one, ids, 2), 0, "%s", tc_errmsg());
        cr_assert_eq(tc_store_put(one, x, &out), 0, "%s", tc_errmsg());
        pthread_t t;
        cr_assert_eq(pthread_create(&t, NULL, s_batch_y_then_x, &other), 0);
        tc_test_sleep_ms(300); /* the other has begun: it waits, or holds y */
        int rc = tc_store_put(one, y, &out);
        cr_expect_eq(rc, 0, "round %d: the first batch failed: %s", round, tc_errmsg());
        if (rc == 0)
            rc = tc_store_batch_commit(one);
        if (rc < 0)
            tc_store_batch_rollback(one);
        pthread_join(t, NULL);
        cr_expect_eq(other.rc, 0, "round %d: the second batch failed: %s", round, other.err);
        tc_envelope_free(&x);
        tc_envelope_free(&y);
        tc_store_destroy(&one);
        tc_store_destroy(&other.store);
    }
    cr_expect_eq(s_count("SELECT count(*) FROM conv_results r JOIN devices d USING (device_id) "
                         "WHERE d.uuid LIKE 'dl-uuid-%'"),
                 8);
}
