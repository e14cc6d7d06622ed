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
    hf_fixture f;
    hf_fixture_open(&f, path);

    clformer_model *m;
    path_of(path, sizeof path, name, "model");
    assert_ok(clformer_model_load(hctx(), path, &m));
    const clformer_config *c = clformer_model_config(m);
    const size_t V = (size_t)c->tgt_vocab;
    /* a directory's clformer_vocab.json names the tokens (the tiny fixture has
     * one), else they are <id_N> */
    assert_string_equal(clformer_model_tgt_vocab(m)[5],
                        strcmp(name, "c_tiny_oclgrind") ? "<id_5>" : "<0x20>");
    assert_int_equal(f.n_logits, f.B * (f.W - 1) * V);
    clformer_session *s;
    assert_ok(clformer_session_create(m, &s));

    /* logits of the last batch, before any training */
    const clformer_batch last = hf_fixture_last_batch(&f);
    float *logits = hf_parity_logits(name, s, &last, f.want_logits, f.n_logits);

    /* greedy generation, token for token */
    hf_parity_generate(s, f.prompt, f.n_prompt, f.want_gen, f.n_gen);
    /* the prompt in one pass agrees with feeding it token by token */
    prefill_check(s, f.prompt, f.n_prompt, 1e-5, name);

    /* the export read back holds the same weights (same logits, bit for bit) */
    hf_parity_export_roundtrip(m, clformer_model_export_hf_gpt2, &last, logits, f.n_logits);

    /* 10 AdamW steps: each step's loss (before its update) */
    hf_parity_adamw(name, f.g, m, s, f.ids, f.B, f.W, f.steps, f.want_loss);

    clformer_session_free(s);
    clformer_model_free(m);
    hf_fixture_close(&f);
    free(logits);
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
