/* `clformer demo` end to end, as the README runs it: it must learn the
 * built-in task to BLEU >= 90 on its held-out set. Not registered for
 * simulators (tests/CMakeLists.txt): they would take hours to train. */
#include "harness.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Runs the tool with CLFORMER_DEVICE set to the device under test; returns
 * its exit status and its standard output. */
static int run_tool(const char *args, char *out, size_t cap)
{
    const char *binary = getenv("CLFORMER_BINARY");
    assert_non_null(binary);
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "CLFORMER_DEVICE='%s' '%s' %s 2>&1", hctx()->info.selector,
             binary, args);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    size_t n = fread(out, 1, cap - 1, p);
    out[n] = '\0';
    int status = pclose(p);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static void demo_learns_the_task(void **state)
{
    (void)state;
    static char out[1 << 16];
    int rc = run_tool("demo", out, sizeof out);
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
    char out[4096];
    assert_int_equal(run_tool("demo --steps 0", out, sizeof out), 2);
    assert_non_null(strstr(out, "--steps"));
    assert_int_equal(run_tool("demo --nosuch", out, sizeof out), 2);
    assert_non_null(strstr(out, "unknown option '--nosuch'"));
    assert_int_equal(run_tool("demo --help", out, sizeof out), 0);
    assert_non_null(strstr(out, "usage: clformer demo"));
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(demo_rejects_bad_flags),
    cmocka_unit_test(demo_learns_the_task),
};
HARNESS_DEVICE_MAIN("clformer demo", tests)
