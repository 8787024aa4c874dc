/* The command line against a real database: connection settings the libpq
 * way (--db, then TRAINCAST_DB, then libpq's environment and service
 * file), and --format table|csv|json with the same column names in each. */
#include "store.h"
#include "tc_error.h"
#include "tc_test.h"
#include "tc_test_law.h"
#include "tc_test_proc.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char s_dsn[1024];

/* One keyword's value in a key='value' connection string. */
static void s_dsn_value(const char *dsn, const char *key, char *out, size_t size)
{
    char pat[64];
    snprintf(pat, sizeof pat, "%s='", key);
    const char *p = strstr(dsn, pat);
    cr_assert_not_null(p, "no %s in %s", key, dsn);
    p += strlen(pat);
    size_t n = 0;
    while (*p && *p != '\'' && n + 1 < size)
        out[n++] = *p++;
    out[n] = '\0';
}

static int s_run(const char *env, const char *args, char *out, size_t size)
{
    char cmd[4096];
    snprintf(cmd, sizeof cmd,
             "cd %s && env -u TRAINCAST_DB -u PGHOST -u PGPORT -u PGUSER -u PGDATABASE -u "
             "PGSERVICE -u PGSERVICEFILE TRAINCAST_LOG=warn %s %s/aggregator/aggregator %s",
             TC_SOURCE_DIR, env, TC_BINARY_DIR, args);
    return tc_test_run(cmd, out, size);
}

Test(cli, connection_settings_follow_libpq, .timeout = 300)
{
    tc_store_t *s = tc_test_fresh_store("cli_libpq", s_dsn, sizeof s_dsn);
    tc_store_destroy(&s);
    char host[256], port[32], user[128], db[128], env[1024], args[2048];
    s_dsn_value(s_dsn, "host", host, sizeof host);
    s_dsn_value(s_dsn, "port", port, sizeof port);
    s_dsn_value(s_dsn, "user", user, sizeof user);
    s_dsn_value(s_dsn, "dbname", db, sizeof db);
    static char out[1 << 16];

    /* No --db, no TRAINCAST_DB: libpq's PG* environment. */
    snprintf(env, sizeof env, "PGHOST=%s PGPORT=%s PGUSER=%s PGDATABASE=%s", host, port, user, db);
    int st = s_run(env, "status --section stored --format csv", out, sizeof out);
    cr_assert_eq(st, 0, "%s", out);
    cr_assert(strstr(out, "what,count\nmessages received,0\n"), "%s", out);

    /* A service file (PGSERVICEFILE, PGSERVICE). */
    char dir[1024], path[1200];
    tc_test_tmpdir("cli_service", dir, sizeof dir);
    snprintf(path, sizeof path, "%s/pg_service.conf", dir);
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f);
    fprintf(f, "[traincast_test]\nhost=%s\nport=%s\nuser=%s\ndbname=%s\n", host, port, user, db);
    fclose(f);
    snprintf(env, sizeof env, "PGSERVICEFILE=%s PGSERVICE=traincast_test", path);
    st = s_run(env, "status --section stored", out, sizeof out);
    cr_assert_eq(st, 0, "%s", out);
    cr_assert(strstr(out, "stored (13)"), "%s", out);

    /* TRAINCAST_DB wins over the PG* environment, and --db over both. */
    snprintf(env, sizeof env, "PGHOST=%s PGPORT=%s PGUSER=%s PGDATABASE=no_such_db "
                              "TRAINCAST_DB=\"%s\"",
             host, port, user, s_dsn);
    st = s_run(env, "status --section stored", out, sizeof out);
    cr_assert_eq(st, 0, "%s", out);
    snprintf(env, sizeof env, "TRAINCAST_DB='host=%s port=%s user=%s dbname=no_such_db'", host,
             port, user);
    snprintf(args, sizeof args, "status --section stored --db \"%s\"", s_dsn);
    st = s_run(env, args, out, sizeof out);
    cr_assert_eq(st, 0, "%s", out);
    st = s_run(env, "status --section stored", out, sizeof out);
    cr_assert_eq(st, 1, "%s", out);
    cr_assert(strstr(out, "no_such_db") && strstr(out, "check --db or TRAINCAST_DB"), "%s", out);

    /* Nothing reachable: the error says which settings were used. */
    snprintf(env, sizeof env, "PGHOST=127.0.0.1 PGPORT=1 PGCONNECT_TIMEOUT=2");
    st = s_run(env, "status", out, sizeof out);
    cr_assert_eq(st, 1, "%s", out);
    cr_assert(strstr(out, "no --db or TRAINCAST_DB given") && strstr(out, "PGHOST"), "%s", out);
}

