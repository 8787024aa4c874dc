/* Choosing devices by name, part of a name or alias; default aliases. */
#include "device_match.h"
#include "tc_error.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void s_class(tc_device_class_t *c, const char *name, const char *alias)
{
    memset(c, 0, sizeof *c);
    snprintf(c->name, sizeof c->name, "%s", name);
    if (alias) {
        snprintf(c->alias, sizeof c->alias, "%s", alias);
        c->alias_set = true;
    }
}

Test(device_match, default_aliases_are_short_and_whole_words)
{
    static const struct {
        const char *name, *alias;
    } cases[] = {
        {"AMD EPYC (1 thread) [tcmalloc 2.10 | OpenBLAS 0.3.21 openmp | pytorch 1.13.0a0]",
         "EPYC 1t"},
        {"AMD EPYC (16 threads) [tcmalloc 2.10 | OpenBLAS 0.3.21 openmp | pytorch 1.13.0a0]",
         "EPYC 16t"},
        {"AMD EPYC 7B13 64-Core Processor (2 threads) [glibc | MKL | pytorch 2.1]",
         "EPYC 7B13 2t"},
        {"Intel(R) Xeon(R) Gold 6338 CPU @ 2.00GHz (8 threads)", "Gold 6338 8t"},
        {"NVIDIA H200", "H200"},
        {"NVIDIA GeForce RTX 4090", "RTX 4090"},
        {"Tesla V100-SXM2-16GB-with-a-long-suffix", "Tesla"},
        {"Supercalifragilisticexpialidocious", "Supercalifragili"},
        {"Fast Device", "Fast Device"},
        {"AMD", "device"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char buf[64];
        tc_device_alias_default(cases[i].name, buf, sizeof buf);
        cr_expect_str_eq(buf, cases[i].alias, "%s", cases[i].name);
        cr_expect_leq(strlen(buf), TC_DEVICE_ALIAS_MAX, "%s", buf);
        cr_expect_eq(tc_device_alias_check(buf), 0, "a default '%s' must be settable", buf);
    }
}

/* Two devices whose names give the same default get told apart; a set
 * alias keeps its name and a default that clashes with it moves. */
Test(device_match, default_aliases_are_unique)
{
    tc_device_class_t all[4];
    s_class(&all[0], "AMD EPYC (1 thread) [glibc | MKL]", NULL);
    s_class(&all[1], "AMD EPYC (1 thread) [tcmalloc 2.10 | OpenBLAS]", NULL);
    s_class(&all[2], "AMD EPYC (2 threads) [glibc]", NULL);
    s_class(&all[3], "NVIDIA H200", "epyc 2t");
    tc_device_alias_defaults(all, 4);
    cr_expect_str_eq(all[0].alias, "EPYC 1t");
    cr_expect_str_eq(all[1].alias, "EPYC 1t #2");
    cr_expect_str_eq(all[2].alias, "EPYC 2t #2", "'epyc 2t' is taken by H200 (case ignored)");
    cr_expect_str_eq(all[3].alias, "epyc 2t");
    cr_expect_not(all[0].alias_set);
    cr_expect(all[3].alias_set);
}

Test(device_match, by_name_alias_or_unique_part)
{
    tc_device_class_t all[3];
    s_class(&all[0], "AMD EPYC (1 thread) [tcmalloc 2.10]", NULL);
    s_class(&all[1], "AMD EPYC (2 threads) [tcmalloc 2.10]", NULL);
    s_class(&all[2], "NVIDIA H200", "big one");
    tc_device_alias_defaults(all, 3);
    size_t hit = 9;
    cr_assert_eq(tc_device_match(all, 3, "AMD EPYC (2 threads) [tcmalloc 2.10]", "--gpu", &hit),
                 0);
    cr_expect_eq(hit, 1);
    cr_assert_eq(tc_device_match(all, 3, "epyc 1T", "--gpu", &hit), 0, "%s", tc_errmsg());
    cr_expect_eq(hit, 0, "an alias, case ignored");
    cr_assert_eq(tc_device_match(all, 3, "Big One", "--gpu", &hit), 0, "%s", tc_errmsg());
    cr_expect_eq(hit, 2);
    cr_assert_eq(tc_device_match(all, 3, "2 threads", "--prices", &hit), 0, "%s", tc_errmsg());
    cr_expect_eq(hit, 1, "a unique part of the name");
    cr_expect_eq(tc_device_match(all, 3, "EPYC", "--prices", &hit), TC_EINVAL);
    cr_expect(strstr(tc_errmsg(), "matches 2 devices"), "%s", tc_errmsg());
    cr_expect_eq(tc_device_match(all, 3, "A100", "--prices", &hit), TC_EINVAL);
    cr_expect(strstr(tc_errmsg(), "--prices: unknown device 'A100'") &&
                  strstr(tc_errmsg(), "'NVIDIA H200' (big one)") &&
                  strstr(tc_errmsg(), "(EPYC 1t)"),
              "names the entry and the known devices with their aliases: %s", tc_errmsg());
}

Test(device_match, alias_check)
{
    cr_expect_eq(tc_device_alias_check("EPYC 1t"), 0);
    cr_expect_eq(tc_device_alias_check(""), TC_EUSAGE);
    cr_expect_eq(tc_device_alias_check("seventeen chars!!"), TC_EUSAGE);
    cr_expect_eq(tc_device_alias_check(" lead"), TC_EUSAGE);
    cr_expect_eq(tc_device_alias_check("a,b"), TC_EUSAGE);
    cr_expect_eq(tc_device_alias_check("a=b"), TC_EUSAGE);
    cr_expect_eq(tc_device_alias_check("a#b"), TC_EUSAGE);
    cr_expect(strstr(tc_errmsg(), "'a#b'"), "%s", tc_errmsg());
}
