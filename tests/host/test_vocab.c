/*
 * Vocabulary: specials first, frequency order with lexicographic ties,
 * min_freq/max_vocab, lookups, encode/decode, the JSON form and every
 * validation error of it.
 */
#include "data_util.h"

#include "vocab.h"

static cf_vocab *build(const char *const *lines, size_t n, int min_freq, int max_vocab)
{
    cf_vocab *v = NULL;
    assert_ok(cf_vocab_build(lines, n, min_freq, max_vocab, &v));
    return v;
}

static void assert_tokens(const cf_vocab *v, const char *const *want, int n)
{
    assert_int_equal(cf_vocab_size(v), n);
    for (int i = 0; i < n; i++) {
        const char *tok = cf_vocab_token(v, i);
        if (!tok || strcmp(tok, want[i]) != 0)
            fail_msg("id %d is \"%s\", expected \"%s\"", i, tok ? tok : "(null)", want[i]);
    }
}

static const char *const corpus[] = {
    "the cat sat on the mat .",
    "a dog sat on a log .",
    "the dog ate .",
};

static void specials_then_frequency_then_bytes(void **state)
{
    (void)state;
    cf_vocab *v = build(corpus, 3, 1, 0);
    /* counts: . 3, the 3, a 2, dog 2, on 2, sat 2, then 1 each */
    const char *const want[] = {"<pad>", "<sos>", "<eos>", "<unk>", ".", "the", "a", "dog", "on",
                                "sat", "ate", "cat", "log", "mat"};
    assert_tokens(v, want, 14);
    assert_int_equal(CF_PAD, 0);
    assert_int_equal(CF_SOS, 1);
    assert_int_equal(CF_EOS, 2);
    assert_int_equal(CF_UNK, 3);
    cf_vocab_free(v);
}

static void min_freq_and_max_vocab(void **state)
{
    (void)state;
    cf_vocab *v = build(corpus, 3, 2, 0);
    const char *const want2[] = {"<pad>", "<sos>", "<eos>", "<unk>", ".", "the", "a", "dog", "on",
                                 "sat"};
    assert_tokens(v, want2, 10);
    cf_vocab_free(v);
    v = build(corpus, 3, 1, 7); /* the cap cuts the run of count-2 tokens: a, dog kept... */
    const char *const want7[] = {"<pad>", "<sos>", "<eos>", "<unk>", ".", "the", "a"};
    assert_tokens(v, want7, 7);
    cf_vocab_free(v);
    v = build(corpus, 3, 1, 4); /* specials only */
    assert_int_equal(cf_vocab_size(v), 4);
    cf_vocab_free(v);
    v = build(corpus, 3, 100, 0);
    assert_int_equal(cf_vocab_size(v), 4);
    cf_vocab_free(v);
    v = build(NULL, 0, 1, 0);
    assert_int_equal(cf_vocab_size(v), 4);
    cf_vocab_free(v);
}

static void bad_build_arguments(void **state)
{
    (void)state;
    cf_vocab *v = (cf_vocab *)1;
    assert_error(cf_vocab_build(corpus, 3, 0, 0, &v), CLFORMER_ERR_INVALID_ARGUMENT,
                 "min_freq is 0", "at least 1");
    assert_null(v);
    assert_error(cf_vocab_build(corpus, 3, 1, 3, &v), CLFORMER_ERR_INVALID_ARGUMENT,
                 "max_vocab is 3", "at least 4");
    assert_error(cf_vocab_build(corpus, 3, 1, -1, &v), CLFORMER_ERR_INVALID_ARGUMENT,
                 "max_vocab is -1");

    /* text that skipped cf_parallel_text's validation cannot be serialised */
    const char *const bad[] = {"ok caf\xe9"};
    assert_ok(cf_vocab_build(bad, 1, 1, 0, &v));
    char *json = (char *)1;
    assert_error(cf_vocab_to_json(v, &json), CLFORMER_ERR_INVALID_ARGUMENT,
                 "token 4 is not valid UTF-8");
    assert_null(json);
    cf_vocab_free(v);
}

