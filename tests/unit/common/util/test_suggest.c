/* Did-you-mean (common/util/tc_suggest.h): the edit distance against a
 * naive reference, and which names count as typos of which. */
#include "tc_suggest.h"

#include <criterion/criterion.h>
#include <stdint.h>
#include <string.h>

/* Plain recursion over the same edits (insert, delete, substitute, swap of
 * two adjacent characters), for short strings. */
static size_t s_naive(const char *a, size_t n, const char *b, size_t m)
{
    if (!n)
        return m;
    if (!m)
        return n;
    size_t best = s_naive(a, n - 1, b, m) + 1;
    size_t d = s_naive(a, n, b, m - 1) + 1;
    best = d < best ? d : best;
    d = s_naive(a, n - 1, b, m - 1) + (a[n - 1] != b[m - 1]);
    best = d < best ? d : best;
    if (n > 1 && m > 1 && a[n - 1] == b[m - 2] && a[n - 2] == b[m - 1]) {
        d = s_naive(a, n - 2, b, m - 2) + 1;
        best = d < best ? d : best;
    }
    return best;
}

Test(suggest, distance_matches_the_reference, .timeout = 30)
{
    const char *words[] = {"",      "a",      "ab",      "ba",     "batch",   "bacth", "btach",
                           "match", "resnet", "resnt50", "resnet50", "resnet18", "abc",  "ca",
                           "vgg11", "vgg11_bn", "fp32"};
    size_t n = sizeof words / sizeof words[0];
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < n; j++)
            cr_assert_eq(tc_suggest_distance(words[i], words[j]),
                         s_naive(words[i], strlen(words[i]), words[j], strlen(words[j])),
                         "%s / %s", words[i], words[j]);
    cr_assert_eq(tc_suggest_distance("bacth", "batch"), 1, "a swap is one edit");
    char long_name[300];
    memset(long_name, 'x', sizeof long_name - 1);
    long_name[sizeof long_name - 1] = '\0';
    cr_assert_eq(tc_suggest_distance(long_name, "x"), SIZE_MAX);
}

Test(suggest, typos_find_their_name, .timeout = 10)
{
    const char *models[] = {"alexnet", "resnet18", "resnet50", "resnext50_32x4d", "vgg11",
                            "vgg11_bn", "mobilenet_v2"};
    size_t n = sizeof models / sizeof models[0];
    cr_assert_str_eq(tc_suggest("resnt50", models, n), "resnet50");
    cr_assert_str_eq(tc_suggest("resnet05", models, n), "resnet50");
    cr_assert_str_eq(tc_suggest("Resnet50", models, n), "resnet50");
    cr_assert_str_eq(tc_suggest("vgg11bn", models, n), "vgg11_bn");
    cr_assert_str_eq(tc_suggest("mobilenet", models, n), "mobilenet_v2", "cut short");
    cr_assert_str_eq(tc_suggest("alexnt", models, n), "alexnet");
    cr_assert_null(tc_suggest("transformer", models, n));
    cr_assert_null(tc_suggest("", models, n));
    cr_assert_null(tc_suggest("x", models, n));
    const char *flags[] = {"db", "batch", "model", NULL, "gpu"};
    cr_assert_str_eq(tc_suggest("bacth", flags, 5), "batch");
    cr_assert_str_eq(tc_suggest("gpus", flags, 5), "gpu");
    cr_assert_str_eq(tc_suggest("dv", flags, 5), "db", "one edit on a short name");
    cr_assert_null(tc_suggest("zz", flags, 5), "two edits on a two-letter name are no typo");
}
