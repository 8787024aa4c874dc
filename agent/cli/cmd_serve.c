/* agent serve: stay connected to the aggregator, run the jobs it sends and
 * deliver everything waiting in the journal. */
#include "agent_devices.h"
#include "allocator.h"
#include "commands.h"
#include "session.h"

#include "tc_cli.h"
#include "tc_error.h"
#include "tc_log.h"

#include <stdio.h>

static void s_on_job(void *arg, const tc_envelope_t *env)
{
    tc_jobs_t *jobs = arg;
    if (tc_jobs_submit(jobs, env) < 0)
        tc_log_error("cannot take job: %s", tc_errmsg());
}

int tc_cmd_serve(int argc, char **argv)
{
    tc_session_flags_t f = {0};
    tc_job_settings_t js = {0};
    const char *allocator = NULL;
    double quiet_pct = 0;
    const tc_opt_t opts[] = {
        TC_SESSION_OPTS(f),
        TC_JOB_SETTINGS_OPTS(js),
        TC_ALLOCATOR_OPT(allocator),
        TC_QUIET_OPT(&quiet_pct),
        {0},
    };
    const tc_cmd_spec_t spec = {
        .prog = "agent serve",
        .summary = "Stay connected to the aggregator: run the conv benchmark and trace jobs it "
                   "sends,\nreport their progress, and deliver results (and anything left "
                   "waiting earlier).\nResults are kept in the agent's journal (STATE/journal): "
                   "what was measured before\nis not measured again. Stops on SIGINT or "
                   "SIGTERM; what is not yet acknowledged\nwaits in the journal.",
        .max_positional = 0,
        .config_file = true,
        .opts = opts,
    };
    tc_cli_result_t cli;
    tc_session_t s = {0};
    tc_job_handlers_t handlers = {0};
    tc_jobs_t *jobs = NULL;
    int rc = tc_cli_begin(&spec, argc, argv, &cli);
    if (rc < 0 || cli.help_shown)
        return rc;
    if ((rc = tc_agent_prepare(allocator, tc_cli_given(&spec, "quiet-threshold"), quiet_pct)) < 0) {
        tc_cli_result_free(&cli);
        return rc;
    }
    volatile sig_atomic_t *stop = tc_session_stop_flag();
    TC_TRY(tc_session_open(&f, &s));
    js.keep_results = true;
    TC_TRY(tc_job_handlers_builtin(&js, &handlers));
    TC_TRY(tc_jobs_new(&handlers, s.journal, tc_identity_agent_id(s.identity), &jobs));
    TC_TRY(tc_session_connect(&s, &f, &handlers, s_on_job, jobs));
    tc_log_info("agent %s serving; %zu message%s waiting in the journal",
                tc_identity_agent_id(s.identity),
                tc_journal_waiting(s.journal), tc_journal_waiting(s.journal) == 1 ? "" : "s");
    rc = tc_session_serve(&s, jobs, stop);
err:
    tc_jobs_destroy(&jobs);
    tc_session_close(&s);
    tc_job_handlers_release(&handlers);
    tc_cli_result_free(&cli);
    return rc;
}
