/*
 * SentencePiece models carried by a model and its checkpoint
 * (clformer_model_set_tokenizer, metadata clformer.src_spm / tgt_spm): a
 * model whose vocabularies are two SentencePiece models' pieces saves and
 * loads them byte for byte (plain and training checkpoints); a checkpoint
 * without them (every older one) loads with none; a model refuses a
 * SentencePiece model before its vocabularies are set, one whose pieces are
 * not the vocabulary, and bytes that are not a model. And the trainer with
 * SentencePiece models (clformer_train_options.src_spm/tgt_spm): it trains
 * on raw text, its model carries both models, reads raw sentences
 * (clformer_model_tokenize gives their pieces) and translates into raw text
 * (no piece marks), and its validation scores raw text.
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

static clformer_config tiny_config(void)
{
    clformer_config c;
    clformer_config_default(&c);
    c.d_model = 8;
    c.n_heads = 2;
    c.d_ff = 16;
    c.n_enc_layers = c.n_dec_layers = 1;
    c.src_vocab = c.tgt_vocab = PIECES;
    c.max_len = 16;
    return c;
}

static clformer_model *new_model(const side *src, const side *tgt)
{
    clformer_config c = tiny_config();
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

    clformer_config c = tiny_config();
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

static double last_val_bleu = -1;
static bool on_progress(const clformer_train_progress *p, void *user)
{
    (void)user;
    if (p->event == CLFORMER_TRAIN_VALIDATION) last_val_bleu = p->val_bleu;
    return true;
}

static void trainer_takes_raw_text(void **state)
{
    (void)state;
    /* Training and decoding raw text ran over 9 minutes on Oclgrind; like
     * test_cmd_demo it runs on real devices only (cmocka prints SKIPPED). The
     * checkpoint cases below run on the simulator too. */
    if (harness_is_slow()) skip();
    side en, de;
    learn("sample.en", &en);
    learn("sample.de", &de);
    char path[512];
    snprintf(path, sizeof path, "%s/spm/sample", getenv("CLFORMER_TEST_DATA"));
    char src_path[600], tgt_path[600];
    snprintf(src_path, sizeof src_path, "%s.en", path);
    snprintf(tgt_path, sizeof tgt_path, "%s.de", path);
    clformer_parallel_text *text;
    assert_ok(clformer_parallel_text_load(src_path, tgt_path, &text));
    clformer_train_options o;
    clformer_train_options_default(&o);
    /* validation: 4 pairs, enough to score BLEU */
    const char *vs[4], *vt[4];
    for (size_t i = 0; i < 4; i++) {
        vs[i] = clformer_parallel_text_source(text, i);
        vt[i] = clformer_parallel_text_target(text, i);
    }
    clformer_parallel_text *val;
    assert_ok(clformer_parallel_text_from_lines(vs, vt, 4, "val.en", "val.de", &val));
    o.train_text = text;
    o.val_text = val;
    o.src_spm = en.bytes, o.src_spm_size = en.size;
    o.tgt_spm = de.bytes, o.tgt_spm_size = de.size;
    o.config = tiny_config();
    o.config.max_len = 96;
    o.batching.batch_size = 8, o.batching.batch_tokens = 0;
    o.steps = 2;
    o.bleu_sentences = 2;
    o.callback = on_progress;
    clformer_trainer *t;
    assert_ok(clformer_trainer_create(hctx(), &o, &t));
    clformer_train_result r;
    assert_ok(clformer_trainer_run(t, &r));
    assert_true(last_val_bleu >= 0); /* raw text scored (13a) */
    clformer_model *m = clformer_trainer_model(t);
    check_side(m, false, &en);
    check_side(m, true, &de);
    assert_string_equal(clformer_model_src_vocab(m)[5], en.tokens[5]);

    const char *raw = "Two young men.";
    char *pieces;
    assert_ok(clformer_model_tokenize(m, false, raw, &pieces));
    assert_non_null(strstr(pieces, "\xe2\x96\x81")); /* "▁": pieces, not the raw text */
    free(pieces);
    clformer_decode_options dec;
    clformer_decode_options_default(&dec);
    dec.max_len = 12;
    char *out[1];
    assert_ok(clformer_translate_sentences(clformer_trainer_session(t), &raw, 1, &dec, 1, out,
                                           NULL, NULL, NULL));
    assert_null(strstr(out[0], "\xe2\x96\x81")); /* decoded to raw text */
    free(out[0]);
    clformer_trainer_free(t);
    clformer_parallel_text_free(val);
    clformer_parallel_text_free(text);
    cf_spm_free(en.spm);
    cf_spm_free(de.spm);
    free(en.bytes);
    free(de.bytes);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(trainer_takes_raw_text),
    cmocka_unit_test(checkpoints_carry_tokenizers),
    cmocka_unit_test(mismatches_are_refused),
};
HARNESS_DEVICE_MAIN("model tokenizer", tests)
