/* SHA-256 by libsodium (crypto_hash_sha256): model ids hash the ONNX bytes
 * they came from, benchmark sets checksum their records. The first call
 * initialises libsodium (sodium_init, safe from any thread). */
#ifndef TC_SHA256_H
#define TC_SHA256_H

#include <sodium.h>
#include <stddef.h>
#include <stdint.h>

typedef crypto_hash_sha256_state tc_sha256_t;

void tc_sha256_init(tc_sha256_t *s);
void tc_sha256_update(tc_sha256_t *s, const void *data, size_t len);
void tc_sha256_final(tc_sha256_t *s, uint8_t digest[32]);

/* Final digest as lowercase hex into `hex` (65 bytes with the NUL). */
void tc_sha256_final_hex(tc_sha256_t *s, char hex[65]);

/* One call: lowercase hex into `hex` (65 bytes with the NUL). */
void tc_sha256_hex(const void *data, size_t len, char hex[65]);

#endif
