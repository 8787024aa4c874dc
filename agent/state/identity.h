/* Who this agent is: its state directory, agent id and CURVE key pair.
 *
 * The state directory (--state DIR, else $TRAINCAST_AGENT_DIR, else
 * $HOME/.traincast/agent) holds:
 *   agent_id        one line, created on first use as "<host>-<6 random>"
 *   agent.key/.pub  this agent's key pair (agent keygen)
 *   aggregator.pub  the aggregator's public key (copied there by the operator)
 *   journal/        what the agent measured and what it has still to deliver
 *                   (agent/state/journal.h); an older agent's results/ and
 *                   spool/ are moved into it once (migrated-<date>/ keeps them)
 *   lock            held while a process uses the directory
 * One process at a time uses a state directory; a second one is refused. */
#ifndef TC_IDENTITY_H
#define TC_IDENTITY_H

#include "tc_zmq.h"

#include <stdbool.h>
#include <stddef.h>

#define TC_AGENT_ID_MAX 128

typedef struct tc_identity tc_identity_t;

/* The state directory to use when `flag` (--state) is NULL or empty. */
void tc_identity_default_dir(const char *flag, char *out, size_t size);

/* Open (creating the directory and agent id if needed) and lock the state
 * directory. With `need_keys` a missing key pair is an error that says to
 * run `agent keygen`. */
int tc_identity_open(const char *dir, bool need_keys, tc_identity_t **out);
/* Release the lock and free. Accepts NULL; nulls the pointer. */
void tc_identity_destroy(tc_identity_t **self_p);

const char *tc_identity_dir(const tc_identity_t *self);
const char *tc_identity_agent_id(const tc_identity_t *self);
/* The key pair, or NULL when none was found. */
const tc_keypair_t *tc_identity_keys(const tc_identity_t *self);
/* Path of the journal directory inside the state directory. */
void tc_identity_journal_dir(const tc_identity_t *self, char *out, size_t size);

/* Generate and write agent.key / agent.pub (refusing to replace a key pair
 * unless `force`); reloads the identity's keys. */
int tc_identity_keygen(tc_identity_t *self, bool force);

/* The aggregator's public key: from `path` when given, else
 * <state>/aggregator.pub. */
int tc_identity_server_key(const tc_identity_t *self, const char *path,
                           char out[TC_KEY_Z85_LEN + 1]);

/* Read the agent id of a state directory without locking it (for writers of
 * result files that run next to a serving agent). Creates it if absent. */
int tc_identity_read_agent_id(const char *dir, char *out, size_t size);

#endif
