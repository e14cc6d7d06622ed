/*
 * Recomputation (clformer_session_set_recompute): a session that keeps only
 * each layer's output and runs every layer's forward again in backward gives
 * the same bits as one that keeps everything (loss, every gradient, two
 * training steps and the weights they leave; and the logits of a forward
 * pass alone, which shares the scratch too), on both attention paths, pre-
 * and post-norm, encoder-decoder and decoder-only, with the arena in one
 * buffer or split over several; and its arena is smaller.
 */
#include "harness.h"
#include "session.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef enum { PRE_NORM, POST_NORM, DECODER_ONLY } variant;

static clformer_config config(variant v)
{
    clformer_config c = harness_small_config();
    /* two decoder layers even on the simulator: backward recomputes every
     * layer but the decoder's last, whose forward is still in the scratch */
    c.n_enc_layers = c.n_dec_layers = 2;
    c.dropout = 0.1f; /* the dropout masks must be redrawn alike */
    c.norm_first = v != POST_NORM;
    if (v == DECODER_ONLY) {
        c.n_enc_layers = 0;
        c.src_vocab = 0;
        c.positional = CLFORMER_POS_LEARNED;
    }
    return c;
}

typedef struct {
    clformer_model *model;
    clformer_session *session;
} run;

static run make_run(const clformer_config *c, bool recompute, size_t limit)
{
    run r;
    assert_ok(clformer_model_create(hctx(), c, 7, &r.model));
    assert_ok(clformer_session_create(r.model, &r.session));
    clformer_session_set_recompute(r.session, recompute);
    assert_true(clformer_session_recompute(r.session) == recompute);
    r.session->arena_limit = limit;
    return r;
}

static void free_run(run *r)
{
    clformer_session_free(r->session);
    clformer_model_free(r->model);
}

static float *gradients(run *r)
{
    cf_model *m = r->session->model;
    float *g = hmalloc(m->layout.total * sizeof *g);
    assert_ok(cf_download(hctx(), m->grads, 0, g, m->layout.total));
    return g;
}

/* Loss and gradients of one batch, then two training steps, bit for bit. */
static void same_bits(run *plain, run *re, const clformer_batch *batch)
{
    /* a forward pass alone shares the scratch too */
    const size_t n_logits = batch->batch * (batch->tgt_len - 1) * (size_t)config(PRE_NORM).tgt_vocab;
    float *l_plain = hmalloc(n_logits * sizeof *l_plain), *l_re = hmalloc(n_logits * sizeof *l_re);
    assert_ok(clformer_session_logits(plain->session, batch, l_plain));
    assert_ok(clformer_session_logits(re->session, batch, l_re));
    assert_true(re->session->acts.recompute && !plain->session->acts.recompute);
    assert_memory_equal(l_plain, l_re, n_logits * sizeof *l_plain);
    free(l_plain);
    free(l_re);

    double loss_plain, loss_re;
    assert_ok(clformer_session_gradients(plain->session, batch, &loss_plain));
    assert_ok(clformer_session_gradients(re->session, batch, &loss_re));
    assert_true(re->session->acts.recompute && !plain->session->acts.recompute);
    assert_memory_equal(&loss_plain, &loss_re, sizeof loss_plain);
    float *g_plain = gradients(plain), *g_re = gradients(re);
    const size_t n = plain->model->layout.total;
    for (size_t i = 0; i < n; i++)
        if (memcmp(&g_plain[i], &g_re[i], sizeof *g_plain) != 0)
            fail_msg("gradient %zu of %zu: %.9g kept, %.9g recomputed", i, n, (double)g_plain[i],
                     (double)g_re[i]);
    free(g_plain);
    free(g_re);
    /* the simulator checks the buffers' bounds in the passes above; the
     * steps would take it many minutes more */
    if (harness_is_slow()) return;

    for (int step = 0; step < 2; step++) {
        clformer_step_stats a, b;
        assert_ok(clformer_session_train_step(plain->session, batch, 1e-2f, &a));
        assert_ok(clformer_session_train_step(re->session, batch, 1e-2f, &b));
        assert_memory_equal(&a.loss, &b.loss, sizeof a.loss);
        assert_memory_equal(&a.grad_norm, &b.grad_norm, sizeof a.grad_norm);
    }
    uint64_t sum_plain, sum_re;
    assert_ok(clformer_model_parameter_checksum(plain->model, &sum_plain));
    assert_ok(clformer_model_parameter_checksum(re->model, &sum_re));
    assert_true(sum_plain == sum_re);
}

