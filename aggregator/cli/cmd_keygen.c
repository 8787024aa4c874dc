/* aggregator keygen: create the aggregator's CURVE key pair. */
#include "commands.h"
#include "server.h"

#include "tc_cli.h"
#include "tc_error.h"
#include "tc_zmq.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int tc_cmd_keygen(int argc, char **argv)
{
    const char *keys = NULL;
    bool force = false;
    const tc_opt_t opts[] = {
        {"keys", TC_OPT_STR, &keys, "DIR",
         "where to write (default $TRAINCAST_AGGREGATOR_DIR or ~/.traincast/aggregator)"},
        {"force", TC_OPT_FLAG, &force, NULL, "replace an existing key pair"},
        {0},
    };
    const tc_cmd_spec_t spec = {
        .prog = "aggregator keygen",
        .summary = "Create the aggregator's CURVE key pair: DIR/aggregator.key (secret, mode "
                   "0600) and\nDIR/aggregator.pub, which every agent needs (as "
                   "STATE/aggregator.pub or --server-key).\nAlso creates an empty DIR/allowlist "
                   "if there is none.",
        .max_positional = 0,
        .opts = opts,
    };
    tc_cli_result_t cli;
    int rc = tc_cli_begin(&spec, argc, argv, &cli);
    if (rc < 0 || cli.help_shown)
        return rc;
    char dir[2048], allow[2200];
    tc_server_default_keys_dir(keys, dir, sizeof dir);
    tc_keypair_t kp;
    rc = tc_keypair_generate(&kp);
    if (rc == 0)
        rc = tc_keypair_write(dir, "aggregator", "aggregator", &kp, force);
    if (rc == 0) {
        snprintf(allow, sizeof allow, "%s/allowlist", dir);
        int fd = open(allow, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
        if (fd >= 0) {
            const char *head = "# traincast aggregator allowlist: one agent public key per line "
                               "(the contents of its agent.pub).\n# Re-read on SIGHUP.\n";
            if (write(fd, head, strlen(head)) < 0)
                rc = tc_fail(TC_EIO, "cannot write %s: %s", allow, strerror(errno));
            close(fd);
        } else if (errno != EEXIST) {
            rc = tc_fail(TC_EIO, "cannot create %s: %s", allow, strerror(errno));
        }
    }
    if (rc == 0)
        printf("wrote %s/aggregator.key and %s/aggregator.pub\npublic key: %s\n"
               "copy aggregator.pub to each agent's state directory; add each agent's agent.pub "
               "line to %s\n",
               dir, dir, kp.public_z85, allow);
    memset(&kp, 0, sizeof kp);
    tc_cli_result_free(&cli);
    return rc;
}
