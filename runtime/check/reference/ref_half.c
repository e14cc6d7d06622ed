/* The 16-bit formats in double arithmetic (ref_half.h). */
#include "ref_half.h"

#include <math.h>

typedef struct {
    int mant;     /* stored significand bits */
    int emin;     /* exponent of the smallest normal */
    int emax;     /* exponent of the largest finite */
    int bias;
    uint16_t nan; /* the quiet NaN this reference gives */
} format;

static format fmt(ref_half_format f)
{
    return f == REF_BF16 ? (format){7, -126, 127, 127, 0x7FC0}
                         : (format){10, -14, 15, 15, 0x7E00};
}

static uint16_t inf_bits(format F) { return (uint16_t)(((1u << (15 - F.mant)) - 1u) << F.mant); }

double ref_half_max(ref_half_format f)
{
    const format F = fmt(f);
    return ldexp(2.0 - ldexp(1.0, -F.mant), F.emax);
}

uint16_t ref_half_round(double x, ref_half_format f)
{
    const format F = fmt(f);
    const uint16_t sign = signbit(x) ? 0x8000 : 0;
    if (isnan(x)) return f == REF_BF16 ? F.nan : (uint16_t)(sign | F.nan);
    const double a = fabs(x);
    if (isinf(a)) return (uint16_t)(sign | inf_bits(F));
    if (a == 0.0) return sign;
    int k;
    frexp(a, &k); /* a = m 2^k, m in [0.5, 1): a's exponent is k - 1 */
    const int e = k - 1 < F.emin ? F.emin : k - 1;
    /* a in units of the format's spacing at that exponent, rounded to the
     * nearest integer, ties to even (the default rounding mode) */
    const double q = nearbyint(ldexp(a, F.mant - e));
    const double v = ldexp(q, e - F.mant);
    if (v > ref_half_max(f)) return (uint16_t)(sign | inf_bits(F));
    if (v < ldexp(1.0, F.emin)) return (uint16_t)(sign | (uint16_t)q); /* subnormal or 0 */
    frexp(v, &k); /* rounding may have carried into the next exponent */
    const int ev = k - 1;
    const double frac = ldexp(v, F.mant - ev) - ldexp(1.0, F.mant);
    return (uint16_t)(sign | (uint16_t)((ev + F.bias) << F.mant) | (uint16_t)frac);
}

double ref_half_value(uint16_t bits, ref_half_format f)
{
    const format F = fmt(f);
    const double s = bits & 0x8000 ? -1.0 : 1.0;
    const int field = (bits & 0x7FFF) >> F.mant;
    const double m = (double)(bits & ((1u << F.mant) - 1u));
    if (field == (1 << (15 - F.mant)) - 1) return m == 0.0 ? s * INFINITY : NAN;
    if (field == 0) return s * ldexp(m, F.emin - F.mant);
    return s * ldexp(ldexp(1.0, F.mant) + m, field - F.bias - F.mant);
}
