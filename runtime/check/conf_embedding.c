/* Conformance of the token embedding with positions, every tensor guarded:
 * the forward (learned, sinusoidal or no positions, dropout on or off, the output
 * pre-filled with NaN that must be overwritten, inputs unchanged) and the
 * backward into the token and position tables (run twice onto random
 * gradients, so it must add, not overwrite; a NULL position gradient left
 * alone). `clformer check` runs sinusoids to position 255, learned positions
 * and a backward; test_embedding runs many more cases. */
#include "conf_block.h"
#include "conformance.h"
#include "ops.h"
#include "ref_embedding.h"
#include "ref_random.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void conf_embedding_tokens(int32_t *tok, size_t B, size_t T, size_t vocab, ref_rng *r)
{
    for (size_t i = 0; i < B * T; i++) tok[i] = (int32_t)(ref_rng_next(r) % vocab);
    for (size_t b = 1; b < B; b += 2) tok[b * T + T - 1] = 0;
}

/* The case's ids; all 0 for positions_only. */
static void make_tokens(const conf_embedding_case *c, int32_t *tok, ref_rng *r)
{
    if (c->positions_only) memset(tok, 0, c->B * c->T * 4);
    else conf_embedding_tokens(tok, c->B, c->T, c->vocab, r);
}

/* int32 tensors live in the float block bit for bit. */
static void put_ints(conf_block *b, size_t t, const int32_t *x, size_t n)
{
    memcpy(conf_block_init(b, t), x, n * 4);
}

static const cf_dropout *device_dropout(const conf_embedding_case *c)
{
    return c->drop.p > 0.0f ? &c->drop : NULL;
}

static ref_dropout reference_dropout(const conf_embedding_case *c)
{
    const cf_dropout *d = device_dropout(c);
    return d ? (ref_dropout){d->p, d->seed, d->step, d->site} : (ref_dropout){0};
}

static void describe(char *buf, size_t cap, const conf_embedding_case *c)
{
    snprintf(buf, cap, "B=%zu T=%zu C=%zu V=%zu p=%g%s", c->B, c->T, c->C, c->vocab,
             (double)c->drop.p, c->positions_only ? " positions only" : "");
}

enum { TOK, TABLE, POS, OUT };                       /* the forward's tensors */
enum { G, DT, DP, UNIQUE, STARTS, POSITIONS };       /* the backward's */

/* The forward (index NULL) or the backward, once untimed when conf_warm_up
 * says so, then `runs` times timed; the initial contents are uploaded before
 * the first run and again after the untimed one. *ms: the last run's time. */
static clformer_status timed_runs(cf_ctx *ctx, const conf_embedding_case *c, conf_block *b,
                                  const cf_embedding_index *index, int runs, double *ms)
{
    const float scale = sqrtf((float)c->C);
    for (int run = conf_warm_up(ctx) ? -1 : 0; run < runs; run++) {
        if (run < 1) CF_TRY(conf_block_upload(b));
        const double t0 = conf_now_ms();
        if (index)
            CF_TRY(cf_embedding_backward(ctx, conf_block_view(b, DT),
                                         c->learned ? conf_block_view(b, DP) : cf_view_at(NULL, 0),
                                         conf_block_view(b, G), index, c->B, c->T, c->C, scale,
                                         device_dropout(c)));
        else if (c->no_positions)
            CF_TRY(cf_embedding_forward_tokens(ctx, conf_block_view(b, OUT),
                                               conf_block_view(b, TOK), conf_block_view(b, TABLE),
                                               c->B, c->T, c->C, scale, device_dropout(c)));
        else
            CF_TRY(cf_embedding_forward(ctx, conf_block_view(b, OUT), conf_block_view(b, TOK),
                                        conf_block_view(b, TABLE),
                                        c->learned ? conf_block_view(b, POS) : cf_view_at(NULL, 0),
                                        c->B, c->T, c->C, scale, device_dropout(c)));
        CF_TRY(cf_finish(ctx));
        *ms = conf_now_ms() - t0;
    }
    return CLFORMER_OK;
}

/* 16-bit runs: x[0..n) rounded to the storage precision, as the model holds
 * it, and its double copy x64 made again from the rounded values. */
static void round_both(const cf_ctx *ctx, float *x, double *x64, size_t n)
{
    conf_round(ctx, x, n);
    for (size_t i = 0; i < n; i++) x64[i] = x[i];
}

