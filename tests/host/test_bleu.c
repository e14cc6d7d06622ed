/*
 * Corpus BLEU against sacreBLEU's own numbers (written by
 * tools/reference/bleu_cases.py): tests/data/bleu/expected.tsv with
 * BLEU(tokenize='none') and expected_13a.tsv with BLEU() (the 13a default).
 * The cases: empty hypotheses and references, short sentences without
 * 4-grams, orders with no match ('exp' smoothing), clipping, brevity, Unicode
 * whitespace, 300 lines of Multi30k val.de against a perturbed copy, and for
 * 13a raw text: punctuation, numbers, HTML entities, Unicode, trailing
 * whitespace, empty lines and the 300 lines detokenised. tok13a.jsonl holds
 * sacreBLEU's 13a tokenisation of every one of those lines.
 * Lower-cased BLEU (sacreBLEU's -lc): expected_lc.tsv (13a) and
 * expected_lc_none.tsv ('none') score the same cases and two cased ones
 * (lower-case hypotheses against cased German, Greek, Cyrillic references,
 * and 300 lines of the raw test_2016_flickr.de) with BLEU(lowercase=True).
 */
#include "data_util.h"

#include <inttypes.h>
#include <math.h>

#include <jansson.h>

#include "bleu.h"
#include "fileio.h"
#include "text.h"
#include "tok13a.h"

typedef struct {
    char **line;
    size_t n;
    char *data;
} lines;

/* Splits a file on '\n' (every line of the test files ends with one). */
static lines read_lines(const char *rel)
{
    lines l = {0};
    size_t size;
    assert_ok(cf_read_file(data_path(rel), &l.data, &size));
    for (size_t i = 0; i < size; i++) l.n += l.data[i] == '\n';
    l.line = malloc((l.n ? l.n : 1) * sizeof *l.line);
    char *p = l.data;
    for (size_t k = 0; k < l.n; k++) {
        char *nl = strchr(p, '\n');
        *nl = '\0';
        l.line[k] = p;
        p = nl + 1;
    }
    return l;
}

static void free_lines(lines *l)
{
    free(l->line);
    free(l->data);
}

/* Relative 1e-12: both sides evaluate the same formula in the same order;
 * only libm's last bit may differ between machines. */
static void assert_close(double got, double want, const char *what, const char *name)
{
    if (fabs(got - want) > 1e-12 * fmax(1.0, fabs(want)))
        fail_msg("%s: %s is %.17g, sacreBLEU says %.17g", name, what, got, want);
}

static void parse_counts(const char *s, uint64_t out[4])
{
    if (sscanf(s, "%" SCNu64 ",%" SCNu64 ",%" SCNu64 ",%" SCNu64, &out[0], &out[1], &out[2],
               &out[3]) != 4)
        fail_msg("bad counts field '%s'", s);
}

static void matches_sacrebleu(const char *tsv, cf_bleu_tokenize tokenize, bool lowercase,
                              int want_cases)
{
    lines expected = read_lines(tsv);
    int cases = 0;
    for (size_t r = 0; r < expected.n; r++) {
        if (expected.line[r][0] == '#') continue;
        char *field[13] = {0};
        int nf = 0;
        for (char *p = expected.line[r]; nf < 13; nf++) {
            field[nf] = p;
            char *tab = strchr(p, '\t');
            if (!tab) {
                nf++;
                break;
            }
            *tab = '\0';
            p = tab + 1;
        }
        assert_int_equal(nf, 13);
        const char *name = field[0];
        char rel[256];
        snprintf(rel, sizeof rel, "bleu/%s.hyp", name);
        lines hyp = read_lines(rel);
        snprintf(rel, sizeof rel, "bleu/%s.ref", name);
        lines ref = read_lines(rel);
        assert_int_equal(hyp.n, strtoul(field[1], NULL, 10));
        assert_int_equal(ref.n, hyp.n);

        cf_bleu_result res;
        assert_ok(cf_bleu_corpus((const char *const *)hyp.line, (const char *const *)ref.line,
                                 hyp.n, tokenize, lowercase, &res));
        assert_close(res.score, strtod(field[2], NULL), "score", name);
        for (int k = 0; k < 4; k++) assert_close(res.precisions[k], strtod(field[3 + k], NULL),
                                                 "precision", name);
        assert_close(res.bp, strtod(field[7], NULL), "brevity penalty", name);
        assert_int_equal(res.stats.hyp_len, strtoull(field[8], NULL, 10));
        assert_int_equal(res.stats.ref_len, strtoull(field[9], NULL, 10));
        uint64_t correct[4], total[4];
        parse_counts(field[10], correct);
        parse_counts(field[11], total);
        for (int k = 0; k < 4; k++) {
            assert_int_equal(res.stats.correct[k], correct[k]);
            assert_int_equal(res.stats.total[k], total[k]);
        }
        char text[256];
        cf_bleu_format(&res, text, sizeof text);
        assert_string_equal(text, field[12]);
        free_lines(&hyp);
        free_lines(&ref);
        cases++;
    }
    assert_int_equal(cases, want_cases);
    free_lines(&expected);
}

