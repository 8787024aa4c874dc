/* Wire helpers: message ids, envelope packing with size caps, names of
 * enum values as stored in the database. */
#ifndef TC_WIRE_H
#define TC_WIRE_H

#include "traincast.pb-c.h"

#include <stddef.h>
#include <stdint.h>

#define TC_PROTOCOL_VERSION 1u
/* Default cap on one message; both ends enforce it before unpacking. */
#define TC_MAX_MESSAGE_BYTES (64u * 1024u * 1024u)
#define TC_MSGID_LEN 26

typedef Traincast__V1__Envelope tc_envelope_t;

/* Microseconds since the Unix epoch. */
int64_t tc_now_us(void);

/* A new ULID: 26 Crockford base32 characters, time-ordered (millisecond
 * timestamp first) and monotonic within one process. `out` holds 27 bytes. */
void tc_msgid_new(char out[TC_MSGID_LEN + 1]);

/* True if `id` is a syntactically valid message id. */
int tc_msgid_valid(const char *id);

/* Fill protocol version, a new message id (copied into `id_buf`, which must
 * outlive the envelope), agent id and sent time. */
void tc_envelope_stamp(tc_envelope_t *env, const char *agent_id, char id_buf[TC_MSGID_LEN + 1]);

/* Serialize. *buf is malloc'ed; caller frees. */
int tc_envelope_pack(const tc_envelope_t *env, uint8_t **buf, size_t *len);

/* Deserialize, refusing more than `max_bytes` (0: TC_MAX_MESSAGE_BYTES)
 * before unpacking. Free with tc_envelope_free. */
int tc_envelope_unpack(const uint8_t *buf, size_t len, size_t max_bytes, tc_envelope_t **out);
void tc_envelope_free(tc_envelope_t **env_p);

/* "hello", "conv_results", ... ; "none" when no body is set. */
const char *tc_body_name(const tc_envelope_t *env);

/* Names as stored in the database and shown to users, and their parsers
 * (return 0 or TC_EINVAL naming `what`). */
const char *tc_direction_name(Traincast__V1__Direction d);     /* fwd, bwd_data, bwd_filter */
const char *tc_policy_name(Traincast__V1__Policy p);           /* heuristic, exhaustive */
const char *tc_dtype_name(Traincast__V1__DType t);             /* fp32, tf32, fp16, bf16 */
const char *tc_layout_name(Traincast__V1__Layout l);           /* nchw, nhwc */
const char *tc_device_kind_name(Traincast__V1__DeviceKind k);  /* cpu, cuda */
const char *tc_algo_status_name(Traincast__V1__AlgoStatus s);  /* ok, not_supported, ... */
const char *tc_trace_status_name(Traincast__V1__TraceStatus s);/* ok, oom, failed */
int tc_direction_parse(const char *s, Traincast__V1__Direction *out);
int tc_policy_parse(const char *s, Traincast__V1__Policy *out);
int tc_dtype_parse(const char *s, Traincast__V1__DType *out);
int tc_layout_parse(const char *s, Traincast__V1__Layout *out);

#endif
