#include "tc_suggest.h"

#include <stdint.h>
#include <string.h>

#define S_MAX_LEN 255

size_t tc_suggest_distance(const char *a, const char *b)
{
    size_t n = strlen(a), m = strlen(b);
    if (n > S_MAX_LEN || m > S_MAX_LEN)
        return SIZE_MAX;
    /* Three rows of the optimal-string-alignment table. */
    size_t rows[3][S_MAX_LEN + 1];
    size_t *prev2 = rows[0], *prev = rows[1], *cur = rows[2];
    for (size_t j = 0; j <= m; j++)
        prev[j] = j;
    for (size_t i = 1; i <= n; i++) {
        cur[0] = i;
        for (size_t j = 1; j <= m; j++) {
            size_t cost = a[i - 1] != b[j - 1];
            size_t d = prev[j] + 1;
            if (cur[j - 1] + 1 < d)
                d = cur[j - 1] + 1;
            if (prev[j - 1] + cost < d)
                d = prev[j - 1] + cost;
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] &&
                prev2[j - 2] + 1 < d)
                d = prev2[j - 2] + 1;
            cur[j] = d;
        }
        size_t *t = prev2;
        prev2 = prev;
        prev = cur;
        cur = t;
    }
    return prev[m];
}

static size_t s_allowed(size_t len)
{
    size_t k = len <= 4 ? 1 : len <= 8 ? 2 : 3;
    return k < len ? k : (len ? len - 1 : 0);
}

const char *tc_suggest(const char *typed, const char *const *candidates, size_t n)
{
    if (!typed || !*typed)
        return NULL;
    size_t len = strlen(typed), allowed = s_allowed(len);
    const char *best = NULL;
    size_t best_d = SIZE_MAX;
    for (size_t i = 0; i < n; i++) {
        const char *c = candidates[i];
        if (!c || !strcmp(c, typed))
            continue;
        size_t d = tc_suggest_distance(typed, c);
        /* A name cut short ("--no-val") is as good as one edit. */
        if (len >= 3 && !strncmp(c, typed, len) && d > 1)
            d = 1;
        if (d <= allowed && d < best_d) {
            best = c;
            best_d = d;
        }
    }
    return best;
}
