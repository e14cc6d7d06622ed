/* runtime/device/gemm.h against the double-precision reference: odd sizes,
 * all transposes, offsets, alpha/beta, strided-batched and batched, canaries;
 * bad calls refused; and the linear layer's check, whose products are these.
 * Registered once per provider (CLFORMER_GEMM=clblast and =host, see
 * tests/CMakeLists.txt), and once with the device's own choice. */
#include "harness.h"
#include "buffer.h"
#include "clformer_check.h"
#include "gemm.h"
#include "gemm_check.h"
#include "ref_gemm.h"

#include <stdlib.h>
#include <string.h>

/* Every odd size appears in every position; then transformer shapes. The
 * host provider splits a product of at least 2^18 multiply-adds into slices
 * of C's columns ({61, 93, 257}) or rows ({257, 61, 93}) over its threads. */
static const gemm_shape odd_shapes[] = {{1, 1, 1},   {7, 61, 93},  {61, 93, 257}, {93, 257, 7},
                                        {257, 7, 61}, {1, 257, 93}, {257, 1, 7},   {7, 7, 257},
                                        {257, 61, 93}};
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

/* Many small products in one call, like attention's per-head ones: the host
 * provider spreads such a batch over helper threads beside the native
 * kernel's, so every product must come out right whichever thread took it. */
static void gemm_batch_of_many_small_products(void **state)
{
    (void)state;
    const gemm_shape s = {32, 24, 16};
    const size_t batch = harness_is_slow() ? 3 : 40;
    for (int t = 0; t < 4; t++) {
        gemm_check_batched(true, t & 1, t & 2, s, batch, 60 + t);
        gemm_check_batched(false, t & 1, t & 2, s, batch, 70 + t);
    }
}

/* A, B and C at different offsets of one buffer (the model keeps its
 * tensors in an arena), plain and strided-batched, with OpenCL kernels
 * between them that read and write the same buffer. */
static void gemm_operands_in_one_buffer(void **state)
{
    (void)state;
    const size_t m = 5, n = 7, k = 3, batch = 3, sa = m * k, sb = k * n, sc = m * n;
    const size_t a0 = 1, b0 = a0 + batch * sa + 2, c0 = b0 + batch * sb + 5,
                 total = c0 + batch * sc;
    float *h = hmalloc(total * 4), *out = hmalloc(total * 4);
    double *h64 = hmalloc(total * 8), *bound = hmalloc(batch * sc * 8);
    ref_rng r = ref_rng_new(77);
    ref_fill_uniform(&r, h, h64, total, -1, 1);
    hbuf d = hbuf_from_f32(h, total, 4);
    assert_ok(cf_gemm_strided_batched(hctx(), false, true, m, n, k, 1.0f, d.mem, d.off + a0, k,
                                      sa, d.mem, d.off + b0, k, sb, 0.0f, d.mem, d.off + c0, n,
                                      sc, batch));
    for (size_t i = 0; i < batch; i++)
        ref_gemm(false, true, m, n, k, 1.0, h64 + a0 + i * sa, k, h64 + b0 + i * sb, k, 0.0,
                 h64 + c0 + i * sc, n, bound + i * sc);
    /* then kernels copy the first C over A and write part of B, and a plain
     * product reads both */
    assert_ok(cf_copy(hctx(), d.mem, d.off + c0, d.mem, d.off + a0, sc));
    assert_ok(cf_fill(hctx(), d.mem, d.off + b0, n * n, 0.5f));
    for (size_t e = 0; e < sc; e++) h64[a0 + e] = h64[c0 + e];
    for (size_t e = 0; e < n * n; e++) h64[b0 + e] = 0.5;
    assert_ok(cf_gemm(hctx(), false, false, m, n, n, 1.0f, d.mem, d.off + a0, n, d.mem,
                      d.off + b0, n, 0.0f, d.mem, d.off + c0 + sc, n));
    double *bound2 = hmalloc(sc * 8);
    ref_gemm(false, false, m, n, n, 1.0, h64 + a0, n, h64 + b0, n, 0.0, h64 + c0 + sc, n, bound2);
    for (size_t e = 0; e < sc; e++) bound[sc + e] = bound2[e];
    hbuf_read(d, out);
    float *win = hmalloc(batch * sc * 4);
    double *win64 = hmalloc(batch * sc * 8);
    for (size_t e = 0; e < batch * sc; e++) win[e] = out[c0 + e], win64[e] = h64[c0 + e];
    assert_gemm_close(win, win64, bound, batch * sc);
    for (size_t e = a0 + sc; e < c0; e++) /* past what the kernels wrote */
        if (e >= b0 + n * n && out[e] != h[e]) fail_msg("gemm changed input element %zu", e);
    hbuf_check_canary(d);
    hbuf_free(d);
    free(h), free(out), free(h64), free(bound), free(bound2), free(win), free(win64);
}

static void gemm_bad_leading_dimension_is_reported(void **state)
{
    (void)state;
    hbuf a = hbuf_zeros(64, 0), b = hbuf_zeros(64, 0), c = hbuf_zeros(64, 0);
    clformer_status st = cf_gemm(hctx(), false, false, 4, 4, 4, 1.0f, a.mem, 0, 2 /* < k */,
                                 b.mem, 0, 4, 0.0f, c.mem, 0, 4);
    assert_int_equal(st, CLFORMER_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(clformer_last_error(), "leading dimension of A (2)"));
    st = cf_gemm(hctx(), true, true, 4, 4, 4, 1.0f, a.mem, 0, 4, b.mem, 0, 3 /* < k */, 0.0f,
                 c.mem, 0, 4);
    assert_int_equal(st, CLFORMER_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(clformer_last_error(), "leading dimension of B (3)"));
    hbuf_free(a), hbuf_free(b), hbuf_free(c);
}

