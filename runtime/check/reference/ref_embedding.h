/*
 * Double-precision reference of the token embedding with positions
 * (runtime/ops/ops.h, cf_embedding_*). Same argument order as the device ops,
 * except that the backward takes the token ids instead of the device index.
 */
#ifndef REF_EMBEDDING_H
#define REF_EMBEDDING_H

#include <stddef.h>
#include <stdint.h>

#include "ref_philox.h"

/* The sinusoidal position table entry P[pos, c] for width C:
 * sin(pos / 10000^(2i/C)) for c = 2i, cos(same argument) for c = 2i+1. */
double ref_sinusoid(size_t pos, size_t c, size_t C);

/* out (B,T,C) = dropout(table[tokens[b,t],:] * scale + P[t,:]); P sinusoidal
 * when pos_table is NULL, else pos_table (at least T rows of C). Ids must be
 * valid rows of table. */
void ref_embedding_forward(double *out, const int32_t *tokens, const double *table,
                           const double *pos_table, size_t B, size_t T, size_t C, double scale,
                           const ref_dropout *dropout);

/* dtable[id,:] += scale * sum over positions of id of g; dpos_table[t,:] +=
 * sum over b of g[b,t,:] (skipped when NULL); g = dropout_mask(dout). */
void ref_embedding_backward(double *dtable, double *dpos_table, const double *dout,
                            const int32_t *tokens, size_t B, size_t T, size_t C, double scale,
                            const ref_dropout *dropout);

#endif
