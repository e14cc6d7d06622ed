/* The CLBlast wrapper against the double-precision reference: odd sizes, all
 * transposes, offsets, alpha/beta, strided-batched and batched, canaries. */
#include "harness.h"
#include "gemm.h"
#include "gemm_check.h"

#include <string.h>

/* Every odd size appears in every position; then transformer shapes. */
static const gemm_shape odd_shapes[] = {{1, 1, 1},   {7, 61, 93},  {61, 93, 257}, {93, 257, 7},
                                        {257, 7, 61}, {1, 257, 93}, {257, 1, 7},   {7, 7, 257}};
static const gemm_shape model_shapes[] = {{96, 512, 512}, {96, 2048, 512}, {96, 512, 2048},
                                          {33, 96, 64}};
static const gemm_shape small_shapes[] = {{1, 1, 1}, {7, 5, 3}, {3, 7, 13}, {13, 3, 5}};

static void run_shapes(const gemm_shape *shapes, size_t n, float alpha, float beta)
{
    for (int t = 0; t < 4; t++)
        for (size_t i = 0; i < n; i++)
            gemm_check_one(t & 1, t & 2, shapes[i], alpha, beta, 100 + 10 * i + t);
}

static void gemm_odd_sizes_all_transposes(void **state)
{
    (void)state;
    if (harness_is_slow()) run_shapes(small_shapes, 4, 1.0f, 0.0f);
    else run_shapes(odd_shapes, sizeof odd_shapes / sizeof *odd_shapes, 1.0f, 0.0f);
}

static void gemm_alpha_beta_accumulate(void **state)
{
    (void)state;
    if (harness_is_slow()) run_shapes(small_shapes, 2, 0.5f, 1.0f);
    else run_shapes(odd_shapes, 4, -0.75f, 0.5f);
}

static void gemm_transformer_shapes(void **state)
{
    (void)state;
    if (harness_is_slow()) { /* one small projection-like shape */
        const gemm_shape s = {5, 24, 16};
        gemm_check_one(false, true, s, 1.0f, 1.0f, 7);
        return;
    }
    for (size_t i = 0; i < sizeof model_shapes / sizeof *model_shapes; i++) {
        gemm_check_one(false, true, model_shapes[i], 1.0f, 0.0f, 7 + i);  /* x W^T */
        gemm_check_one(true, false, model_shapes[i], 1.0f, 1.0f, 17 + i); /* dW += dy^T x */
        gemm_check_one(false, false, model_shapes[i], 1.0f, 0.0f, 27 + i);/* dx = dy W */
    }
}

static void gemm_strided_batched(void **state)
{
    (void)state;
    const gemm_shape s = harness_is_slow() ? (gemm_shape){5, 7, 3} : (gemm_shape){33, 61, 64};
    const size_t batch = harness_is_slow() ? 2 : 6;
    for (int t = 0; t < 4; t++) gemm_check_batched(true, t & 1, t & 2, s, batch, 40 + t);
}

static void gemm_batched_offsets(void **state)
{
    (void)state;
    const gemm_shape s = harness_is_slow() ? (gemm_shape){3, 5, 7} : (gemm_shape){61, 33, 80};
    const size_t batch = harness_is_slow() ? 2 : 5;
    for (int t = 0; t < 4; t++) gemm_check_batched(false, t & 1, t & 2, s, batch, 50 + t);
}

static void gemm_bad_leading_dimension_is_reported(void **state)
{
    (void)state;
    hbuf a = hbuf_zeros(64, 0), b = hbuf_zeros(64, 0), c = hbuf_zeros(64, 0);
    clformer_status st = cf_gemm(hctx(), false, false, 4, 4, 4, 1.0f, a.mem, 0, 2 /* < k */,
                                 b.mem, 0, 4, 0.0f, c.mem, 0, 4);
    assert_int_equal(st, CLFORMER_ERR_CLBLAST);
    assert_non_null(strstr(clformer_last_error(), "LeadDimA"));
    hbuf_free(a), hbuf_free(b), hbuf_free(c);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(gemm_odd_sizes_all_transposes),
    cmocka_unit_test(gemm_alpha_beta_accumulate),
    cmocka_unit_test(gemm_transformer_shapes),
    cmocka_unit_test(gemm_strided_batched),
    cmocka_unit_test(gemm_batched_offsets),
    cmocka_unit_test(gemm_bad_leading_dimension_is_reported),
};
HARNESS_DEVICE_MAIN("gemm", tests)
