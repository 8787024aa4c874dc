/* libFuzzer target for benchmark sets (aggregator/sets/benchset.c), what
 * `aggregator import` reads from a file someone sent: any bytes are read
 * record by record, every envelope validated as the import does before
 * storing, until the end or the first error; never a crash, a leak or
 * undefined behaviour, and a set is only ever accepted whole (its trailer
 * checked). Built with clang by tests/CMakeLists.txt and run for a bounded
 * time as the ctest fuzz_set; the seed is a valid set of the golden
 * messages (tests/fuzz/make_set_seed.py). */
#include "benchset.h"
#include "tc_log.h"
#include "tc_validate.h"

#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    tc_log_set_level(TC_LOG_ERROR);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    FILE *f = fmemopen((void *)data, size, "rb");
    if (!f)
        return 0;
    tc_set_reader_t *r = NULL;
    if (tc_set_reader_open_stream(f, "fuzz.tcset", &r) < 0)
        return 0;
    long long envelopes = 0;
    for (;;) {
        tc_envelope_t *env = NULL;
        if (tc_set_reader_next(r, &env) < 0)
            break;
        if (!env) {
            /* The end: the trailer vouched for exactly the header's count. */
            if (envelopes != tc_set_reader_header(r)->records)
                abort();
            break;
        }
        envelopes++;
        (void)tc_validate_envelope(env);
        tc_envelope_free(&env);
    }
    tc_set_reader_destroy(&r);
    return 0;
}
