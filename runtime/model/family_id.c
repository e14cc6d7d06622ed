/*
 * The family a config is (clformer_config_family): a config without the
 * family field (older files, the translation presets' defaults) is told by
 * its layers, no encoder being a GPT. Its own file: the families call it
 * for their messages, and families.c calls the families.
 */
#include "family.h"

clformer_family clformer_config_family(const clformer_config *c)
{
    return c->family == CLFORMER_FAMILY_ENCODER_DECODER && c->n_enc_layers == 0
               ? CLFORMER_FAMILY_GPT
               : c->family;
}
