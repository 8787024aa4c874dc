/* aggregator serve: receive, store and acknowledge agents' results; send
 * them queued jobs. */
#include "cli_db.h"
#include "commands.h"
#include "server.h"

#include "tc_cli.h"
#include "tc_error.h"
#include "tc_wire.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static volatile sig_atomic_t s_stop, s_reload;

/* The key pair first: without one nothing else matters, so the missing
 * key is named before the allowlist (which keygen creates with it). */
static int s_check_key(const char *keys_dir, bool insecure)
{
    char keyfile[2200];
    snprintf(keyfile, sizeof keyfile, "%s/aggregator.key", keys_dir);
    if (insecure || access(keyfile, F_OK) == 0 || errno != ENOENT)
        return 0;
    return tc_fail(TC_EINVAL,
                   "no aggregator key in %s: run 'aggregator keygen --keys %s' first and give "
                   "agents its aggregator.pub (or use --insecure for a local demo)",
                   keys_dir, keys_dir);
}

static void s_on_stop(int sig)
{
    (void)sig;
    s_stop = 1;
}

static void s_on_hup(int sig)
{
    (void)sig;
    s_reload = 1;
}

/* The command's parsed options (the strings point into the parsed command
 * line: valid until tc_cli_result_free). */
typedef struct {
    const char *listen, *db, *keys, *allowlist;
    bool insecure;
    unsigned long workers, batch, max_bytes, queue;
    double heartbeat_s;
} s_serve_args_t;

/* Where the server's key and the allowlist are. */
typedef struct {
    char keys_dir[2048], allow_path[2200];
} s_paths_t;

/* The keys directory (--keys or the default) and the allowlist (--allowlist,
 * or KEYS/allowlist). */
static void s_paths(const s_serve_args_t *a, s_paths_t *p)
{
    tc_server_default_keys_dir(a->keys, p->keys_dir, sizeof p->keys_dir);
    if (a->allowlist && *a->allowlist)
        snprintf(p->allow_path, sizeof p->allow_path, "%s", a->allowlist);
    else
        snprintf(p->allow_path, sizeof p->allow_path, "%s/allowlist", p->keys_dir);
}

/* Check the numeric options' ranges: TC_EUSAGE naming the first one out
 * of range, else 0. */
static int s_check(const s_serve_args_t *a)
{
    if (a->workers < 1 || a->workers > 64)
        return tc_fail(TC_EUSAGE, "--workers must be between 1 and 64 (got %lu)", a->workers);
    if (a->batch < 1 || a->batch > 1024)
        return tc_fail(TC_EUSAGE, "--batch must be between 1 and 1024 (got %lu)", a->batch);
    if (a->max_bytes && (a->max_bytes < 1024 || a->max_bytes > TC_MAX_MESSAGE_BYTES))
        return tc_fail(TC_EUSAGE, "--max-message-bytes must be between 1024 and %u (got %lu)",
                       TC_MAX_MESSAGE_BYTES, a->max_bytes);
    if (a->queue < 1 || a->queue > 1000000)
        return tc_fail(TC_EUSAGE, "--queue must be between 1 and 1000000 (got %lu)", a->queue);
    if (!(a->heartbeat_s >= 0.05 && a->heartbeat_s <= 3600))
        return tc_fail(TC_EUSAGE, "--heartbeat must be between 0.05 and 3600 seconds (got %g)",
                       a->heartbeat_s);
    return 0;
}

/* SIGTERM and SIGINT stop the server, SIGHUP has it re-read the allowlist. */
static void s_install_signals(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sigemptyset(&sa.sa_mask);
    sa.sa_handler = s_on_stop;
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    sa.sa_handler = s_on_hup;
    sigaction(SIGHUP, &sa, NULL);
}

int tc_cmd_serve(int argc, char **argv)
{
    s_serve_args_t a = {.listen = "tcp://*:5555",
                        .workers = 4,
                        .batch = 32,
                        .queue = 4096,
                        .heartbeat_s = 5};
    const tc_opt_t opts[] = {
        {"listen", TC_OPT_STR, &a.listen, "ENDPOINT", "where agents connect (default tcp://*:5555)"},
        TC_DB_OPT(&a.db),
        {"keys", TC_OPT_STR, &a.keys, "DIR",
         "holds aggregator.key (default $TRAINCAST_AGGREGATOR_DIR or ~/.traincast/aggregator)"},
        {"allowlist", TC_OPT_STR, &a.allowlist, "FILE",
         "agent public keys allowed to connect, one per line (default KEYS/allowlist; re-read "
         "on SIGHUP)"},
        {"insecure", TC_OPT_FLAG, &a.insecure, NULL,
         "no encryption or authentication: a local demo on a trusted machine only"},
        {"workers", TC_OPT_UINT, &a.workers, "N",
         "store workers, each with its own database connection (default 4)"},
        {"batch", TC_OPT_UINT, &a.batch, "N",
         "messages a worker stores per transaction, at most (default 32)"},
        {"max-message-bytes", TC_OPT_UINT, &a.max_bytes, "BYTES",
         "largest message accepted (default 67108864)"},
        {"queue", TC_OPT_UINT, &a.queue, "N",
         "messages waiting for a worker before agents are told to retry later (default 4096)"},
        {"heartbeat", TC_OPT_DOUBLE, &a.heartbeat_s, "SECONDS",
         "heartbeat interval agents are expected to use (default 5)"},
        {0},
    };
    const tc_cmd_spec_t spec = {
        .prog = "aggregator serve",
        .summary = "Receive results from agents (ZeroMQ, CURVE-authenticated), store them in "
                   "PostgreSQL and\nacknowledge each after its transaction commits; dispatch "
                   "queued jobs to connected agents.\nSIGTERM stops cleanly; SIGHUP re-reads "
                   "the allowlist.",
        .max_positional = 0,
        .config_file = true,
        .opts = opts,
    };
    tc_cli_result_t cli;
    int rc = tc_cli_begin(&spec, argc, argv, &cli);
    if (rc < 0 || cli.help_shown)
        return rc;
    s_paths_t p;
    s_paths(&a, &p);
    if ((rc = s_check(&a)) < 0 || (rc = s_check_key(p.keys_dir, a.insecure)) < 0) {
        tc_cli_result_free(&cli);
        return rc;
    }
    s_install_signals();

    tc_server_opts_t o = {
        .listen = a.listen,
        .dsn = tc_default_dsn(a.db),
        .keys_dir = p.keys_dir,
        .allowlist = p.allow_path,
        .insecure = a.insecure,
        .workers = (unsigned)a.workers,
        .batch = (unsigned)a.batch,
        .max_message_bytes = a.max_bytes,
        .heartbeat_ms = (unsigned)(a.heartbeat_s * 1000.0 + 0.5),
        .queue_limit = (unsigned)a.queue,
        .stop = &s_stop,
        .reload = &s_reload,
    };
    rc = tc_server_run(&o);
    tc_cli_result_free(&cli);
    return rc;
}
