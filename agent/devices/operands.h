/* Cold or warm operands: the state of the caches a CPU conv or matmul
 * benchmark meets, a setting of the CPU device (docs/conv-benchmarks.md, "Cold
 * operands").
 *
 *   cold  (default) every repetition uses the next of K copies of the tensors
 *         the direction reads, weights included, and writes the next of K
 *         output buffers, last written K repetitions ago; K copies together
 *         exceed twice the last-level cache: no operand is in cache, as in a
 *         training step, where the other layers have evicted them.
 *   warm  every repetition calls the conv (matmul) on the same tensors, so
 *         they are in cache from the repetition before: what a layer called
 *         in a loop of its own meets (the faithfulness benches' isolated
 *         comparison), and the default before 2026-12.
 *
 * The setting is part of the CPU device's identity (a cold device's name ends
 * in "| cold operands" and its uuid hashes that; warm devices keep the name
 * and uuid they always had), so benchmarks of the two modes are never fitted
 * together. It is process-wide: set once, before the device is opened, by
 * --operands or TRAINCAST_OPERANDS. GPUs ignore it: they always rotate their
 * inputs through copies larger than L2. */
#ifndef TC_OPERANDS_H
#define TC_OPERANDS_H

#include <stddef.h>
#include <stdint.h>

typedef enum {
    TC_OPERANDS_WARM = 0,
    TC_OPERANDS_COLD,
} tc_operands_t;

/* Without --operands or TRAINCAST_OPERANDS. */
#define TC_OPERANDS_DEFAULT TC_OPERANDS_COLD

/* The --operands entry of a measuring command's option table. */
#define TC_OPERANDS_OPT(var)                                                                       \
    {"operands", TC_OPT_STR, &(var), "MODE",                                                      \
     "cache state of the cpu device's conv and matmul benchmarks: cold (default: rotated "        \
     "through copies larger than the last-level cache, as in a training step) or warm (the "      \
     "same tensors every repetition); each is its own device (TRAINCAST_OPERANDS)"}

/* "warm", "cold". */
const char *tc_operands_name(tc_operands_t m);

/* TC_EUSAGE naming the choices for anything but "warm" or "cold". */
int tc_operands_parse(const char *text, tc_operands_t *out);

/* Make `text` the process's setting (NULL: TRAINCAST_OPERANDS, else cold)
 * and export it in TRAINCAST_OPERANDS for what this process starts. A bad
 * value, from the flag or the environment, is TC_EUSAGE naming where it
 * came from. Call before a device is opened. */
int tc_operands_apply(const char *text);

/* The setting in effect (TRAINCAST_OPERANDS when apply was not called,
 * TC_OPERANDS_DEFAULT when that is unset or not valid). */
tc_operands_t tc_operands_get(void);

/* The most copies a cold plan rotates through. */
#define TC_OPERANDS_MAX_COPIES 4096

/* How many copies of `copy_bytes` (the bytes one repetition reads and
 * writes) exceed twice `cache_bytes`: at least 2, at most
 * TC_OPERANDS_MAX_COPIES, and together at most a quarter of
 * `mem_available` (1 when not even two fit). */
size_t tc_operands_copies(uint64_t cache_bytes, uint64_t copy_bytes, uint64_t mem_available);

/* The size of cpu0's data or unified cache at `level` from sysfs, in
 * bytes; 0 when sysfs has none. */
uint64_t tc_operands_cache_level_bytes(int level);

/* The last-level cache the rotation must exceed: the level-3 cache of
 * cpu0 from sysfs, else sysconf(_SC_LEVEL3_CACHE_SIZE), else 32 MiB. */
uint64_t tc_operands_cache_bytes(void);

#endif
