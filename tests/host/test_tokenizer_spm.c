/*
 * The SentencePiece wrapper (runtime/data/tokenizer_spm.h) on a small raw
 * (detokenised) sample of Multi30k, tests/data/spm/sample.{en,de}:
 * - unigram and BPE models learned from it decode every sample line back to
 *   itself (raw -> ids -> raw), and learning twice with one seed gives the
 *   same model bytes;
 * - the special ids: pieces 0..3 are <pad> <sos> <eos> <unk>, encoding
 *   wraps in 1 ... 2 and never emits 0..2 inside, a character never seen
 *   becomes 3 and is counted, decoding drops <pad>/<sos> and stops at <eos>;
 * - a model trained by spm_train with its default ids (unk 0, bos 1, eos 2,
 *   no pad: tests/data/spm/default_ids.model) is mapped to the same ids;
 * - errors: garbage and truncated model bytes, models the fuzzer made that
 *   libsentencepiece cannot use safely (a character map pointing outside
 *   itself, an empty piece), a missing file, an id out of
 *   range, bad training options, a vocabulary larger than the text allows.
 */
#include "data_util.h"

#include "fileio.h"
#include "text.h"
#include "tokenizer_spm.h"
#include "vocab.h"

typedef struct {
    char *data;
    char **line;
    size_t n;
} sample;

static sample read_sample(const char *rel)
{
    sample s = {0};
    size_t size;
    assert_ok(cf_read_file(data_path(rel), &s.data, &size));
    s.n = cf_count_lines(s.data, size);
    s.line = malloc(s.n * sizeof *s.line);
    assert_non_null(s.line);
    cf_split_lines(s.data, size, s.line, s.n);
    if (s.n && !s.line[s.n - 1][0]) s.n--; /* the empty piece after the final '\n' */
    return s;
}

static void free_sample(sample *s)
{
    free(s->line);
    free(s->data);
}

static cf_spm *train(const sample *s, const char *type, int vocab, char **bytes, size_t *size)
{
    cf_spm_train_options o = {vocab, type, 0, 1, 7};
    char *model;
    size_t n;
    assert_ok(cf_spm_train((const char *const *)s->line, s->n, &o, &model, &n));
    cf_spm *spm;
    assert_ok(cf_spm_load(model, n, "the trained model", &spm));
    if (bytes) {
        *bytes = model;
        *size = n;
    } else {
        free(model);
    }
    return spm;
}

/* encode then decode; returns the decoded text (free it) */
static char *round_trip(const cf_spm *spm, const char *line, size_t *n_unk)
{
    int32_t ids[1024];
    size_t count;
    assert_ok(cf_spm_encode(spm, line, strlen(line), true, ids, 1024, &count, n_unk));
    assert_true(count >= 2 && count <= 1024);
    assert_int_equal(ids[0], CF_SOS);
    assert_int_equal(ids[count - 1], CF_EOS);
    for (size_t i = 1; i + 1 < count; i++) {
        assert_true(ids[i] >= CF_UNK && ids[i] < cf_spm_size(spm));
    }
    char *text;
    assert_ok(cf_spm_decode(spm, ids, count, &text));
    return text;
}

static void check_round_trip(const char *type)
{
    sample en = read_sample("spm/sample.en");
    assert_true(en.n >= 300);
    char *bytes;
    size_t size;
    cf_spm *spm = train(&en, type, 300, &bytes, &size);
    assert_int_equal(cf_spm_size(spm), 300);
    for (size_t i = 0; i < en.n; i++) {
        size_t unk;
        char *text = round_trip(spm, en.line[i], &unk);
        if (strcmp(text, en.line[i]))
            fail_msg("%s, line %zu: '%s' came back as '%s'", type, i + 1, en.line[i], text);
        assert_int_equal(unk, 0);
        free(text);
    }
    /* subwords: fewer pieces than characters, more than words */
    size_t count;
    const char *line = en.line[0];
    assert_ok(cf_spm_encode(spm, line, strlen(line), false, NULL, 0, &count, NULL));
    assert_true(count < strlen(line) && count > cf_count_tokens(line, strlen(line)));

    /* the same text and seed give the same model */
    char *again;
    size_t again_size;
    cf_spm *spm2 = train(&en, type, 300, &again, &again_size);
    assert_int_equal(again_size, size);
    assert_memory_equal(again, bytes, size);
    size_t got_size;
    const void *got = cf_spm_bytes(spm, &got_size);
    assert_int_equal(got_size, size);
    assert_memory_equal(got, bytes, size);
    cf_spm_free(spm2);
    free(again);
    free(bytes);
    cf_spm_free(spm);
    free_sample(&en);
}

