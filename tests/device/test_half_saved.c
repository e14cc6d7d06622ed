/*
 * 16-bit saved activations (graph.h half_saved): a bf16 or fp16 training
 * session that keeps what backward reads in 16 bits gives the same bits as
 * one that keeps it in fp32 (loss, every gradient, two training steps and
 * the weights they leave), on both attention paths, pre- and post-norm,
 * encoder-decoder and decoder-only, with the arena in one buffer or split
 * over several; its stores take half the bytes of what they hold, and its
 * arena is smaller. fp32 sessions and --recompute do not use it; an fp32
 * batch too large for the device names --precision bf16 when that fits.
 */
#include "session_bits.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bits_run make_run(const clformer_config *c, clformer_precision p, bool fp32_saved,
                         size_t limit)
{
    bits_run r = bits_run_make(c, limit);
    assert_ok(clformer_session_set_precision(r.session, p));
    r.session->saved_in_fp32 = fp32_saved;
    return r;
}

/* Elements the stores of a laid-out batch must take: half of each 16-bit
 * run, all of each run of statistics (each rounded up as the arena aligns);
 * and the runs' count. */
static size_t store_elements(cf_session *s, size_t *runs)
{
    cf_acts *a = &s->acts;
    const clformer_config *cfg = &s->model->cfg;
    size_t n = 0;
    *runs = 0;
    cf_saved_run r[CF_LAYER_SAVED_MAX];
    for (int dec = 0; dec < 2; dec++) {
        const int layers = dec ? cfg->n_dec_layers - 1 : cfg->n_enc_layers;
        for (int l = 0; l < layers; l++) {
            const size_t count = cf_layer_saved_runs(a, cfg, dec, l, r);
            for (size_t i = 0; i < count; i++)
                n += cf_arena_round(r[i].stat ? r[i].n : (r[i].n + 1) / 2);
            *runs += count;
        }
    }
    return n;
}

static void same_bits_on(clformer_attention_path path, bits_variant v, clformer_precision p)
{
    bits_case k = bits_case_begin(path, v, 21);
    const clformer_config c = k.config;
    const clformer_batch batch = k.batch;

    bits_run wide = make_run(&c, p, true, 0), half = make_run(&c, p, false, 0);
    assert_same_gradients(&wide, &half, &batch);
    assert_true(half.session->acts.half_saved && !wide.session->acts.half_saved);
    /* the stores hold 16 bits a value: the arena of recomputation (the same
     * scratch) plus exactly their elements, and less than fp32 saving takes */
    bits_run lean = make_run(&c, p, true, 0);
    clformer_session_set_recompute(lean.session, true);
    double loss;
    assert_ok(clformer_session_gradients(lean.session, &batch, &loss));
    size_t runs;
    assert_int_equal(half.session->acts.total,
                     lean.session->acts.total + store_elements(half.session, &runs));
    /* the tensors lie in few runs: at most 5 an encoder layer, 9 a decoder
     * layer (statistics, tensors, fused statistics, per sublayer) */
    const size_t layers = (size_t)(c.n_enc_layers + c.n_dec_layers - 1);
    assert_true(runs > 0 && runs <= 9 * layers);
    assert_true(clformer_session_memory(half.session).activations <
                clformer_session_memory(wide.session).activations);
    bits_run_free(&lean);
    /* the simulator checks the buffers' bounds in the passes above; the
     * steps would take it many minutes more */
    if (!harness_is_slow()) {
        assert_same_steps(&wide, &half, &batch);
        /* split over several buffers (an eighth of the fp32 arena each) */
        const size_t limit = wide.session->acts.total / 8;
        bits_run_free(&wide);
        bits_run_free(&half);
        wide = make_run(&c, p, true, limit);
        half = make_run(&c, p, false, limit);
        assert_same_gradients(&wide, &half, &batch);
        assert_same_steps(&wide, &half, &batch);
        assert_true(half.session->acts.buffers >= 3);
    }
    bits_run_free(&wide);
    bits_run_free(&half);
    bits_case_end(&k);
}

static void bf16_unfused_pre_norm(void **state)
{
    (void)state;
    same_bits_on(CLFORMER_ATTENTION_UNFUSED, BITS_PRE_NORM, CLFORMER_BF16);
}

static void fp16_unfused_pre_norm(void **state)
{
    (void)state;
    if (harness_is_slow()) skip(); /* the simulator runs one case a path and a norm */
    same_bits_on(CLFORMER_ATTENTION_UNFUSED, BITS_PRE_NORM, CLFORMER_FP16);
}

static void bf16_fused_pre_norm(void **state)
{
    (void)state;
    if (harness_is_slow()) skip(); /* the simulator runs one case a path and a norm */
    same_bits_on(CLFORMER_ATTENTION_FUSED, BITS_PRE_NORM, CLFORMER_BF16);
}

static void fp16_fused_post_norm(void **state)
{
    (void)state;
    same_bits_on(CLFORMER_ATTENTION_FUSED, BITS_POST_NORM, CLFORMER_FP16);
}

