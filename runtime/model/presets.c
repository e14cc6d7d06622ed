/*
 * The model-size presets (clformer_config_preset): the one table of them,
 * used by train --config and bench --config, and printed by `clformer presets
 * --json` into tools/reference/presets.json for the PyTorch baseline.
 */
#include "clformer.h"
#include "names.h"
#include "status.h"

/* The model sizes: tiny for tests and demos, small for a laptop, and the
 * paper's base (docs/MODEL.md). */
static const struct {
    const char *name;
    int d_model, n_heads, d_ff, n_enc_layers, n_dec_layers;
} presets[] = {
    {"tiny", 64, 4, 256, 2, 2},
    {"small", 256, 4, 1024, 3, 3},
    {"base", 512, 8, 2048, 6, 6},
};

/* presets[]'s names in its order, NULL-terminated (clformer_config_presets) */
static const char *const preset_names[] = {"tiny", "small", "base", NULL};
_Static_assert(CF_COUNT(preset_names) == CF_COUNT(presets) + 1, "a name for every preset");

const char *const *clformer_config_presets(void) { return preset_names; }

clformer_status clformer_config_preset(const char *name, clformer_config *c)
{
    int i;
    CF_TRY(cf_parse_word("model preset", preset_names, CF_COUNT(presets), name, &i));
    c->d_model = presets[i].d_model;
    c->n_heads = presets[i].n_heads;
    c->d_ff = presets[i].d_ff;
    c->n_enc_layers = presets[i].n_enc_layers;
    c->n_dec_layers = presets[i].n_dec_layers;
    return CLFORMER_OK;
}

/* The language-model presets (train --task lm), GPT-2's layout: decoder-only,
 * pre-norm with a final LayerNorm, learned positions, tied embeddings, tanh
 * GELU, no embedding scale, no lm_head bias. gpt-mini is nanoGPT's CPU run,
 * gpt-char its shakespeare_char config, gpt2 the 124M model. A table of their
 * own: the translation presets above are what bench and presets.json cover. */
static const struct {
    const char *name;
    int d_model, n_heads, n_layers, context;
    float dropout;
} lm_presets[] = {
    {"gpt-mini", 128, 4, 4, 64, 0.0f},
    {"gpt-char", 384, 6, 6, 256, 0.2f},
    {"gpt2", 768, 12, 12, 1024, 0.0f},
};
static const char *const lm_preset_names[] = {"gpt-mini", "gpt-char", "gpt2", NULL};
_Static_assert(CF_COUNT(lm_preset_names) == CF_COUNT(lm_presets) + 1, "a name for every preset");

const char *const *clformer_config_lm_presets(void) { return lm_preset_names; }

clformer_status clformer_config_lm_preset(const char *name, clformer_config *c)
{
    int i;
    CF_TRY(cf_parse_word("language-model preset", lm_preset_names, CF_COUNT(lm_presets), name, &i));
    c->d_model = lm_presets[i].d_model;
    c->n_heads = lm_presets[i].n_heads;
    c->d_ff = 4 * lm_presets[i].d_model;
    c->n_enc_layers = 0;
    c->n_dec_layers = lm_presets[i].n_layers;
    c->max_len = lm_presets[i].context;
    c->dropout = lm_presets[i].dropout;
    c->src_vocab = 0;
    c->norm_first = true;
    c->positional = CLFORMER_POS_LEARNED;
    c->activation = CLFORMER_ACT_GELU_TANH;
    c->share_tgt_embed = true;
    c->scale_embed = false;
    c->generator_bias = false;
    return CLFORMER_OK;
}
