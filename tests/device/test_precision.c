/*
 * Storage precision (clformer_session_set_precision, --precision): with bf16
 * and fp16 every activation and activation gradient a training step stores
 * holds a value of that format, and so do the weights the passes read, while
 * statistics and weight gradients keep fp32 values; training follows fp32's
 * losses closely without being fp32; an fp16 step whose gradients overflow is
 * skipped (weights and Adam untouched, the scale halved, Adam's count not
 * advanced); resuming is exact in both; and the command line takes the
 * option and refuses a bad value.
 *
 * On a simulator (Oclgrind) the tests that train for several steps (losses
 * against fp32, exact resume, the command's training runs) are left out:
 * there they take many minutes, as test_trainer and test_checkpoints, which
 * do not run there either; the rest (every stored tensor, the overflow path,
 * the API, the bad value) runs there, where Oclgrind checks the bounds of
 * every rounding launch.
 */
#include "harness.h"
#include "half.h"
#include "session.h"
#include "session_bits.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const clformer_precision HALVES[2] = {CLFORMER_BF16, CLFORMER_FP16};

/* x as the format holds it (the host's conversions, runtime/core/half.c). */
static float rounded(float x, clformer_precision p)
{
    return p == CLFORMER_BF16 ? cf_f32_from_bf16(cf_bf16_from_f32(x))
                              : cf_f32_from_f16(cf_f16_from_f32(x));
}

/* How many of n values read from v are not values of the format (NaN counts
 * as one: its payload is the device's). */
static size_t not_representable(cf_view v, size_t n, clformer_precision p)
{
    float *h = hmalloc(n * sizeof *h);
    assert_ok(cf_download(hctx(), v.buf, v.off, h, n));
    size_t bad = 0;
    for (size_t i = 0; i < n; i++) {
        const float r = rounded(h[i], p);
        bad += !isnan(h[i]) && memcmp(&r, &h[i], sizeof r) != 0;
    }
    free(h);
    return bad;
}

static void expect_stored(cf_view v, size_t n, clformer_precision p, const char *name)
{
    const size_t bad = not_representable(v, n, p);
    if (bad)
        fail_msg("%s: %zu of %zu values are not %s values (the op that writes it does not "
                 "round)", name, bad, n, clformer_precision_name(p));
}

/* A model of config c (seed 7) with a session in precision p. */
static bits_run make_run(const clformer_config *c, clformer_precision p)
{
    bits_run r = bits_run_make(c, 0);
    assert_ok(clformer_session_set_precision(r.session, p));
    assert_int_equal(clformer_session_precision(r.session), p);
    return r;
}

typedef struct {
    clformer_batch batch;
    int32_t *src, *tgt;
} test_batch;

static test_batch make_batch(const clformer_config *c, uint64_t seed)
{
    const bool slow = harness_is_slow();
    test_batch b;
    const size_t B = slow ? 2 : 6, S = slow ? 5 : 10, L = slow ? 6 : 11;
    b.src = harness_random_sentences(B, S, c->src_vocab, seed);
    b.tgt = harness_random_sentences(B, L, c->tgt_vocab, seed + 1);
    b.batch = (clformer_batch){B, S, L, b.src, b.tgt};
    return b;
}

static void free_batch(test_batch *b)
{
    free(b->src);
    free(b->tgt);
}

/* After a training step (its arena still holds the forward's tensors and
 * backward's gradients): every one of them holds format values; the
 * LayerNorm statistics and the weight gradients are not forced to (they stay
 * fp32); the context's precision is back to fp32 after the step. */
