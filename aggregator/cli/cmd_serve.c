/* aggregator serve: receive, store and acknowledge agents' results; send
 * them queued jobs. */
#include "commands.h"
#include "server.h"

#include "tc_cli.h"
#include "tc_error.h"
#include "tc_wire.h"

#include <signal.h>
#include <stdio.h>
#include <string.h>

static volatile sig_atomic_t s_stop, s_reload;

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

int tc_cmd_serve(int argc, char **argv)
{
    const char *listen = "tcp://*:5555", *db = NULL, *keys = NULL, *allowlist = NULL;
    bool insecure = false;
    unsigned long workers = 4, batch = 32, max_bytes = 0, queue = 4096;
    double heartbeat_s = 5;
    const tc_opt_t opts[] = {
        {"listen", TC_OPT_STR, &listen, "ENDPOINT", "where agents connect (default tcp://*:5555)"},
        TC_DB_OPT(&db),
        {"keys", TC_OPT_STR, &keys, "DIR",
         "holds aggregator.key (default $TRAINCAST_AGGREGATOR_DIR or ~/.traincast/aggregator)"},
        {"allowlist", TC_OPT_STR, &allowlist, "FILE",
         "agent public keys allowed to connect, one per line (default KEYS/allowlist; re-read "
         "on SIGHUP)"},
        {"insecure", TC_OPT_FLAG, &insecure, NULL,
         "no encryption or authentication: a local demo on a trusted machine only"},
        {"workers", TC_OPT_UINT, &workers, "N",
         "store workers, each with its own database connection (default 4)"},
        {"batch", TC_OPT_UINT, &batch, "N",
         "messages a worker stores per transaction, at most (default 32)"},
        {"max-message-bytes", TC_OPT_UINT, &max_bytes, "BYTES",
         "largest message accepted (default 67108864)"},
        {"queue", TC_OPT_UINT, &queue, "N",
         "messages waiting for a worker before agents are told to retry later (default 4096)"},
        {"heartbeat", TC_OPT_DOUBLE, &heartbeat_s, "SECONDS",
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
    int rc = tc_cli_parse(&spec, argc, argv, &cli);
    if (rc < 0 || cli.help_shown) {
        tc_cli_result_free(&cli);
        return rc;
    }
    char keys_dir[2048], allow_path[2200];
    tc_server_default_keys_dir(keys, keys_dir, sizeof keys_dir);
    if (allowlist && *allowlist)
        snprintf(allow_path, sizeof allow_path, "%s", allowlist);
    else
        snprintf(allow_path, sizeof allow_path, "%s/allowlist", keys_dir);
    if (workers < 1 || workers > 64)
        rc = tc_fail(TC_EUSAGE, "--workers must be between 1 and 64 (got %lu)", workers);
    else if (batch < 1 || batch > 1024)
        rc = tc_fail(TC_EUSAGE, "--batch must be between 1 and 1024 (got %lu)", batch);
    else if (max_bytes && (max_bytes < 1024 || max_bytes > TC_MAX_MESSAGE_BYTES))
        rc = tc_fail(TC_EUSAGE, "--max-message-bytes must be between 1024 and %u (got %lu)",
                     TC_MAX_MESSAGE_BYTES, max_bytes);
    else if (queue < 1 || queue > 1000000)
        rc = tc_fail(TC_EUSAGE, "--queue must be between 1 and 1000000 (got %lu)", queue);
    else if (!(heartbeat_s >= 0.05 && heartbeat_s <= 3600))
        rc = tc_fail(TC_EUSAGE, "--heartbeat must be between 0.05 and 3600 seconds (got %g)",
                     heartbeat_s);
    if (rc < 0) {
        tc_cli_result_free(&cli);
        return rc;
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sigemptyset(&sa.sa_mask);
    sa.sa_handler = s_on_stop;
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    sa.sa_handler = s_on_hup;
    sigaction(SIGHUP, &sa, NULL);

    tc_server_opts_t o = {
        .listen = listen,
        .dsn = tc_default_dsn(db),
        .keys_dir = keys_dir,
        .allowlist = allow_path,
        .insecure = insecure,
        .workers = (unsigned)workers,
        .batch = (unsigned)batch,
        .max_message_bytes = max_bytes,
        .heartbeat_ms = (unsigned)(heartbeat_s * 1000.0 + 0.5),
        .queue_limit = (unsigned)queue,
        .stop = &s_stop,
        .reload = &s_reload,
    };
    rc = tc_server_run(&o);
    tc_cli_result_free(&cli);
    return rc;
}
