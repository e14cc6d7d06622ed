/*
 * Decoder-only language models (n_enc_layers 0): they train on windows of
 * a token stream (the loss falls, the same seed gives the same bits), save
 * and load (the same logits), and generate: greedy equals top-k 1, a seed
 * gives the same text, and the sampler's draws follow the softmax (a
 * chi-square test over many draws on fixed logits). A model with GPT-2's
 * BPE keeps it through a checkpoint and a Hugging Face export: the same
 * ids, text and logits. Agreement with Hugging Face's GPT-2 is
 * test_gpt2_parity's; batches of prompts and the one-pass prefill are
 * test_lm_generate's.
 */
#include "harness.h"
#include "decode.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static clformer_config gpt_config(void)
{
    clformer_config c;
    clformer_config_default(&c);
    const bool slow = harness_is_slow();
    c.d_model = slow ? 8 : 32;
    c.n_heads = 2;
    c.d_ff = 4 * c.d_model;
    c.n_enc_layers = 0;
    c.n_dec_layers = slow ? 1 : 2;
    c.src_vocab = 0;
    c.tgt_vocab = 13;
    c.max_len = 16;
    c.activation = CLFORMER_ACT_GELU_TANH;
    c.positional = CLFORMER_POS_LEARNED;
    c.share_tgt_embed = true;
    c.scale_embed = false;
    c.generator_bias = false;
    c.dropout = 0.1f;
    return c;
}

static clformer_model *new_model(const clformer_config *c, uint64_t seed)
{
    clformer_model *m;
    assert_ok(clformer_model_create(hctx(), c, seed, &m));
    char **t = hmalloc((size_t)c->tgt_vocab * sizeof *t);
    const char *specials[4] = {"<pad>", "<sos>", "<eos>", "<unk>"};
    for (int i = 0; i < c->tgt_vocab; i++) {
        t[i] = hmalloc(8);
        if (i < 4) snprintf(t[i], 8, "%s", specials[i]);
        else snprintf(t[i], 8, "%c", 'a' + i - 4);
    }
    assert_ok(clformer_model_set_vocabs(m, NULL, (const char *const *)t));
    for (int i = 0; i < c->tgt_vocab; i++) free(t[i]);
    free(t);
    return m;
}

/* A stream that counts 0, 1, ..., V-1 and over again: each token follows
 * from the one before, so a model learns it quickly. Batch k: B windows. */
#define B 3
#define T1 13
static void make_batch(const clformer_config *c, int k, int32_t *tgt)
{
    for (int b = 0; b < B; b++)
        for (int i = 0; i < T1; i++) tgt[b * T1 + i] = (7 * k + 3 * b + i) % c->tgt_vocab;
}

static void train(clformer_model *m, int steps, double *losses)
{
    const clformer_config *c = clformer_model_config(m);
    clformer_session *s;
    assert_ok(clformer_session_create(m, &s));
    int32_t tgt[B * T1];
    for (int k = 0; k < steps; k++) {
        make_batch(c, k, tgt);
        const clformer_batch b = {B, 0, T1, NULL, tgt};
        clformer_step_stats st;
        assert_ok(clformer_session_train_step(s, &b, 1e-2f, &st));
        assert_int_equal(st.tokens, B * (T1 - 1)); /* id 0 is a token, not padding */
        losses[k] = st.loss;
    }
    clformer_session_free(s);
}

static void decoder_only_trains_and_is_deterministic(void **state)
{
    (void)state;
    const clformer_config c = gpt_config();
    const int n = harness_is_slow() ? 3 : 40;
    double a[40], b[40];
    clformer_model *m = new_model(&c, 5);
    assert_int_equal(clformer_model_parameter_count(m),
                     /* wte, wpe, per layer: qkv, proj, fc, fc_proj with biases, 2 norms; ln_f */
                     13 * c.d_model + 16 * c.d_model +
                         c.n_dec_layers * (3 * c.d_model * c.d_model + 3 * c.d_model +
                                           c.d_model * c.d_model + c.d_model +
                                           2 * 4 * c.d_model * c.d_model + 4 * c.d_model +
                                           c.d_model + 4 * c.d_model) +
                         2 * c.d_model);
    train(m, n, a);
    clformer_model_free(m);
    m = new_model(&c, 5);
    train(m, n, b);
    assert_memory_equal(a, b, n * sizeof *a);
    if (!harness_is_slow()) assert_true(b[n - 1] < 0.5 * b[0]);
    clformer_model_free(m);
}

