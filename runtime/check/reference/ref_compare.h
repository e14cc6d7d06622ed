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

#endif
