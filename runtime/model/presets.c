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
