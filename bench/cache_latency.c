/* tc-cache-latency: the load latency of this machine's cache hierarchy as
 * one thread sees it, next to the cache sizes the machine reports
 * (sysfs, as the CPU device reads them for its cold operands:
 * operands.h, docs/conv-benchmarks.md "Cold operands").
 *
 *   tc-cache-latency [MAX_MIB]
 *
 * For working sets of 1 MiB doubling up to MAX_MIB (default 1024): a
 * dependent chase through one pointer per cache line in a random cyclic
 * order, so that neither the prefetchers nor out-of-order execution hide a
 * miss. The buffer is asked for transparent huge pages (madvise), so that
 * page walks weigh as little as the machine allows; the line says whether
 * it got them. A virtual machine may report the level-3 cache of its
 * host's socket while its own share of it is far smaller: where the
 * latency reaches memory's is what the operands see. Prints one line per
 * working set: MiB, nanoseconds per load (median of 5 passes). */
#include "operands.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

enum { LINE = 64, PASSES = 5, LOADS = 4000000 };

static double s_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* xorshift64*: a reproducible order, independent of the C library. */
static uint64_t s_rand(uint64_t *state)
{
    uint64_t x = *state;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *state = x;
    return x * 2685821657736338717ULL;
}

static int s_cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Nanoseconds per dependent load over `bytes`, median of PASSES; < 0 on
 * an allocation failure. `*huge` says whether the kernel backed it with
 * huge pages. */
static double s_chase(size_t bytes, int *huge)
{
    size_t lines = bytes / LINE;
    void *mem = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (mem == MAP_FAILED)
        return -1;
    *huge = madvise(mem, bytes, MADV_HUGEPAGE) == 0;
    size_t *order = malloc(lines * sizeof *order);
    if (!order) {
        munmap(mem, bytes);
        return -1;
    }
    for (size_t i = 0; i < lines; i++)
        order[i] = i;
    uint64_t state = 0x9e3779b97f4a7c15ULL;
    for (size_t i = lines - 1; i > 0; i--) {
        size_t j = (size_t)(s_rand(&state) % (i + 1));
        size_t t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
    char *base = mem;
    for (size_t i = 0; i < lines; i++)
        *(void **)(base + order[i] * LINE) = base + order[(i + 1) % lines] * LINE;
    free(order);

    void **p = (void **)base;
    for (size_t i = 0; i < lines; i++) /* one lap to warm what fits */
        p = (void **)*p;
    double ns[PASSES];
    for (int r = 0; r < PASSES; r++) {
        double t0 = s_now();
        for (long i = 0; i < LOADS; i++)
            p = (void **)*p;
        ns[r] = 1e9 * (s_now() - t0) / LOADS;
    }
    if (p == NULL) /* keeps the chase from being optimised away */
        puts("");
    munmap(mem, bytes);
    qsort(ns, PASSES, sizeof ns[0], s_cmp);
    return ns[PASSES / 2];
}

int main(int argc, char **argv)
{
    unsigned long max_mib = 1024;
    if (argc > 2 || (argc == 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0))) {
        fprintf(stderr, "usage: tc-cache-latency [MAX_MIB]\n");
        return argc == 2 ? 0 : 2;
    }
    if (argc == 2) {
        char *end = NULL;
        max_mib = strtoul(argv[1], &end, 10);
        if (!end || *end || max_mib < 1 || max_mib > 65536) {
            fprintf(stderr, "tc-cache-latency: MAX_MIB must be a number of MiB from 1 to 65536, "
                            "not '%s'\n", argv[1]);
            return 2;
        }
    }
    printf("reported: L2 %llu KiB, L3 %llu KiB (cpu0, sysfs); the cold rotation exceeds "
           "twice %llu KiB\n",
           (unsigned long long)(tc_operands_cache_level_bytes(2) >> 10),
           (unsigned long long)(tc_operands_cache_level_bytes(3) >> 10),
           (unsigned long long)(tc_operands_cache_bytes() >> 10));
    printf("MiB\tns/load\thuge pages asked\n");
    for (unsigned long mib = 1; mib <= max_mib; mib *= 2) {
        int huge = 0;
        double ns = s_chase((size_t)mib << 20, &huge);
        if (ns < 0) {
            fprintf(stderr, "tc-cache-latency: no memory for %lu MiB\n", mib);
            return 1;
        }
        printf("%lu\t%.1f\t%s\n", mib, ns, huge ? "yes" : "no");
        fflush(stdout);
    }
    return 0;
}
