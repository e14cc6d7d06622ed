/* Decoding steps' products on the host (runtime/device/gemm_dots.c) called
 * directly, no OpenCL device: C = alpha A B^T + beta C against the double
 * reference (host_product.h) over sizes that leave partial blocks (rows,
 * outputs and the last 16 of k), beta 0 (C not read: NaN stays out); and the property it is there for: a row gets the
 * same bits alone, a few at a time or with all the others, and in any
 * column slice the provider hands its threads; and with B in 16 bits (a
 * bf16/fp16 session's decoding), the bits B's values give as floats.
 * Skipped on a CPU without AVX-512F, VL and BW, where the provider never
 * calls it. */
#include "gemm_dots.h"
#include "half.h"
#include "host_product.h"

#include <stdio.h>
#include <string.h>

static bool dots(host_product *p, float alpha, float beta)
{
    return cf_gemm_dots(p->m, p->n, p->k, alpha, p->a, p->lda, p->b, p->ldb, beta, p->c, p->ldc);
}

static void check(int m, int n, int k, float alpha, float beta, uint64_t seed)
{
    host_product_check("dots", dots, false, true, m, n, k, alpha, beta, seed);
}

static void matches_reference(void **state)
{
    (void)state;
    static const int shapes[][3] = {{1, 1, 1},   {1, 7, 15},  {3, 5, 17},  {4, 4, 16},
                                    {5, 9, 33},  {12, 65, 128}, {1, 1152, 384}, {33, 130, 600}};
    for (size_t i = 0; i < sizeof shapes / sizeof *shapes; i++) {
        check(shapes[i][0], shapes[i][1], shapes[i][2], 1.0f, 0.0f, 10 * i);
        check(shapes[i][0], shapes[i][1], shapes[i][2], -0.75f, 0.5f, 10 * i + 1);
    }
}

/* Rows r0..r1 by outputs j0..j1 of C. */
static void part(const host_product *p, float *c, int r0, int r1, int j0, int j1, float beta)
{
    assert_true(cf_gemm_dots(r1 - r0, j1 - j0, p->k, 0.5f, p->a + (size_t)r0 * p->lda, p->lda,
                             p->b + (size_t)j0 * p->ldb, p->ldb, beta,
                             c + (size_t)r0 * p->ldc + j0, p->ldc));
}

static void a_row_gets_its_bits_alone(void **state)
{
    (void)state;
    const int m = 23, n = 70, k = 301; /* partial blocks everywhere */
    const int runs[] = {1, 2, 3, 5};
    for (int with_beta = 0; with_beta < 2; with_beta++) {
        const float beta = with_beta ? -0.25f : 0.0f;
        host_product p = host_product_make(false, true, m, n, k, 300 + with_beta);
        const size_t nc = (size_t)m * p.ldc;
        float *all = malloc(nc * 4), *some = malloc(nc * 4);
        memcpy(all, p.c, nc * 4);
        part(&p, all, 0, m, 0, n, beta);
        for (size_t r = 0; r < sizeof runs / sizeof *runs; r++) {
            memcpy(some, p.c, nc * 4);
            for (int r0 = 0; r0 < m; r0 += runs[r])
                part(&p, some, r0, r0 + runs[r] < m ? r0 + runs[r] : m, 0, n, beta);
            if (memcmp(all, some, nc * 4))
                fail_msg("beta %g: rows %d at a time differ from all %d at once", (double)beta,
                         runs[r], m);
        }
        /* the provider's column slices for two threads */
        memcpy(some, p.c, nc * 4);
        part(&p, some, 0, m, 0, 35, beta);
        part(&p, some, 0, m, 35, n, beta);
        if (memcmp(all, some, nc * 4)) fail_msg("beta %g: column slices differ", (double)beta);
        free(all), free(some);
        host_product_drop(&p);
    }
}

/* B's values made those of the format (fp16: every fifth scaled into the
 * subnormals, every seventh a negative zero), B's 16-bit copy into b16. */
static void round_b(host_product *p, bool fp16, uint16_t *b16)
{
    const size_t nb = (size_t)p->n * p->ldb;
    for (size_t e = 0; e < nb; e++) {
        float v = p->b[e];
        if (fp16 && e % 5 == 0) v *= 0x1p-18f; /* below fp16's smallest normal, 2^-14 */
        if (e % 7 == 0) v = -0.0f;
        b16[e] = fp16 ? cf_f16_from_f32(v) : cf_bf16_from_f32(v);
        p->b[e] = fp16 ? cf_f32_from_f16(b16[e]) : cf_f32_from_bf16(b16[e]);
    }
}

static void half_b_gives_the_bits_of_its_floats(void **state)
{
    (void)state;
    static const int shapes[][3] = {{1, 1, 1},   {1, 7, 15},    {3, 5, 17},     {4, 4, 16},
                                    {5, 9, 33},  {12, 65, 128}, {1, 1152, 384}, {23, 70, 301}};
    int subnormals = 0;
    for (int fp16 = 0; fp16 < 2; fp16++)
        for (size_t i = 0; i < sizeof shapes / sizeof *shapes; i++)
            for (int with_beta = 0; with_beta < 2; with_beta++) {
                const int m = shapes[i][0], n = shapes[i][1], k = shapes[i][2];
                const float beta = with_beta ? -0.25f : 0.0f;
                host_product p = host_product_make(false, true, m, n, k, 500 + 10 * i + fp16);
                uint16_t *b16 = malloc((size_t)n * p.ldb * sizeof *b16);
                assert_non_null(b16);
                round_b(&p, fp16, b16);
                for (size_t e = 0; fp16 && e < (size_t)n * p.ldb; e++)
                    subnormals += (b16[e] & 0x7C00) == 0 && (b16[e] & 0x3FF) != 0;
                const size_t nc = (size_t)m * p.ldc;
                float *want = malloc(nc * 4), *got = malloc(nc * 4);
                memcpy(want, p.c, nc * 4), memcpy(got, p.c, nc * 4);
                assert_true(cf_gemm_dots(m, n, k, 0.5f, p.a, p.lda, p.b, p.ldb, beta, want,
                                         p.ldc));
                /* in two column slices, as the provider's threads take it */
                const int j = n / 2;
                assert_true(cf_gemm_dots_half(m, j, k, 0.5f, p.a, p.lda, b16, fp16, p.ldb, beta,
                                              got, p.ldc));
                assert_true(cf_gemm_dots_half(m, n - j, k, 0.5f, p.a, p.lda,
                                              b16 + (size_t)j * p.ldb, fp16, p.ldb, beta, got + j,
                                              p.ldc));
                if (memcmp(want, got, nc * 4))
                    fail_msg("%s B, %d x %d x %d, beta %g: not the bits of B's floats",
                             fp16 ? "fp16" : "bf16", m, n, k, (double)beta);
                free(want), free(got), free(b16);
                host_product_drop(&p);
            }
    assert_true(subnormals > 0); /* the half conversion met subnormals */
}

int main(void)
{
    __builtin_cpu_init();
    if (!__builtin_cpu_supports("avx512f") || !__builtin_cpu_supports("avx512vl") ||
        !__builtin_cpu_supports("avx512bw")) {
        /* CTest reports it skipped (SKIP_RETURN_CODE) */
        printf("no AVX-512F, VL and BW on this CPU: the provider never runs this product\n");
        return 77;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(matches_reference),
        cmocka_unit_test(a_row_gets_its_bits_alone),
        cmocka_unit_test(half_b_gives_the_bits_of_its_floats),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
