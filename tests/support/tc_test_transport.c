#include "tc_test_transport.h"

#include "tc_test.h"

#include "journal.h"
#include "store.h"
#include "tc_error.h"

#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

void tc_bed_init(tc_bed_t *bed, const char *name, const char *admin_dsn)
{
    memset(bed, 0, sizeof *bed);
    snprintf(bed->name, sizeof bed->name, "%s", name);
    tc_test_tmpdir(name, bed->dir, sizeof bed->dir);
    if (admin_dsn) {
        char db[128];
        snprintf(db, sizeof db, "t_%s_%d", name, (int)getpid());
        if (tc_store_create_database(admin_dsn, db, bed->dsn, sizeof bed->dsn) < 0)
            cr_assert_fail("creating database %s: %s", db, tc_errmsg());
    } else {
        tc_test_fresh_db(name, bed->dsn, sizeof bed->dsn);
    }
    tc_store_t *s = NULL;
    int applied = 0;
    int rc = tc_store_open(bed->dsn, &s);
    if (rc == 0)
        rc = tc_store_migrate(s, &applied);
    tc_store_destroy(&s);
    cr_assert_eq(rc, 0, "migrating %s: %s", bed->dsn, tc_errmsg());

    snprintf(bed->keys, sizeof bed->keys, "%s/aggregator", bed->dir);
    char bin[1024], cmd[4096], out[4096];
    tc_test_binary("aggregator", bin, sizeof bin);
    snprintf(cmd, sizeof cmd, "%s keygen --keys %s", bin, bed->keys);
    cr_assert_eq(tc_test_run(cmd, out, sizeof out), 0, "aggregator keygen: %s", out);
    int port = tc_test_free_port();
    cr_assert(port > 0, "no free port");
    snprintf(bed->endpoint, sizeof bed->endpoint, "tcp://127.0.0.1:%d", port);
    snprintf(bed->server_log, sizeof bed->server_log, "%s/aggregator.log", bed->dir);
}

/* Lines of the server log that contain `needle`. */
static int s_log_count(const tc_bed_t *bed, const char *needle)
{
    int n = 0;
    FILE *f = fopen(bed->server_log, "r");
    if (f) {
        char line[4096];
        while (fgets(line, sizeof line, f))
            n += strstr(line, needle) != NULL;
        fclose(f);
    }
    return n;
}

int tc_bed_listening_count(const tc_bed_t *bed)
{
    return s_log_count(bed, "listening on");
}

void tc_bed_allow(tc_bed_t *bed, const char *state, bool allow)
{
    char cmd[4000], out[4096];
    if (allow)
        snprintf(cmd, sizeof cmd, "cat '%s/agent.pub' >> '%s/allowlist'", state, bed->keys);
    else
        snprintf(cmd, sizeof cmd,
                 "grep -v -F -f '%s/agent.pub' '%s/allowlist' > '%s/allowlist.new'; "
                 "mv '%s/allowlist.new' '%s/allowlist'",
                 state, bed->keys, bed->keys, bed->keys, bed->keys);
    cr_assert_eq(tc_test_run(cmd, out, sizeof out), 0, "%s: %s", cmd, out);
    int before = s_log_count(bed, "reloaded");
    kill(bed->server, SIGHUP);
    for (int i = 0; i < 200 && s_log_count(bed, "reloaded") == before; i++)
        tc_test_sleep_ms(50);
    cr_assert_gt(s_log_count(bed, "reloaded"), before, "no reload after SIGHUP (log %s)",
                 bed->server_log);
}

void tc_bed_spawn_server(tc_bed_t *bed, const char *const *extra)
{
    char bin[1024];
    tc_test_binary("aggregator", bin, sizeof bin);
    const char *argv[32] = {bin,           "serve",     "--listen", bed->endpoint, "--db",
                            bed->dsn,      "--keys",    bed->keys,  "--heartbeat", "1"};
    int n = 10;
    for (size_t i = 0; extra && extra[i] && n < 31; i++)
        argv[n++] = extra[i];
    argv[n] = NULL;
    bed->server = tc_test_spawn(argv, bed->server_log, NULL);
}

void tc_bed_start_server(tc_bed_t *bed, const char *const *extra)
{
    /* Count the "listening" lines before, so that a restart waits for its own. */
    int before = tc_bed_listening_count(bed);
    tc_bed_spawn_server(bed, extra);
    tc_bed_wait_listening(bed, before, 20000);
}

void tc_bed_wait_listening(tc_bed_t *bed, int before, int timeout_ms)
{
    for (int waited = 0; waited < timeout_ms; waited += 50) {
        if (tc_bed_listening_count(bed) > before)
            return;
        int st;
        if (waitpid(bed->server, &st, WNOHANG) == bed->server) {
            bed->server = 0;
            cr_assert_fail("aggregator serve exited before listening (log: %s)", bed->server_log);
        }
        tc_test_sleep_ms(50);
    }
    cr_assert_fail("aggregator serve did not start listening in %d s (log: %s)",
                   timeout_ms / 1000, bed->server_log);
}

int tc_bed_stop_server(tc_bed_t *bed, int sig)
{
    int st = tc_test_stop(bed->server, sig);
    bed->server = 0;
    return st;
}