static void stored_values_on(clformer_attention_path path, clformer_precision p)
{
    cf_ctx *ctx = hctx();
    const clformer_attention_path saved_path = ctx->attention_path;
    ctx->attention_path = path;
    clformer_config c = harness_small_config();
    c.dropout = 0.1f;
    test_batch tb = make_batch(&c, 21);
    bits_run r = make_run(&c, p);
    clformer_step_stats st;
    assert_ok(clformer_session_train_step(r.session, &tb.batch, 1e-3f, &st));
    assert_false(st.skipped);
    /* a second step: its forward reads the rounded copy of updated weights */
    assert_ok(clformer_session_train_step(r.session, &tb.batch, 1e-3f, &st));
    assert_int_equal(ctx->precision, CLFORMER_FP32);

    const cf_acts *a = &r.session->acts;
    const size_t d = (size_t)c.d_model, ff = (size_t)c.d_ff, V = (size_t)c.tgt_vocab;
    const size_t Ns = a->B * a->S, Nt = a->B * a->T, H = (size_t)c.n_heads;
    char name[96];
    expect_stored(a->src_emb, Ns * d, p, "src_emb");
    expect_stored(a->tgt_emb, Nt * d, p, "tgt_emb");
    for (int side = 0; side < 2; side++) {
        const cf_layer_acts *L = side ? &a->dec[0] : &a->enc[0];
        const size_t N = side ? Nt : Ns, Tq = side ? a->T : a->S, Tk = Tq;
        const int subs = side ? 3 : 2;
        for (int i = 0; i < subs; i++) {
            snprintf(name, sizeof name, "%s layer 0 sublayer %d norm", side ? "dec" : "enc", i);
            expect_stored(L->sub[i].ln, N * d, p, name);
            snprintf(name, sizeof name, "%s layer 0 sublayer %d output", side ? "dec" : "enc", i);
            expect_stored(L->sub[i].out, N * d, p, name);
        }
        const cf_attn_acts *at = &L->self_attn;
        expect_stored(at->q, N * 3 * d, p, "self-attention q|k|v projection");
        /* the heads' context: the fused path's (the unfused one writes concat's rows) */
        if (cf_attention_fused(&at->saved))
            expect_stored(at->ctx_h, a->B * H * Tq * (d / H), p, "attention output (heads)");
        else
            assert_null(at->ctx_h.buf);
        expect_stored(at->concat, N * d, p, "attention output (merged)");
        expect_stored(at->out, N * d, p, "attention out_proj");
        if (!cf_attention_fused(&at->saved))
            expect_stored(at->saved.probs, a->B * H * Tq * Tk, p, "attention probabilities");
        expect_stored(L->ffn.pre, N * ff, p, "ffn linear1");
        expect_stored(L->ffn.act, N * ff, p, "ffn hidden (activation)");
        expect_stored(L->ffn.out, N * d, p, "ffn linear2");
    }
    expect_stored(a->memory, Ns * d, p, "encoder output");
    expect_stored(a->dec_out, Nt * d, p, "decoder output");
    expect_stored(a->logits, Nt * V, p, "dlogits (in place of the logits)");
    const size_t Nmax = Ns > Nt ? Ns : Nt;
    expect_stored(a->d_res, Nmax * d, p, "d_res");
    expect_stored(a->d_a, Nmax * d, p, "d_a");
    expect_stored(a->d_q, Nmax * 3 * d, p, "d_q");
    expect_stored(a->d_ff, Nmax * ff, p, "d_ff");
    expect_stored(a->d_mem, Ns * d, p, "d_mem");
    /* the weights the passes read: the master weights rounded */
    const size_t n = r.model->layout.total;
    expect_stored(cf_view_at(r.session->weights, 0), n, p, "rounded weights");
    /* statistics and weight gradients keep fp32 values (the master weights
     * too: Adam's updates are below a 16-bit ulp) */
    assert_true(not_representable(a->dec[0].sub[0].rstd, Nt, p) > 0);
    assert_true(not_representable(cf_view_at(r.model->grads, 0), n, p) > n / 4);
    assert_true(not_representable(cf_view_at(r.model->params, 0), n, p) > n / 4);
    bits_run_free(&r);
    free_batch(&tb);
    ctx->attention_path = saved_path;
}

static void bf16_stored_values_unfused(void **state)
{
    (void)state;
    stored_values_on(CLFORMER_ATTENTION_UNFUSED, CLFORMER_BF16);
}

static void fp16_stored_values_unfused(void **state)
{
    (void)state;
    stored_values_on(CLFORMER_ATTENTION_UNFUSED, CLFORMER_FP16);
}

static void bf16_stored_values_fused(void **state)
{
    (void)state;
    stored_values_on(CLFORMER_ATTENTION_FUSED, CLFORMER_BF16);
}

/* Ten steps on two alternating batches: each 16-bit
 * run's losses stay within a bound of fp32's (bf16 keeps 8 significant bits,
 * fp16 11: 1% and 0.3% of the loss; PoCL pthread saw at most 7e-4 and 6e-4),
 * and are not fp32's bits (the path is on). */