/* A product that would read or write past a buffer is refused before it
 * runs (the host provider works on raw memory), for every form of call. */
static void gemm_past_the_buffer_is_refused(void **state)
{
    (void)state;
    cl_mem a, b, c; /* 64 floats each, no guard regions */
    assert_ok(cf_buffer_alloc(hctx(), 64, "A", &a));
    assert_ok(cf_buffer_alloc(hctx(), 64, "B", &b));
    assert_ok(cf_buffer_alloc(hctx(), 64, "C", &c));
    /* C at offset 49 needs 16 floats: 1 past the end */
    clformer_status st = cf_gemm(hctx(), false, false, 4, 4, 4, 1.0f, a, 0, 4, b, 0, 4, 0.0f, c,
                                 49, 4);
    assert_int_equal(st, CLFORMER_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(clformer_last_error(), "matrix C"));
    /* at offset 48 it fits exactly */
    assert_ok(cf_gemm(hctx(), false, false, 4, 4, 4, 1.0f, a, 0, 4, b, 0, 4, 0.0f, c, 48, 4));
    /* the fourth of 4 strided A matrices of 16 starts at 1 + 48: ends at 65 */
    st = cf_gemm_strided_batched(hctx(), false, false, 4, 4, 4, 1.0f, a, 1, 4, 16, b, 0, 4, 0,
                                 0.0f, c, 0, 4, 16, 4);
    assert_int_equal(st, CLFORMER_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(clformer_last_error(), "matrix A"));
    const size_t ao[2] = {0, 0}, bo[2] = {0, 49}, co[2] = {0, 16};
    const float ones[2] = {1.0f, 1.0f};
    st = cf_gemm_batched(hctx(), false, false, 4, 4, 4, ones, a, ao, 4, b, bo, 4, ones, c, co, 4,
                         2);
    assert_int_equal(st, CLFORMER_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(clformer_last_error(), "matrix B"));
    assert_ok(cf_finish(hctx()));
    cf_buffer_free(hctx(), a), cf_buffer_free(hctx(), b), cf_buffer_free(hctx(), c);
}

/* The context uses the provider CLFORMER_GEMM names: otherwise the host
 * registration of this test would silently check CLBlast again. */
static void gemm_provider_is_the_one_asked_for(void **state)
{
    (void)state;
    const char *want = getenv("CLFORMER_GEMM");
    clformer_gemm_provider expected;
    assert_ok(clformer_gemm_provider_for(&hctx()->info, want, &expected));
    assert_int_equal(clformer_context_gemm_provider(hctx()), expected);
    if (want && *want && strcmp(want, "auto") != 0)
        assert_string_equal(clformer_gemm_provider_name(expected), want);
    print_message("gemm provider: %s\n", clformer_gemm_provider_name(expected));
}

static void gemm_conformance(void **state)
{
    (void)state;
    assert_conformance(conf_gemm);
}

/* The linear layer's check (runtime/check/conf_linear.c), whose products go
 * through this provider: here it runs once per provider, where test_ops runs
 * it with the device's own. */
static void linear_conformance_under_this_provider(void **state)
{
    (void)state;
    for (size_t i = 0; conf_ops[i]; i++)
        if (!strcmp(conf_ops[i]->name, "linear")) {
            harness_assert_conformance(conf_ops[i]->check, "linear", __FILE__, __LINE__);
            return;
        }
    fail_msg("no linear op in the descriptor table");
}

/* clformer_check_gemm_time (what tools/tuning/gemm_bench reports): a time
 * and a rate for a single and a batched product, and bad shapes refused. */
static void gemm_timing_through_the_check_api(void **state)
{
    (void)state;
    const clformer_gemm_shape shapes[] = {{false, true, 17, 9, 33, 1}, {true, false, 8, 16, 4, 3}};
    for (size_t i = 0; i < 2; i++) {
        double ms = -1, gflops = -1;
        assert_ok(clformer_check_gemm_time(hctx(), &shapes[i], 0, &ms, &gflops));
        if (!(ms > 0 && ms < 1e6) || !(gflops > 0 && gflops < 1e6))
            fail_msg("shape %zu: %g ms, %g GFLOP/s", i, ms, gflops);
    }
    const clformer_gemm_shape empty = {false, false, 4, 0, 4, 1};
    double ms, gflops;
    assert_int_equal(clformer_check_gemm_time(hctx(), &empty, 0, &ms, &gflops),
                     CLFORMER_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(clformer_last_error(), "batch >= 1"));
    assert_int_equal(clformer_check_gemm_time(hctx(), NULL, 0, &ms, &gflops),
                     CLFORMER_ERR_INVALID_ARGUMENT);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(gemm_odd_sizes_all_transposes),
    cmocka_unit_test(gemm_alpha_beta_accumulate),
    cmocka_unit_test(gemm_transformer_shapes),
    cmocka_unit_test(gemm_strided_batched),
    cmocka_unit_test(gemm_batched_offsets),
    cmocka_unit_test(gemm_batch_of_many_small_products),
    cmocka_unit_test(gemm_operands_in_one_buffer),
    cmocka_unit_test(gemm_bad_leading_dimension_is_reported),
    cmocka_unit_test(gemm_past_the_buffer_is_refused),
    cmocka_unit_test(gemm_provider_is_the_one_asked_for),
    cmocka_unit_test(gemm_conformance),
    cmocka_unit_test(linear_conformance_under_this_provider),
    cmocka_unit_test(gemm_timing_through_the_check_api),
};
HARNESS_DEVICE_MAIN("gemm", tests)
