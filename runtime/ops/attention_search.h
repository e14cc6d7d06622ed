/*
 * The attention tile search. The tiled attention kernels of GPUs
 * (cl/flash_attention_tiled.cl) take their tiles from the device profile
 * (runtime/device/profile.c), measured on one GPU (an NVIDIA H200) and
 * guessed for the others. Where the search is on
 * (clformer_context_params.attention_tuning, CLFORMER_ATTENTION_TUNING; by
 * default where the profile says attention_search: GPUs), the first use of
 * the tiled kernels at a head size times them kernel by kernel - the
 * forward, then dQ, then dK/dV - with the profile's tiles and variations of
 * them: the rows a work-group owns halved or doubled, and each work item
 * holding one row (dK/dV: one key) or two. Each kernel keeps the fastest
 * set, where it beats the one before by more than CF_ATTENTION_SEARCH_GAIN.
 *
 * Same numbers, whichever set wins. Only the rows a group owns and the rows
 * an item holds vary: they change which work item computes a row, not the
 * order of any sum. And a set is timed only if its outputs equal the
 * profile's bit for bit on the shape timed; one that differs is left out
 * (logged). So a run with the search, without it, or with another cache
 * computes the same numbers, and resumes stay exact.
 *
 * The shape timed is cf_attention_search_limits' (16 x 8 heads of 1,024
 * queries and keys, not causal: base's long step; at most 4 heads a
 * compute unit, and fewer where the device's largest buffer is smaller),
 * one warm-up call and `calls` timed calls a set, the fastest counting. Each set is a program to compile, so
 * a head size costs up to 16 builds, once per device and driver: the
 * choice is kept in $CLFORMER_CACHE_DIR/attention-<16 hex digits>.txt
 * beside the kernel cache (the digits hash its header: platform, device,
 * driver, cl/flash_attention_tiled.cl's hash and the shape timed, which
 * depends on the head size only through the largest buffer), a line per
 * head size:
 *
 *   head 64 profile fwd=64x2x8x1,dq=... chosen fwd=32x2x8x2,dq=... ms forward 1.64 -> 1.5,
 *   backward 5.7 -> 5.6 -> 5.1
 *
 * (one line: the forward's time, and the backward's with the profile's
 * tiles, with dQ's choice, and with dK/dV's too).
 *
 * A line is used only where its profile tiles are the profile's now and
 * its choice differs from them in rows alone and fits the device; else
 * that head size is timed again. Progress: "tuning attention tiles, head
 * size D" (sets done of total). A failure (no memory for the shape, a
 * build error) fails nothing: it is logged, and the head size keeps the
 * profile's tiles.
 */
#ifndef CF_ATTENTION_SEARCH_H
#define CF_ATTENTION_SEARCH_H

#include "context.h"

/* A set replaces the best so far only when faster by more than this share
 * (timing noise must not pick a set). */
#define CF_ATTENTION_SEARCH_GAIN 0.03

typedef struct {
    size_t batch, heads, len; /* the shape timed */
    unsigned calls;           /* timed calls a set, after one warm-up */
    /* tests: each kernel's first variation that gives the profile's bits
     * wins whatever the times, so that a test sees a choice that is not
     * the profile's */
    bool prefer_variations;
    /* tests: a variation with each kernel's rows split over twice the
     * items as well, which sums in another order, so that a test sees a
     * set left out */
    bool vary_split;
    /* tests: at most this many of each kernel's variations besides (0: all),
     * each a program to compile */
    size_t max_variations;
} cf_attention_search_limits;

/* The limits in force; tests lower them to run fast. */
cf_attention_search_limits cf_attention_search_get_limits(void);
void cf_attention_search_set_limits(const cf_attention_search_limits *limits);

/* *t, the profile's tiles for t->head_dim, becomes the tiles the context's
 * launches take at that head size: the search's choice where it is on
 * (timed on the first call for that head size, or read from its file),
 * else unchanged. */
void cf_attention_search_tiles(cf_ctx *ctx, cf_attention_tiles *t);

/* One line of the search's file, read against the profile's tiles t for
 * t->head_dim: true, with *choice, where it is that head size's line, names
 * t as its profile tiles and chooses tiles that sum as t does and fit a
 * device with profile p (tests/fuzz/fuzz_attention_search.c). */
bool cf_attention_search_line(const clformer_device_profile *p, const char *line,
                              const cf_attention_tiles *t, cf_attention_tiles *choice);

/* Tiles as "fwd=ROWSxSPLITxKEYSxPER,dq=ROWSxSPLITxKEYSxPER,dkv=KEYSxSPLITxROWSxPER"
 * (tools/tuning/attention_bench's --tiles), and back (false: not that form). */
void cf_attention_tiles_spec(const cf_attention_tiles *t, char *out, size_t cap);
bool cf_attention_tiles_parse(const char *spec, unsigned head_dim, cf_attention_tiles *t);

#endif
