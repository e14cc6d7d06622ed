/*
 * The model configuration's derived facts (config.c): the dropout rate of
 * each kind of place in the model.
 */
#ifndef CF_CONFIG_H
#define CF_CONFIG_H

#include "clformer.h"

typedef enum {
    CF_DROPOUT_RESIDUAL,   /* embeddings and sublayer outputs: `dropout` */
    CF_DROPOUT_ATTENTION,  /* attention probabilities: attention_dropout */
    CF_DROPOUT_ACTIVATION  /* the feed-forward activation: activation_dropout */
} cf_dropout_kind;

/* The rate of one kind (attention_dropout and activation_dropout below 0
 * mean `dropout`). */
float cf_config_dropout_of(const clformer_config *c, cf_dropout_kind kind);

/* True when any kind has a rate above 0. */
bool cf_config_any_dropout(const clformer_config *c);

#endif
