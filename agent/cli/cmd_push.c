/* agent push: send result files (agent bench / agent trace --out) to the
 * aggregator through the journal, keeping their message ids. */
#include "commands.h"
#include "session.h"

#include "tc_cli.h"
#include "tc_error.h"
#include "tc_log.h"
#include "tc_resultfile.h"
#include "tc_validate.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    const char *path;
    const char *agent_id;
    size_t records;
} s_push_t;

static int s_check(const tc_envelope_t *env, void *arg)
{
    s_push_t *p = arg;
    p->records++;
    switch (env->body_case) {
    case TRAINCAST__V1__ENVELOPE__BODY_CONV_RESULTS:
    case TRAINCAST__V1__ENVELOPE__BODY_TRAIN_TRACE:
    case TRAINCAST__V1__ENVELOPE__BODY_MODEL_GRAPH:
    case TRAINCAST__V1__ENVELOPE__BODY_HELLO:
        break;
    default:
        return tc_fail(TC_EINVAL, "%s: record %zu is a %s message, not a result", p->path,
                       p->records, tc_body_name(env));
    }
    /* The id is the file's; only a missing agent id is filled in. */
    tc_envelope_t copy = *env;
    if (!copy.agent_id || !*copy.agent_id)
        copy.agent_id = (char *)p->agent_id;
    int rc = tc_validate_envelope(&copy);
    if (rc < 0)
        return tc_err_context(rc, "%s: record %zu (message %.26s)", p->path, p->records,
                              env->message_id ? env->message_id : "?");
    return 0;
}

/* The files named on the command line are result files, whole: a path of
 * the wrong kind, or a file cut short (copied or written incompletely: its
 * last record is lost), is refused before anything else happens, unless
 * asked to take what is whole. */
static int s_check_files(const tc_cli_result_t *cli, bool accept_truncated)
{
    int rc = 0;
    for (int i = 0; i < cli->n_positional; i++) {
        long long whole = 0, size = 0;
        TC_TRY(tc_resultfile_whole(cli->positional[i], &whole, &size));
        if (whole < size && !accept_truncated)
            TC_FAIL_GOTO(TC_EINVAL,
                         "%s: the last record is cut short after byte %lld of %lld (the file "
                         "was copied or written incompletely); nothing was pushed: copy it "
                         "again, or pass --accept-truncated to push its whole records",
                         cli->positional[i], whole, size);
    }
err:
    return rc;
}

/* Check each result file named on the command line completely, then put
 * its records in the journal (keeping their message ids); *total_added
 * counts those that wait to be sent now and did not before. */
static int s_import_files(const tc_session_t *s, const tc_cli_result_t *cli,
                          size_t *total_added)
{
    int rc = 0;
    for (int i = 0; i < cli->n_positional; i++) {
        s_push_t p = {.path = cli->positional[i], .agent_id = tc_identity_agent_id(s->identity)};
        bool truncated = false;
        TC_TRY(tc_resultfile_read(p.path, false, s_check, &p, &truncated));
        size_t added = 0;
        TC_TRY(tc_journal_import(s->journal, p.path, p.agent_id, NULL, &added));
        tc_log_info("%s: %zu record%s, %zu new to send%s", p.path, p.records,
                    p.records == 1 ? "" : "s", added,
                    truncated ? " (an incomplete last record was skipped)" : "");
        *total_added += added;
    }
err:
    return rc;
}

/* What the journal held before sending. */
typedef struct {
    size_t pending;         /* messages waiting */
    size_t added;           /* of them, new from the files */
    size_t rejected_before; /* messages refused before */
} s_counts_t;

/* Connect, send what waits in the journal and wait at most timeout_s (0: forever)
 * for the acknowledgements, then print what became of it. TC_EINVAL when
 * the aggregator rejected some of it. */
