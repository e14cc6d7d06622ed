/* The host provider's AVX-512 product (runtime/device/gemm_avx512.c) called
 * directly, no OpenCL device: against the double reference over sizes that
 * leave partial register tiles and span several blocks of each loop (k past
 * KC = 256, m past MC = 128, n past NC = 1024), all transposes, leading
 * dimensions wider than the matrices, beta 0 (C not read: NaN stays out),
 * and the same bits for a product computed whole or in the row and column
 * slices the provider hands its threads, or in chunks of rows from one
 * packed op(B) (cf_gemm_avx512_packed). Skipped on a CPU without
 * AVX-512F, where the provider never calls it. The path through a device
 * (test_gemm_host@pocl_pthread, ...) takes it on such a CPU by default. */
#include "gemm_avx512.h"
#include "host_product.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

typedef struct {
    int m, n, k;
} shape;

static bool own_product(host_product *p, float alpha, float beta)
{
    return cf_gemm_avx512(p->ta, p->tb, p->m, p->n, p->k, alpha, p->a, p->lda, p->b, p->ldb,
                          beta, p->c, p->ldc);
}

static void check(bool ta, bool tb, shape s, float alpha, float beta, uint64_t seed)
{
    host_product_check("AVX-512 sgemm", own_product, ta, tb, s.m, s.n, s.k, alpha, beta,
                       seed);
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

/* The product with B moved one float off its allocation's alignment. */
static bool own_product_shifted(host_product *p, float alpha, float beta)
{
    const size_t nb = (size_t)(p->tb ? p->n : p->k) * p->ldb;
    float *shifted = malloc((nb + 1) * 4);
    assert_non_null(shifted);
    memcpy(shifted + 1, p->b, nb * 4);
    const bool ok = cf_gemm_avx512(p->ta, p->tb, p->m, p->n, p->k, alpha, p->a, p->lda,
                                   shifted + 1, p->ldb, beta, p->c, p->ldc);
    free(shifted);
    return ok;
}

/* op(B) read in place (not transposed) at any alignment, its rows as far
 * apart as a packed panel's (n 29: ldb 32, NR): a packed panel's aligned
 * loads there crashed on the first product of Intel's CPU runtime. */
static void b_in_place_at_any_alignment(void **state)
{
    (void)state;
    static const shape odd[] = {{37, 29, 90}, {8, 29, 300}, {1, 29, 1}};
    for (int ta = 0; ta < 2; ta++)
        for (size_t i = 0; i < sizeof odd / sizeof *odd; i++) {
            assert_true(cf_gemm_avx512_reads_b_in_place(false, odd[i].n, odd[i].k));
            host_product_check("AVX-512 sgemm, B shifted", own_product_shifted, ta, false,
                               odd[i].m, odd[i].n, odd[i].k, 1.0f, 0.0f, 900 + 10 * i + ta);
        }
}

/* Rows r0.. of C from rows r0.. of op(A), or columns j0.. from op(B)'s. */
static void slice(const host_product *p, float *c, int r0, int r1, int j0, int j1, float beta)
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
        host_product p = host_product_make(t & 1, t & 2, s.m, s.n, s.k, 500 + t);
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
        host_product_drop(&p);
    }
}

/* The packed path: op(B) packed once (into the thread's kept buffer), then
 * C's rows in chunks (the provider's 32, and uneven ones) from it, over every block of the loops
 * (n past NC = 1024 with a partial panel, k past KC = 256): the bits of the
 * product computed whole (which reads op(B) in place, unpacked, where it is
 * not transposed: cf_gemm_avx512_reads_b_in_place), and the same wherever a
 * chunk starts. op(B) is
 * packed part by part over a buffer of NaN, in order for half the products
 * and in reverse order (as threads may take the parts) for the others: each
 * part stands alone and together they write every float. */
static void packed_chunks_give_the_same_bits(void **state)
{
    (void)state;
    const shape shapes_packed[] = {{150, 70, 300}, {70, 1100, 40}, {64, 33, 513}, {130, 45, 300}};
    for (size_t i = 0; i < sizeof shapes_packed / sizeof *shapes_packed; i++)
        for (int t = 0; t < 4; t++) {
            const shape s = shapes_packed[i];
            host_product p = host_product_make(t & 1, t & 2, s.m, s.n, s.k, 700 + 10 * i + t);
            const size_t nc = (size_t)s.m * p.ldc;
            float *whole = malloc(nc * 4), *chunks = malloc(nc * 4);
            /* the thread's kept buffer: reused, and grown from one shape to the next */
            bool own;
            float *packed = cf_gemm_avx512_packed_buffer(s.n, s.k, &own);
            assert_non_null(whole), assert_non_null(chunks), assert_non_null(packed);
            memcpy(whole, p.c, nc * 4), memcpy(chunks, p.c, nc * 4);
            slice(&p, whole, 0, s.m, 0, s.n, 0.25f);
            const size_t floats = cf_gemm_avx512_packed_floats(s.n, s.k),
                         tasks = cf_gemm_avx512_pack_tasks(s.n, s.k);
            for (size_t f = 0; f < floats; f++) packed[f] = NAN;
            for (size_t part = 0; part < tasks; part++)
                cf_gemm_avx512_pack_task(p.tb, s.n, s.k, p.b, p.ldb, packed,
                                         t & 1 ? tasks - 1 - part : part);
            const int cuts[] = {0, 32, 37, 64, s.m};
            for (int c = 0; c + 1 < 5; c++) {
                const int r0 = cuts[c] < s.m ? cuts[c] : s.m,
                          r1 = cuts[c + 1] < s.m ? cuts[c + 1] : s.m;
                if (r1 <= r0) continue;
                const float *a = p.a + (p.ta ? (size_t)r0 : (size_t)r0 * p.lda);
                assert_true(cf_gemm_avx512_packed(p.ta, r1 - r0, s.n, s.k, 0.5f, a, p.lda, packed,
                                                  0.25f, chunks + (size_t)r0 * p.ldc, p.ldc));
            }
            assert_memory_equal(whole, chunks, nc * 4);
            free(whole), free(chunks);
            if (own) free(packed);
            host_product_drop(&p);
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
        cmocka_unit_test(b_in_place_at_any_alignment),
        cmocka_unit_test(slices_give_the_same_bits),
        cmocka_unit_test(packed_chunks_give_the_same_bits),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
