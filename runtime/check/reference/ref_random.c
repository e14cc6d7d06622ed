/* splitmix64: tiny, fast, and good enough for test data. */
#include "ref_random.h"

ref_rng ref_rng_new(uint64_t seed) { return (ref_rng){seed * 0x9E3779B97F4A7C15ULL + 1}; }

uint64_t ref_rng_next(ref_rng *r)
{
    uint64_t z = (r->state += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

double ref_rng_uniform(ref_rng *r, double lo, double hi)
{
    return lo + (hi - lo) * (double)(ref_rng_next(r) >> 11) * (1.0 / 9007199254740992.0);
}

void ref_fill_uniform(ref_rng *r, float *out, double *copy, size_t n, double lo, double hi)
{
    for (size_t i = 0; i < n; i++) {
        out[i] = (float)ref_rng_uniform(r, lo, hi);
        if (copy) copy[i] = out[i];
    }
}
