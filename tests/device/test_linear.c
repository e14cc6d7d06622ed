/* The linear layer against the double-precision reference: odd shapes and
 * model widths, with and without bias, offsets and canaries, out and dinp
 * overwritten (even over NaN) or accumulated per flag, dweight/dbias +=
 * over two backward runs, optional dinp/dbias, bit-identical repeats. */
#include "harness.h"
#include "conformance.h"
#include "ops.h"
#include "ref_gemm.h"
#include "ref_linear.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    size_t N, IC, OC;
} shape;

static cf_view view(hbuf b) { return cf_view_at(b.mem, b.off); }

static void check_case(shape s, bool with_bias, uint64_t seed)
{
    const size_t N = s.N, IC = s.IC, OC = s.OC;
    ref_rng r = ref_rng_new(seed);
    float *x = hmalloc(N * IC * 4), *w = hmalloc(OC * IC * 4), *b = hmalloc(OC * 4);
    float *dy = hmalloc(N * OC * 4), *dw0 = hmalloc(OC * IC * 4), *db0 = hmalloc(OC * 4);
    ref_fill_uniform(&r, x, NULL, N * IC, -1, 1);
    ref_fill_uniform(&r, w, NULL, OC * IC, -1, 1);
    ref_fill_uniform(&r, b, NULL, OC, -1, 1);
    ref_fill_uniform(&r, dy, NULL, N * OC, -1, 1);
    ref_fill_uniform(&r, dw0, NULL, OC * IC, -1, 1); /* existing gradients to add to */
    ref_fill_uniform(&r, db0, NULL, OC, -1, 1);
    double *x64 = to_double(x, N * IC), *w64 = to_double(w, OC * IC), *b64 = to_double(b, OC);
    double *dy64 = to_double(dy, N * OC);

    hbuf hx = hbuf_from_f32(x, N * IC, 3), hw = hbuf_from_f32(w, OC * IC, 5),
         hb = hbuf_from_f32(b, OC, 7), hy = hbuf_zeros(N * OC, 11),
         hdy = hbuf_from_f32(dy, N * OC, 13);
    const cf_view vb = with_bias ? view(hb) : (cf_view){NULL, 0};

    /* forward: overwrites out, even where it held NaN */
    assert_ok(cf_fill(hctx(), hy.mem, hy.off, N * OC, NAN));
    assert_ok(cf_linear_forward(hctx(), view(hy), view(hx), view(hw), vb, N, IC, OC));
    double *y64 = hmalloc(N * OC * 8), *bound = hmalloc(N * OC * 8);
    float *y = hmalloc(N * OC * 4);
    ref_gemm(false, true, N, OC, IC, 1.0, x64, IC, w64, IC, 0.0, y64, OC, bound);
    ref_linear_forward(y64, x64, w64, with_bias ? b64 : NULL, N, IC, OC);
    for (size_t i = 0; with_bias && i < N * OC; i++) bound[i] += fabs(b64[i % OC]);
    hbuf_read(hy, y);
    assert_gemm_close(y, y64, bound, N * OC);
    hbuf_check_canary(hy);

    /* backward twice: dinp overwritten (over NaN), then accumulated; dweight, dbias += */
    hbuf hdx = hbuf_zeros(N * IC, 17), hdw = hbuf_from_f32(dw0, OC * IC, 19),
         hdb = hbuf_from_f32(db0, OC, 23);
    assert_ok(cf_fill(hctx(), hdx.mem, hdx.off, N * IC, NAN));
    double *dx64 = hmalloc(N * IC * 8), *dw64 = to_double(dw0, OC * IC), *db64 = to_double(db0, OC);
    float *dx = hmalloc(N * IC * 4), *dw = hmalloc(OC * IC * 4), *db = hmalloc(OC * 4);
    for (int pass = 0; pass < 2; pass++) {
        const bool acc = pass == 1;
        assert_ok(cf_linear_backward(hctx(), view(hdx), view(hdw),
                                     with_bias ? view(hdb) : (cf_view){NULL, 0}, view(hdy),
                                     view(hx), view(hw), N, IC, OC, acc));
        ref_linear_backward(dx64, dw64, with_bias ? db64 : NULL, dy64, x64, w64, N, IC, OC, acc);
        hbuf_read(hdx, dx), hbuf_read(hdw, dw), hbuf_read(hdb, db);
        assert_grad_close(dx, dx64, N * IC);
        assert_grad_close(dw, dw64, OC * IC);
        assert_grad_close(db, db64, OC); /* without bias: db0 unchanged */
        hbuf_check_canary(hdx), hbuf_check_canary(hdw), hbuf_check_canary(hdb);
    }
    /* dinp not wanted: parameter gradients only */
    assert_ok(cf_linear_backward(hctx(), (cf_view){NULL, 0}, view(hdw), view(hdb), view(hdy),
                                 view(hx), view(hw), N, IC, OC, false));
    ref_linear_backward(NULL, dw64, db64, dy64, x64, w64, N, IC, OC, false);
    hbuf_read(hdw, dw), hbuf_read(hdb, db);
    assert_grad_close(dw, dw64, OC * IC);
    assert_grad_close(db, db64, OC);
    hbuf_check_canary(hx), hbuf_check_canary(hw), hbuf_check_canary(hb), hbuf_check_canary(hdy);

    hbuf_free(hx), hbuf_free(hw), hbuf_free(hb), hbuf_free(hy), hbuf_free(hdy);
    hbuf_free(hdx), hbuf_free(hdw), hbuf_free(hdb);
    free(x), free(w), free(b), free(dy), free(dw0), free(db0), free(x64), free(w64), free(b64);
    free(dy64), free(y64), free(bound), free(y), free(dx64), free(dw64), free(db64), free(dx);
    free(dw), free(db);
}