static void losses_follow_fp32(void **state)
{
    (void)state;
    if (harness_is_slow()) skip(); /* see the top of the file */
    clformer_config c = harness_small_config();
    c.dropout = 0.1f;
    test_batch b0 = make_batch(&c, 41), b1 = make_batch(&c, 43);
    const int steps = 10;
    double loss[3][10];
    const clformer_precision ps[3] = {CLFORMER_FP32, CLFORMER_BF16, CLFORMER_FP16};
    for (int k = 0; k < 3; k++) {
        bits_run r = make_run(&c, ps[k]);
        for (int i = 0; i < steps; i++) {
            clformer_step_stats st;
            assert_ok(clformer_session_train_step(r.session, i % 2 ? &b1.batch : &b0.batch,
                                                  3e-3f, &st));
            assert_false(st.skipped);
            assert_true(st.loss_scale == (ps[k] == CLFORMER_FP16 ? 65536.0f : 1.0f));
            loss[k][i] = st.loss;
            assert_true(isfinite(st.loss) && isfinite(st.grad_norm));
        }
        bits_run_free(&r);
    }
    const double tol[3] = {0.0, 1e-2, 3e-3};
    for (int k = 1; k < 3; k++) {
        bool differs = false;
        for (int i = 0; i < steps; i++) {
            const double rel = fabs(loss[k][i] - loss[0][i]) / loss[0][i];
            printf("  step %d: fp32 %.6f %s %.6f (rel %.2e)\n", i + 1, loss[0][i],
                   clformer_precision_name(ps[k]), loss[k][i], rel);
            if (rel > tol[k])
                fail_msg("%s step %d: loss %.6f is %.2e from fp32's %.6f (bound %.0e)",
                         clformer_precision_name(ps[k]), i + 1, loss[k][i], rel, loss[0][i],
                         tol[k]);
            differs |= loss[k][i] != loss[0][i];
        }
        if (!differs)
            fail_msg("%s losses equal fp32's bit for bit: nothing was rounded",
                     clformer_precision_name(ps[k]));
    }
    free_batch(&b0);
    free_batch(&b1);
}

static float *download_params(clformer_model *m)
{
    float *p = hmalloc(m->layout.total * sizeof *p);
    assert_ok(cf_download(hctx(), m->params, 0, p, m->layout.total));
    return p;
}

/* A loss scale of 2^40 overflows fp16's 65504 at once: the step is skipped
 * (weights and Adam's moments unchanged, the step counted, the scale halved,
 * Adam's count not advanced), and the next step at 65536 gives exactly the
 * weights a fresh model's first step does (no dropout: the step number only
 * counts for Adam). */
static void fp16_overflow_is_skipped(void **state)
{
    (void)state;
    clformer_config c = harness_small_config();
    c.dropout = 0.0f;
    test_batch tb = make_batch(&c, 51);
    bits_run r = make_run(&c, CLFORMER_FP16), fresh = make_run(&c, CLFORMER_FP16);
    assert_true(clformer_model_loss_scale(r.model) == 0.0f);
    assert_int_equal(clformer_model_set_loss_scale(r.model, 3.0f), CLFORMER_ERR_INVALID_ARGUMENT);
    assert_ok(clformer_model_set_loss_scale(r.model, 0x1p40f));
    float *before = download_params(r.model);
    clformer_step_stats st;
    assert_ok(clformer_session_train_step(r.session, &tb.batch, 1e-3f, &st));
    assert_true(st.skipped);
    assert_true(st.loss_scale == 0x1p40f);
    assert_true(isnan(st.grad_norm) && isfinite(st.loss));
    assert_int_equal(clformer_model_step(r.model), 1);
    assert_true(clformer_model_loss_scale(r.model) == 0x1p39f);
    float *after = download_params(r.model);
    assert_memory_equal(before, after, r.model->layout.total * sizeof *before);
    free(after);

    assert_ok(clformer_model_set_loss_scale(r.model, 65536.0f));
    assert_ok(clformer_session_train_step(r.session, &tb.batch, 1e-3f, &st));
    assert_false(st.skipped);
    assert_int_equal(clformer_model_step(r.model), 2);
    clformer_step_stats fs;
    assert_ok(clformer_session_train_step(fresh.session, &tb.batch, 1e-3f, &fs));
    assert_false(fs.skipped);
    after = download_params(r.model);
    float *want = download_params(fresh.model);
    assert_true(memcmp(before, after, r.model->layout.total * sizeof *before) != 0);
    assert_memory_equal(want, after, r.model->layout.total * sizeof *want);
    free(before), free(after), free(want);
    bits_run_free(&r);
    bits_run_free(&fresh);
    free_batch(&tb);
}

