/* Conformance of the embedding: sinusoidal positions with dropout (to
 * position 255), learned positions, and the backward into the token and
 * position tables, against the double reference. */
#include "buffer.h"
#include "conformance.h"
#include "ops.h"
#include "ref_embedding.h"
#include "ref_random.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

typedef struct {
    size_t B, T, C, vocab;
} shape;

/* Host and device copies of one problem; released by problem_free. */
typedef struct {
    shape s;
    int32_t *tok, *unique, *starts, *positions;
    float *table, *pos, *g, *y, *dtable, *dpos;
    double *table64, *pos64, *g64, *y64, *dtable64, *dpos64;
    cl_mem d_tok, d_table, d_pos, d_out, d_g, d_dtable, d_dpos, d_unique, d_starts, d_positions;
    size_t n_unique;
} problem;

static void problem_free(cf_ctx *ctx, problem *p)
{
    free(p->tok), free(p->unique), free(p->starts), free(p->positions);
    free(p->table), free(p->pos), free(p->g), free(p->y), free(p->dtable), free(p->dpos);
    free(p->table64), free(p->pos64), free(p->g64), free(p->y64), free(p->dtable64);
    free(p->dpos64);
    cl_mem *mems[] = {&p->d_tok, &p->d_table,    &p->d_pos,    &p->d_out,    &p->d_g,
                      &p->d_dtable, &p->d_dpos, &p->d_unique, &p->d_starts, &p->d_positions};
    for (size_t i = 0; i < sizeof mems / sizeof *mems; i++) cf_buffer_free(ctx, *mems[i]);
}

static clformer_status alloc_up(cf_ctx *ctx, const void *host, size_t n, const char *what,
                                cl_mem *out)
{
    CF_TRY(cf_buffer_alloc(ctx, n, what, out));
    return host ? cf_upload(ctx, *out, 0, host, n) : CLFORMER_OK;
}

/* Random ids (pad 0 at the end of odd rows), tables, gradient; uploaded. */
static clformer_status problem_make(cf_ctx *ctx, shape s, uint64_t seed, problem *p)
{
    *p = (problem){.s = s};
    const size_t bt = s.B * s.T, n = bt * s.C, nt = s.vocab * s.C, np = s.T * s.C;
    p->tok = malloc(bt * 4), p->unique = malloc(bt * 4), p->starts = malloc((bt + 1) * 4);
    p->positions = malloc(bt * 4);
    p->table = malloc(nt * 4), p->pos = malloc(np * 4), p->g = malloc(n * 4), p->y = malloc(n * 4);
    p->dtable = malloc(nt * 4), p->dpos = malloc(np * 4);
    p->table64 = malloc(nt * 8), p->pos64 = malloc(np * 8), p->g64 = malloc(n * 8);
    p->y64 = malloc(n * 8), p->dtable64 = calloc(nt, 8), p->dpos64 = calloc(np, 8);
    if (!p->tok || !p->unique || !p->starts || !p->positions || !p->table || !p->pos || !p->g ||
        !p->y || !p->dtable || !p->dpos || !p->table64 || !p->pos64 || !p->g64 || !p->y64 ||
        !p->dtable64 || !p->dpos64)
        return cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory");
    ref_rng r = ref_rng_new(seed);
    for (size_t i = 0; i < bt; i++) p->tok[i] = (int32_t)(ref_rng_next(&r) % s.vocab);
    for (size_t b = 1; b < s.B; b += 2) p->tok[b * s.T + s.T - 1] = 0;
    ref_fill_uniform(&r, p->table, p->table64, nt, -1, 1);
    ref_fill_uniform(&r, p->pos, p->pos64, np, -1, 1);
    ref_fill_uniform(&r, p->g, p->g64, n, -1, 1);
    p->n_unique = cf_embedding_index_build(p->tok, bt, p->unique, p->starts, p->positions);
    CF_TRY(alloc_up(ctx, p->tok, bt, "embedding tokens", &p->d_tok));
    CF_TRY(alloc_up(ctx, p->table, nt, "embedding table", &p->d_table));
    CF_TRY(alloc_up(ctx, p->pos, np, "position table", &p->d_pos));
    CF_TRY(alloc_up(ctx, NULL, n, "embedding output", &p->d_out));
    CF_TRY(alloc_up(ctx, p->g, n, "embedding dout", &p->d_g));
    CF_TRY(alloc_up(ctx, NULL, nt, "embedding dtable", &p->d_dtable));
    CF_TRY(alloc_up(ctx, NULL, np, "embedding dpos", &p->d_dpos));
    CF_TRY(alloc_up(ctx, p->unique, p->n_unique, "index unique", &p->d_unique));
    CF_TRY(alloc_up(ctx, p->starts, p->n_unique + 1, "index starts", &p->d_starts));
    return alloc_up(ctx, p->positions, bt, "index positions", &p->d_positions);
}

