/*
 * Floating-point operation counts for `clformer bench`: every matrix product
 * the runtime enqueues (runtime/model/forward.c, backward.c, decode.c), counted as
 * 2*m*n*k from the layer shapes. Element-wise kernels, softmax, LayerNorm and
 * the optimizer are left out: they are a few FLOP per element, not per
 * weight, and counting them would blur what "achieved GFLOP/s" compares.
 *
 * With d = d_model, f = d_ff, V = tgt_vocab, Ns = B*S source rows, Nt = B*T
 * decoder rows, lin(N, i, o) = 2*N*i*o and att(Tq, Tk) = 4*B*Tq*Tk*d
 * (QK^T and PV over all heads, the causal upper triangle included since the
 * GEMM computes it):
 *
 *   forward = E * [lin(Ns,d,3d) + lin(Ns,d,d) + lin(Ns,d,f) + lin(Ns,f,d) + att(S,S)]
 *           + D * [lin(Nt,d,3d) + att(T,T) + lin(Nt,d,d)            (self-attention)
 *                  + lin(Nt,d,d) + lin(Ns,d,2d) + att(T,S) + lin(Nt,d,d)   (cross)
 *                  + lin(Nt,d,f) + lin(Nt,f,d)]                            (FFN)
 *           + lin(Nt,d,V)                                                  (generator)
 *   train step = 3 * forward
 *
 * A training step is exactly three forwards: every linear layer's backward is
 * two products of its forward's size (dX = dY W, dW += dY^T X; every layer,
 * the first included, passes dX on), and attention's backward is four of
 * the size of QK^T (dV, dP, dQ, dK) against the forward's two.
 *
 * A decoder-only model (the gpt presets) has S = 0 and no cross-attention:
 * its terms (cross above, and 2*lin(R,d,d) + 4*R*S*d below) drop out.
 *
 * Greedy translation of B sentences (R = B rows) for L decoder steps, or a
 * language model's generation for L positions:
 *   encoder forward as above (Ns = B*S)
 *   + D * lin(Ns,d,2d)                                  (cross-attention key/value caches)
 *   + sum over t = 0..L-1 of
 *       D * [lin(R,d,3d) + 4*R*(t+1)*d + 3*lin(R,d,d) + 4*R*S*d + lin(R,d,f) + lin(R,f,d)]
 *       + lin(R,d,V)
 */
#ifndef CLFORMER_BENCH_FLOPS_H
#define CLFORMER_BENCH_FLOPS_H

#include "clformer.h"

#include <stddef.h>
#include <stdint.h>

/* GEMM FLOP of one training step on B pairs, source length S, decoder length T. */
uint64_t bench_train_flop(const clformer_config *c, uint64_t B, uint64_t S, uint64_t T);

/* GEMM FLOP of greedily translating B sources of length S for L decoder steps
 * (a language model: S = 0, L positions generated). */
uint64_t bench_translate_flop(const clformer_config *c, uint64_t B, uint64_t S, uint64_t L);

#endif
