/* What `agent push`, `agent serve` and `agent run` share: the connection
 * flags, opening the state directory, journal and link, and stopping on
 * SIGINT / SIGTERM. */
#ifndef TC_SESSION_H
#define TC_SESSION_H

#include "identity.h"
#include "jobs.h"
#include "link.h"
#include "journal.h"

#include <signal.h>
#include <stdbool.h>

typedef struct {
    const char *aggregator;
    const char *state;
    const char *server_key;
    bool insecure;
    unsigned long window;
    double heartbeat_s;
    double ack_timeout_s;
} tc_session_flags_t;

/* The connection flags as tc_opt_t entries, for a command's option table. */
#define TC_SESSION_OPTS(f)                                                                         \
    {"aggregator", TC_OPT_STR, &(f).aggregator, "ENDPOINT",                                        \
     "the aggregator to send to, e.g. tcp://HOST:5555; several serve processes on one "         \
     "database: their endpoints separated by commas", true},                                     \
        {"state", TC_OPT_STR, &(f).state, "DIR",                                                   \
         "state directory: agent id, keys, journal (default $TRAINCAST_AGENT_DIR "       \
         "or ~/.traincast/agent)"},                                                                   \
        {"server-key", TC_OPT_STR, &(f).server_key, "FILE",                                        \
         "the aggregator's public key (default STATE/aggregator.pub)"},                            \
        {"insecure", TC_OPT_FLAG, &(f).insecure, NULL,                                             \
         "no encryption or authentication: a trusted local network only"},                         \
        {"window", TC_OPT_UINT, &(f).window, "N",                                                  \
         "unacknowledged messages in flight at once (default 32)"},                                \
        {"heartbeat", TC_OPT_DOUBLE, &(f).heartbeat_s, "SECONDS",                                  \
         "heartbeat interval (default 5)"},                                                        \
        {"ack-timeout", TC_OPT_DOUBLE, &(f).ack_timeout_s, "SECONDS",                              \
         "first resend of an unacknowledged message after this, doubling up to 60 (default 10)"}

/* The settings of the built-in job handlers (tc_job_settings_t) as
 * tc_opt_t entries: one list for `agent run` and `agent serve`. */
#define TC_JOB_SETTINGS_OPTS(js)                                                                   \
    {"device", TC_OPT_STR, &(js).device, "DEVICE",                                                 \
     "measure only this device (cpu, cuda:0, ...); default every device"},                         \
        {"threads", TC_OPT_UINT, &(js).threads, "N",                                               \
         "threads of the cpu device, for benchmarks and traces alike: with 1 and with all "        \
         "threads a CPU is two devices (default: all logical CPUs)"},                              \
        {"policy", TC_OPT_STR, &(js).policy, "P",                                                  \
         "conv algorithm policy: heuristic (default) or exhaustive; traces train with "            \
         "cudnn.benchmark on for exhaustive"},                                                     \
        {"budget-ms", TC_OPT_DOUBLE, &(js).budget_ms, "MS",                                        \
         "measurement time budget per conv benchmark item (default 1000)"},                        \
        {"max-reps", TC_OPT_UINT, &(js).max_reps, "N",                                             \
         "at most this many repetitions per conv benchmark item (default 200)"},                   \
        {"runner", TC_OPT_STR, &(js).runner, "CMD",                                                \
         "trace runner command (default: the PyTorch harness)"}

typedef struct {
    tc_identity_t *identity;
    tc_journal_t *journal;
    tc_link_t *link; /* NULL until tc_session_connect */
} tc_session_t;

/* Open the state directory and its journal, moving an older agent's
 * results/ and spool/ into it once (no network yet). */
int tc_session_open(const tc_session_flags_t *flags, tc_session_t *out);

/* Connect to the aggregator. `handlers` (may be NULL) supply the devices of
 * the Hello; `on_job` NULL means this session takes no jobs. */
int tc_session_connect(tc_session_t *s, const tc_session_flags_t *flags,
                       const tc_job_handlers_t *handlers, tc_link_job_fn on_job, void *job_arg);

void tc_session_close(tc_session_t *s);

/* The serve loop: step the link, run the jobs it receives, report the
 * running job in heartbeats, until *stop. Then cancel the job, give the
 * final messages two seconds to go out, and return 0. */
int tc_session_serve(tc_session_t *s, tc_jobs_t *jobs, volatile sig_atomic_t *stop);

/* SIGINT and SIGTERM set the returned flag (and stop blocking calls). */
volatile sig_atomic_t *tc_session_stop_flag(void);

#endif
