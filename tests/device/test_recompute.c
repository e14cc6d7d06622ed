/*
 * Recomputation (clformer_session_set_recompute): a session that keeps only
 * each layer's output and runs every layer's forward again in backward gives
 * the same bits as one that keeps everything (loss, every gradient, two
 * training steps and the weights they leave; and the logits of a forward
 * pass alone, which shares the scratch too), on both attention paths, pre-
 * and post-norm, encoder-decoder and decoder-only, with the arena in one
 * buffer or split over several; and its arena is smaller.
 */
#include "session_bits.h"

#include <stdlib.h>

static bits_run make_run(const clformer_config *c, bool recompute, size_t limit)
{
    bits_run r = bits_run_make(c, limit);
    clformer_session_set_recompute(r.session, recompute);
    assert_true(clformer_session_recompute(r.session) == recompute);
    return r;
}

/* Logits of a forward pass alone (which shares the scratch too), loss and
 * gradients of one batch, then two training steps, bit for bit. */
static void same_bits(bits_run *plain, bits_run *re, const clformer_batch *batch)
{
    assert_same_logits(plain, re, batch, bits_variant_config(BITS_PRE_NORM).tgt_vocab);
    assert_same_gradients(plain, re, batch);
    assert_true(re->session->acts.recompute && !plain->session->acts.recompute);
    /* the simulator checks the buffers' bounds in the passes above; the
     * steps would take it many minutes more */
    if (!harness_is_slow()) assert_same_steps(plain, re, batch);
}

static void same_bits_on(clformer_attention_path path, bits_variant v)
{
    bits_case k = bits_case_begin(path, v, 11);
    const clformer_config c = k.config;
    const clformer_batch batch = k.batch;

    bits_run plain = make_run(&c, false, 0), re = make_run(&c, true, 0);
    same_bits(&plain, &re, &batch);
    /* the layers' tensors share one scratch: a smaller arena */
    assert_true(re.session->acts.total < plain.session->acts.total);
    assert_true(clformer_session_memory(re.session).activations <
                clformer_session_memory(plain.session).activations);

    /* the shared scratch laid out over several buffers (an eighth of the
     * plain arena each): the same bits again */
    if (!harness_is_slow()) {
        const size_t limit = plain.session->acts.total / 8;
        bits_run_free(&plain);
        bits_run_free(&re);
        plain = make_run(&c, false, limit);
        re = make_run(&c, true, limit);
        same_bits(&plain, &re, &batch);
        assert_true(re.session->acts.buffers >= 3);
    }
    bits_run_free(&plain);
    bits_run_free(&re);
    bits_case_end(&k);
}

static void unfused_pre_norm(void **state)
{
    (void)state;
    same_bits_on(CLFORMER_ATTENTION_UNFUSED, BITS_PRE_NORM);
}

static void fused_pre_norm(void **state)
{
    (void)state;
    same_bits_on(CLFORMER_ATTENTION_FUSED, BITS_PRE_NORM);
}

static void unfused_post_norm(void **state)
{
    (void)state;
    same_bits_on(CLFORMER_ATTENTION_UNFUSED, BITS_POST_NORM);
}

static void fused_decoder_only(void **state)
{
    (void)state;
    same_bits_on(CLFORMER_ATTENTION_FUSED, BITS_DECODER_ONLY);
}

static void unfused_llama(void **state)
{
    (void)state;
    same_bits_on(CLFORMER_ATTENTION_UNFUSED, BITS_LLAMA);
}

static void fused_llama(void **state)
{
    (void)state;
    same_bits_on(CLFORMER_ATTENTION_FUSED, BITS_LLAMA);
}

/* Turning it on releases the arena laid out without it; the next batch lays
 * out the smaller one, and evaluation (no backward) shares the scratch too. */
static void switching_releases_the_arena(void **state)
{
    (void)state;
    const clformer_config c = bits_variant_config(BITS_PRE_NORM);
    const size_t B = 2, S = 4, L = 5;
    int32_t *src = harness_random_sentences(B, S, c.src_vocab, 31);
    int32_t *tgt = harness_random_sentences(B, L, c.tgt_vocab, 32);
    const clformer_batch batch = {B, S, L, src, tgt};
    bits_run r = make_run(&c, false, 0);
    double loss;
    assert_ok(clformer_session_gradients(r.session, &batch, &loss));
    const size_t plain = clformer_session_memory(r.session).activations;
    clformer_session_set_recompute(r.session, true);
    assert_int_equal(clformer_session_memory(r.session).activations, 0);
    assert_ok(clformer_session_gradients(r.session, &batch, &loss));
    assert_true(clformer_session_memory(r.session).activations < plain);
    double sum;
    size_t tokens;
    assert_ok(clformer_session_eval_loss(r.session, &batch, &sum, &tokens));
    assert_true(r.session->acts.recompute);
    bits_run_free(&r);
    free(src);
    free(tgt);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(unfused_pre_norm),
        cmocka_unit_test(fused_pre_norm),
        cmocka_unit_test(unfused_post_norm),
        cmocka_unit_test(fused_decoder_only),
        cmocka_unit_test(unfused_llama),
        cmocka_unit_test(fused_llama),
        cmocka_unit_test(switching_releases_the_arena),
    };
    return harness_run_device_suite("recompute", tests, sizeof tests / sizeof *tests);
}
