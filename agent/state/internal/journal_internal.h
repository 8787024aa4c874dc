/* Private to the journal (journal.c: the index, opening, writing and
 * reading; journal_record.c: a record's frame and bytes; journal_migrate.c:
 * the older layout). */
#ifndef TC_JOURNAL_INTERNAL_H
#define TC_JOURNAL_INTERNAL_H

#include "journal.h"

#include "tc_buf.h"

#include <pthread.h>

#define TC_JOURNAL_MAGIC "TCJRNL01"
#define TC_JOURNAL_MAGIC_LEN 8
#define TC_JOURNAL_HEAD 8 /* u32 body length, u32 CRC */
/* type byte, id, u16 name length, name */
#define TC_JOURNAL_PREFIX_MAX (1 + TC_MSGID_LEN + 2 + TC_JOURNAL_NAME_MAX)

enum { TC_JREC_RESULT = 'R', TC_JREC_ACKED = 'A', TC_JREC_REFUSED = 'X', TC_JREC_REQUEUED = 'Q' };
enum { TC_JSTATE_WAITING, TC_JSTATE_ACKED, TC_JSTATE_REFUSED };

/* One message of the log. */
typedef struct {
    char id[TC_MSGID_LEN + 1];
    uint8_t state;
    uint32_t name;              /* index into names; 0 is "" */
    uint64_t frame;             /* offset of its R record */
    uint64_t off;               /* of the packed envelope */
    uint32_t len;
    uint64_t reason_off;        /* of the last refusal's reason */
    uint32_t reason_len;
} tc_jentry_t;

struct tc_journal {
    char *dir;
    char path[4200];
    int fd;
    bool readonly;
    pthread_mutex_t lock;
    uint64_t end;               /* where the next record goes */
    tc_jentry_t *e;             /* in log order */
    size_t n, cap;
    uint32_t *slots;            /* hash of ids: entry index + 1, 0 empty */
    size_t n_slots;
    uint32_t *wait;             /* waiting entries, sorted by id */
    size_t n_wait, cap_wait;
    size_t rejected;
    char **names;
    size_t n_names;
    uint64_t cursor_written;
    size_t acks_since_cursor;
};

/* A record as the scan reads it. `payload` (the envelope of R, the reason
 * of X) is NULL below the cursor, where only its place is known. */
typedef struct {
    char type;
    char id[TC_MSGID_LEN + 1];
    const char *name;
    size_t name_len;
    uint64_t frame, payload_off;
    uint32_t payload_len;
} tc_jrecord_t;

/* Frame one record into `b`. */
void tc_journal_frame(tc_buf_t *b, char type, const char *id, const char *name,
                      const void *payload, size_t payload_len);

/* For the migration: append `id` (unless the log holds it) as a result of
 * `name` in `state` (TC_JSTATE_*; a refusal with `reason`), without a
 * flush; *added tells whether it was new. */
int tc_journal_migrate_put(tc_journal_t *self, const char *name, const char *id,
                           const uint8_t *data, size_t len, uint8_t state, const char *reason,
                           bool *added);
/* Flush the log to disk. */
int tc_journal_sync(tc_journal_t *self);

/* Parse a record's body prefix: `have` bytes of a `body_len`-byte body at
 * log offset `body_off`. False when it is not a well-formed record. */
bool tc_journal_parse(const uint8_t *p, size_t have, uint32_t body_len, uint64_t body_off,
                      tc_jrecord_t *r);
/* A little-endian u32 (the frame's length and CRC). */
uint32_t tc_journal_u32(const uint8_t *p);

/* Read up to `len` bytes at `off`; *got gets how many (short at the end). */
int tc_journal_pread_some(const tc_journal_t *self, uint8_t *buf, size_t len, uint64_t off,
                          size_t *got);
/* pread all of [off, off + len). */
int tc_journal_pread(const tc_journal_t *self, void *buf, size_t len, uint64_t off);

#endif
