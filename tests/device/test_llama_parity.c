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
#include "prefill_check.h"
#include "ref_compare.h"
#include "safetensors.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void path_of(char *out, size_t cap, const char *name, const char *file)
{
    const char *root = getenv("CLFORMER_TEST_DATA");
    snprintf(out, cap, "%s/llama/%s/%s", root ? root : "tests/data", name, file);
}

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
    assert_int_equal(clformer_config_family(c), CLFORMER_FAMILY_LLAMA);
    const size_t V = (size_t)c->tgt_vocab;
    assert_int_equal(tl->numel, B * (W - 1) * V);
    clformer_session *s;
    assert_ok(clformer_session_create(m, &s));

    /* logits of the last batch, before any training */
    const clformer_batch last = {B, 0, W, NULL, ids + steps * B * W};
    float *logits = hf_parity_logits(name, s, &last, want_logits, tl->numel);

    /* the export read back holds the same weights (same logits, bit for bit) */
    char dir[] = "/tmp/clformer_hf_llama_XXXXXX";
    assert_non_null(mkdtemp(dir));
    assert_ok(clformer_model_export_hf_llama_as(m, dir, CLFORMER_FP32));
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

    /* the gradients of the first batch's loss, before clipping */
    const clformer_batch first = {B, 0, W, NULL, ids};
    double loss;
    assert_ok(clformer_session_gradients(s, &first, &loss));
    if (!(fabs(loss - want_loss[0]) <= 1e-5 * fabs(want_loss[0])))
        fail_msg("%s: first loss %.9f, transformers %.9f", name, loss, want_loss[0]);
    check_gradients(g, m, name);

    /* greedy generation, token for token; the prompt in one pass agrees
     * with feeding it token by token */
    hf_parity_generate(s, prompt, tp->numel, want_gen, tgen->numel);
    prefill_check(s, prompt, tp->numel, 1e-5, name);

    /* 10 AdamW steps: each step's loss (before its update) */
    hf_parity_adamw(name, g, m, s, ids, B, W, steps, want_loss);

    clformer_session_free(s);
    clformer_model_free(m);
    cf_st_close(g);
    free(ids), free(want_logits), free(want_loss), free(prompt), free(want_gen);
    free(logits), free(again);
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
