/* aggregator export and import between two real databases: a benchmark set
 * carries a device's results exactly (every sample and iteration, conv and
 * matmul results, the models' conv and matmul lists), the imported device
 * fits and predicts like a local one, a second import stores nothing, a
 * clashing device is renamed, and a truncated, corrupt or newer set stores
 * nothing and says why. */
#include "benchset.h"
#include "store.h"
#include "tc_error.h"
#include "tc_sha256.h"
#include "tc_test.h"
#include "tc_test_law.h"
#include "tc_test_msg.h"
#include "tc_test_proc.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char s_src[1024], s_dst[1024], s_dir[1024];

static void s_run(const char *dsn, const char *args, int want_status, char *out, size_t size)
{
    char cmd[4096];
    snprintf(cmd, sizeof cmd,
             "cd %s && TRAINCAST_LOG=warn TRAINCAST_PROGRESS=none %s/aggregator/aggregator %s "
             "--db '%s'",
             TC_SOURCE_DIR, TC_BINARY_DIR, args, dsn);
    int st = tc_test_run(cmd, out, size);
    cr_assert_eq(st, want_status, "'%s' exited %d, want %d:\n%s", args, st, want_status, out);
}

static void s_fresh(const char *name, char *dsn, size_t size)
{
    tc_store_t *s = tc_test_fresh_store(name, dsn, size);
    tc_store_destroy(&s);
}

/* Everything stored about a device class, as one digest: conv results with
 * their samples and algorithm timings, traces with their iterations. */
static long long s_digest(const char *dsn, const char *device, const char *what)
{
    char sql[2048];
    if (!strcmp(what, "convs"))
        snprintf(sql, sizeof sql,
                 "SELECT ('x' || substr(md5(string_agg(concat_ws('|', r.message_id, r.seq, "
                 "r.batch, r.direction, r.policy, r.algo, r.median_ms, r.min_ms, r.stddev_ms, "
                 "r.repetitions, r.measured_at, r.samples_ms, r.sample_offsets_us, l.label, "
                 "r.route, r.library_version, r.sm_clock_mhz, r.power_w, "
                 "(SELECT string_agg(concat_ws(':', t.algo, t.time_ms, t.status), ',' ORDER BY "
                 "t.algo) FROM conv_algo_timings t WHERE t.result_id = r.result_id)), ';' ORDER "
                 "BY r.message_id, r.seq)), 1, 15))::bit(60)::bigint FROM conv_results r JOIN "
                 "devices d USING (device_id) JOIN conv_config_labels l USING (config_id) WHERE "
                 "d.name = '%s'",
                 device);
    else
        snprintf(sql, sizeof sql,
                 "SELECT ('x' || substr(md5(string_agg(concat_ws('|', t.message_id, t.model_id, "
                 "t.batch, t.median_ms, t.spread, t.status, t.started_at, t.peak_memory_bytes, "
                 "t.settings, t.settings_key, t.sm_clock_mhz, t.power_w, "
                 "(SELECT string_agg(concat_ws(':', i.repeat, i.idx, i.ms, i.at, i.warmup), ',' "
                 "ORDER BY i.repeat, i.idx) FROM trace_iterations i WHERE i.trace_id = "
                 "t.trace_id)), ';' ORDER BY t.message_id)), 1, 15))::bit(60)::bigint FROM "
                 "traces t JOIN devices d USING (device_id) WHERE d.name = '%s'",
                 device);
    return tc_test_sql_count(dsn, sql);
}

static long long s_count(const char *dsn, const char *sql)
{
    return tc_test_sql_count(dsn, sql);
}

static void s_setup(void)
{
    tc_test_tmpdir("benchset", s_dir, sizeof s_dir);
    tc_law_build("set_src", s_src, sizeof s_src);
    s_fresh("set_dst", s_dst, sizeof s_dst);
}