void tc_bed_agent(tc_bed_t *bed, const char *name, bool allow, char *state, size_t size)
{
    snprintf(state, size, "%s/%s", bed->dir, name);
    char bin[1024], cmd[4096], out[4096];
    tc_test_binary("agent", bin, sizeof bin);
    snprintf(cmd, sizeof cmd, "%s keygen --state %s", bin, state);
    cr_assert_eq(tc_test_run(cmd, out, sizeof out), 0, "agent keygen: %s", out);
    snprintf(cmd, sizeof cmd, "cp %s/aggregator.pub %s/aggregator.pub", bed->keys, state);
    cr_assert_eq(tc_test_run(cmd, out, sizeof out), 0, "%s", out);
    if (allow) {
        snprintf(cmd, sizeof cmd, "cat %s/agent.pub >> %s/allowlist", state, bed->keys);
        cr_assert_eq(tc_test_run(cmd, out, sizeof out), 0, "%s", out);
    }
}

pid_t tc_bed_push(tc_bed_t *bed, const char *state, const char *file, const char *log,
                  const char *const *extra)
{
    char bin[1024];
    tc_test_binary("agent", bin, sizeof bin);
    const char *argv[32] = {bin, "push", "--aggregator", bed->endpoint, "--state", state,
                            "--heartbeat", "1", "--ack-timeout", "3", "--timeout", "240"};
    int n = 12;
    for (size_t i = 0; extra && extra[i] && n < 30; i++)
        argv[n++] = extra[i];
    if (file)
        argv[n++] = file;
    argv[n] = NULL;
    return tc_test_spawn(argv, log, NULL);
}

long long tc_bed_count(tc_bed_t *bed, const char *sql)
{
    return tc_test_sql_count(bed->dsn, sql);
}

long long tc_bed_wait_count(tc_bed_t *bed, const char *sql, long long want, int timeout_ms)
{
    long long n = -1;
    for (int waited = 0; waited <= timeout_ms; waited += 200) {
        n = tc_bed_count(bed, sql);
        if (n >= want)
            break;
        tc_test_sleep_ms(200);
    }
    return n;
}

void tc_bed_fini(tc_bed_t *bed)
{
    if (bed->server > 0)
        tc_test_stop(bed->server, SIGKILL);
    bed->server = 0;
}

int tc_cluster(const char *pgdir, const char *verb, char *out, size_t size)
{
    char script[1024], cmd[2600], buf[4096];
    tc_test_source_path("deploy/pg-local.sh", script, sizeof script);
    snprintf(cmd, sizeof cmd, "%s %s '%s'", script, verb, pgdir);
    if (!out) {
        out = buf;
        size = sizeof buf;
    }
    return tc_test_run(cmd, out, size);
}

void tc_cluster_start(const char *name, char *pgdir, size_t pgsize, char *admin, size_t asize)
{
    char tmp[1024], out[8192];
    tc_test_tmpdir(name, tmp, sizeof tmp);
    snprintf(pgdir, pgsize, "%s/pg", tmp);
    cr_assert_eq(tc_cluster(pgdir, "start", out, sizeof out), 0, "pg-local.sh start: %s", out);
    /* The connection string is the last line printed. */
    char *end = out + strlen(out);
    while (end > out && (end[-1] == '\n' || end[-1] == ' '))
        *--end = '\0';
    char *last = strrchr(out, '\n');
    snprintf(admin, asize, "%s", last ? last + 1 : out);
    cr_assert(strncmp(admin, "postgresql://", 13) == 0, "unexpected pg-local output: %s", out);
}

typedef struct {
    const char *id;
    char *out;
    size_t size;
} s_reason_t;

static int s_on_refused(void *arg, const char *id, const char *reason, const uint8_t *data,
                        size_t len)
{
    (void)data;
    (void)len;
    s_reason_t *r = arg;
    if (r->id && !strcmp(r->id, id))
        snprintf(r->out, r->size, "%s", reason);
    return 0;
}

static void s_summary(const char *state, tc_journal_summary_t *sum, s_reason_t *r)
{
    char dir[1200];
    snprintf(dir, sizeof dir, "%s/journal", state);
    cr_assert_eq(tc_journal_summary(dir, sum, s_on_refused, r), 0, "%s", tc_errmsg());
}

tc_envelope_t *tc_test_journal_envelope(tc_journal_t *j, const char *id)
{
    uint8_t *data = NULL;
    size_t len = 0;
    tc_envelope_t *env = NULL;
    cr_assert_eq(tc_journal_read(j, id, &data, &len), 0, "reading %s: %s", id, tc_errmsg());
    cr_assert_eq(tc_envelope_unpack(data, len, 0, &env), 0, "unpacking %s: %s", id, tc_errmsg());
    free(data);
    return env;
}

size_t tc_bed_waiting(const char *state)
{
    tc_journal_summary_t sum;
    s_reason_t r = {0};
    s_summary(state, &sum, &r);
    return sum.waiting;
}

size_t tc_bed_refused(const char *state)
{
    tc_journal_summary_t sum;
    s_reason_t r = {0};
    s_summary(state, &sum, &r);
    return sum.rejected;
}

void tc_bed_refused_reason(const char *state, const char *id, char *out, size_t size)
{
    tc_journal_summary_t sum;
    s_reason_t r = {.id = id, .out = out, .size = size};
    out[0] = '\0';
    s_summary(state, &sum, &r);
}
