/*
 * The profiling record behind `clformer bench`'s roofline table: every
 * launch states the bytes it moves (runtime/device/launch.h: each input
 * element read once, each output written once, from the shapes), and
 * clformer_context_kernel_times sums them per family, with the FLOP of the
 * matrix products. The expected counts here are worked out by hand from the
 * ops' shapes. Also the roofs the table is measured against (copy
 * bandwidth, FMA peak) and their cache. Never asserts a speed.
 */
#include "harness.h"

#include "gemm.h"
#include "ops.h"

#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* A context on the device under test, its queue able to profile or not,
 * its cache in `cache_dir` (NULL: the default). */
static clformer_context *context_with(bool profiling, const char *cache_dir)
{
    clformer_context_params params;
    clformer_context_params_default(&params);
    params.device = hctx()->info.selector;
    params.profiling = profiling;
    params.cache_dir = cache_dir;
    clformer_context *ctx = NULL;
    assert_ok(clformer_context_create_with_params(&params, &ctx));
    return ctx;
}

static clformer_context *profiling_context(void) { return context_with(true, NULL); }

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

/* The record tests' tensors on a profiling context: LayerNorm's over N rows
 * of C, and two batches of GEMM operands of M x K by K x NN. */
enum { N = 3, C = 5, M = 3, NN = 4, K = 5 };
typedef struct {
    clformer_context *ctx;
    cl_mem x, y, w, b, mean, rstd, ga, gb, gc;
} record_case;

static record_case record_case_make(void)
{
    record_case r = {.ctx = profiling_context()};
    clformer_context *ctx = r.ctx;
    r.x = zeros(ctx, N * C), r.y = zeros(ctx, N * C), r.w = zeros(ctx, C), r.b = zeros(ctx, C);
    r.mean = zeros(ctx, N), r.rstd = zeros(ctx, N);
    r.ga = zeros(ctx, 2 * M * K), r.gb = zeros(ctx, 2 * K * NN), r.gc = zeros(ctx, 2 * M * NN);
    for (size_t i = 0; i < N * C; i++) /* distinct rows, so LayerNorm has something to do */
        assert_ok(cf_fill(ctx, r.x, i, 1, (float)(i % 7)));
    assert_ok(cf_fill(ctx, r.w, 0, C, 1.0f));
    assert_ok(cf_finish(ctx));
    return r;
}

static void record_case_free(record_case *r)
{
    cl_mem all[] = {r->x, r->y, r->w, r->b, r->mean, r->rstd, r->ga, r->gb, r->gc};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) cf_buffer_free(r->ctx, all[i]);
    clformer_context_free(r->ctx);
}

/* Reads x (N*C), weight and bias (C each); writes y (N*C), mean and rstd (N each). */
static void layernorm_on(const record_case *r)
{
    assert_ok(cf_layernorm_forward(r->ctx, cf_view_at(r->y, 0), cf_view_at(r->mean, 0),
                                   cf_view_at(r->rstd, 0), cf_view_at(r->x, 0),
                                   cf_view_at(r->w, 0), cf_view_at(r->b, 0), N, C, 1e-5f));
}

/* LayerNorm, a residual add and GEMMs of known shapes: bytes and launches per family. */
static void launches_count_their_bytes(void **state)
{
    (void)state;
    record_case r = record_case_make();
    clformer_context *ctx = r.ctx;
    const cl_mem x = r.x, y = r.y, ga = r.ga, gb = r.gb, gc = r.gc;

    assert_ok(clformer_context_set_profiling(ctx, true));
    layernorm_on(&r);
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
    /* FLOP: 2*m*n*k per product, counted for the matrix products only */
    assert_int_equal(gemm->flop, 2 * M * NN * K * (1 + 1 + 2));
    assert_int_equal(ln->flop, 0);

    /* the record is cleared by reading it; nothing is counted with profiling off */
    assert_ok(clformer_context_set_profiling(ctx, false));
    assert_ok(cf_add(ctx, cf_view_at(y, 0), cf_view_at(y, 0), cf_view_at(x, 0), 10));
    assert_ok(clformer_context_kernel_times(ctx, t, 16, &n));
    assert_int_equal(n, 0);
    record_case_free(&r);
}

/* The same record per kernel (clformer_context_kernel_times_named): a cl/
 * kernel under its name, the GEMM provider's calls under "gemm"; each
 * family's kernels add up to the family's figures; largest time first; the
 * cap holds; kernels without kernel_n is refused. */
