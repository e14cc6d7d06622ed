/*
 * `clformer eval --hyp --ref` end to end: runs $CLFORMER_BINARY on every case
 * of tests/data/bleu (scored by sacreBLEU 2.6.0, see
 * tools/reference/bleu_cases.py), by default (13a, expected_13a.tsv) and with
 * --tokenize none (expected.tsv), and lower-cased with --lowercase
 * (expected_lc.tsv, expected_lc_none.tsv: sacreBLEU -lc), and checks that the printed lines are
 * sacreBLEU's summary line, character for character, and its signature, and
 * that --json holds the same numbers.
 * Then every usage and input error: exit code (1 failure, 2 usage) and a
 * one-line message that names the file or flag at fault. No device is
 * needed: scoring files never opens one, and the model is checked for
 * existence before a device is opened.
 */
#include "harness.h"

#include <jansson.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char dir[64];
static char out[16384], err[16384]; /* the last run's stdout and stderr */
static const harness_cmd cli = {out, sizeof out, err, sizeof err};

static const char *data_path(const char *name)
{
    static char path[4][512];
    static int k;
    const char *data = getenv("CLFORMER_TEST_DATA");
    if (!data || !*data) fail_msg("CLFORMER_TEST_DATA is not set (run through ctest)");
    k = (k + 1) % 4;
    snprintf(path[k], sizeof path[k], "%s/bleu/%s", data ? data : "", name);
    return path[k];
}

/* Runs `clformer ARGS...` (NULL-terminated) with stdin from `in` (NULL:
 * /dev/null); returns its exit code. */
static int run(const char *in, const char *first, ...)
{
    harness_cmd cmd = cli;
    cmd.in = in;
    va_list ap;
    va_start(ap, first);
    int rc = harness_vrun_clformer(&cmd, first, ap);
    va_end(ap);
    return rc;
}

/* The exit code, and for a failure: nothing on stdout, one line on stderr
 * that holds `needle`. */
static void expect(int got, int want, const char *needle)
{
    harness_expect_run(&cli, got, want, needle);
    if (want != 0) {
        if (*out) fail_msg("a failed run printed to stdout: %s", out);
        const char *nl = strchr(err, '\n');
        if (!nl || nl[1] != '\0') fail_msg("expected a one-line error, got: %s", err);
        if (strncmp(err, "clformer eval: error: ", 22) && strncmp(err, "clformer translate: error: ", 27))
            fail_msg("the error does not start with 'clformer CMD: error: ': %s", err);
    }
}

static int setup(void **state)
{
    (void)state;
    return harness_temp_dir(dir, sizeof dir, "cmd_eval") ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    return harness_remove_tree(dir) ? 0 : -1;
}

static void close_to(double got, double want, const char *what, const char *name)
{
    if (!(fabs(got - want) <= 1e-9 * fmax(1.0, fabs(want))))
        fail_msg("%s: %s is %.17g, sacreBLEU gives %.17g", name, what, got, want);
}

/* Every case of `tsv`: the text lines and the JSON; `tokenize` NULL: the
 * default. */
static void scores_match_sacrebleu(const char *tsv, const char *tokenize, bool lowercase,
                                   const char *signature)
{
    FILE *f = fopen(data_path(tsv), "r");
    assert_non_null(f);
    char row[2048];
    int cases = 0;
    while (fgets(row, sizeof row, f)) {
        if (row[0] == '#') continue;
        row[strcspn(row, "\n")] = '\0';
        char *col[13], *save = NULL;
        int n = 0;
        for (char *c = strtok_r(row, "\t", &save); c && n < 13; c = strtok_r(NULL, "\t", &save))
            col[n++] = c;
        assert_int_equal(n, 13);
        const char *name = col[0];
        char hyp[64], ref[64], line[512];
        snprintf(hyp, sizeof hyp, "%s.hyp", name);
        snprintf(ref, sizeof ref, "%s.ref", name);
        const char *hyp_path = data_path(hyp), *ref_path = data_path(ref);

        const char *opt[3] = {NULL, NULL, NULL}; /* the first NULL ends the arguments */
        int nopt = 0;
        if (lowercase) opt[nopt++] = "--lowercase";
        if (tokenize) opt[nopt++] = "--tokenize", opt[nopt++] = tokenize;
        expect(run(NULL, "eval", "--hyp", hyp_path, "--ref", ref_path, opt[0], opt[1], opt[2],
                   NULL), 0, NULL);
        snprintf(line, sizeof line, "%s\nsignature: %s\n", col[12], signature);
        if (strcmp(out, line)) fail_msg("%s: printed\n  %s expected\n  %s", name, out, line);

        expect(run(NULL, "eval", "--hyp", hyp_path, "--ref", ref_path, "--json", opt[0], opt[1],
                   opt[2], NULL), 0, NULL);
        json_error_t jerr;
        json_t *j = json_loads(out, 0, &jerr);
        if (!j) fail_msg("%s: --json printed no JSON (%s): %s", name, jerr.text, out);
        close_to(json_number_value(json_object_get(j, "bleu")), atof(col[2]), "bleu", name);
        json_t *p = json_object_get(j, "precisions");
        assert_int_equal(json_array_size(p), 4);
        for (size_t k = 0; k < 4; k++)
            close_to(json_number_value(json_array_get(p, k)), atof(col[3 + k]), "a precision",
                     name);
        close_to(json_number_value(json_object_get(j, "bp")), atof(col[7]), "bp", name);
        assert_int_equal(json_integer_value(json_object_get(j, "hyp_len")), atol(col[8]));
        assert_int_equal(json_integer_value(json_object_get(j, "ref_len")), atol(col[9]));
        assert_string_equal(json_string_value(json_object_get(j, "signature")), signature);
        assert_null(json_object_get(j, "loss")); /* only with --model */
        json_decref(j);
        cases++;
    }
    fclose(f);
    assert_true(cases >= 10);
}

