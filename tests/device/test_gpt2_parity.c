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

#include <stdlib.h>
#include <string.h>

static void check_fixture(const char *name)
{
    hf_fixture f;
    hf_fixture_open(&f, "gpt2", name);
    /* a directory's clformer_vocab.json names the tokens (the tiny fixture has
     * one), else they are <id_N> */
    assert_string_equal(clformer_model_tgt_vocab(f.m)[5],
                        strcmp(name, "c_tiny_oclgrind") ? "<id_5>" : "<0x20>");

    /* logits of the last batch, before any training */
    float *logits = hf_parity_logits(&f);

    /* greedy generation, token for token, and the prompt in one pass */
    hf_parity_generate(&f);

    /* the export read back holds the same weights (same logits, bit for bit) */
    hf_parity_export_roundtrip(&f, clformer_model_export_hf_gpt2, logits);

    /* 10 AdamW steps: each step's loss (before its update) */
    hf_parity_adamw(&f);

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
