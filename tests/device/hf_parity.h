/*
 * The Hugging Face parity fixtures' shared steps (tests/data/gpt2 and
 * tests/data/llama, made by tools/reference/gpt2_reference.py and
 * llama_reference.py; test_gpt2_parity and test_llama_parity): a fixture's
 * golden tensors, model and session, the logits of a batch against
 * transformers' (1e-4), the export read back, greedy generation token for
 * token (and its prompt's one-pass prefill, prefill_check.h), and the
 * losses of the AdamW steps of the golden file's optimiser (relative 1e-5).
 */
#ifndef CLFORMER_TEST_HF_PARITY_H
#define CLFORMER_TEST_HF_PARITY_H

#include "harness.h"
#include "prefill_check.h"
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

/* A fixture, tests/data/<family>/<name>/: its golden file and the tensors
 * every fixture has (`steps` + 1 batches of B rows of W token ids, the last
 * one for the logits; transformers' logits of that batch and its losses of
 * the steps; a prompt and its greedy continuation), its model/ directory
 * loaded and a session of it. */
typedef struct {
    const char *name;
    cf_st_reader *g;
    clformer_model *m;
    clformer_session *s;
    int32_t *ids, *prompt, *want_gen;
    float *want_logits;
    double *want_loss;
    size_t steps, B, W, n_logits, n_prompt, n_gen;
} hf_fixture;

/* tests/data/<family>/<name>/<file>, under CLFORMER_TEST_DATA when set. */
static inline void hf_fixture_path(char *out, size_t cap, const char *family, const char *name,
                                   const char *file)
{
    const char *root = getenv("CLFORMER_TEST_DATA");
    snprintf(out, cap, "%s/%s/%s/%s", root ? root : "tests/data", family, name, file);
}

static inline void hf_fixture_open(hf_fixture *f, const char *family, const char *name)
{
    const cf_st_tensor *ti, *tl, *tloss, *tp, *tgen;
    char path[600];
    f->name = name;
    hf_fixture_path(path, sizeof path, family, name, "golden.safetensors");
    assert_ok(cf_st_open(path, &f->g));
    f->ids = hf_parity_read(f->g, "ids", CF_ST_I32, &ti);
    f->want_logits = hf_parity_read(f->g, "logits", CF_ST_F32, &tl);
    f->want_loss = hf_parity_read(f->g, "losses", CF_ST_F64, &tloss);
    f->prompt = hf_parity_read(f->g, "prompt", CF_ST_I32, &tp);
    f->want_gen = hf_parity_read(f->g, "generated", CF_ST_I32, &tgen);
    f->steps = (size_t)ti->shape[0] - 1, f->B = (size_t)ti->shape[1], f->W = (size_t)ti->shape[2];
    assert_int_equal(tloss->numel, f->steps);
    f->n_logits = tl->numel, f->n_prompt = tp->numel, f->n_gen = tgen->numel;

    hf_fixture_path(path, sizeof path, family, name, "model");
    assert_ok(clformer_model_load(hctx(), path, &f->m));
    const size_t V = (size_t)clformer_model_config(f->m)->tgt_vocab;
    assert_int_equal(f->n_logits, f->B * (f->W - 1) * V);
    assert_ok(clformer_session_create(f->m, &f->s));
}

static inline void hf_fixture_close(hf_fixture *f)
{
    clformer_session_free(f->s);
    clformer_model_free(f->m);
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
 * the same `logits` of the last batch, bit for bit; the directory is
 * removed. */
static inline void hf_parity_export_roundtrip(const hf_fixture *f,
                                              clformer_status (*export)(clformer_model *,
                                                                        const char *),
                                              const float *logits)
{
    char dir[] = "/tmp/clformer_hf_XXXXXX", path[600];
    assert_non_null(mkdtemp(dir));
    assert_ok(export(f->m, dir));
    clformer_model *back;
    assert_ok(clformer_model_load(hctx(), dir, &back));
    clformer_session *bs;
    assert_ok(clformer_session_create(back, &bs));
    const clformer_batch last = hf_fixture_last_batch(f);
    float *again = hmalloc(f->n_logits * sizeof *again);
    assert_ok(clformer_session_logits(bs, &last, again));
    assert_memory_equal(again, logits, f->n_logits * sizeof *again);
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

/* The logits of the last batch (returned for the caller to free) within
 * 1e-4 of transformers'. */
static inline float *hf_parity_logits(const hf_fixture *f)
{
    const clformer_batch last = hf_fixture_last_batch(f);
    float *logits = hmalloc(f->n_logits * sizeof *logits);
    assert_ok(clformer_session_logits(f->s, &last, logits));
    double worst = 0;
    for (size_t i = 0; i < f->n_logits; i++)
        worst = fmax(worst, fabs(logits[i] - f->want_logits[i]));
    printf("%s: logits max |clformer - transformers| %.3g\n", f->name, worst);
    if (!(worst <= 1e-4)) fail_msg("%s: logits differ by %g > 1e-4", f->name, worst);
    return logits;
}

/* Greedy generation from the prompt, token for token transformers'; and
 * the prompt in one pass agrees with feeding it token by token. */
static inline void hf_parity_generate(const hf_fixture *f)
{
    int32_t *gen = hmalloc(f->n_gen * sizeof *gen);
    clformer_sample_options so;
    clformer_sample_options_default(&so);
    so.temperature = 0.0f;
    so.max_tokens = (int)f->n_gen;
    size_t count;
    assert_ok(clformer_session_generate(f->s, f->prompt, f->n_prompt, &so, NULL, NULL, gen,
                                        &count));
    assert_int_equal(count, f->n_gen);
    assert_memory_equal(gen, f->want_gen, f->n_gen * sizeof *gen);
    free(gen);
    prefill_check(f->s, f->prompt, f->n_prompt, 1e-5, f->name);
}

/* The golden file's AdamW on the model, then its steps on the first
 * batches: each step's loss (before its update) within 1e-5 relative of
 * transformers'. */
static inline void hf_parity_adamw(const hf_fixture *f)
{
    cf_st_reader *g = f->g;
    clformer_optim_config oc;
    clformer_optim_config_default(&oc);
    oc.optimizer = CLFORMER_ADAMW;
    oc.beta1 = (float)hf_parity_meta(g, "beta1");
    oc.beta2 = (float)hf_parity_meta(g, "beta2");
    oc.eps = (float)hf_parity_meta(g, "eps");
    oc.weight_decay = (float)hf_parity_meta(g, "weight_decay");
    oc.clip = (float)hf_parity_meta(g, "clip");
    assert_ok(clformer_model_set_optimizer(f->m, &oc));
    const float lr = (float)hf_parity_meta(g, "lr");
    double worst_rel = 0;
    for (size_t k = 0; k < f->steps; k++) {
        const clformer_batch b = {f->B, 0, f->W, NULL, f->ids + k * f->B * f->W};
        clformer_step_stats st;
        assert_ok(clformer_session_train_step(f->s, &b, lr, &st));
        const double want = f->want_loss[k], rel = fabs(st.loss - want) / fabs(want);
        worst_rel = fmax(worst_rel, rel);
        if (!(rel <= 1e-5))
            fail_msg("%s: step %zu loss %.9f, transformers %.9f (relative %.3g > 1e-5)", f->name,
                     k + 1, st.loss, want, rel);
    }
    printf("%s: %zu AdamW steps, loss max relative difference %.3g\n", f->name, f->steps,
           worst_rel);
}

#endif
