/* ZeroMQ helpers shared by the agent and the aggregator: checked calls,
 * CURVE key files, socket setup and envelope frames.
 *
 * Key files are z85 text. NAME.key holds the secret key (mode 0600) and
 * NAME.pub the public key followed by a label, one line, so that a .pub file
 * can be appended to the aggregator's allowlist as it is. */
#ifndef TC_ZMQ_H
#define TC_ZMQ_H

#include "tc_wire.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TC_KEY_Z85_LEN 40

/* Record a failed ZeroMQ call (its text, file:line and zmq_strerror) and
 * return TC_ENET. */
int tc_zmq_fail(const char *call, const char *file, int line);

/* Evaluate a ZeroMQ call that returns -1 on failure: 0 or TC_ENET with the
 * failure recorded. */
#define TC_ZMQ(call) ((call) == -1 ? tc_zmq_fail(#call, __FILE__, __LINE__) : 0)
/* The same inside a function with `int rc` and an `err` label. */
#define TC_ZMQ_TRY(call)                                                                           \
    do {                                                                                           \
        if ((call) == -1) {                                                                        \
            rc = tc_zmq_fail(#call, __FILE__, __LINE__);                                           \
            goto err;                                                                              \
        }                                                                                          \
    } while (0)

typedef struct {
    char public_z85[TC_KEY_Z85_LEN + 1];
    char secret_z85[TC_KEY_Z85_LEN + 1];
} tc_keypair_t;

/* 0 when this libzmq can do CURVE, else TC_EUNSUPPORTED saying what to do. */
int tc_curve_check(void);

/* True if `s` is exactly 40 z85 characters. */
bool tc_key_z85_valid(const char *s);

int tc_keypair_generate(tc_keypair_t *out);

/* Write DIR/NAME.key (0600) and DIR/NAME.pub ("<public> <label>\n"). An
 * existing NAME.key is TC_EINVAL unless `force`. DIR is created (0700). */
int tc_keypair_write(const char *dir, const char *name, const char *label,
                     const tc_keypair_t *kp, bool force);

/* Read a secret key file and derive its public key. A key file readable by
 * others is refused (TC_EINVAL) with the chmod to run. */
int tc_keypair_read(const char *path, tc_keypair_t *out);

/* Read the first key of a public key file (or an allowlist line). */
int tc_pubkey_read(const char *path, char out[TC_KEY_Z85_LEN + 1]);

/* Common socket options: linger, size cap (ZMQ_MAXMSGSIZE), high-water
 * marks. `max_bytes` 0 means TC_MAX_MESSAGE_BYTES. */
int tc_zmq_socket_setup(void *sock, size_t max_bytes, int linger_ms);

/* Pack and send one envelope as a single frame (after `route`, a routing
 * id frame of `route_len` bytes when not NULL). `flags` is passed to
 * zmq_send (e.g. ZMQ_DONTWAIT). */
int tc_zmq_send_envelope(void *sock, const void *route, size_t route_len,
                         const tc_envelope_t *env, int flags);

/* Read one monitor event (two frames) without blocking. Returns 1 when one
 * was read, 0 when none is waiting, negative on failure. `addr` may be
 * NULL. */
int tc_zmq_monitor_read(void *mon, uint16_t *event, uint32_t *value, char *addr,
                        size_t addr_size);

/* A readable name for a socket monitor event ("handshake failed (auth)"). */
const char *tc_zmq_event_name(uint16_t event);

#endif