Test(benchset, round_trip_fit_predict_and_import_again, .init = s_setup, .timeout = 600)
{
    static char out[1 << 16];
    char set[1200], args[1400];
    snprintf(set, sizeof set, "%s/fast.tcset", s_dir);
    /* The device was last heard of long before the import. */
    tc_test_sql(s_src, "UPDATE devices SET last_seen = '2026-01-02 03:04:05+00' WHERE name = "
                       "'Fast Device'");
    snprintf(args, sizeof args, "export --device 'fast dev' --out %s --source lab-a", set);
    s_run(s_src, args, 0, out, sizeof out);
    cr_assert(strstr(out, "'lab-a'") && strstr(out, "Fast Device"), "%s", out);
    cr_assert_eq(access(set, F_OK), 0, "no set written");

    snprintf(args, sizeof args, "import %s", set);
    s_run(s_dst, args, 0, out, sizeof out);
    cr_assert(strstr(out, "device 'Fast Device'"), "%s", out);
    long long stored = s_count(s_dst, "SELECT count(*) FROM received_messages");
    cr_assert_gt(stored, 0);
    /* Exactly what the source holds, every sample and iteration. */
    cr_expect_eq(s_digest(s_dst, "Fast Device", "convs"), s_digest(s_src, "Fast Device", "convs"));
    /* The device keeps the framework and routing its agent followed. */
    cr_expect_eq(s_count(s_dst, "SELECT count(*) FROM devices WHERE name = 'Fast Device' AND "
                                "framework = 'pytorch 1.13.1' AND routing = 'pytorch-1.13-cpu'"),
                 1);
    cr_expect_eq(s_digest(s_dst, "Fast Device", "traces"),
                 s_digest(s_src, "Fast Device", "traces"));
    cr_expect_eq(s_count(s_dst, "SELECT count(*) FROM trace_iterations"),
                 s_count(s_src, "SELECT count(*) FROM trace_iterations i JOIN traces t USING "
                                "(trace_id) JOIN devices d USING (device_id) WHERE d.name = "
                                "'Fast Device'"));
    cr_expect_eq(s_count(s_dst, "SELECT count(*) FROM devices WHERE name = 'Slow Device'"), 0,
                 "only the device asked for");
    cr_expect_eq(s_count(s_dst, "SELECT count(*) FROM models"), 5, "the traced models' graphs");
    cr_expect_eq(s_count(s_dst, "SELECT count(*) FROM agents"), 0,
                 "an imported device has no agent here");
    cr_expect_eq(s_count(s_dst, "SELECT count(*) FROM imports WHERE source = 'lab-a' AND "
                                "stored > 0 AND length(file_sha256) = 64 AND format_version = 1"),
                 1);

    /* status marks it imported, in every format. */
    s_run(s_dst, "status --section devices", 0, out, sizeof out);
    cr_assert(strstr(out, "imported from lab-a (import 1)"), "%s", out);
    s_run(s_dst, "status --format json", 0, out, sizeof out);
    cr_assert(strstr(out, "\"origin\": \"imported from lab-a (import 1)\""), "%s", out);
    /* ... last seen when the source last heard of it, not at the import. */
    cr_assert(strstr(out, "\"uuid\": \"") && strstr(out, "\"last_seen\": \"2026-01-02T03:04:05Z\""),
              "%s", out);
    cr_expect_eq(s_count(s_dst, "SELECT count(*) FROM devices WHERE name = 'Fast Device' AND "
                                "last_seen = '2026-01-02 03:04:05+00'"),
                 1);

    /* Fitted and predicted like a local device: resnet34 was never traced,
     * its convs at batch 16 came with the set. */
    s_run(s_dst, "fit", 0, out, sizeof out);
    s_run(s_dst, "predict --gpu 'Fast Device' --model tests/data/resnet34.onnx --batch 16 "
                 "--format csv --wait 0",
          0, out, sizeof out);
    cr_assert(strstr(out, "\"Fast Device\",ok,16,"), "%s", out);
    tc_model_t *m = tc_law_load("resnet34");
    double law = tc_law_conv_sum(m, 16, 1.0) + tc_law_other_ms(m, 16, 1.0);
    tc_model_destroy(&m);
    const char *row = strstr(out, "\"Fast Device\",ok,16,");
    double got = atof(row + strlen("\"Fast Device\",ok,16,"));
    cr_expect(got > 0.98 * law && got < 1.02 * law, "predicted %g, the law %g", got, law);

    /* Twice stores nothing new. */
    long long rows = s_count(s_dst, "SELECT (SELECT count(*) FROM conv_results) + (SELECT "
                                    "count(*) FROM traces) + (SELECT count(*) FROM "
                                    "received_messages) + (SELECT count(*) FROM devices)");
    snprintf(args, sizeof args, "import %s", set);
    s_run(s_dst, args, 0, out, sizeof out);
    cr_assert(strstr(out, "0 messages stored") && strstr(out, "imported before"), "%s", out);
    cr_expect_eq(s_count(s_dst, "SELECT (SELECT count(*) FROM conv_results) + (SELECT count(*) "
                                "FROM traces) + (SELECT count(*) FROM received_messages) + "
                                "(SELECT count(*) FROM devices)"),
                 rows);
    cr_expect_eq(s_count(s_dst, "SELECT count(*) FROM imports"), 1);

    /* Exported again from the importing database: the same results (a set
     * carries what was measured, wherever it is stored). */
    char again[1200];
    snprintf(again, sizeof again, "%s/again.tcset", s_dir);
    snprintf(args, sizeof args, "export --device 'Fast Device' --out %s", again);
    s_run(s_dst, args, 0, out, sizeof out);
    char third[1024];
    s_fresh("set_third", third, sizeof third);
    snprintf(args, sizeof args, "import %s", again);
    s_run(third, args, 0, out, sizeof out);
    cr_expect_eq(s_digest(third, "Fast Device", "convs"), s_digest(s_src, "Fast Device", "convs"));
    cr_expect_eq(s_digest(third, "Fast Device", "traces"),
                 s_digest(s_src, "Fast Device", "traces"));
}