static void matches_sacrebleu_none(void **state)
{
    (void)state;
    matches_sacrebleu("bleu/expected.tsv", CF_BLEU_TOKENIZE_NONE, false, 14);
}

static void matches_sacrebleu_13a(void **state)
{
    (void)state;
    matches_sacrebleu("bleu/expected_13a.tsv", CF_BLEU_TOKENIZE_13A, false, 20);
}

static void matches_sacrebleu_lowercase(void **state)
{
    (void)state;
    matches_sacrebleu("bleu/expected_lc.tsv", CF_BLEU_TOKENIZE_13A, true, 22);
    matches_sacrebleu("bleu/expected_lc_none.tsv", CF_BLEU_TOKENIZE_NONE, true, 16);
}

/* Lower-case output against cased references: 100 with lowercase, less
 * without; both sides are lowered (U+0130 and the final sigma included). */
static void lowercase_ignores_case(void **state)
{
    (void)state;
    const char *h[] = {
        "ein mann f\xc3\xa4hrt \xc3\xbc" "ber die stra\xc3\x9f" "e .",
        "i\xcc\x87stanbul , \xce\xbf\xce\xb4\xce\xbf\xcf\x82 und \xd0\xbc\xd0\xb8\xd1\x80 ."};
    const char *r[] = {
        "Ein Mann F\xc3\x84HRT \xc3\x9c" "ber die Stra\xc3\x9f" "e .",
        "\xc4\xb0stanbul , \xce\x9f\xce\x94\xce\x9f\xce\xa3 und \xd0\x9c\xd0\x98\xd0\xa0 ."};
    for (int t = 0; t < 2; t++) {
        cf_bleu_tokenize tok = t ? CF_BLEU_TOKENIZE_13A : CF_BLEU_TOKENIZE_NONE;
        cf_bleu_result lc, cased, swapped;
        assert_ok(cf_bleu_corpus(h, r, 2, tok, true, &lc));
        assert_ok(cf_bleu_corpus(h, r, 2, tok, false, &cased));
        assert_ok(cf_bleu_corpus(r, h, 2, tok, true, &swapped));
        assert_true(fabs(lc.score - 100.0) < 1e-9);
        assert_true(fabs(swapped.score - 100.0) < 1e-9); /* the hypotheses are lowered too */
        assert_true(cased.score < 50.0);
        assert_int_equal(lc.stats.hyp_len, 13);
        assert_int_equal(lc.stats.correct[0], 13);
        assert_int_equal(cased.stats.correct[0], 5); /* die . , und . */
    }
    cf_bleu_stats st = {.tokenize = CF_BLEU_TOKENIZE_13A, .lowercase = true};
    assert_ok(cf_bleu_add(&st, "EIN HUND", "ein hund"));
    assert_int_equal(st.correct[1], 1);
}

/* Tokens joined by single spaces, as sacreBLEU's tokenizer returns them. */
static void join_tokens(const char *s, char *out, size_t size)
{
    size_t n = strlen(s), pos = 0, start, len, w = 0;
    while (cf_next_token(s, n, &pos, &start, &len)) {
        if (w + len + 2 > size) fail_msg("line too long for the test: %s", s);
        if (w) out[w++] = ' ';
        memcpy(out + w, s + start, len);
        w += len;
    }
    out[w] = '\0';
}

static void tokenizer_13a_matches_sacrebleu(void **state)
{
    (void)state;
    lines cases = read_lines("bleu/tok13a.jsonl");
    assert_true(cases.n > 600);
    for (size_t i = 0; i < cases.n; i++) {
        json_error_t jerr;
        json_t *j = json_loads(cases.line[i], 0, &jerr);
        if (!j) fail_msg("tok13a.jsonl:%zu: %s", i + 1, jerr.text);
        const char *in = json_string_value(json_object_get(j, "in"));
        const char *want = json_string_value(json_object_get(j, "out"));
        assert_non_null(in);
        assert_non_null(want);
        char *tok = NULL, got[4096];
        assert_ok(cf_tokenize_13a(in, &tok));
        join_tokens(tok, got, sizeof got);
        if (strcmp(got, want))
            fail_msg("tok13a.jsonl:%zu: 13a of '%s' is\n  '%s', sacreBLEU says\n  '%s'", i + 1,
                     in, got, want);
        free(tok);
        json_decref(j);
    }
    free_lines(&cases);
}

