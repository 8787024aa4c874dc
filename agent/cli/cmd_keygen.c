/* agent keygen: create this agent's CURVE key pair. */
#include "commands.h"
#include "identity.h"

#include "tc_cli.h"
#include "tc_error.h"

#include <stdio.h>

int tc_cmd_keygen(int argc, char **argv)
{
    const char *state = NULL;
    bool force = false;
    const tc_opt_t opts[] = {
        {"state", TC_OPT_STR, &state, "DIR",
         "state directory (default $TRAINCAST_AGENT_DIR or ~/.traincast/agent)"},
        {"force", TC_OPT_FLAG, &force, NULL, "replace an existing key pair"},
        {0},
    };
    const tc_cmd_spec_t spec = {
        .prog = "agent keygen",
        .summary = "Create this agent's CURVE key pair: STATE/agent.key (secret, mode 0600) and "
                   "STATE/agent.pub.\nAdd the line of agent.pub to the aggregator's allowlist "
                   "and copy the aggregator's\naggregator.pub into STATE.",
        .max_positional = 0,
        .opts = opts,
    };
    tc_cli_result_t cli;
    int rc = tc_cli_begin(&spec, argc, argv, &cli);
    if (rc < 0 || cli.help_shown)
        return rc;
    char dir[2048];
    tc_identity_default_dir(state, dir, sizeof dir);
    tc_identity_t *id = NULL;
    rc = tc_identity_open(dir, false, &id);
    if (rc == 0)
        rc = tc_identity_keygen(id, force);
    if (rc == 0) {
        const tc_keypair_t *kp = tc_identity_keys(id);
        printf("agent %s: wrote %s/agent.key and %s/agent.pub\n", tc_identity_agent_id(id), dir,
               dir);
        printf("add this line to the aggregator's allowlist, then send the aggregator SIGHUP:\n"
               "%s %s\n",
               kp->public_z85, tc_identity_agent_id(id));
        printf("and copy the aggregator's aggregator.pub to %s/aggregator.pub\n", dir);
    }
    tc_identity_destroy(&id);
    tc_cli_result_free(&cli);
    return rc;
}
