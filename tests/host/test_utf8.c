/*
 * The one UTF-8 validator (clformer_utf8_valid, public): what it accepts and
 * where it says the first ill-formed sequence starts.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "clformer.h"

static void accepts_well_formed_text(void **state)
{
    (void)state;
    const char *ok[] = {"", "plain ascii", "gr\xC3\xBC\xC3\x9F" "e",      /* ü ß */
                        "\xE2\x82\xAC", "\xEF\xBF\xBD",                   /* € U+FFFD */
                        "\xF0\x9F\x98\x80", "\xF4\x8F\xBF\xBF",           /* U+1F600, U+10FFFF */
                        "\xC2\x80", "\xE0\xA0\x80", "\xF0\x90\x80\x80"};  /* smallest of each length */
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        size_t bad = 12345;
        assert_true(clformer_utf8_valid(ok[i], strlen(ok[i]), &bad));
        assert_int_equal(bad, 12345); /* untouched on success */
    }
    assert_true(clformer_utf8_valid("a\0b", 3, NULL)); /* NUL is a character here */
}

static void reports_the_first_bad_byte(void **state)
{
    (void)state;
    const struct {
        const char *s;
        size_t at;
    } bad[] = {
        {"ab\x80", 2},                 /* stray continuation byte */
        {"x\xC0\xAF", 1},              /* overlong '/' */
        {"\xC1\xBF", 0},               /* overlong, 2 bytes */
        {"\xE0\x80\xAF", 0},           /* overlong, 3 bytes */
        {"\xF0\x80\x80\xAF", 0},       /* overlong, 4 bytes */
        {"ok\xED\xA0\x80", 2},         /* surrogate U+D800 */
        {"\xF4\x90\x80\x80", 0},       /* U+110000 */
        {"\xF5\x80\x80\x80", 0},       /* lead byte past F4 */
        {"\xFF", 0},
        {"abc\xE2\x82", 3},            /* truncated at the end */
        {"\xC3(", 0},                  /* continuation missing */
        {"\xE2\x82\xAC\xE2\x28\xA1", 3}, /* good euro, then a broken one */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        size_t at = 999;
        assert_false(clformer_utf8_valid(bad[i].s, strlen(bad[i].s), &at));
        assert_int_equal(at, bad[i].at);
        assert_false(clformer_utf8_valid(bad[i].s, strlen(bad[i].s), NULL));
    }
}

static void length_bounds_the_check(void **state)
{
    (void)state;
    /* Only s[0..n) is read: a cut inside a character is ill-formed, the
     * bytes after n do not matter. */
    const char *euro = "\xE2\x82\xAC";
    size_t at = 9;
    assert_false(clformer_utf8_valid(euro, 2, &at));
    assert_int_equal(at, 0);
    assert_true(clformer_utf8_valid("ab\xFF", 2, NULL));
    assert_true(clformer_utf8_valid(NULL, 0, NULL));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(accepts_well_formed_text),
        cmocka_unit_test(reports_the_first_bad_byte),
        cmocka_unit_test(length_bounds_the_check),
    };
    return cmocka_run_group_tests_name("utf8", tests, NULL, NULL);
}