Test(benchset, a_clashing_device_is_imported_under_another_name, .init = s_setup, .timeout = 600)
{
    static char out[1 << 16];
    /* Here, "Slow Device" is other hardware: more memory. */
    tc_store_t *s = NULL;
    cr_assert_eq(tc_store_open(s_dst, &s), 0, "%s", tc_errmsg());
    tc_envelope_t *env = tc_test_envelope("agent-local");
    env->body_case = TRAINCAST__V1__ENVELOPE__BODY_CONV_RESULTS;
    env->conv_results = tc_test_conv_results("uuid-local-slow", 2);
    env->conv_results->device->name = (char *)"Slow Device";
    env->conv_results->device->memory_bytes = 123ull << 30;
    tc_law_put(s, env);
    tc_store_destroy(&s);

    char set[1200], args[1400];
    snprintf(set, sizeof set, "%s/all.tcset", s_dir);
    snprintf(args, sizeof args, "export --device all --out %s --source lab-a", set);
    s_run(s_src, args, 0, out, sizeof out);
    snprintf(args, sizeof args, "import %s", set);
    s_run(s_dst, args, 0, out, sizeof out);
    cr_assert(strstr(out, "renamed: 'Slow Device' (uuid uuid-slow) is stored as 'Slow Device "
                          "[lab-a]'"),
              "%s", out);
    cr_expect_eq(s_count(s_dst, "SELECT count(*) FROM devices WHERE name = 'Slow Device'"), 1,
                 "the local one keeps its name");
    cr_expect_eq(s_count(s_dst, "SELECT count(*) FROM devices WHERE name = 'Slow Device "
                                "[lab-a]' AND original_name = 'Slow Device' AND import_id IS "
                                "NOT NULL"),
                 1);
    cr_expect_eq(s_digest(s_dst, "Slow Device [lab-a]", "traces"),
                 s_digest(s_src, "Slow Device", "traces"));
    cr_expect_eq(s_count(s_dst, "SELECT count(*) FROM imports WHERE renamed = ARRAY['Slow "
                                "Device -> Slow Device [lab-a]']"),
                 1);
    s_run(s_dst, "status --section devices --format csv", 0, out, sizeof out);
    cr_assert(strstr(out, "\"imported from lab-a (import 1), was 'Slow Device'\""), "%s", out);
    /* The same hardware joins its class under its own name. */
    cr_expect_eq(s_count(s_dst, "SELECT count(*) FROM devices WHERE name = 'Fast Device'"), 1);
}