/* Four steps in one go equal two, a save, a load and two more, bit for bit,
 * in bf16 and in fp16 (there with a skipped step first, so that the scale,
 * its clean-step count and the skipped count must all come back). */
static void resume_is_exact(void **state)
{
    (void)state;
    if (harness_is_slow()) skip(); /* see the top of the file */
    char dir[64], path[128];
    assert_true(harness_temp_dir(dir, sizeof dir, "precision"));
    harness_path(path, sizeof path, dir, "half.safetensors");
    clformer_config c = harness_small_config();
    c.dropout = 0.1f;
    test_batch b0 = make_batch(&c, 61), b1 = make_batch(&c, 63);
    const clformer_batch *batches[4] = {&b0.batch, &b1.batch, &b0.batch, &b1.batch};
    for (int k = 0; k < 2; k++) {
        const clformer_precision p = HALVES[k];
        bits_run whole = make_run(&c, p), first = make_run(&c, p);
        bits_run *both[2] = {&whole, &first};
        if (p == CLFORMER_FP16)
            for (int j = 0; j < 2; j++) assert_ok(clformer_model_set_loss_scale(both[j]->model, 0x1p40f));
        clformer_step_stats st;
        for (int i = 0; i < 4; i++) {
            assert_ok(clformer_session_train_step(whole.session, batches[i], 1e-3f, &st));
            if (p == CLFORMER_FP16 && i == 0) {
                assert_true(st.skipped);
                assert_ok(clformer_model_set_loss_scale(whole.model, 1024.0f));
            }
        }
        for (int i = 0; i < 2; i++) {
            assert_ok(clformer_session_train_step(first.session, batches[i], 1e-3f, &st));
            if (p == CLFORMER_FP16 && i == 0) assert_ok(clformer_model_set_loss_scale(first.model, 1024.0f));
        }
        char **src = cf_placeholder_tokens(c.src_vocab), **tgt = cf_placeholder_tokens(c.tgt_vocab);
        assert_ok(clformer_model_set_vocabs(first.model, (const char *const *)src,
                                            (const char *const *)tgt));
        cf_placeholder_tokens_free(src, c.src_vocab);
        cf_placeholder_tokens_free(tgt, c.tgt_vocab);
        assert_ok(clformer_model_save(first.model, path, true));
        const float scale = clformer_model_loss_scale(first.model);
        bits_run_free(&first);
        bits_run second;
        assert_ok(clformer_model_load(hctx(), path, &second.model));
        assert_ok(clformer_session_create(second.model, &second.session));
        assert_ok(clformer_session_set_precision(second.session, p));
        assert_true(clformer_model_loss_scale(second.model) == scale);
        for (int i = 2; i < 4; i++)
            assert_ok(clformer_session_train_step(second.session, batches[i], 1e-3f, &st));
        float *a = download_params(whole.model), *b = download_params(second.model);
        if (memcmp(a, b, whole.model->layout.total * sizeof *a) != 0)
            fail_msg("%s: the resumed run's weights differ from the uninterrupted run's",
                     clformer_precision_name(p));
        free(a), free(b);
        bits_run_free(&whole);
        bits_run_free(&second);
    }
    free_batch(&b0);
    free_batch(&b1);
    harness_remove_tree(dir);
}

/* The library refuses an unknown precision; fp32 again drops the copy. */
static void api_checks(void **state)
{
    (void)state;
    clformer_config c = harness_small_config();
    bits_run r = make_run(&c, CLFORMER_FP32);
    assert_int_equal(clformer_session_set_precision(r.session, (clformer_precision)3),
                     CLFORMER_ERR_INVALID_ARGUMENT);
    assert_int_equal(clformer_session_precision(r.session), CLFORMER_FP32);
    assert_ok(clformer_session_set_precision(r.session, CLFORMER_BF16));
    test_batch tb = make_batch(&c, 71);
    double loss;
    assert_ok(clformer_session_gradients(r.session, &tb.batch, &loss));
    assert_non_null(r.session->weights);
    assert_ok(clformer_session_set_precision(r.session, CLFORMER_FP32));
    assert_null(r.session->weights);
    free_batch(&tb);
    bits_run_free(&r);
}

/* ---- the rounded weights: made again exactly when the weights changed ---- */