static void scores_match_sacrebleu_13a(void **state)
{
    (void)state;
    scores_match_sacrebleu("expected_13a.tsv", NULL, false,
                           "nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:2.6.0");
}

static void scores_match_sacrebleu_none(void **state)
{
    (void)state;
    scores_match_sacrebleu("expected.tsv", "none", false,
                           "nrefs:1|case:mixed|eff:no|tok:none|smooth:exp|version:2.6.0");
}

/* `sacrebleu -lc`, with 13a and with -tok none */
static void scores_match_sacrebleu_lowercase(void **state)
{
    (void)state;
    scores_match_sacrebleu("expected_lc.tsv", NULL, true,
                           "nrefs:1|case:lc|eff:no|tok:13a|smooth:exp|version:2.6.0");
    scores_match_sacrebleu("expected_lc_none.tsv", "none", true,
                           "nrefs:1|case:lc|eff:no|tok:none|smooth:exp|version:2.6.0");
}

/* A case by hand, from stdin: hyp "the cat sat on the mat" against "the
 * cat sat on a mat": 5/6 unigrams ("the" clipped to 1), 3/5 bigrams, 2/4
 * trigrams, 1/3 4-grams; BP 1; BLEU = 100 (5/6 * 3/5 * 2/4 * 1/3)^(1/4). */
static void reads_hypotheses_from_stdin(void **state)
{
    (void)state;
    char a[128], b[128];
    harness_path(a, sizeof a, dir, "a.txt");
    harness_path(b, sizeof b, dir, "b.txt");
    harness_write_file(a, "the cat sat on the mat\n");
    harness_write_file(b, "the cat sat on a mat\n");
    expect(run(a, "eval", "--hyp", "-", "--ref", b, "--json", NULL), 0, NULL);
    json_t *j = json_loads(out, 0, NULL);
    assert_non_null(j);
    const double want = 100.0 * pow(5.0 / 6 * 3.0 / 5 * 2.0 / 4 * 1.0 / 3, 0.25);
    close_to(json_number_value(json_object_get(j, "bleu")), want, "bleu", "by hand");
    json_decref(j);
    expect(run(a, "eval", "--hyp", "-", "--ref", b, NULL), 0,
           "BLEU = 53.73 83.3/60.0/50.0/33.3 (BP = 1.000 ratio = 1.000 hyp_len = 6 ref_len = 6)\n"
           "signature: nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:2.6.0\n");
}

