/* The agent's journal: the one durable store of what it measured and what it
 * still has to deliver.
 *
 * DIR/log is an append-only file of framed records after an 8-byte magic:
 *   [u32 body length][u32 CRC-32 of the body][body], little-endian, where
 *   body = type byte, message id (26 characters), then
 *     'R' result:   u16 name length, name, packed Envelope
 *     'A' acked:    nothing
 *     'X' refused:  the aggregator's reason
 *     'Q' requeued: nothing (send again)
 * An R record is a message to deliver. Its name ties it to a job's results
 * ("bench-<uuid>-<policy>", "trace-<uuid>"), so a later job resumes from
 * them; pushed files and job progress go in unnamed. A message waits until
 * an A or X follows it (and again after a Q).
 *
 * R, X and Q records are on disk (fsync) before the call returns; an A is
 * not flushed: losing it in a crash only sends the message again, and the
 * aggregator acknowledges it as already stored. Opening cuts a torn tail
 * left by a crash (keeping its bytes in DIR/log.damaged-<offset> and
 * saying so).
 *
 * DIR/cursor holds the acknowledgement cursor: the log offset below which
 * every message is settled (acked or refused). Opening checks CRCs from
 * there on only and reads just the ids and names below it, so a long
 * history costs little. It is rewritten on close and as it moves on.
 *
 * Waiting messages go out in id order (ULIDs: oldest first). All functions
 * are safe to call from several threads; one process at a time opens a
 * journal (the state directory's lock sees to it). */
#ifndef TC_JOURNAL_H
#define TC_JOURNAL_H

#include "tc_resultfile.h"
#include "tc_wire.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TC_JOURNAL_NAME_MAX 255

typedef struct tc_journal tc_journal_t;

/* Open DIR/log (creating DIR and the log if needed) and index it. */
int tc_journal_open(const char *dir, tc_journal_t **out);
/* Write the cursor and close. Accepts NULL; nulls the pointer. */
void tc_journal_destroy(tc_journal_t **self_p);

/* DIR/log, for messages. */
const char *tc_journal_path(const tc_journal_t *self);

/* ---- delivering ---- */

/* Store a packed envelope under `id`, unnamed. An id already waiting is left
 * as it is (*added = false); one delivered or refused before waits again
 * (a Q record; the stored bytes are sent). `added` may be NULL. */
int tc_journal_put(tc_journal_t *self, const char *id, const uint8_t *data, size_t len,
                   bool *added);
/* Put many with one write and one flush; *added (may be NULL) counts the
 * messages that wait now and did not before. */
int tc_journal_put_many(tc_journal_t *self, size_t n, const char *const *ids,
                        const uint8_t *const *data, const size_t *lens, size_t *added);
/* Pack `env` and put it under its message id. */
int tc_journal_put_envelope(tc_journal_t *self, const tc_envelope_t *env);
/* Put every record of a result file (common/wire/tc_resultfile.h), in
 * chunks; records without an agent id get `agent_id`. *records and *added
 * (may be NULL) count what was read and what waits now. */
int tc_journal_import(tc_journal_t *self, const char *path, const char *agent_id,
                      size_t *records, size_t *added);

/* Read a waiting message (caller frees *data). TC_ENOTFOUND if it is not
 * waiting. */
int tc_journal_read(tc_journal_t *self, const char *id, uint8_t **data, size_t *len);
/* The aggregator acknowledged it. Ids not waiting are ignored. */
int tc_journal_ack(tc_journal_t *self, const char *id);
/* The aggregator refused it for good, with `reason`. */
int tc_journal_reject(tc_journal_t *self, const char *id, const char *reason);
/* Every refused message waits again (`agent push --requeue-rejected`).
 * *moved gets how many. */
int tc_journal_requeue_rejected(tc_journal_t *self, size_t *moved);

/* Messages waiting, and refused. */
size_t tc_journal_waiting(tc_journal_t *self);
size_t tc_journal_rejected_count(tc_journal_t *self);
/* The ids of up to `max` oldest waiting messages; returns how many. */
size_t tc_journal_oldest(tc_journal_t *self, char (*ids)[TC_MSGID_LEN + 1], size_t max);
bool tc_journal_is_waiting(tc_journal_t *self, const char *id);

/* ---- the results of jobs ---- */

/* Append `env` (stamped: a valid message id) as a result of `name`, to be
 * delivered; *added (may be NULL) as for tc_journal_put. */
int tc_journal_append(tc_journal_t *self, const char *name, const tc_envelope_t *env,
                      bool *added);
/* Call `fn` with every result of `name`, in the order appended. A
 * callback's negative status stops the walk and is returned. */
int tc_journal_each(tc_journal_t *self, const char *name, tc_resultfile_fn fn, void *arg);
/* How many results `name` holds. */
size_t tc_journal_count(tc_journal_t *self, const char *name);

/* ---- reading without opening (agent status, next to a running agent) ---- */

typedef struct {
    size_t waiting;
    char oldest[TC_MSGID_LEN + 1]; /* of the waiting ones; "" if none */
    size_t records, rejected;
} tc_journal_summary_t;

/* Summarise DIR's journal without locking or repairing it; a missing
 * journal is empty. With `fn`, it is also called for every refused message
 * (oldest first) with the reason and its packed envelope; a negative status
 * stops the walk and is returned. */
typedef int (*tc_journal_rejected_fn)(void *arg, const char *id, const char *reason,
                                      const uint8_t *data, size_t len);
int tc_journal_summary(const char *dir, tc_journal_summary_t *out, tc_journal_rejected_fn fn,
                       void *arg);

/* ---- the layout before the journal ---- */

/* Whether STATE holds an older agent's results/ or spool/ and, unless
 * `dry`, move it into the journal STATE/journal once: the records of every
 * results/NAME.tcr become results of NAME (delivered unless the old spool
 * or its .spooled mark says otherwise), spool/ *.msg become waiting
 * messages and spool/rejected/ refused ones; then results/ and spool/ move
 * to STATE/migrated-<date>/, kept and never read again, and a line says so.
 * Nothing is changed when something cannot be read: the error names it.
 * *found (may be NULL) tells whether there was anything to migrate. */
int tc_journal_migrate(const char *state_dir, const char *agent_id, bool dry, bool *found);

#endif
