/*
 * Inference: greedy and beam-search decoding with per-layer caches of the
 * keys and values of past positions (self-attention) and of the memory
 * (cross-attention), so each new token costs one position, not the prefix.
 */
#ifndef CF_DECODE_H
#define CF_DECODE_H

#include "model.h"

void cf_decoder_free(cf_model *m);
size_t cf_decoder_bytes(const cf_model *m);

#endif
