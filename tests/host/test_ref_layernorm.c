/* The reference LayerNorm: a constant row's output, the += rules and the
 * forward's defining properties. Its backward against finite differences
 * (odd shapes, a constant row, a large mean) is the op descriptor's
 * gradcheck (runtime/check/conf_layernorm.c, run by test_ops_table). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "ref_layernorm.h"
#include "ref_random.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    size_t N, C;
    double *inp, *weight, *bias, *g; /* g: the fixed upstream gradient */
    double *out, *mean, *rstd;
} problem;

static double *alloc(size_t n) { return test_calloc(n ? n : 1, sizeof(double)); }

static problem make(size_t N, size_t C, uint64_t seed, double center)
{
    problem p = {N, C, alloc(N * C), alloc(C), alloc(C), alloc(N * C), alloc(N * C), alloc(N),
                 alloc(N)};
    ref_rng r = ref_rng_new(seed);
    for (size_t i = 0; i < N * C; i++) p.inp[i] = center + ref_rng_uniform(&r, -1, 1);
    for (size_t c = 0; c < C; c++) {
        p.weight[c] = ref_rng_uniform(&r, 0.5, 1.5);
        p.bias[c] = ref_rng_uniform(&r, -0.5, 0.5);
    }
    for (size_t i = 0; i < N * C; i++) p.g[i] = ref_rng_uniform(&r, -1, 1);
    return p;
}

static void release(problem *p)
{
    test_free(p->inp), test_free(p->weight), test_free(p->bias), test_free(p->g);
    test_free(p->out), test_free(p->mean), test_free(p->rstd);
}

static void forward(problem *p)
{
    ref_layernorm_forward(p->out, p->mean, p->rstd, p->inp, p->weight, p->bias, p->N, p->C, 1e-5);
}

static void layernorm_constant_row(void **state)
{
    (void)state;
    problem p = make(3, 9, 21, 0.0);
    for (size_t c = 0; c < 9; c++) p.inp[9 + c] = 0.75; /* row 1: variance 0 */
    forward(&p);
    for (size_t c = 0; c < 9; c++) assert_true(fabs(p.out[9 + c] - p.bias[c]) < 1e-12);
    assert_true(fabs(p.rstd[1] - 1.0 / sqrt(1e-5)) < 1e-9);
    release(&p);
}

/* Each normalised row has mean 0 and variance var/(var+eps) before the affine part. */
static void layernorm_forward_normalises(void **state)
{
    (void)state;
    problem p = make(5, 31, 30, 3.0);
    for (size_t c = 0; c < p.C; c++) p.weight[c] = 1.0, p.bias[c] = 0.0;
    forward(&p);
    for (size_t r = 0; r < p.N; r++) {
        double m = 0.0, v = 0.0;
        for (size_t c = 0; c < p.C; c++) m += p.out[r * p.C + c];
        m /= (double)p.C;
        for (size_t c = 0; c < p.C; c++) v += pow(p.out[r * p.C + c] - m, 2);
        v /= (double)p.C;
        const double var = 1.0 / (p.rstd[r] * p.rstd[r]) - 1e-5;
        assert_true(fabs(m) < 1e-12);
        assert_true(fabs(v - var / (var + 1e-5)) < 1e-12);
        assert_true(fabs(p.mean[r] - 3.0) < 0.5);
    }
    release(&p);
}

/* Parameter gradients accumulate; dinp accumulates only when asked. */
static void layernorm_backward_accumulates(void **state)
{
    (void)state;
    problem p = make(4, 6, 40, 0.0);
    forward(&p);
    double *d1 = alloc(24), *w1 = alloc(6), *b1 = alloc(6);
    double *d2 = alloc(24), *w2 = alloc(6), *b2 = alloc(6);
    ref_layernorm_backward(d1, w1, b1, p.g, p.inp, p.weight, p.mean, p.rstd, 4, 6, false);
    for (size_t i = 0; i < 24; i++) d2[i] = 100.0; /* overwritten when accumulate is false */
    ref_layernorm_backward(d2, w2, b2, p.g, p.inp, p.weight, p.mean, p.rstd, 4, 6, false);
    ref_layernorm_backward(d2, w2, b2, p.g, p.inp, p.weight, p.mean, p.rstd, 4, 6, true);
    for (size_t i = 0; i < 24; i++) assert_true(fabs(d2[i] - 2.0 * d1[i]) < 1e-12);
    for (size_t c = 0; c < 6; c++) {
        assert_true(fabs(w2[c] - 2.0 * w1[c]) < 1e-12);
        assert_true(fabs(b2[c] - 2.0 * b1[c]) < 1e-12);
    }
    test_free(d1), test_free(w1), test_free(b1), test_free(d2), test_free(w2), test_free(b2);
    release(&p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(layernorm_constant_row),
        cmocka_unit_test(layernorm_forward_normalises),
        cmocka_unit_test(layernorm_backward_accumulates),
    };
    return cmocka_run_group_tests_name("ref_layernorm", tests, NULL, NULL);
}