static void bf16_unfused_post_norm(void **state)
{
    (void)state;
    if (harness_is_slow()) skip(); /* the simulator runs one case a path and a norm */
    same_bits_on(CLFORMER_ATTENTION_UNFUSED, BITS_POST_NORM, CLFORMER_BF16);
}

static void fp16_fused_decoder_only(void **state)
{
    (void)state;
    same_bits_on(CLFORMER_ATTENTION_FUSED, BITS_DECODER_ONLY, CLFORMER_FP16);
}

static void bf16_unfused_llama(void **state)
{
    (void)state;
    same_bits_on(CLFORMER_ATTENTION_UNFUSED, BITS_LLAMA, CLFORMER_BF16);
}

static void fp16_fused_llama(void **state)
{
    (void)state;
    if (harness_is_slow()) skip(); /* the simulator runs one case a path */
    same_bits_on(CLFORMER_ATTENTION_FUSED, BITS_LLAMA, CLFORMER_FP16);
}

/* fp32 training, recomputation and evaluation keep nothing in 16 bits. */
static void only_16bit_training(void **state)
{
    (void)state;
    const clformer_config c = bits_variant_config(BITS_PRE_NORM);
    const size_t B = 2, S = 4, L = 5;
    int32_t *src = harness_random_sentences(B, S, c.src_vocab, 31);
    int32_t *tgt = harness_random_sentences(B, L, c.tgt_vocab, 32);
    const clformer_batch batch = {B, S, L, src, tgt};
    bits_run r = make_run(&c, CLFORMER_FP32, false, 0);
    double loss, sum;
    size_t tokens;
    assert_ok(clformer_session_gradients(r.session, &batch, &loss));
    assert_false(r.session->acts.half_saved);
    assert_ok(clformer_session_set_precision(r.session, CLFORMER_BF16));
    assert_ok(clformer_session_gradients(r.session, &batch, &loss));
    assert_true(r.session->acts.half_saved);
    assert_ok(clformer_session_eval_loss(r.session, &batch, &sum, &tokens));
    assert_false(r.session->acts.half_saved);
    clformer_session_set_recompute(r.session, true);
    assert_ok(clformer_session_gradients(r.session, &batch, &loss));
    assert_false(r.session->acts.half_saved);
    bits_run_free(&r);
    free(src);
    free(tgt);
}

/* An fp32 batch refused for memory names --precision bf16 when its arena
 * would fit (with the device's memory pretended to hold only that much). */
static void too_large_names_bf16(void **state)
{
    (void)state;
    cf_ctx *ctx = hctx();
    const clformer_config c = bits_variant_config(BITS_PRE_NORM);
    const size_t B = 4, S = 9, L = 11;
    int32_t *src = harness_random_sentences(B, S, c.src_vocab, 41);
    int32_t *tgt = harness_random_sentences(B, L, c.tgt_vocab, 42);
    const clformer_batch batch = {B, S, L, src, tgt};
    double loss;
    bits_run half = make_run(&c, CLFORMER_BF16, false, 0);
    assert_ok(clformer_session_gradients(half.session, &batch, &loss));
    const uint64_t half_bytes = clformer_session_memory(half.session).activations;
    bits_run_free(&half);
    bits_run wide = make_run(&c, CLFORMER_FP32, false, 0);
    assert_ok(clformer_session_gradients(wide.session, &batch, &loss));
    const uint64_t wide_bytes = clformer_session_memory(wide.session).activations;
    assert_true(half_bytes < wide_bytes);
    clformer_session_free(wide.session);
    assert_ok(clformer_session_create(wide.model, &wide.session));

    const uint64_t saved = ctx->info.global_mem_bytes;
    ctx->info.global_mem_bytes = ctx->bytes_allocated + (half_bytes + wide_bytes) / 2;
    const clformer_status st = clformer_session_gradients(wide.session, &batch, &loss);
    char msg[1024];
    snprintf(msg, sizeof msg, "%s", clformer_last_error());
    ctx->info.global_mem_bytes = saved;
    assert_int_equal(st, CLFORMER_ERR_OUT_OF_MEMORY);
    if (!strstr(msg, "or keep activations in 16 bits (--precision bf16), which needs"))
        fail_msg("unexpected message: %s", msg);
    bits_run_free(&wide);
    free(src);
    free(tgt);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(bf16_unfused_pre_norm),
        cmocka_unit_test(fp16_unfused_pre_norm),
        cmocka_unit_test(bf16_fused_pre_norm),
        cmocka_unit_test(fp16_fused_post_norm),
        cmocka_unit_test(bf16_unfused_post_norm),
        cmocka_unit_test(fp16_fused_decoder_only),
        cmocka_unit_test(bf16_unfused_llama),
        cmocka_unit_test(fp16_fused_llama),
        cmocka_unit_test(only_16bit_training),
        cmocka_unit_test(too_large_names_bf16),
    };
    return harness_run_device_suite("half_saved", tests, sizeof tests / sizeof *tests);
}
