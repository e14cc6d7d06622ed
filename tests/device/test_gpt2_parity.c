/*
 * Decoder-only models against Hugging Face transformers' GPT2LMHeadModel
 * (tests/data/gpt2, made by tools/reference/gpt2_reference.py): each
 * fixture's model/ directory is what save_pretrained wrote, read by
 * clformer_model_load; then the logits of a batch (|x - x_hf| <= 1e-4,
 * transformers in float64), the losses of 10 AdamW steps (relative 1e-5),
 * greedy generation from a prompt (token for token, before training; its
 * one-pass prefill against token by token, prefill_check.h), and
 * the export of the model read back (the same weights). Every fixture on
 * every device; the simulator runs only the tiny one.
 */
#include "harness.h"
#include "hf_parity.h"
#include "prefill_check.h"
#include "safetensors.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void path_of(char *out, size_t cap, const char *name, const char *file)
{
    const char *root = getenv("CLFORMER_TEST_DATA");
    snprintf(out, cap, "%s/gpt2/%s/%s", root ? root : "tests/data", name, file);
}

static void check_fixture(const char *name)
{
    char path[600];
    path_of(path, sizeof path, name, "golden.safetensors");
    cf_st_reader *g;
    assert_ok(cf_st_open(path, &g));
    const cf_st_tensor *ti, *tl, *tloss, *tp, *tgen;
    int32_t *ids = hf_parity_read(g, "ids", CF_ST_I32, &ti);
    float *want_logits = hf_parity_read(g, "logits", CF_ST_F32, &tl);
    double *want_loss = hf_parity_read(g, "losses", CF_ST_F64, &tloss);
    int32_t *prompt = hf_parity_read(g, "prompt", CF_ST_I32, &tp);
    int32_t *want_gen = hf_parity_read(g, "generated", CF_ST_I32, &tgen);
    const size_t steps = (size_t)ti->shape[0] - 1, B = (size_t)ti->shape[1], W = (size_t)ti->shape[2];
    assert_int_equal(tloss->numel, steps);

    clformer_model *m;
    path_of(path, sizeof path, name, "model");
    assert_ok(clformer_model_load(hctx(), path, &m));
    const clformer_config *c = clformer_model_config(m);
    const size_t V = (size_t)c->tgt_vocab;
    /* a directory's clformer_vocab.json names the tokens (the tiny fixture has
     * one), else they are <id_N> */
    assert_string_equal(clformer_model_tgt_vocab(m)[5],
                        strcmp(name, "c_tiny_oclgrind") ? "<id_5>" : "<0x20>");
    assert_int_equal(tl->numel, B * (W - 1) * V);
    clformer_session *s;
    assert_ok(clformer_session_create(m, &s));

    /* logits of the last batch, before any training */
    const clformer_batch last = {B, 0, W, NULL, ids + steps * B * W};
    float *logits = hf_parity_logits(name, s, &last, want_logits, tl->numel);

    /* greedy generation, token for token */
    hf_parity_generate(s, prompt, tp->numel, want_gen, tgen->numel);
    /* the prompt in one pass agrees with feeding it token by token */
    prefill_check(s, prompt, tp->numel, 1e-5, name);

    /* the export read back holds the same weights (same logits, bit for bit) */
    char dir[] = "/tmp/clformer_hf_XXXXXX";
    assert_non_null(mkdtemp(dir));
    assert_ok(clformer_model_export_hf_gpt2(m, dir));
    clformer_model *back;
    assert_ok(clformer_model_load(hctx(), dir, &back));
    clformer_session *bs;
    assert_ok(clformer_session_create(back, &bs));
    float *again = hmalloc(tl->numel * sizeof *again);
    assert_ok(clformer_session_logits(bs, &last, again));
    assert_memory_equal(again, logits, tl->numel * sizeof *again);
    clformer_session_free(bs);
    clformer_model_free(back);
    const char *files[3] = {"model.safetensors", "config.json", "clformer_vocab.json"};
    for (int i = 0; i < 3; i++) {
        harness_path(path, sizeof path, dir, files[i]);
        unlink(path);
    }
    rmdir(dir);

    /* 10 AdamW steps: each step's loss (before its update) */
    hf_parity_adamw(name, g, m, s, ids, B, W, steps, want_loss);

    clformer_session_free(s);
    clformer_model_free(m);
    cf_st_close(g);
    free(ids), free(want_logits), free(want_loss), free(prompt), free(want_gen);
    free(logits), free(again);
}

static void small(void **state)
{
    (void)state;
    if (harness_is_slow()) skip();
    check_fixture("a_small");
}

static void inner_width(void **state)
{
    (void)state;
    if (harness_is_slow()) skip();
    check_fixture("b_inner");
}

static void tiny(void **state)
{
    (void)state;
    check_fixture("c_tiny_oclgrind");
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(small),
    cmocka_unit_test(inner_width),
    cmocka_unit_test(tiny),
};
HARNESS_DEVICE_MAIN("gpt2_parity", tests)
