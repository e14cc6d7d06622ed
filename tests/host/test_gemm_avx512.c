/* The host provider's AVX-512 product (runtime/device/gemm_avx512.c) called
 * directly, no OpenCL device: against the double reference over sizes that
 * leave partial register tiles and span several blocks of each loop (k past
 * KC = 256, m past MC = 128, n past NC = 1024), all transposes, leading
 * dimensions wider than the matrices, beta 0 (C not read: NaN stays out),
 * and the same bits for a product computed whole or in the row and column
 * slices the provider hands its threads. Skipped on a CPU without
 * AVX-512F, where the provider never calls it. The path through a device
 * (test_gemm_host@pocl_pthread, ...) takes it on such a CPU by default. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "gemm_avx512.h"
#include "ref_compare.h"
#include "ref_gemm.h"
#include "ref_random.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    int m, n, k;
} shape;

/* Operands of one product with leading dimensions 3 wider than needed. */
typedef struct {
    bool ta, tb;
    int m, n, k, lda, ldb, ldc;
    float *a, *b, *c;
    double *a64, *b64, *c64;
} product;

static product make(bool ta, bool tb, shape s, uint64_t seed)
{
    product p = {.ta = ta, .tb = tb, .m = s.m, .n = s.n, .k = s.k};
    p.lda = (ta ? s.m : s.k) + 3, p.ldb = (tb ? s.k : s.n) + 3, p.ldc = s.n + 3;
    const size_t na = (size_t)(ta ? s.k : s.m) * p.lda, nb = (size_t)(tb ? s.n : s.k) * p.ldb,
                 nc = (size_t)s.m * p.ldc;
    p.a = malloc(na * 4), p.b = malloc(nb * 4), p.c = malloc(nc * 4);
    p.a64 = malloc(na * 8), p.b64 = malloc(nb * 8), p.c64 = malloc(nc * 8);
    assert_non_null(p.a64), assert_non_null(p.b64), assert_non_null(p.c64);
    ref_rng r = ref_rng_new(seed);
    ref_fill_uniform(&r, p.a, p.a64, na, -1, 1);
    ref_fill_uniform(&r, p.b, p.b64, nb, -1, 1);
    ref_fill_uniform(&r, p.c, p.c64, nc, -1, 1);
    return p;
}

static void drop(product *p)
{
    free(p->a), free(p->b), free(p->c), free(p->a64), free(p->b64), free(p->c64);
}

/* The product against the reference; with beta 0, C starts as NaN. */
static void check(bool ta, bool tb, shape s, float alpha, float beta, uint64_t seed)
{
    product p = make(ta, tb, s, seed);
    const size_t nc = (size_t)s.m * p.ldc;
    if (beta == 0.0f)
        for (size_t i = 0; i < nc; i++) p.c[i] = NAN, p.c64[i] = 0.0;
    float *got = malloc(nc * 4);
    double *want = malloc(nc * 8), *bound = malloc(nc * 8); /* bound: m x n, dense */
    ref_gemm(ta, tb, s.m, s.n, s.k, alpha, p.a64, p.lda, p.b64, p.ldb, beta, p.c64, p.ldc, bound);
    assert_true(cf_gemm_avx512(ta, tb, s.m, s.n, s.k, alpha, p.a, p.lda, p.b, p.ldb, beta, p.c,
                               p.ldc));
    size_t n = 0; /* the m x n window of C; the columns past n stay as they were */
    for (int i = 0; i < s.m; i++)
        for (int j = 0; j < p.ldc; j++) {
            const size_t e = (size_t)i * p.ldc + j;
            if (j < s.n) got[n] = p.c[e], want[n++] = p.c64[e];
            else if (beta == 0.0f) assert_true(isnan(p.c[e]));
        }
    const ref_cmp r = ref_compare_gemm(got, want, bound, n);
    if (!r.pass)
        fail_msg("%dx%dx%d ta %d tb %d alpha %g beta %g: %s (element %zu: %g, want %g)", s.m, s.n,
                 s.k, ta, tb, (double)alpha, (double)beta, r.why, r.worst, r.worst_value,
                 r.worst_ref);
    free(got), free(want), free(bound);
    drop(&p);
}

static const shape shapes[] = {{1, 1, 1},     {7, 61, 93},  {61, 93, 257}, {93, 257, 7},
                               {257, 7, 61},  {9, 33, 513}, {130, 40, 20}, {5, 1100, 30},
                               {768, 65, 128}};

static void matches_reference(void **state)
{
    (void)state;
    for (int t = 0; t < 4; t++)
        for (size_t i = 0; i < sizeof shapes / sizeof *shapes; i++) {
            check(t & 1, t & 2, shapes[i], 1.0f, 0.0f, 10 * i + t);
            check(t & 1, t & 2, shapes[i], -0.75f, 0.5f, 100 + 10 * i + t);
        }
}

/* Rows r0.. of C from rows r0.. of op(A), or columns j0.. from op(B)'s. */
static void slice(const product *p, float *c, int r0, int r1, int j0, int j1, float beta)
{
    const float *a = p->a + (p->ta ? (size_t)r0 : (size_t)r0 * p->lda);
    const float *b = p->b + (p->tb ? (size_t)j0 * p->ldb : (size_t)j0);
    assert_true(cf_gemm_avx512(p->ta, p->tb, r1 - r0, j1 - j0, p->k, 0.5f, a, p->lda, b, p->ldb,
                               beta, c + (size_t)r0 * p->ldc + j0, p->ldc));
}

static void slices_give_the_same_bits(void **state)
{
    (void)state;
    const shape s = {150, 70, 300};
    for (int t = 0; t < 4; t++) {
        product p = make(t & 1, t & 2, s, 500 + t);
        const size_t nc = (size_t)s.m * p.ldc;
        float *whole = malloc(nc * 4), *rows = malloc(nc * 4), *cols = malloc(nc * 4);
        memcpy(whole, p.c, nc * 4), memcpy(rows, p.c, nc * 4), memcpy(cols, p.c, nc * 4);
        slice(&p, whole, 0, s.m, 0, s.n, 0.25f);
        slice(&p, rows, 0, 75, 0, s.n, 0.25f); /* the provider's cut for two threads */
        slice(&p, rows, 75, s.m, 0, s.n, 0.25f);
        slice(&p, cols, 0, s.m, 0, 35, 0.25f);
        slice(&p, cols, 0, s.m, 35, s.n, 0.25f);
        assert_memory_equal(whole, rows, nc * 4);
        assert_memory_equal(whole, cols, nc * 4);
        free(whole), free(rows), free(cols);
        drop(&p);
    }
}

int main(void)
{
    __builtin_cpu_init();
    if (!__builtin_cpu_supports("avx512f")) { /* CTest reports it skipped (SKIP_RETURN_CODE) */
        printf("no AVX-512F on this CPU: the provider never runs this product\n");
        return 77;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(matches_reference),
        cmocka_unit_test(slices_give_the_same_bits),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