static void independent_of_line_order(void **state)
{
    (void)state;
    const char *const reordered[] = {corpus[2], corpus[0], corpus[1]};
    cf_vocab *a = build(corpus, 3, 1, 0), *b = build(reordered, 3, 1, 0);
    char *ja, *jb;
    assert_ok(cf_vocab_to_json(a, &ja));
    assert_ok(cf_vocab_to_json(b, &jb));
    assert_string_equal(ja, jb);
    free(ja);
    free(jb);
    cf_vocab_free(a);
    cf_vocab_free(b);
}

static void whitespace_and_special_spellings(void **state)
{
    (void)state;
    /* tab, CR, NBSP, ideographic space split; a zero-width space does not;
     * "<unk>" and "<eos>" in the text are the specials, not new entries */
    const char *const lines[] = {"über\tdas\r\n", "das\xc2\xa0haus\xe3\x80\x80<unk> <eos>",
                                 "a\xe2\x80\x8b" "b"};
    cf_vocab *v = build(lines, 3, 1, 0);
    const char *const want[] = {"<pad>", "<sos>", "<eos>", "<unk>", "das", "a\xe2\x80\x8b" "b",
                                "haus", "über"};
    assert_tokens(v, want, 8);
    cf_vocab_free(v);

    /* a vocabulary handed over as tokens (clformer_model_set_vocabs) must be
     * UTF-8 too, or a checkpoint could be saved that cannot be loaded */
    const char *const bad[] = {"<pad>", "<sos>", "<eos>", "<unk>", "ok", "s4\xc3("};
    assert_int_equal(cf_vocab_from_tokens(bad, 6, "target vocabulary", &v), CLFORMER_ERR_FORMAT);
    assert_null(v);
    assert_non_null(strstr(clformer_last_error(), "entry 5 is not valid UTF-8"));
    cf_clear_error();
}

static void lookups(void **state)
{
    (void)state;
    cf_vocab *v = build(corpus, 3, 1, 0);
    assert_int_equal(cf_vocab_id(v, "dog", 3), 7);
    assert_int_equal(cf_vocab_id(v, "dogs", 4), CF_UNK);
    assert_int_equal(cf_vocab_id(v, "dogs", 3), 7); /* a length, not a C string */
    assert_int_equal(cf_vocab_id(v, "<pad>", 5), CF_PAD);
    assert_int_equal(cf_vocab_find(v, "mat"), 13);
    assert_int_equal(cf_vocab_find(v, "zebra"), -1);
    assert_int_equal(cf_vocab_find(v, "<unk>"), CF_UNK);
    assert_string_equal(cf_vocab_token(v, 0), "<pad>");
    assert_null(cf_vocab_token(v, -1));
    assert_null(cf_vocab_token(v, 14));
    cf_vocab_free(v);
}

static void many_tokens(void **state)
{
    (void)state;
    /* 60000 distinct tokens: the hash table grows many times */
    enum { N = 60000 };
    char **lines = malloc(N * sizeof *lines);
    for (int i = 0; i < N; i++) {
        lines[i] = malloc(32);
        snprintf(lines[i], 32, "w%d w%d", i, i / 2); /* w0..w29999 twice, the rest once */
    }
    cf_vocab *v = build((const char *const *)lines, N, 1, 0);
    assert_int_equal(cf_vocab_size(v), N + 4);
    /* twice-seen tokens first, in byte order: w0, w1, w10, w100, ... */
    assert_string_equal(cf_vocab_token(v, 4), "w0");
    assert_string_equal(cf_vocab_token(v, 5), "w1");
    assert_string_equal(cf_vocab_token(v, 6), "w10");
    for (int i = 0; i < N; i++) {
        char tok[16];
        snprintf(tok, sizeof tok, "w%d", i);
        int32_t id = cf_vocab_find(v, tok);
        assert_true(id >= 4);
        assert_string_equal(cf_vocab_token(v, id), tok);
        assert_true((id < 30004) == (i < 30000));
    }
    cf_vocab_free(v);
    for (int i = 0; i < N; i++) free(lines[i]);
    free(lines);
}

