/* A model file's id is its structure's: the same network exported with
 * and without its weights gets one id, and schema/013 gives a database's
 * stored file models (ids of the file's bytes, two for that network) the
 * id the importer computes now, with their traces. */
#include "store.h"
#include "store_model.h"
#include "tc_error.h"
#include "tc_model.h"
#include "tc_test.h"
#include "tc_test_law.h"
#include "tc_test_proc.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static tc_model_t *s_load(const char *rel)
{
    char path[1024];
    tc_test_source_path(rel, path, sizeof path);
    tc_model_t *m = NULL;
    cr_assert_eq(tc_model_load_file(path, NULL, &m), 0, "%s: %s", rel, tc_errmsg());
    return m;
}

Test(model_ids, one_network_one_id_whatever_its_file, .timeout = 60)
{
    tc_model_t *inits = s_load("tests/data/resnet18.onnx");
    tc_model_t *inputs = s_load("tests/data/forms/resnet18_params_as_inputs.onnx");
    tc_model_t *eval = s_load("tests/data/forms/resnet18_eval_params_as_inputs.onnx");
    cr_expect_str_neq(tc_model_sha256(inits), tc_model_sha256(inputs), "two files");
    cr_expect_str_eq(tc_model_id(inits), tc_model_id(inputs), "one network");
    cr_expect_eq(strncmp(tc_model_id(inits), "onnx:", 5), 0);
    cr_expect_str_neq(tc_model_id(eval), tc_model_id(inits),
                      "batch norm folded is another structure");
    tc_model_opts_t o = {.input_size = 160};
    tc_model_t *small = NULL;
    char path[1024];
    tc_test_source_path("tests/data/resnet18.onnx", path, sizeof path);
    cr_assert_eq(tc_model_load_file(path, &o, &small), 0, "%s", tc_errmsg());
    cr_expect(strstr(tc_model_id(small), "@160") &&
                  strncmp(tc_model_id(small), tc_model_id(inits), 17) != 0,
              "another input size is another structure: %s", tc_model_id(small));
    tc_model_destroy(&small);
    tc_model_destroy(&eval);
    tc_model_destroy(&inputs);
    tc_model_destroy(&inits);
}

/* Classes are how the regression reads a layer, not the network: the ids
 * of models with layer norms and copies are those the importer gave before
 * norm, softmax and copy were classes of their own. A conv's layout is part
 * of its config, so ConvNeXt's id changed (from onnx:943dd30c5447) when its
 * convs were found to run channels-last: its stored convs are NCHW ones. */
