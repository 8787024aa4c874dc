/* Result files: what `agent bench` and `agent trace` write with --out, and
 * `agent push` sends. A result file is a sequence of records, each a 4-byte
 * little-endian length followed by that many bytes of a packed Envelope.
 * Records are appended and flushed to disk one at a time, so a crash loses
 * at most the record being written; a truncated last record is reported and
 * ignored by readers (and cut off by the next writer), never half-used. */
#ifndef TC_RESULTFILE_H
#define TC_RESULTFILE_H

#include "tc_wire.h"

#include <stdbool.h>
#include <stddef.h>

typedef struct tc_resultfile tc_resultfile_t;

/* Open for appending, creating the file if needed. A truncated tail left by
 * a crash is cut off (with a warning). */
int tc_resultfile_open_append(const char *path, tc_resultfile_t **out);
/* Append one envelope and fsync. */
int tc_resultfile_append(tc_resultfile_t *self, const tc_envelope_t *env);
void tc_resultfile_close(tc_resultfile_t **self_p);

/* Read every complete record in order, calling `fn` with each unpacked
 * envelope (owned by the reader; valid during the call). `fn` returns 0 to
 * go on or a negative code to stop with that code. A missing file is
 * TC_ENOTFOUND unless `missing_ok` (then no records). `truncated` (may be
 * NULL) is set when an incomplete final record was skipped. */
typedef int (*tc_resultfile_fn)(const tc_envelope_t *env, void *arg);
int tc_resultfile_read(const char *path, bool missing_ok, tc_resultfile_fn fn, void *arg,
                       bool *truncated);

/* How much of a result file is whole: *whole_bytes the end of its last
 * complete record, *size the file's size (more when a record was cut short:
 * a file copied or written incompletely). Errors as tc_resultfile_read. */
int tc_resultfile_whole(const char *path, long long *whole_bytes, long long *size);

#endif