/* The CSV header line of `out` that starts with `first` (a column name). */
static const char *s_line(const char *out, const char *start)
{
    const char *p = out;
    size_t n = strlen(start);
    while (p && *p) {
        if (!strncmp(p, start, n))
            return p;
        p = strchr(p, '\n');
        p = p ? p + 1 : NULL;
    }
    return NULL;
}

/* Every column of a CSV header appears as a JSON key and in the table's
 * header line. */
static void s_same_columns(const char *csv_header, const char *json, const char *table)
{
    char cols[2048];
    size_t n = strcspn(csv_header, "\n");
    cr_assert_lt(n, sizeof cols);
    memcpy(cols, csv_header, n);
    cols[n] = '\0';
    for (char *save = NULL, *c = strtok_r(cols, ",", &save); c; c = strtok_r(NULL, ",", &save)) {
        char key[300];
        snprintf(key, sizeof key, "\"%s\": ", c);
        cr_expect(strstr(json, key), "json lacks %s:\n%s", key, json);
        if (table) {
            snprintf(key, sizeof key, " %s ", c);
            char *line = strstr(table, key);
            cr_expect(line || strstr(table, c), "table lacks column %s:\n%s", c, table);
        }
    }
}

Test(cli, formats_share_their_column_names, .timeout = 600)
{
    tc_law_build("cli_formats", s_dsn, sizeof s_dsn);
    static char csv[1 << 16], json[1 << 16], table[1 << 16];
    char env[1200];
    snprintf(env, sizeof env, "TRAINCAST_DB=\"%s\"", s_dsn);
    cr_assert_eq(s_run(env, "fit --format json", json, sizeof json), 0, "%s", json);
    cr_assert(strstr(json, "\"fits\": [") && strstr(json, "\"coefficients\": ["), "%s", json);
    cr_assert(strstr(json, "\"device\": \"Fast Device\"") &&
                  strstr(json, "\"device\": \"Slow Device\""),
              "%s", json);
    cr_assert_eq(s_run(env, "fit --format csv --no-validate", csv, sizeof csv), 0, "%s", csv);
    const char *fits = s_line(csv, "fit_id,device,");
    cr_assert_not_null(fits, "%s", csv);
    s_same_columns(fits, json, NULL);
    const char *coefs = s_line(csv, "fit_id,device,feature,coefficient,se");
    cr_assert_not_null(coefs, "%s", csv);
    /* predict with the fits just stored without the nested run says so. */
    cr_assert_eq(s_run(env, "predict --gpu all --model tests/data/resnet18.onnx --batch 8 "
                            "--no-store",
                       table, sizeof table),
                 0, "%s", table);
    cr_assert(strstr(table, "Fast Device: fit: ") && strstr(table, "not validated") &&
                  !strstr(table, "nan"),
              "%s", table);
    cr_assert_eq(s_run(env, "fit --format xml", csv, sizeof csv), 2, "%s", csv);
    cr_assert(strstr(csv, "--format must be table, csv or json (got 'xml')"), "%s", csv);

    cr_assert_eq(s_run(env, "status --format csv", csv, sizeof csv), 0, "%s", csv);
    cr_assert_eq(s_run(env, "status --format json", json, sizeof json), 0, "%s", json);
    cr_assert_eq(s_run(env, "status", table, sizeof table), 0, "%s", table);
    const char *heads[] = {"agent_id,host,", "agent_id,device,", "what,count", "state,jobs"};
    for (size_t i = 0; i < sizeof heads / sizeof heads[0]; i++) {
        const char *h = s_line(csv, heads[i]);
        cr_assert_not_null(h, "no %s in\n%s", heads[i], csv);
        if (i != 3) /* no jobs: an empty array has no keys */
            s_same_columns(h, json, table);
    }
    cr_assert(strstr(table, "devices (2)") && strstr(json, "\"origin\": \"local\""), "%s%s",
              table, json);
    cr_assert_eq(s_run(env, "status --format csv --section nope", csv, sizeof csv), 2, "%s",
                 csv);

    /* agent info and agent status, which need no database. */
    char cmd[2048], dir[1024];
    snprintf(cmd, sizeof cmd, "%s/agent/agent info --format csv", TC_BINARY_DIR);
    int st = tc_test_run(cmd, csv, sizeof csv);
    cr_assert(st == 0 || st == 1, "%s", csv);
    snprintf(cmd, sizeof cmd, "%s/agent/agent info --format json 2>/dev/null", TC_BINARY_DIR);
    st = tc_test_run(cmd, json, sizeof json);
    cr_assert(st == 0 || st == 1, "%s", json);
    const char *dev = s_line(csv, "device,kind,name,uuid,");
    cr_assert_not_null(dev, "%s", csv);
    s_same_columns(dev, json, NULL);
    cr_assert(strstr(json, "\"device\": \"cpu\", \"kind\": \"cpu\""), "%s", json);

    tc_test_tmpdir("cli_agent", dir, sizeof dir);
    snprintf(cmd, sizeof cmd, "%s/agent/agent keygen --state %s >/dev/null && %s/agent/agent status --state %s --format csv",
             TC_BINARY_DIR, dir, TC_BINARY_DIR, dir);
    cr_assert_eq(tc_test_run(cmd, csv, sizeof csv), 0, "%s", csv);
    const char *ag = s_line(csv, "agent_id,state,public_key,aggregator_key,waiting,oldest_waiting");
    cr_assert_not_null(ag, "%s", csv);
    cr_assert(s_line(csv, "message_id,kind,created,reason"), "%s", csv);
}