static void unigram_round_trip(void **state)
{
    (void)state;
    check_round_trip("unigram");
}

static void bpe_round_trip(void **state)
{
    (void)state;
    check_round_trip("bpe");
}

static void special_ids(void **state)
{
    (void)state;
    sample de = read_sample("spm/sample.de");
    cf_spm *spm = train(&de, "unigram", 200, NULL, NULL);
    for (int32_t id = 0; id < CF_N_SPECIALS; id++)
        assert_string_equal(cf_spm_piece(spm, id), cf_special_tokens[id]);
    assert_non_null(cf_spm_piece(spm, 199));
    assert_null(cf_spm_piece(spm, 200));
    assert_null(cf_spm_piece(spm, -1));

    /* a character the text never had is <unk>, and counted */
    size_t unk;
    char *text = round_trip(spm, "Ein hund 日 läuft.", &unk);
    assert_int_equal(unk, 1);
    assert_non_null(strstr(text, "Ein hund"));
    free(text);

    /* snprintf-style sizing: cap 0 counts */
    size_t count, again;
    assert_ok(cf_spm_encode(spm, "Ein hund.", 9, true, NULL, 0, &count, NULL));
    int32_t ids[64];
    assert_ok(cf_spm_encode(spm, "Ein hund.", 9, true, ids, 64, &again, NULL));
    assert_int_equal(count, again);
    assert_ok(cf_spm_encode(spm, "", 0, true, ids, 64, &count, NULL));
    assert_int_equal(count, 2);

    /* decoding: <pad>/<sos> dropped, stop at <eos>, out of range an error */
    assert_ok(cf_spm_encode(spm, "Ein hund.", 9, false, ids + 2, 60, &count, NULL));
    ids[0] = CF_PAD;
    ids[1] = CF_SOS;
    ids[2 + count] = CF_EOS;
    ids[3 + count] = ids[2]; /* after <eos>: ignored */
    assert_ok(cf_spm_decode(spm, ids, count + 4, &text));
    assert_string_equal(text, "Ein hund.");
    free(text);
    ids[2] = 200;
    assert_error(cf_spm_decode(spm, ids, count + 4, &text), CLFORMER_ERR_INVALID_ARGUMENT,
                 "200", "position 2");
    assert_null(text);
    cf_spm_free(spm);
    free_sample(&de);
}

/* spm_train's defaults: <unk> 0, <s> 1, </s> 2, no <pad>; mapped to ours */
static void external_model_ids(void **state)
{
    (void)state;
    cf_spm *spm;
    assert_ok(cf_spm_load_file(data_path("spm/default_ids.model"), &spm));
    /* 120 pieces: 3 specials of its own, <pad> added */
    assert_int_equal(cf_spm_size(spm), 121);
    assert_string_equal(cf_spm_piece(spm, CF_UNK), "<unk>");
    assert_string_equal(cf_spm_piece(spm, 4), "\xe2\x96\x81"); /* its id 3, "▁" */
    size_t unk;
    char *text = round_trip(spm, "A man in a blue shirt.", &unk);
    assert_string_equal(text, "A man in a blue shirt.");
    assert_int_equal(unk, 0);
    free(text);
    cf_spm_free(spm);
}

