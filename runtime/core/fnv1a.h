/*
 * 64-bit FNV-1a, the one non-cryptographic hash of the runtime: vocabulary
 * and demo-task hash tables, the program cache's file names and checksums,
 * and the corpus fingerprint in a training checkpoint. Start from
 * CF_FNV1A_INIT and chain calls to hash several pieces as one.
 */
#ifndef CF_FNV1A_H
#define CF_FNV1A_H

#include <stddef.h>
#include <stdint.h>

#define CF_FNV1A_INIT 0xcbf29ce484222325ull
#define CF_FNV1A_PRIME 0x100000001b3ull

/* h extended by the bytes data[0..n). */
static inline uint64_t cf_fnv1a(uint64_t h, const void *data, size_t n)
{
    const unsigned char *p = data;
    for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * CF_FNV1A_PRIME;
    return h;
}

/* h extended by one whole word (not byte by byte): the corpus fingerprint
 * stored in checkpoints is defined this way, so it must stay so. */
static inline uint64_t cf_fnv1a_word(uint64_t h, uint64_t word)
{
    return (h ^ word) * CF_FNV1A_PRIME;
}

#endif
