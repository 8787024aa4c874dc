/* Deterministic random numbers for tests (tc_test_rng.h). */
#include "tc_test_rng.h"

#include <math.h>

static uint64_t s_rng = 1;

void tc_test_seed(uint64_t seed)
{
    s_rng = seed * 6364136223846793005ull + 1442695040888963407ull;
}

double tc_test_uniform(void)
{
    s_rng = s_rng * 6364136223846793005ull + 1442695040888963407ull;
    return ((double)(s_rng >> 11) + 0.5) / 9007199254740992.0;
}

double tc_test_normal(void)
{
    return sqrt(-2.0 * log(tc_test_uniform())) * cos(2.0 * M_PI * tc_test_uniform());
}
