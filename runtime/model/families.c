/*
 * The families (family.h) by id: which one a config is, and the calls that
 * ask it for its parameters.
 */
#include "family.h"
#include "status.h"

extern const cf_family cf_family_encoder_decoder, cf_family_gpt, cf_family_llama;

const cf_family *const cf_families[] = {&cf_family_encoder_decoder, &cf_family_gpt,
                                        &cf_family_llama, NULL};

const cf_family *cf_family_of(const clformer_config *c)
{
    const clformer_family id = clformer_config_family(c);
    for (const cf_family *const *f = cf_families; *f; f++)
        if ((*f)->id == id) return *f;
    return NULL;
}

clformer_status cf_param_layout_make(const clformer_config *c, cf_param_layout *l)
{
    const cf_family *f = cf_family_of(c);
    if (!f)
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT, "model family %d is none of clformer's",
                       (int)c->family);
    return f->layout(c, l);
}

int cf_param_aliases(const clformer_config *c, const char *names[2])
{
    const cf_family *f = cf_family_of(c);
    return f ? f->aliases(c, names) : 0;
}
