/* agent status: what this agent holds, read without disturbing a running
 * agent: its id and key, the messages waiting in its journal, and those the
 * aggregator refused for good, with the reason it gave. */
#include "commands.h"
#include "identity.h"
#include "journal.h"

#include "tc_buf.h"
#include "tc_cli.h"
#include "tc_error.h"
#include "tc_table.h"
#include "tc_zmq.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#define S_SHOW_REFUSED 20 /* refused messages listed in the table */

/* The unix time (ms) a ULID message id was made at. */
static int64_t s_msgid_ms(const char *id)
{
    static const char alphabet[] = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";
    int64_t ms = 0;
    for (int i = 0; i < 10; i++) {
        const char *p = strchr(alphabet, id[i]);
        if (!p || !id[i])
            return 0;
        ms = ms * 32 + (p - alphabet);
    }
    return ms;
}

static void s_time_text(int64_t ms, char *out, size_t size)
{
    time_t t = (time_t)(ms / 1000);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(out, size, "%Y-%m-%dT%H:%M:%SZ", &tm); /* ISO 8601, as the aggregator */
}

typedef struct {
    size_t n;
    tc_buf_t table;
    tc_table_t *rows; /* every refused message, for csv and json */
    int rc;
} s_refused_t;

static const tc_col_t s_agent_cols[] = {
    {"agent_id", TC_COL_TEXT},       {"state", TC_COL_TEXT},   {"public_key", TC_COL_TEXT},
    {"aggregator_key", TC_COL_BOOL}, {"waiting", TC_COL_INT},  {"oldest_waiting", TC_COL_TEXT},
};
static const tc_col_t s_refused_cols[] = {
    {"message_id", TC_COL_TEXT}, {"kind", TC_COL_TEXT}, {"created", TC_COL_TEXT},
    {"reason", TC_COL_TEXT}};

static int s_on_refused(void *arg, const char *id, const char *reason, const uint8_t *data,
                        size_t len)
{
    s_refused_t *r = arg;
    tc_envelope_t *env = NULL;
    const char *kind = "unreadable";
    if (data && tc_envelope_unpack(data, len, 0, &env) == 0)
        kind = tc_body_name(env);
    char when[40];
    s_time_text(s_msgid_ms(id), when, sizeof when);
    if (r->n < S_SHOW_REFUSED)
        tc_buf_printf(&r->table, "  %s  %-12s %s\n      %s\n", id, kind, when,
                      *reason ? reason : "(no reason recorded)");
    const char *row[] = {id, kind, when, reason};
    if (r->rc == 0)
        r->rc = tc_table_add_row(r->rows, row);
    r->n++;
    tc_envelope_free(&env);
    return 0;
}

/* What this agent holds, as read from its state directory. */
typedef struct {
    char dir[2048], journal[2200], id[TC_AGENT_ID_MAX + 1];
    char key[TC_KEY_Z85_LEN + 1], server_key[TC_KEY_Z85_LEN + 1];
    tc_journal_summary_t sum;
    char when[40];  /* of the oldest waiting message */
    bool old_layout; /* an older agent's results/ and spool/, not yet moved */
} s_agent_t;

/* Read the agent's id, its keys and its journal (the refused messages go
 * to `refused`) from the state directory (--state, or the default). */
static int s_read_agent(const char *state, s_agent_t *a, s_refused_t *refused)
{
    int rc;
    char path[2300];
    tc_identity_default_dir(state, a->dir, sizeof a->dir);
    struct stat st;
    if (stat(a->dir, &st) != 0 || !S_ISDIR(st.st_mode))
        TC_FAIL_GOTO(TC_ENOTFOUND,
                     "%s is not an agent state directory (pass --state DIR, or run 'agent "
                     "keygen' to make one)",
                     a->dir);
    TC_TRY(tc_identity_read_agent_id(a->dir, a->id, sizeof a->id));
    snprintf(path, sizeof path, "%s/agent.pub", a->dir);
    if (tc_pubkey_read(path, a->key) < 0)
        a->key[0] = '\0';
    snprintf(path, sizeof path, "%s/aggregator.pub", a->dir);
    if (tc_pubkey_read(path, a->server_key) < 0)
        a->server_key[0] = '\0';
    snprintf(a->journal, sizeof a->journal, "%s/journal", a->dir);
    TC_TRY(tc_journal_migrate(a->dir, a->id, true, &a->old_layout));
    TC_TRY(tc_journal_summary(a->journal, &a->sum, s_on_refused, refused));
    if (a->sum.waiting)
        s_time_text(s_msgid_ms(a->sum.oldest), a->when, sizeof a->when);
err:
    return rc;
}