static const shape odd_shapes[] = {{1, 1, 1},   {7, 61, 93},  {61, 93, 257}, {93, 257, 7},
                                   {257, 7, 61}, {1, 257, 93}, {257, 1, 7},   {7, 7, 257}};
static const shape small_shapes[] = {{1, 1, 1}, {7, 5, 3}, {3, 7, 13}, {13, 3, 5}};

static void linear_odd_shapes(void **state)
{
    (void)state;
    const shape *s = harness_is_slow() ? small_shapes : odd_shapes;
    const size_t n = harness_is_slow() ? 4 : sizeof odd_shapes / sizeof *odd_shapes;
    for (size_t i = 0; i < n; i++) {
        check_case(s[i], true, 10 + i);
        check_case(s[i], false, 30 + i);
    }
}

/* The feed-forward and projection shapes of the model (d_model 512, d_ff 2048). */
static void linear_model_widths(void **state)
{
    (void)state;
    if (harness_is_slow()) {
        check_case((shape){5, 24, 16}, true, 50);
        return;
    }
    check_case((shape){61, 512, 2048}, true, 51);
    check_case((shape){93, 2048, 512}, true, 52);
    check_case((shape){257, 512, 512}, true, 53);
}

static void linear_is_deterministic(void **state)
{
    (void)state;
    const shape s = harness_is_slow() ? (shape){40, 9, 7} : (shape){257, 512, 93};
    const size_t ny = s.N * s.OC, nx = s.N * s.IC, nw = s.OC * s.IC;
    ref_rng r = ref_rng_new(60);
    float *x = hmalloc(nx * 4), *w = hmalloc(nw * 4), *b = hmalloc(s.OC * 4), *dy = hmalloc(ny * 4);
    ref_fill_uniform(&r, x, NULL, nx, -1, 1);
    ref_fill_uniform(&r, w, NULL, nw, -1, 1);
    ref_fill_uniform(&r, b, NULL, s.OC, -1, 1);
    ref_fill_uniform(&r, dy, NULL, ny, -1, 1);
    hbuf hx = hbuf_from_f32(x, nx, 0), hw = hbuf_from_f32(w, nw, 0), hb = hbuf_from_f32(b, s.OC, 0),
         hdy = hbuf_from_f32(dy, ny, 0);
    const size_t total = ny + nx + nw + s.OC;
    float *first = hmalloc(total * 4), *again = hmalloc(total * 4);
    for (int run = 0; run < 2; run++) {
        float *dst = run ? again : first;
        hbuf y = hbuf_zeros(ny, 0), dx = hbuf_zeros(nx, 0), dw = hbuf_zeros(nw, 0),
             db = hbuf_zeros(s.OC, 0);
        assert_ok(cf_linear_forward(hctx(), view(y), view(hx), view(hw), view(hb), s.N, s.IC,
                                    s.OC));
        assert_ok(cf_linear_backward(hctx(), view(dx), view(dw), view(db), view(hdy), view(hx),
                                     view(hw), s.N, s.IC, s.OC, false));
        hbuf_read(y, dst), hbuf_read(dx, dst + ny), hbuf_read(dw, dst + ny + nx);
        hbuf_read(db, dst + ny + nx + nw);
        hbuf_free(y), hbuf_free(dx), hbuf_free(dw), hbuf_free(db);
    }
    assert_memory_equal(first, again, total * 4);
    hbuf_free(hx), hbuf_free(hw), hbuf_free(hb), hbuf_free(hdy);
    free(x), free(w), free(b), free(dy), free(first), free(again);
}

/* Empty sizes: N or OC of 0 touch nothing; IC of 0 gives out = bias and
 * dinp = 0 (or unchanged when accumulating). */
static void linear_empty_sizes(void **state)
{
    (void)state;
    const float bias[3] = {0.5f, -1.0f, 2.0f};
    hbuf b = hbuf_from_f32(bias, 3, 1), y = hbuf_zeros(6, 2), any = hbuf_zeros(8, 3);
    assert_ok(cf_fill(hctx(), y.mem, y.off, 6, NAN));
    assert_ok(cf_linear_forward(hctx(), view(y), view(any), view(any), view(b), 2, 0, 3));
    float out[6];
    hbuf_read(y, out);
    for (int i = 0; i < 6; i++) assert_true(out[i] == bias[i % 3]);
    assert_ok(cf_linear_forward(hctx(), view(any), view(any), view(any), view(b), 0, 4, 3));
    assert_ok(cf_linear_forward(hctx(), view(any), view(any), view(any), view(b), 2, 4, 0));
    assert_ok(cf_linear_backward(hctx(), view(y), view(any), view(b), view(any), view(any),
                                 view(any), 2, 3, 0, false));
    hbuf_read(y, out);
    for (int i = 0; i < 6; i++) assert_true(out[i] == 0.0f); /* dinp = dout W with OC = 0 */
    float zeros[8];
    hbuf_read(any, zeros);
    for (int i = 0; i < 8; i++) assert_true(zeros[i] == 0.0f);
    hbuf_check_canary(b), hbuf_check_canary(y), hbuf_check_canary(any);
    hbuf_free(b), hbuf_free(y), hbuf_free(any);
}

static void linear_conformance(void **state)
{
    (void)state;
    assert_conformance(conf_linear);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(linear_odd_shapes),
    cmocka_unit_test(linear_model_widths),
    cmocka_unit_test(linear_is_deterministic),
    cmocka_unit_test(linear_empty_sizes),
    cmocka_unit_test(linear_conformance),
};
HARNESS_DEVICE_MAIN("linear", tests)
