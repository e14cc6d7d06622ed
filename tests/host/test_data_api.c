/* The public text-data API (clformer.h): parallel text, vocabularies,
 * corpora, batchers with a saved position, BLEU, through the header alone. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "clformer.h"

#include <stdlib.h>
#include <string.h>

static const char *const SRC[] = {"a b c", "b c", "", "c a b a", "a", "b b c c a"};
static const char *const TGT[] = {"x y z", "y z", "q", "z x y x", "x", "y y z z x"};
#define N (sizeof SRC / sizeof *SRC)

static void text_vocab_and_corpus(void **state)
{
    (void)state;
    clformer_parallel_text *text;
    assert_int_equal(clformer_parallel_text_from_lines(SRC, TGT, N, "s", "t", &text), CLFORMER_OK);
    /* the pair with an empty side is skipped */
    assert_int_equal(clformer_parallel_text_size(text), N - 1);
    assert_string_equal(clformer_parallel_text_source(text, 2), "c a b a");
    assert_null(clformer_parallel_text_source(text, N - 1));

    clformer_vocab *sv, *tv;
    assert_int_equal(clformer_vocab_build(text, CLFORMER_SIDE_SOURCE, 1, 0, &sv), CLFORMER_OK);
    assert_int_equal(clformer_vocab_build(text, CLFORMER_SIDE_TARGET, 1, 0, &tv), CLFORMER_OK);
    assert_int_equal(clformer_vocab_size(sv), 4 + 3);
    assert_string_equal(clformer_vocab_token(sv, CLFORMER_EOS), "<eos>");
    assert_int_equal(clformer_vocab_id(sv, "nosuch"), CLFORMER_UNK);
    int32_t ids[8];
    size_t unk = 0;
    assert_int_equal(clformer_vocab_encode(sv, "a d b", true, ids, 8, &unk), 5);
    assert_int_equal(unk, 1);
    assert_int_equal(ids[0], CLFORMER_SOS);
    assert_int_equal(ids[4], CLFORMER_EOS);
    char *back;
    assert_int_equal(clformer_vocab_decode(sv, ids, 5, &back), CLFORMER_OK);
    assert_string_equal(back, "a <unk> b");
    free(back);

    clformer_corpus *corpus;
    /* max_len 5 (<sos>, 3 words, <eos>): "c a b a" and "b b c c a" do not fit */
    assert_int_equal(clformer_corpus_encode(text, sv, tv, 5, &corpus), CLFORMER_OK);
    assert_int_equal(clformer_corpus_size(corpus), N - 3);
    char line[256];
    clformer_corpus_summary(corpus, line, sizeof line);
    assert_non_null(strstr(line, "skipped"));
    clformer_corpus_free(corpus);
    clformer_vocab_free(sv);
    clformer_vocab_free(tv);
    clformer_parallel_text_free(text);
}

static void batcher_position_round_trips(void **state)
{
    (void)state;
    clformer_parallel_text *train, *test;
    assert_int_equal(clformer_demo_task(3, 200, 5, &train, &test), CLFORMER_OK);
    clformer_vocab *sv, *tv;
    assert_int_equal(clformer_vocab_build(train, CLFORMER_SIDE_SOURCE, 1, 0, &sv), CLFORMER_OK);
    assert_int_equal(clformer_vocab_build(train, CLFORMER_SIDE_TARGET, 1, 0, &tv), CLFORMER_OK);
    clformer_corpus *corpus;
    assert_int_equal(clformer_corpus_encode(train, sv, tv, 0, &corpus), CLFORMER_OK);
    const clformer_batcher_options o = {0, 64, true, 7, 0};
    clformer_batcher *a, *b;
    assert_int_equal(clformer_batcher_create(corpus, &o, &a), CLFORMER_OK);
    assert_int_equal(clformer_batcher_create(corpus, &o, &b), CLFORMER_OK);
    clformer_batch x, y;
    const size_t per_epoch = clformer_batcher_batches_per_epoch(a);
    for (size_t i = 0; i < per_epoch + 2; i++) assert_int_equal(clformer_batcher_next(a, &x), CLFORMER_OK);
    assert_int_equal(clformer_batcher_epoch(a), 1);
    assert_int_equal(clformer_batcher_index(a), 2);
    char *json;
    assert_int_equal(clformer_batcher_save_position(a, &json), CLFORMER_OK);
    assert_int_equal(clformer_batcher_restore_position(b, json), CLFORMER_OK);
    free(json);
    for (int k = 0; k < 3; k++) {
        assert_int_equal(clformer_batcher_next(a, &x), CLFORMER_OK);
        assert_int_equal(clformer_batcher_next(b, &y), CLFORMER_OK);
        assert_int_equal(x.batch, y.batch);
        assert_int_equal(x.src_len, y.src_len);
        assert_int_equal(x.tgt_len, y.tgt_len);
        assert_memory_equal(x.src, y.src, x.batch * x.src_len * sizeof *x.src);
        assert_memory_equal(x.tgt, y.tgt, x.batch * x.tgt_len * sizeof *x.tgt);
    }
    /* another seed cannot continue this position */
    const clformer_batcher_options other = {0, 64, true, 8, 0};
    clformer_batcher *c;
    assert_int_equal(clformer_batcher_create(corpus, &other, &c), CLFORMER_OK);
    assert_int_equal(clformer_batcher_save_position(a, &json), CLFORMER_OK);
    assert_int_not_equal(clformer_batcher_restore_position(c, json), CLFORMER_OK);
    assert_non_null(strstr(clformer_last_error(), "seed"));
    free(json);
    clformer_batcher_free(a);
    clformer_batcher_free(b);
    clformer_batcher_free(c);
    clformer_corpus_free(corpus);
    clformer_vocab_free(sv);
    clformer_vocab_free(tv);
    clformer_parallel_text_free(train);
    clformer_parallel_text_free(test);
}