/* Print the tables agent and refused (--format csv or json). */
static int s_print_tables(const s_agent_t *a, tc_format_t fmt, tc_table_t *agent_t,
                          tc_table_t *refused_t)
{
    char n_waiting[32];
    snprintf(n_waiting, sizeof n_waiting, "%zu", a->sum.waiting);
    const char *row[] = {a->id, a->dir, *a->key ? a->key : NULL,
                         *a->server_key ? "true" : "false", n_waiting, a->sum.waiting ? a->when : NULL};
    int rc = tc_table_add_row(agent_t, row);
    if (rc < 0)
        return rc;
    tc_table_t *tables[] = {agent_t, refused_t};
    return tc_table_print(stdout, fmt, tables, 2);
}

/* Print the agent, its journal and its refused messages as text. */
static void s_print_text(const s_agent_t *a, const s_refused_t *refused)
{
    printf("agent     %s (state %s)\n", a->id, a->dir);
    printf("key       %s\n", *a->key ? a->key : "none: run 'agent keygen'");
    printf("          aggregator.pub %s\n",
           *a->server_key ? "present" : "missing: copy the aggregator's public key there");
    if (a->old_layout)
        printf("note      results/ and spool/ of an older agent are here: the next 'agent "
               "push', 'run' or 'serve'\n          moves them into the journal (below: the "
               "journal only)\n");
    if (a->sum.waiting)
        printf("journal   %zu message%s waiting, the oldest from %s (%zu kept in all)\n",
               a->sum.waiting, a->sum.waiting == 1 ? "" : "s", a->when, a->sum.records);
    else
        printf("journal   nothing waiting: everything was acknowledged (%zu message%s kept)\n",
               a->sum.records, a->sum.records == 1 ? "" : "s");
    if (refused->n) {
        printf("refused   %zu message%s, kept in %s; fix the cause, then 'agent push "
               "--requeue-rejected' sends them again\n",
               refused->n, refused->n == 1 ? "" : "s", a->journal);
        fputs(tc_buf_str(&refused->table), stdout);
        if (refused->n > S_SHOW_REFUSED)
            printf("  ... and %zu more (--format csv or json lists them all)\n",
                   refused->n - S_SHOW_REFUSED);
    } else {
        printf("refused   none\n");
    }
}

int tc_cmd_status(int argc, char **argv)
{
    const char *state = NULL, *format = "table";
    const tc_opt_t opts[] = {
        {"state", TC_OPT_STR, &state, "DIR",
         "the agent state directory (default $TRAINCAST_AGENT_DIR or ~/.traincast/agent)"},
        {"format", TC_OPT_STR, &format, "table|csv|json",
         "output format (default: table, as text; csv and json: the tables agent and refused)"},
        {0},
    };
    const tc_cmd_spec_t spec = {
        .prog = "agent status",
        .summary = "Show this agent's id and key, the messages waiting in its journal, and "
                   "those the\naggregator refused for good with the reason it gave (after "
                   "fixing the cause, 'agent\npush --requeue-rejected' sends them again). "
                   "Reads the state directory without\nlocking it, so it works next to a "
                   "running agent.",
        .max_positional = 0,
        .opts = opts,
    };
    tc_cli_result_t cli;
    int rc = tc_cli_begin(&spec, argc, argv, &cli);
    if (rc < 0 || cli.help_shown)
        return rc;
    s_refused_t refused = {0};
    tc_table_t *agent_t = NULL;
    s_agent_t a = {0};
    tc_format_t fmt;
    TC_TRY(tc_format_parse(format, &fmt));
    agent_t = tc_table_new("agent", s_agent_cols, 6);
    refused.rows = tc_table_new("refused", s_refused_cols, 4);
    if (!agent_t || !refused.rows)
        TC_FAIL_GOTO(TC_ENOMEM, "out of memory");
    TC_TRY(s_read_agent(state, &a, &refused));
    TC_TRY(refused.rc);
    if (refused.table.failed)
        TC_FAIL_GOTO(TC_ENOMEM, "out of memory");
    if (fmt != TC_FMT_TABLE)
        TC_TRY(s_print_tables(&a, fmt, agent_t, refused.rows));
    else
        s_print_text(&a, &refused);
err:
    tc_buf_free(&refused.table);
    tc_table_destroy(&refused.rows);
    tc_table_destroy(&agent_t);
    tc_cli_result_free(&cli);
    return rc;
}
