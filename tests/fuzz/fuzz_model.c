/* libFuzzer target for the ONNX importer: any bytes must end in a model or
 * an error, never a crash, a leak or unbounded memory. Built with clang
 * (-fsanitize=fuzzer,address,undefined) by tests/CMakeLists.txt and run for
 * a bounded time as the ctest fuzz_model; seeds are in tests/fuzz/corpus
 * (tests/fuzz/make_corpus.py) and the committed exports. */
#include "tc_log.h"
#include "tc_model.h"

#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    tc_log_set_level(TC_LOG_ERROR); /* unknown-op warnings would flood */
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* The last byte picks the options, so both paths get explored. */
    tc_model_opts_t opts = {0};
    if (size) {
        opts.allow_unknown = data[size - 1] & 1;
        opts.input_size = (data[size - 1] & 2) ? 64 : 0;
    }
    tc_model_t *m = NULL;
    if (tc_model_load_bytes(data, size, "fuzz", &opts, &m) == 0) {
        tc_features_t f;
        tc_model_features(m, 16, &f);
        Traincast__V1__ModelGraph *g = NULL;
        if (tc_model_to_proto(m, &g) == 0)
            tc_model_proto_free(&g);
        int rank;
        int64_t dims[TC_MODEL_MAX_RANK];
        bool batched;
        for (size_t i = 0; i < tc_model_node_count(m); i++)
            (void)tc_model_value_shape(m, tc_model_node(m, i)->name, &rank, dims, &batched);
    }
    tc_model_destroy(&m);
    return 0;
}