static void bad_batches_are_refused(void **state)
{
    (void)state;
    const clformer_config c = gpt_config();
    clformer_model *m = new_model(&c, 5);
    clformer_session *s;
    assert_ok(clformer_session_create(m, &s));
    int32_t tgt[2 * 18] = {0};
    const int32_t src[1] = {1};
    /* the family's window rules (family_batch.c), each with its own message */
    const clformer_batch with_src = {1, 1, 4, src, tgt};
    assert_int_equal(clformer_session_eval_loss(s, &with_src, &(double){0}, &(size_t){0}),
                     CLFORMER_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(clformer_last_error(), "src_len must be 0"));
    const clformer_batch too_short = {1, 0, 1, NULL, tgt};
    assert_int_equal(clformer_session_eval_loss(s, &too_short, &(double){0}, &(size_t){0}),
                     CLFORMER_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(clformer_last_error(), "window length 1 is too short"));
    const clformer_batch too_long = {1, 0, 18, NULL, tgt}; /* max_len 16 + 1 fits, 18 not */
    assert_int_equal(clformer_session_eval_loss(s, &too_long, &(double){0}, &(size_t){0}),
                     CLFORMER_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(clformer_last_error(), "exceeds the model's context of 16"));
    tgt[3] = 13;
    const clformer_batch bad_id = {1, 0, 5, NULL, tgt};
    assert_int_equal(clformer_session_eval_loss(s, &bad_id, &(double){0}, &(size_t){0}),
                     CLFORMER_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(clformer_last_error(), "token id 13 at target sentence 0 position 3"));
    clformer_session_free(s);
    clformer_model_free(m);
}

/* The logits of `batch` from each model, compared bit for bit. */
static void same_logits(clformer_model *a, clformer_model *b, const clformer_batch *batch)
{
    const size_t n =
        batch->batch * (batch->tgt_len - 1) * (size_t)clformer_model_config(a)->tgt_vocab;
    float *x = hmalloc(n * sizeof *x), *y = hmalloc(n * sizeof *y);
    clformer_session *s1, *s2;
    assert_ok(clformer_session_create(a, &s1));
    assert_ok(clformer_session_create(b, &s2));
    assert_ok(clformer_session_logits(s1, batch, x));
    assert_ok(clformer_session_logits(s2, batch, y));
    assert_memory_equal(x, y, n * sizeof *x);
    clformer_session_free(s1);
    clformer_session_free(s2);
    free(x);
    free(y);
}

static void checkpoint_round_trip(void **state)
{
    (void)state;
    const clformer_config c = gpt_config();
    clformer_model *m = new_model(&c, 9);
    double losses[3];
    train(m, 3, losses);
    char path[] = "/tmp/clformer_lm_XXXXXX";
    const int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    assert_ok(clformer_model_save(m, path, true));
    clformer_model *back;
    assert_ok(clformer_model_load(hctx(), path, &back));
    unlink(path);
    const clformer_config *bc = clformer_model_config(back);
    assert_int_equal(bc->n_enc_layers, 0);
    assert_int_equal(bc->activation, CLFORMER_ACT_GELU_TANH);
    assert_false(bc->scale_embed);
    assert_false(bc->generator_bias);
    assert_null(clformer_model_src_vocab(back));
    int32_t tgt[B * T1];
    make_batch(&c, 1, tgt);
    const clformer_batch b = {B, 0, T1, NULL, tgt};
    same_logits(m, back, &b);
    clformer_model_free(m);
    clformer_model_free(back);
}

/* Generation: greedy is top-k 1, a seed repeats its text, another seed
 * (at temperature 2, so the draws spread) gives another, and the first
 * greedy token is the argmax of the prompt's last logits. */
