/* The agent's identity on the wire (Envelope.agent_id). Kept in one place:
 * the transport will own agent identity (keys, configuration); until then
 * the id is derived from the machine. */
#ifndef TC_AGENT_ID_H
#define TC_AGENT_ID_H

#include <stddef.h>

/* `override` when given (non-empty), else "<host>-<8 hex>", where the hex is
 * a hash of /etc/machine-id (or of the host name when that is missing), so
 * the same machine keeps the same id across runs. */
void tc_agent_id(const char *override, char *buf, size_t size);

#endif
