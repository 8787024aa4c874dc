#include "cpu_cold.h"

#include "hostinfo.h"
#include "operands.h"
#include "tc_log.h"

#include <stdlib.h>
#include <string.h>

int tc_cpu_cold_init(tc_cpu_cold_t *c, const tc_cpu_ctx_t *dev, uint64_t copy_bytes)
{
    memset(c, 0, sizeof *c);
    c->copies = 1;
    if (!dev->cold)
        return 0;
    c->copies = tc_operands_copies(dev->cache_bytes, copy_bytes, tc_mem_available());
    tc_log_debug("cold operands: %zu copies of %llu bytes (last-level cache %llu bytes)",
                 c->copies, (unsigned long long)copy_bytes, (unsigned long long)dev->cache_bytes);
    return 0;
}

/* K copies of tensor t, each a copy of `first` (NULL: zeros). */
static int s_copies(tc_cpu_cold_t *c, unsigned t, const char *name, const void *first,
                    size_t bytes)
{
    if (t >= TC_CPU_COLD_SLOTS)
        return tc_fail(TC_EINVAL, "no cold-operand slot %u for tensor %s", t, name);
    if (c->copies < 2)
        return 0;
    c->in[t] = calloc(c->copies, sizeof *c->in[t]);
    if (!c->in[t])
        return tc_fail(TC_ENOMEM, "out of memory for the copies of tensor %s", name);
    for (size_t r = 0; r < c->copies; r++) {
        if (posix_memalign(&c->in[t][r], 64, bytes ? bytes : 64) != 0) {
            c->in[t][r] = NULL;
            return tc_fail(TC_ENOMEM, "out of memory for copy %zu of %zu of tensor %s (%zu bytes)",
                           r, c->copies, name, bytes);
        }
        if (first)
            memcpy(c->in[t][r], first, bytes);
        else
            memset(c->in[t][r], 0, bytes);
    }
    return 0;
}

int tc_cpu_cold_add_input(tc_cpu_cold_t *c, unsigned t, const char *name, const void *first,
                          size_t bytes)
{
    return s_copies(c, t, name, first, bytes);
}

void tc_cpu_cold_next(tc_cpu_cold_t *c)
{
    if (c->copies > 1)
        c->turn = (c->turn + 1) % c->copies;
}

void *tc_cpu_cold_input(const tc_cpu_cold_t *c, unsigned t, void *first)
{
    return c->in[t] ? c->in[t][c->turn] : first;
}

int tc_cpu_cold_add_output(tc_cpu_cold_t *c, unsigned t, const char *name, size_t bytes)
{
    return s_copies(c, t, name, NULL, bytes);
}

void tc_cpu_cold_release(tc_cpu_cold_t *c)
{
    for (int t = 0; t < TC_CPU_COLD_SLOTS; t++) {
        if (c->in[t])
            for (size_t r = 0; r < c->copies; r++)
                free(c->in[t][r]);
        free(c->in[t]);
        c->in[t] = NULL;
    }
}
