/*
 * A language model's text <-> ids under each tokenizer (runtime/data/
 * lm_codec.h): a file encoded in small chunks gives exactly the ids of the
 * whole text (the chunk cut only where it cannot change a token: GPT-2's
 * pre-tokenizer and SentencePiece's lines), decoding gives the text back
 * (every byte for BPE and char/byte vocabularies, the lines for
 * SentencePiece, whose <eos> stands for the newline), and an id outside the
 * vocabulary is refused. A char vocabulary built from a file in chunks is
 * the whole text's. A Hugging Face directory's tokenizer (the fixtures of
 * test_tokenizer_hf) puts its BOS once before the whole file, and decodes
 * without its special tokens.
 */
#include "data_util.h"

#include "lm_codec.h"
#include "lm_text.h"
#include "splitmix.h"

/* A text with what chunk cuts could break: whitespace runs around
 * newlines, blank lines, lines starting with spaces and contractions,
 * multi-byte characters, bytes that are no UTF-8, a long line. */
static char *sample_text(size_t *len)
{
    static const char *const pieces[] = {
        "ROMEO:\n", "But soft, what light through yonder window breaks?\n", "\n", "  indented line\n",
        "trailing spaces   \n", "\n\n\n", "'tis a contraction, isn't it?\n", "caf\xC3\xA9 na\xC3\xAFve\n",
        "\xE6\x97\xA5\xE6\x9C\xAC\xE8\xAA\x9E\n", "tab\there\n", "x\n", " \n", "a \n b\n",
        "123 4567 numbers\n", "ends without a newline", "\xF0\x9F\x98\x80 emoji!\n", "bad \xC3 bytes \x80\xFF\xE6\n",
    };
    const size_t n = sizeof pieces / sizeof *pieces;
    char *text = malloc(1 << 16);
    size_t at = 0;
    uint64_t state = 42;
    for (int i = 0; i < 400; i++) {
        const char *p = pieces[cf_rng_below(&state, n)];
        memcpy(text + at, p, strlen(p));
        at += strlen(p);
    }
    for (int i = 0; i < 300; i++) text[at++] = "ab "[i % 3]; /* one long line */
    text[at++] = '\n';
    text[at] = '\0';
    *len = at;
    return text;
}

/* Chunked file encoding equals encoding the whole text, for several chunk sizes. */
static void chunks_match_whole(const cf_lm_codec *c, const char *text, size_t len)
{
    char *path = tmp_file("text.txt", text, len);
    int32_t *whole = NULL;
    size_t n = 0, unknown = 0;
    assert_ok(cf_lm_codec_encode(c, text, len, &whole, &n, &unknown));
    assert_true(n > 100);
    const size_t chunks[] = {1, 2, 7, 64, 500, 100000, 0};
    for (size_t k = 0; k < sizeof chunks / sizeof *chunks; k++) {
        int32_t *ids = NULL;
        size_t m = 0, u = 0, bytes = 0;
        assert_ok(cf_lm_codec_encode_file(c, path, chunks[k], &ids, &m, &u, &bytes));
        assert_int_equal(bytes, len);
        if (m != n) fail_msg("chunk %zu: %zu ids, the whole text gives %zu", chunks[k], m, n);
        for (size_t i = 0; i < n; i++)
            if (ids[i] != whole[i])
                fail_msg("chunk %zu: id %zu is %d, the whole text gives %d", chunks[k], i, ids[i],
                         whole[i]);
        assert_int_equal(u, unknown);
        free(ids);
    }
    free(whole);
    free(path);
}

static void assert_decodes_to(const cf_lm_codec *c, const int32_t *ids, size_t n,
                              const char *text, size_t len)
{
    char *back = NULL;
    size_t back_len = 0;
    assert_ok(cf_lm_codec_decode(c, ids, n, &back, &back_len));
    assert_int_equal(back_len, len);
    assert_memory_equal(back, text, len);
    free(back);
}

