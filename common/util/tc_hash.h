/* FNV-1a, the one non-cryptographic hash of the tree: hash tables, worker
 * choice, derived names. Not for anything an adversary chooses to collide
 * (SHA-256 via libsodium is there for that). */
#ifndef TC_HASH_H
#define TC_HASH_H

#include <stddef.h>
#include <stdint.h>

#define TC_FNV32_INIT 2166136261u
#define TC_FNV64_INIT 14695981039346656037ull

/* Continue hash h over n bytes (start with TC_FNV32_INIT). */
static inline uint32_t tc_fnv1a32(uint32_t h, const void *data, size_t n)
{
    const unsigned char *p = data;
    for (size_t i = 0; i < n; i++)
        h = (h ^ p[i]) * 16777619u;
    return h;
}

/* The 32-bit hash of a string (NULL hashes as ""). */
static inline uint32_t tc_fnv1a32_str(const char *s)
{
    uint32_t h = TC_FNV32_INIT;
    for (; s && *s; s++)
        h = (h ^ (unsigned char)*s) * 16777619u;
    return h;
}

/* Continue 64-bit hash h over a string (start with TC_FNV64_INIT). */
static inline uint64_t tc_fnv1a64_str(uint64_t h, const char *s)
{
    for (; s && *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

/* One more byte of a 64-bit hash (e.g. a separator between strings). */
static inline uint64_t tc_fnv1a64_byte(uint64_t h, unsigned char c)
{
    return (h ^ c) * 1099511628211ull;
}

#endif
