/*
 * Python's str.lower() in C (runtime/data/unicode_lower.c), which lower-cased
 * BLEU (sacreBLEU's -lc) applies to both sides: against
 * tests/data/unicode_lower.jsonl, Python's own answers written by
 * tools/reference/make_unicode_lower.py (named cases, every code point that
 * str.lower() changes, random strings around capital sigmas), plus the cases
 * spelled out below and the tables' invariants.
 */
#include "data_util.h"

#include <jansson.h>

#include "fileio.h"
#include "unicode_lower.h"

static char *lower(const char *s)
{
    char *out = NULL;
    size_t len = 0;
    assert_ok(cf_utf8_lower(s, strlen(s), &out, &len));
    assert_non_null(out);
    assert_int_equal(len, strlen(out));
    return out;
}

static void assert_lower(const char *in, const char *want)
{
    char *got = lower(in);
    if (strcmp(got, want)) fail_msg("lower('%s') is '%s', Python says '%s'", in, got, want);
    free(got);
}

static void matches_python(void **state)
{
    (void)state;
    char *data;
    size_t size;
    assert_ok(cf_read_file(data_path("unicode_lower.jsonl"), &data, &size));
    size_t cases = 0, sigmas = 0;
    for (char *line = data, *nl; (nl = strchr(line, '\n')) != NULL; line = nl + 1) {
        *nl = '\0';
        json_error_t jerr;
        json_t *j = json_loads(line, 0, &jerr);
        if (!j) fail_msg("unicode_lower.jsonl:%zu: %s", cases + 1, jerr.text);
        const char *in = json_string_value(json_object_get(j, "in"));
        const char *want = json_string_value(json_object_get(j, "out"));
        assert_non_null(in);
        assert_non_null(want);
        sigmas += strstr(in, "\xce\xa3") != NULL;
        char *got = lower(in);
        if (strcmp(got, want))
            fail_msg("unicode_lower.jsonl:%zu: lower('%s') is\n  '%s', Python says\n  '%s'",
                     cases + 1, in, got, want);
        free(got);
        json_decref(j);
        cases++;
    }
    assert_true(cases > 400);
    assert_true(sigmas > 250); /* the final-sigma rule is exercised, not just present */
    free(data);
}

/* str.lower()'s answers, spelled out (python3 -c 'print(ascii(X.lower()))'). */
static void named_cases(void **state)
{
    (void)state;
    assert_lower("Hello, World! 123 ABC xyz", "hello, world! 123 abc xyz");
    assert_lower("", "");
    /* German: umlauts, and capital sharp s (U+1E9E) becomes ß, not "ss" */
    assert_lower("\xc3\x84\xc3\x96\xc3\x9c \xe1\xba\x9e STRA\xc3\x9f" "E",
                 "\xc3\xa4\xc3\xb6\xc3\xbc \xc3\x9f stra\xc3\x9f" "e");
    /* Cyrillic: ПРИВЕТ Ёлка -> привет ёлка */
    assert_lower("\xd0\x9f\xd0\xa0\xd0\x98\xd0\x92\xd0\x95\xd0\xa2 \xd0\x81\xd0\xbb\xd0\xba\xd0\xb0",
                 "\xd0\xbf\xd1\x80\xd0\xb8\xd0\xb2\xd0\xb5\xd1\x82 \xd1\x91\xd0\xbb\xd0\xba\xd0\xb0");
    /* U+0130 (2 bytes) becomes two code points, 'i' + U+0307 (3 bytes) */
    assert_lower("\xc4\xb0stanbul", "i\xcc\x87stanbul");
    /* KELVIN SIGN U+212A (3 bytes) becomes ASCII 'k'; U+023A (2 bytes) U+2C65 (3) */
    assert_lower("\xe2\x84\xaa \xc8\xba", "k \xe2\xb1\xa5");
    /* Greek: ΟΔΟΣ -> οδος with the final sigma U+03C2; a lone Σ is σ; in
     * "ΣΣ" the second is final; "ΑΣΑ" keeps σ; '.' is skipped (case-ignorable) */
    assert_lower("\xce\x9f\xce\x94\xce\x9f\xce\xa3", "\xce\xbf\xce\xb4\xce\xbf\xcf\x82");
    assert_lower("\xce\xa3", "\xcf\x83");
    assert_lower("\xce\xa3\xce\xa3", "\xcf\x83\xcf\x82");
    assert_lower("\xce\x91\xce\xa3\xce\x91", "\xce\xb1\xcf\x83\xce\xb1");
    assert_lower("\xce\x91.\xce\xa3 \xce\x92", "\xce\xb1.\xcf\x82 \xce\xb2");

    uint32_t cps[CF_LOWER_MAX];
    assert_int_equal(cf_lower_code_point(0x130, cps), 2);
    assert_int_equal(cps[0], 'i');
    assert_int_equal(cps[1], 0x307);
    assert_int_equal(cf_lower_code_point('Q', cps), 1);
    assert_int_equal(cps[0], 'q');
    assert_int_equal(cf_lower_code_point(0x1F600, cps), 1); /* no case: itself */
    assert_int_equal(cps[0], 0x1F600);
}

static void invalid_utf8_is_an_error(void **state)
{
    (void)state;
    const char *bad[] = {"a\xff", "ab\xc3\x28", "\xed\xa0\x80", "x\xe2\x82", "\xc0\xaf"};
    const char *where[] = {"byte 2 (0xff)", "byte 3 (0xc3)", "byte 1 (0xed)", "byte 2 (0xe2)",
                           "byte 1 (0xc0)"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char *out = (char *)"untouched";
        assert_error(cf_utf8_lower(bad[i], strlen(bad[i]), &out, NULL),
                     CLFORMER_ERR_INVALID_ARGUMENT, "invalid UTF-8", where[i]);
        assert_null(out);
    }
}

/* What the lookups rely on: sorted, disjoint runs and ranges. */
static void tables_are_sorted(void **state)
{
    (void)state;
    assert_true(cf_lower_run_count > 100);
    for (size_t i = 0; i < cf_lower_run_count; i++) {
        const cf_lower_run *r = &cf_lower_runs[i];
        assert_true(r->stride == 1 || r->stride == 2);
        assert_true(r->first <= r->last && (r->last - r->first) % r->stride == 0);
        if (i) assert_true(cf_lower_runs[i - 1].last < r->first);
    }
    for (size_t i = 0; i < cf_sigma_range_count; i++) {
        const cf_sigma_range *r = &cf_sigma_ranges[i];
        assert_true(r->first <= r->last);
        assert_true(r->cls == CF_SIGMA_CASED || r->cls == CF_SIGMA_IGNORABLE);
        if (i) assert_true(cf_sigma_ranges[i - 1].last < r->first);
    }
    for (size_t i = 0; i < cf_lower_multi_count; i++)
        assert_true(cf_lower_multis[i].n >= 2 && cf_lower_multis[i].n <= CF_LOWER_MAX);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(matches_python),
        cmocka_unit_test(named_cases),
        cmocka_unit_test(invalid_utf8_is_an_error),
        cmocka_unit_test(tables_are_sorted),
    };
    return cmocka_run_group_tests_name("unicode_lower", tests, NULL, NULL);
}