static void kernels_are_named(void **state)
{
    (void)state;
    record_case r = record_case_make();
    clformer_context *ctx = r.ctx;
    const cl_mem x = r.x, y = r.y, ga = r.ga, gb = r.gb, gc = r.gc;

    for (int round = 0; round < 2; round++) {
        assert_ok(clformer_context_set_profiling(ctx, true));
        layernorm_on(&r);
        layernorm_on(&r);
        assert_ok(cf_add(ctx, cf_view_at(y, 0), cf_view_at(y, 0), cf_view_at(x, 0), 10));
        for (int i = 0; i < 3; i++)
            assert_ok(cf_gemm(ctx, false, false, M, NN, K, 1.0f, ga, 0, K, gb, 0, NN, 0.0f, gc,
                              0, NN));
        clformer_kernel_time t[16];
        clformer_named_kernel_time named[16];
        size_t n = 0, nk = 0;
        const size_t cap = round == 0 ? 16 : 1; /* the second round: one kernel only */
        assert_ok(clformer_context_kernel_times_named(ctx, t, 16, &n, named, cap, &nk));
        if (round == 1) {
            assert_int_equal(nk, 1);
            assert_int_equal(n, 3); /* the families are whole */
            continue;
        }
        assert_true(nk >= 3);
        bool saw_ln = false, saw_gemm = false;
        for (size_t i = 0; i < nk; i++) {
            const clformer_named_kernel_time *e = &named[i];
            if (i > 0) assert_true(named[i - 1].time.ms >= e->time.ms);
            if (!strcmp(e->kernel, "layernorm_forward")) {
                saw_ln = true;
                assert_string_equal(e->time.family, "layernorm");
                assert_int_equal(e->time.count, 2);
                assert_int_equal(e->time.bytes, 2 * 4 * (N * C + 2 * C + N * C + 2 * N));
            }
            if (!strcmp(e->kernel, "gemm")) {
                saw_gemm = true;
                assert_string_equal(e->time.family, "gemm");
                assert_int_equal(e->time.count, 3);
                assert_int_equal(e->time.flop, 3 * 2 * M * NN * K);
            }
        }
        assert_true(saw_ln);
        assert_true(saw_gemm);
        for (size_t f = 0; f < n; f++) { /* each family is the sum of its kernels */
            uint64_t count = 0, bytes = 0, flop = 0;
            double ms = 0.0;
            for (size_t i = 0; i < nk; i++)
                if (!strcmp(named[i].time.family, t[f].family)) {
                    count += named[i].time.count;
                    bytes += named[i].time.bytes;
                    flop += named[i].time.flop;
                    ms += named[i].time.ms;
                }
            assert_int_equal(count, t[f].count);
            assert_int_equal(bytes, t[f].bytes);
            assert_int_equal(flop, t[f].flop);
            assert_true(fabs(ms - t[f].ms) <= 1e-9 * (1.0 + t[f].ms));
        }
    }
    clformer_named_kernel_time one[1];
    size_t n = 0;
    clformer_kernel_time t[4];
    assert_int_equal(clformer_context_kernel_times_named(ctx, t, 4, &n, one, 1, NULL),
                     CLFORMER_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(clformer_last_error(), "kernel_n"));
    assert_ok(clformer_context_kernel_times_named(ctx, t, 4, &n, NULL, 0, NULL));
    record_case_free(&r);
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

/* The other roof: positive, small launches allowed; too many iterations
 * refused with what to pass. */
static void fma_peak_is_measured(void **state)
{
    (void)state;
    double gflops = -1.0;
    assert_ok(clformer_context_fma_peak(hctx(), 64, 16, &gflops));
    assert_true(gflops > 0.0);
    assert_int_equal(clformer_context_fma_peak(hctx(), 64, 2000000, &gflops),
                     CLFORMER_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(clformer_last_error(), "pass 0"));
}

/* The roofs are measured once per device and read back from the cache
 * directory after; a damaged file is measured again; measuring again keeps
 * the higher figures. Measured for real, so not on a simulator (minutes). */
static void roofline_is_measured_once_and_cached(void **state)
{
    (void)state;
    if (harness_is_slow()) {
        print_message("skipped on a simulator: the roofs take minutes there\n");
        return;
    }
    char dir[64];
    snprintf(dir, sizeof dir, "/tmp/clformer-roofline-XXXXXX");
    assert_non_null(mkdtemp(dir));
    clformer_context *ctx = context_with(false, dir);
    clformer_roofline first, second;
    assert_ok(clformer_context_roofline(ctx, false, &first));
    assert_false(first.from_cache);
    assert_true(first.fma_gflops > 0.0 && first.copy_gbps > 0.0);
    assert_ok(clformer_context_roofline(ctx, false, &second));
    assert_true(second.from_cache);
    assert_true(fabs(second.fma_gflops - first.fma_gflops) <= 1e-5 * first.fma_gflops);
    assert_true(fabs(second.copy_gbps - first.copy_gbps) <= 1e-5 * first.copy_gbps);
    /* measuring again never lowers what the file holds */
    clformer_roofline again;
    assert_ok(clformer_context_roofline(ctx, true, &again));
    assert_false(again.from_cache);
    assert_true(again.fma_gflops >= first.fma_gflops * (1 - 1e-5));
    /* a damaged file: measured again, and whole afterwards */
    DIR *d = opendir(dir);
    char path[512] = "";
    for (struct dirent *e; d && (e = readdir(d));)
        if (!strncmp(e->d_name, "roofline-", 9)) snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    if (d) closedir(d);
    assert_true(path[0]);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs("clformer roofline, format 1\nfma_gflops -3\n", f);
    fclose(f);
    clformer_roofline fresh;
    assert_ok(clformer_context_roofline(ctx, false, &fresh));
    assert_false(fresh.from_cache);
    assert_ok(clformer_context_roofline(ctx, false, &fresh));
    assert_true(fresh.from_cache);
    clformer_context_free(ctx);
    unlink(path);
    rmdir(dir);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(launches_count_their_bytes),
    cmocka_unit_test(kernels_are_named),
    cmocka_unit_test(copy_bandwidth_is_measured),
    cmocka_unit_test(fma_peak_is_measured),
    cmocka_unit_test(roofline_is_measured_once_and_cached),
};
HARNESS_DEVICE_MAIN("profile", tests)
