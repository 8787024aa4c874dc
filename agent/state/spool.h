/* The agent's spool: every outgoing message is on disk before it is sent
 * and stays there until the aggregator acknowledges it.
 *
 * One file per message, DIR/<message id>.msg, holding the packed envelope.
 * A put writes DIR/.<id>.tmp, fsyncs it, renames it into place and fsyncs the
 * directory, so after a crash a message is either wholly there or absent.
 * Message ids are ULIDs, so name order is age order: the oldest goes first.
 * A message the aggregator refuses for good moves to DIR/rejected/ with a
 * <id>.reason file beside it.
 *
 * All functions are safe to call from several threads. */
#ifndef TC_SPOOL_H
#define TC_SPOOL_H

#include "tc_wire.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct tc_spool tc_spool_t;

/* Open DIR (creating it and DIR/rejected), removing temporary files left by
 * a crash, and index the messages found. */
int tc_spool_open(const char *dir, tc_spool_t **out);
void tc_spool_destroy(tc_spool_t **self_p);

const char *tc_spool_dir(const tc_spool_t *self);

/* Store a packed envelope under `id`. A message already spooled under that id
 * is left as it is (*added = false). With `sync_dir` false the directory is
 * not fsynced; call tc_spool_sync before relying on the new names (bulk
 * puts). `added` may be NULL. */
int tc_spool_put(tc_spool_t *self, const char *id, const uint8_t *data, size_t len,
                 bool sync_dir, bool *added);
/* Put many messages with the same guarantee as one put each, but two disk
 * flushes in all: every message goes to its temporary file, one syncfs()
 * makes them all durable, then they are renamed into place and the
 * directory is fsynced. Ids already spooled (or repeated) are skipped;
 * *added (may be NULL) counts the new ones. */
int tc_spool_put_many(tc_spool_t *self, size_t n, const char *const *ids,
                      const uint8_t *const *data, const size_t *lens, size_t *added);
/* Spool every record of a result file (common/wire/tc_resultfile.h) under its
 * own message id, in chunks through tc_spool_put_many. Records without an
 * agent id get `agent_id`. *records and *added (may be NULL) count what was
 * read and what was new. */
int tc_spool_import(tc_spool_t *self, const char *path, const char *agent_id, size_t *records,
                    size_t *added);
/* The same for the records after the first `skip` ones (those are read and
 * counted in *records, not spooled). */
int tc_spool_import_from(tc_spool_t *self, const char *path, size_t skip, const char *agent_id,
                         size_t *records, size_t *added);
/* Pack `env` and put it under its message id (fsyncing the directory). */
int tc_spool_put_envelope(tc_spool_t *self, const tc_envelope_t *env);
/* fsync the spool directory. */
int tc_spool_sync(tc_spool_t *self);

/* Read a spooled message (caller frees *data). TC_ENOTFOUND if absent. */
int tc_spool_read(tc_spool_t *self, const char *id, uint8_t **data, size_t *len);

/* The message was acknowledged: delete it. Absent ids are ignored. */
int tc_spool_remove(tc_spool_t *self, const char *id);

/* The message can never be stored: move it to rejected/ with the reason. */
int tc_spool_reject(tc_spool_t *self, const char *id, const char *reason);

/* Number of messages waiting. */
size_t tc_spool_count(tc_spool_t *self);
/* Number of messages in rejected/ (counted at open plus those rejected
 * since). */
size_t tc_spool_rejected_count(tc_spool_t *self);

/* Every message in DIR/rejected (DIR a spool directory; no spool need be
 * open, nothing is locked), oldest first: its id, the reason the
 * aggregator gave ("" if the .reason file is missing) and its packed
 * envelope. A callback's negative status stops the walk and is returned. */
typedef int (*tc_spool_rejected_fn)(void *arg, const char *id, const char *reason,
                                    const uint8_t *data, size_t len);
int tc_spool_each_rejected(const char *dir, tc_spool_rejected_fn fn, void *arg);

/* Move every refused message back into the spool (its reason file goes),
 * to be sent again once what made the aggregator refuse it is fixed.
 * *moved gets how many. */
int tc_spool_requeue_rejected(tc_spool_t *self, size_t *moved);

/* Copy the ids of up to `max` oldest waiting messages into ids[]. Returns how
 * many were copied. */
size_t tc_spool_oldest(tc_spool_t *self, char (*ids)[TC_MSGID_LEN + 1], size_t max);

bool tc_spool_contains(tc_spool_t *self, const char *id);

#endif
