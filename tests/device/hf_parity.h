/*
 * The Hugging Face parity fixtures' shared steps (tests/data/gpt2 and
 * tests/data/llama, made by tools/reference/gpt2_reference.py and
 * llama_reference.py; test_gpt2_parity and test_llama_parity): a golden
 * file's tensors and optimiser, the logits of a batch against
 * transformers' (1e-4), the export read back, greedy generation token for
 * token, and the losses of the AdamW steps (relative 1e-5).
 */
#ifndef CLFORMER_TEST_HF_PARITY_H
#define CLFORMER_TEST_HF_PARITY_H

#include "harness.h"
#include "safetensors.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

/* The golden file's tensor `name` of `dtype` (the caller frees it). */
static inline void *hf_parity_read(cf_st_reader *r, const char *name, cf_st_dtype dtype,
                                   const cf_st_tensor **t)
{
    *t = cf_st_find(r, name);
    if (!*t) fail_msg("golden file lacks tensor %s", name);
    assert_int_equal((*t)->dtype, dtype);
    void *p = hmalloc((*t)->nbytes ? (*t)->nbytes : 1);
    assert_ok(cf_st_read(r, *t, p, (*t)->nbytes));
    return p;
}

static inline double hf_parity_meta(cf_st_reader *r, const char *key)
{
    const char *v = cf_st_metadata(r, key);
    if (!v) fail_msg("golden file lacks metadata %s", key);
    return strtod(v, NULL);
}

/* A golden file and the tensors every fixture has: `steps` + 1 batches of
 * B rows of W token ids (the last one for the logits), transformers'
 * logits of that batch and its losses of the steps, a prompt and its greedy
 * continuation. */
typedef struct {
    cf_st_reader *g;
    int32_t *ids, *prompt, *want_gen;
    float *want_logits;
    double *want_loss;
    size_t steps, B, W, n_logits, n_prompt, n_gen;
} hf_fixture;

static inline void hf_fixture_open(hf_fixture *f, const char *path)
{
    const cf_st_tensor *ti, *tl, *tloss, *tp, *tgen;
    assert_ok(cf_st_open(path, &f->g));
    f->ids = hf_parity_read(f->g, "ids", CF_ST_I32, &ti);
    f->want_logits = hf_parity_read(f->g, "logits", CF_ST_F32, &tl);
    f->want_loss = hf_parity_read(f->g, "losses", CF_ST_F64, &tloss);
    f->prompt = hf_parity_read(f->g, "prompt", CF_ST_I32, &tp);
    f->want_gen = hf_parity_read(f->g, "generated", CF_ST_I32, &tgen);
    f->steps = (size_t)ti->shape[0] - 1, f->B = (size_t)ti->shape[1], f->W = (size_t)ti->shape[2];
    assert_int_equal(tloss->numel, f->steps);
    f->n_logits = tl->numel, f->n_prompt = tp->numel, f->n_gen = tgen->numel;
}

static inline void hf_fixture_close(hf_fixture *f)
{
    cf_st_close(f->g);
    free(f->ids), free(f->want_logits), free(f->want_loss), free(f->prompt), free(f->want_gen);
}

/* The last batch of the fixture, the one its logits are of. */
static inline clformer_batch hf_fixture_last_batch(const hf_fixture *f)
{
    const clformer_batch b = {f->B, 0, f->W, NULL, f->ids + f->steps * f->B * f->W};
    return b;
}

/* The model written by `export` into a new directory and read back gives
 * the same `logits` of `batch`, bit for bit; the directory is removed. */
