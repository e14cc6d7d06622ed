/*
 * The tolerance rules of docs/TESTING.md, shared by the cmocka tests and
 * `clformer check`: an fp32 device result against a double reference.
 */
#ifndef REF_COMPARE_H
#define REF_COMPARE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct {
    double max_abs_err;  /* largest |y - ref| */
    double max_rel_err;  /* largest |y - ref| / max(|ref|, 1e-30) over finite refs */
    double nmse;         /* sum (y-ref)^2 / sum ref^2 (0 when ref is all zero and y equals it) */
    size_t worst;        /* index of the element furthest outside (or closest to) its bound */
    double worst_value, worst_ref, worst_bound;
    double tol_abs, tol_rel; /* the rule's constants, for reports */
    const char *rule;        /* the rule in words, e.g. "|y-r| <= 2e-5 + 1e-5|r|" */
    bool pass;
    const char *why;     /* NULL when passing: "nan mismatch", "element bound", "nmse" */
} ref_cmp;

/* softmax, layernorm, GELU, embedding forward: |y - r| <= 2e-5 + 1e-5 |r|,
 * and NaN/Inf at identical positions. */
ref_cmp ref_compare_forward(const float *y, const double *ref, size_t n);

/* attention forward, every backward: NMSE <= 1e-7 and
 * |g - r| <= 1e-4 * max|r| + 1e-5. */
ref_cmp ref_compare_grad(const float *g, const double *ref, size_t n);

/* GEMM: |c - r| <= 1e-5 * bound, bound = (|A| |B|) elementwise (plus
 * |beta C0| where beta != 0), with a floor of 1e-30. */
ref_cmp ref_compare_gemm(const float *c, const double *ref, const double *bound, size_t n);

/* Casts: bit-exact. Each y equals ref in value and in the sign of zero; a
 * NaN only where ref is NaN (any NaN). */
ref_cmp ref_compare_exact(const float *y, const double *ref, size_t n);

/* Casts to a 16-bit format: y[i] == ref[i] bit for bit. nan_above: 0, NaN
 * patterns must match too; else a pattern whose magnitude bits exceed it is
 * a NaN (0x7C00 fp16, 0x7F80 bf16) and any NaN matches a NaN. */
ref_cmp ref_compare_bits16(const uint16_t *y, const uint16_t *ref, size_t n, uint16_t nan_above);

/*
 * 16-bit storage (docs/TESTING.md, "Per precision"): y was computed in fp32
 * from inputs already rounded to the format and stored rounded to it
 * (format 1: bfloat16, 2: IEEE binary16, clformer_precision's numbers).
 * Passes when every finite y is a value of the format, NaN/Inf sit where the
 * reference has them, and per element
 *     |y - r| <= atol + rtol |r| + fp32_i + extra_i
 * with PyTorch assert_close's defaults for the format (bf16: atol 1e-5, rtol
 * 1.6e-2; fp16: atol 1e-5, rtol 1e-3), which hold the output's own rounding
 * (at most half an ulp, 2^-8 |y| in bf16 and 2^-11 |y| in fp16: a quarter and
 * a half of rtol), and fp32_i the allowance of `rule`, the fp32 rule for the
 * arithmetic before that rounding (REF_RULE_FORWARD: 2e-5 + 1e-5 |r|;
 * REF_RULE_GRAD: 1e-4 max|r| + 1e-5, and NMSE <= rtol^2 in place of 1e-7, the
 * NMSE of results each within rtol, plus sum extra^2 / sum r^2 with extra;
 * REF_RULE_GEMM: 1e-5 gemm_bound_i).
 * extra (may be NULL): a rounding inside the op that the output carries, in
 * the same units (e.g. 2^-8 (|P| |V|)_i for probabilities stored in bf16
 * before P V), worked out by the caller from the reference.
 */
typedef enum { REF_RULE_FORWARD, REF_RULE_GRAD, REF_RULE_GEMM } ref_rule;
ref_cmp ref_compare_stored(const float *y, const double *ref, size_t n, int format, ref_rule rule,
                           const double *gemm_bound, const double *extra);
/* An fp32 gradient (not stored rounded) computed from values that were:
 * the gradient rule with extra_i, the most those roundings can carry into
 * element i, added to each element's bound, and to the NMSE bound as
 * sum extra^2 / sum r^2. E.g. dbias summing dinp stored in bf16:
 * extra = 2^-8 sum |dinp| over its column. */
ref_cmp ref_compare_grad_carried(const float *g, const double *ref, size_t n,
                                 const double *extra);
/* Whether y is a value of the format (1 bf16, 2 fp16): infinities and NaN
 * are; a finite fp16 value needs |y| <= 65504. */
bool ref_is_format_value(float y, int format);
/* Half an ulp relative, the most rounding to the format moves a normal value:
 * 2^-8 (bf16), 2^-11 (fp16); 0 for any other format. */
double ref_format_unit_roundoff(int format);

#endif