Test(model_ids, new_op_classes_keep_the_ids, .timeout = 60)
{
    static const char *const cases[][2] = {
        {"tests/data/convnext_tiny.onnx", "onnx:7206ec270395@224"},
        {"tests/data/shufflenet_v2_x1_0.onnx", "onnx:50cd22b9fc9c@224"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        tc_model_t *m = s_load(cases[i][0]);
        size_t copies = 0;
        for (size_t k = 0; k < tc_model_node_count(m); k++)
            copies += tc_model_node(m, k)->op_class == TC_OPC_COPY;
        cr_expect_gt(copies, 0, "%s has copies", cases[i][0]);
        cr_expect_str_eq(tc_model_id(m), cases[i][1], "%s", cases[i][0]);
        tc_model_destroy(&m);
    }
}

/* The copy of stored model X under id `to` (graph, layers, convs). */
static void s_copy_model(const char *dsn, const char *from, const char *to, const char *when)
{
    char sql[2048];
    snprintf(sql, sizeof sql,
             "INSERT INTO models (model_id, name, input_c, input_h, input_w, params, flops, "
             "source_sha256, stored_at) SELECT '%s', name, input_c, input_h, input_w, params, "
             "flops, source_sha256, %s FROM models WHERE model_id = '%s';"
             "INSERT INTO model_layers (model_id, idx, name, op, op_class, params, flops, "
             "elems_in, elems_out, out_shape) SELECT '%s', idx, name, op, op_class, params, "
             "flops, elems_in, elems_out, out_shape FROM model_layers WHERE model_id = '%s';"
             "INSERT INTO model_convs (model_id, config_id, first_layer, multiplicity) SELECT "
             "'%s', config_id, first_layer, multiplicity FROM model_convs WHERE model_id = '%s'",
             to, when, from, to, from, to, from);
    tc_test_sql(dsn, sql);
}

Test(model_ids, stored_file_ids_become_structure_ids, .timeout = 300)
{
    char dsn[1024];
    tc_store_t *s = tc_test_fresh_store("model_ids", dsn, sizeof dsn);
    tc_model_t *inits = s_load("tests/data/resnet18.onnx");
    tc_model_t *inputs = s_load("tests/data/forms/resnet18_params_as_inputs.onnx");
    const char *id = tc_model_id(inits);
    tc_law_put_trace(s, inits, &tc_law_devices[0], 8);
    tc_law_put_trace(s, inputs, &tc_law_devices[0], 16);
    tc_store_destroy(&s);
    char sql[4096];
    snprintf(sql, sizeof sql, "SELECT count(*) FROM traces WHERE model_id = '%s'", id);
    cr_assert_eq(tc_test_sql_count(dsn, sql), 2, "both files' traces under one id");

    /* The database as an older traincast left it: each file its own id, of
     * its bytes, each trace under its file's. */
    char old_a[64], old_b[64];
    snprintf(old_a, sizeof old_a, "onnx:%.12s@224", tc_model_sha256(inits));
    snprintf(old_b, sizeof old_b, "onnx:%.12s@224", tc_model_sha256(inputs));
    s_copy_model(dsn, id, old_a, "now() - interval '2 days'");
    s_copy_model(dsn, id, old_b, "now() - interval '1 day'");
    snprintf(sql, sizeof sql,
             "UPDATE traces SET model_id = CASE batch WHEN 8 THEN '%s' ELSE '%s' END WHERE "
             "model_id = '%s'; DELETE FROM models WHERE model_id = '%s'",
             old_a, old_b, id, id);
    tc_test_sql(dsn, sql);
    cr_assert_eq(tc_test_sql_count(dsn, "SELECT count(*) FROM models"), 2);

    /* schema/013, as migrate runs it: one transaction. */
    char path[1024];
    tc_test_source_path("schema/013_model_structure_ids.sql", path, sizeof path);
    FILE *f = fopen(path, "r");
    cr_assert_not_null(f, "%s", path);
    static char migration[1 << 16];
    size_t n = fread(migration, 1, sizeof migration - 1, f);
    fclose(f);
    migration[n] = '\0';
    static char tx[(1 << 16) + 64];
    snprintf(tx, sizeof tx, "BEGIN;\n%s\nCOMMIT;", migration);
    tc_test_sql(dsn, tx);

    /* One model, under the id the importer computes, with its graph whole
     * and both traces. */
    cr_expect_eq(tc_test_sql_count(dsn, "SELECT count(*) FROM models"), 1);
    snprintf(sql, sizeof sql, "SELECT count(*) FROM models WHERE model_id = '%s'", id);
    cr_expect_eq(tc_test_sql_count(dsn, sql), 1, "the SQL computes the importer's id %s", id);
    snprintf(sql, sizeof sql, "SELECT count(*) FROM traces WHERE model_id = '%s'", id);
    cr_expect_eq(tc_test_sql_count(dsn, sql), 2);
    snprintf(sql, sizeof sql, "SELECT count(*) FROM model_layers WHERE model_id = '%s'", id);
    cr_expect_eq(tc_test_sql_count(dsn, sql), (long long)tc_model_node_count(inits));
    snprintf(sql, sizeof sql, "SELECT count(*) FROM model_convs WHERE model_id = '%s'", id);
    cr_expect_eq(tc_test_sql_count(dsn, sql), (long long)tc_model_conv_count(inits));
    cr_expect_eq(tc_test_sql_count(dsn, "SELECT count(*) FROM model_layers WHERE model_id LIKE "
                                        "'onnx:%' AND model_id NOT IN (SELECT model_id FROM "
                                        "models)"),
                 0, "no layer left behind");
    tc_model_destroy(&inputs);
    tc_model_destroy(&inits);
}

/* Layers stored before layer norm and softmax were classes of their own say
 * reduce: the fit and predict read them as an import classes them now. */
Test(model_ids, layers_stored_as_reduce_read_as_norm_and_softmax, .timeout = 120)
{
    char dsn[1024];
    tc_store_t *s = tc_test_fresh_store("model_ids_classes", dsn, sizeof dsn);
    tc_model_t *m = s_load("tests/data/convnext_tiny.onnx");
    const char *id = tc_model_id(m);
    tc_law_put_trace(s, m, &tc_law_devices[0], 8);
    char sql[1024];
    snprintf(sql, sizeof sql,
             "SELECT count(*) FROM model_layers WHERE model_id = '%s' AND op_class = 'norm'", id);
    long long norms = tc_test_sql_count(dsn, sql);
    cr_assert_gt(norms, 0, "convnext's layer norms are stored as norm");
    snprintf(sql, sizeof sql,
             "UPDATE model_layers SET op_class = 'reduce' WHERE model_id = '%s' AND "
             "op_class = 'norm'; UPDATE model_layers SET op = 'Softmax', op_class = 'reduce' "
             "WHERE model_id = '%s' AND idx = (SELECT max(idx) FROM model_layers WHERE "
             "model_id = '%s')",
             id, id, id);
    tc_test_sql(dsn, sql);
    tc_layer_summary_t *layers = NULL;
    size_t n = 0;
    cr_assert_eq(tc_store_model_layers(s, id, &layers, &n), 0, "%s", tc_errmsg());
    cr_assert_eq(n, tc_model_node_count(m));
    size_t got_norm = 0, got_reduce = 0;
    for (size_t i = 0; i < n; i++) {
        got_norm += layers[i].op_class == TC_OPC_NORM;
        got_reduce += layers[i].op_class == TC_OPC_REDUCE;
    }
    cr_expect_eq(got_norm, (size_t)norms, "every layer norm read as norm");
    cr_expect_eq(layers[n - 1].op_class, TC_OPC_SOFTMAX, "a softmax stored as reduce");
    cr_expect_eq(got_reduce, 0);
    free(layers);
    tc_store_destroy(&s);
    tc_model_destroy(&m);
}
