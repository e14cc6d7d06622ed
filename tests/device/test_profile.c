/*
 * The profiling record behind `clformer bench`'s roofline table: every
 * launch states the bytes it moves (runtime/device/launch.h: each input
 * element read once, each output written once, from the shapes), and
 * clformer_context_kernel_times sums them per family. The expected counts
 * here are worked out by hand from the ops' shapes. Also the copy bandwidth
 * the table is measured against. Never asserts a speed.
 */
#include "harness.h"

#include "gemm.h"
#include "ops.h"

#include <string.h>

/* A context on the device under test whose queue can profile. */
static clformer_context *profiling_context(void)
{
    clformer_context_params params;
    clformer_context_params_default(&params);
    params.device = hctx()->info.selector;
    params.profiling = true;
    clformer_context *ctx = NULL;
    assert_ok(clformer_context_create_with_params(&params, &ctx));
    return ctx;
}

static cl_mem zeros(clformer_context *ctx, size_t n)
{
    cl_mem m = NULL;
    assert_ok(cf_buffer_alloc(ctx, n, "test tensor", &m));
    return m;
}

static const clformer_kernel_time *family(const clformer_kernel_time *t, size_t n,
                                          const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (!strcmp(t[i].family, name)) return &t[i];
    fail_msg("no '%s' family among the %zu recorded", name, n);
    return NULL;
}

/* LayerNorm, a residual add and GEMMs of known shapes: bytes and launches per family. */
static void launches_count_their_bytes(void **state)
{
    (void)state;
    clformer_context *ctx = profiling_context();
    enum { N = 3, C = 5, M = 3, NN = 4, K = 5 };
    cl_mem x = zeros(ctx, N * C), y = zeros(ctx, N * C), w = zeros(ctx, C), b = zeros(ctx, C);
    cl_mem mean = zeros(ctx, N), rstd = zeros(ctx, N);
    cl_mem ga = zeros(ctx, 2 * M * K), gb = zeros(ctx, 2 * K * NN), gc = zeros(ctx, 2 * M * NN);
    for (size_t i = 0; i < N * C; i++) /* distinct rows, so LayerNorm has something to do */
        assert_ok(cf_fill(ctx, x, i, 1, (float)(i % 7)));
    assert_ok(cf_fill(ctx, w, 0, C, 1.0f));
    assert_ok(cf_finish(ctx));

    assert_ok(clformer_context_set_profiling(ctx, true));
    /* reads x (N*C), weight and bias (C each); writes y (N*C), mean and rstd (N each) */
    assert_ok(cf_layernorm_forward(ctx, cf_view_at(y, 0), cf_view_at(mean, 0),
                                   cf_view_at(rstd, 0), cf_view_at(x, 0), cf_view_at(w, 0),
                                   cf_view_at(b, 0), N, C, 1e-5f));
    /* reads a and b (10 each), writes out (10) */
    assert_ok(cf_add(ctx, cf_view_at(y, 0), cf_view_at(y, 0), cf_view_at(x, 0), 10));
    /* A (M*K), B (K*N), C (M*N) once; C read as well where beta != 0 */
    assert_ok(cf_gemm(ctx, false, false, M, NN, K, 1.0f, ga, 0, K, gb, 0, NN, 0.0f, gc, 0, NN));
    assert_ok(cf_gemm(ctx, false, false, M, NN, K, 1.0f, ga, 0, K, gb, 0, NN, 1.0f, gc, 0, NN));
    assert_ok(cf_gemm_strided_batched(ctx, true, false, M, NN, K, 1.0f, ga, 0, M, M * K, gb, 0,
                                      NN, K * NN, 0.0f, gc, 0, NN, M * NN, 2));
    clformer_kernel_time t[16];
    size_t n = 0;
    assert_ok(clformer_context_kernel_times(ctx, t, 16, &n));

    const clformer_kernel_time *ln = family(t, n, "layernorm");
    assert_int_equal(ln->count, 1);
    assert_int_equal(ln->bytes, 4 * (N * C + 2 * C + N * C + 2 * N));
    const clformer_kernel_time *add = family(t, n, "dropout");
    assert_int_equal(add->count, 1);
    assert_int_equal(add->bytes, 4 * 3 * 10);
    const clformer_kernel_time *gemm = family(t, n, "gemm");
    assert_int_equal(gemm->count, 3);
    const uint64_t once = 4 * (M * K + K * NN + M * NN);
    assert_int_equal(gemm->bytes, once + (once + 4 * M * NN) + 2 * once);

    /* the record is cleared by reading it; nothing is counted with profiling off */
    assert_ok(clformer_context_set_profiling(ctx, false));
    assert_ok(cf_add(ctx, cf_view_at(y, 0), cf_view_at(y, 0), cf_view_at(x, 0), 10));
    assert_ok(clformer_context_kernel_times(ctx, t, 16, &n));
    assert_int_equal(n, 0);

    cl_mem all[] = {x, y, w, b, mean, rstd, ga, gb, gc};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) cf_buffer_free(ctx, all[i]);
    clformer_context_free(ctx);
}

/* The roof: a positive figure, on a profiling queue and without one; a size
 * below one element is refused with a message that says what to pass. */
static void copy_bandwidth_is_measured(void **state)
{
    (void)state;
    double gbps = -1.0;
    clformer_context *ctx = profiling_context();
    assert_ok(clformer_context_copy_bandwidth(ctx, (size_t)64 << 10, &gbps));
    assert_true(gbps > 0.0);
    clformer_context_free(ctx);
    gbps = -1.0;
    assert_ok(clformer_context_copy_bandwidth(hctx(), 4096, &gbps));
    assert_true(gbps > 0.0);
    assert_int_equal(clformer_context_copy_bandwidth(hctx(), 3, &gbps),
                     CLFORMER_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(clformer_last_error(), "pass 0"));
    assert_int_equal(clformer_context_copy_bandwidth(hctx(), 0, NULL),
                     CLFORMER_ERR_INVALID_ARGUMENT);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(launches_count_their_bytes),
    cmocka_unit_test(copy_bandwidth_is_measured),
};
HARNESS_DEVICE_MAIN("profile", tests)
