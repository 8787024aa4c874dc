/* libFuzzer target for the wire path of `aggregator serve`: any frame is
 * decoded (protobuf-c, size-capped), validated, and a valid message is
 * turned into the COPY rows that staging loads; never a crash, a leak or an
 * undefined behaviour, and every row has exactly its table's columns
 * whatever the strings hold (an unescaped tab or newline would shift or
 * split a row). Built with clang by tests/CMakeLists.txt and run for a
 * bounded time as the ctest fuzz_wire; the seeds are real messages of every
 * kind (tests/data/golden). */
#include "store_rows.h"
#include "tc_log.h"
#include "tc_validate.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerInitialize(int *argc, char ***argv);
/* A binary COPY buffer holds `want` rows of `cols` columns and nothing
 * else, each field's length within it. */
static void s_check_binary(const tc_buf_t *b, int cols, size_t want, const char *what)
{
    if (b->failed)
        return;
    size_t rows = 0;
    if (tc_bin_check(b, cols, &rows) < 0 || rows != want) {
        fprintf(stderr, "%s: not %zu binary COPY rows of %d columns\n", what, want,
                cols);
        abort();
    }
}

static size_t s_candidates(const Traincast__V1__ConvResults *cr)
{
    size_t n = 0;
    for (size_t i = 0; i < cr->n_results; i++)
        n += cr->results[i]->n_candidates;
    return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    tc_log_set_level(TC_LOG_ERROR);
    return 0;
}

/* Every line of a COPY text buffer has `cols` columns: cols - 1 raw tabs,
 * no raw carriage return, and a final newline. */
static void s_check_rows(const tc_buf_t *b, int cols, const char *what)
{
    if (b->failed)
        return; /* out of memory is reported by the store as such */
    const char *p = b->len ? b->data : "";
    const char *end = p + b->len;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        if (!nl) {
            fprintf(stderr, "%s: a row without its newline\n", what);
            abort();
        }
        int tabs = 0;
        for (const char *q = p; q < nl; q++) {
            tabs += *q == '\t';
            if (*q == '\r') {
                fprintf(stderr, "%s: a raw carriage return in a row\n", what);
                abort();
            }
        }
        if (tabs != cols - 1) {
            fprintf(stderr, "%s: a row of %d columns, want %d\n", what, tabs + 1, cols);
            abort();
        }
        p = nl + 1;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    tc_envelope_t *env = NULL;
    if (tc_envelope_unpack(data, size, 0, &env) < 0)
        return 0;
    if (tc_validate_envelope(env) == 0) {
        tc_buf_t a = {0}, b = {0};
        switch (env->body_case) {
        case TRAINCAST__V1__ENVELOPE__BODY_CONV_RESULTS: {
            size_t n = env->conv_results->n_results;
            long long *ids = calloc(n ? n : 1, sizeof *ids);
            if (!ids)
                abort();
            const tc_rows_conv_ids_t rid = {.message_id = env->message_id, .device_id = "1",
                                            .result_ids = ids, .config_ids = ids};
            tc_rows_conv_results(env->conv_results, &rid, &a, &b);
            s_check_binary(&a, TC_ROWS_RESULT_COLS, n, "conv results");
            s_check_binary(&b, TC_ROWS_CAND_COLS, s_candidates(env->conv_results),
                           "candidates");
            free(ids);
            break;
        }
        case TRAINCAST__V1__ENVELOPE__BODY_MODEL_GRAPH:
            tc_rows_model_graph(env->model_graph, &a, &b);
            s_check_rows(&a, TC_ROWS_LAYER_COLS, "layers");
            s_check_rows(&b, TC_ROWS_CONV_COLS, "convs");
            break;
        case TRAINCAST__V1__ENVELOPE__BODY_TRAIN_TRACE:
            tc_rows_trace(1, env->train_trace, &a, &b);
            s_check_rows(&a, TC_ROWS_ITER_COLS, "iterations");
            s_check_rows(&b, TC_ROWS_OP_COLS, "op times");
            if (env->train_trace->graph) {
                tc_buf_t c = {0}, d = {0};
                tc_rows_model_graph(env->train_trace->graph, &c, &d);
                s_check_rows(&c, TC_ROWS_LAYER_COLS, "trace layers");
                s_check_rows(&d, TC_ROWS_CONV_COLS, "trace convs");
                tc_buf_free(&c);
                tc_buf_free(&d);
            }
            break;
        default:
            break;
        }
        tc_buf_free(&a);
        tc_buf_free(&b);
    }
    tc_envelope_free(&env);
    return 0;
}
