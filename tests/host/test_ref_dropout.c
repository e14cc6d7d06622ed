/* The dropout reference's backward against central finite differences of
 * its forward (docs/TESTING.md: eps 1e-6, atol 1e-5, rtol 1e-3). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <math.h>
#include <stdlib.h>
#include <cmocka.h>

#include "ref_dropout.h"
#include "ref_random.h"

#define EPS 1e-6

static void assert_fd(double fd, double g, const char *what, size_t i)
{
    if (!(fabs(fd - g) <= 1e-5 + 1e-3 * fabs(g)))
        fail_msg("%s[%zu]: analytic %.9g, finite difference %.9g", what, i, g, fd);
}

/* L = sum w * out(res, x) */
static double loss(const double *w, const double *res, const double *x, size_t n,
                   const ref_dropout *d)
{
    double *out = malloc(n * sizeof *out), l = 0.0;
    ref_residual_dropout_forward(out, res, x, n, d);
    for (size_t i = 0; i < n; i++) l += w[i] * out[i];
    free(out);
    return l;
}

static void check(const ref_dropout *d)
{
    const size_t n = 61;
    double w[61], res[61], x[61], dx[61];
    ref_rng r = ref_rng_new(5);
    for (size_t i = 0; i < n; i++) {
        w[i] = ref_rng_uniform(&r, -1, 1);
        res[i] = ref_rng_uniform(&r, -1, 1);
        x[i] = ref_rng_uniform(&r, -1, 1);
    }
    ref_dropout_backward(dx, w, n, d);
    for (size_t i = 0; i < n; i++) {
        const double x0 = x[i], r0 = res[i];
        x[i] = x0 + EPS;
        double lp = loss(w, res, x, n, d);
        x[i] = x0 - EPS;
        double lm = loss(w, res, x, n, d);
        x[i] = x0;
        assert_fd((lp - lm) / (2 * EPS), dx[i], "dx", i);
        res[i] = r0 + EPS; /* the residual branch's gradient is dout itself */
        lp = loss(w, res, x, n, d);
        res[i] = r0 - EPS;
        lm = loss(w, res, x, n, d);
        res[i] = r0;
        assert_fd((lp - lm) / (2 * EPS), w[i], "dres", i);
    }
}

static void dropout_backward_matches_finite_differences(void **state)
{
    (void)state;
    check(NULL);
    const ref_dropout d = {0.3f, 12345, 7, 3};
    check(&d);
    size_t dropped = 0; /* the check above must have seen both kinds of element */
    for (size_t i = 0; i < 61; i++) dropped += !ref_dropout_kept(&d, i);
    assert_true(dropped > 0 && dropped < 61);
}

static void add_and_alias(void **state)
{
    (void)state;
    double a[3] = {1, 2, 3}, b[3] = {0.5, -1, 4};
    ref_add(a, a, b, 3);
    assert_true(a[0] == 1.5 && a[1] == 1 && a[2] == 7);
    const ref_dropout d = {0.5f, 1, 1, 1};
    double x[64];
    for (size_t i = 0; i < 64; i++) x[i] = 1.0;
    ref_dropout_backward(x, x, 64, &d); /* in place */
    for (size_t i = 0; i < 64; i++) assert_true(x[i] == (ref_dropout_kept(&d, i) ? 2.0 : 0.0));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(dropout_backward_matches_finite_differences),
        cmocka_unit_test(add_and_alias),
    };
    return cmocka_run_group_tests_name("ref_dropout", tests, NULL, NULL);
}
