/* The dropout reference: addition and in-place backward. Its backward
 * against finite differences of its forward is the op descriptor's
 * gradcheck (runtime/check/conf_dropout.c, run by test_ops_table). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "ref_dropout.h"

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
        cmocka_unit_test(add_and_alias),
    };
    return cmocka_run_group_tests_name("ref_dropout", tests, NULL, NULL);
}
