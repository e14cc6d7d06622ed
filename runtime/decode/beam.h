/*
 * Beam search (internal) over decoding's caches (decode.h): on the host
 * (beam.c) or on the device (beam_device.c).
 */
#ifndef CF_BEAM_H
#define CF_BEAM_H

#include "decode.h"

/* Beam search of K hypotheses per sentence over `batch` sentences, each
 * repeated K times in the caches, after cf_decode_start: on the host, which
 * reads every step's log-probabilities (beam.c), or on the device, which
 * needs fp64 (beam_device.c). Both give the same hypotheses; out->tokens
 * and out->lengths (batch x L, batch) receive the best of each sentence. */
clformer_status cf_beam_search_host(cf_session *s, size_t batch, size_t K, size_t L,
                                    float penalty, clformer_translation *out);
clformer_status cf_beam_search_device(cf_session *s, size_t batch, size_t K, size_t L,
                                      float penalty, clformer_translation *out);

#endif