/* Agent and aggregator take the same batch sizes: 1 to TC_MAX_BATCH
 * (65536), and say so in the same words. -V prints the version. */
Test(cli, one_batch_limit_and_the_version, .timeout = 120)
{
    static char out[1 << 14];
    char cmd[2048];
    const char *refused[] = {
        "agent/agent trace --models resnet18 --batches 65537 --out /dev/null",
        "agent/agent bench --models tests/data/alexnet.onnx --batches 8,65537 --out /dev/null",
        "agent/agent run --models resnet18 --batches 65537 --aggregator tcp://127.0.0.1:1",
        "aggregator/aggregator predict --gpu all --model tests/data/alexnet.onnx --batch 65537",
        NULL};
    for (int i = 0; refused[i]; i++) {
        snprintf(cmd, sizeof cmd, "cd %s && %s/%s", TC_SOURCE_DIR, TC_BINARY_DIR, refused[i]);
        cr_assert_eq(tc_test_run(cmd, out, sizeof out), 2, "%s:\n%s", refused[i], out);
        cr_expect(strstr(out, "65537 is outside 1..65536"), "%s:\n%s", refused[i], out);
        /* One prefix: "agent trace: error: --batches: ...", never doubled. */
        cr_expect(!strstr(out, "error: agent") && !strstr(out, "error: aggregator"), "%s", out);
    }
    for (int b = 0; b < 2; b++) {
        snprintf(cmd, sizeof cmd, "%s/%s -V", TC_BINARY_DIR,
                 b ? "aggregator/aggregator" : "agent/agent");
        cr_assert_eq(tc_test_run(cmd, out, sizeof out), 0, "%s", out);
        cr_expect(strstr(out, "(traincast) " TRAINCAST_VERSION), "%s", out);
    }
    /* A typo of a flag or a command names the closest one, in both binaries. */
    const struct {
        const char *args, *says;
    } typos[] = {
        {"agent/agent bench --models tests/data/alexnet.onnx --bacthes 8 --out /dev/null",
         "unknown option '--bacthes' (did you mean --batches? see agent bench --help)"},
        {"aggregator/aggregator predict --gpu all --model x.onnx --bacth 8",
         "unknown option '--bacth' (did you mean --batch? see aggregator predict --help)"},
        {"agent/agent tarce", "unknown command 'tarce': did you mean 'trace'?"},
        {NULL, NULL},
    };
    for (int i = 0; typos[i].args; i++) {
        snprintf(cmd, sizeof cmd, "cd %s && %s/%s", TC_SOURCE_DIR, TC_BINARY_DIR, typos[i].args);
        cr_assert_eq(tc_test_run(cmd, out, sizeof out), 2, "%s:\n%s", typos[i].args, out);
        cr_expect(strstr(out, typos[i].says), "%s:\n%s", typos[i].args, out);
    }
    snprintf(cmd, sizeof cmd, "%s/agent/agent status --state /nonexistent extra", TC_BINARY_DIR);
    cr_assert_eq(tc_test_run(cmd, out, sizeof out), 2, "%s", out);
    cr_expect(strstr(out, "agent status: error: unexpected argument 'extra'"), "%s", out);
}

