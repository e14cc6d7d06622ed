/* Philox4x32-10 and dropout numbers, the host twin of cl/common.h. */
#include "ref_philox.h"

void ref_philox4x32_10(const uint32_t counter[4], const uint32_t key[2], uint32_t out[4])
{
    uint32_t c0 = counter[0], c1 = counter[1], c2 = counter[2], c3 = counter[3];
    uint32_t k0 = key[0], k1 = key[1];
    for (int r = 0; r < 10; r++) {
        const uint64_t p0 = (uint64_t)0xD2511F53u * c0, p1 = (uint64_t)0xCD9E8D57u * c2;
        const uint32_t hi0 = (uint32_t)(p0 >> 32), lo0 = (uint32_t)p0;
        const uint32_t hi1 = (uint32_t)(p1 >> 32), lo1 = (uint32_t)p1;
        c0 = hi1 ^ c1 ^ k0;
        c1 = lo1;
        c2 = hi0 ^ c3 ^ k1;
        c3 = lo0;
        k0 += 0x9E3779B9u; /* the key schedule ("Weyl" constants) */
        k1 += 0xBB67AE85u;
    }
    out[0] = c0, out[1] = c1, out[2] = c2, out[3] = c3;
}

float ref_dropout_uniform(uint64_t seed, uint32_t step, uint32_t tensor, uint64_t index)
{
    /* Four consecutive elements share one counter and take one word each. */
    const uint32_t ctr[4] = {(uint32_t)(index >> 2), (uint32_t)(index >> 34), tensor, step};
    const uint32_t key[2] = {(uint32_t)seed, (uint32_t)(seed >> 32)};
    uint32_t r[4];
    ref_philox4x32_10(ctr, key, r);
    return (float)(r[index & 3] >> 8) * (1.0f / 16777216.0f);
}

bool ref_dropout_kept(const ref_dropout *d, uint64_t index)
{
    if (!d || !(d->p > 0.0f)) return true;
    return !(ref_dropout_uniform(d->seed, d->step, d->site, index) < d->p);
}

double ref_dropout_scale(const ref_dropout *d, uint64_t index)
{
    if (!d || !(d->p > 0.0f)) return 1.0;
    return ref_dropout_kept(d, index) ? 1.0 / (1.0 - (double)d->p) : 0.0;
}

void ref_dropout_backward(double *dx, const double *dout, size_t n, const ref_dropout *dropout)
{
    for (size_t i = 0; i < n; i++) dx[i] = dout[i] * ref_dropout_scale(dropout, i);
}
