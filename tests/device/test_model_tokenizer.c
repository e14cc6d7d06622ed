/*
 * SentencePiece models carried by a model and its checkpoint
 * (clformer_model_set_tokenizer, metadata clformer.src_spm / tgt_spm): a
 * model whose vocabularies are two SentencePiece models' pieces saves and
 * loads them byte for byte (plain and training checkpoints); a checkpoint
 * without them (every older one) loads with none; a model refuses a
 * SentencePiece model before its vocabularies are set, one whose pieces are
 * not the vocabulary, and bytes that are not a model.
 */
#include "harness.h"

#include "fileio.h"
#include "text.h"
#include "tokenizer_spm.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define PIECES 96

typedef struct {
    char *bytes;
    size_t size;
    const char *tokens[PIECES];
    cf_spm *spm;
} side;

/* A SentencePiece model of PIECES pieces learned from tests/data/spm/<name>. */
static void learn(const char *name, side *s)
{
    char path[512], *text;
    size_t size;
    snprintf(path, sizeof path, "%s/spm/%s", getenv("CLFORMER_TEST_DATA"), name);
    assert_ok(cf_read_file(path, &text, &size));
    size_t n = cf_count_lines(text, size);
    char **lines = malloc(n * sizeof *lines);
    cf_split_lines(text, size, lines, n);
    if (!lines[n - 1][0]) n--;
    cf_spm_train_options o = {PIECES, "bpe", 0, 1, 3};
    assert_ok(cf_spm_train((const char *const *)lines, n, &o, &s->bytes, &s->size));
    assert_ok(cf_spm_load(s->bytes, s->size, name, &s->spm));
    for (int i = 0; i < PIECES; i++) s->tokens[i] = cf_spm_piece(s->spm, i);
    free(lines);
    free(text);
}

static clformer_model *new_model(const side *src, const side *tgt)
{
    clformer_config c;
    clformer_config_default(&c);
    c.d_model = 8;
    c.n_heads = 2;
    c.d_ff = 16;
    c.n_enc_layers = c.n_dec_layers = 1;
    c.src_vocab = c.tgt_vocab = PIECES;
    c.max_len = 16;
    clformer_model *m;
    assert_ok(clformer_model_create(hctx(), &c, 1, &m));
    assert_ok(clformer_model_set_vocabs(m, src->tokens, tgt->tokens));
    return m;
}

static void check_side(const clformer_model *m, bool target, const side *want)
{
    size_t size;
    const void *got = clformer_model_tokenizer(m, target, &size);
    assert_non_null(got);
    assert_int_equal(size, want->size);
    assert_memory_equal(got, want->bytes, size);
}

static void checkpoints_carry_tokenizers(void **state)
{
    (void)state;
    side en, de;
    learn("sample.en", &en);
    learn("sample.de", &de);
    clformer_model *m = new_model(&en, &de);
    size_t size = 1;
    assert_null(clformer_model_tokenizer(m, false, &size));
    assert_int_equal(size, 0);
    char path[] = "/tmp/clformer-spm-ckpt-XXXXXX";
    close(mkstemp(path));

    /* an older checkpoint: no tokenizers, loads with none */
    assert_ok(clformer_model_save(m, path, false));
    clformer_model *back;
    assert_ok(clformer_model_load(hctx(), path, &back));
    assert_null(clformer_model_tokenizer(back, false, NULL));
    assert_null(clformer_model_tokenizer(back, true, NULL));
    clformer_model_free(back);

    assert_ok(clformer_model_set_tokenizer(m, false, en.bytes, en.size));
    assert_ok(clformer_model_set_tokenizer(m, true, de.bytes, de.size));
    for (int training = 0; training < 2; training++) {
        assert_ok(clformer_model_save(m, path, training));
        assert_ok(clformer_model_load(hctx(), path, &back));
        check_side(back, false, &en);
        check_side(back, true, &de);
        clformer_model_free(back);
    }
    assert_ok(clformer_model_set_tokenizer(m, true, NULL, 0)); /* clears */
    assert_null(clformer_model_tokenizer(m, true, NULL));
    unlink(path);
    clformer_model_free(m);
    cf_spm_free(en.spm);
    cf_spm_free(de.spm);
    free(en.bytes);
    free(de.bytes);
}

static void mismatches_are_refused(void **state)
{
    (void)state;
    side en, de;
    learn("sample.en", &en);
    learn("sample.de", &de);
    clformer_model *m = new_model(&en, &de);
    /* the German model's pieces are not the source vocabulary */
    assert_int_equal(clformer_model_set_tokenizer(m, false, de.bytes, de.size),
                     CLFORMER_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(clformer_last_error(), "source vocabulary"));
    assert_int_equal(clformer_model_set_tokenizer(m, true, "junk", 4), CLFORMER_ERR_FORMAT);
    assert_non_null(strstr(clformer_last_error(), "not a SentencePiece model"));
    assert_null(clformer_model_tokenizer(m, false, NULL));
    assert_null(clformer_model_tokenizer(m, true, NULL));
    clformer_model_free(m);

    clformer_config c;
    clformer_config_default(&c);
    c.d_model = 8;
    c.n_heads = 2;
    c.d_ff = 16;
    c.n_enc_layers = c.n_dec_layers = 1;
    c.src_vocab = c.tgt_vocab = PIECES;
    assert_ok(clformer_model_create(hctx(), &c, 1, &m));
    assert_int_equal(clformer_model_set_tokenizer(m, false, en.bytes, en.size),
                     CLFORMER_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(clformer_last_error(), "vocabularies first"));
    clformer_model_free(m);
    cf_spm_free(en.spm);
    cf_spm_free(de.spm);
    free(en.bytes);
    free(de.bytes);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(checkpoints_carry_tokenizers),
    cmocka_unit_test(mismatches_are_refused),
};
HARNESS_DEVICE_MAIN("model tokenizer", tests)