/* The set's bytes, to damage. */
static unsigned char *s_slurp(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "%s", path);
    fseek(f, 0, SEEK_END);
    *n = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *b = malloc(*n + 1);
    cr_assert_eq(fread(b, 1, *n, f), *n);
    fclose(f);
    return b;
}

static void s_spit(const char *path, const unsigned char *b, size_t n)
{
    FILE *f = fopen(path, "wb");
    cr_assert_not_null(f, "%s", path);
    cr_assert_eq(fwrite(b, 1, n, f), n);
    fclose(f);
}

/* Offset of record `k` (0: the header). */
static size_t s_record_at(const unsigned char *b, size_t n, int k)
{
    size_t off = 8;
    for (int i = 0; i < k && off + 5 <= n; i++) {
        size_t len = b[off] | (size_t)b[off + 1] << 8 | (size_t)b[off + 2] << 16 |
                     (size_t)b[off + 3] << 24;
        off += 5 + len + 8;
    }
    return off;
}

/* The matmuls stored about the devices, as one digest: every result by its
 * key and values, and each model's matmul list with whether its agent
 * listed them. */
static long long s_matmul_digest(const char *dsn, const char *what)
{
    char sql[2048];
    if (!strcmp(what, "results"))
        snprintf(sql, sizeof sql,
                 "SELECT ('x' || substr(md5(string_agg(concat_ws('|', d.name, r.message_id, "
                 "r.seq, c.batch, c.m, c.n, c.k, c.minibatch_in, c.trans_a, c.trans_b, "
                 "c.weight, c.bias, c.dtype, r.batch, r.direction, r.policy, r.backend, r.algo, "
                 "r.route, r.median_ms, r.min_ms, r.max_ms, r.stddev_ms, r.repetitions, "
                 "r.measured_at, r.samples_ms, r.sample_offsets_us, r.sm_clock_mhz, r.power_w, "
                 "r.load_others_pct, r.load_steal_pct, r.gpu_other_processes, "
                 "r.load_threshold_pct, r.remeasured, r.disturbed, r.canary_ms, r.supersedes_at), "
                 "';' ORDER BY r.message_id, "
                 "r.seq)), 1, 15))::bit(60)::bigint FROM matmul_results r JOIN matmul_configs c "
                 "USING (config_id) JOIN devices d USING (device_id)");
    else
        snprintf(sql, sizeof sql,
                 "SELECT ('x' || substr(md5(string_agg(concat_ws('|', m.model_id, "
                 "m.matmuls_listed, (SELECT string_agg(concat_ws(':', c.batch, c.m, c.n, c.k, "
                 "c.minibatch_in, c.trans_a, c.trans_b, c.weight, c.bias, c.dtype, mm.grad_a, "
                 "mm.grad_b, mm.multiplicity), ',' ORDER BY c.batch, c.m, c.n, c.k, "
                 "c.minibatch_in, c.trans_a, c.trans_b, c.weight, c.bias, c.dtype, mm.grad_a, "
                 "mm.grad_b) FROM model_matmuls mm JOIN matmul_configs c USING (config_id) "
                 "WHERE mm.model_id = m.model_id)), ';' ORDER BY m.model_id)), 1, 15))"
                 "::bit(60)::bigint FROM models m");
    return tc_test_sql_count(dsn, sql);
}

/* A trace on the slow device of a small model whose graph lists its matmuls
 * (none) or, as an older agent's, does not. */
static void s_put_listed_trace(tc_store_t *s, const char *model_id, bool listed)
{
    tc_envelope_t *env = tc_test_envelope("agent-fixture");
    env->body_case = TRAINCAST__V1__ENVELOPE__BODY_TRAIN_TRACE;
    Traincast__V1__TrainTrace *t = tc_test_trace(tc_law_devices[1].uuid, model_id, 8, 30.0);
    t->device->name = (char *)tc_law_devices[1].name;
    t->device->memory_bytes = 64ull << 30;
    t->graph->matmuls_listed = listed;
    env->train_trace = t;
    tc_law_put(s, env);
}