static void bleu_of_lists(void **state)
{
    (void)state;
    const char *hyp[] = {"the cat sat on the mat", "a dog runs"};
    const char *ref[] = {"the cat sat on the mat", "a dog runs"};
    clformer_bleu b;
    assert_int_equal(clformer_bleu_corpus(hyp, ref, 2, CLFORMER_BLEU_TOKENIZE_NONE, &b), CLFORMER_OK);
    assert_true(b.score > 100.0 - 1e-9 && b.score < 100.0 + 1e-9);
    assert_int_equal(b.hyp_len, 9);
    char line[256];
    clformer_bleu_format(&b, line, sizeof line);
    assert_non_null(strstr(line, "BLEU = 100.00"));
    const char *bad[] = {"\xff", "a"};
    assert_int_equal(clformer_bleu_corpus(bad, ref, 2, CLFORMER_BLEU_TOKENIZE_13A, &b), CLFORMER_ERR_INVALID_ARGUMENT);
    assert_int_equal(clformer_count_tokens("  a\tb \n"), 2);
}

/* clformer_bleu_options: 13a and case-sensitive by default (clformer_bleu_corpus's
 * score); `lowercase` is sacreBLEU's -lc; a struct not from _default is refused. */
static void bleu_options(void **state)
{
    (void)state;
    const char *hyp[] = {"the cat sat on the mat.", "a dog runs"};
    const char *ref[] = {"The Cat sat on the MAT.", "A dog runs"};
    clformer_bleu_options o;
    clformer_bleu_options_default(&o);
    assert_int_equal(o.size, sizeof o);
    assert_int_equal(o.tokenize, CLFORMER_BLEU_TOKENIZE_13A);
    assert_false(o.lowercase);
    clformer_bleu plain, with, lc;
    assert_int_equal(clformer_bleu_corpus(hyp, ref, 2, CLFORMER_BLEU_TOKENIZE_13A, &plain),
                     CLFORMER_OK);
    assert_int_equal(clformer_bleu_corpus_with(hyp, ref, 2, &o, &with), CLFORMER_OK);
    assert_true(with.score == plain.score && plain.score < 60.0);
    char sig[128];
    assert_int_equal(clformer_bleu_signature_with(&o, sig, sizeof sig), CLFORMER_OK);
    assert_string_equal(sig, "nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:2.6.0");

    o.lowercase = true;
    o.tokenize = CLFORMER_BLEU_TOKENIZE_NONE;
    assert_int_equal(clformer_bleu_corpus_with(hyp, ref, 2, &o, &lc), CLFORMER_OK);
    assert_true(lc.score > 100.0 - 1e-9 && lc.score < 100.0 + 1e-9);
    assert_int_equal(lc.hyp_len, 9); /* 'none': "mat." is one token */
    assert_int_equal(clformer_bleu_signature_with(&o, sig, sizeof sig), CLFORMER_OK);
    assert_string_equal(sig, "nrefs:1|case:lc|eff:no|tok:none|smooth:exp|version:2.6.0");

    o.size = 8;
    assert_int_equal(clformer_bleu_corpus_with(hyp, ref, 2, &o, &lc), CLFORMER_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(clformer_last_error(), "clformer_bleu_options_default"));
    assert_int_equal(clformer_bleu_signature_with(&o, sig, sizeof sig),
                     CLFORMER_ERR_INVALID_ARGUMENT);
    assert_string_equal(sig, "");
    assert_int_equal(clformer_bleu_corpus_with(hyp, ref, 2, NULL, &lc),
                     CLFORMER_ERR_INVALID_ARGUMENT);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(text_vocab_and_corpus),
        cmocka_unit_test(batcher_position_round_trips),
        cmocka_unit_test(bleu_of_lists),
        cmocka_unit_test(bleu_options),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
