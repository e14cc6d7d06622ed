/* Softmax cross-entropy, log-softmax and argmax rows against the double
 * reference: odd and vocabulary-sized rows, ignored rows, label smoothing,
 * in-place and separate gradients, extreme logits (the cross-entropy cases
 * through the shared check's case runner, conf_loss_run: guards and
 * bit-identical reruns), bad targets and arguments. */
#include "harness.h"
#include "conformance.h"
#include "ops.h"
#include "ref_loss.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    size_t N, V;
} shape;

/* N in 1..257 against V from 1 to a 50k vocabulary; Oclgrind gets small rows. */
static const shape shapes[] = {{1, 1},    {257, 1},    {7, 7},      {257, 7},
                               {61, 61},  {1, 257},    {93, 257},   {257, 257},
                               {7, 10007}, {61, 10007}, {1, 50000}, {17, 50000}};
/* Oclgrind spends ~30 ms per work-group (one per row): few rows there. */
static const shape slow_shapes[] = {{1, 1}, {7, 1}, {5, 7}, {13, 3}, {3, 61}, {2, 257}};

#define N_SHAPES(fast, slow)                                                                   \
    (harness_is_slow() ? sizeof slow / sizeof *slow : sizeof fast / sizeof *fast)
#define SHAPE(fast, slow, i) (harness_is_slow() ? slow[i] : fast[i])

static cf_view view(hbuf b) { return cf_view_at(b.mem, b.off); }

typedef enum { LOGITS_RANDOM, LOGITS_EXTREME } logits_kind;

static void make_logits(float *x, const int32_t *y, size_t N, size_t V, logits_kind kind,
                        ref_rng *r)
{
    conf_loss_logits(x, y, N, V, kind == LOGITS_EXTREME, r);
}

/* Random targets; every fifth row (and any row drawing it) is ignore_index. */
static size_t make_targets(int32_t *y, size_t N, size_t V, int ignore, ref_rng *r)
{
    size_t valid = 0;
    for (size_t i = 0; i < N; i++) {
        y[i] = i % 5 == 2 ? ignore : (int32_t)(ref_rng_next(r) % V);
        valid += y[i] != ignore;
    }
    return valid;
}

typedef struct {
    double ls;
    int ignore;
    bool alias;     /* dlogits is the logits buffer */
    bool gradient;  /* dlogits requested */
    float grad_scale;
    logits_kind kind;
} ce_case;

/* One case of the shared check (runtime/check/conf_loss.c): junk-filled
 * outputs overwritten, ignored rows zero, guards, a bit-identical rerun. */
static void check_ce(shape s, ce_case cc, uint64_t seed)
{
    const conf_loss_case c = {s.N, s.V, cc.ls, cc.ignore, cc.alias, cc.gradient, cc.grad_scale,
                              cc.kind == LOGITS_EXTREME, seed};
    assert_conformance_case(conf_loss_run(hctx(), &c, harness_conf_sink, &failures));
}

/* Every shape, with and without smoothing, in place and separate; the
 * gradient scaled by 1/valid rows as the model does, or by 1. */
static void ce_shapes_smoothing_alias(void **state)
{
    (void)state;
    for (size_t i = 0; i < N_SHAPES(shapes, slow_shapes); i++) {
        const shape s = SHAPE(shapes, slow_shapes, i);
        for (int variant = 0; variant < 4; variant++) {
            ce_case cc = {variant & 1 ? 0.1 : 0.0, variant & 2 ? 0 : -100, variant >= 2, true,
                          variant & 1 ? 1.0f : 1.0f / (float)(s.N + 1), LOGITS_RANDOM};
            check_ce(s, cc, 1000 * i + variant);
        }
    }
}

static void ce_extreme_logits(void **state)
{
    (void)state;
    static const shape fast[] = {{7, 61}, {61, 257}, {5, 10007}, {3, 50000}};
    static const shape slow[] = {{5, 7}, {9, 61}};
    for (size_t i = 0; i < N_SHAPES(fast, slow); i++)
        for (int variant = 0; variant < 4; variant++) {
            ce_case cc = {variant & 1 ? 0.1 : 0.0, 0, variant & 2, true, 1.0f, LOGITS_EXTREME};
            check_ce(SHAPE(fast, slow, i), cc, 77 + 10 * i + variant);
        }
}