static void encode_and_decode(void **state)
{
    (void)state;
    cf_vocab *v = build(corpus, 3, 1, 0);
    const char *s = "the  zebra sat\ton the mat .";
    int32_t ids[16];
    size_t unk = 99;
    size_t n = cf_vocab_encode(v, s, strlen(s), true, ids, 16, &unk);
    const int32_t want[] = {CF_SOS, 5, CF_UNK, 9, 8, 5, 13, 4, CF_EOS};
    assert_int_equal(n, 9);
    assert_memory_equal(ids, want, sizeof want);
    assert_int_equal(unk, 1);
    n = cf_vocab_encode(v, s, strlen(s), false, ids, 16, NULL);
    assert_int_equal(n, 7);
    assert_memory_equal(ids, want + 1, 7 * sizeof *ids);

    /* a short buffer gets a prefix and the full count, like snprintf */
    int32_t small[3] = {-7, -7, -7};
    assert_int_equal(cf_vocab_encode(v, s, strlen(s), true, small, 2, NULL), 9);
    assert_int_equal(small[0], CF_SOS);
    assert_int_equal(small[1], 5);
    assert_int_equal(small[2], -7);
    assert_int_equal(cf_vocab_encode(v, "", 0, true, NULL, 0, NULL), 2);

    char *text;
    const int32_t seq[] = {CF_SOS, 5, CF_PAD, CF_UNK, 9, CF_EOS, 7, 7};
    assert_ok(cf_vocab_decode(v, seq, 8, &text));
    assert_string_equal(text, "the <unk> sat");
    free(text);
    assert_ok(cf_vocab_decode(v, seq, 0, &text));
    assert_string_equal(text, "");
    free(text);
    const int32_t bad[] = {5, 14};
    text = (char *)1;
    assert_error(cf_vocab_decode(v, bad, 2, &text), CLFORMER_ERR_INVALID_ARGUMENT, "id 14",
                 "position 1", "0..13");
    assert_null(text);
    const int32_t neg[] = {-1};
    assert_error(cf_vocab_decode(v, neg, 1, &text), CLFORMER_ERR_INVALID_ARGUMENT, "id -1");
    cf_vocab_free(v);
}

static void json_round_trip(void **state)
{
    (void)state;
    const char *const lines[] = {"grüße \"quoted\" back\\slash 日本 tab"};
    cf_vocab *v = build(lines, 1, 1, 0), *w = NULL;
    char *json;
    assert_ok(cf_vocab_to_json(v, &json));
    assert_ok(cf_vocab_from_json(json, strlen(json), "test", &w));
    assert_int_equal(cf_vocab_size(w), cf_vocab_size(v));
    for (int32_t i = 0; i < cf_vocab_size(v); i++)
        assert_string_equal(cf_vocab_token(w, i), cf_vocab_token(v, i));
    assert_int_equal(cf_vocab_find(w, "日本"), cf_vocab_find(v, "日本"));
    free(json);
    cf_vocab_free(w);

    const char *plain = "[\"<pad>\",\"<sos>\",\"<eos>\",\"<unk>\",\"ein\",\"haus\"]";
    assert_ok(cf_vocab_from_json(plain, strlen(plain), "test", &w));
    assert_int_equal(cf_vocab_find(w, "haus"), 5);
    assert_ok(cf_vocab_to_json(w, &json));
    assert_string_equal(json, plain);
    free(json);
    cf_vocab_free(w);
    cf_vocab_free(v);
}

static void expect_json_error(const char *json, const char *frag1, const char *frag2)
{
    cf_vocab *v = (cf_vocab *)1;
    assert_error(cf_vocab_from_json(json, strlen(json), "vocab.json", &v), CLFORMER_ERR_FORMAT,
                 "vocab.json", frag1, frag2);
    assert_null(v);
}