static void gpt2_bpe(void **state)
{
    (void)state;
    /* a copy: the next data_path reuses its buffer */
    char vocab[4096];
    snprintf(vocab, sizeof vocab, "%s", data_path("bpe/vocab.json"));
    cf_bpe *bpe = NULL;
    assert_ok(cf_bpe_load_files(vocab, data_path("bpe/merges.txt"), &bpe));
    const cf_lm_codec c = {NULL, bpe, NULL, cf_bpe_vocab_size(bpe) + 4, NULL}; /* padded up by 4 */
    size_t len;
    char *text = sample_text(&len);
    chunks_match_whole(&c, text, len);
    /* whole text: every byte back */
    int32_t *ids = NULL;
    size_t n = 0, unknown = 0, back_len = 0;
    assert_ok(cf_lm_codec_encode(&c, text, len, &ids, &n, &unknown));
    assert_int_equal(unknown, 0);
    assert_decodes_to(&c, ids, n, text, len);
    char *back = NULL;
    /* an id of the padding decodes to nothing; past the model's, an error */
    const int32_t pad[2] = {cf_bpe_vocab_size(bpe), 0}, bad[1] = {c.size};
    assert_ok(cf_lm_codec_decode(&c, pad, 1, &back, &back_len));
    assert_int_equal(back_len, 0);
    free(back);
    assert_error(cf_lm_codec_decode(&c, bad, 1, &back, NULL), CLFORMER_ERR_INVALID_ARGUMENT,
                 "outside the vocabulary");
    free(ids);
    free(text);
    cf_bpe_free(bpe);
    tmp_cleanup();
}

static void char_and_byte(void **state)
{
    (void)state;
    size_t len;
    char *text = sample_text(&len);
    for (int bytes = 0; bytes < 2; bytes++) {
        char **tokens = NULL;
        int n_tokens = 0;
        assert_ok(cf_lm_vocab_build(text, len, bytes, &tokens, &n_tokens));
        cf_vocab *v = NULL;
        assert_ok(cf_vocab_from_tokens((const char *const *)tokens, (size_t)n_tokens, "vocab", &v));
        const cf_lm_codec c = {v, NULL, NULL, n_tokens, NULL};
        chunks_match_whole(&c, text, len);
        /* the vocabulary from the file in chunks is the whole text's */
        char *path = tmp_file("vocab.txt", text, len);
        const size_t chunks[] = {1, 7, 64, 0};
        for (size_t k = 0; k < sizeof chunks / sizeof *chunks; k++) {
            char **from_file = NULL;
            int n_file = 0;
            assert_ok(cf_lm_vocab_build_file(path, bytes, chunks[k], &from_file, &n_file));
            assert_int_equal(n_file, n_tokens);
            for (int i = 0; i < n_tokens; i++) assert_string_equal(from_file[i], tokens[i]);
            cf_lm_tokens_free(from_file, n_file);
        }
        free(path);
        int32_t *ids = NULL;
        size_t n = 0, unknown = 0, back_len = 0;
        assert_ok(cf_lm_codec_encode(&c, text, len, &ids, &n, &unknown));
        char *back = NULL;
        assert_ok(cf_lm_codec_decode(&c, ids, n, &back, &back_len));
        assert_int_equal(back_len, len);
        assert_memory_equal(back, text, len);
        free(back);
        free(ids);
        cf_vocab_free(v);
        cf_lm_tokens_free(tokens, n_tokens);
    }
    free(text);
    tmp_cleanup();
}

