/*
 * The progress line of translate and eval on a terminal (tools/cli/progress.c):
 * count, share, rate and the time left from them.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "progress.h"

#include <string.h>

static void line_has_rate_and_eta(void **state)
{
    (void)state;
    char line[160];
    progress_line(line, sizeof line, "translating", "sentences", 128, 1000, 4.0);
    assert_string_equal(line, "translating: 128/1000 sentences (13%), 32.0 sentences/s, ETA 27s");
    progress_line(line, sizeof line, "translating", "sentences", 64, 29000, 2.0);
    assert_string_equal(line,
                        "translating: 64/29000 sentences (0%), 32.0 sentences/s, ETA 15m04s");
    progress_line(line, sizeof line, "translating", "sentences", 1000, 1000, 10.0);
    assert_string_equal(line, "translating: 1000/1000 sentences (100%), 100.0 sentences/s, ETA 0s");
    /* nothing done yet: no rate, no estimate */
    progress_line(line, sizeof line, "translating", "sentences", 0, 10, 0.5);
    assert_string_equal(line, "translating: 0/10 sentences (0%), 0.0 sentences/s, ETA ?");
}

static void durations(void **state)
{
    (void)state;
    char b[32];
    progress_duration(59.4, b, sizeof b);
    assert_string_equal(b, "59s");
    progress_duration(187, b, sizeof b);
    assert_string_equal(b, "3m07s");
    progress_duration(7500, b, sizeof b);
    assert_string_equal(b, "2h05m");
    progress_duration(-1, b, sizeof b);
    assert_string_equal(b, "?");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(line_has_rate_and_eta),
        cmocka_unit_test(durations),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
