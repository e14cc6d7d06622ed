/* Bias + ReLU/GELU + dropout against the double-precision reference: odd
 * shapes and model widths, dropout off and on (the device's Philox mask
 * must equal the reference's), ReLU'(0) = 0 at exact zeros, offsets and
 * canaries, dinp overwritten (also in place over dout), dbias += over two
 * runs, bit-identical repeats, and argument errors. */
#include "harness.h"
#include "conformance.h"
#include "ops.h"
#include "ref_activation.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static cf_view view(hbuf b) { return cf_view_at(b.mem, b.off); }

static ref_activation ref_act(cf_activation a)
{
    return a == CF_ACT_GELU ? REF_ACT_GELU : REF_ACT_RELU;
}

static void check_case(size_t N, size_t C, cf_activation act, float p, uint64_t seed)
{
    const size_t NC = N * C;
    const cf_dropout drop = {p, 0x1234567890ull + seed, (uint32_t)seed, 11};
    const ref_act_dropout rdrop = {p, drop.seed, drop.step, drop.site};
    ref_rng r = ref_rng_new(seed);
    float *x = hmalloc(NC * 4), *b = hmalloc(C * 4), *dy = hmalloc(NC * 4), *db0 = hmalloc(C * 4);
    ref_fill_uniform(&r, x, NULL, NC, -3, 3);
    ref_fill_uniform(&r, b, NULL, C, -0.5, 0.5);
    ref_fill_uniform(&r, dy, NULL, NC, -1, 1);
    ref_fill_uniform(&r, db0, NULL, C, -1, 1); /* existing gradient to add to */
    for (size_t i = 0; i < NC; i += 5) x[i] = -b[i % C]; /* pre-activation exactly 0 */
    double *x64 = to_double(x, NC), *b64 = to_double(b, C), *dy64 = to_double(dy, NC);

    hbuf hx = hbuf_from_f32(x, NC, 3), hb = hbuf_from_f32(b, C, 5), hy = hbuf_zeros(NC, 7),
         hdy = hbuf_from_f32(dy, NC, 9), hdx = hbuf_zeros(NC, 13), hdb = hbuf_from_f32(db0, C, 17);
    assert_ok(cf_fill(hctx(), hy.mem, hy.off, NC, NAN)); /* overwritten */
    assert_ok(cf_bias_act_forward(hctx(), view(hy), view(hx), view(hb), N, C, act, &drop));
    double *y64 = hmalloc(NC * 8);
    float *y = hmalloc(NC * 4);
    ref_bias_act_forward(y64, x64, b64, N, C, ref_act(act), &rdrop);
    hbuf_read(hy, y);
    assert_forward_close(y, y64, NC);
    hbuf_check_canary(hy);

    /* backward twice: dinp the same both times (overwritten), dbias += */
    assert_ok(cf_fill(hctx(), hdx.mem, hdx.off, NC, NAN));
    double *dx64 = hmalloc(NC * 8), *db64 = to_double(db0, C);
    float *dx = hmalloc(NC * 4), *db = hmalloc(C * 4);
    for (int pass = 0; pass < 2; pass++) {
        assert_ok(cf_bias_act_backward(hctx(), view(hdx), view(hdb), view(hdy), view(hx), view(hb),
                                       N, C, act, &drop));
        ref_bias_act_backward(dx64, db64, dy64, x64, b64, N, C, ref_act(act), &rdrop);
        hbuf_read(hdx, dx), hbuf_read(hdb, db);
        assert_grad_close(dx, dx64, NC);
        assert_grad_close(db, db64, C);
        hbuf_check_canary(hdx), hbuf_check_canary(hdb);
    }
    if (act == CF_ACT_RELU)
        for (size_t i = 0; i < NC; i += 5) assert_true(dx[i] == 0.0f); /* ReLU'(0) = 0 */

    /* in place: dinp is dout */
    assert_ok(cf_bias_act_backward(hctx(), view(hdy), view(hdb), view(hdy), view(hx), view(hb), N,
                                   C, act, &drop));
    ref_bias_act_backward(dx64, db64, dy64, x64, b64, N, C, ref_act(act), &rdrop);
    hbuf_read(hdy, dx), hbuf_read(hdb, db);
    assert_grad_close(dx, dx64, NC);
    assert_grad_close(db, db64, C);
    hbuf_check_canary(hdy), hbuf_check_canary(hx), hbuf_check_canary(hb);

    hbuf_free(hx), hbuf_free(hb), hbuf_free(hy), hbuf_free(hdy), hbuf_free(hdx), hbuf_free(hdb);
    free(x), free(b), free(dy), free(db0), free(x64), free(b64), free(dy64), free(y64), free(y);
    free(dx64), free(db64), free(dx), free(db);
}

static const size_t odd[] = {1, 7, 61, 93, 257};

static void activation_odd_shapes(void **state)
{
    (void)state;
    for (int act = 0; act < 2; act++) {
        if (harness_is_slow()) {
            const size_t shapes[][2] = {{1, 1}, {7, 5}, {40, 9}, {3, 37}};
            for (size_t i = 0; i < 4; i++)
                check_case(shapes[i][0], shapes[i][1], act, i % 2 ? 0.25f : 0.0f, 10 + i);
            continue;
        }
        for (size_t i = 0; i < 5; i++)
            for (size_t j = 0; j < 5; j++)
                check_case(odd[i], odd[j], act, (i + j) % 2 ? 0.1f : 0.0f, 100 + 5 * i + j);
    }
}

static void activation_model_widths(void **state)
{
    (void)state;
    for (int act = 0; act < 2; act++) {
        if (harness_is_slow()) {
            check_case(2, 512, act, 0.1f, 40);
            continue;
        }
        check_case(61, 2048, act, 0.1f, 41);
        check_case(257, 512, act, 0.5f, 42);
        check_case(93, 2048, act, 0.0f, 43);
    }
}

