/*
 * Shared by the host tests of the host provider's own products
 * (test_gemm_avx512, test_gemm_dots): the operands of one row-major product
 * in float and double, with leading dimensions 3 wider than needed, and the
 * check of a computed C against the double reference (beta 0: C starts as
 * NaN, which must stay out of the result and in the columns past n).
 */
#ifndef CF_TEST_HOST_PRODUCT_H
#define CF_TEST_HOST_PRODUCT_H

#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "ref_compare.h"
#include "ref_gemm.h"
#include "ref_random.h"

#include <math.h>
#include <stdlib.h>

typedef struct {
    bool ta, tb;
    int m, n, k, lda, ldb, ldc;
    float *a, *b, *c;
    double *a64, *b64, *c64;
} host_product;

/* op(A) (m, k) and op(B) (k, n) stored as ta and tb say, C (m, n), every
 * element uniform in [-1, 1] from `seed`. */
static inline host_product host_product_make(bool ta, bool tb, int m, int n, int k,
                                             uint64_t seed)
{
    host_product p = {.ta = ta, .tb = tb, .m = m, .n = n, .k = k};
    p.lda = (ta ? m : k) + 3, p.ldb = (tb ? k : n) + 3, p.ldc = n + 3;
    const size_t na = (size_t)(ta ? k : m) * p.lda, nb = (size_t)(tb ? n : k) * p.ldb,
                 nc = (size_t)m * p.ldc;
    p.a = malloc(na * 4), p.b = malloc(nb * 4), p.c = malloc(nc * 4);
    p.a64 = malloc(na * 8), p.b64 = malloc(nb * 8), p.c64 = malloc(nc * 8);
    assert_non_null(p.a64), assert_non_null(p.b64), assert_non_null(p.c64);
    ref_rng r = ref_rng_new(seed);
    ref_fill_uniform(&r, p.a, p.a64, na, -1, 1);
    ref_fill_uniform(&r, p.b, p.b64, nb, -1, 1);
    ref_fill_uniform(&r, p.c, p.c64, nc, -1, 1);
    return p;
}

static inline void host_product_drop(host_product *p)
{
    free(p->a), free(p->b), free(p->c), free(p->a64), free(p->b64), free(p->c64);
}

/* Computes C = alpha op(A) op(B) + beta C of p in place; false on failure. */
typedef bool (*host_product_fn)(host_product *p, float alpha, float beta);

/* The product `run` computes against the double reference; `what` names
 * the implementation in a failure. */
static inline void host_product_check(const char *what, host_product_fn run, bool ta, bool tb,
                                      int m, int n, int k, float alpha, float beta,
                                      uint64_t seed)
{
    host_product p = host_product_make(ta, tb, m, n, k, seed);
    const size_t nc = (size_t)m * p.ldc;
    if (beta == 0.0f)
        for (size_t i = 0; i < nc; i++) p.c[i] = NAN, p.c64[i] = 0.0;
    float *got = malloc(nc * 4);
    double *want = malloc(nc * 8), *bound = malloc(nc * 8); /* bound: m x n, dense */
    ref_gemm(ta, tb, m, n, k, alpha, p.a64, p.lda, p.b64, p.ldb, beta, p.c64, p.ldc, bound);
    assert_true(run(&p, alpha, beta));
    size_t w = 0; /* the m x n window of C; the columns past n stay as they were */
    for (int i = 0; i < m; i++)
        for (int j = 0; j < p.ldc; j++) {
            const size_t e = (size_t)i * p.ldc + j;
            if (j < n) got[w] = p.c[e], want[w++] = p.c64[e];
            else if (beta == 0.0f) assert_true(isnan(p.c[e]));
        }
    const ref_cmp r = ref_compare_gemm(got, want, bound, w);
    if (!r.pass)
        fail_msg("%s %dx%dx%d ta %d tb %d alpha %g beta %g: %s (element %zu: %g, want %g)", what,
                 m, n, k, ta, tb, (double)alpha, (double)beta, r.why, r.worst, r.worst_value,
                 r.worst_ref);
    free(got), free(want), free(bound);
    host_product_drop(&p);
}

#endif
