/* The store's side of benchmark sets (aggregator export / import;
 * docs/benchmark-sets.md): the stored results of some device classes as
 * the messages that brought them, and importing such messages from another
 * database, recorded in the table imports. */
#ifndef TC_STORE_SET_H
#define TC_STORE_SET_H

#include "benchset.h"
#include "store.h"

#include <stdbool.h>
#include <stddef.h>

/* ---- export ---- */

/* A consistent snapshot for the export (a read-only repeatable-read
 * transaction); end it with tc_store_export_end. */
int tc_store_export_begin(tc_store_t *s);
void tc_store_export_end(tc_store_t *s);

/* What the set of device classes `names` holds: the header's devices and
 * models as JSON arrays (malloc'ed), and how many messages it will carry. */
int tc_store_export_summary(tc_store_t *s, char *const *names, size_t n, char **devices_json,
                            char **models_json, long long *messages);

/* Every message of the set, in order: the model graphs the devices' traces
 * need (with their conv and matmul lists), then the conv results (one
 * message per message stored, with its original id, its samples, every
 * algorithm tried and the message's matmul results; those with convs in the
 * order they were stored, then those of matmuls alone), then the traces
 * (with every iteration). `fn` gets each envelope (valid during the call)
 * and returns 0 to go on. */
typedef int (*tc_store_envelope_fn)(void *arg, const tc_envelope_t *env);
int tc_store_export_messages(tc_store_t *s, char *const *names, size_t n,
                             tc_store_envelope_fn fn, void *arg);

/* ---- import ---- */

/* Open the import of a set, in one transaction (a failure anywhere after
 * this is undone by tc_store_import_abort). *import_id gets its row in
 * imports; *again is true when the set was imported before (its row and
 * date into `when`), then nothing new is recorded about the import. While
 * the import is open, tc_store_put stores messages as imported
 * (store_internal.h). */
int tc_store_import_begin(tc_store_t *s, const tc_set_header_t *h, const char *file,
                          const char *file_sha256, long long *import_id, bool *again,
                          char *when, size_t when_size);

/* The name a device of the set takes here: its own, or the name its uuid
 * already has here, or, when a device class of that name exists here with
 * another description (kind, compute capability, multiprocessors, threads,
 * memory, library and its version), "NAME [SOURCE]" (numbered if that is
 * taken too). *renamed says whether it differs from the set's name. */
int tc_store_import_device_name(tc_store_t *s, const Traincast__V1__Device *d,
                                const char *source, char *name, size_t size, bool *renamed);

/* The SHA-256 of the whole file, known once it was read to its end. */
int tc_store_import_record_file(tc_store_t *s, const char *file_sha256);

/* Record the counts and the devices (renamed: "OLD -> NEW" each, with the
 * uuids whose original name to keep), set the imported devices' last_seen
 * from `devices_seen_json` (tc_set_header_t; may be NULL) and commit. */
int tc_store_import_finish(tc_store_t *s, long long stored, long long duplicates,
                           char *const *devices, size_t n_devices, char *const *renamed,
                           char *const *renamed_uuids, char *const *original_names,
                           size_t n_renamed, const char *devices_seen_json);
void tc_store_import_abort(tc_store_t *s);

#endif
