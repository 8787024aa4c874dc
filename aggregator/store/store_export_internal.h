/* Shared by store_export.c (the export's queries) and store_export_msg.c
 * (rebuilding each message) only. */
#ifndef TC_STORE_EXPORT_INTERNAL_H
#define TC_STORE_EXPORT_INTERNAL_H

#include "store_set.h"

#include <libpq-fe.h>

/* Microseconds since the epoch of a timestamptz column, as SQL. */
#define TC_SQL_US(col) "(extract(epoch FROM " col ") * 1000000)::numeric::bigint"

/* The devices of the classes: id list for the export's queries. */
#define TC_SQL_SET_DEVICES "(SELECT device_id FROM devices WHERE name = ANY ($1::text[]))"

/* The columns of a devices row `d` a Device is rebuilt from, in the order
 * store_export_msg.c reads them: TC_SQL_DEVICE_NCOLS of them. */
#define TC_SQL_DEVICE_NCOLS 17
#define TC_SQL_DEVICE_COLS                                                                      \
    "d.kind, d.name, d.uuid, d.compute_capability, d.multiprocessors, d.threads, "              \
    "d.memory_bytes, d.clock_mhz, d.memory_clock_mhz, d.driver_version, d.runtime_version, "    \
    "d.library, d.library_version, d.host, d.gpu_index, d.framework, d.routing"

/* A cell as a number; NULL reads as 0. */
long long tc_store_ll(PGresult *res, int r, int c);

/* The set's model graphs (params[0]: the device names as a text[]
 * literal), one message each, to fn. */
int tc_store_export_models(tc_store_t *s, const char *const *params, tc_store_envelope_fn fn,
                           void *arg);
/* Row m of `msgs` (message id, agent id, sent at, backend, then
 * TC_SQL_DEVICE_COLS) as its ConvResults message, to fn. */
int tc_store_export_conv_message(tc_store_t *s, PGresult *msgs, int m,
                                 tc_store_envelope_fn fn, void *arg);
/* Row t of `tr` (the trace query of tc_store_export_messages) as its
 * TrainTrace message, to fn. */
int tc_store_export_trace(tc_store_t *s, PGresult *tr, int t, tc_store_envelope_fn fn,
                          void *arg);

#endif
