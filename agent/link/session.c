#include "session.h"

#include "hostinfo.h"
#include "tc_error.h"
#include "tc_log.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static volatile sig_atomic_t s_stop;

static void s_on_signal(int sig)
{
    (void)sig;
    s_stop = 1;
}

volatile sig_atomic_t *tc_session_stop_flag(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = s_on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    return &s_stop;
}

static unsigned s_ms(double seconds, const char *flag, int *rc)
{
    if (seconds == 0)
        return 0;
    if (!(seconds >= 0.01 && seconds <= 86400)) {
        *rc = tc_fail(TC_EUSAGE, "--%s must be between 0.01 and 86400 seconds (got %g)", flag,
                      seconds);
        return 0;
    }
    return (unsigned)lround(seconds * 1000.0);
}

int tc_session_open(const tc_session_flags_t *flags, tc_session_t *out)
{
    memset(out, 0, sizeof *out);
    char dir[2048], journal_dir[2200];
    tc_identity_default_dir(flags->state, dir, sizeof dir);
    int rc = tc_identity_open(dir, !flags->insecure, &out->identity);
    if (rc == 0)
        rc = tc_journal_migrate(dir, tc_identity_agent_id(out->identity), false, NULL);
    if (rc == 0) {
        tc_identity_journal_dir(out->identity, journal_dir, sizeof journal_dir);
        rc = tc_journal_open(journal_dir, &out->journal);
    }
    if (rc < 0)
        tc_session_close(out);
    return rc;
}

int tc_session_connect(tc_session_t *s, const tc_session_flags_t *flags,
                       const tc_job_handlers_t *handlers, tc_link_job_fn on_job, void *job_arg)
{
    int rc = 0;
    tc_link_opts_t o = {0};
    o.endpoint = flags->aggregator;
    o.agent_id = tc_identity_agent_id(s->identity);
    o.insecure = flags->insecure;
    if (flags->window > 100000)
        return tc_fail(TC_EUSAGE, "--window must be between 1 and 100000 (got %lu)", flags->window);
    o.window = (unsigned)flags->window;
    o.heartbeat_ms = s_ms(flags->heartbeat_s, "heartbeat", &rc);
    o.ack_timeout_ms = s_ms(flags->ack_timeout_s, "ack-timeout", &rc);
    if (rc < 0)
        return rc;
    o.on_job = on_job;
    o.job_arg = job_arg;

    char server_key[TC_KEY_Z85_LEN + 1];
    if (flags->insecure) {
        tc_log_warn("INSECURE MODE (--insecure): results travel unencrypted and the aggregator "
                    "cannot tell this agent from anyone else; use it only on a trusted local "
                    "network, never across machines you do not control");
    } else {
        if ((rc = tc_identity_server_key(s->identity, flags->server_key, server_key)) < 0)
            return rc;
        o.keys = tc_identity_keys(s->identity);
        o.server_key = server_key;
    }

    char host[256];
    tc_host_name(host, sizeof host);
    Traincast__V1__Hello hello = TRAINCAST__V1__HELLO__INIT;
    hello.agent_name = (char *)tc_identity_agent_id(s->identity);
    hello.agent_version = TRAINCAST_VERSION;
    hello.host = host;
    hello.accepts_jobs = on_job != NULL;
    if (handlers && handlers->devices) {
        Traincast__V1__Device *const *devs = NULL;
        size_t n = 0;
        if ((rc = handlers->devices(handlers->ctx, &devs, &n)) < 0)
            return tc_err_context(rc, "listing this machine's devices");
        hello.devices = (Traincast__V1__Device **)devs;
        hello.n_devices = n;
    }
    if (on_job && hello.n_devices == 0)
        tc_log_warn("this agent announces no device (this build has no device backend), so the "
                    "aggregator has no job to send it");
    o.hello = &hello;
    return tc_link_new(&o, s->journal, &s->link);
}

void tc_session_close(tc_session_t *s)
{
    tc_link_destroy(&s->link);
    tc_journal_destroy(&s->journal);
    tc_identity_destroy(&s->identity);
}

int tc_session_serve(tc_session_t *s, tc_jobs_t *jobs, volatile sig_atomic_t *stop)
{
    int rc = 0;
    char current[80];
    while (!*stop) {
        tc_jobs_current(jobs, current, sizeof current);
        tc_link_set_running_job(s->link, current);
        if ((rc = tc_link_step(s->link, 200)) < 0)
            return rc;
        int status;
        char msg[1024];
        tc_jobs_take_result(jobs, &status, msg, sizeof msg); /* logged by the job thread */
    }
    tc_log_info("stopping: %s", tc_jobs_busy(jobs) ? "cancelling the running job" : "idle");
    tc_jobs_cancel(jobs);
    while (tc_jobs_busy(jobs))
        tc_link_step(s->link, 100);
    /* A moment to deliver the final progress; the rest waits in the journal. */
    int64_t until = tc_link_now_ms() + 2000;
    while (tc_journal_waiting(s->journal) > 0 && tc_link_now_ms() < until)
        tc_link_step(s->link, 100);
    tc_log_info("%zu message%s left in the journal for the next start",
                tc_journal_waiting(s->journal), tc_journal_waiting(s->journal) == 1 ? "" : "s");
    return 0;
}
