/* aggregator fit and validate against a real PostgreSQL: every bad-input
 * path exits 2 naming the problem, and stores nothing. The stored data
 * comes from tc_test_synth.h. */
#include "fit.h"
#include "store.h"
#include "store_fit.h"
#include "tc_error.h"
#include "tc_test.h"
#include "tc_test_synth.h"
#include "tc_wire.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


Test(fit_store, bad_input_names_the_problem_and_exits_2, .timeout = 300)
{
    tc_store_t *st = tc_synth_fresh_db("fit_bad");
    char id[64], out[16384];
    for (int k = 0; k < 4; k++)
        tc_synth_put_model(st, k);
    /* synth-b: traces of four CNNs at batch 8, benchmarks of A and B_0 only. */
    const unsigned b8[] = {8};
    tc_synth_put_convs(st, "synth-b", 1, b8, 1, tc_now_us(), 1.0);
    for (int k = 0; k < 4; k++) {
        tc_synth_model_id(k, id, sizeof id);
        tc_synth_put_trace(st, "synth-b", id, 8,
                           TRAINCAST__V1__TRACE_STATUS__TRACE_STATUS_OK, 100, 0.01);
    }
    /* synth-c: known (it sent benchmarks) but never traced. */
    tc_synth_put_convs(st, "synth-c", 1, b8, 1, tc_now_us(), 1.0);
    /* synth-d: every trace failed. */
    tc_synth_model_id(0, id, sizeof id);
    tc_synth_put_trace(st, "synth-d", id, 8, TRAINCAST__V1__TRACE_STATUS__TRACE_STATUS_OOM, 0, 0);
    tc_synth_put_trace(st, "synth-d", id, 16,
                       TRAINCAST__V1__TRACE_STATUS__TRACE_STATUS_FAILED, 0, 0);
    /* synth-e: a traced model whose graph was never stored. */
    tc_synth_put_trace(st, "synth-e", "test:ghost@32", 8,
                       TRAINCAST__V1__TRACE_STATUS__TRACE_STATUS_OK, 50, 0.01);

    const struct {
        const char *args;
        const char *expect;
    } cases[] = {
        {"fit --device nosuch", "unknown device 'nosuch'"},
        {"validate --device nosuch", "synth-a"}, /* nosuch is unknown; the message lists names */
        {"fit --device synth-b", "device 'synth-b' lacks conv benchmarks for 3 configs (9 "},
        {"validate --device synth-b",
         "agent bench --models cnn1,cnn2,cnn3 --input-size 32 --batches 8 --policy heuristic"},
        {"fit --device synth-c", "device 'synth-c' has no traces"},
        {"fit --device synth-d", "no successful traces (1 failed, 1 ran out of memory"},
        {"fit --device synth-e", "test:ghost@32 have no stored model graph"},
        {"fit --forms ols,lasso --device synth-b", "unknown model form 'lasso'"},
        {"fit --features total.one,bogus.elems", "bogus.elems"},
        {"fit --features total.one --candidates bn.elems", "not both"},
        {"validate --format xml", "--format must be table, csv or json"},
        {"fit --min-gain 2", "--min-gain"},
    };
    /* synth-a exists only so that the unknown-device message can list it. */
    tc_synth_put_convs(st, "synth-a", 1, b8, 1, tc_now_us(), 1.0);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int rc = tc_synth_aggregator(cases[i].args, out, sizeof out);
        cr_expect_eq(rc, 2, "'%s' exited %d:\n%s", cases[i].args, rc, out);
        cr_expect(strstr(out, cases[i].expect) != NULL, "'%s' should say \"%s\":\n%s",
                  cases[i].args, cases[i].expect, out);
    }
    /* Too few CNNs for validate (3 CNNs with complete benchmarks). */
    tc_synth_put_convs(st, "synth-f", 3, b8, 1, tc_now_us(), 1.0);
    for (int k = 0; k < 3; k++) {
        tc_synth_model_id(k, id, sizeof id);
        tc_synth_put_trace(st, "synth-f", id, 8, TRAINCAST__V1__TRACE_STATUS__TRACE_STATUS_OK,
                           100 + k, 0.01);
    }
    int rc = tc_synth_aggregator("validate --device synth-f", out, sizeof out);
    cr_expect_eq(rc, 2, "%s", out);
    cr_expect(strstr(out, "at least 4 CNNs") != NULL, "%s", out);
    /* More fixed features than a fold has points: says how many it has and
     * needs (3 CNNs of one point each: the smallest fold has 2). */
    rc = tc_synth_aggregator("fit --device synth-f --features total.one,bn.elems,total.params "
                      "--forms ols --weightings none",
                      out, sizeof out);
    cr_expect_eq(rc, 2, "%s", out);
    cr_expect(strstr(out, "3 features need more than 3 points in every leave-one-CNN-out fold; "
                          "the smallest fold here has 2 (3 points, 3 CNNs") != NULL,
              "%s", out);
    rc = tc_synth_aggregator("validate --device synth-f --holdout batch", out, sizeof out);
    cr_expect_eq(rc, 2, "%s", out);
    cr_expect(strstr(out, "at least 3 batch sizes; there is 1") != NULL, "%s", out);
    rc = tc_synth_aggregator("validate --holdout team", out, sizeof out);
    cr_expect_eq(rc, 2, "%s", out);
    cr_expect(strstr(out, "--holdout") && strstr(out, "cnn, family or batch"), "%s", out);
    /* Nothing was stored by the failed fits. */
    char v[64];
    cr_assert_eq(tc_store_exec(st, "SELECT count(*) FROM fits", v, sizeof v), 0);
    cr_expect_str_eq(v, "0");
    tc_fit_t fit;
    cr_expect_eq(tc_store_fit_latest(st, "synth-b", NULL, NULL, NULL, NULL, &fit), TC_ENOTFOUND);
    cr_expect(strstr(tc_errmsg(), "aggregator fit --device synth-b") != NULL, "%s", tc_errmsg());
    tc_store_destroy(&st);
}
