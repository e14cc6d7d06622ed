/* The 16-bit storage rules of runtime/check/reference/ref_compare.c on values
 * worked out by hand: which floats are bf16 and fp16 values, the element
 * bound atol + rtol |r| + the fp32 rule (+ a carried rounding), the NMSE
 * bound of the gradient rule, and that a value outside the format fails
 * even when it is close (an op that forgot to store rounded). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "ref_compare.h"

enum { BF16 = 1, FP16 = 2 };

static void format_values(void **state)
{
    (void)state;
    /* bf16: 8 significant bits, fp32's exponent range */
    assert_true(ref_is_format_value(1.0f, BF16));
    assert_true(ref_is_format_value(1.0f + 0x1p-7f, BF16));
    assert_false(ref_is_format_value(1.0f + 0x1p-8f, BF16));
    assert_true(ref_is_format_value(-0x1p127f * 1.75f, BF16));
    assert_true(ref_is_format_value(INFINITY, BF16));
    assert_true(ref_is_format_value(NAN, BF16));
    /* fp16: 11 significant bits, largest 65504, subnormals down to 2^-24 */
    assert_true(ref_is_format_value(1.0f + 0x1p-10f, FP16));
    assert_false(ref_is_format_value(1.0f + 0x1p-11f, FP16));
    assert_true(ref_is_format_value(65504.0f, FP16));
    assert_false(ref_is_format_value(65536.0f, FP16)); /* a bf16 value, beyond fp16 */
    assert_true(ref_is_format_value(0x1p-24f, FP16));
    assert_true(ref_is_format_value(-3 * 0x1p-24f, FP16));
    assert_false(ref_is_format_value(0x1p-25f, FP16));
    assert_false(ref_is_format_value(0x1p-14f + 0x1p-25f, FP16));
    assert_true(ref_is_format_value(-INFINITY, FP16));
    assert_false(ref_is_format_value(1.0f, 0)); /* no such format */
    assert_true(ref_format_unit_roundoff(BF16) == 0x1p-8);
    assert_true(ref_format_unit_roundoff(FP16) == 0x1p-11);
}

static void element_bounds(void **state)
{
    (void)state;
    /* 1 stored in bf16 for a reference of 1.003: inside 1e-5 + 1.6e-2 + fwd rule */
    const float y[] = {1.0f, 2.0f};
    double r[] = {1.003, 2.0};
    assert_true(ref_compare_stored(y, r, 2, BF16, REF_RULE_FORWARD, NULL, NULL).pass);
    /* the same in fp16: 3e-3 is beyond 1e-5 + 1e-3 |r| + 2e-5 + 1e-5 |r| */
    ref_cmp c = ref_compare_stored(y, r, 2, FP16, REF_RULE_FORWARD, NULL, NULL);
    assert_false(c.pass);
    assert_string_equal(c.why, "element bound");
    assert_int_equal(c.worst, 0);
    /* r = 1.0009: |1 - r| = 9e-4 <= 1e-5 + 1.0009e-3 + 3.0e-5 */
    r[0] = 1.0009;
    assert_true(ref_compare_stored(y, r, 2, FP16, REF_RULE_FORWARD, NULL, NULL).pass);
    /* a carried rounding widens the bound by exactly its element */
    r[0] = 1.003;
    const double extra[] = {2e-3, 0.0};
    assert_true(ref_compare_stored(y, r, 2, FP16, REF_RULE_FORWARD, NULL, extra).pass);
    /* GEMM: 1e-5 of the |A||B| bound on top */
    const double bound[] = {300.0, 0.0};
    assert_true(ref_compare_stored(y, r, 2, FP16, REF_RULE_GEMM, bound, NULL).pass);
}

static void not_stored_rounded(void **state)
{
    (void)state;
    /* 1 + 2^-9 is within every bound of r = 1 + 2^-9 but no bf16 value */
    const float y[] = {2.0f, 1.0f + 0x1p-9f};
    const double r[] = {2.0, 1.0 + 0x1p-9};
    ref_cmp c = ref_compare_stored(y, r, 2, BF16, REF_RULE_FORWARD, NULL, NULL);
    assert_false(c.pass);
    assert_string_equal(c.why, "not a bf16 value");
    assert_int_equal(c.worst, 1);
    assert_true(ref_compare_stored(y, r, 2, FP16, REF_RULE_FORWARD, NULL, NULL).pass);
    /* NaN where the reference has a number */
    const float n[] = {NAN};
    const double one[] = {1.0};
    assert_false(ref_compare_stored(n, one, 1, BF16, REF_RULE_FORWARD, NULL, NULL).pass);
}

static void gradient_nmse(void **state)
{
    (void)state;
    /* every element 1/128 off relative, then stored in bf16 (at most 2^-9
     * more): the element bound 1e-5 + 1.6e-2 |r| + 1e-4 max|r| + 1e-5 holds,
     * the NMSE (about 6e-5) is within 1.6e-2^2 but not fp32's 1e-7 */
    enum { N = 64 };
    float g[N];
    double r[N];
    for (size_t i = 0; i < N; i++) {
        r[i] = (i % 2 ? 1.0 : -1.0) * (0.5 + (double)i / (2 * N));
        g[i] = (float)(r[i] * (1.0 + 1.0 / 128));
        g[i] = (float)(ldexp(nearbyint(ldexp(g[i], 7 - ilogb(g[i]))), ilogb(g[i]) - 7)); /* bf16 */
    }
    ref_cmp c = ref_compare_stored(g, r, N, BF16, REF_RULE_GRAD, NULL, NULL);
    assert_true(c.pass);
    assert_true(c.nmse > 1e-7 && c.nmse <= 1.6e-2 * 1.6e-2);
    /* fp16's rtol 1e-3 cannot hold 1/128 */
    for (size_t i = 0; i < N; i++) g[i] = (float)(r[i] * (1.0 + 1.0 / 128));
    for (size_t i = 0; i < N; i++) g[i] = (float)ldexp(nearbyint(ldexp(g[i], 10 - ilogb(g[i]))), ilogb(g[i]) - 10);
    assert_false(ref_compare_stored(g, r, N, FP16, REF_RULE_GRAD, NULL, NULL).pass);
}

static void carried_fp32_gradient(void **state)
{
    (void)state;
    /* an fp32 sum of stored values: 1e-3 off where the carried bound is 2e-3 */
    const float g[] = {1.001f, -0.5f};
    const double r[] = {1.0, -0.5}, extra[] = {2e-3, 0.0}, none[] = {0.0, 0.0};
    assert_true(ref_compare_grad_carried(g, r, 2, extra).pass);
    assert_false(ref_compare_grad_carried(g, r, 2, none).pass);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(format_values),
        cmocka_unit_test(element_bounds),
        cmocka_unit_test(not_stored_rounded),
        cmocka_unit_test(gradient_nmse),
        cmocka_unit_test(carried_fp32_gradient),
    };
    return cmocka_run_group_tests_name("16-bit storage rules", tests, NULL, NULL);
}
