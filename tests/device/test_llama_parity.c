/*
 * The llama family against Hugging Face transformers 4.36's
 * LlamaForCausalLM (tests/data/llama, made by
 * tools/reference/llama_reference.py): each fixture's model/ directory is
 * what save_pretrained wrote, read by clformer_model_load; then, from its
 * weights, the logits of a batch (|x - x_hf| <= 1e-4, transformers in
 * float64), every gradient of the first batch's loss (the gradient rule,
 * ref_compare_grad), greedy generation from a prompt (token for token) and
 * the losses of 10 AdamW steps (relative 1e-5), and the hf-llama export of
 * the model read back (the same logits, bit for bit). The fixtures cover grouped
 * query ratios 1, 2 and n_heads, tied and untied heads, rope_theta 10,000
 * and 500,000, linear scaling and dynamic scaling past
 * max_position_embeddings. Every fixture on every device; the simulator
 * runs only the tiny one.
 */
#include "harness.h"
#include "hf_parity.h"
#include "ref_compare.h"
#include "safetensors.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Every grad.<name> of the golden file against the model's gradient. */
static void check_gradients(cf_st_reader *g, clformer_model *m, const char *name)
{
    size_t checked = 0;
    for (size_t i = 0; i < cf_st_count(g); i++) {
        const char *tn = cf_st_tensor_at(g, i)->name;
        if (strncmp(tn, "grad.", 5)) continue;
        const cf_st_tensor *t;
        float *want = hf_parity_read(g, tn, CF_ST_F32, &t);
        float *got = hmalloc(t->numel * sizeof *got);
        double *ref = hmalloc(t->numel * sizeof *ref);
        assert_ok(clformer_model_read_tensor(m, tn + 5, true, got, t->numel));
        for (size_t k = 0; k < t->numel; k++) ref[k] = want[k];
        const ref_cmp r = ref_compare_grad(got, ref, t->numel);
        if (!r.pass) print_error("%s: gradient of %s\n", name, tn + 5);
        harness_assert_cmp(r, tn, __FILE__, __LINE__);
        free(want), free(got), free(ref);
        checked++;
    }
    /* every parameter has its gradient in the file */
    assert_int_equal(checked, clformer_model_tensor_count(m));
}

/* The hf-llama export in fp32, the precision whose logits match bit for bit. */
static clformer_status export_fp32(clformer_model *m, const char *dir)
{
    return clformer_model_export_hf_llama_as(m, dir, CLFORMER_FP32);
}

static void check_fixture(const char *name)
{
    hf_fixture f;
    hf_fixture_open(&f, "llama", name);
    assert_int_equal(clformer_config_family(clformer_model_config(f.m)), CLFORMER_FAMILY_LLAMA);

    /* logits of the last batch, before any training */
    float *logits = hf_parity_logits(&f);

    /* the export read back holds the same weights (same logits, bit for bit) */
    hf_parity_export_roundtrip(&f, export_fp32, logits);

    /* the gradients of the first batch's loss, before clipping */
    const clformer_batch first = {f.B, 0, f.W, NULL, f.ids};
    double loss;
    assert_ok(clformer_session_gradients(f.s, &first, &loss));
    if (!(fabs(loss - f.want_loss[0]) <= 1e-5 * fabs(f.want_loss[0])))
        fail_msg("%s: first loss %.9f, transformers %.9f", name, loss, f.want_loss[0]);
    check_gradients(f.g, f.m, name);

    /* greedy generation, token for token, and the prompt in one pass */
    hf_parity_generate(&f);

    /* 10 AdamW steps: each step's loss (before its update) */
    hf_parity_adamw(&f);

    hf_fixture_close(&f);
    free(logits);
}

static void mha_untied(void **state)
{
    (void)state;
    if (harness_is_slow()) skip();
    check_fixture("a_mha_untied");
}

static void gqa2_tied_theta5e5(void **state)
{
    (void)state;
    if (harness_is_slow()) skip();
    check_fixture("b_gqa2_tied_theta5e5");
}

static void mqa_linear(void **state)
{
    (void)state;
    if (harness_is_slow()) skip();
    check_fixture("c_mqa_linear");
}

static void tiny_dynamic(void **state)
{
    (void)state;
    check_fixture("d_tiny_dynamic_oclgrind");
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(mha_untied),
    cmocka_unit_test(gqa2_tied_theta5e5),
    cmocka_unit_test(mqa_linear),
    cmocka_unit_test(tiny_dynamic),
};
HARNESS_DEVICE_MAIN("llama_parity", tests)
