/*
 * splitmix64 (Steele, Lea, Flood 2014; Vigna's public-domain constants): a
 * tiny, fully specified PRNG for host-side data decisions (shuffles, the demo
 * generator). Same seed -> same numbers on every machine and libc, which
 * rand() does not promise. Not for anything security-related.
 */
#ifndef CF_SPLITMIX_H
#define CF_SPLITMIX_H

#include <stdint.h>

/* The splitmix64 finaliser: a bijective 64-bit mix. */
static inline uint64_t cf_mix64(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* Next number of the stream whose state is *state. */
static inline uint64_t cf_splitmix64(uint64_t *state)
{
    *state += 0x9E3779B97F4A7C15ull;
    return cf_mix64(*state);
}

/* Uniform in [0, bound), bound > 0, without modulo bias (rejection). */
static inline uint64_t cf_rng_below(uint64_t *state, uint64_t bound)
{
    uint64_t limit = UINT64_MAX - UINT64_MAX % bound; /* a multiple of bound */
    uint64_t r;
    do r = cf_splitmix64(state);
    while (r >= limit);
    return r % bound;
}

/* Uniform in [0, 1) with 53 random bits. */
static inline double cf_rng_unit(uint64_t *state)
{
    return (double)(cf_splitmix64(state) >> 11) * 0x1.0p-53;
}

#endif