static int s_send(tc_session_t *s, const tc_session_flags_t *f, double timeout_s,
                  volatile sig_atomic_t *stop, const s_counts_t *n)
{
    int rc;
    TC_TRY(tc_session_connect(s, f, NULL, NULL, NULL));
    rc = tc_link_drain(s->link, (int64_t)(timeout_s * 1000.0), stop, true);
    tc_link_stats_t st;
    tc_link_stats(s->link, &st);
    printf("sent %zu waiting message%s (%zu new): %llu stored, %llu already stored, %llu "
           "rejected, %zu still waiting\n",
           n->pending, n->pending == 1 ? "" : "s", n->added,
           (unsigned long long)(st.acked - st.duplicates), (unsigned long long)st.duplicates,
           (unsigned long long)st.rejected, st.waiting);
    if (rc < 0)
        goto err;
    if (tc_journal_rejected_count(s->journal) > n->rejected_before)
        TC_FAIL_GOTO(TC_EINVAL,
                     "%zu message%s rejected by the aggregator; %s keeps them with the reason "
                     "('agent status' lists them)",
                     tc_journal_rejected_count(s->journal) - n->rejected_before,
                     tc_journal_rejected_count(s->journal) - n->rejected_before == 1 ? " was"
                                                                                 : "s were",
                     tc_journal_path(s->journal));
err:
    return rc;
}

int tc_cmd_push(int argc, char **argv)
{
    tc_session_flags_t f = {0};
    double timeout_s = 300;
    bool requeue = false, accept_truncated = false;
    const tc_opt_t opts[] = {
        TC_SESSION_OPTS(f),
        {"accept-truncated", TC_OPT_FLAG, &accept_truncated, NULL,
         "push the whole records of a file whose last record is cut short (refused by "
         "default: the file was copied or written incompletely)"},
        {"requeue-rejected", TC_OPT_FLAG, &requeue, NULL,
         "send again the messages the aggregator refused (see 'agent status'), once what "
         "made it refuse them is fixed"},
        {"timeout", TC_OPT_DOUBLE, &timeout_s, "SECONDS",
         "give up waiting for acknowledgements after this (default 300; 0: wait forever); "
         "what is unsent stays in the journal"},
        {0},
    };
    const tc_cmd_spec_t spec = {
        .prog = "agent push",
        .summary = "Send result files written by 'agent bench --out' or 'agent trace --out' to "
                   "the aggregator.\nEvery record goes into the agent's journal first (keeping its "
                   "message id, so pushing\na file twice stores it once), then is sent; the "
                   "command ends when nothing waits.\nWithout FILE it sends what an earlier run "
                   "left waiting.",
        .positional = "[FILE...]",
        .max_positional = -1,
        .config_file = true,
        .opts = opts,
    };
    tc_cli_result_t cli;
    tc_session_t s = {0};
    int rc = tc_cli_begin(&spec, argc, argv, &cli);
    if (rc < 0 || cli.help_shown)
        return rc;
    if (timeout_s < 0)
        TC_FAIL_GOTO(TC_EUSAGE, "--timeout must be >= 0 (got %g)", timeout_s);
    volatile sig_atomic_t *stop = tc_session_stop_flag();
    TC_TRY(s_check_files(&cli, accept_truncated));
    TC_TRY(tc_session_open(&f, &s));

    size_t total_added = 0;
    TC_TRY(s_import_files(&s, &cli, &total_added));
    if (requeue) {
        size_t moved = 0;
        TC_TRY(tc_journal_requeue_rejected(s.journal, &moved));
        tc_log_info("%zu refused message%s waiting to be sent again", moved, moved == 1 ? "" : "s");
    }
    size_t rejected_before = tc_journal_rejected_count(s.journal);
    size_t pending = tc_journal_waiting(s.journal);
    if (pending == 0) {
        printf("nothing to send: nothing waits in %s\n", tc_journal_path(s.journal));
        goto done;
    }
    s_counts_t n = {.pending = pending, .added = total_added, .rejected_before = rejected_before};
    TC_TRY(s_send(&s, &f, timeout_s, stop, &n));
done:
    rc = 0;
err:
    tc_session_close(&s);
    tc_cli_result_free(&cli);
    return rc;
}