/* A set carries matmuls: a message of convs and matmuls, messages of
 * matmuls alone (each with its id, so that importing them again stores
 * nothing), and the models' matmul lists; the importer stores the same
 * rows and fits the imported device as the exporter fits it, subtracting
 * its benchmarked matmuls. */
Test(benchset, matmuls_round_trip_and_fit_alike, .init = s_setup, .timeout = 600)
{
    static char out[1 << 16];
    const tc_law_device_t *fast = &tc_law_devices[0];
    tc_store_t *s = NULL;
    cr_assert_eq(tc_store_open(s_src, &s), 0, "%s", tc_errmsg());
    /* Every matmul of the traced CNNs (their classifiers) benchmarked on
     * the fast device, in messages of matmuls alone. */
    for (size_t i = 0; i < sizeof tc_law_traced / sizeof tc_law_traced[0]; i++) {
        tc_model_t *m = tc_law_load(tc_law_traced[i]);
        tc_law_put_matmul_benchmarks(s, m, fast, tc_law_batches, 3);
        tc_model_destroy(&m);
    }
    /* One message of convs and matmuls, one matmul an attention's batched
     * product, with the load it was measured under. */
    tc_envelope_t *env = tc_test_envelope("agent-mixed");
    env->body_case = TRAINCAST__V1__ENVELOPE__BODY_CONV_RESULTS;
    env->conv_results = tc_test_conv_results(fast->uuid, 2);
    env->conv_results->device->name = (char *)fast->name;
    env->conv_results->device->framework = (char *)"pytorch 1.13.1";
    env->conv_results->device->routing = (char *)"pytorch-1.13-cpu";
    tc_test_add_matmul_results(env->conv_results, 3);
    Traincast__V1__ConvResult *att = env->conv_results->matmul_results[2];
    att->matmul->batch = 12;
    att->matmul->m = att->matmul->n = 50;
    att->matmul->k = 64;
    att->matmul->minibatch_in = 2;
    att->matmul->weight = att->matmul->bias = false;
    att->algo = (char *)"bmm";
    att->route = (char *)"naive";
    static Traincast__V1__Load load = TRAINCAST__V1__LOAD__INIT;
    load.others_pct = 3.5;
    load.threshold_pct = 10;
    load.remeasured = 1;
    load.canary_ms = 0.55;
    load.supersedes_us = att->measured_at_us - 1000;
    att->load = &load;
    tc_law_put(s, env);
    /* Graphs that list no matmul, and one from an older agent. */
    s_put_listed_trace(s, "torchvision:nomatmul@32", true);
    s_put_listed_trace(s, "torchvision:oldagent@32", false);
    tc_store_destroy(&s);
    cr_assert_eq(s_count(s_src, "SELECT count(*) FROM models WHERE model_id = "
                                "'torchvision:nomatmul@32' AND matmuls_listed"),
                 1);
    long long alone = s_count(s_src, "SELECT count(DISTINCT message_id) FROM matmul_results r "
                                     "WHERE NOT EXISTS (SELECT 1 FROM conv_results c WHERE "
                                     "c.message_id = r.message_id)");
    cr_assert_gt(alone, 0);

    char set[1200], args[1400];
    snprintf(set, sizeof set, "%s/all.tcset", s_dir);
    snprintf(args, sizeof args, "export --device all --out %s --source lab-a", set);
    s_run(s_src, args, 0, out, sizeof out);
    /* The header counts each device's matmul results. */
    size_t n = 0;
    unsigned char *b = s_slurp(set, &n);
    char want[256];
    snprintf(want, sizeof want, "\"conv_results\": %lld, \"matmul_results\": %lld,",
             s_count(s_src, "SELECT count(*) FROM conv_results r JOIN devices d USING "
                            "(device_id) WHERE d.name = 'Fast Device'"),
             s_count(s_src, "SELECT count(*) FROM matmul_results r JOIN devices d USING "
                            "(device_id) WHERE d.name = 'Fast Device'"));
    cr_assert_not_null(memmem(b, n, want, strlen(want)), "the header lacks %s", want);
    free(b);

    snprintf(args, sizeof args, "import %s", set);
    s_run(s_dst, args, 0, out, sizeof out);
    /* The same rows, by key and values, and the same lists. */
    cr_expect_gt(s_count(s_dst, "SELECT count(*) FROM matmul_results"), 0);
    cr_expect_eq(s_count(s_dst, "SELECT count(*) FROM matmul_results"),
                 s_count(s_src, "SELECT count(*) FROM matmul_results"));
    cr_expect_eq(s_matmul_digest(s_dst, "results"), s_matmul_digest(s_src, "results"));
    cr_expect_eq(s_count(s_dst, "SELECT count(*) FROM model_matmuls"),
                 s_count(s_src, "SELECT count(*) FROM model_matmuls"));
    cr_expect_eq(s_matmul_digest(s_dst, "lists"), s_matmul_digest(s_src, "lists"));
    cr_expect_eq(s_count(s_dst, "SELECT count(*) FROM models WHERE matmuls_listed"),
                 s_count(s_src, "SELECT count(*) FROM models WHERE matmuls_listed"));
    cr_expect_eq(s_count(s_dst, "SELECT count(*) FROM models WHERE NOT matmuls_listed"), 1,
                 "the older agent's graph stays without a list");
    cr_expect_eq(s_digest(s_dst, "Fast Device", "convs"), s_digest(s_src, "Fast Device", "convs"));
    /* `aggregator status` counts each device's matmul results beside its convs. */
    char row[128];
    snprintf(row, sizeof row, ",%lld,%lld,",
             s_count(s_dst, "SELECT count(*) FROM conv_results r JOIN devices d USING "
                            "(device_id) WHERE d.name = 'Fast Device'"),
             s_count(s_src, "SELECT count(*) FROM matmul_results r JOIN devices d USING "
                            "(device_id) WHERE d.name = 'Fast Device'"));
    s_run(s_dst, "status --section devices --format csv", 0, out, sizeof out);
    cr_expect(strstr(out, ",conv_results,matmul_results,traces,") && strstr(out, row),
              "no device row with %s in:\n%s", row, out);
    /* The message of both kinds is one message, and those of matmuls alone
     * are there as they were. */
    cr_expect_eq(s_count(s_dst, "SELECT count(DISTINCT message_id) FROM matmul_results r WHERE "
                                "EXISTS (SELECT 1 FROM conv_results c WHERE c.message_id = "
                                "r.message_id)"),
                 1);
    cr_expect_eq(s_count(s_dst, "SELECT count(DISTINCT message_id) FROM matmul_results r "
                                "WHERE NOT EXISTS (SELECT 1 FROM conv_results c WHERE "
                                "c.message_id = r.message_id)"),
                 alone);

    /* Fitted alike: both subtract the benchmarked matmuls. */
    const char *fit_sql = "SELECT count(*) FILTER (WHERE matmuls) * 1000000000 + "
                          "coalesce(sum(round(rse * 1000000)), 0)::bigint FROM fits WHERE device = "
                          "'Fast Device'";
    s_run(s_src, "fit --device 'Fast Device'", 0, out, sizeof out);
    cr_assert(strstr(out, "benchmarked: convs and matmuls"), "%s", out);
    s_run(s_dst, "fit --device 'Fast Device'", 0, out, sizeof out);
    cr_assert(strstr(out, "benchmarked: convs and matmuls"), "%s", out);
    cr_expect_eq(s_count(s_dst, fit_sql), s_count(s_src, fit_sql));
    cr_expect_eq(s_count(s_dst, "SELECT count(*) FROM fits WHERE matmuls"), 1);
    cr_expect_eq(s_count(s_dst, "SELECT round(sum(p.matmul_ms) * 1000)::bigint FROM "
                                "fit_points p JOIN fits f USING (fit_id)"),
                 s_count(s_src, "SELECT round(sum(p.matmul_ms) * 1000)::bigint FROM "
                                "fit_points p JOIN fits f USING (fit_id)"));

    /* A new export of the same database: another set, every message of it
     * already here. */
    const char *rows_sql = "SELECT (SELECT count(*) FROM matmul_results) + (SELECT count(*) "
                           "FROM matmul_configs) + (SELECT count(*) FROM model_matmuls) + "
                           "(SELECT count(*) FROM received_messages)";
    long long rows = s_count(s_dst, rows_sql);
    char again[1200];
    snprintf(again, sizeof again, "%s/again.tcset", s_dir);
    snprintf(args, sizeof args, "export --device all --out %s --source lab-a", again);
    s_run(s_src, args, 0, out, sizeof out);
    snprintf(args, sizeof args, "import %s", again);
    s_run(s_dst, args, 0, out, sizeof out);
    cr_assert(strstr(out, "  0 messages stored"), "%s", out);
    cr_expect_eq(s_count(s_dst, rows_sql), rows);
    cr_expect_eq(s_count(s_dst, "SELECT count(*) FROM imports WHERE stored = 0 AND "
                                "duplicates > 0"),
                 1);

    /* A database that imported the models before their matmuls were listed
     * gets the lists from a set that has them. */
    char old[1200], late[1024];
    snprintf(old, sizeof old, "%s/unlisted.tcset", s_dir);
    tc_test_sql(s_src, "UPDATE models SET matmuls_listed = false");
    snprintf(args, sizeof args, "export --device all --out %s --source lab-a", old);
    s_run(s_src, args, 0, out, sizeof out);
    tc_test_sql(s_src, "UPDATE models SET matmuls_listed = model_id <> "
                       "'torchvision:oldagent@32'");
    s_fresh("set_late", late, sizeof late);
    snprintf(args, sizeof args, "import %s", old);
    s_run(late, args, 0, out, sizeof out);
    cr_expect_eq(s_count(late, "SELECT count(*) FROM models WHERE matmuls_listed"), 0);
    snprintf(args, sizeof args, "import %s", set);
    s_run(late, args, 0, out, sizeof out);
    cr_expect_eq(s_matmul_digest(late, "lists"), s_matmul_digest(s_src, "lists"));
    cr_expect_eq(s_matmul_digest(late, "results"), s_matmul_digest(s_src, "results"));
}

