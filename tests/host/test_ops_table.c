/* The op descriptor table (runtime/check/conformance.h's conf_ops) against
 * the kernels in cl/ (kernel_ids.h, generated from them): every kernel
 * belongs to exactly one op and every kernel an op names exists; then every
 * op's finite-difference check of its reference backward passes. */
#include "harness.h"
#include "conformance.h"

#include <string.h>

/* How many of the ops' kernel lists name `kernel` (as "k", "~k" or in "a|k"). */
static int owners(const char *kernel)
{
    int count = 0;
    const size_t len = strlen(kernel);
    for (size_t i = 0; conf_ops[i]; i++)
        for (const char *p = conf_ops[i]->kernels; *p;) {
            const size_t n = strcspn(p, " |~");
            count += n == len && !strncmp(p, kernel, len);
            p += n;
            p += strspn(p, " |~");
        }
    return count;
}

static void every_kernel_belongs_to_one_op(void **state)
{
    (void)state;
    for (int id = 0; id < CF_K_COUNT; id++)
        if (owners(cf_kernel_names[id]) != 1)
            harness_fail_at(__FILE__, __LINE__,
                            "kernel %s (cl/%s.cl) is named by %d ops; name it in exactly one "
                            "CONF_OP's kernel list (runtime/check/conf_*.c)",
                            cf_kernel_names[id], cf_kernel_programs[id],
                            owners(cf_kernel_names[id]));
}

static void every_named_kernel_exists_and_ops_are_complete(void **state)
{
    (void)state;
    size_t n = 0;
    for (size_t i = 0; conf_ops[i]; i++, n++) {
        const conf_op *op = conf_ops[i];
        assert_non_null(op->name);
        assert_non_null(op->launchers);
        /* an op without a check or gradcheck of its own says which test has it */
        if (!op->check || !op->gradcheck) assert_non_null(op->why);
        if (op->check) assert_non_null(op->tolerance);
        for (size_t j = 0; j < i; j++) assert_string_not_equal(op->name, conf_ops[j]->name);
        for (const char *p = op->kernels; *p;) {
            const size_t len = strcspn(p, " |~");
            bool found = false;
            for (int id = 0; id < CF_K_COUNT && len; id++)
                found |= strlen(cf_kernel_names[id]) == len &&
                         !strncmp(cf_kernel_names[id], p, len);
            if (len && !found)
                harness_fail_at(__FILE__, __LINE__, "op %s names kernel '%.*s', which no cl/ "
                                "file has", op->name, (int)len, p);
            p += len;
            p += strspn(p, " |~");
        }
    }
    assert_true(n >= 13);
    assert_true(conf_op_check_count() >= 9); /* the ops that had a check before the table */
}

static void every_reference_backward_matches_finite_differences(void **state)
{
    (void)state;
    for (size_t i = 0; conf_ops[i]; i++)
        if (conf_ops[i]->gradcheck && conf_ops[i]->gradcheck() != 0)
            harness_fail_at(__FILE__, __LINE__, "op %s: the reference backward disagrees with "
                            "finite differences of its forward (listed above)",
                            conf_ops[i]->name);
}

/* The finite-difference checker can fail: a gradient off by 1% is caught. */
static double square_sum(void *user)
{
    const double *x = user;
    return x[0] * x[0] + 3.0 * x[1];
}

static void fd_check_catches_a_wrong_gradient(void **state)
{
    (void)state;
    double x[2] = {0.7, -1.3};
    const double right[2] = {1.4, 3.0}, wrong[2] = {1.4 * 1.01, 3.0};
    assert_int_equal(conf_fd_check("x", x, 2, right, square_sum, x), 0);
    assert_int_equal(conf_fd_check("x (deliberately wrong)", x, 2, wrong, square_sum, x), 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_kernel_belongs_to_one_op),
        cmocka_unit_test(every_named_kernel_exists_and_ops_are_complete),
        cmocka_unit_test(every_reference_backward_matches_finite_differences),
        cmocka_unit_test(fd_check_catches_a_wrong_gradient),
    };
    return cmocka_run_group_tests_name("ops_table", tests, NULL, NULL);
}