/* The line of `out` that starts with `prefix`, copied (empty when none). */
static void s_line_copy(const char *out, const char *prefix, char *line, size_t size)
{
    const char *p = s_line(out, prefix);
    snprintf(line, size, "%.*s", p ? (int)strcspn(p, "\n") : 0, p ? p : "");
}

/* `agent model describe --format list` writes a list that `agent bench
 * --convs` plans as `--models` plans the model: the same conv and matmul
 * items (convnext_tiny: channels-last convs with a bias, Linear layers). */
Test(cli, a_models_list_plans_as_the_model, .timeout = 120)
{
    static char out[1 << 16];
    char cmd[4096], list[64], a[2][512], b[2][512];
    tc_test_temp_file("cli_list", "", 0, list, sizeof list);
    snprintf(cmd, sizeof cmd,
             "cd %s && %s/agent/agent model describe tests/data/convnext_tiny.onnx --format list "
             "> %s",
             TC_SOURCE_DIR, TC_BINARY_DIR, list);
    cr_assert_eq(tc_test_run(cmd, out, sizeof out), 0, "%s", out);
    for (int k = 0; k < 2; k++) { /* the model, then its list */
        snprintf(cmd, sizeof cmd, "cd %s && %s/agent/agent bench %s %s --batches 8 --dry-run",
                 TC_SOURCE_DIR, TC_BINARY_DIR, k ? "--convs" : "--models",
                 k ? list : "tests/data/convnext_tiny.onnx");
        cr_assert_eq(tc_test_run(cmd, out, sizeof out), 0, "%s", out);
        s_line_copy(out, "plan:", k ? b[0] : a[0], sizeof a[0]);
        s_line_copy(out, "matmuls:", k ? b[1] : a[1], sizeof a[1]);
    }
    cr_expect(a[0][0] && a[1][0], "the model's plan has convs and matmuls: '%s' '%s'", a[0], a[1]);
    cr_expect_str_eq(b[0], a[0]);
    cr_expect_str_eq(b[1], a[1]);
    snprintf(cmd, sizeof cmd, "%s/agent/agent model describe x.onnx --format xml", TC_BINARY_DIR);
    cr_assert_eq(tc_test_run(cmd, out, sizeof out), 2, "%s", out);
    cr_expect(strstr(out, "table, csv, json or list"), "%s", out);
    unlink(list);
}

/* A command that needs keys says which to make before anything else and
 * creates nothing: aggregator serve without a key pair names keygen (not
 * the allowlist keygen would have made with it); agent push without one
 * leaves no state directory behind. */
Test(cli, missing_keys_name_keygen_and_create_nothing, .timeout = 120)
{
    static char out[1 << 14];
    char dir[1024], cmd[4096], keys[1200], state[1200];
    tc_test_tmpdir("cli_keys", dir, sizeof dir);
    snprintf(keys, sizeof keys, "%s/no-such-keys", dir);
    snprintf(cmd, sizeof cmd,
             "TRAINCAST_LOG=warn %s/aggregator/aggregator serve --keys %s --listen "
             "tcp://127.0.0.1:1 --db 'host=127.0.0.1 port=1 dbname=x connect_timeout=1'",
             TC_BINARY_DIR, keys);
    int st = tc_test_run(cmd, out, sizeof out);
    cr_assert_neq(st, 0, "%s", out);
    char want[2600];
    snprintf(want, sizeof want, "no aggregator key in %s: run 'aggregator keygen --keys %s' first",
             keys, keys);
    cr_assert(strstr(out, want), "%s", out);
    cr_assert(!strstr(out, "allowlist"), "the key comes first:\n%s", out);
    cr_assert_neq(access(keys, F_OK), 0, "serve created %s", keys);

    snprintf(state, sizeof state, "%s/agent-state", dir);
    snprintf(cmd, sizeof cmd,
             "TRAINCAST_LOG=warn %s/agent/agent push --state %s --aggregator tcp://127.0.0.1:1 "
             "--timeout 1",
             TC_BINARY_DIR, state);
    st = tc_test_run(cmd, out, sizeof out);
    cr_assert_neq(st, 0, "%s", out);
    snprintf(want, sizeof want, "this agent has no key pair in %s; run 'agent keygen --state %s'",
             state, state);
    cr_assert(strstr(out, want), "%s", out);
    cr_assert_neq(access(state, F_OK), 0, "agent push created %s", state);
}