static uint64_t roundings(void) { return hctx()->kernel_launches[CF_K_ROUND_STORAGE]; }

/* The logits of b, and how many rounding launches their pass took. */
static float *logits_of(clformer_session *s, const test_batch *b, uint64_t *launches)
{
    const size_t n = b->batch.batch * (b->batch.tgt_len - 1) * (size_t)s->model->cfg.tgt_vocab;
    float *out = hmalloc(n * sizeof *out);
    const uint64_t before = roundings();
    assert_ok(clformer_session_logits(s, &b->batch, out));
    if (launches) *launches = roundings() - before;
    return out;
}

static size_t logits_size(const clformer_session *s, const test_batch *b)
{
    return b->batch.batch * (b->batch.tgt_len - 1) * (size_t)s->model->cfg.tgt_vocab * 4;
}

/* A pass of a model nobody wrote since the last one reads the rounded
 * weights it made (one rounding launch fewer, the same logits); a change of
 * precision, or fp32 in between, makes them again. */
static void unchanged_weights_are_rounded_once(void **state)
{
    (void)state;
    clformer_config c = harness_small_config();
    test_batch b = make_batch(&c, 91);
    for (int k = 0; k < 2; k++) {
        const clformer_precision p = HALVES[k], other = HALVES[1 - k];
        bits_run r = make_run(&c, p);
        uint64_t first, second, third;
        float *a = logits_of(r.session, &b, &first), *again = logits_of(r.session, &b, &second);
        if (first != second + 1)
            fail_msg("%s: the second pass took %llu rounding launches, the first %llu: the "
                     "unchanged weights should not be rounded again",
                     clformer_precision_name(p), (unsigned long long)second,
                     (unsigned long long)first);
        assert_memory_equal(a, again, logits_size(r.session, &b));
        /* another precision: rounded again, the logits a fresh session's */
        assert_ok(clformer_session_set_precision(r.session, other));
        float *o = logits_of(r.session, &b, &third);
        assert_int_equal(third, first);
        clformer_session *fresh;
        assert_ok(clformer_session_create(r.model, &fresh));
        assert_ok(clformer_session_set_precision(fresh, other));
        float *f = logits_of(fresh, &b, NULL);
        assert_memory_equal(o, f, logits_size(r.session, &b));
        clformer_session_free(fresh);
        /* back, through fp32 (which frees the copy) */
        assert_ok(clformer_session_set_precision(r.session, CLFORMER_FP32));
        assert_ok(clformer_session_set_precision(r.session, p));
        free(again);
        again = logits_of(r.session, &b, &third);
        assert_int_equal(third, first);
        assert_memory_equal(a, again, logits_size(r.session, &b));
        free(a), free(again), free(o), free(f);
        bits_run_free(&r);
    }
    free_batch(&b);
}

/* A collective of two ranks whose broadcasts bring the root's values: the
 * parameters (the first buffer broadcast) halved. */
static clformer_status fake_sum_f32(void *user, float *data, size_t n)
{
    (void)user, (void)data, (void)n;
    return CLFORMER_OK;
}
static clformer_status fake_sum_f64(void *user, double *data, size_t n)
{
    (void)user, (void)data, (void)n;
    return CLFORMER_OK;
}
static clformer_status fake_broadcast(void *user, void *data, size_t bytes, int root)
{
    (void)root;
    int *calls = user;
    if ((*calls)++ == 0)
        for (size_t i = 0; i < bytes / 4; i++) ((float *)data)[i] *= 0.5f;
    return CLFORMER_OK;
}

/* Every writer of the weights (write_tensor, another session's training
 * step, a broadcast) is seen by a bf16 session's next pass: its logits are
 * a fresh session's, and not those from before the write. */
