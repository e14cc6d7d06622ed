/* The linear layer against the double-precision reference, through the
 * shared check's case runner (conf_linear_run: guards, out and dinp
 * overwritten even over NaN or accumulated per flag, dweight/dbias += over
 * the backward runs, optional dinp and bias): odd shapes and model widths,
 * with and without bias. Then bit-identical repeats and errors. */
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

/* One case of the shared check (runtime/check/conf_linear.c): forward over
 * NaN, backward overwriting, accumulating and without dinp, guards. */
static void check_case(shape s, bool with_bias, uint64_t seed)
{
    const conf_linear_case c = {s.N, s.IC, s.OC, with_bias, seed};
    assert_conformance_case(conf_linear_run(hctx(), &c, harness_conf_sink, &failures));
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