static void generation(void **state)
{
    (void)state;
    const clformer_config c = gpt_config();
    clformer_model *m = new_model(&c, 3);
    double losses[40];
    train(m, harness_is_slow() ? 2 : 40, losses);
    clformer_session *s;
    assert_ok(clformer_session_create(m, &s));
    const int32_t prompt[3] = {4, 5, 6};
    enum { N = 24 }; /* past max_len 16: the caches restart */
    int32_t greedy[N], top1[N], a[N], b[N], other[N];
    size_t count;
    clformer_sample_options o;
    clformer_sample_options_default(&o);
    o.max_tokens = N;
    o.temperature = 0.0f;
    assert_ok(clformer_session_generate(s, prompt, 3, &o, NULL, NULL, greedy, &count));
    assert_int_equal(count, N);
    o.temperature = 0.8f;
    o.top_k = 1;
    assert_ok(clformer_session_generate(s, prompt, 3, &o, NULL, NULL, top1, &count));
    assert_memory_equal(greedy, top1, sizeof greedy);
    o.top_k = 0;
    o.temperature = 2.0f;
    o.seed = 11;
    assert_ok(clformer_session_generate(s, prompt, 3, &o, NULL, NULL, a, &count));
    assert_ok(clformer_session_generate(s, prompt, 3, &o, NULL, NULL, b, &count));
    assert_memory_equal(a, b, sizeof a);
    o.seed = 12;
    assert_ok(clformer_session_generate(s, prompt, 3, &o, NULL, NULL, other, &count));
    assert_true(memcmp(a, other, sizeof a) != 0);
    /* the first token against the full forward pass's logits */
    const int32_t window[4] = {4, 5, 6, 0};
    const clformer_batch batch = {1, 0, 4, NULL, window};
    float logits[3 * 13];
    assert_ok(clformer_session_logits(s, &batch, logits));
    int best = 0;
    for (int v = 1; v < c.tgt_vocab; v++)
        if (logits[2 * 13 + v] > logits[2 * 13 + best]) best = v;
    assert_int_equal(greedy[0], best);
    /* bad options and an empty prompt are refused */
    o.top_p = 0.0f;
    assert_int_equal(clformer_session_generate(s, prompt, 3, &o, NULL, NULL, a, &count),
                     CLFORMER_ERR_INVALID_ARGUMENT);
    clformer_sample_options_default(&o);
    assert_int_equal(clformer_session_generate(s, prompt, 0, &o, NULL, NULL, a, &count),
                     CLFORMER_ERR_INVALID_ARGUMENT);
    clformer_session_free(s);
    clformer_model_free(m);
}

/* The sampler's draws on fixed logits follow softmax(logits / T) cut to
 * top-k and top-p: chi-square over 20000 draws, below the 0.999 quantile
 * (a failure by chance: 1 in 1000 seeds; the draws are seeded, so it is
 * the same every run). A sampler that ignored the temperature fails. */
static void sampling_follows_the_distribution(void **state)
{
    (void)state;
    const float logits[6] = {2.0f, 1.0f, 0.5f, 0.0f, -1.0f, 1.5f};
    cf_sample_candidate scratch[6];
    const struct {
        float temperature, top_p;
        int top_k;
    } cases[3] = {{1.0f, 1.0f, 0}, {0.7f, 1.0f, 3}, {1.3f, 0.8f, 0}};
    for (int k = 0; k < 3; k++) {
        clformer_sample_options o;
        clformer_sample_options_default(&o);
        o.temperature = cases[k].temperature;
        o.top_k = cases[k].top_k;
        o.top_p = cases[k].top_p;
        o.seed = 100 + (uint64_t)k;
        /* expected probabilities: sorted descending, cut, renormalised */
        double p[6], sorted[6];
        int order[6] = {0, 5, 1, 2, 3, 4}; /* logits descending */
        double sum = 0;
        for (int i = 0; i < 6; i++) sum += sorted[i] = exp((logits[order[i]] - 2.0) / o.temperature);
        int keep = o.top_k ? o.top_k : 6;
        double kept = 0;
        for (int i = 0; i < keep; i++) kept += sorted[i];
        if (o.top_p < 1.0f) {
            double acc = 0;
            int n = 0;
            while (n < keep && acc < o.top_p * kept) acc += sorted[n++];
            keep = n;
            kept = acc;
        }
        memset(p, 0, sizeof p);
        for (int i = 0; i < keep; i++) p[order[i]] = sorted[i] / kept;
        const int draws = 20000;
        int seen[6] = {0};
        for (int d = 0; d < draws; d++) seen[cf_sample_token(logits, 6, &o, 0, (uint64_t)d, scratch)]++;
        double chi2 = 0;
        int dof = -1;
        for (int v = 0; v < 6; v++) {
            if (p[v] == 0.0) {
                assert_int_equal(seen[v], 0); /* cut tokens are never drawn */
                continue;
            }
            const double e = p[v] * draws;
            chi2 += (seen[v] - e) * (seen[v] - e) / e;
            dof++;
        }
        /* 0.999 quantiles of chi-square for 1..5 degrees of freedom */
        const double q999[6] = {0, 10.83, 13.82, 16.27, 18.47, 20.52};
        assert_true(dof >= 1);
        if (chi2 >= q999[dof])
            fail_msg("case %d: chi-square %.2f >= %.2f (dof %d); drawn %d %d %d %d %d %d", k, chi2,
                     q999[dof], dof, seen[0], seen[1], seen[2], seen[3], seen[4], seen[5]);
    }
}