static void same_bits_on(clformer_attention_path path, variant v)
{
    cf_ctx *ctx = hctx();
    const clformer_attention_path saved = ctx->attention_path;
    ctx->attention_path = path;
    const clformer_config c = config(v);
    const bool slow = harness_is_slow();
    const size_t B = slow ? 2 : 5, S = v == DECODER_ONLY ? 0 : slow ? 4 : 9, L = slow ? 5 : 11;
    int32_t *src = S ? harness_random_sentences(B, S, c.src_vocab, 11) : NULL;
    int32_t *tgt = harness_random_sentences(B, L, c.tgt_vocab, 12);
    if (v == DECODER_ONLY) /* windows of text: no <pad> among the labels */
        for (size_t i = 0; i < B * L; i++) tgt[i] = 4 + (int32_t)(i * 7 % (size_t)(c.tgt_vocab - 4));
    const clformer_batch batch = {B, S, L, src, tgt};

    run plain = make_run(&c, false, 0), re = make_run(&c, true, 0);
    same_bits(&plain, &re, &batch);
    /* the layers' tensors share one scratch: a smaller arena */
    assert_true(re.session->acts.total < plain.session->acts.total);
    assert_true(clformer_session_memory(re.session).activations <
                clformer_session_memory(plain.session).activations);

    /* the shared scratch laid out over several buffers (an eighth of the
     * plain arena each): the same bits again */
    if (!slow) {
        const size_t limit = plain.session->acts.total / 8;
        free_run(&plain);
        free_run(&re);
        plain = make_run(&c, false, limit);
        re = make_run(&c, true, limit);
        same_bits(&plain, &re, &batch);
        assert_true(re.session->acts.buffers >= 3);
    }
    free_run(&plain);
    free_run(&re);
    free(src);
    free(tgt);
    ctx->attention_path = saved;
}

static void unfused_pre_norm(void **state)
{
    (void)state;
    same_bits_on(CLFORMER_ATTENTION_UNFUSED, PRE_NORM);
}

static void fused_pre_norm(void **state)
{
    (void)state;
    same_bits_on(CLFORMER_ATTENTION_FUSED, PRE_NORM);
}

static void unfused_post_norm(void **state)
{
    (void)state;
    same_bits_on(CLFORMER_ATTENTION_UNFUSED, POST_NORM);
}

static void fused_decoder_only(void **state)
{
    (void)state;
    same_bits_on(CLFORMER_ATTENTION_FUSED, DECODER_ONLY);
}

/* Turning it on releases the arena laid out without it; the next batch lays
 * out the smaller one, and evaluation (no backward) shares the scratch too. */
static void switching_releases_the_arena(void **state)
{
    (void)state;
    const clformer_config c = config(PRE_NORM);
    const size_t B = 2, S = 4, L = 5;
    int32_t *src = harness_random_sentences(B, S, c.src_vocab, 31);
    int32_t *tgt = harness_random_sentences(B, L, c.tgt_vocab, 32);
    const clformer_batch batch = {B, S, L, src, tgt};
    run r = make_run(&c, false, 0);
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
    free_run(&r);
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
        cmocka_unit_test(switching_releases_the_arena),
    };
    return harness_run_device_suite("recompute", tests, sizeof tests / sizeof *tests);
}
