/*
 * The activation arena across several buffers (arena.h): a session whose
 * buffers may hold only an eighth of its arena gives the same bits as one
 * with a single buffer (logits, loss, every gradient, and training steps),
 * on both attention paths; a batch that does not fit in the device's
 * memory is refused with the largest batch of its lengths that does; and
 * where auto's unfused path would not fit, it takes the fused one.
 */
#include "session_bits.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static clformer_config config(void)
{
    clformer_config c = harness_small_config();
    c.dropout = 0.1f; /* the dropout sites' saved tensors take part too */
    return c;
}

static bits_run make_run(size_t limit)
{
    const clformer_config c = config();
    return bits_run_make(&c, limit);
}

static void same_bits_on(clformer_attention_path path)
{
    cf_ctx *ctx = hctx();
    const clformer_attention_path saved = ctx->attention_path;
    ctx->attention_path = path;
    const clformer_config c = config();
    const size_t B = 5, S = harness_is_slow() ? 5 : 9, L = harness_is_slow() ? 6 : 11;
    int32_t *src = harness_random_sentences(B, S, c.src_vocab, 11), *tgt = harness_random_sentences(B, L, c.tgt_vocab, 12);
    const clformer_batch batch = {B, S, L, src, tgt};

    bits_run one = make_run(0);
    double loss; /* lays out one's arena, whose size sets the split's limit */
    assert_ok(clformer_session_gradients(one.session, &batch, &loss));
    /* an eighth of the arena per buffer: several buffers, and tensors larger
     * than that limit alone in theirs */
    bits_run split = make_run(one.session->acts.total / 8);
    assert_same_gradients(&one, &split, &batch);
    assert_int_equal(one.session->acts.buffers, 1);
    assert_true(split.session->acts.buffers >= 3);
    /* the simulator checks the buffers' bounds in the passes above; the rest
     * would take it minutes */
    if (!harness_is_slow()) {
        assert_same_logits(&one, &split, &batch, c.tgt_vocab);
        assert_same_steps(&one, &split, &batch);
    }

    bits_run_free(&one);
    bits_run_free(&split);
    free(src);
    free(tgt);
    ctx->attention_path = saved;
}

static void split_unfused_same_bits(void **state)
{
    (void)state;
    same_bits_on(CLFORMER_ATTENTION_UNFUSED);
}

static void split_fused_same_bits(void **state)
{
    (void)state;
    same_bits_on(CLFORMER_ATTENTION_FUSED);
}

/* With the device's memory pretended to hold only the arena of 3 sentences,
 * a batch of 6 is refused naming 3, and a batch of 3 then runs. */
static void too_large_names_the_batch_that_fits(void **state)
{
    (void)state;
    cf_ctx *ctx = hctx();
    const clformer_config c = config();
    const size_t S = harness_is_slow() ? 5 : 9, L = harness_is_slow() ? 6 : 11;
    int32_t *src = harness_random_sentences(6, S, c.src_vocab, 21), *tgt = harness_random_sentences(6, L, c.tgt_vocab, 22);
    const clformer_batch six = {6, S, L, src, tgt}, three = {3, S, L, src, tgt};

    bits_run r = make_run(0);
    double loss;
    assert_ok(clformer_session_gradients(r.session, &three, &loss));
    const uint64_t arena3 = clformer_session_memory(r.session).activations;
    clformer_session_free(r.session);
    assert_ok(clformer_session_create(r.model, &r.session));

    const uint64_t saved = ctx->info.global_mem_bytes;
    ctx->info.global_mem_bytes = ctx->bytes_allocated + arena3;
    clformer_status st = clformer_session_gradients(r.session, &six, &loss);
    char msg[1024];
    snprintf(msg, sizeof msg, "%s", clformer_last_error());
    clformer_status st3 = clformer_session_gradients(r.session, &three, &loss);
    ctx->info.global_mem_bytes = saved;
    assert_int_equal(st, CLFORMER_ERR_OUT_OF_MEMORY);
    if (!strstr(msg, "a batch of 6 sentences") || !strstr(msg, "a batch of 3 such sentences"))
        fail_msg("unexpected message: %s", msg);
    assert_ok(st3);

    bits_run_free(&r);
    free(src);
    free(tgt);
}

