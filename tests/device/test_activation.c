/* Bias + ReLU/GELU + dropout against the double-precision reference,
 * through the shared check's case runner (conf_activation_run: guards,
 * ReLU'(0) = 0 at exact zeros, dinp overwritten and in place over dout,
 * dbias += over two runs): odd shapes and model widths, dropout off and on.
 * Then what only the device test does: dropout's limits, bit-identical
 * repeats and argument errors. */
#include "harness.h"
#include "conformance.h"
#include "ops.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static cf_view view(hbuf b) { return cf_view_at(b.mem, b.off); }

/* One case of the shared check (runtime/check/conf_activation.c): forward,
 * backward twice and in place, ReLU'(0) = 0, every tensor guarded. */
static void check_case(size_t N, size_t C, clformer_activation act, float p, uint64_t seed)
{
    const conf_activation_case c = {N, C, act, p, seed};
    assert_conformance_case(conf_activation_run(hctx(), &c, harness_conf_sink, &failures));
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
    assert_ok(cf_bias_act_forward(hctx(), view(hy), view(hx), view(hb), N, C, CLFORMER_ACT_GELU, &all));
    hbuf_read(hy, y);
    for (size_t i = 0; i < NC; i++) assert_true(y[i] == 0.0f);
    assert_ok(cf_bias_act_forward(hctx(), view(hy), view(hx), view(hb), N, C, CLFORMER_ACT_GELU, &none));
    hbuf_read(hy, y0);
    assert_ok(cf_bias_act_forward(hctx(), view(hy), view(hx), view(hb), N, C, CLFORMER_ACT_GELU, NULL));
    hbuf_read(hy, y);
    assert_memory_equal(y, y0, NC * 4);
    assert_ok(cf_bias_act_backward(hctx(), view(hy), view(hdb), view(hy), view(hx), view(hb), N, C,
                                   CLFORMER_ACT_RELU, &all));
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
        assert_ok(cf_bias_act_forward(hctx(), view(y), view(hx), view(hb), N, C, CLFORMER_ACT_GELU,
                                      &drop));
        assert_ok(cf_bias_act_backward(hctx(), view(dx), view(db), view(hdy), view(hx), view(hb), N,
                                       C, CLFORMER_ACT_GELU, &drop));
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
    assert_int_equal(cf_bias_act_forward(hctx(), view(a), view(a), view(a), 2, 2, (clformer_activation)7,
                                         NULL),
                     CLFORMER_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(clformer_last_error(), "CLFORMER_ACT_RELU"));
    assert_int_equal(cf_bias_act_forward(hctx(), view(a), view(a), view(a), 2, 2, CLFORMER_ACT_RELU,
                                         &negative),
                     CLFORMER_ERR_INVALID_ARGUMENT);
    assert_int_equal(cf_bias_act_backward(hctx(), view(a), view(a), view(a), view(a), view(a), 2,
                                          2, CLFORMER_ACT_GELU, &above_one),
                     CLFORMER_ERR_INVALID_ARGUMENT);
    assert_ok(cf_bias_act_forward(hctx(), view(a), view(a), view(a), 0, 2, CLFORMER_ACT_RELU, NULL));
    hbuf_check_canary(a);
    hbuf_free(a);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(activation_odd_shapes),
    cmocka_unit_test(activation_model_widths),
    cmocka_unit_test(activation_dropout_limits),
    cmocka_unit_test(activation_is_deterministic),
    cmocka_unit_test(activation_bad_arguments),
};
HARNESS_DEVICE_MAIN("activation", tests)
