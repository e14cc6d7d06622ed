/* GEMM FLOP counts of a training step and a greedy translation (formulas in
 * bench_flops.h). */
#include "bench_flops.h"

/* One linear layer's forward product: (N, i) x (i, o). */
static uint64_t lin(uint64_t N, uint64_t i, uint64_t o) { return 2 * N * i * o; }

/* Attention's two forward products QK^T and PV over all heads (H * dh = d). */
static uint64_t att(uint64_t B, uint64_t Tq, uint64_t Tk, uint64_t d) { return 4 * B * Tq * Tk * d; }

static uint64_t encoder_forward(const clformer_config *c, uint64_t B, uint64_t S)
{
    const uint64_t d = (uint64_t)c->d_model, f = (uint64_t)c->d_ff, Ns = B * S;
    const uint64_t layer = lin(Ns, d, 3 * d) + att(B, S, S, d) + lin(Ns, d, d) + lin(Ns, d, f) +
                           lin(Ns, f, d);
    return (uint64_t)c->n_enc_layers * layer;
}

uint64_t bench_train_flop(const clformer_config *c, uint64_t B, uint64_t S, uint64_t T)
{
    const uint64_t d = (uint64_t)c->d_model, f = (uint64_t)c->d_ff, V = (uint64_t)c->tgt_vocab;
    const uint64_t Ns = B * S, Nt = B * T;
    const uint64_t self = lin(Nt, d, 3 * d) + att(B, T, T, d) + lin(Nt, d, d);
    /* a decoder-only model (a language model) has no cross-attention */
    const uint64_t cross = clformer_config_decoder_only(c)
                               ? 0
                               : lin(Nt, d, d) + lin(Ns, d, 2 * d) + att(B, T, S, d) + lin(Nt, d, d);
    const uint64_t ffn = lin(Nt, d, f) + lin(Nt, f, d);
    const uint64_t forward = encoder_forward(c, B, S) +
                             (uint64_t)c->n_dec_layers * (self + cross + ffn) + lin(Nt, d, V);
    return 3 * forward;
}

uint64_t bench_translate_flop(const clformer_config *c, uint64_t B, uint64_t S, uint64_t L)
{
    const uint64_t d = (uint64_t)c->d_model, f = (uint64_t)c->d_ff, V = (uint64_t)c->tgt_vocab;
    const uint64_t D = (uint64_t)c->n_dec_layers, R = B;
    uint64_t total = encoder_forward(c, B, S) + D * lin(B * S, d, 2 * d);
    const uint64_t cross = clformer_config_decoder_only(c) ? 0 : 2 * lin(R, d, d) + 4 * R * S * d;
    for (uint64_t t = 0; t < L; t++) {
        const uint64_t layer = lin(R, d, 3 * d) + 4 * R * (t + 1) * d + lin(R, d, d) + cross +
                               lin(R, d, f) + lin(R, f, d);
        total += D * layer + lin(R, d, V);
    }
    return total;
}