static void errors_are_one_line(void **state)
{
    (void)state;
    char a[128], b[128], empty[128], bad[128], missing[128];
    harness_path(a, sizeof a, dir, "a.txt");
    harness_path(b, sizeof b, dir, "b.txt");
    harness_path(empty, sizeof empty, dir, "empty.txt");
    harness_path(bad, sizeof bad, dir, "bad.txt");
    harness_path(missing, sizeof missing, dir, "missing.txt");
    harness_write_file(a, "one two\nthree four\nfive\n");
    harness_write_file(b, "one two\nthree\n");
    harness_write_file(empty, "");
    harness_write_file(bad, "fine\nbad \xff byte\n");

    /* help */
    expect(run(NULL, "eval", "--help", NULL), 0, "usage: clformer eval");
    expect(run(NULL, "--help", NULL), 0, "eval");

    /* files */
    expect(run(NULL, "eval", "--hyp", missing, "--ref", b, NULL), 1, missing);
    expect(run(NULL, "eval", "--hyp", a, "--ref", missing, NULL), 1, missing);
    expect(run(NULL, "eval", "--hyp", dir, "--ref", b, NULL), 1, "is a directory; name a file");
    expect(run(NULL, "eval", "--hyp", a, "--ref", b, NULL), 1, "has 3 lines but");
    assert_non_null(strstr(err, a));
    assert_non_null(strstr(err, b));
    assert_non_null(strstr(err, "has 2"));
    expect(run(NULL, "eval", "--hyp", empty, "--ref", empty, NULL), 1, "empty");
    expect(run(NULL, "eval", "--hyp", empty, "--ref", b, NULL), 1, "has 0 lines but");
    expect(run(NULL, "eval", "--hyp", bad, "--ref", b, NULL), 1, "bad.txt:2: invalid UTF-8");
    expect(run(NULL, "eval", "--hyp", bad, "--ref", b, "--lowercase", NULL), 1,
           "bad.txt:2: invalid UTF-8");
    expect(run(empty, "eval", "--hyp", "-", "--ref", empty, NULL), 1, "'stdin' and");

    /* usage */
    expect(run(NULL, "eval", "--hyp", a, "--ref", a, "--bogus", NULL), 2, "--bogus");
    expect(run(NULL, "eval", "--hyp", a, NULL), 2, "--ref is required");
    expect(run(NULL, "eval", "--ref", a, NULL), 2, "either --hyp");
    expect(run(NULL, "eval", "--hyp", a, "--model", "m", "--src", a, "--ref", a, NULL), 2,
           "either --hyp");
    expect(run(NULL, "eval", "--model", "m", "--ref", a, NULL), 2, "--model needs --src");
    expect(run(NULL, "eval", "--hyp", a, "--src", a, "--ref", a, NULL), 2, "--src goes with");
    expect(run(NULL, "eval", "--hyp", a, "--ref", a, "--output", b, NULL), 2,
           "--output goes with");
    expect(run(NULL, "eval", "--hyp", a, "--ref", a, "--beam", "4", NULL), 2,
           "decoding options");
    expect(run(NULL, "eval", "--hyp", a, "--ref", a, "--json=1", NULL), 2, "takes no value");
    expect(run(NULL, "eval", "--hyp", a, "--ref", a, "--lowercase=yes", NULL), 2,
           "takes no value");
    expect(run(NULL, "eval", "--model", "m", "--ref", a, "--lowercase", NULL), 2,
           "--model needs --src");
    expect(run(NULL, "eval", "--hyp", a, "--ref", a, "--tokenize", "intl", NULL), 2, "13a|none");
    expect(run(NULL, "eval", "--model", "m", "--src", a, "--ref", a, "--beam", "0", NULL), 2,
           "--beam must be between 1 and 64, got 0");
    expect(run(NULL, "eval", "--model", "m", "--src", a, "--ref", a, "--beam", "abc", NULL), 2,
           "--beam expects a whole number, got 'abc'");
    expect(run(NULL, "eval", "--model", "m", "--src", a, "--ref", a, "--max-len", "1e3", NULL), 2,
           "--max-len");
    expect(run(NULL, "eval", "--hyp", NULL), 2, "--hyp needs a value");

    /* the model is looked for before any device is opened */
    expect(run(NULL, "eval", "--model", missing, "--src", a, "--ref", a, NULL), 1, missing);
    expect(run(NULL, "eval", "--model", missing, "--src", a, "--ref", a, "--lowercase", NULL), 1,
           missing);
    /* line counts are checked before the model is loaded */
    expect(run(NULL, "eval", "--model", missing, "--src", a, "--ref", b, NULL), 1,
           "has 3 lines but");
    /* an unwritable --output is refused first */
    char nowhere[160];
    harness_path(nowhere, sizeof nowhere, dir, "no/such/dir/hyp.txt");
    expect(run(NULL, "eval", "--model", missing, "--src", a, "--ref", a, "--output", nowhere,
               NULL), 1, nowhere);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(scores_match_sacrebleu_13a),
        cmocka_unit_test(scores_match_sacrebleu_none),
        cmocka_unit_test(scores_match_sacrebleu_lowercase),
        cmocka_unit_test(reads_hypotheses_from_stdin),
        cmocka_unit_test(errors_are_one_line),
    };
    return cmocka_run_group_tests_name("clformer eval", tests, setup, teardown);
}
