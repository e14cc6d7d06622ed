/*
 * The one spelling of each configuration choice and of the model-size
 * presets (clformer.h): the CLI's options, the logs, the checkpoint JSON
 * (config.c) and the PyTorch reference (tools/reference/presets.json,
 * written by `clformer presets --json`) all go through these tables.
 */
#include "clformer.h"
#include "status.h"

#include <string.h>

/* Looks `word` up in names[0..n); CLFORMER_ERR_INVALID_ARGUMENT naming the
 * allowed words otherwise. */
static clformer_status parse(const char *what, const char *const *names, int n,
                             const char *word, int *out)
{
    for (int i = 0; i < n && word; i++)
        if (!strcmp(word, names[i])) {
            *out = i;
            return CLFORMER_OK;
        }
    char allowed[128] = "";
    for (int i = 0; i < n; i++) {
        strncat(allowed, i ? (i + 1 == n ? " or " : ", ") : "",
                sizeof allowed - strlen(allowed) - 1);
        strncat(allowed, names[i], sizeof allowed - strlen(allowed) - 1);
    }
    return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT, "unknown %s '%s': use %s", what,
                   word ? word : "(none)", allowed);
}

#define COUNT(a) ((int)(sizeof(a) / sizeof *(a)))

/* indexed by clformer_activation */
static const char *const activation_names[] = {"relu", "gelu"};

const char *clformer_activation_name(clformer_activation a)
{
    return (int)a >= 0 && (int)a < COUNT(activation_names) ? activation_names[a] : NULL;
}

clformer_status clformer_activation_parse(const char *word, clformer_activation *out)
{
    int i;
    CF_TRY(parse("activation", activation_names, COUNT(activation_names), word, &i));
    *out = (clformer_activation)i;
    return CLFORMER_OK;
}

/* indexed by clformer_positional */
static const char *const positional_names[] = {"sinusoidal", "learned"};

const char *clformer_positional_name(clformer_positional p)
{
    return (int)p >= 0 && (int)p < COUNT(positional_names) ? positional_names[p] : NULL;
}

clformer_status clformer_positional_parse(const char *word, clformer_positional *out)
{
    int i;
    CF_TRY(parse("positional encoding", positional_names, COUNT(positional_names), word, &i));
    *out = (clformer_positional)i;
    return CLFORMER_OK;
}

/* index 1: norm_first */
static const char *const norm_names[] = {"post", "pre"};

const char *clformer_norm_name(bool norm_first) { return norm_names[norm_first ? 1 : 0]; }

clformer_status clformer_norm_parse(const char *word, bool *norm_first)
{
    int i;
    CF_TRY(parse("norm placement", norm_names, COUNT(norm_names), word, &i));
    *norm_first = i == 1;
    return CLFORMER_OK;
}

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

static const char *const preset_names[] = {"tiny", "small", "base", NULL};

const char *const *clformer_config_presets(void) { return preset_names; }

clformer_status clformer_config_preset(const char *name, clformer_config *c)
{
    int i;
    CF_TRY(parse("model preset", preset_names, COUNT(presets), name, &i));
    c->d_model = presets[i].d_model;
    c->n_heads = presets[i].n_heads;
    c->d_ff = presets[i].d_ff;
    c->n_enc_layers = presets[i].n_enc_layers;
    c->n_dec_layers = presets[i].n_dec_layers;
    return CLFORMER_OK;
}
