/* The agent's identity on the wire (Envelope.agent_id), decided here for
 * every command, so that results written offline (`agent bench --out`,
 * `agent trace --out`) and the messages of `agent run`, `agent serve` and
 * `agent push` carry the same id:
 *
 *   1. `override` (--agent-id) when given;
 *   2. else the id of the state directory (agent/state/identity.h): the one
 *      `state` names (--state DIR, created when missing), or the default one
 *      ($TRAINCAST_AGENT_DIR, else ~/.traincast/agent) when it exists;
 *   3. else, with no state directory yet, "<host>-<8 hex>", where the hex is
 *      a hash of /etc/machine-id (or of the host name when that is
 *      missing), so the same machine keeps the same id across runs.
 *
 * A state directory's id is "<host>-<6 random>", made once when the
 * directory is first used; two agents on one machine (two state
 * directories) are thus two agents. */
#ifndef TC_AGENT_ID_H
#define TC_AGENT_ID_H

#include <stddef.h>

/* Fill `buf` by the rules above. Returns 0, or a negative TC_E* code when a
 * state directory exists but its id cannot be read or made (`buf` then
 * holds the machine's id of rule 3). */
int tc_agent_id(const char *override, const char *state, char *buf, size_t size);

/* Rule 3 alone. */
void tc_agent_id_machine(char *buf, size_t size);

#endif