Test(benchset, damaged_sets_store_nothing_and_name_the_record, .init = s_setup, .timeout = 600)
{
    static char out[1 << 16];
    char set[1200], bad[1200], args[1400];
    snprintf(set, sizeof set, "%s/fast.tcset", s_dir);
    snprintf(bad, sizeof bad, "%s/bad.tcset", s_dir);
    snprintf(args, sizeof args, "export --device 'Fast Device' --out %s --source lab-a", set);
    s_run(s_src, args, 0, out, sizeof out);
    size_t n = 0;
    unsigned char *b = s_slurp(set, &n);
    const char *nothing = "SELECT (SELECT count(*) FROM received_messages) + (SELECT count(*) "
                          "FROM devices) + (SELECT count(*) FROM imports) + (SELECT count(*) "
                          "FROM models)";
    snprintf(args, sizeof args, "import %s", bad);

    /* Cut in the middle of record 3. */
    size_t r3 = s_record_at(b, n, 3);
    s_spit(bad, b, r3 + 20);
    s_run(s_dst, args, 2, out, sizeof out);
    cr_assert(strstr(out, "record 3 of ") && strstr(out, "truncated"), "%s", out);
    cr_expect_eq(s_count(s_dst, nothing), 0, "a truncated set stores nothing");

    /* Cut at a record boundary: the trailer is missing. */
    size_t r5 = s_record_at(b, n, 5);
    s_spit(bad, b, r5);
    s_run(s_dst, args, 2, out, sizeof out);
    cr_assert(strstr(out, "ends after 4 of its ") && strstr(out, "without its trailer"), "%s",
              out);
    cr_expect_eq(s_count(s_dst, nothing), 0);

    /* One byte changed inside record 4's payload. */
    size_t r4 = s_record_at(b, n, 4);
    b[r4 + 30] ^= 0x40;
    s_spit(bad, b, n);
    b[r4 + 30] ^= 0x40;
    s_run(s_dst, args, 2, out, sizeof out);
    cr_assert(strstr(out, "record 4 of ") && strstr(out, "is corrupt"), "%s", out);
    cr_expect_eq(s_count(s_dst, nothing), 0, "the first three records were not kept either");

    /* Two whole records swapped: each is intact, the set is not. */
    size_t r6 = s_record_at(b, n, 6), r7 = s_record_at(b, n, 7);
    unsigned char *sw = malloc(n);
    memcpy(sw, b, r5);
    memcpy(sw + r5, b + r6, r7 - r6);
    memcpy(sw + r5 + (r7 - r6), b + r5, r6 - r5);
    memcpy(sw + r7, b + r7, n - r7);
    s_spit(bad, sw, n);
    free(sw);
    s_run(s_dst, args, 2, out, sizeof out);
    cr_assert(strstr(out, "SHA-256 of the set does not match"), "%s", out);
    cr_expect_eq(s_count(s_dst, nothing), 0);

    /* Not a set at all. */
    s_spit(bad, (const unsigned char *)"model,device\n1,2\n", 17);
    s_run(s_dst, args, 2, out, sizeof out);
    cr_assert(strstr(out, "is not a traincast benchmark set"), "%s", out);

    /* A set of a newer format: refused, saying what to do. */
    size_t h = s_record_at(b, n, 0);
    size_t hl = b[h] | (size_t)b[h + 1] << 8 | (size_t)b[h + 2] << 16 | (size_t)b[h + 3] << 24;
    char *fv = memmem(b + h + 5, hl, "\"format_version\": 1", 19);
    cr_assert_not_null(fv, "the header names its format version");
    fv[18] = '2';
    /* Its check: the first 8 bytes of SHA-256 of the type and payload. */
    tc_sha256_t sh;
    uint8_t d[32];
    tc_sha256_init(&sh);
    tc_sha256_update(&sh, b + h + 4, 1 + hl);
    tc_sha256_final(&sh, d);
    memcpy(b + h + 5 + hl, d, 8);
    s_spit(bad, b, n);
    s_run(s_dst, args, 1, out, sizeof out);
    cr_assert(strstr(out, "format version 2") && strstr(out, "upgrade traincast"), "%s", out);
    cr_expect_eq(s_count(s_dst, nothing), 0);
    free(b);

    /* And the intact set imports. */
    snprintf(args, sizeof args, "import %s", set);
    s_run(s_dst, args, 0, out, sizeof out);
}

