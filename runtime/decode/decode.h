/*
 * Decoding (internal): a session's caches of the keys and values of past
 * positions (self-attention) and of the memory (cross-attention), so each
 * new token costs one position, not the prefix. decode.c runs the steps and
 * greedy search, beam.c the beam search.
 */
#ifndef CF_DECODE_H
#define CF_DECODE_H

#include "session.h"

/* The caches and scratch of decoding R rows (sentence * copies + k) over
 * a source of length S for up to L positions. */
struct cf_decoder {
    size_t R, S, L;       /* rows, source length, positions (cache capacity) */
    cl_mem buf;
    size_t count;
    cf_view *self_k, *self_v, *cross_k, *cross_v; /* per layer: (R,H_kv,L,dh) and (R,H,S,dh) */
    cf_view x, fin, mean, rstd;                   /* (R, d), (R) */
    cf_view qkv, qh, ctx_h, concat, out;          /* (R, 3d), (R, d) ... */
    cf_view ff_pre, ff_act, ff_up;                /* (R, d_ff); ff_up gated only */
    cf_view probs;                                /* (R, H, max(L, S)) */
    cf_view logits;                               /* (R, V) */
    cf_view kv;                                   /* (R*S, 2d) cross projection */
    cf_view gather_tmp;                           /* (R, H, L, dh) */
    cf_view tokens;                               /* int (R, L): inputs so far */
    cf_view src;                                  /* int (R, S): source ids (key padding) */
    cf_view step_tokens, argmax, parents;         /* int (R) */
    cf_view first;                                /* int (R): cf_beam_shared_prefix's */
    cl_mem beam_buf;                              /* the device beam search's state */
    size_t beam_count;
};

void cf_decoder_free(cf_session *s);
size_t cf_decoder_bytes(const cf_session *s);

/* Reorders every self-attention cache row by `parents` (R ids, uploaded to
 * the decoder's parents): its first n positions (those written so far).
 * Rows r = sentence * K + k; a row's parent is a row of its sentence. */
clformer_status cf_decoder_gather(cf_session *s, const int32_t *parents, size_t K, size_t n);

/* The same, by the parents already in the decoder's `parents` view. */
clformer_status cf_decoder_gather_device(cf_session *s, size_t K, size_t n);

/* Which rows stay when blocks of `width` rows (a sentence's beams) leave
 * (gone[b], of `blocks`): the live blocks among the first n keep their
 * places, and each gone one among them takes the next live block beyond
 * them, so that only those move. from[j] (n entries): new block j's old
 * block; keep (n * width): new row's old row. Returns n, the live blocks. */
size_t cf_compact_plan(const bool *gone, size_t blocks, size_t width, int32_t *keep,
                       int32_t *from);

/* Drops finished rows: row j of every per-row tensor of decoding (the
 * self-attention caches' first `written` positions, the cross-attention
 * caches, the token table, the step tokens and the source ids of the
 * cross-attention masks) becomes row keep[j] (cf_compact_plan: j itself,
 * or rows beyond the n kept in increasing order); R becomes n. Each kept
 * row's numbers are unchanged, so its later steps give the bits they would
 * have given in the full batch (every kernel and GEMM computes a row from
 * that row alone). */
clformer_status cf_decoder_compact(cf_session *s, const int32_t *keep, size_t n, size_t written);

/* dst rows (rows x width 32-bit words) = src rows by `map` (device ints),
 * through the decoder's scratch (dst may be src). */
clformer_status cf_gather_rows(cf_session *s, cf_view dst, cf_view src, cf_view map,
                               size_t width, size_t rows);

/* Encodes the source (batch x S ids, each sentence repeated `copies` times
 * into R = batch * copies rows), projects the memory into the cross caches
 * and starts every row from <sos> at position 0, for up to L positions. */
clformer_status cf_decode_start(cf_session *s, const int32_t *src, size_t batch, size_t S,
                                size_t copies, size_t L);

/* A decoder-only model's caches for R rows and L positions (no source),
 * zeroed. */
clformer_status cf_decode_start_lm(cf_session *s, size_t R, size_t L);

/* A decoder-only model's prompts in one forward pass: rows r0 .. r0+rows-1
 * of the caches receive the keys and values of ids (rows x T, positions
 * 0 .. T-1), computed as training's forward computes them (all positions
 * at once, causal). Uses the session's activations as scratch. */
clformer_status cf_decode_prefill(cf_session *s, size_t r0, size_t rows, const int32_t *ids,
                                  size_t T);

/* One position per row for a decoder-only model whose rows sit at
 * different positions (a batch of prompts): row r's token tokens[r] at
 * pos[r] < L, seeing the keys at positions 0 .. pos[r] of its caches (the
 * token table holds this key mask: 1 where a row sees a key, else 0).
 * Logits (R, V) in the decoder's logits. A row's numbers depend on that
 * row alone. */
clformer_status cf_decode_step_rows(cf_session *s, const int32_t *tokens, const size_t *pos);

/* Sampling (generate.c): one token from the logits (V floats) of draw
 * number `draw` of stream `stream` under o: greedy (temperature 0, top_k 1:
 * the first largest), else softmax(logits / temperature) cut to the top_k,
 * then to the top_p nucleus, drawn with uniform(seed, stream, draw). A
 * prompt's sample k draws from stream k. c: scratch of V. */
typedef struct {
    double p;
    int32_t id;
} cf_sample_candidate;
int32_t cf_sample_token(const float *logits, size_t V, const clformer_sample_options *o,
                        uint64_t stream, uint64_t draw, cf_sample_candidate *c);

/* Sets the next step's tokens (R host ids), which are column `col` of the
 * token table (the self-attention's keys). */
clformer_status cf_decode_set_tokens(cf_session *s, const int32_t *ids, size_t col);

/* One decoder position t for every row: logits (R, V) from the step
 * tokens. With `attention`, the last layer's cross-attention of row 0
 * (H x S floats) is copied there. */
clformer_status cf_decode_step(cf_session *s, size_t t, float *attention);

#endif
