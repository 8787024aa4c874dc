/* Synthetic conv results for transport tests and the transport benchmark:
 * well-formed ConvResults envelopes with plausible values, written to result
 * files as `agent bench --out` writes them. Deterministic apart from the
 * message ids. Uses only tc_common (bench/ compiles this file too). */
#ifndef TC_TEST_GEN_H
#define TC_TEST_GEN_H

#include "tc_wire.h"

#include <stddef.h>

typedef struct {
    const char *agent_id;      /* envelope agent id */
    const char *device_name;   /* e.g. "gen-cpu" */
    const char *device_uuid;   /* unique per device */
    unsigned results_per_message;
    unsigned candidates;       /* algorithms tried per result */
    unsigned samples;          /* timed repetitions kept per result */
    unsigned distinct_configs; /* configs cycle through this many shapes */
} tc_gen_opts_t;

/* Defaults: 1 result per message, 3 candidates, 10 samples, 64 shapes. */
tc_gen_opts_t tc_gen_defaults(const char *agent_id);

/* Append `n` messages (new ids) to the result file at `path`. Message k
 * holds results first_index + k * results_per_message ... */
int tc_gen_write(const char *path, const tc_gen_opts_t *o, size_t first_index, size_t n);

/* Pack one message (result index `index`) with a new id. *buf is malloc'ed. */
int tc_gen_pack(const tc_gen_opts_t *o, size_t index, uint8_t **buf, size_t *len,
                char id_out[TC_MSGID_LEN + 1]);

#endif
