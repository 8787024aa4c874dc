/* Resource directories (common/util/tc_paths.h). */
#include "tc_paths.h"
#include "tc_test.h"

#include <criterion/criterion.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

/* The harness and the exports: environment, else the installed
 * share/traincast next to the executable, else the source tree while it
 * exists; with neither, the installed place (never the source tree). */
Test(paths, env_then_installed_then_source, .timeout = 10)
{
    char root[] = "/tmp/tc-paths-XXXXXX", src[128], bin[128], share[160], exe[160], out[512];
    cr_assert_not_null(mkdtemp(root));
    snprintf(src, sizeof src, "%s/src-harness", root);
    snprintf(bin, sizeof bin, "%s/prefix/bin", root);
    snprintf(share, sizeof share, "%s/prefix/share", root);
    snprintf(exe, sizeof exe, "%s/agent", bin);

    tc_resource_pick("/from/env", src, exe, "harness", out, sizeof out);
    cr_expect_str_eq(out, "/from/env");

    /* Nothing exists but the binary's folder: the installed place, so that
     * errors name where a package puts the files. */
    char path[256], prefix[PATH_MAX], expect[PATH_MAX + 64];
    snprintf(path, sizeof path, "%s/prefix", root);
    cr_assert_eq(mkdir(path, 0700), 0);
    cr_assert_eq(mkdir(bin, 0700), 0);
    cr_assert_not_null(realpath(path, prefix));
    tc_resource_pick("", src, exe, "harness", out, sizeof out);
    snprintf(expect, sizeof expect, "%s/share/traincast/harness", prefix);
    cr_expect_str_eq(out, expect);
    /* Without the executable's path: the source path, as told. */
    tc_resource_pick(NULL, src, NULL, "harness", out, sizeof out);
    cr_expect_str_eq(out, src);

    /* Installed only: the copy next to the binary. */
    cr_assert_eq(mkdir(share, 0700), 0);
    snprintf(path, sizeof path, "%s/traincast", share);
    cr_assert_eq(mkdir(path, 0700), 0);
    snprintf(path, sizeof path, "%s/traincast/harness", share);
    cr_assert_eq(mkdir(path, 0700), 0);
    char want[PATH_MAX];
    cr_assert_not_null(realpath(path, want));
    tc_resource_pick(NULL, src, exe, "harness", out, sizeof out);
    cr_expect_str_eq(out, want);
    tc_resource_pick(NULL, src, exe, "models", out, sizeof out);
    snprintf(expect, sizeof expect, "%s/share/traincast/models", prefix);
    cr_expect_str_eq(out, expect, "no installed models directory: where it would be installed");

    /* The source tree serves what is not installed (a binary run from its
     * build tree); the installed copy wins over it. */
    cr_assert_eq(mkdir(src, 0700), 0);
    tc_resource_pick(NULL, src, exe, "models", out, sizeof out);
    cr_expect_str_eq(out, src);
    tc_resource_pick(NULL, src, exe, "harness", out, sizeof out);
    cr_expect_str_eq(out, want);

    /* The live lookup honours the environment on every call. */
    setenv("TRAINCAST_DATA_DIR", "/elsewhere/models", 1);
    cr_expect_str_eq(tc_resource_dir(TC_DIR_MODELS, out, sizeof out), "/elsewhere/models");
    unsetenv("TRAINCAST_DATA_DIR");
    cr_expect_str_neq(tc_resource_dir(TC_DIR_MODELS, out, sizeof out), "/elsewhere/models");

    cr_expect(tc_test_remove_tree(root));
}
