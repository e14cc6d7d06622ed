/*
 * The 16-bit formats (bf16, fp16) in double arithmetic: rounding done from
 * the format's parameters (significand bits, exponent range), sharing nothing
 * with the integer bit manipulations of cl/cast.cl and runtime/core/half.c.
 * The reference of three users: the cast op (conf_cast.c), the rounding to
 * storage (conf_round.c) and the host's conversions (tests/host/test_half.c,
 * which runs without a device, hence here and not in conf_cast.c).
 */
#ifndef REF_HALF_H
#define REF_HALF_H

#include <stdint.h>

typedef enum { REF_BF16, REF_F16 } ref_half_format;

/* The format's bit pattern of x rounded to nearest, ties to even (IEEE 754
 * roundTiesToEven with the format's subnormals; beyond the largest finite
 * value, infinity). NaN: bf16 0x7FC0 (PyTorch's), fp16 0x7E00 with x's sign. */
uint16_t ref_half_round(double x, ref_half_format f);

/* The value of a bit pattern (exact in double); NaN for NaN patterns. */
double ref_half_value(uint16_t bits, ref_half_format f);

/* The largest finite value (bf16 3.3895e38, fp16 65504). */
double ref_half_max(ref_half_format f);

#endif
