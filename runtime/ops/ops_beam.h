/*
 * Host side of cl/beam.cl: the steps of beam search that stay on the
 * device (runtime/decode/beam_device.c). Rows r = sentence * K + k; each
 * row's candidate list holds M = 2K entries.
 */
#ifndef CF_OPS_BEAM_H
#define CF_OPS_BEAM_H

#include "buffer.h"

#include <stdbool.h>

/* The search's state. Views of doubles (8-byte) start at an even element
 * offset; their counts below are in doubles. */
typedef struct {
    cf_view score;       /* double (R): each hypothesis's sum of log-probabilities */
    cf_view cand_score;  /* double (R, M) */
    cf_view cand_token;  /* int (R, M) */
    cf_view pen;         /* double (L + 1): n^penalty, the length normalisation */
    cf_view best_score;  /* double (batch): the best finished hypothesis's normalised score */
    cf_view best_tokens; /* int (batch, L) */
    cf_view best_len;    /* int (batch) */
    cf_view finished;    /* int (batch): finished hypotheses so far */
    cf_view done;        /* int (batch): 1 once the sentence is decided */
    cf_view n_done;      /* int (1): sentences done */
} cf_beam_views;

/* Each row's M best continuations score[r] + logp[r][v] (logp: R x V
 * log-probabilities), in rank order: higher score, then lower token. Needs
 * the device's fp64 (ctx->info.fp64). */
clformer_status cf_beam_candidates(cf_ctx *ctx, const cf_beam_views *b, cf_view logp, size_t R,
                                   size_t K, size_t V, size_t M);

/* Step t of every sentence: next scores, parents (R row ids) and next
 * tokens (R) from the candidates; finished hypotheses into best_*, done
 * flags and n_done. tokens: the (R, L) table of each row's inputs so far. */
clformer_status cf_beam_select(cf_ctx *ctx, const cf_beam_views *b, cf_view tokens,
                               cf_view parents, cf_view next, size_t batch, size_t K, size_t M,
                               size_t L, size_t t, bool last);

/* dst (R, L) = src rows by parents, with column `col` set to next. */
clformer_status cf_beam_tokens(cf_ctx *ctx, cf_view dst, cf_view src, cf_view parents,
                               cf_view next, size_t L, size_t R, size_t col);

/* Rows of a cache (R, H, cap, dh) that change parent (parents[r] != r),
 * their first n positions: dst row r = src row (from_parent ? parents[r]
 * : r). Dropping finished rows is one call into a scratch, one back. */
clformer_status cf_beam_gather_cache(cf_ctx *ctx, cf_view dst, cf_view src, cf_view parents,
                                     size_t R, size_t H, size_t cap, size_t dh, size_t n,
                                     bool from_parent);

/* first[r] (R ints): the first of positions 0..n-1 where row r's tokens
 * (tokens: R x L) differ from its parent's (parents: R row ids); n when
 * they agree throughout or r is its own parent. */
clformer_status cf_beam_shared_prefix(cf_ctx *ctx, cf_view first, cf_view tokens, cf_view parents,
                                      size_t R, size_t L, size_t n);

/* The self-attention caches of `layers` layers reordered by parent in
 * place, in one pass: positions first[r] .. n-1 of row r (r = sentence * K
 * + k) of each cache become those of row parents[r], which must be a row
 * of the same sentence (one outside it is taken as r: nothing moves); the
 * positions before first[r] must agree already (cf_beam_shared_prefix).
 * Layer l's keys start at caches + l * layer_stride, its values
 * value_stride further, each (batch * K, H, cap, dh). */
clformer_status cf_beam_reorder_caches(cf_ctx *ctx, cf_view caches, size_t layer_stride,
                                       size_t value_stride, size_t layers, cf_view parents,
                                       cf_view first, size_t batch, size_t K, size_t H,
                                       size_t cap, size_t dh, size_t n);

#endif
