/* The GEMM providers: the gemm op's check (runtime/check/conf_gemm.c: odd
 * sizes, all transposes, offsets, alpha/beta, batches, bad calls) and the
 * linear layer's, whose products these are, under the provider CLFORMER_GEMM
 * names (registered once per provider: CLFORMER_GEMM=clblast, =tiled and
 * =host, see tests/CMakeLists.txt; test_ops runs both with the device's own
 * choice);
 * the host provider's threaded products against its product computed whole
 * in one thread; and the GEMM timing of the check API. */
#include "harness.h"
#include "buffer.h"
#include "clformer_check.h"
#include "gemm.h"
#include "gemm_avx512.h"
#include "ops.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

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

/* The check of the op `name` of the descriptor table, under this provider. */
static void op_conformance(const char *name)
{
    for (size_t i = 0; conf_ops[i]; i++)
        if (!strcmp(conf_ops[i]->name, name)) {
            harness_assert_conformance(conf_ops[i]->check, name, __FILE__, __LINE__);
            return;
        }
    fail_msg("no %s op in the descriptor table", name);
}

static void gemm_conformance_under_this_provider(void **state)
{
    (void)state;
    op_conformance("gemm");
}

static void linear_conformance_under_this_provider(void **state)
{
    (void)state;
    op_conformance("linear");
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

/* A linear layer's 16-bit activations (the forward's output without a bias,
 * and the input's gradient) hold the bits a rounding launch after the
 * product gives, whether this provider rounds them as it writes them (the
 * host provider on CPUs with AVX-512F, then with no rounding launch) or not;
 * rows of inputs from 1e-6 to 3,000 take fp16 to its subnormals and past
 * its largest value. */
static void linear_outputs_rounded_as_a_launch_rounds(void **state)
{
    (void)state;
    cf_ctx *ctx = hctx();
    enum { N = 5, IC = 37, OC = 41 };
    static const float row_scale[N] = {1e-6f, 1.0f, 3000.0f, 0.01f, 100.0f};
    float x[N * IC], w[OC * IC], dy[N * OC];
    for (size_t i = 0; i < N * IC; i++)
        x[i] = (float)((int)(i * 7919 % 2001) - 1000) / 1000.0f * row_scale[i / IC];
    for (size_t i = 0; i < OC * IC; i++) w[i] = (float)((int)(i * 104729 % 2001) - 1000) / 100.0f;
    for (size_t i = 0; i < N * OC; i++)
        dy[i] = (float)((int)(i * 15485863 % 2001) - 1000) / 1000.0f * row_scale[i / OC];
    cl_mem X, W, DY, Y, DX, DW, WANT;
    assert_ok(cf_buffer_alloc(ctx, N * IC, "x", &X));
    assert_ok(cf_buffer_alloc(ctx, OC * IC, "w", &W));
    assert_ok(cf_buffer_alloc(ctx, N * OC, "dy", &DY));
    assert_ok(cf_buffer_alloc(ctx, N * OC, "y", &Y));
    assert_ok(cf_buffer_alloc(ctx, N * IC, "dx", &DX));
    assert_ok(cf_buffer_alloc(ctx, OC * IC, "dw", &DW));
    assert_ok(cf_buffer_alloc(ctx, N * (OC > IC ? OC : IC), "want", &WANT));
    assert_ok(cf_upload(ctx, X, 0, x, N * IC));
    assert_ok(cf_upload(ctx, W, 0, w, OC * IC));
    assert_ok(cf_upload(ctx, DY, 0, dy, N * OC));
    assert_ok(cf_fill(ctx, DW, 0, OC * IC, 0.0f));
#if defined(__x86_64__)
    __builtin_cpu_init();
    if (ctx->gemm_provider == CLFORMER_GEMM_HOST && __builtin_cpu_supports("avx512f"))
        assert_true(cf_gemm_rounds_output(ctx)); /* else this test compares a launch with itself */
#endif
    const cf_view none = {NULL, 0};
    const clformer_precision ps[2] = {CLFORMER_BF16, CLFORMER_FP16};
    for (int k = 0; k < 2; k++) {
        const char *name = clformer_precision_name(ps[k]);
        float got[N * OC], want[N * OC];
        /* forward */
        ctx->precision = ps[k];
        const uint64_t launches = ctx->kernel_launches[CF_K_ROUND_STORAGE];
        assert_ok(cf_linear_forward(ctx, cf_view_at(Y, 0), cf_view_at(X, 0), cf_view_at(W, 0),
                                    none, N, IC, OC));
        const uint64_t rounding = ctx->kernel_launches[CF_K_ROUND_STORAGE] - launches;
        assert_int_equal(rounding, cf_gemm_rounds_output(ctx) ? 0 : 1);
        assert_ok(cf_linear_product(ctx, cf_view_at(WANT, 0), cf_view_at(X, 0),
                                    cf_view_at(W, 0), N, IC, OC));
        assert_ok(cf_round_storage(ctx, cf_view_at(WANT, 0), cf_view_at(WANT, 0), N * OC, ps[k]));
        assert_ok(cf_download(ctx, Y, 0, got, N * OC));
        assert_ok(cf_download(ctx, WANT, 0, want, N * OC));
        size_t infinite = 0, subnormal = 0;
        for (size_t i = 0; i < N * OC; i++) {
            if (memcmp(&got[i], &want[i], sizeof *got) != 0)
                fail_msg("%s forward: y[%zu] is %.9g, a rounding launch gives %.9g", name, i,
                         (double)got[i], (double)want[i]);
            infinite += isinf(want[i]);
            subnormal += want[i] != 0.0f && fabsf(want[i]) < 0x1p-14f;
        }
        if (ps[k] == CLFORMER_FP16 && (infinite == 0 || subnormal == 0))
            fail_msg("fp16: %zu infinite and %zu subnormal outputs: the inputs miss an edge",
                     infinite, subnormal);
        /* the input's gradient */
        float gx[N * IC], wx[N * IC];
        assert_ok(cf_linear_backward(ctx, cf_view_at(DX, 0), cf_view_at(DW, 0), none,
                                     cf_view_at(DY, 0), cf_view_at(X, 0), cf_view_at(W, 0), N,
                                     IC, OC, false));
        assert_ok(cf_gemm(ctx, false, false, N, IC, OC, 1.0f, DY, 0, OC, W, 0, IC, 0.0f, WANT,
                          0, IC));
        assert_ok(cf_round_storage(ctx, cf_view_at(WANT, 0), cf_view_at(WANT, 0), N * IC, ps[k]));
        ctx->precision = CLFORMER_FP32;
        assert_ok(cf_download(ctx, DX, 0, gx, N * IC));
        assert_ok(cf_download(ctx, WANT, 0, wx, N * IC));
        for (size_t i = 0; i < N * IC; i++)
            if (memcmp(&gx[i], &wx[i], sizeof *gx) != 0)
                fail_msg("%s backward: dx[%zu] is %.9g, a rounding launch gives %.9g", name, i,
                         (double)gx[i], (double)wx[i]);
    }
    cl_mem all[] = {X, W, DY, Y, DX, DW, WANT};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++) cf_buffer_free(ctx, all[i]);
}

