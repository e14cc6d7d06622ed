/* `clformer demo` end to end, as README.md runs it: it must learn the
 * built-in task to BLEU >= 90 on its held-out set. Not registered for
 * simulators (tests/CMakeLists.txt): they would take hours to train. */
#include "harness.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void demo_learns_the_task(void **state)
{
    (void)state;
    static char out[1 << 16]; /* stdout and stderr */
    const harness_cmd cmd = {out, sizeof out};
    int rc = harness_run_clformer(&cmd, "demo", NULL);
    if (rc != 0) fail_msg("clformer demo exited with %d:\n%s", rc, out);
    const char *b = strstr(out, "BLEU = ");
    if (!b) fail_msg("no BLEU line in the output:\n%s", out);
    double bleu = atof(b + 7);
    print_message("%s", b);
    if (bleu < 90.0) fail_msg("demo BLEU %.2f is below 90:\n%s", bleu, out);
    assert_non_null(strstr(out, "held-out sentences"));
}

static void demo_rejects_bad_flags(void **state)
{
    (void)state;
    char out[4096]; /* stdout and stderr */
    const harness_cmd cmd = {out, sizeof out};
    assert_int_equal(harness_run_clformer(&cmd, "demo", "--steps", "0", NULL), 2);
    assert_non_null(strstr(out, "--steps"));
    assert_int_equal(harness_run_clformer(&cmd, "demo", "--nosuch", NULL), 2);
    assert_non_null(strstr(out, "unknown option '--nosuch'"));
    assert_int_equal(harness_run_clformer(&cmd, "demo", "--help", NULL), 0);
    assert_non_null(strstr(out, "usage: clformer demo"));
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(demo_rejects_bad_flags),
    cmocka_unit_test(demo_learns_the_task),
};
HARNESS_DEVICE_MAIN("clformer demo", tests)
