/* SHA-256 (FIPS 180-4), small and dependency-free: model ids hash the ONNX
 * bytes they came from. */
#ifndef TC_SHA256_H
#define TC_SHA256_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
    uint32_t state[8];
    uint64_t bytes;
    uint8_t block[64];
    size_t fill;
} tc_sha256_t;

void tc_sha256_init(tc_sha256_t *s);
void tc_sha256_update(tc_sha256_t *s, const void *data, size_t len);
void tc_sha256_final(tc_sha256_t *s, uint8_t digest[32]);

/* One call: lowercase hex into `hex` (65 bytes with the NUL). */
void tc_sha256_hex(const void *data, size_t len, char hex[65]);

#endif