/* The activations a fresh session of r's model lays out for `batch` on
 * `path` (the session is made again after). */
static uint64_t activations_on(bits_run *r, clformer_attention_path path,
                               const clformer_batch *batch)
{
    hctx()->attention_path = path;
    double loss;
    assert_ok(clformer_session_gradients(r->session, batch, &loss));
    const uint64_t bytes = clformer_session_memory(r->session).activations;
    clformer_session_free(r->session);
    assert_ok(clformer_session_create(r->model, &r->session));
    return bytes;
}

/* auto keeps the unfused path (faster on CPU devices) while it fits in the
 * device's memory, and takes the fused one, which saves no probabilities,
 * where only that fits: with the memory pretended to hold the fused arena
 * alone, auto runs fused where unfused is refused. */
static void auto_takes_fused_where_unfused_does_not_fit(void **state)
{
    (void)state;
    cf_ctx *ctx = hctx();
    const clformer_attention_path path = ctx->attention_path;
    /* long enough that the (T x T) probabilities outweigh the fused path's own tensors */
    clformer_config c = config();
    c.max_len = 48;
    const size_t B = 2, S = harness_is_slow() ? 24 : 40, L = S + 1;
    int32_t *src = harness_random_sentences(B, S, c.src_vocab, 31),
            *tgt = harness_random_sentences(B, L, c.tgt_vocab, 32);
    const clformer_batch batch = {B, S, L, src, tgt};
    bits_run r = bits_run_make(&c, 0);
    const uint64_t fused = activations_on(&r, CLFORMER_ATTENTION_FUSED, &batch),
                   unfused = activations_on(&r, CLFORMER_ATTENTION_UNFUSED, &batch);
    if (!(unfused > fused))
        fail_msg("activations: unfused %llu bytes, fused %llu", (unsigned long long)unfused,
                 (unsigned long long)fused);
    double loss;
    ctx->attention_path = CLFORMER_ATTENTION_AUTO;
    if (!ctx->device_profile.tiled_attention) { /* GPU layouts: fused at every size */
        assert_ok(clformer_session_gradients(r.session, &batch, &loss));
        assert_false(r.session->acts.fused_attention);
        assert_int_equal(clformer_session_training_attention(r.session),
                         CLFORMER_ATTENTION_UNFUSED);
        clformer_session_free(r.session);
        assert_ok(clformer_session_create(r.model, &r.session));
        assert_int_equal(clformer_session_training_attention(r.session),
                         CLFORMER_ATTENTION_AUTO); /* before any batch */
    }
    const uint64_t saved = ctx->info.global_mem_bytes;
    ctx->info.global_mem_bytes = ctx->bytes_allocated + fused;
    const clformer_status st_auto = clformer_session_gradients(r.session, &batch, &loss);
    const bool took_fused = r.session->acts.fused_attention &&
                            clformer_session_training_attention(r.session) ==
                                CLFORMER_ATTENTION_FUSED;
    clformer_session_free(r.session);
    assert_ok(clformer_session_create(r.model, &r.session));
    ctx->attention_path = CLFORMER_ATTENTION_UNFUSED;
    const clformer_status st_unfused = clformer_session_gradients(r.session, &batch, &loss);
    ctx->info.global_mem_bytes = saved;
    ctx->attention_path = path;
    assert_ok(st_auto);
    assert_true(took_fused);
    assert_int_equal(st_unfused, CLFORMER_ERR_OUT_OF_MEMORY);
    bits_run_free(&r);
    free(src);
    free(tgt);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(split_unfused_same_bits),
        cmocka_unit_test(split_fused_same_bits),
        cmocka_unit_test(too_large_names_the_batch_that_fits),
        cmocka_unit_test(auto_takes_fused_where_unfused_does_not_fit),
    };
    return harness_run_device_suite("arena_split", tests, sizeof tests / sizeof *tests);
}
