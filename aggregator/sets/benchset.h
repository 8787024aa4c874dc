/* Benchmark set files: what `aggregator export` writes and `aggregator
 * import` reads (docs/benchmark-sets.md). No database here.
 *
 * A set is an 8-byte signature, then records, each
 *     u32 little-endian payload length | u8 type | payload | 8 bytes check
 * where the check is the first 8 bytes of SHA-256(type byte, payload).
 * Types: 'H' the header (JSON, the first record), 'E' a packed
 * traincast.v1.Envelope (conv_results, model_graph or train_trace), 'T' the
 * trailer (JSON, the last record: the number of envelopes and the SHA-256 of
 * every byte before the trailer). Nothing follows the trailer.
 *
 * The writer writes FILE.partial and renames it to FILE when finished, so
 * a set that exists is complete. The reader checks every record before the
 * caller uses it and names the first bad one. */
#ifndef TC_BENCHSET_H
#define TC_BENCHSET_H

#include "tc_json.h"
#include "tc_wire.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define TC_SET_FORMAT "traincast-benchmark-set"
#define TC_SET_FORMAT_VERSION 1
#define TC_SET_MAX_HEADER (4u * 1024u * 1024u)

/* What the header says. Strings are owned by the reader or the caller. */
typedef struct {
    int format_version;
    const char *set_id;            /* a ULID, unique per export */
    const char *source;            /* the exporter's label for where it came from */
    const char *traincast_version; /* of the exporter */
    int schema_version;            /* of the database it came from */
    int protocol_version;          /* of the envelopes */
    const char *exported_at;       /* ISO 8601 UTC */
    long long records;             /* envelopes that follow */
    /* The devices: a JSON array of objects (name, uuid, kind, conv_results,
     * matmul_results, traces, last_seen), as the writer got it (already JSON
     * text); as read, their names only. */
    const char *devices_json;
    const char *models_json;       /* a JSON array of model ids */
    /* As read: when the exporting database last heard of each device, a JSON
     * array of {"uuid", "last_seen" (ISO 8601 UTC)} for the devices whose
     * header entry has both (sets written before last_seen was added: []). */
    const char *devices_seen_json;
} tc_set_header_t;

typedef struct tc_set_writer tc_set_writer_t;

/* Create PATH.partial and write the signature and the header. */
int tc_set_writer_open(const char *path, const tc_set_header_t *h, tc_set_writer_t **out);
/* Append one envelope. */
int tc_set_writer_put(tc_set_writer_t *self, const tc_envelope_t *env);
/* Write the trailer, fsync, and rename PATH.partial to PATH. */
int tc_set_writer_finish(tc_set_writer_t *self);
/* Close; a writer not finished removes its PATH.partial. Accepts NULL. */
void tc_set_writer_destroy(tc_set_writer_t **self_p);
/* Envelopes written so far. */
long long tc_set_writer_count(const tc_set_writer_t *self);

typedef struct tc_set_reader tc_set_reader_t;

/* Open PATH and read and check its signature and header. TC_EINVAL naming
 * what is wrong (not a set, truncated, corrupt header); TC_EVERSION for a
 * set of a newer format (upgrade traincast). */
int tc_set_reader_open(const char *path, tc_set_reader_t **out);
/* The same from an open stream (taken over: closed by destroy, also on
 * failure); `name` names it in messages. */
int tc_set_reader_open_stream(FILE *f, const char *name, tc_set_reader_t **out);
const tc_set_header_t *tc_set_reader_header(const tc_set_reader_t *self);
/* The next envelope into *env (caller frees with tc_envelope_free); *env is
 * NULL after the trailer, which has then been checked (count, SHA-256, end
 * of file). TC_EINVAL names the bad record: "record N of M: ...". */
int tc_set_reader_next(tc_set_reader_t *self, tc_envelope_t **env);
/* The 1-based number of the record last read (the header is record 0). */
long long tc_set_reader_record(const tc_set_reader_t *self);
/* SHA-256 of the whole file, hex; valid once next returned the end. */
const char *tc_set_reader_sha256(const tc_set_reader_t *self);
void tc_set_reader_destroy(tc_set_reader_t **self_p);

#endif
