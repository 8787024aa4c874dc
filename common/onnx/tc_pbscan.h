/* A pre-flight check of protobuf wire bytes before protobuf-c unpacks them.
 *
 * protobuf-c's unpacker recurses once per nested message and allocates a
 * whole struct for every sub-message, even an empty two-byte one, so a
 * hostile file well under any size cap could exhaust the stack or ask for
 * many times its size in memory. This scan walks the bytes iteratively with
 * the message descriptors, rejects nesting deeper than `max_depth` and
 * estimates what unpacking would allocate (message structs, repeated
 * arrays, strings, unknown fields); over `max_alloc` it fails. It also
 * rejects malformed varints, lengths past the end and group wire types. */
#ifndef TC_PBSCAN_H
#define TC_PBSCAN_H

#include <protobuf-c/protobuf-c.h>

#include <stddef.h>
#include <stdint.h>

typedef struct {
    size_t messages;    /* sub-messages, the top one included */
    size_t max_depth;   /* deepest nesting seen (top message = 1) */
    size_t alloc_bytes; /* estimated allocation of protobuf-c's unpack */
} tc_pbscan_stats_t;

/* Returns 0, TC_EPARSE (malformed, naming the offset) or TC_ELIMIT (too
 * deep, too much to allocate). `stats` may be NULL. */
int tc_pbscan(const ProtobufCMessageDescriptor *desc, const uint8_t *data, size_t len,
              size_t max_depth, size_t max_alloc, tc_pbscan_stats_t *stats);

#endif