static void json_validation(void **state)
{
    (void)state;
    expect_json_error("[\"<pad>\", ", "not valid JSON", "line 1");
    expect_json_error("", "not valid JSON", "vocab.json");
    expect_json_error("{\"a\": 1}", "JSON array of token strings", "an object");
    expect_json_error("\"<pad>\"", "JSON array", "a string");
    expect_json_error("[\"<pad>\",\"<sos>\",\"<eos>\"]", "has 3 entries", "at least the 4");
    expect_json_error("[]", "has 0 entries", "<pad>, <sos>, <eos>, <unk>");
    expect_json_error("[\"<sos>\",\"<pad>\",\"<eos>\",\"<unk>\"]", "entry 0 is \"<sos>\"",
                      "must be \"<pad>\"");
    expect_json_error("[\"<pad>\",\"<sos>\",\"<eos>\",\"<UNK>\",\"a\"]", "entry 3 is \"<UNK>\"",
                      "must be \"<unk>\"");
    expect_json_error("[\"<pad>\",\"<sos>\",\"<eos>\",\"<unk>\",\"a\",7]", "entry 5 is a number",
                      "token string");
    expect_json_error("[\"<pad>\",\"<sos>\",\"<eos>\",\"<unk>\",null]", "entry 4 is null",
                      "token string");
    expect_json_error("[\"<pad>\",\"<sos>\",\"<eos>\",\"<unk>\",[\"a\"]]", "entry 4 is an array",
                      "token string");
    expect_json_error("[\"<pad>\",\"<sos>\",\"<eos>\",\"<unk>\",\"\"]", "entry 4 is an empty",
                      "string");
    expect_json_error("[\"<pad>\",\"<sos>\",\"<eos>\",\"<unk>\",\"a b\"]", "entry 4 \"a b\"",
                      "whitespace");
    expect_json_error("[\"<pad>\",\"<sos>\",\"<eos>\",\"<unk>\",\"a\\u00a0b\"]", "entry 4",
                      "whitespace");
    expect_json_error("[\"<pad>\",\"<sos>\",\"<eos>\",\"<unk>\",\"a\",\"b\",\"a\"]",
                      "entry 6 \"a\"", "repeats entry 4");
    expect_json_error("[\"<pad>\",\"<sos>\",\"<eos>\",\"<unk>\",\"<pad>\"]", "entry 4 \"<pad>\"",
                      "repeats entry 0");
    expect_json_error("[\"<pad>\",\"<sos>\",\"<eos>\",\"<unk>\",\"a\\u0000b\"]", "not valid JSON",
                      "vocab.json");
}

static void save_and_load(void **state)
{
    (void)state;
    cf_vocab *v = build(corpus, 3, 1, 0), *w = NULL;
    char path[512];
    snprintf(path, sizeof path, "%s/sub/vocab.json", tmp_dir());
    assert_error(cf_vocab_save(v, path), CLFORMER_ERR_IO, "saving the vocabulary", "sub");
    snprintf(path, sizeof path, "%s/vocab.json", tmp_dir());
    assert_ok(cf_vocab_save(v, path));
    assert_ok(cf_vocab_load(path, &w));
    assert_int_equal(cf_vocab_size(w), 14);
    assert_string_equal(cf_vocab_token(w, 13), "mat");
    cf_vocab_free(w);

    snprintf(path, sizeof path, "%s/missing.json", tmp_dir());
    assert_error(cf_vocab_load(path, &w), CLFORMER_ERR_IO, "missing.json", "No such file");
    char *bad = tmp_text("bad.json", "[\"<pad>\",\"<sos>\",\"<eos>\"]");
    assert_error(cf_vocab_load(bad, &w), CLFORMER_ERR_FORMAT, bad, "has 3 entries");
    free(bad);
    cf_vocab_free(v);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(specials_then_frequency_then_bytes),
        cmocka_unit_test(min_freq_and_max_vocab),
        cmocka_unit_test(bad_build_arguments),
        cmocka_unit_test(independent_of_line_order),
        cmocka_unit_test(whitespace_and_special_spellings),
        cmocka_unit_test(lookups),
        cmocka_unit_test(many_tokens),
        cmocka_unit_test(encode_and_decode),
        cmocka_unit_test(json_round_trip),
        cmocka_unit_test(json_validation),
        cmocka_unit_test(save_and_load),
    };
    return cmocka_run_group_tests_name("vocab", tests, NULL, tmp_teardown);
}
