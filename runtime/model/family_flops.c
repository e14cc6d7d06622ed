/*
 * Floating-point operations of a config's model (clformer_config_train_flop,
 * clformer_config_decode_flop; `clformer bench` reports them): every matrix
 * product the graph enqueues (forward.c, backward.c, the session's
 * decoding), counted as 2*m*n*k from the shapes of the blocks its family
 * runs (family.h). Element-wise kernels, softmax, the norms and the
 * optimizer are left out: they are a few FLOP per element, not per weight,
 * and counting them would blur what "achieved GFLOP/s" compares.
 *
 * With d = d_model, f = d_ff, V = tgt_vocab, k = the key/value width
 * (key/value heads x d / n_heads: d without grouped-query attention), g = 2
 * for a gated feed-forward (SwiGLU's gate and up) else 1, Ns = B*S source
 * rows, Nt = B*T decoder rows, lin(N, i, o) = 2*N*i*o and att(Tq, Tk) =
 * 4*B*Tq*Tk*d (QK^T and PV over all query heads, the causal upper triangle
 * included since the GEMM computes it):
 *
 *   forward = E * [lin(Ns,d,d+2k) + att(S,S) + lin(Ns,d,d) + g*lin(Ns,d,f) + lin(Ns,f,d)]
 *           + D * [lin(Nt,d,d+2k) + att(T,T) + lin(Nt,d,d)              (self-attention)
 *                  + lin(Nt,d,d) + lin(Ns,d,2d) + att(T,S) + lin(Nt,d,d)  (cross, with an encoder)
 *                  + g*lin(Nt,d,f) + lin(Nt,f,d)]                          (feed-forward)
 *           + lin(Nt,d,V)                                                  (generator)
 *   train step = 3 * forward
 *
 * A training step is exactly three forwards: every linear layer's backward is
 * two products of its forward's size (dX = dY W, dW += dY^T X; every layer,
 * the first included, passes dX on), and attention's backward is four of
 * the size of QK^T (dV, dP, dQ, dK) against the forward's two.
 *
 * Greedy decoding of B rows (R = B) for L decoder steps after sources of S
 * tokens (a decoder-only model: S = 0, L positions generated):
 *   encoder forward as above (Ns = B*S)
 *   + D * lin(Ns,d,2d)                          (cross-attention key/value caches)
 *   + sum over t = 0..L-1 of
 *       D * [lin(R,d,d+2k) + 4*R*(t+1)*d + lin(R,d,d)
 *            + 2*lin(R,d,d) + 4*R*S*d         (cross, with an encoder)
 *            + g*lin(R,d,f) + lin(R,f,d)]
 *       + lin(R,d,V)
 */
#include "family.h"

/* One linear layer's forward product: (N, i) x (i, o). */
static uint64_t lin(uint64_t N, uint64_t i, uint64_t o) { return 2 * N * i * o; }

/* The widths of a config's blocks, from its family. */
typedef struct {
    uint64_t d, f, V, kv, gates, E, D;
    bool encoder;
} widths;

static bool widths_of(const clformer_config *c, widths *w)
{
    const cf_family *family = cf_family_of(c);
    if (!family || c->n_heads <= 0) return false;
    const cf_blocks blocks = family->blocks(c);
    const uint64_t d = (uint64_t)c->d_model;
    *w = (widths){d, (uint64_t)c->d_ff, (uint64_t)c->tgt_vocab,
                  blocks.kv_heads * (d / (uint64_t)c->n_heads), blocks.gated ? 2 : 1,
                  (uint64_t)c->n_enc_layers, (uint64_t)c->n_dec_layers, blocks.encoder};
    return true;
}

/* A block's self-attention projections and feed-forward on N rows. */
static uint64_t projections(const widths *w, uint64_t N)
{
    return lin(N, w->d, w->d + 2 * w->kv) + lin(N, w->d, w->d) + w->gates * lin(N, w->d, w->f) +
           lin(N, w->f, w->d);
}

static uint64_t encoder_forward(const widths *w, uint64_t B, uint64_t S)
{
    return w->E * (projections(w, B * S) + 4 * B * S * S * w->d);
}

uint64_t clformer_config_train_flop(const clformer_config *c, uint64_t B, uint64_t S, uint64_t T)
{
    widths w;
    if (!widths_of(c, &w)) return 0;
    const uint64_t d = w.d, Nt = B * T;
    const uint64_t cross = w.encoder ? lin(Nt, d, d) + lin(B * S, d, 2 * d) +
                                           4 * B * T * S * d + lin(Nt, d, d)
                                     : 0;
    const uint64_t layer = projections(&w, Nt) + 4 * B * T * T * d + cross;
    return 3 * (encoder_forward(&w, B, S) + w.D * layer + lin(Nt, d, w.V));
}

uint64_t clformer_config_decode_flop(const clformer_config *c, uint64_t B, uint64_t S, uint64_t L)
{
    widths w;
    if (!widths_of(c, &w)) return 0;
    const uint64_t d = w.d, R = B;
    const uint64_t cross = w.encoder ? 2 * lin(R, d, d) + 4 * R * S * d : 0;
    uint64_t total = encoder_forward(&w, B, S) + (w.encoder ? w.D * lin(B * S, d, 2 * d) : 0);
    for (uint64_t t = 0; t < L; t++)
        total += w.D * (projections(&w, R) + 4 * R * (t + 1) * d + cross) + lin(R, d, w.V);
    return total;
}
