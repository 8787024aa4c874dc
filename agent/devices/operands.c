#include "operands.h"

#include "tc_error.h"

#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define S_ENV "TRAINCAST_OPERANDS"

static int s_applied = -1; /* -1: not applied, else a tc_operands_t */

const char *tc_operands_name(tc_operands_t m) { return m == TC_OPERANDS_COLD ? "cold" : "warm"; }

int tc_operands_parse(const char *text, tc_operands_t *out)
{
    if (text && !strcmp(text, "warm")) {
        *out = TC_OPERANDS_WARM;
        return 0;
    }
    if (text && !strcmp(text, "cold")) {
        *out = TC_OPERANDS_COLD;
        return 0;
    }
    return tc_fail(TC_EUSAGE, "operands must be warm or cold, not '%s'", text ? text : "");
}

int tc_operands_apply(const char *text)
{
    const char *env = getenv(S_ENV);
    const char *from = text ? "--operands" : S_ENV;
    if (!text)
        text = env && *env ? env : tc_operands_name(TC_OPERANDS_DEFAULT);
    tc_operands_t m;
    if (tc_operands_parse(text, &m) < 0)
        return tc_err_context(TC_EUSAGE, "%s", from);
    s_applied = (int)m;
    setenv(S_ENV, tc_operands_name(m), 1);
    return 0;
}

tc_operands_t tc_operands_get(void)
{
    if (s_applied >= 0)
        return (tc_operands_t)s_applied;
    const char *env = getenv(S_ENV);
    tc_operands_t m = TC_OPERANDS_DEFAULT;
    if (env && *env && tc_operands_parse(env, &m) < 0) {
        tc_err_clear();
        m = TC_OPERANDS_DEFAULT;
    }
    return m;
}

size_t tc_operands_copies(uint64_t cache_bytes, uint64_t copy_bytes, uint64_t mem_available)
{
    if (!copy_bytes)
        return 1;
    uint64_t want = (2 * cache_bytes) / copy_bytes + 1; /* strictly more than twice the cache */
    if (want < 2)
        want = 2;
    if (want > TC_OPERANDS_MAX_COPIES)
        want = TC_OPERANDS_MAX_COPIES;
    uint64_t fit = mem_available / 4 / copy_bytes;
    if (fit < 2)
        return 1;
    return (size_t)(want < fit ? want : fit);
}

/* "32768K", "2M", "1048576" in bytes; 0 when not a size. */
static uint64_t s_size(const char *text)
{
    char *end = NULL;
    unsigned long long v = strtoull(text, &end, 10);
    if (end == text)
        return 0;
    switch (*end) {
    case 'K': case 'k': return (uint64_t)v << 10;
    case 'M': case 'm': return (uint64_t)v << 20;
    case 'G': case 'g': return (uint64_t)v << 30;
    default: return v;
    }
}

uint64_t tc_operands_cache_level_bytes(int level)
{
    glob_t g;
    uint64_t bytes = 0;
    if (glob("/sys/devices/system/cpu/cpu0/cache/index*", 0, NULL, &g) != 0)
        return 0;
    for (size_t i = 0; i < g.gl_pathc && !bytes; i++) {
        char path[512], buf[64];
        int lv = 0;
        snprintf(path, sizeof path, "%s/level", g.gl_pathv[i]);
        FILE *f = fopen(path, "r");
        if (!f)
            continue;
        if (fscanf(f, "%d", &lv) != 1)
            lv = 0;
        fclose(f);
        if (lv != level)
            continue;
        snprintf(path, sizeof path, "%s/type", g.gl_pathv[i]);
        if ((f = fopen(path, "r"))) {
            int instruction = fgets(buf, sizeof buf, f) && strncmp(buf, "Instruction", 11) == 0;
            fclose(f);
            if (instruction)
                continue;
        }
        snprintf(path, sizeof path, "%s/size", g.gl_pathv[i]);
        if (!(f = fopen(path, "r")))
            continue;
        if (fgets(buf, sizeof buf, f))
            bytes = s_size(buf);
        fclose(f);
    }
    globfree(&g);
    return bytes;
}

uint64_t tc_operands_cache_bytes(void)
{
    uint64_t bytes = tc_operands_cache_level_bytes(3);
#ifdef _SC_LEVEL3_CACHE_SIZE
    if (!bytes) {
        long v = sysconf(_SC_LEVEL3_CACHE_SIZE);
        bytes = v > 0 ? (uint64_t)v : 0;
    }
#endif
    return bytes ? bytes : (uint64_t)32 << 20;
}
