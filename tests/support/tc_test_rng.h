/* Deterministic random numbers for tests: a 64-bit linear congruential
 * generator, so a seed gives the same sequence on every machine. One
 * sequence per process (Criterion runs each test in its own). */
#ifndef TC_TEST_RNG_H
#define TC_TEST_RNG_H

#include <stdint.h>

/* Restart the sequence from `seed`. */
void tc_test_seed(uint64_t seed);
/* Uniform in (0, 1). */
double tc_test_uniform(void);
/* Standard normal (Box-Muller). */
double tc_test_normal(void);

#endif