/* dlogits.buf NULL: losses only, logits untouched. Also a grad_scale that is
 * not a reciprocal, and a positive ignore_index. */
static void ce_loss_only_and_grad_scale(void **state)
{
    (void)state;
    const shape s = harness_is_slow() ? (shape){7, 61} : (shape){61, 10007};
    for (int ls = 0; ls < 2; ls++) {
        check_ce(s, (ce_case){ls ? 0.1 : 0.0, 0, false, false, 1.0f, LOGITS_RANDOM}, 5 + ls);
        check_ce(s, (ce_case){ls ? 0.1 : 0.0, 3, false, true, 2.5f, LOGITS_RANDOM}, 7 + ls);
    }
}

/* A target outside [0, V) that is not ignore_index gives NaN, not a read
 * out of bounds (Oclgrind watches); size 0 is a no-op; bad sizes and a
 * partly overlapping output are refused. */
static void ce_bad_targets_and_arguments(void **state)
{
    (void)state;
    const size_t N = 3, V = 5;
    float x[15], loss[3], dx[15];
    for (size_t i = 0; i < 15; i++) x[i] = (float)i * 0.25f;
    const int32_t y[3] = {5, -1, 2};
    hbuf hx = hbuf_from_f32(x, 15, 2), hy = hbuf_from_i32(y, N, 1), hl = hbuf_zeros(N, 4),
         hd = hbuf_zeros(15, 0);
    assert_ok(cf_cross_entropy(hctx(), view(hl), view(hd), view(hx), view(hy), N, V, 0.1f, 0,
                               1.0f));
    hbuf_read(hl, loss);
    hbuf_read(hd, dx);
    assert_true(isnan(loss[0]) && isnan(loss[1]) && isfinite(loss[2]));
    for (size_t c = 0; c < V; c++) assert_true(isnan(dx[c]) && isnan(dx[V + c]));
    hbuf_check_canary(hl);
    hbuf_check_canary(hd);

    assert_ok(cf_cross_entropy(hctx(), view(hl), view(hd), view(hx), view(hy), 0, V, 0.0f, 0,
                               1.0f));
    assert_int_equal(cf_cross_entropy(hctx(), view(hl), view(hd), view(hx), view(hy), N, 0, 0.0f,
                                      0, 1.0f),
                     CLFORMER_ERR_INVALID_ARGUMENT);
    assert_int_equal(cf_cross_entropy(hctx(), view(hl), view(hd), view(hx), view(hy), N, V, 1.5f,
                                      0, 1.0f),
                     CLFORMER_ERR_INVALID_ARGUMENT);
    assert_int_equal(cf_cross_entropy(hctx(), view(hl), cf_view_add(view(hx), 1), view(hx),
                                      view(hy), N, V, 0.0f, 0, 1.0f),
                     CLFORMER_ERR_INVALID_ARGUMENT);
    assert_int_equal(cf_log_softmax_rows(hctx(), cf_view_add(view(hx), 3), view(hx), N, V),
                     CLFORMER_ERR_INVALID_ARGUMENT);
    assert_int_equal(cf_argmax_rows(hctx(), view(hl), view(hx), N, 0),
                     CLFORMER_ERR_INVALID_ARGUMENT);
    assert_ok(cf_log_softmax_rows(hctx(), view(hd), view(hx), 0, V));
    assert_ok(cf_argmax_rows(hctx(), view(hl), view(hx), 0, V));
    hbuf_read(hl, loss); /* the size-0 calls wrote nothing */
    assert_true(isnan(loss[0]));
    hbuf_check_canary(hx);
    hbuf_free(hx), hbuf_free(hy), hbuf_free(hl), hbuf_free(hd);
}