static void every_writer_of_the_weights_is_seen(void **state)
{
    (void)state;
    clformer_config c = harness_small_config();
    c.dropout = 0.0f;
    test_batch b = make_batch(&c, 93);
    bits_run r = make_run(&c, CLFORMER_BF16);
    clformer_session *trainer;
    assert_ok(clformer_session_create(r.model, &trainer));
    const char *writers[] = {"write_tensor", "a training step", "a broadcast"};
    for (int w = 0; w < 3; w++) {
        float *before = logits_of(r.session, &b, NULL);
        if (w == 0) {
            const char *name = "transformer.decoder.layers.0.linear1.weight";
            const size_t n = (size_t)c.d_model * (size_t)c.d_ff;
            float *v = hmalloc(n * sizeof *v);
            assert_ok(clformer_model_read_tensor(r.model, name, false, v, n));
            for (size_t i = 0; i < n; i++) v[i] = 0.75f * v[i] + 0.01f;
            assert_ok(clformer_model_write_tensor(r.model, name, v, n));
            free(v);
        } else if (w == 1) {
            clformer_step_stats st;
            assert_ok(clformer_session_train_step(trainer, &b.batch, 1e-2f, &st));
        } else {
            int calls = 0;
            const clformer_collective two = {&calls, 1, 2, fake_sum_f32, fake_sum_f64,
                                             fake_broadcast, NULL, NULL, NULL};
            assert_ok(clformer_model_set_collective(r.model, &two));
            assert_ok(clformer_model_broadcast(r.model, 0));
            assert_ok(clformer_model_set_collective(r.model, NULL));
            assert_int_equal(calls, 3);
        }
        float *after = logits_of(r.session, &b, NULL);
        clformer_session *fresh;
        assert_ok(clformer_session_create(r.model, &fresh));
        assert_ok(clformer_session_set_precision(fresh, CLFORMER_BF16));
        float *want = logits_of(fresh, &b, NULL);
        clformer_session_free(fresh);
        if (!memcmp(after, before, logits_size(r.session, &b)))
            fail_msg("after %s the logits are those from before it: the session read its "
                     "old rounded weights", writers[w]);
        assert_memory_equal(after, want, logits_size(r.session, &b));
        free(before), free(after), free(want);
    }
    clformer_session_free(trainer);
    bits_run_free(&r);
    free_batch(&b);
}

/* `clformer train --precision bf16` end to end on a tiny run (and fp16 with
 * its loss scale), and a bad value: one line naming the accepted ones. */
static void command_line(void **state)
{
    (void)state;
    char dir[64], out[16384];
    assert_true(harness_temp_dir(dir, sizeof dir, "precision_cli"));
    harness_write_reversal_corpus(dir, "train.src", "train.tgt", 16, 2, 4, 5);
    const harness_cmd cmd = {out, sizeof out, .cwd = dir};
    int rc = harness_run_clformer(&cmd, "train", "--src", "train.src", "--tgt", "train.tgt",
                                  "--steps", "1", "--precision", "fp8", NULL);
    harness_expect_run(&cmd, rc, 2, "--precision must be one of fp32|bf16|fp16, got 'fp8'");
    if (harness_is_slow()) { /* see the top of the file */
        harness_remove_tree(dir);
        return;
    }
    const char *steps = "4";
    rc = harness_run_clformer(&cmd, "train", "--src", "train.src", "--tgt", "train.tgt",
                                  "--config", "tiny", "--steps", steps, "--batch-size", "8",
                                  "--precision", "bf16", "--save", "bf16.safetensors",
                                  "--bleu-sentences", "0", NULL);
    harness_expect_run(&cmd, rc, 0, NULL);
    rc = harness_run_clformer(&cmd, "train", "--src", "train.src", "--tgt", "train.tgt",
                              "--config", "tiny", "--steps", "1", "--batch-size", "8",
                              "--precision", "fp16", "--loss-scale", "1099511627776", "--save",
                              "fp16.safetensors", "--bleu-sentences", "0", NULL);
    harness_expect_run(&cmd, rc, 0, "fp16 gradient overflow, step skipped, loss scale now");
    rc = harness_run_clformer(&cmd, "train", "--src", "train.src", "--tgt", "train.tgt",
                              "--config", "tiny", "--steps", "1", "--precision", "fp16",
                              "--loss-scale", "3", "--no-save", NULL);
    harness_expect_run(&cmd, rc, 1, "power of two");
    harness_remove_tree(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(bf16_stored_values_unfused),
        cmocka_unit_test(fp16_stored_values_unfused),
        cmocka_unit_test(bf16_stored_values_fused),
        cmocka_unit_test(losses_follow_fp32),
        cmocka_unit_test(fp16_overflow_is_skipped),
        cmocka_unit_test(resume_is_exact),
        cmocka_unit_test(api_checks),
        cmocka_unit_test(unchanged_weights_are_rounded_once),
        cmocka_unit_test(every_writer_of_the_weights_is_seen),
        cmocka_unit_test(command_line),
    };
    return harness_run_device_suite("precision", tests, sizeof tests / sizeof *tests);
}
