/* Agent authentication: the ZAP handler that ZeroMQ asks about each CURVE
 * handshake, checking the agent's key against the allowlist (allowlist.h). */
#ifndef TC_ZAP_H
#define TC_ZAP_H

#include "tc_zmq.h"

#include <stdbool.h>
#include <stddef.h>

typedef struct tc_zap tc_zap_t;

/* Start the ZAP handler thread on `ctx` (before any CURVE server socket
 * binds) with the allowlist at `path`. */
int tc_zap_start(void *ctx, const char *path, tc_zap_t **out);
/* Re-read the allowlist (SIGHUP). A file that does not parse leaves the
 * previous list in force, and the error is returned. */
int tc_zap_reload(tc_zap_t *self);
/* Whether `key_z85` is in the allowlist now (any thread). */
bool tc_zap_allows(tc_zap_t *self, const char *key_z85);
/* Stop the thread and free. Accepts NULL; nulls the pointer. */
void tc_zap_stop(tc_zap_t **self_p);

#endif
