/* Agent authentication: the allowlist of agent public keys and the ZAP
 * handler that ZeroMQ asks about each CURVE handshake.
 *
 * Allowlist file: one agent public key (40 z85 characters) per line,
 * optionally followed by a label (an agent's agent.pub line as it is);
 * blank lines and '#' comments are ignored. An unparsable line makes the
 * whole file invalid, so a typo never silently locks an agent out or in. */
#ifndef TC_ZAP_H
#define TC_ZAP_H

#include "tc_zmq.h"

#include <stdbool.h>
#include <stddef.h>

typedef struct tc_allowlist tc_allowlist_t;

/* Load `path`. */
int tc_allowlist_load(const char *path, tc_allowlist_t **out);
void tc_allowlist_destroy(tc_allowlist_t **self_p);
size_t tc_allowlist_count(const tc_allowlist_t *self);
/* The label of `key`, "" when it has none, or NULL when it is not listed. */
const char *tc_allowlist_find(const tc_allowlist_t *self, const char *key_z85);

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
