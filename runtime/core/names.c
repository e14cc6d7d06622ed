/*
 * The one spelling of each configuration choice (clformer.h): the CLI's
 * options, the logs and the checkpoint JSON (runtime/model/config.c) all go
 * through these tables. In core because every layer names them: the ops
 * check an activation, the model writes checkpoints, the reference shares
 * the enum.
 */
#include "names.h"
#include "status.h"

#include <string.h>

/* The parse functions below start their index at 0 although this sets it
 * whenever it returns CLFORMER_OK: GCC's Release build cannot see that and
 * warns (-Wmaybe-uninitialized). */
clformer_status cf_parse_word(const char *what, const char *const *names, int n,
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

/* indexed by clformer_activation */
static const char *const activation_names[] = {"relu", "gelu", "gelu_tanh", "silu"};

const char *clformer_activation_name(clformer_activation a)
{
    return (int)a >= 0 && (int)a < CF_COUNT(activation_names) ? activation_names[a] : NULL;
}

clformer_status clformer_activation_parse(const char *word, clformer_activation *out)
{
    int i = 0;
    CF_TRY(cf_parse_word("activation", activation_names, CF_COUNT(activation_names), word, &i));
    *out = (clformer_activation)i;
    return CLFORMER_OK;
}

/* indexed by clformer_positional */
static const char *const positional_names[] = {"sinusoidal", "learned", "rope"};

const char *clformer_positional_name(clformer_positional p)
{
    return (int)p >= 0 && (int)p < CF_COUNT(positional_names) ? positional_names[p] : NULL;
}

clformer_status clformer_positional_parse(const char *word, clformer_positional *out)
{
    int i = 0;
    CF_TRY(cf_parse_word("positional encoding", positional_names, CF_COUNT(positional_names), word, &i));
    *out = (clformer_positional)i;
    return CLFORMER_OK;
}

/* index 1: norm_first */
static const char *const norm_names[] = {"post", "pre"};

const char *clformer_norm_name(bool norm_first) { return norm_names[norm_first ? 1 : 0]; }

clformer_status clformer_norm_parse(const char *word, bool *norm_first)
{
    int i = 0;
    CF_TRY(cf_parse_word("norm placement", norm_names, CF_COUNT(norm_names), word, &i));
    *norm_first = i == 1;
    return CLFORMER_OK;
}


/* indexed by clformer_family */
static const char *const family_names[] = {"encoder-decoder", "gpt", "llama"};

const char *clformer_family_name(clformer_family f)
{
    return (int)f >= 0 && (int)f < CF_COUNT(family_names) ? family_names[f] : NULL;
}

clformer_status clformer_family_parse(const char *word, clformer_family *out)
{
    int i = 0;
    CF_TRY(cf_parse_word("model family", family_names, CF_COUNT(family_names), word, &i));
    *out = (clformer_family)i;
    return CLFORMER_OK;
}

/* indexed by clformer_rope_scaling */
static const char *const rope_scaling_names[] = {"none", "linear", "dynamic"};

const char *clformer_rope_scaling_name(clformer_rope_scaling r)
{
    return (int)r >= 0 && (int)r < CF_COUNT(rope_scaling_names) ? rope_scaling_names[r] : NULL;
}

clformer_status clformer_rope_scaling_parse(const char *word, clformer_rope_scaling *out)
{
    int i = 0;
    CF_TRY(cf_parse_word("rope scaling", rope_scaling_names, CF_COUNT(rope_scaling_names), word,
                         &i));
    *out = (clformer_rope_scaling)i;
    return CLFORMER_OK;
}

/* indexed by clformer_precision */
static const char *const precision_names[] = {"fp32", "bf16", "fp16"};

const char *clformer_precision_name(clformer_precision d)
{
    return (int)d >= 0 && (int)d < CF_COUNT(precision_names) ? precision_names[d] : NULL;
}

clformer_status clformer_precision_parse(const char *word, clformer_precision *out)
{
    int i = 0;
    CF_TRY(cf_parse_word("precision", precision_names, CF_COUNT(precision_names), word, &i));
    *out = (clformer_precision)i;
    return CLFORMER_OK;
}
