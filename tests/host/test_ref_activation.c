/* The reference bias + ReLU/GELU + dropout: the += rules, the dropout mask
 * against Philox's published test vectors, and GELU's known values. Its
 * backward against finite differences is the op descriptor's gradcheck
 * (runtime/check/conf_activation.c, run by test_ops_table). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include "ref_activation.h"
#include "ref_random.h"

typedef struct {
    size_t N, C;
    clformer_activation act;
    const ref_act_dropout *dropout;
    double *inp, *bias, *g, *out;
} problem;

static double *alloc(size_t n) { return test_calloc(n ? n : 1, sizeof(double)); }

static problem make(size_t N, size_t C, clformer_activation act, const ref_act_dropout *d,
                    uint64_t seed)
{
    problem p = {N, C, act, d, alloc(N * C), alloc(C), alloc(N * C), alloc(N * C)};
    ref_rng r = ref_rng_new(seed);
    for (size_t c = 0; c < C; c++) p.bias[c] = ref_rng_uniform(&r, -0.5, 0.5);
    for (size_t i = 0; i < N * C; i++) {
        /* ReLU has a kink at 0: keep pre-activations at least 0.01 away from it so the
         * differences (step 1e-6) never straddle it. */
        do p.inp[i] = ref_rng_uniform(&r, -3, 3);
        while (fabs(p.inp[i] + p.bias[i % C]) < 0.01);
        p.g[i] = ref_rng_uniform(&r, -1, 1);
    }
    return p;
}

static void release(problem *p)
{
    test_free(p->inp), test_free(p->bias), test_free(p->g), test_free(p->out);
}

/* dbias accumulates; dinp is overwritten and may alias dout. */
static void activation_backward_accumulates_dbias(void **state)
{
    (void)state;
    problem p = make(4, 3, CLFORMER_ACT_GELU, NULL, 7);
    double *d1 = alloc(12), *b1 = alloc(3), *b2 = alloc(3);
    ref_bias_act_backward(d1, b1, p.g, p.inp, p.bias, 4, 3, CLFORMER_ACT_GELU, NULL);
    ref_bias_act_backward(p.out, b2, p.g, p.inp, p.bias, 4, 3, CLFORMER_ACT_GELU, NULL);
    ref_bias_act_backward(p.g, b2, p.g, p.inp, p.bias, 4, 3, CLFORMER_ACT_GELU, NULL); /* aliased */
    for (size_t i = 0; i < 12; i++) assert_true(p.g[i] == d1[i]);
    for (size_t c = 0; c < 3; c++) assert_true(fabs(b2[c] - 2.0 * b1[c]) < 1e-12);
    test_free(d1), test_free(b1), test_free(b2);
    release(&p);
}

/* ReLU'(0) = 0 (PyTorch), and GELU's values from its definition. */
static void activation_known_values(void **state)
{
    (void)state;
    const double x[4] = {0.0, 1.0, -1.0, 2.0}, zero[1] = {0.0};
    double y[4], d[4], db[1] = {0.0}, ones[4] = {1, 1, 1, 1};
    ref_bias_act_forward(y, x, zero, 4, 1, CLFORMER_ACT_GELU, NULL);
    assert_true(y[0] == 0.0);
    assert_true(fabs(y[1] - 0.8413447460685429) < 1e-15); /* Phi(1) */
    assert_true(fabs(y[2] + 0.15865525393145707) < 1e-15);
    assert_true(fabs(y[3] - 1.9544997361036416) < 1e-15);
    ref_bias_act_backward(d, db, ones, x, zero, 4, 1, CLFORMER_ACT_GELU, NULL);
    assert_true(fabs(d[0] - 0.5) < 1e-15);
    ref_bias_act_backward(d, db, ones, x, zero, 4, 1, CLFORMER_ACT_RELU, NULL);
    assert_true(d[0] == 0.0 && d[1] == 1.0 && d[2] == 0.0 && d[3] == 1.0);
}

/* Philox4x32-10 with key 0 and counter 0 gives 0x6627e8d5 0xe169c58d
 * 0xbc57ac4c 0x9b00dbd8 (Random123's known-answer vectors). Element i < 4 of
 * site 0, step 0, seed 0 uses word i: its uniform is word >> 8 over 2^24, so
 * p equal to it keeps the element and the next float above drops it. */
static void dropout_mask_follows_philox(void **state)
{
    (void)state;
    const uint32_t words[4] = {0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu, 0x9b00dbd8u};
    for (uint64_t i = 0; i < 4; i++) {
        const float u = (float)((double)(words[i] >> 8) / 16777216.0);
        ref_act_dropout d = {u, 0, 0, 0};
        assert_true(fabs(ref_act_dropout_scale(&d, i) - 1.0 / (1.0 - (double)u)) < 1e-15);
        d.p = nextafterf(u, 1.0f);
        assert_true(ref_act_dropout_scale(&d, i) == 0.0);
    }
    /* about p of a long run is dropped, and the mask depends on every field */
    const ref_act_dropout a = {0.25f, 42, 3, 9}, b = {0.25f, 42, 3, 10}, c = {0.25f, 42, 4, 9},
                          e = {0.25f, 43, 3, 9};
    size_t dropped = 0, diff_site = 0, diff_step = 0, diff_seed = 0;
    const size_t n = 100000;
    for (uint64_t i = 0; i < n; i++) {
        const double s = ref_act_dropout_scale(&a, i);
        dropped += s == 0.0;
        diff_site += s != ref_act_dropout_scale(&b, i);
        diff_step += s != ref_act_dropout_scale(&c, i);
        diff_seed += s != ref_act_dropout_scale(&e, i);
    }
    assert_true(dropped > 24000 && dropped < 26000);
    assert_true(diff_site > 30000 && diff_step > 30000 && diff_seed > 30000);
    assert_true(ref_act_dropout_scale(NULL, 5) == 1.0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(activation_backward_accumulates_dbias),
        cmocka_unit_test(activation_known_values),
        cmocka_unit_test(dropout_mask_follows_philox),
    };
    return cmocka_run_group_tests_name("ref_activation", tests, NULL, NULL);
}
