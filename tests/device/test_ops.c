/* Every op of the descriptor table (runtime/check/conformance.h's conf_ops):
 * its check passes on the device under test (the quick shapes on
 * simulators), and every kernel it names was launched while it ran, so
 * cf_launch compared each of those launches' arguments with the kernel's
 * signature in cl/. One cmocka test per op, named after it; an op added to
 * the table is tested here with no edit. */
#include "harness.h"
#include "conformance.h"

#include <stdio.h>
#include <string.h>

static cf_kernel_id kernel_by_name(const char *name, size_t len)
{
    for (int id = 0; id < CF_K_COUNT; id++)
        if (strlen(cf_kernel_names[id]) == len && !strncmp(cf_kernel_names[id], name, len))
            return (cf_kernel_id)id;
    return CF_K_COUNT;
}

/* Whether one of a group's kernels ("a" or "a|b") ran since `before`. */
static bool group_launched(const conf_op *op, const char *group, size_t len,
                           const uint64_t *before)
{
    bool any = false;
    for (const char *p = group, *end = group + len; p < end;) {
        const char *bar = memchr(p, '|', (size_t)(end - p));
        const size_t n = bar ? (size_t)(bar - p) : (size_t)(end - p);
        const cf_kernel_id id = kernel_by_name(p, n);
        if (id == CF_K_COUNT)
            harness_fail_at(__FILE__, __LINE__, "op %s names kernel '%.*s', which no cl/ file has",
                            op->name, (int)n, p);
        else if (hctx()->kernel_launches[id] > before[id])
            any = true;
        p += n + (bar != NULL);
    }
    return any;
}

static void op_checks_and_launches_its_kernels(void **state)
{
    const conf_op *op = *state;
    uint64_t before[CF_K_COUNT];
    memcpy(before, hctx()->kernel_launches, sizeof before);
    harness_assert_conformance(op->check, op->name, __FILE__, __LINE__);
    for (const char *p = op->kernels; *p;) {
        const size_t n = strcspn(p, " ");
        if (n && p[0] != '~' && !group_launched(op, p, n, before))
            harness_fail_at(__FILE__, __LINE__,
                            "op %s: its check never launched kernel '%.*s' that it names; launch "
                            "it there, or mark it '~' and say in `why` which test does",
                            op->name, (int)n, p);
        p += n;
        p += strspn(p, " ");
    }
}

int main(void)
{
    static struct CMUnitTest tests[64];
    static char names[64][48];
    size_t n = 0;
    for (size_t i = 0; i < conf_op_check_count() && n < 64; i++, n++) {
        snprintf(names[n], sizeof names[n], "%s", conf_op_check(i)->name);
        tests[n] = (struct CMUnitTest){names[n], op_checks_and_launches_its_kernels, NULL, NULL,
                                       (void *)conf_op_check(i)};
    }
    return harness_run_device_suite("ops", tests, n);
}