/* log_softmax rows under the forward rule, separate and in place. */
static void log_softmax_rows_rule(void **state)
{
    (void)state;
    for (size_t i = 0; i < N_SHAPES(shapes, slow_shapes); i++) {
        const shape s = SHAPE(shapes, slow_shapes, i);
        const size_t NV = s.N * s.V;
        for (int variant = 0; variant < 4; variant++) {
            const bool alias = variant & 1;
            ref_rng r = ref_rng_new(300 + i * 7 + variant);
            float *x = hmalloc(NV * 4), *out = hmalloc(NV * 4), *again = hmalloc(NV * 4);
            int32_t *y = hmalloc(s.N * 4);
            make_targets(y, s.N, s.V, -1, &r);
            make_logits(x, y, s.N, s.V, variant & 2 ? LOGITS_EXTREME : LOGITS_RANDOM, &r);
            double *x64 = to_double(x, NV), *out64 = hmalloc(NV * 8);
            hbuf hx = hbuf_from_f32(x, NV, 9), ho = alias ? hx : hbuf_from_f32(x, NV, 1);
            assert_ok(cf_log_softmax_rows(hctx(), view(ho), view(hx), s.N, s.V));
            ref_log_softmax_rows(out64, x64, s.N, s.V);
            hbuf_read(ho, out);
            assert_forward_close(out, out64, NV);
            hbuf_check_canary(ho);
            if (!alias) {
                hbuf_check_canary(hx);
                assert_ok(cf_log_softmax_rows(hctx(), view(ho), view(hx), s.N, s.V));
                hbuf_read(ho, again);
                assert_memory_equal(again, out, NV * 4);
                hbuf_free(ho);
            }
            hbuf_free(hx);
            free(x), free(out), free(again), free(y), free(x64), free(out64);
        }
    }
}

/* Argmax with many ties (values from a handful of levels), rows of one
 * value, NaN, and -inf rows: exactly the reference's index. */
static void argmax_rows_ties(void **state)
{
    (void)state;
    for (size_t i = 0; i < N_SHAPES(shapes, slow_shapes); i++) {
        const shape s = SHAPE(shapes, slow_shapes, i);
        const size_t NV = s.N * s.V;
        ref_rng r = ref_rng_new(500 + i);
        float *x = hmalloc(NV * 4);
        int32_t *idx = hmalloc(s.N * 4), *idx_ref = hmalloc(s.N * 4), *again = hmalloc(s.N * 4);
        for (size_t row = 0; row < s.N; row++) {
            float *xr = x + row * s.V;
            for (size_t c = 0; c < s.V; c++) {
                switch (row % 5) {
                case 0: xr[c] = (float)(ref_rng_next(&r) % 4); break;  /* ties everywhere */
                case 1: xr[c] = 2.5f; break;                           /* one value */
                case 2: xr[c] = -INFINITY; break;
                case 3: xr[c] = (float)ref_rng_uniform(&r, -1, 1); break;
                default: xr[c] = (float)(ref_rng_next(&r) % 3) - 1e4f;
                }
            }
            if (row % 7 == 6) xr[ref_rng_next(&r) % s.V] = NAN;
            if (row % 11 == 10) xr[s.V - 1] = 1e30f; /* the last column wins */
        }
        double *x64 = to_double(x, NV);
        hbuf hx = hbuf_from_f32(x, NV, 4), ho = hbuf_zeros(s.N, 6);
        assert_ok(cf_argmax_rows(hctx(), view(ho), view(hx), s.N, s.V));
        ref_argmax_rows(idx_ref, x64, s.N, s.V);
        hbuf_read(ho, idx);
        for (size_t row = 0; row < s.N; row++)
            if (idx[row] != idx_ref[row])
                fail_msg("N=%zu V=%zu row %zu: argmax %d, reference %d", s.N, s.V, row, idx[row],
                         idx_ref[row]);
        hbuf_check_canary(ho);
        hbuf_check_canary(hx);
        assert_ok(cf_argmax_rows(hctx(), view(ho), view(hx), s.N, s.V));
        hbuf_read(ho, again);
        assert_memory_equal(again, idx, s.N * 4);
        hbuf_free(hx), hbuf_free(ho);
        free(x), free(idx), free(idx_ref), free(again), free(x64);
    }
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(ce_shapes_smoothing_alias),
    cmocka_unit_test(ce_extreme_logits),
    cmocka_unit_test(ce_loss_only_and_grad_scale),
    cmocka_unit_test(ce_bad_targets_and_arguments),
    cmocka_unit_test(log_softmax_rows_rule),
    cmocka_unit_test(argmax_rows_ties),
};
HARNESS_DEVICE_MAIN("loss", tests)