/* The format's own reader and writer, without a database: an empty set
 * round-trips, and its header reads back. */
Test(benchset, empty_set_round_trips)
{
    char dir[1024], path[1200];
    tc_test_tmpdir("benchset_unit", dir, sizeof dir);
    snprintf(path, sizeof path, "%s/empty.tcset", dir);
    tc_set_header_t h = {.set_id = "01HZZZZZZZZZZZZZZZZZZZZZZZ",
                         .source = "unit",
                         .traincast_version = "test",
                         .schema_version = 7,
                         .protocol_version = (int)TC_PROTOCOL_VERSION,
                         .exported_at = "2026-01-01T00:00:00Z",
                         .records = 0};
    tc_set_writer_t *w = NULL;
    cr_assert_eq(tc_set_writer_open(path, &h, &w), 0, "%s", tc_errmsg());
    cr_assert_neq(access(path, F_OK), 0, "the set appears only when finished");
    cr_assert_eq(tc_set_writer_finish(w), 0, "%s", tc_errmsg());
    tc_set_writer_destroy(&w);
    tc_set_reader_t *r = NULL;
    cr_assert_eq(tc_set_reader_open(path, &r), 0, "%s", tc_errmsg());
    cr_expect_str_eq(tc_set_reader_header(r)->source, "unit");
    cr_expect_eq(tc_set_reader_header(r)->schema_version, 7);
    tc_envelope_t *env = NULL;
    cr_assert_eq(tc_set_reader_next(r, &env), 0, "%s", tc_errmsg());
    cr_expect_null(env);
    cr_expect_eq(strlen(tc_set_reader_sha256(r)), 64);
    tc_set_reader_destroy(&r);
}
