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

clformer_task cf_family_task(const cf_family *f)
{
    return f->source ? CLFORMER_TASK_TRANSLATION : CLFORMER_TASK_LM;
}

clformer_side cf_family_first_side(const cf_family *f)
{
    return f->source ? CLFORMER_SIDE_SOURCE : CLFORMER_SIDE_TARGET;
}

/* A model of each task, and what to do with one, for the refusals. */
static const char *const task_model[] = {
    [CLFORMER_TASK_TRANSLATION] = "a translation model (it has an encoder)",
    [CLFORMER_TASK_LM] = "a language model (decoder-only)"};
static const char *const task_instead[] = {
    [CLFORMER_TASK_TRANSLATION] = "translate with it (clformer translate, or clformer eval "
                                  "--src FILE --ref FILE)",
    [CLFORMER_TASK_LM] = "it translates nothing; continue a prompt with clformer generate "
                         "--prompt TEXT, or score it on a text with clformer eval --text FILE"};

clformer_status cf_family_check_task(const cf_family *f, clformer_task task, const char *use)
{
    const clformer_task has = cf_family_task(f);
    if (has == task) return CLFORMER_OK;
    return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT, "%s needs %s; this model is %s: %s", use,
                   task_model[task], task_model[has], task_instead[has]);
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