/* The host provider on its AVX-512 path spreads a lone product's rows over
 * its threads in chunks from one shared packed op(B) (trans_b; without it
 * each thread reads op(B) in place for its slice of rows or columns), and
 * a batch's products over them whole (gemm_host.c): every output must have
 * the bits of cf_gemm_avx512 computing the same product whole in this
 * thread. Both shapes pass the provider's threshold for spreading (m*n*k >=
 * 2^22), span two blocks of k (KC = 256) and end rows part-way through a
 * chunk (32); with trans_b the first packs op(B) into the thread's kept
 * buffer, the second (two blocks of n, NC = 1024) into one of its own (over
 * the 2 MiB a thread keeps, gemm_avx512.h). */
static void host_products_have_one_threads_bits(void **state)
{
    (void)state;
    cf_ctx *ctx = hctx();
    if (ctx->gemm_provider != CLFORMER_GEMM_HOST || !cf_gemm_avx512_wanted())
        skip(); /* another provider, or OpenBLAS's own products */
    enum { BATCH = 3 };
    static const int shapes[2][3] = {{203, 97, 300}, {70, 1100, 480}};
    for (int sh = 0; sh < 2; sh++) {
        const int M = shapes[sh][0], N = shapes[sh][1], K = shapes[sh][2];
        const size_t na = (size_t)M * K, nb = (size_t)K * N, nc = (size_t)M * N;
        float *a = malloc(BATCH * na * 4), *b = malloc(BATCH * nb * 4),
              *c0 = malloc(BATCH * nc * 4), *got = malloc(BATCH * nc * 4),
              *want = malloc(BATCH * nc * 4);
        assert_true(a && b && c0 && got && want);
        for (size_t i = 0; i < BATCH * na; i++)
            a[i] = (float)((int)(i * 7919 % 2001) - 1000) / 997.0f;
        for (size_t i = 0; i < BATCH * nb; i++)
            b[i] = (float)((int)(i * 104729 % 2001) - 1000) / 991.0f;
        for (size_t i = 0; i < BATCH * nc; i++) c0[i] = (float)((int)(i * 31 % 201) - 100) / 50.0f;
        cl_mem A, B, C;
        assert_ok(cf_buffer_alloc(ctx, BATCH * na, "a", &A));
        assert_ok(cf_buffer_alloc(ctx, BATCH * nb, "b", &B));
        assert_ok(cf_buffer_alloc(ctx, BATCH * nc, "c", &C));
        assert_ok(cf_upload(ctx, A, 0, a, BATCH * na));
        assert_ok(cf_upload(ctx, B, 0, b, BATCH * nb));
        for (int t = 0; t < 4; t++) {
            const bool ta = t & 1, tb = t & 2;
            const int lda = ta ? M : K, ldb = tb ? K : N;
            for (size_t batch = 1; batch <= BATCH; batch += BATCH - 1) {
                assert_ok(cf_upload(ctx, C, 0, c0, BATCH * nc));
                assert_ok(cf_gemm_strided_batched(ctx, ta, tb, M, N, K, 0.75f, A, 0, lda, na, B,
                                                  0, ldb, nb, 0.5f, C, 0, N, nc, batch));
                assert_ok(cf_download(ctx, C, 0, got, batch * nc));
                memcpy(want, c0, batch * nc * 4);
                for (size_t i = 0; i < batch; i++)
                    assert_true(cf_gemm_avx512(ta, tb, M, N, K, 0.75f, a + i * na, lda,
                                               b + i * nb, ldb, 0.5f, want + i * nc, N));
                for (size_t i = 0; i < batch * nc; i++)
                    if (memcmp(&got[i], &want[i], 4) != 0)
                        fail_msg("%d x %d x %d, trans_a %d trans_b %d, batch %zu: C[%zu] is "
                                 "%.9g, one thread's product %.9g",
                                 M, N, K, ta, tb, batch, i, (double)got[i], (double)want[i]);
            }
        }
        cf_buffer_free(ctx, A), cf_buffer_free(ctx, B), cf_buffer_free(ctx, C);
        free(a), free(b), free(c0), free(got), free(want);
    }
}