/* GPT-2's BPE (tests/data/bpe, 700 tokens) on a model: its ids, through a
 * checkpoint and a Hugging Face export (vocab.json + merges.txt) and back. */
static void gpt2_bpe_round_trip(void **state)
{
    (void)state;
    static char vocab[1 << 14], merges[1 << 13];
    char path[4096];
    snprintf(path, sizeof path, "%s/bpe/vocab.json", getenv("CLFORMER_TEST_DATA"));
    harness_slurp(path, vocab, sizeof vocab);
    snprintf(path, sizeof path, "%s/bpe/merges.txt", getenv("CLFORMER_TEST_DATA"));
    harness_slurp(path, merges, sizeof merges);
    clformer_config c = gpt_config();
    c.tgt_vocab = 699; /* one row short of the BPE's 700 ids */
    clformer_model *m;
    assert_ok(clformer_model_create(hctx(), &c, 4, &m));
    assert_int_equal(clformer_model_set_bpe(m, vocab, strlen(vocab), merges, strlen(merges)),
                     CLFORMER_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(clformer_last_error(), "700 tokens"));
    clformer_model_free(m);
    c.tgt_vocab = 700;
    c.dropout = 0.0f;
    assert_ok(clformer_model_create(hctx(), &c, 4, &m));
    assert_ok(clformer_model_set_bpe(m, vocab, strlen(vocab), merges, strlen(merges)));
    /* ids are vocab.json's: "<|endoftext|>" is 0 there, "!" 1 */
    const char *text = "ROMEO: caf\xC3\xA9!";
    int32_t *ids;
    size_t n;
    assert_ok(clformer_lm_encode(m, text, strlen(text), &ids, &n));
    assert_true(n >= 3 && n <= 16);
    assert_int_equal(ids[n - 1], 1);
    char *back;
    assert_ok(clformer_lm_decode(m, ids, n, &back));
    assert_string_equal(back, text);
    clformer_free(back);

    char dir[64], ckpt[128], hf[128];
    assert_true(harness_temp_dir(dir, sizeof dir, "lmbpe"));
    harness_path(ckpt, sizeof ckpt, dir, "m.safetensors");
    harness_path(hf, sizeof hf, dir, "hf");
    assert_ok(clformer_model_save(m, ckpt, false));
    assert_ok(clformer_model_export_hf_gpt2(m, hf));
    const char *from[2] = {ckpt, hf};
    for (int k = 0; k < 2; k++) {
        clformer_model *r;
        assert_ok(clformer_model_load(hctx(), from[k], &r));
        size_t size;
        const char *v = clformer_model_bpe(r, false, &size);
        assert_non_null(v);
        assert_int_equal(size, strlen(vocab));
        assert_memory_equal(v, vocab, size);
        int32_t *again;
        size_t n2;
        assert_ok(clformer_lm_encode(r, text, strlen(text), &again, &n2));
        assert_int_equal(n2, n);
        assert_memory_equal(again, ids, n * sizeof *ids);
        same_logits(m, r, &(clformer_batch){1, 0, n, NULL, ids}); /* one window */
        clformer_free(again);
        clformer_model_free(r);
    }
    harness_remove_tree(dir);
    clformer_free(ids);
    clformer_model_free(m);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(decoder_only_trains_and_is_deterministic),
    cmocka_unit_test(bad_batches_are_refused),
    cmocka_unit_test(checkpoint_round_trip),
    cmocka_unit_test(generation),
    cmocka_unit_test(sampling_follows_the_distribution),
    cmocka_unit_test(gpt2_bpe_round_trip),
};
HARNESS_DEVICE_MAIN("lm", tests)
