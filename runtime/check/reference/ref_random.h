/* Deterministic random numbers for tests and conformance checks (splitmix64). */
#ifndef REF_RANDOM_H
#define REF_RANDOM_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
    uint64_t state;
} ref_rng;

ref_rng ref_rng_new(uint64_t seed);
uint64_t ref_rng_next(ref_rng *r);
double ref_rng_uniform(ref_rng *r, double lo, double hi);
/* n floats uniform in [lo, hi); `copy` (may be NULL) receives the same values. */
void ref_fill_uniform(ref_rng *r, float *out, double *copy, size_t n, double lo, double hi);

#endif
