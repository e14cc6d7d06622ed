/* The reference linear layer: the += rules. Its backward against finite
 * differences is the op descriptor's gradcheck (runtime/check/conf_linear.c,
 * run by test_ops_table). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include "ref_linear.h"
#include "ref_random.h"

typedef struct {
    size_t N, IC, OC;
    double *inp, *weight, *bias, *g, *out; /* bias NULL: no bias */
} problem;

static double *alloc(size_t n) { return test_calloc(n ? n : 1, sizeof(double)); }

static problem make(size_t N, size_t IC, size_t OC, bool with_bias, uint64_t seed)
{
    problem p = {N, IC, OC, alloc(N * IC), alloc(OC * IC), with_bias ? alloc(OC) : NULL,
                 alloc(N * OC), alloc(N * OC)};
    ref_rng r = ref_rng_new(seed);
    for (size_t i = 0; i < N * IC; i++) p.inp[i] = ref_rng_uniform(&r, -1, 1);
    for (size_t i = 0; i < OC * IC; i++) p.weight[i] = ref_rng_uniform(&r, -1, 1);
    for (size_t i = 0; with_bias && i < OC; i++) p.bias[i] = ref_rng_uniform(&r, -1, 1);
    for (size_t i = 0; i < N * OC; i++) p.g[i] = ref_rng_uniform(&r, -1, 1);
    return p;
}

static void release(problem *p)
{
    test_free(p->inp), test_free(p->weight), test_free(p->g), test_free(p->out);
    if (p->bias) test_free(p->bias);
}

static void linear_backward_accumulates(void **state)
{
    (void)state;
    problem p = make(5, 4, 3, true, 99);
    double *d1 = alloc(20), *w1 = alloc(12), *b1 = alloc(3);
    double *d2 = alloc(20), *w2 = alloc(12), *b2 = alloc(3);
    ref_linear_backward(d1, w1, b1, p.g, p.inp, p.weight, 5, 4, 3, false);
    for (size_t i = 0; i < 20; i++) d2[i] = -7.0; /* overwritten when accumulate is false */
    ref_linear_backward(d2, w2, b2, p.g, p.inp, p.weight, 5, 4, 3, false);
    ref_linear_backward(d2, w2, b2, p.g, p.inp, p.weight, 5, 4, 3, true);
    for (size_t i = 0; i < 20; i++) assert_true(fabs(d2[i] - 2.0 * d1[i]) < 1e-12);
    for (size_t i = 0; i < 12; i++) assert_true(fabs(w2[i] - 2.0 * w1[i]) < 1e-12);
    for (size_t i = 0; i < 3; i++) assert_true(fabs(b2[i] - 2.0 * b1[i]) < 1e-12);
    /* dinp NULL: only the parameter gradients */
    ref_linear_backward(NULL, w2, b2, p.g, p.inp, p.weight, 5, 4, 3, true);
    for (size_t i = 0; i < 12; i++) assert_true(fabs(w2[i] - 3.0 * w1[i]) < 1e-12);
    test_free(d1), test_free(w1), test_free(b1), test_free(d2), test_free(w2), test_free(b2);
    release(&p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(linear_backward_accumulates),
    };
    return cmocka_run_group_tests_name("ref_linear", tests, NULL, NULL);
}