static inline void hf_parity_export_roundtrip(clformer_model *m,
                                              clformer_status (*export)(clformer_model *,
                                                                        const char *),
                                              const clformer_batch *batch, const float *logits,
                                              size_t n)
{
    char dir[] = "/tmp/clformer_hf_XXXXXX", path[600];
    assert_non_null(mkdtemp(dir));
    assert_ok(export(m, dir));
    clformer_model *back;
    assert_ok(clformer_model_load(hctx(), dir, &back));
    clformer_session *bs;
    assert_ok(clformer_session_create(back, &bs));
    float *again = hmalloc(n * sizeof *again);
    assert_ok(clformer_session_logits(bs, batch, again));
    assert_memory_equal(again, logits, n * sizeof *again);
    clformer_session_free(bs);
    clformer_model_free(back);
    free(again);
    const char *files[3] = {"model.safetensors", "config.json", "clformer_vocab.json"};
    for (int i = 0; i < 3; i++) {
        harness_path(path, sizeof path, dir, files[i]);
        unlink(path);
    }
    rmdir(dir);
}

/* The logits of `batch` (n values, returned for the caller to free) within
 * 1e-4 of transformers'. */
static inline float *hf_parity_logits(const char *name, clformer_session *s,
                                      const clformer_batch *batch, const float *want, size_t n)
{
    float *logits = hmalloc(n * sizeof *logits);
    assert_ok(clformer_session_logits(s, batch, logits));
    double worst = 0;
    for (size_t i = 0; i < n; i++) worst = fmax(worst, fabs(logits[i] - want[i]));
    printf("%s: logits max |clformer - transformers| %.3g\n", name, worst);
    if (!(worst <= 1e-4)) fail_msg("%s: logits differ by %g > 1e-4", name, worst);
    return logits;
}

/* Greedy generation from `prompt`, token for token transformers' `want`. */
static inline void hf_parity_generate(clformer_session *s, const int32_t *prompt, size_t n_prompt,
                                      const int32_t *want, size_t n)
{
    int32_t *gen = hmalloc(n * sizeof *gen);
    clformer_sample_options so;
    clformer_sample_options_default(&so);
    so.temperature = 0.0f;
    so.max_tokens = (int)n;
    size_t count;
    assert_ok(clformer_session_generate(s, prompt, n_prompt, &so, NULL, NULL, gen, &count));
    assert_int_equal(count, n);
    assert_memory_equal(gen, want, n * sizeof *gen);
    free(gen);
}

/* The golden file's AdamW on the model, then `steps` steps on batches
 * ids[k] (B rows of W tokens): each step's loss (before its update) within
 * 1e-5 relative of transformers' want_loss[k]. */
static inline void hf_parity_adamw(const char *name, cf_st_reader *g, clformer_model *m,
                                   clformer_session *s, const int32_t *ids, size_t B, size_t W,
                                   size_t steps, const double *want_loss)
{
    clformer_optim_config oc;
    clformer_optim_config_default(&oc);
    oc.optimizer = CLFORMER_ADAMW;
    oc.beta1 = (float)hf_parity_meta(g, "beta1");
    oc.beta2 = (float)hf_parity_meta(g, "beta2");
    oc.eps = (float)hf_parity_meta(g, "eps");
    oc.weight_decay = (float)hf_parity_meta(g, "weight_decay");
    oc.clip = (float)hf_parity_meta(g, "clip");
    assert_ok(clformer_model_set_optimizer(m, &oc));
    const float lr = (float)hf_parity_meta(g, "lr");
    double worst_rel = 0;
    for (size_t k = 0; k < steps; k++) {
        const clformer_batch b = {B, 0, W, NULL, ids + k * B * W};
        clformer_step_stats st;
        assert_ok(clformer_session_train_step(s, &b, lr, &st));
        const double rel = fabs(st.loss - want_loss[k]) / fabs(want_loss[k]);
        worst_rel = fmax(worst_rel, rel);
        if (!(rel <= 1e-5))
            fail_msg("%s: step %zu loss %.9f, transformers %.9f (relative %.3g > 1e-5)", name,
                     k + 1, st.loss, want_loss[k], rel);
    }
    printf("%s: %zu AdamW steps, loss max relative difference %.3g\n", name, steps, worst_rel);
}

#endif