clformer_status conf_embedding_forward_run(cf_ctx *ctx, const conf_embedding_case *c,
                                           conf_sink sink, void *user)
{
    const size_t bt = c->B * c->T, n = bt * c->C, nt = c->vocab * c->C, np = (c->T + 3) * c->C;
    conf_block b = {0};
    conf_block_add(&b, bt), conf_block_add(&b, nt), conf_block_add(&b, np);
    conf_block_add(&b, n);
    int32_t *tok = malloc(bt * 4 + 4);
    double *table64 = malloc(nt * 8 + 8), *pos64 = malloc(np * 8), *y64 = malloc(n * 8 + 8);
    clformer_status st = conf_block_create(ctx, &b);
    if (st) goto done;
    if (!tok || !table64 || !pos64 || !y64) {
        st = cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory");
        goto done;
    }
    ref_rng r = ref_rng_new(c->seed);
    make_tokens(c, tok, &r);
    put_ints(&b, TOK, tok, bt);
    if (c->positions_only) memset(table64, 0, nt * 8); /* the staged table is 0 too */
    else ref_fill_uniform(&r, conf_block_init(&b, TABLE), table64, nt, -1, 1);
    ref_fill_uniform(&r, conf_block_init(&b, POS), pos64, np, -1, 1);
    if (!c->positions_only) round_both(ctx, conf_block_init(&b, TABLE), table64, nt);
    round_both(ctx, conf_block_init(&b, POS), pos64, np);
    conf_block_init_fill(&b, OUT, NAN);
    const float scale = sqrtf((float)c->C);
    double ms = 0.0;
    if ((st = timed_runs(ctx, c, &b, NULL, 1, &ms))) goto done;
    if ((st = conf_block_read(&b))) goto done;
    const ref_dropout rd = reference_dropout(c);
    /* no positions: a learned table of zeros */
    if (c->no_positions) memset(pos64, 0, np * 8);
    ref_embedding_forward(y64, tok, table64, c->learned || c->no_positions ? pos64 : NULL, c->B,
                          c->T, c->C, scale, &rd);
    ref_cmp cmp = conf_compare_stored(ctx, conf_block_out(&b, OUT), y64, n, REF_RULE_FORWARD,
                                      NULL, NULL);
    if (!conf_block_unchanged(&b, TOK) || !conf_block_unchanged(&b, TABLE) ||
        !conf_block_unchanged(&b, POS))
        cmp.pass = false, cmp.why = "the embedding forward changed an input";
    char shape[96];
    describe(shape, sizeof shape, c);
    conf_emit(sink, user,
              c->no_positions ? "embedding_forward_tokens"
              : c->learned    ? "embedding_forward_learned"
                              : "embedding_forward",
              shape, conf_guarded(cmp, &b), ms);
done:
    conf_block_free(&b);
    free(tok), free(table64), free(pos64), free(y64);
    return st;
}

