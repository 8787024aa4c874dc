#include "tc_test.h"

#include "store.h"
#include "tc_error.h"

#include <criterion/criterion.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

void tc_test_source_path(const char *rel, char *out, size_t size)
{
    snprintf(out, size, "%s/%s", TC_SOURCE_DIR, rel);
}

void tc_test_scratch_dir(const char *name, const char *subdir, char *dir, size_t size)
{
    snprintf(dir, size, "/tmp/tc_%s_%d", name, (int)getpid());
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s' && mkdir -p '%s/%s'", dir, dir, subdir ? subdir : "");
    cr_assert_eq(system(cmd), 0, "cannot make the scratch directory %s", dir);
}

bool tc_test_remove_tree(const char *path)
{
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", path);
    return system(cmd) == 0;
}

void tc_test_fresh_db(const char *name, char *dsn, size_t size)
{
    char path[1024], admin[1024] = "";
    snprintf(path, sizeof path, "%s/dsn", TC_TEST_PG_DIR);
    FILE *f = fopen(path, "r");
    if (!f)
        cr_assert_fail("no test PostgreSQL: %s is missing; run the suite with ctest (its pg_start "
                 "fixture starts one) or ./deploy/test.sh",
                 path);
    if (!fgets(admin, sizeof admin, f))
        admin[0] = '\0';
    fclose(f);
    admin[strcspn(admin, "\n")] = '\0';
    /* Unique per test process so parallel tests never share a database. */
    char db[128];
    snprintf(db, sizeof db, "t_%s_%d", name, (int)getpid());
    /* The first time this process asks for the name, drop what an earlier
     * process left under it (pids are reused across runs: a test must not
     * start from another test's database); later calls in the same test
     * get the same database. */
    static char s_made[64][128];
    static size_t s_n_made;
    bool mine = false;
    for (size_t i = 0; i < s_n_made; i++)
        mine |= strcmp(s_made[i], db) == 0;
    if (!mine) {
        tc_store_t *adm = NULL;
        if (tc_store_open(admin, &adm) < 0)
            cr_assert_fail("connecting to the test PostgreSQL: %s", tc_errmsg());
        char drop[256];
        snprintf(drop, sizeof drop, "DROP DATABASE IF EXISTS %s WITH (FORCE)", db);
        if (tc_store_exec(adm, drop, NULL, 0) < 0)
            cr_assert_fail("dropping the old test database %s: %s", db, tc_errmsg());
        tc_store_destroy(&adm);
        if (s_n_made < sizeof s_made / sizeof s_made[0])
            snprintf(s_made[s_n_made++], sizeof s_made[0], "%s", db);
    }
    int rc = tc_store_create_database(admin, db, dsn, size);
    if (rc < 0)
        cr_assert_fail("creating test database %s: %s", db, tc_errmsg());
}

int tc_test_run(const char *cmd, char *out, size_t size)
{
    char full[8192];
    snprintf(full, sizeof full, "%s 2>&1", cmd);
    FILE *p = popen(full, "r");
    if (!p)
        return -1;
    size_t n = 0;
    if (out && size) {
        size_t r;
        while (n + 1 < size && (r = fread(out + n, 1, size - 1 - n, p)) > 0)
            n += r;
        out[n] = '\0';
    }
    char sink[4096];
    while (fread(sink, 1, sizeof sink, p) > 0) {
    }
    int st = pclose(p);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}
