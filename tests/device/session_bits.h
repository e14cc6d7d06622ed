/*
 * Two sessions that must compute the same bits, compared step by step
 * (test_arena_split: one buffer against several; test_recompute: tensors
 * kept against recomputed; test_half_saved: fp32 against 16-bit saving;
 * test_precision makes its runs with bits_run_make).
 * Header-only, and inline, so that a test may use some of it.
 */
#ifndef CLFORMER_TEST_SESSION_BITS_H
#define CLFORMER_TEST_SESSION_BITS_H

#include "harness.h"
#include "session.h"

#include <stdlib.h>
#include <string.h>

typedef struct {
    clformer_model *model;
    clformer_session *session;
} bits_run;

/* A model of config c with seed 7 (both runs alike) and a session whose
 * arena buffers hold at most arena_limit bytes each (0: the device's). */
static inline bits_run bits_run_make(const clformer_config *c, size_t arena_limit)
{
    bits_run r;
    assert_ok(clformer_model_create(hctx(), c, 7, &r.model));
    assert_ok(clformer_session_create(r.model, &r.session));
    r.session->arena_limit = arena_limit;
    return r;
}

static inline void bits_run_free(bits_run *r)
{
    clformer_session_free(r->session);
    clformer_model_free(r->model);
}

/* The logits of a forward pass alone. */
static inline void assert_same_logits(bits_run *a, bits_run *b, const clformer_batch *batch, int vocab)
{
    const size_t n = batch->batch * (batch->tgt_len - 1) * (size_t)vocab;
    float *la = hmalloc(n * sizeof *la), *lb = hmalloc(n * sizeof *lb);
    assert_ok(clformer_session_logits(a->session, batch, la));
    assert_ok(clformer_session_logits(b->session, batch, lb));
    assert_memory_equal(la, lb, n * sizeof *la);
    free(la);
    free(lb);
}

static inline float *bits_run_gradients(bits_run *r)
{
    cf_model *m = r->session->model;
    float *g = hmalloc(m->layout.total * sizeof *g);
    assert_ok(cf_download(hctx(), m->grads, 0, g, m->layout.total));
    return g;
}

/* The loss of one batch and every gradient, naming the first that differs. */
static inline void assert_same_gradients(bits_run *a, bits_run *b, const clformer_batch *batch)
{
    double loss_a, loss_b;
    assert_ok(clformer_session_gradients(a->session, batch, &loss_a));
    assert_ok(clformer_session_gradients(b->session, batch, &loss_b));
    assert_memory_equal(&loss_a, &loss_b, sizeof loss_a);
    float *ga = bits_run_gradients(a), *gb = bits_run_gradients(b);
    const size_t n = a->model->layout.total;
    for (size_t i = 0; i < n; i++)
        if (memcmp(&ga[i], &gb[i], sizeof *ga) != 0)
            fail_msg("gradient %zu of %zu: %.9g against %.9g", i, n, (double)ga[i], (double)gb[i]);
    free(ga);
    free(gb);
}

/* Two training steps (loss, gradient norm) and the weights they leave. */
static inline void assert_same_steps(bits_run *a, bits_run *b, const clformer_batch *batch)
{
    for (int step = 0; step < 2; step++) {
        clformer_step_stats sa, sb;
        assert_ok(clformer_session_train_step(a->session, batch, 1e-2f, &sa));
        assert_ok(clformer_session_train_step(b->session, batch, 1e-2f, &sb));
        assert_memory_equal(&sa.loss, &sb.loss, sizeof sa.loss);
        assert_memory_equal(&sa.grad_norm, &sb.grad_norm, sizeof sa.grad_norm);
    }
    uint64_t sum_a, sum_b;
    assert_ok(clformer_model_parameter_checksum(a->model, &sum_a));
    assert_ok(clformer_model_parameter_checksum(b->model, &sum_b));
    assert_true(sum_a == sum_b);
}

/* The model variants a layout change must cover: pre- and post-norm
 * encoder-decoders, a decoder-only model and a llama (RMSNorm, SwiGLU,
 * rotary positions, two query heads per key/value head), two layers a side
 * even on the simulator (backward treats every layer but the decoder's last
 * alike) and dropout 0.1 (its masks must be redrawn alike). */
typedef enum { BITS_PRE_NORM, BITS_POST_NORM, BITS_DECODER_ONLY, BITS_LLAMA } bits_variant;

static inline clformer_config bits_variant_config(bits_variant v)
{
    clformer_config c = harness_small_config();
    c.n_enc_layers = c.n_dec_layers = 2;
    c.dropout = 0.1f;
    c.norm_first = v != BITS_POST_NORM;
    if (v == BITS_DECODER_ONLY || v == BITS_LLAMA) {
        c.n_enc_layers = 0;
        c.src_vocab = 0;
        c.positional = CLFORMER_POS_LEARNED;
    }
    if (v == BITS_LLAMA) {
        c.family = CLFORMER_FAMILY_LLAMA;
        c.n_heads = 4;
        c.n_kv_heads = 2;
        c.activation = CLFORMER_ACT_SILU;
        c.positional = CLFORMER_POS_ROPE;
        c.scale_embed = false;
        c.generator_bias = false;
    }
    return c;
}

/* A batch of random sentences for variant v of config c (sources from
 * `seed`, targets from seed + 1), smaller on the simulator; decoder-only:
 * windows of text, with no <pad> among the labels. Free src and tgt. */
static inline clformer_batch bits_variant_batch(bits_variant v, const clformer_config *c,
                                                uint64_t seed)
{
    const bool slow = harness_is_slow();
    const size_t B = slow ? 2 : 5, L = slow ? 5 : 11;
    const bool lm = v == BITS_DECODER_ONLY || v == BITS_LLAMA;
    const size_t S = lm ? 0 : slow ? 4 : 9;
    int32_t *src = S ? harness_random_sentences(B, S, c->src_vocab, seed) : NULL;
    int32_t *tgt = harness_random_sentences(B, L, c->tgt_vocab, seed + 1);
    if (lm)
        for (size_t i = 0; i < B * L; i++)
            tgt[i] = 4 + (int32_t)(i * 7 % (size_t)(c->tgt_vocab - 4));
    return (clformer_batch){B, S, L, src, tgt};
}

/* One case of a bits test: the context's attention path set to `path`
 * (bits_case_end puts the one before back), variant v's config and a batch
 * of it from `seed` (bits_variant_batch; bits_case_end frees it). */
typedef struct {
    clformer_attention_path saved_path;
    clformer_config config;
    clformer_batch batch;
} bits_case;

static inline bits_case bits_case_begin(clformer_attention_path path, bits_variant v,
                                        uint64_t seed)
{
    bits_case k;
    k.saved_path = hctx()->attention_path;
    hctx()->attention_path = path;
    k.config = bits_variant_config(v);
    k.batch = bits_variant_batch(v, &k.config, seed);
    return k;
}

static inline void bits_case_end(bits_case *k)
{
    free((void *)k->batch.src);
    free((void *)k->batch.tgt);
    hctx()->attention_path = k->saved_path;
}

#endif