/* p = 1 drops everything (PyTorch gives zeros); p = 0 and no dropout agree. */
static void activation_dropout_limits(void **state)
{
    (void)state;
    const size_t N = 7, C = 61, NC = N * C;
    ref_rng r = ref_rng_new(70);
    float *x = hmalloc(NC * 4), *b = hmalloc(C * 4), *y = hmalloc(NC * 4), *y0 = hmalloc(NC * 4);
    ref_fill_uniform(&r, x, NULL, NC, -3, 3);
    ref_fill_uniform(&r, b, NULL, C, -1, 1);
    hbuf hx = hbuf_from_f32(x, NC, 1), hb = hbuf_from_f32(b, C, 2), hy = hbuf_zeros(NC, 3),
         hdb = hbuf_zeros(C, 4);
    const cf_dropout all = {1.0f, 5, 6, 7}, none = {0.0f, 5, 6, 7};
    assert_ok(cf_bias_act_forward(hctx(), view(hy), view(hx), view(hb), N, C, CF_ACT_GELU, &all));
    hbuf_read(hy, y);
    for (size_t i = 0; i < NC; i++) assert_true(y[i] == 0.0f);
    assert_ok(cf_bias_act_forward(hctx(), view(hy), view(hx), view(hb), N, C, CF_ACT_GELU, &none));
    hbuf_read(hy, y0);
    assert_ok(cf_bias_act_forward(hctx(), view(hy), view(hx), view(hb), N, C, CF_ACT_GELU, NULL));
    hbuf_read(hy, y);
    assert_memory_equal(y, y0, NC * 4);
    assert_ok(cf_bias_act_backward(hctx(), view(hy), view(hdb), view(hy), view(hx), view(hb), N, C,
                                   CF_ACT_RELU, &all));
    hbuf_read(hy, y);
    for (size_t i = 0; i < NC; i++) assert_true(y[i] == 0.0f);
    hbuf_check_canary(hy), hbuf_check_canary(hdb);
    hbuf_free(hx), hbuf_free(hb), hbuf_free(hy), hbuf_free(hdb);
    free(x), free(b), free(y), free(y0);
}

static void activation_is_deterministic(void **state)
{
    (void)state;
    const size_t N = harness_is_slow() ? 40 : 257, C = harness_is_slow() ? 9 : 2048, NC = N * C;
    const cf_dropout drop = {0.1f, 99, 1, 2};
    ref_rng r = ref_rng_new(80);
    float *x = hmalloc(NC * 4), *b = hmalloc(C * 4), *dy = hmalloc(NC * 4);
    ref_fill_uniform(&r, x, NULL, NC, -3, 3);
    ref_fill_uniform(&r, b, NULL, C, -1, 1);
    ref_fill_uniform(&r, dy, NULL, NC, -1, 1);
    hbuf hx = hbuf_from_f32(x, NC, 0), hb = hbuf_from_f32(b, C, 0), hdy = hbuf_from_f32(dy, NC, 0);
    float *first = hmalloc((2 * NC + C) * 4), *again = hmalloc((2 * NC + C) * 4);
    for (int run = 0; run < 2; run++) {
        float *dst = run ? again : first;
        hbuf y = hbuf_zeros(NC, 0), dx = hbuf_zeros(NC, 0), db = hbuf_zeros(C, 0);
        assert_ok(cf_bias_act_forward(hctx(), view(y), view(hx), view(hb), N, C, CF_ACT_GELU,
                                      &drop));
        assert_ok(cf_bias_act_backward(hctx(), view(dx), view(db), view(hdy), view(hx), view(hb), N,
                                       C, CF_ACT_GELU, &drop));
        hbuf_read(y, dst), hbuf_read(dx, dst + NC), hbuf_read(db, dst + 2 * NC);
        hbuf_free(y), hbuf_free(dx), hbuf_free(db);
    }
    assert_memory_equal(first, again, (2 * NC + C) * 4);
    hbuf_free(hx), hbuf_free(hb), hbuf_free(hdy);
    free(x), free(b), free(dy), free(first), free(again);
}

static void activation_bad_arguments(void **state)
{
    (void)state;
    hbuf a = hbuf_zeros(16, 0);
    const cf_dropout negative = {-0.5f, 1, 2, 3}, above_one = {1.5f, 1, 2, 3};
    assert_int_equal(cf_bias_act_forward(hctx(), view(a), view(a), view(a), 2, 2, (cf_activation)7,
                                         NULL),
                     CLFORMER_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(clformer_last_error(), "CF_ACT_RELU"));
    assert_int_equal(cf_bias_act_forward(hctx(), view(a), view(a), view(a), 2, 2, CF_ACT_RELU,
                                         &negative),
                     CLFORMER_ERR_INVALID_ARGUMENT);
    assert_int_equal(cf_bias_act_backward(hctx(), view(a), view(a), view(a), view(a), view(a), 2,
                                          2, CF_ACT_GELU, &above_one),
                     CLFORMER_ERR_INVALID_ARGUMENT);
    assert_ok(cf_bias_act_forward(hctx(), view(a), view(a), view(a), 0, 2, CF_ACT_RELU, NULL));
    hbuf_check_canary(a);
    hbuf_free(a);
}

static void activation_conformance(void **state)
{
    (void)state;
    assert_conformance(conf_activation);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(activation_odd_shapes),
    cmocka_unit_test(activation_model_widths),
    cmocka_unit_test(activation_dropout_limits),
    cmocka_unit_test(activation_is_deterministic),
    cmocka_unit_test(activation_bad_arguments),
    cmocka_unit_test(activation_conformance),
};
HARNESS_DEVICE_MAIN("activation", tests)
