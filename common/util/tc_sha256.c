#include "tc_sha256.h"

#include <stdlib.h>

void tc_sha256_init(tc_sha256_t *s)
{
    /* 0 first time, 1 after; -1 only when the library cannot work at all
     * (no entropy source), which SHA-256 does not need. */
    int initialised = sodium_init();
    (void)initialised;
    crypto_hash_sha256_init(s);
}

void tc_sha256_update(tc_sha256_t *s, const void *data, size_t len)
{
    crypto_hash_sha256_update(s, data, len);
}

void tc_sha256_final(tc_sha256_t *s, uint8_t digest[32])
{
    crypto_hash_sha256_final(s, digest);
}

void tc_sha256_final_hex(tc_sha256_t *s, char hex[65])
{
    uint8_t d[crypto_hash_sha256_BYTES];
    tc_sha256_final(s, d);
    sodium_bin2hex(hex, 65, d, sizeof d);
}

void tc_sha256_hex(const void *data, size_t len, char hex[65])
{
    tc_sha256_t s;
    tc_sha256_init(&s);
    tc_sha256_update(&s, data, len);
    tc_sha256_final_hex(&s, hex);
}
