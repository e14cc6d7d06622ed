/*
 * Generation from a decoder-only model beyond one prompt: the prompt's
 * one-pass prefill agrees with feeding it token by token (prefill_check.h,
 * with either attention path),
 * and a batch of prompts of different lengths, several samples each, makes
 * row for row the tokens each prompt makes alone, greedy and sampled. An
 * untrained model of small shapes (smaller still on a simulator: max_len 8,
 * fewer steps and modes), so that it runs there too: GPT-2's blocks, and a
 * llama (rotary positions, each row turned by its own position; one
 * key/value head).
 */
#include "harness.h"
#include "prefill_check.h"

#include <string.h>

static clformer_config small_config(void)
{
    clformer_config c;
    clformer_config_default(&c);
    c.d_model = 16;
    c.n_heads = 2;
    c.d_ff = 32;
    c.n_enc_layers = 0;
    c.n_dec_layers = harness_is_slow() ? 1 : 2;
    c.src_vocab = 0;
    c.tgt_vocab = 13;
    c.max_len = harness_is_slow() ? 8 : 16;
    c.activation = CLFORMER_ACT_GELU_TANH;
    c.positional = CLFORMER_POS_LEARNED;
    c.share_tgt_embed = true;
    c.scale_embed = false;
    c.generator_bias = false;
    return c;
}

static clformer_config llama_config(void)
{
    clformer_config c = small_config();
    c.family = CLFORMER_FAMILY_LLAMA;
    c.n_kv_heads = 1;
    c.activation = CLFORMER_ACT_SILU;
    c.positional = CLFORMER_POS_ROPE;
    c.share_tgt_embed = false;
    return c;
}

/* Stops every row after `left` tokens, counting them. */
static bool stop_after(size_t row, int32_t token, void *user)
{
    (void)row, (void)token;
    size_t *left = user;
    return --*left > 0;
}

/* A batch of prompts of different lengths (one longer than max_len, one
 * repeated), two samples each, for more tokens than max_len (each row's
 * window restarts at its own step): every row equals its prompt generated
 * alone (sample 0 also through clformer_session_generate), greedy and
 * sampled; the two samples of a prompt differ when sampled. A simulator
 * runs the modes from `slow_first_mode` on (each takes it about a minute). */
static void batch_equals_one_by_one_of(clformer_config c, int slow_first_mode)
{
    clformer_model *m;
    assert_ok(clformer_model_create(hctx(), &c, 5, &m));
    clformer_session *s;
    assert_ok(clformer_session_create(m, &s));
    const bool slow = harness_is_slow(); /* the simulator: max_len 8, fewer steps */
    /* both attention paths: long prompts take the fused one on CPUs */
    const clformer_attention_path saved = hctx()->attention_path;
    const int32_t six[6] = {4, 5, 6, 7, 8, 9};
    hctx()->attention_path = CLFORMER_ATTENTION_UNFUSED;
    prefill_check(s, six, 6, 1e-5, "lm, unfused attention");
    hctx()->attention_path = CLFORMER_ATTENTION_FUSED;
    prefill_check(s, six, 6, 1e-5, "lm, fused attention");
    hctx()->attention_path = saved;
    enum { P = 5, S = 2, R = P * S, LONG = 18 };
    const int32_t p0[3] = {4, 5, 6}, p1[1] = {7}, p2[7] = {8, 9, 10, 11, 12, 4, 5};
    int32_t p4[LONG];
    for (int i = 0; i < LONG; i++) p4[i] = 4 + (i * 5) % 9;
    /* the first past max_len; the simulator runs the first three */
    const int32_t *prompts[P] = {p4, p1, p2, p0, p0};
    const size_t lengths[P] = {slow ? 10 : LONG, 1, 7, 3, 3}, used = slow ? 3 : P;
    const int N = slow ? 10 : 26; /* past max_len: windows restart */
    int32_t *batch = hmalloc(R * (size_t)N * sizeof *batch);
    int32_t *alone = hmalloc(S * (size_t)N * sizeof *alone);
    size_t counts[R], alone_counts[S], count;
    for (int mode = slow ? slow_first_mode : 0; mode < (slow ? 2 : 3); mode++) {
        clformer_sample_options o;
        clformer_sample_options_default(&o);
        o.max_tokens = N;
        o.seed = 7 + (uint64_t)mode;
        if (mode == 0) o.temperature = 0.0f;
        if (mode == 2) o.top_k = 6, o.top_p = 0.9f, o.temperature = 1.5f;
        assert_ok(clformer_session_generate_batch(s, prompts, lengths, used, S, &o, NULL, NULL,
                                                  batch, counts));
        for (size_t r = 0; r < used * S; r++) assert_int_equal(counts[r], N);
        for (int p = 0; p < (int)used; p++) {
            assert_ok(clformer_session_generate_batch(s, &prompts[p], &lengths[p], 1, S, &o,
                                                      NULL, NULL, alone, alone_counts));
            if (memcmp(alone, batch + p * S * N, S * (size_t)N * sizeof *alone))
                fail_msg("mode %d: prompt %d's rows in the batch differ from the prompt alone",
                         mode, p);
            if (!slow || p == 0) {
                assert_ok(clformer_session_generate(s, prompts[p], lengths[p], &o, NULL, NULL,
                                                    alone, &count));
                assert_int_equal(count, N);
                if (memcmp(alone, batch + p * S * N, (size_t)N * sizeof *alone))
                    fail_msg("mode %d: prompt %d's first sample differs from generate alone", mode,
                             p);
            }
            if (mode > 0 && !memcmp(batch + p * S * N, batch + (p * S + 1) * N,
                                    (size_t)N * sizeof *batch))
                fail_msg("mode %d: prompt %d's two samples are the same text", mode, p);
        }
    }
    /* a callback that stops: every row ends after the same token */
    clformer_sample_options o;
    clformer_sample_options_default(&o);
    o.max_tokens = N;
    size_t left = R + 3;
    assert_ok(clformer_session_generate_batch(s, prompts, lengths, P, S, &o, stop_after, &left,
                                              batch, counts));
    for (int r = 0; r < R; r++) assert_int_equal(counts[r], r < 3 ? 2 : 1);
    /* an empty prompt among others, and no rows, are refused */
    const size_t bad[P] = {LONG, 0, 7, 3, 3};
    assert_int_equal(clformer_session_generate_batch(s, prompts, bad, P, S, &o, NULL, NULL, batch,
                                                     counts),
                     CLFORMER_ERR_INVALID_ARGUMENT);
    assert_int_equal(clformer_session_generate_batch(s, prompts, lengths, P, 0, &o, NULL, NULL,
                                                     batch, counts),
                     CLFORMER_ERR_INVALID_ARGUMENT);
    free(batch), free(alone);
    clformer_session_free(s);
    clformer_model_free(m);
}

static void batch_equals_one_by_one(void **state)
{
    (void)state;
    batch_equals_one_by_one_of(small_config(), 0);
}

static void llama_batch_equals_one_by_one(void **state)
{
    (void)state;
    /* greedy and sampled pick tokens the same way for either family: the
     * simulator runs the llama's sampled mode only */
    batch_equals_one_by_one_of(llama_config(), 1);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(batch_equals_one_by_one),
    cmocka_unit_test(llama_batch_equals_one_by_one),
};
HARNESS_DEVICE_MAIN("lm_generate", tests)