static void signature_is_sacrebleus(void **state)
{
    (void)state;
    char sig[128];
    cf_bleu_signature(CF_BLEU_TOKENIZE_13A, false, sig, sizeof sig);
    assert_string_equal(sig, "nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:2.6.0");
    cf_bleu_signature(CF_BLEU_TOKENIZE_NONE, false, sig, sizeof sig);
    assert_string_equal(sig, "nrefs:1|case:mixed|eff:no|tok:none|smooth:exp|version:2.6.0");
    /* sacreBLEU -lc (2.6.0): BLEU(lowercase=True).get_signature() */
    cf_bleu_signature(CF_BLEU_TOKENIZE_13A, true, sig, sizeof sig);
    assert_string_equal(sig, "nrefs:1|case:lc|eff:no|tok:13a|smooth:exp|version:2.6.0");
    cf_bleu_signature(CF_BLEU_TOKENIZE_NONE, true, sig, sizeof sig);
    assert_string_equal(sig, "nrefs:1|case:lc|eff:no|tok:none|smooth:exp|version:2.6.0");
    cf_bleu_tokenize t;
    assert_true(cf_bleu_tokenize_parse("13a", &t) && t == CF_BLEU_TOKENIZE_13A);
    assert_true(cf_bleu_tokenize_parse("none", &t) && t == CF_BLEU_TOKENIZE_NONE);
    assert_false(cf_bleu_tokenize_parse("intl", &t));
}

static void streaming_equals_corpus(void **state)
{
    (void)state;
    lines hyp = read_lines("bleu/val300_raw.hyp"), ref = read_lines("bleu/val300_raw.ref");
    cf_bleu_result whole, streamed, reversed;
    assert_ok(cf_bleu_corpus((const char *const *)hyp.line, (const char *const *)ref.line, hyp.n,
                             CF_BLEU_TOKENIZE_13A, false, &whole));
    cf_bleu_stats st = {.tokenize = CF_BLEU_TOKENIZE_13A}, back = st;
    for (size_t i = 0; i < hyp.n; i++) assert_ok(cf_bleu_add(&st, hyp.line[i], ref.line[i]));
    for (size_t i = hyp.n; i-- > 0;) assert_ok(cf_bleu_add(&back, hyp.line[i], ref.line[i]));
    cf_bleu_compute(&st, &streamed);
    cf_bleu_compute(&back, &reversed);
    assert_true(streamed.score == whole.score);
    assert_true(reversed.score == whole.score); /* corpus BLEU ignores sentence order */
    assert_true(whole.score > 50 && whole.score < 100);
    free_lines(&hyp);
    free_lines(&ref);
}

static void swapped_tokens_are_different_ngrams(void **state)
{
    (void)state;
    /* same unigrams, no bigram in common: catches an order-blind n-gram key */
    const char *h[] = {"b a d c"}, *r[] = {"a b c d"};
    cf_bleu_result res;
    assert_ok(cf_bleu_corpus(h, r, 1, CF_BLEU_TOKENIZE_NONE, false, &res));
    assert_int_equal(res.stats.correct[0], 4);
    assert_int_equal(res.stats.correct[1], 0);
    assert_int_equal(res.stats.correct[2], 0);
}

static void invalid_input_is_an_error(void **state)
{
    (void)state;
    const char *h[] = {"ein haus", "ein \xff haus"}, *r[] = {"ein haus", "ein haus"};
    cf_bleu_result res;
    for (int t = 0; t < 4; t++) { /* none, 13a, each cased and lower-cased: the same errors */
        cf_bleu_tokenize tok = t % 2 ? CF_BLEU_TOKENIZE_13A : CF_BLEU_TOKENIZE_NONE;
        bool lc = t >= 2;
        assert_error(cf_bleu_corpus(h, r, 2, tok, lc, &res), CLFORMER_ERR_INVALID_ARGUMENT,
                     "line 2", "hypothesis", "invalid UTF-8 at byte 5", "0xff");
        const char *h2[] = {"ok"}, *r2[] = {"\xc3\x28"};
        assert_error(cf_bleu_corpus(h2, r2, 1, tok, lc, &res), CLFORMER_ERR_INVALID_ARGUMENT,
                     "line 1", "reference", "byte 1");
        assert_error(cf_bleu_corpus(h2, r2, 0, tok, lc, &res), CLFORMER_ERR_INVALID_ARGUMENT,
                     "at least one sentence");
    }

    for (int lc = 0; lc < 2; lc++) {
        cf_bleu_stats st = {.tokenize = CF_BLEU_TOKENIZE_13A, .lowercase = lc};
        assert_ok(cf_bleu_add(&st, "a b", "a b"));
        cf_bleu_stats before = st;
        assert_int_equal(cf_bleu_add(&st, "A \xed\xa0\x80", "a"), CLFORMER_ERR_INVALID_ARGUMENT);
        assert_memory_equal(&st, &before, sizeof st); /* a surrogate is rejected, nothing added */
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(matches_sacrebleu_none),
        cmocka_unit_test(matches_sacrebleu_13a),
        cmocka_unit_test(matches_sacrebleu_lowercase),
        cmocka_unit_test(lowercase_ignores_case),
        cmocka_unit_test(tokenizer_13a_matches_sacrebleu),
        cmocka_unit_test(signature_is_sacrebleus),
        cmocka_unit_test(streaming_equals_corpus),
        cmocka_unit_test(swapped_tokens_are_different_ngrams),
        cmocka_unit_test(invalid_input_is_an_error),
    };
    return cmocka_run_group_tests_name("bleu", tests, NULL, NULL);
}