clformer_status conf_embedding_backward_run(cf_ctx *ctx, const conf_embedding_case *c,
                                            conf_sink sink, void *user)
{
    const size_t bt = c->B * c->T, n = bt * c->C, nt = c->vocab * c->C, np = (c->T + 2) * c->C;
    conf_block b = {0};
    const size_t len[] = {n, nt, np, bt, bt + 1, bt};
    for (int t = G; t <= POSITIONS; t++) conf_block_add(&b, len[t]);
    int32_t *tok = malloc(bt * 4 + 4), *unique = malloc(bt * 4 + 4),
            *starts = malloc((bt + 1) * 4), *positions = malloc(bt * 4 + 4);
    double *g64 = malloc(n * 8 + 8), *dt64 = malloc(nt * 8 + 8), *dp64 = malloc(np * 8 + 8);
    clformer_status st = conf_block_create(ctx, &b);
    if (st) goto done;
    if (!tok || !unique || !starts || !positions || !g64 || !dt64 || !dp64) {
        st = cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory");
        goto done;
    }
    ref_rng r = ref_rng_new(c->seed);
    make_tokens(c, tok, &r);
    ref_fill_uniform(&r, conf_block_init(&b, G), g64, n, -1, 1);
    round_both(ctx, conf_block_init(&b, G), g64, n); /* dout as stored; the tables' gradients are fp32 */
    ref_fill_uniform(&r, conf_block_init(&b, DT), dt64, nt, -1, 1); /* gradients to add to */
    ref_fill_uniform(&r, conf_block_init(&b, DP), dp64, np, -1, 1);
    const size_t n_unique = cf_embedding_index_build(tok, bt, unique, starts, positions);
    put_ints(&b, UNIQUE, unique, n_unique);
    put_ints(&b, STARTS, starts, n_unique + 1);
    put_ints(&b, POSITIONS, positions, bt);
    const cf_embedding_index index = {conf_block_view(&b, UNIQUE), conf_block_view(&b, STARTS),
                                      conf_block_view(&b, POSITIONS), n_unique};
    const float scale = sqrtf((float)c->C);
    double ms = 0.0;
    if ((st = timed_runs(ctx, c, &b, &index, 2, &ms))) goto done; /* twice: it must add */
    if ((st = conf_block_read(&b))) goto done;
    const ref_dropout rd = reference_dropout(c);
    for (int rep = 0; rep < 2; rep++)
        ref_embedding_backward(dt64, c->learned ? dp64 : NULL, g64, tok, c->B, c->T, c->C, scale,
                               &rd);
    const bool inputs_kept = conf_block_unchanged(&b, G) && conf_block_unchanged(&b, UNIQUE) &&
                             conf_block_unchanged(&b, STARTS) &&
                             conf_block_unchanged(&b, POSITIONS);
    /* the position gradient stays as it was when the positions are sinusoidal */
    ref_cmp cmp[2] = {ref_compare_grad(conf_block_out(&b, DT), dt64, nt),
                      ref_compare_grad(conf_block_out(&b, DP), dp64, np)};
    char shape[96];
    describe(shape, sizeof shape, c);
    for (int i = 0; i < 2; i++) {
        if (!inputs_kept)
            cmp[i].pass = false, cmp[i].why = "the embedding backward changed an input";
        conf_emit(sink, user, i ? "embedding_backward_positions" : "embedding_backward", shape,
                  conf_guarded(cmp[i], &b), ms);
    }
done:
    conf_block_free(&b);
    free(tok), free(unique), free(starts), free(positions), free(g64), free(dt64), free(dp64);
    return st;
}

clformer_status conf_embedding(cf_ctx *ctx, bool quick, conf_sink sink, void *user)
{
    const cf_dropout d = {0.1f, 0x5eedULL, 1, 0};
    /* {B, T, C, vocab, learned, drop, positions_only, seed}; every position up
     * to 255 for the sinusoids */
    static const conf_embedding_case sinusoid[2] = {{2, 256, 13, 11, false, {0}, false, 1},
                                                    {4, 256, 93, 300, false, {0}, false, 2}};
    static const conf_embedding_case learned[2] = {{3, 7, 13, 11, true, {0}, false, 3},
                                                   {7, 61, 257, 300, true, {0}, false, 4}};
    static const conf_embedding_case back[2] = {{3, 7, 13, 5, true, {0}, false, 5},
                                                {16, 93, 61, 257, true, {0}, false, 6}};
    static const conf_embedding_case tokens[2] = {{2, 9, 12, 11, false, {0}, false, 7, true},
                                                  {5, 61, 288, 300, false, {0}, false, 8, true}};
    conf_embedding_case s = sinusoid[!quick], b = back[!quick], t = tokens[!quick];
    s.drop = b.drop = t.drop = d;
    CF_TRY(conf_embedding_forward_run(ctx, &s, sink, user));
    CF_TRY(conf_embedding_forward_run(ctx, &learned[!quick], sink, user));
    CF_TRY(conf_embedding_forward_run(ctx, &t, sink, user));
    return conf_embedding_backward_run(ctx, &b, sink, user);
}

CONF_OP(embedding) = {"embedding", "embedding_forward_sinusoidal embedding_forward_learned embedding_forward_tokens embedding_backward_table embedding_backward_pos",
    "cf_embedding_forward, cf_embedding_forward_tokens, cf_embedding_forward_at, cf_embedding_backward",
    "ref_embedding_forward, ref_embedding_backward (reference/ref_embedding.c)",
    "forward rule; gradient rule for the tables",
    conf_embedding, NULL,
    "test_embedding (many more cases, determinism, argument errors); finite differences of the reference: test_ref_embedding", true};
