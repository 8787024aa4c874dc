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

void tc_test_temp_file(const char *name, const void *data, size_t len, char *path, size_t size)
{
    int n = snprintf(path, size, "/tmp/tc_%s_XXXXXX", name);
    cr_assert(n > 0 && (size_t)n < size, "temp path for %s does not fit", name);
    int fd = mkstemp(path);
    cr_assert_geq(fd, 0, "cannot make a temp file %s", path);
    if (data) {
        cr_assert_eq(write(fd, data, len), (ssize_t)len, "cannot write %s", path);
        close(fd);
    } else {
        close(fd);
        unlink(path);
    }
}

void tc_test_write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f, "cannot open %s", path);
    cr_assert_geq(fputs(text, f), 0, "cannot write %s", path);
    cr_assert_eq(fclose(f), 0, "cannot write %s", path);
}

bool tc_test_remove_tree(const char *path)
{
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", path);
    return system(cmd) == 0;
}

/* The test cluster's databases this process made. */
static char s_made[64][128];
static size_t s_n_made;
static char s_made_admin[1024];
static pid_t s_made_pid; /* a child forked without exec must not drop them */

static int s_drop_db(const char *admin, const char *db)
{
    tc_store_t *adm = NULL;
    int rc = tc_store_open(admin, &adm);
    if (rc == 0) {
        char drop[256];
        snprintf(drop, sizeof drop, "DROP DATABASE IF EXISTS %s WITH (FORCE)", db);
        rc = tc_store_exec(adm, drop, NULL, 0);
    }
    tc_store_destroy(&adm);
    return rc;
}

/* At the test process's exit its databases go, so that a suite's run does
 * not keep a database (7 MB or more) per test process on disk. Set
 * TC_TEST_KEEP_DB=1 to keep them for a look after a failure. */
static void s_drop_made(void)
{
    if (getpid() != s_made_pid)
        return;
    for (size_t i = 0; i < s_n_made; i++)
        if (s_drop_db(s_made_admin, s_made[i]) < 0)
            fprintf(stderr, "note: test database %s not dropped: %s\n", s_made[i], tc_errmsg());
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
    bool mine = false;
    for (size_t i = 0; i < s_n_made; i++)
        mine |= strcmp(s_made[i], db) == 0;
    if (!mine) {
        if (s_drop_db(admin, db) < 0)
            cr_assert_fail("dropping the old test database %s: %s", db, tc_errmsg());
        if (s_n_made == 0 && !getenv("TC_TEST_KEEP_DB")) {
            s_made_pid = getpid();
            atexit(s_drop_made);
        }
        if (s_n_made < sizeof s_made / sizeof s_made[0])
            snprintf(s_made[s_n_made++], sizeof s_made[0], "%s", db);
        snprintf(s_made_admin, sizeof s_made_admin, "%s", admin);
    }
    int rc = tc_store_create_database(admin, db, dsn, size);
    if (rc < 0)
        cr_assert_fail("creating test database %s: %s", db, tc_errmsg());
}

tc_store_t *tc_test_fresh_store(const char *name, char *dsn, size_t size)
{
    tc_test_fresh_db(name, dsn, size);
    tc_store_t *s = NULL;
    cr_assert_eq(tc_store_open(dsn, &s), 0, "%s", tc_errmsg());
    int applied;
    cr_assert_eq(tc_store_migrate(s, &applied), 0, "%s", tc_errmsg());
    return s;
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