static void sentencepiece(void **state)
{
    (void)state;
    size_t len;
    char *text = sample_text(&len);
    /* learned from the text's lines */
    char *copy = malloc(len + 1);
    memcpy(copy, text, len + 1);
    const char *lines[4096];
    size_t n_lines = 0;
    for (char *line = strtok(copy, "\n"); line && n_lines < 4096; line = strtok(NULL, "\n"))
        lines[n_lines++] = line;
    cf_spm_train_options o = {120, "bpe", 0, 1, 7};
    char *model = NULL;
    size_t size = 0;
    assert_ok(cf_spm_train(lines, n_lines, &o, &model, &size));
    cf_spm *spm = NULL;
    assert_ok(cf_spm_load(model, size, "the model", &spm));
    const cf_lm_codec c = {NULL, NULL, spm, cf_spm_size(spm), NULL};
    chunks_match_whole(&c, text, len);
    /* a newline is <eos>; the lines come back as SentencePiece leaves them */
    const char *simple = "ROMEO:\nBut soft, what light\n\nx\n";
    int32_t *ids = NULL;
    size_t n = 0, unknown = 0;
    assert_ok(cf_lm_codec_encode(&c, simple, strlen(simple), &ids, &n, &unknown));
    size_t eos = 0;
    for (size_t i = 0; i < n; i++) eos += ids[i] == CF_EOS;
    assert_int_equal(eos, 4);
    char *back = NULL;
    assert_ok(cf_lm_codec_decode(&c, ids, n, &back, NULL));
    assert_string_equal(back, simple);
    free(back);
    free(ids);
    cf_spm_free(spm);
    free(model);
    free(copy);
    free(text);
    tmp_cleanup();
}

static void hugging_face(void **state)
{
    (void)state;
    static const char *const dirs[] = {"hf_tokenizers/llama3_bpe", "hf_tokenizers/smollm_bpe",
                                       "hf_tokenizers/llama_spm"};
    size_t len;
    char *text = sample_text(&len);
    for (size_t d = 0; d < sizeof dirs / sizeof *dirs; d++) {
        cf_hf_tokenizer *t = NULL;
        assert_ok(cf_hf_tokenizer_load_dir(data_path(dirs[d]), &t));
        const cf_lm_codec c = {NULL, NULL, NULL, cf_hf_tokenizer_size(t) + 4, t}; /* padded */
        chunks_match_whole(&c, text, len);
        int32_t *ids = NULL;
        size_t n = 0, unknown = 0, back_len = 0;
        assert_ok(cf_lm_codec_encode(&c, text, len, &ids, &n, &unknown));
        size_t n_prefix = 0;
        const int32_t *prefix = cf_hf_tokenizer_specials(t, false, &n_prefix);
        for (size_t i = 0; i < n_prefix; i++) assert_int_equal(ids[i], prefix[i]); /* BOS first */
        if (cf_hf_tokenizer_is_bpe(t)) /* byte-level: every byte back, BOS left out */
            assert_decodes_to(&c, ids, n, text, len);
        free(ids);
        /* BOS and EOS left out, the padding's ids nothing; the text as it was */
        const char *simple = "Hello world\n  two spaces, caf\xC3\xA9 123";
        assert_ok(cf_lm_codec_encode(&c, simple, strlen(simple), &ids, &n, &unknown));
        int32_t *more = malloc((n + 2) * sizeof *more);
        memcpy(more, ids, n * sizeof *more);
        more[n] = cf_hf_tokenizer_size(t) + 1; /* padding */
        more[n + 1] = cf_hf_tokenizer_eos(t) >= 0 ? cf_hf_tokenizer_eos(t)
                                                  : cf_hf_tokenizer_size(t);
        char *back = NULL;
        assert_ok(cf_lm_codec_decode(&c, more, n + 2, &back, &back_len));
        assert_string_equal(back, simple);
        free(back);
        free(more);
        free(ids);
        cf_hf_tokenizer_free(t);
    }
    free(text);
    tmp_cleanup();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(hugging_face),
        cmocka_unit_test(gpt2_bpe),
        cmocka_unit_test(char_and_byte),
        cmocka_unit_test(sentencepiece),
    };
    return cmocka_run_group_tests_name("lm_codec", tests, NULL, NULL);
}
