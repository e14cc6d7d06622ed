/* Every op of the descriptor table (runtime/check/conformance.h's conf_ops):
 * its check passes on the device under test (the quick shapes on
 * simulators), and every kernel it names was launched while it ran, so
 * cf_launch compared each of those launches' arguments with the kernel's
 * signature in cl/. One cmocka test per op, named after it; an op added to
 * the table is tested here with no edit. Ops with 16-bit storage run again
 * in bf16 and fp16 ("<op>_bf16", "<op>_fp16"). */
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

/* The same check with 16-bit storage (docs/TESTING.md, "Per precision"): the
 * context's precision set as a session's pass sets it, restored after. */
static void op_checks_in(const conf_op *op, clformer_precision precision)
{
    if (harness_is_slow()) {
        /* cmocka reports it skipped; check_quick@oclgrind_command runs every
         * precision of `clformer check --quick` under the simulator */
        print_message("%s in %s: not under a simulator (check_quick@oclgrind_command)\n",
                      op->name, clformer_precision_name(precision));
        skip();
    }
    const clformer_precision saved = hctx()->precision;
    hctx()->precision = precision;
    harness_assert_conformance(op->check, op->name, __FILE__, __LINE__);
    hctx()->precision = saved;
}
static void op_checks_in_bf16(void **state) { op_checks_in(*state, CLFORMER_BF16); }
static void op_checks_in_fp16(void **state) { op_checks_in(*state, CLFORMER_FP16); }

int main(void)
{
    enum { MAX = 128 };
    static struct CMUnitTest tests[MAX];
    static char names[MAX][48];
    size_t n = 0;
    for (size_t i = 0; i < conf_op_check_count() && n < MAX; i++, n++) {
        snprintf(names[n], sizeof names[n], "%s", conf_op_check(i)->name);
        tests[n] = (struct CMUnitTest){names[n], op_checks_and_launches_its_kernels, NULL, NULL,
                                       (void *)conf_op_check(i)};
    }
    for (size_t i = 0; i < conf_op_check_count() && n + 2 <= MAX; i++) {
        const conf_op *op = conf_op_check(i);
        if (!op->half) continue;
        snprintf(names[n], sizeof names[n], "%s_bf16", op->name);
        tests[n++] = (struct CMUnitTest){names[n - 1], op_checks_in_bf16, NULL, NULL, (void *)op};
        snprintf(names[n], sizeof names[n], "%s_fp16", op->name);
        tests[n++] = (struct CMUnitTest){names[n - 1], op_checks_in_fp16, NULL, NULL, (void *)op};
    }
    return harness_run_device_suite("ops", tests, n);
}