static ref_dropout to_ref(const cf_dropout *d)
{
    return d ? (ref_dropout){d->p, d->seed, d->step, d->site} : (ref_dropout){0};
}

static void describe(char *buf, size_t cap, shape s, const cf_dropout *d)
{
    snprintf(buf, cap, "B=%zu T=%zu C=%zu V=%zu p=%g", s.B, s.T, s.C, s.vocab,
             d ? (double)d->p : 0.0);
}

static clformer_status forward(cf_ctx *ctx, shape s, bool learned, const cf_dropout *d,
                               const char *op, conf_sink sink, void *user)
{
    problem p;
    clformer_status st = problem_make(ctx, s, s.B * 7919 + s.T * 31 + s.C, &p);
    const float scale = sqrtf((float)s.C);
    const size_t n = s.B * s.T * s.C;
    double t0 = conf_now_ms(), ms = 0.0;
    if (st == CLFORMER_OK)
        st = cf_embedding_forward(ctx, cf_view_at(p.d_out, 0), cf_view_at(p.d_tok, 0),
                                  cf_view_at(p.d_table, 0),
                                  cf_view_at(learned ? p.d_pos : NULL, 0), s.B, s.T, s.C, scale,
                                  d);
    if (st == CLFORMER_OK) st = cf_finish(ctx);
    ms = conf_now_ms() - t0;
    if (st == CLFORMER_OK) st = cf_download(ctx, p.d_out, 0, p.y, n);
    if (st == CLFORMER_OK) {
        const ref_dropout rd = to_ref(d);
        ref_embedding_forward(p.y64, p.tok, p.table64, learned ? p.pos64 : NULL, s.B, s.T, s.C,
                              scale, &rd);
        char sh[96];
        describe(sh, sizeof sh, s, d);
        conf_emit(sink, user, op, sh, ref_compare_forward(p.y, p.y64, n), ms);
    }
    problem_free(ctx, &p);
    return st;
}

static clformer_status backward(cf_ctx *ctx, shape s, const cf_dropout *d, conf_sink sink,
                                void *user)
{
    problem p;
    clformer_status st = problem_make(ctx, s, s.B * 104729 + s.T * 17 + s.C, &p);
    const float scale = sqrtf((float)s.C);
    const size_t nt = s.vocab * s.C, np = s.T * s.C;
    double t0 = conf_now_ms(), ms = 0.0;
    if (st == CLFORMER_OK) {
        const cf_embedding_index index = {cf_view_at(p.d_unique, 0), cf_view_at(p.d_starts, 0),
                                          cf_view_at(p.d_positions, 0), p.n_unique};
        st = cf_embedding_backward(ctx, cf_view_at(p.d_dtable, 0), cf_view_at(p.d_dpos, 0),
                                   cf_view_at(p.d_g, 0), &index, s.B, s.T, s.C, scale, d);
    }
    if (st == CLFORMER_OK) st = cf_finish(ctx);
    ms = conf_now_ms() - t0;
    if (st == CLFORMER_OK) st = cf_download(ctx, p.d_dtable, 0, p.dtable, nt);
    if (st == CLFORMER_OK) st = cf_download(ctx, p.d_dpos, 0, p.dpos, np);
    if (st == CLFORMER_OK) {
        const ref_dropout rd = to_ref(d);
        ref_embedding_backward(p.dtable64, p.dpos64, p.g64, p.tok, s.B, s.T, s.C, scale, &rd);
        char sh[96];
        describe(sh, sizeof sh, s, d);
        conf_emit(sink, user, "embedding_backward", sh, ref_compare_grad(p.dtable, p.dtable64, nt),
                  ms);
        conf_emit(sink, user, "embedding_backward_positions", sh,
                  ref_compare_grad(p.dpos, p.dpos64, np), ms);
    }
    problem_free(ctx, &p);
    return st;
}

clformer_status conf_embedding(cf_ctx *ctx, bool quick, conf_sink sink, void *user)
{
    const cf_dropout d = {0.1f, 0x5eedULL, 1, 0};
    /* every position up to 255 for the sinusoids */
    const shape sin_shape = quick ? (shape){2, 256, 13, 11} : (shape){4, 256, 93, 300};
    const shape learned = quick ? (shape){3, 7, 13, 11} : (shape){7, 61, 257, 300};
    const shape back = quick ? (shape){3, 7, 13, 5} : (shape){16, 93, 61, 257};
    CF_TRY(forward(ctx, sin_shape, false, &d, "embedding_forward", sink, user));
    CF_TRY(forward(ctx, learned, true, NULL, "embedding_forward_learned", sink, user));
    return backward(ctx, back, &d, sink, user);
}
