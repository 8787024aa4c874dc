/* Every ```sql block in README.md's "Analysis in SQL" section runs as
 * written against a database holding each kind of message, and the views
 * return the rows those messages imply; the README's conv and matmul shares
 * of a traced step sum what fit sums (the traces' policy alone, where the
 * device was benchmarked under both); the matmul labels in SQL are the
 * agent's. */
#include "store.h"
#include "tc_error.h"
#include "tc_matmul.h"
#include "tc_test.h"
#include "tc_test_msg.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *s_read_readme(void)
{
    char path[1024];
    tc_test_source_path("README.md", path, sizeof path);
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "cannot open %s", path);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *text = calloc(1, (size_t)n + 1);
    cr_assert_eq(fread(text, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    return text;
}

static void s_put(tc_store_t *s, tc_envelope_t *env)
{
    tc_store_outcome_t out;
    cr_assert_eq(tc_store_put(s, env, &out), 0, "%s", tc_errmsg());
}

Test(readme, analysis_queries_run, .timeout = 120)
{
    char dsn[1024];
    tc_store_t *s = tc_test_fresh_store("readme", dsn, sizeof dsn);

    /* A model whose conv configs were benchmarked, and a trace of it. */
    tc_envelope_t *g = tc_test_envelope("a1");
    g->body_case = TRAINCAST__V1__ENVELOPE__BODY_MODEL_GRAPH;
    g->model_graph = tc_test_model_graph("torchvision:tinynet@32");
    /* Its one matmul: the first of the matmul results' configs (a Linear on
     * N rows of 50, n 3072, k 768), twice, with a gradient of A only. */
    Traincast__V1__ModelGraph *mg = g->model_graph;
    mg->matmuls_listed = 1;
    mg->n_matmuls = 1;
    mg->matmuls = calloc(1, sizeof *mg->matmuls);
    mg->matmuls[0] = calloc(1, sizeof *mg->matmuls[0]);
    traincast__v1__matmul_usage__init(mg->matmuls[0]);
    mg->matmuls[0]->config = calloc(1, sizeof *mg->matmuls[0]->config);
    traincast__v1__matmul_config__init(mg->matmuls[0]->config);
    Traincast__V1__MatmulConfig *uc = mg->matmuls[0]->config;
    uc->batch = 1, uc->m = 50, uc->n = 3072, uc->k = 768, uc->minibatch_in = 1;
    uc->trans_b = uc->weight = uc->bias = 1;
    uc->dtype = TRAINCAST__V1__DTYPE__DTYPE_FP32;
    mg->matmuls[0]->multiplicity = 2;
    mg->matmuls[0]->grad_a = 1;
    s_put(s, g);
    tc_envelope_t *cr = tc_test_envelope("a1");
    cr->body_case = TRAINCAST__V1__ENVELOPE__BODY_CONV_RESULTS;
    cr->conv_results = tc_test_conv_results("dev-1", 3);
    /* Three matmul results of that config, one per direction (fwd 2.5 ms,
     * bwd_data 3.5, bwd_filter 4.5), at batch 8. */
    tc_test_add_matmul_results(cr->conv_results, 3);
    for (size_t i = 0; i < 3; i++)
        cr->conv_results->matmul_results[i]->matmul->n = 3072;
    /* Point two results at the model's configs (c=3 and c=16, 32x32, k=16, batch 8). */
    for (int i = 0; i < 3; i++) {
        Traincast__V1__ConvConfig *c = cr->conv_results->results[i]->config;
        c->c = i == 0 ? 3 : 16;
        c->h = c->w = 32;
        c->k = 16;
    }
    s_put(s, cr);
    /* The same device also benchmarked under the other policy, slower: the
     * shares sum the traces' policy alone (heuristic: the trace has none). */
    cr_assert_eq(tc_store_exec(s,
                               "INSERT INTO conv_results (message_id, seq, device_id, config_id, "
                               "batch, direction, policy, algo, median_ms, min_ms, max_ms, "
                               "stddev_ms, repetitions, measured_at) SELECT message_id || '-x', "
                               "seq, device_id, config_id, batch, direction, 'exhaustive', algo, "
                               "100, 100, 100, 0, 1, measured_at FROM conv_results",
                               NULL, 0),
                 0, "%s", tc_errmsg());
    cr_assert_eq(tc_store_exec(s,
                               "INSERT INTO matmul_results (message_id, seq, device_id, config_id, "
                               "batch, direction, policy, algo, median_ms, min_ms, max_ms, "
                               "stddev_ms, repetitions, measured_at) SELECT message_id || '-x', "
                               "seq, device_id, config_id, batch, direction, 'exhaustive', algo, "
                               "100, 100, 100, 0, 1, measured_at FROM matmul_results",
                               NULL, 0),
                 0, "%s", tc_errmsg());
    tc_envelope_t *tr = tc_test_envelope("a1");
    tr->body_case = TRAINCAST__V1__ENVELOPE__BODY_TRAIN_TRACE;
    tr->train_trace = tc_test_trace("dev-1", "torchvision:tinynet@32", 8, 30.0);
    s_put(s, tr);
    tc_envelope_t *oom = tc_test_envelope("a1");
    oom->body_case = TRAINCAST__V1__ENVELOPE__BODY_TRAIN_TRACE;
    oom->train_trace = tc_test_trace("dev-1", "torchvision:tinynet@32", 4096, 1.0);
    oom->train_trace->status = TRAINCAST__V1__TRACE_STATUS__TRACE_STATUS_OOM;
    oom->train_trace->reason = "out of memory";
    s_put(s, oom);
    /* A prediction of the traced point made before its trace started (the
     * trace started in 2023), and one made after: only the first is
     * compared with it. */
    cr_assert_eq(tc_store_exec(s,
                               "INSERT INTO predictions (request_id, predicted_at, model_id, "
                               "model_name, input_size, device, batch, framework, dtype, "
                               "iteration_ms, lo_ms, hi_ms) SELECT 'r1', '2020-01-01', "
                               "'torchvision:tinynet@32', 'tinynet', 32, name, 8, 'pytorch', "
                               "'fp32', 33, 29, 37 FROM devices UNION ALL SELECT 'r2', now(), "
                               "'torchvision:tinynet@32', 'tinynet', 32, name, 8, 'pytorch', "
                               "'fp32', 27, 20, 28 FROM devices",
                               NULL, 0),
                 0, "%s", tc_errmsg());

    char *text = s_read_readme();
    char *section = strstr(text, "## Analysis in SQL");
    cr_assert_not_null(section, "README.md has no 'Analysis in SQL' section");
    char *end = strstr(section + 3, "\n## ");
    if (end)
        *end = '\0';
    int blocks = 0;
    char v[64], conv_ms[64] = "", matmul_ms[64] = "";
    for (char *p = section; (p = strstr(p, "```sql\n")) != NULL;) {
        p += 7;
        char *close = strstr(p, "```");
        cr_assert_not_null(close, "unterminated sql block");
        *close = '\0';
        char first[4096];
        int rc = tc_store_exec(s, p, first, sizeof first);
        cr_assert_eq(rc, 0, "README query %d failed: %s\n%s", blocks + 1, tc_errmsg(), p);
        /* The two share queries: their sums, as the README computes them. */
        char *semi = strrchr(p, ';');
        bool conv = strstr(p, " AS conv_pct") != NULL, mm = strstr(p, " AS matmul_pct") != NULL;
        if ((conv || mm) && semi) {
            char q[8192];
            snprintf(q, sizeof q, "SELECT %s FROM (%.*s) q", conv ? "conv_ms" : "matmul_ms",
                     (int)(semi - p), p);
            cr_assert_eq(tc_store_exec(s, q, conv ? conv_ms : matmul_ms, sizeof conv_ms), 0,
                         "%s\n%s", tc_errmsg(), q);
        }
        blocks++;
        p = close + 3;
    }
    cr_assert_geq(blocks, 5, "the section must hold at least five queries (found %d)", blocks);

    /* The conv share: the model uses config c3 (first layer: fwd) once and
     * c16 three times; result 0 (fwd, 1.5 ms) is c3, results 1 (bwd_data,
     * 2.5 ms) and 2 (bwd_filter, 3.5 ms) are c16: 1.5 + 3 * (2.5 + 3.5) =
     * 19.5 ms, the exhaustive policy's 100 ms results left out. */
    cr_assert_float_eq(atof(conv_ms), 19.5, 1e-9, "README's conv share reads %s ms", conv_ms);
    /* The matmul share: 2 x (fwd 2.5 + bwd_data 3.5) = 12 ms; no bwd_filter,
     * B needs no gradient. */
    cr_assert_float_eq(atof(matmul_ms), 12.0, 1e-9, "README's matmul share reads %s ms",
                       matmul_ms);
    cr_assert_eq(tc_store_exec(s, "SELECT label FROM model_matmul_usage", v, sizeof v), 0, "%s",
                 tc_errmsg());
    cr_assert_str_eq(v, "Nx50x3072 k768 tB weight +bias");
    /* prediction_vs_trace: the 2020 prediction (33 ms, 29..37) against the
     * trace (30 ms) is 10 % high and inside; the one made now has nothing
     * measured after it. */
    cr_assert_eq(tc_store_exec(s,
                               "SELECT round(error_pct::numeric, 3) || ' ' || inside_interval || "
                               "' ' || traces FROM prediction_vs_trace ORDER BY predicted_at LIMIT 1",
                               v, sizeof v),
                 0, "%s", tc_errmsg());
    cr_assert_str_eq(v, "10.000 true 1");
    cr_assert_eq(tc_store_exec(s,
                               "SELECT count(*) FROM prediction_vs_trace WHERE measured_ms IS NULL",
                               v, sizeof v),
                 0, "%s", tc_errmsg());
    cr_assert_str_eq(v, "1", "the prediction made now was not traced after");
    free(text);
    tc_store_destroy(&s);
}

/* matmul_config_labels labels a config as tc_matmul_config_label does (a
 * key: no mini-batch), for every place the mini-batch enters, counts,
 * transposes, weights, biases and dtypes. */
Test(readme, matmul_labels_match_the_agents, .timeout = 120)
{
    char dsn[1024];
    tc_store_t *s = tc_test_fresh_store("mmlabels", dsn, sizeof dsn);
    const tc_matmul_config_t cases[] = {
        {.batch = 1, .m = 50, .n = 3072, .k = 768, .minibatch_in = TC_MM_MB_ROWS,
         .trans_b = true, .weight = true, .bias = true, .dtype = TRAINCAST__V1__DTYPE__DTYPE_FP32},
        {.batch = 1, .m = 1, .n = 1000, .k = 768, .minibatch_in = TC_MM_MB_ROWS, .trans_b = true,
         .weight = true, .dtype = TRAINCAST__V1__DTYPE__DTYPE_FP32},
        {.batch = 12, .m = 49, .n = 32, .k = 49, .minibatch_in = TC_MM_MB_BATCH,
         .dtype = TRAINCAST__V1__DTYPE__DTYPE_FP32},
        {.batch = 1, .m = 64, .n = 64, .k = 32, .minibatch_in = TC_MM_MB_BATCH, .trans_a = true,
         .dtype = TRAINCAST__V1__DTYPE__DTYPE_FP16},
        {.batch = 3, .m = 7, .n = 9, .k = 11, .minibatch_in = TC_MM_MB_NONE, .trans_a = true,
         .trans_b = true, .dtype = TRAINCAST__V1__DTYPE__DTYPE_BF16},
        {.batch = 1, .m = 7, .n = 9, .k = 11, .minibatch_in = TC_MM_MB_NONE,
         .dtype = TRAINCAST__V1__DTYPE__DTYPE_FP32},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const tc_matmul_config_t *c = &cases[i];
        char want[256], sql[1024], got[256];
        tc_matmul_config_label(c, want, sizeof want);
        snprintf(sql, sizeof sql,
                 "WITH ins AS (INSERT INTO matmul_configs (batch, m, n, k, minibatch_in, "
                 "trans_a, trans_b, weight, bias, dtype) VALUES (%u, %u, %u, %u, %u, %s, %s, %s, "
                 "%s, '%s') RETURNING config_id) SELECT config_id FROM ins",
                 c->batch, c->m, c->n, c->k, c->minibatch_in, c->trans_a ? "true" : "false",
                 c->trans_b ? "true" : "false", c->weight ? "true" : "false",
                 c->bias ? "true" : "false", tc_dtype_name(c->dtype));
        char id[32];
        cr_assert_eq(tc_store_exec(s, sql, id, sizeof id), 0, "%s", tc_errmsg());
        snprintf(sql, sizeof sql, "SELECT label FROM matmul_config_labels WHERE config_id = %s", id);
        cr_assert_eq(tc_store_exec(s, sql, got, sizeof got), 0, "%s", tc_errmsg());
        cr_assert_str_eq(got, want, "config %zu: the view says '%s', the agent '%s'", i, got, want);
    }
    tc_store_destroy(&s);
}

/* Every table and view an analyst queries says what it is, and every
 * column of every table what it holds (COMMENT ON; psql's \d+). */
Test(readme, every_table_view_and_column_is_described, .timeout = 120)
{
    char dsn[1024];
    tc_store_t *s = tc_test_fresh_store("comments", dsn, sizeof dsn);
    char missing[4096];
    cr_assert_eq(
        tc_store_exec(s,
                      "SELECT coalesce(string_agg(what, ', '), '') FROM ("
                      " SELECT c.relname AS what FROM pg_class c"
                      " JOIN pg_namespace n ON n.oid = c.relnamespace"
                      " WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'v')"
                      " AND obj_description(c.oid, 'pg_class') IS NULL"
                      " UNION ALL SELECT c.relname || '.' || a.attname FROM pg_class c"
                      " JOIN pg_namespace n ON n.oid = c.relnamespace"
                      " JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0"
                      " AND NOT a.attisdropped"
                      " WHERE n.nspname = current_schema() AND c.relkind = 'r'"
                      " AND col_description(c.oid, a.attnum) IS NULL) x",
                      missing, sizeof missing),
        0, "%s", tc_errmsg());
    cr_assert_str_eq(missing, "", "without a COMMENT: %s", missing);
    tc_store_destroy(&s);
}