static void bad_models_and_options(void **state)
{
    (void)state;
    cf_spm *spm = (cf_spm *)1;
    assert_error(cf_spm_load("not a model at all", 18, "junk.model", &spm), CLFORMER_ERR_FORMAT,
                 "junk.model", "not a SentencePiece model");
    assert_null(spm);
    char *bytes;
    size_t size;
    assert_ok(cf_read_file(data_path("spm/default_ids.model"), &bytes, &size));
    assert_error(cf_spm_load(bytes, size / 2, "half.model", &spm), CLFORMER_ERR_FORMAT,
                 "half.model");
    assert_error(cf_spm_load(bytes, 0, "empty.model", &spm), CLFORMER_ERR_FORMAT, "empty.model");
    free(bytes);
    assert_error(cf_spm_load_file("/nonexistent/x.model", &spm), CLFORMER_ERR_IO,
                 "/nonexistent/x.model");

    sample en = read_sample("spm/sample.en");
    char *model = (char *)1;
    cf_spm_train_options o = {100, "wordpiece", 0, 1, 7};
    assert_error(cf_spm_train((const char *const *)en.line, en.n, &o, &model, &size),
                 CLFORMER_ERR_INVALID_ARGUMENT, "wordpiece", "unigram or bpe");
    assert_null(model);
    o = (cf_spm_train_options){4, "bpe", 0, 1, 7};
    assert_error(cf_spm_train((const char *const *)en.line, en.n, &o, &model, &size),
                 CLFORMER_ERR_INVALID_ARGUMENT, "at least 8");
    o = (cf_spm_train_options){100000, "unigram", 0, 1, 7};
    assert_error(cf_spm_train((const char *const *)en.line, en.n, &o, &model, &size),
                 CLFORMER_ERR_INVALID_ARGUMENT, "100000", "smaller --vocab-size");
    o = (cf_spm_train_options){20, "bpe", 0, 1, 7}; /* fewer than the text's characters */
    assert_error(cf_spm_train((const char *const *)en.line, en.n, &o, &model, &size),
                 CLFORMER_ERR_INVALID_ARGUMENT, "larger --vocab-size");
    o = (cf_spm_train_options){100, "unigram", 0, 1, 7};
    assert_error(cf_spm_train((const char *const *)en.line, 0, &o, &model, &size),
                 CLFORMER_ERR_INVALID_ARGUMENT, "no sentences");
    free_sample(&en);
}

/* Models the fuzzer (tests/fuzz/fuzz_tokenizer) made that libsentencepiece
 * loads but cannot use safely: refused when loading, with the reason. */
static void hostile_models(void **state)
{
    (void)state;
    cf_spm *spm = (cf_spm *)1;
    assert_error(cf_spm_load_file(data_path("spm/damaged_charsmap.model"), &spm), CLFORMER_ERR_FORMAT,
                 "damaged_charsmap.model", "character map", "outside its strings");
    assert_null(spm);
    assert_error(cf_spm_load_file(data_path("spm/empty_piece.model"), &spm), CLFORMER_ERR_FORMAT,
                 "empty_piece.model", "not a usable", "zero-length key");
    assert_null(spm);
    /* Llama's model with its control piece 2 renamed to the normal piece
     * 279's "\xe2\x96\x81h": SentencePiece loads it and cannot encode "h" */
    assert_error(cf_spm_load_file(data_path("spm/repeated_piece.model"), &spm), CLFORMER_ERR_FORMAT,
                 "repeated_piece.model", "pieces 2 and 279", "named twice");
    assert_null(spm);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(unigram_round_trip),
        cmocka_unit_test(bpe_round_trip),
        cmocka_unit_test(special_ids),
        cmocka_unit_test(external_model_ids),
        cmocka_unit_test(bad_models_and_options),
        cmocka_unit_test(hostile_models),
    };
    return cmocka_run_group_tests_name("SentencePiece tokenizer", tests, NULL, NULL);
}