/* Launches of cl/activation.cl's kernels so far. */
static uint64_t activation_launches(const cf_ctx *ctx)
{
    return ctx->kernel_launches[CF_K_BIAS_ACT_FORWARD] +
           ctx->kernel_launches[CF_K_BIAS_ACT_BACKWARD] + ctx->kernel_launches[CF_K_BIAS_ADD];
}

/* The ops whose bias and activation are a product's epilogue on the host
 * provider (cf_gemm_fuses) against the same ops with the epilogues off (the
 * launches of cl/activation.cl), each activation without dropout and with
 * it: a linear layer's bias and ReLU with their bits, tanh GELU within its
 * rule (the host's own exp); no activation kernel launched when fused. Shapes the provider spreads over its threads
 * by rows (768 x 512 x 128, the chunks of one packed op(B)) and by columns
 * (40 rows, 1100 columns), and one it runs whole. */
static void fused_ops_match_the_launches_they_replace(void **state)
{
    (void)state;
    cf_ctx *ctx = hctx();
    if (!cf_gemm_fuses(ctx)) skip(); /* another provider: the launches are the path */
    static const size_t shapes[3][3] = {{768, 128, 512}, {40, 128, 1100}, {7, 13, 37}};
    static const clformer_activation acts[2] = {CLFORMER_ACT_RELU, CLFORMER_ACT_GELU_TANH};
    for (int sh = 0; sh < 3; sh++) {
        const size_t N = shapes[sh][0], D = shapes[sh][1], F = shapes[sh][2];
        enum { X, W1, B1, W2, DY, PRE, H, Y, DPRE, DW2, DB2, DB1, COUNT };
        const size_t len[COUNT] = {N * D, F * D, F, D * F, N * D, N * F,
                                   N * F, N * D, N * F, D * F, D, F};
        cl_mem buf[COUNT];
        float *got[COUNT], *want[COUNT];
        for (int t = 0; t < COUNT; t++) {
            assert_ok(cf_buffer_alloc(ctx, len[t], "t", &buf[t]));
            got[t] = malloc(len[t] * 4), want[t] = malloc(len[t] * 4);
            assert_true(got[t] && want[t]);
        }
        for (int t = X; t <= DY; t++) {
            for (size_t i = 0; i < len[t]; i++)
                got[t][i] = (float)((int)((i * 7919 + 31 * (size_t)t) % 2001) - 1000) / 1000.0f;
            assert_ok(cf_upload(ctx, buf[t], 0, got[t], len[t]));
        }
        cf_view v[COUNT];
        for (int t = 0; t < COUNT; t++) v[t] = cf_view_at(buf[t], 0);
        const cf_dropout drop = {0.2f, 0xabcdefULL, 3, 11};
        for (int a = 0; a < 4; a++) { /* each activation without dropout, then with */
            const cf_dropout *dropout = a < 2 ? NULL : &drop;
            for (int fused = 0; fused < 2; fused++) {
                ctx->host_fusion_off = !fused;
                for (int t = DW2; t <= DB1; t++) assert_ok(cf_fill(ctx, buf[t], 0, len[t], 0.0f));
                const uint64_t before = activation_launches(ctx);
                assert_ok(cf_linear_act_forward(ctx, v[H], v[PRE], v[X], v[W1], v[B1], N, D, F,
                                                acts[a % 2], dropout));
                /* B1 (F floats) as the second product's bias too: D < F */
                assert_ok(cf_linear_forward(ctx, v[Y], v[H], v[W2], v[B1], N, F, D));
                assert_ok(cf_linear_act_backward(ctx, v[DPRE], v[DW2], v[DB2], v[DB1], v[DY],
                                                 v[H], v[W2], v[PRE], v[B1], N, F, D,
                                                 acts[a % 2], dropout));
                assert_int_equal(activation_launches(ctx) - before, fused ? 0 : 3);
                for (int t = PRE; t < COUNT; t++)
                    assert_ok(cf_download(ctx, buf[t], 0, fused ? got[t] : want[t], len[t]));
            }
            ctx->host_fusion_off = false;
            for (int t = PRE; t < COUNT; t++)
                for (size_t i = 0; i < len[t]; i++) {
                    /* tanh GELU: the forward rule; its gradients the gradient rule's bound */
                    const bool exact = acts[a % 2] == CLFORMER_ACT_RELU || t == PRE;
                    const double tol = t == H || t == Y ? 2e-5 + 1e-5 * fabs(want[t][i])
                                                        : 1e-4 * (1.0 + fabs(want[t][i]));
                    if (exact ? memcmp(&got[t][i], &want[t][i], 4) != 0
                              : !(fabs(got[t][i] - want[t][i]) <= tol))
                        fail_msg("%zu x %zu x %zu %s%s: tensor %d [%zu] fused %.9g, launches %.9g",
                                 N, D, F, clformer_activation_name(acts[a % 2]),
                                 dropout ? " with dropout" : "", t, i,
                                 (double)got[t][i], (double)want[t][i]);
                }
        }
        for (int t = 0; t < COUNT; t++) cf_buffer_free(ctx, buf[t]), free(got[t]), free(want[t]);
    }
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(gemm_provider_is_the_one_asked_for),
    cmocka_unit_test(gemm_conformance_under_this_provider),
    cmocka_unit_test(linear_conformance_under_this_provider),
    cmocka_unit_test(linear_outputs_rounded_as_a_launch_rounds),
    cmocka_unit_test(host_products_have_one_threads_bits),
    cmocka_unit_test(fused_ops_match_the_launches_they_replace),
    cmocka_unit_test(gemm_timing_through_the_check_api),
};
HARNESS_DEVICE_MAIN("gemm", tests)
