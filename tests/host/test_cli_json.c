/*
 * The CLI's JSON helpers (tools/cli/cli.c): a NaN or an infinity becomes
 * null, never a missing key or text that is not JSON.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "cli.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void non_finite_numbers_are_null(void **state)
{
    (void)state;
    const double bad[] = {NAN, -NAN, INFINITY, -INFINITY};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        json_t *v = cli_json_number(bad[i]);
        assert_true(json_is_null(v));
        json_decref(v);
    }
    json_t *v = cli_json_number(0.25);
    assert_true(json_is_real(v));
    assert_true(json_real_value(v) == 0.25);
    json_decref(v);
}

/* Runs cli_print_json(value) with stdout sent to a temporary file and
 * returns what it printed (malloc'd). */
static char *printed(json_t *value, bool *ok)
{
    fflush(stdout);
    FILE *tmp = tmpfile();
    assert_non_null(tmp);
    int saved = dup(STDOUT_FILENO);
    assert_true(saved >= 0 && dup2(fileno(tmp), STDOUT_FILENO) >= 0);
    *ok = cli_print_json(value);
    fflush(stdout);
    assert_true(dup2(saved, STDOUT_FILENO) >= 0);
    close(saved);
    long n = ftell(tmp);
    assert_true(n >= 0);
    char *text = calloc((size_t)n + 1, 1);
    assert_non_null(text);
    rewind(tmp);
    assert_int_equal(fread(text, 1, (size_t)n, tmp), (size_t)n);
    fclose(tmp);
    return text;
}

static void printed_results_parse_back(void **state)
{
    (void)state;
    bool ok;
    char *text = printed(json_pack("{s:o, s:o, s:o, s:s}", "max_abs_err", cli_json_number(NAN),
                                   "nmse", cli_json_number(INFINITY), "ms",
                                   cli_json_number(1.5), "op", "layernorm_forward"),
                         &ok);
    assert_true(ok);
    json_error_t err;
    json_t *back = json_loads(text, 0, &err);
    if (!back) fail_msg("not JSON: %s (%s)", text, err.text);
    assert_true(json_is_null(json_object_get(back, "max_abs_err")));
    assert_true(json_is_null(json_object_get(back, "nmse")));
    assert_true(json_real_value(json_object_get(back, "ms")) == 1.5);
    assert_string_equal(json_string_value(json_object_get(back, "op")), "layernorm_forward");
    assert_int_equal(text[strlen(text) - 1], '\n');
    json_decref(back);
    free(text);
}

static void a_value_that_could_not_be_made_prints_nothing(void **state)
{
    (void)state;
    bool ok = true;
    /* json_pack fails on a string that is not UTF-8 and returns NULL */
    char *text = printed(json_pack("{s:s}", "device", "bad \xFF name"), &ok);
    assert_false(ok);
    assert_string_equal(text, "");
    free(text);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(non_finite_numbers_are_null),
        cmocka_unit_test(printed_results_parse_back),
        cmocka_unit_test(a_value_that_could_not_be_made_prints_nothing),
    };
    return cmocka_run_group_tests_name("cli_json", tests, NULL, NULL);
}
