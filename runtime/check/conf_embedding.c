/* The token embedding with positions, described once: its double-precision
 * reference, the checks of that reference (finite differences of its
 * backward, the sinusoids against the PyTorch tutorial's formula), its
 * conformance cases and its descriptor. The dropout mask is the device's
 * (ref_philox.c, shared with the activation, dropout and the fused residual).
 * Every tensor guarded: the forward (learned, sinusoidal or no positions,
 * dropout on or off, the output pre-filled with NaN that must be
 * overwritten, inputs unchanged) over odd B, T, C and vocabularies with
 * repeated ids and pad 0; the sinusoids alone to position 255 (1023 on fast
 * devices); the backward into the token and position tables (run twice onto
 * random gradients, so it must add, not overwrite; a NULL position gradient
 * left alone); then bit-identical reruns (embedding_repeat), the forward's
 * mask in the backward (embedding_dropout_mask) and argument errors and
 * empty shapes (embedding_arguments). The kernels are cl/embedding.cl, the
 * launchers runtime/ops/ops_embedding.c. */
#include "conf_block.h"
#include "conformance.h"
#include "ops.h"
#include "ref_philox.h"
#include "ref_random.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* --- the reference, in double (the dropout mask is the device's) --------------- */

/* The sinusoidal position table entry P[pos, c] for width C:
 * sin(pos / 10000^(2i/C)) for c = 2i, cos(same argument) for c = 2i+1. */
static double ref_sinusoid(size_t pos, size_t c, size_t C)
{
    const double w = pow(10000.0, -(double)(c & ~(size_t)1) / (double)C);
    return c % 2 == 0 ? sin((double)pos * w) : cos((double)pos * w);
}

/* out (B,T,C) = dropout(table[tokens[b,t],:] * scale + P[t,:]); P sinusoidal
 * when pos_table is NULL, else pos_table (at least T rows of C). Ids must be
 * valid rows of table. */
static void ref_embedding_forward(double *out, const int32_t *tokens, const double *table,
                                  const double *pos_table, size_t B, size_t T, size_t C,
                                  double scale, const ref_dropout *dropout)
{
    for (size_t b = 0; b < B; b++)
        for (size_t t = 0; t < T; t++) {
            const size_t row = b * T + t;
            const double *e = table + (size_t)tokens[row] * C;
            for (size_t c = 0; c < C; c++) {
                const double p = pos_table ? pos_table[t * C + c] : ref_sinusoid(t, c, C);
                const size_t i = row * C + c;
                out[i] = (e[c] * scale + p) * ref_dropout_scale(dropout, i);
            }
        }
}

/* dtable[id,:] += scale * sum over positions of id of g; dpos_table[t,:] +=
 * sum over b of g[b,t,:] (skipped when NULL); g = dropout_mask(dout). The
 * token ids stand for the device's index. */
static void ref_embedding_backward(double *dtable, double *dpos_table, const double *dout,
                                   const int32_t *tokens, size_t B, size_t T, size_t C,
                                   double scale, const ref_dropout *dropout)
{
    for (size_t b = 0; b < B; b++)
        for (size_t t = 0; t < T; t++) {
            const size_t row = b * T + t;
            double *de = dtable + (size_t)tokens[row] * C;
            for (size_t c = 0; c < C; c++) {
                const size_t i = row * C + c;
                const double g = dout[i] * ref_dropout_scale(dropout, i);
                de[c] += scale * g;
                if (dpos_table) dpos_table[t * C + c] += g;
            }
        }
}

/* --- the conformance cases ----------------------------------------------------- */

typedef struct {
    size_t B, T, C, vocab;
    bool learned;        /* a learned position table, else sinusoidal */
    cf_dropout drop;     /* off when p is 0 (NULL) */
    bool positions_only; /* every id 0 in a table of zeros: the positions alone */
    uint64_t seed;
    bool no_positions;   /* cf_embedding_forward_tokens: the table alone (learned ignored) */
} embedding_case;

/* B x T ids below vocab with repeats; the last position of every other row is
 * pad (0), as in a right-padded batch. */
static void embedding_tokens(int32_t *tok, size_t B, size_t T, size_t vocab, ref_rng *r)
{
    for (size_t i = 0; i < B * T; i++) tok[i] = (int32_t)(ref_rng_next(r) % vocab);
    for (size_t b = 1; b < B; b += 2) tok[b * T + T - 1] = 0;
}

/* The case's ids; all 0 for positions_only. */
static void make_tokens(const embedding_case *c, int32_t *tok, ref_rng *r)
{
    if (c->positions_only) memset(tok, 0, c->B * c->T * 4);
    else embedding_tokens(tok, c->B, c->T, c->vocab, r);
}

/* int32 tensors live in the float block bit for bit. */
static void put_ints(conf_block *b, size_t t, const int32_t *x, size_t n)
{
    memcpy(conf_block_init(b, t), x, n * 4);
}

/* The device index of tok[0..bt) staged in tensors first, first + 1 and
 * first + 2 (of bt, bt + 1 and bt elements); work holds 3 bt + 1 ints. */
static cf_embedding_index put_index(conf_block *b, size_t first, const int32_t *tok, size_t bt,
                                    int32_t *work)
{
    int32_t *unique = work, *starts = work + bt, *positions = work + 2 * bt + 1;
    const size_t n_unique = cf_embedding_index_build(tok, bt, unique, starts, positions);
    put_ints(b, first, unique, n_unique);
    put_ints(b, first + 1, starts, n_unique + 1);
    put_ints(b, first + 2, positions, bt);
    return (cf_embedding_index){conf_block_view(b, first), conf_block_view(b, first + 1),
                                conf_block_view(b, first + 2), n_unique};
}

static const cf_dropout *device_dropout(const embedding_case *c)
{
    return c->drop.p > 0.0f ? &c->drop : NULL;
}

static ref_dropout reference_dropout(const embedding_case *c)
{
    const cf_dropout *d = device_dropout(c);
    return d ? (ref_dropout){d->p, d->seed, d->step, d->site} : (ref_dropout){0};
}

static void describe(char *buf, size_t cap, const embedding_case *c)
{
    snprintf(buf, cap, "B=%zu T=%zu C=%zu V=%zu p=%g%s", c->B, c->T, c->C, c->vocab,
             (double)c->drop.p, c->positions_only ? " positions only" : "");
}

enum { TOK, TABLE, POS, OUT };                       /* the forward's tensors */
enum { G, DT, DP, UNIQUE, STARTS, POSITIONS };       /* the backward's */

/* The forward (index NULL) or the backward, once untimed when conf_warm_up
 * says so, then `runs` times timed; the initial contents are uploaded before
 * the first run and again after the untimed one. *ms: the last run's time. */
static clformer_status timed_runs(cf_ctx *ctx, const embedding_case *c, conf_block *b,
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

/* The forward (one result). */
static clformer_status run_forward(cf_ctx *ctx, const embedding_case *c, conf_sink sink,
                                   void *user)
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

/* The backward, run twice so that it must add (two results: the token
 * table, the position table). */
static clformer_status run_backward(cf_ctx *ctx, const embedding_case *c, conf_sink sink,
                                    void *user)
{
    const size_t bt = c->B * c->T, n = bt * c->C, nt = c->vocab * c->C, np = (c->T + 2) * c->C;
    conf_block b = {0};
    const size_t len[] = {n, nt, np, bt, bt + 1, bt};
    for (int t = G; t <= POSITIONS; t++) conf_block_add(&b, len[t]);
    int32_t *tok = malloc(bt * 4 + 4), *work = malloc((3 * bt + 1) * 4);
    double *g64 = malloc(n * 8 + 8), *dt64 = malloc(nt * 8 + 8), *dp64 = malloc(np * 8 + 8);
    clformer_status st = conf_block_create(ctx, &b);
    if (st) goto done;
    if (!tok || !work || !g64 || !dt64 || !dp64) {
        st = cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory");
        goto done;
    }
    ref_rng r = ref_rng_new(c->seed);
    make_tokens(c, tok, &r);
    ref_fill_uniform(&r, conf_block_init(&b, G), g64, n, -1, 1);
    round_both(ctx, conf_block_init(&b, G), g64, n); /* dout as stored; the tables' gradients are fp32 */
    ref_fill_uniform(&r, conf_block_init(&b, DT), dt64, nt, -1, 1); /* gradients to add to */
    ref_fill_uniform(&r, conf_block_init(&b, DP), dp64, np, -1, 1);
    const cf_embedding_index index = put_index(&b, UNIQUE, tok, bt, work);
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
    free(tok), free(work), free(g64), free(dt64), free(dp64);
    return st;
}


/* The backward of a repeat, on its views. */
typedef struct {
    cf_view dt, dp, g;
    const cf_embedding_index *index;
    size_t B, T, C;
    const cf_dropout *drop;
} repeat_views;

static clformer_status repeat_launch(cf_ctx *ctx, const void *args)
{
    const repeat_views *v = args;
    return cf_embedding_backward(ctx, v->dt, v->dp, v->g, v->index, v->B, v->T, v->C, 2.0f,
                                 v->drop);
}

/* Backward from zero twice with dropout: bit-identical token and position
 * gradients (no atomics). One id dominates (pad), as in real batches. */
static clformer_status run_repeat(cf_ctx *ctx, size_t B, size_t T, size_t C, size_t vocab,
                                  conf_sink sink, void *user)
{
    const size_t bt = B * T, n = bt * C;
    conf_block b = {0};
    const size_t len[] = {n, vocab * C, T * C, bt, bt + 1, bt};
    for (int t = G; t <= POSITIONS; t++) conf_block_add(&b, len[t]);
    int32_t *tok = malloc(bt * 4), *work = malloc((3 * bt + 1) * 4);
    clformer_status st = conf_block_create(ctx, &b);
    if (st) goto done;
    if (!tok || !work) {
        st = cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory");
        goto done;
    }
    ref_rng r = ref_rng_new(9);
    embedding_tokens(tok, B, T, vocab, &r);
    for (size_t i = 0; i < bt; i += 2) tok[i] = 0;
    ref_fill_uniform(&r, conf_block_init(&b, G), NULL, n, -1, 1);
    const cf_embedding_index index = put_index(&b, UNIQUE, tok, bt, work);
    const cf_dropout d = {0.1f, 3, 3, 3};
    const repeat_views v = {conf_block_view(&b, DT), conf_block_view(&b, DP),
                            conf_block_view(&b, G), &index, B, T, C, &d};
    ref_cmp c; /* each run from zero tables */
    if ((st = conf_block_repeat(&b, repeat_launch, &v, DT, UNIQUE, &c))) goto done;
    char shape[96];
    snprintf(shape, sizeof shape, "B=%zu T=%zu C=%zu V=%zu p=0.1 twice", B, T, C, vocab);
    conf_emit(sink, user, "embedding_repeat", shape, conf_guarded(c, &b), 0.0);
done:
    conf_block_free(&b);
    free(tok), free(work);
    return st;
}

/* The forward's dropout and the backward's use the same mask: with one id
 * (table row of ones), learned positions of zeros and a gradient of ones,
 * the forward's output is the mask, the id's gradient row sums every output
 * and the position gradient [t, c] sums the outputs over b, exactly (sums
 * of a few 0s and 2s). */
static clformer_status run_dropout_mask(cf_ctx *ctx, size_t C, conf_sink sink, void *user)
{
    const size_t B = 2, T = 7, bt = B * T, n = bt * C;
    enum { MTOK, MTABLE, MPOS, MOUT, MG, MDT, MDP, MUNIQUE, MSTARTS, MPOSITIONS, MCOUNT };
    const size_t len[MCOUNT] = {bt, C, T * C, n, n, C, T * C, bt, bt + 1, bt};
    conf_block b = {0};
    for (int t = 0; t < MCOUNT; t++) conf_block_add(&b, len[t]);
    int32_t *tok = calloc(bt, 4), *work = malloc((3 * bt + 1) * 4); /* every id 0 */
    clformer_status st = conf_block_create(ctx, &b);
    if (st) goto done;
    if (!tok || !work) {
        st = cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory");
        goto done;
    }
    conf_block_init_fill(&b, MTABLE, 1.0f);
    conf_block_init_fill(&b, MG, 1.0f);
    const cf_embedding_index index = put_index(&b, MUNIQUE, tok, bt, work);
    const cf_dropout d = {0.5f, 11, 2, 5};
    if ((st = conf_block_upload(&b)) ||
        (st = cf_embedding_forward(ctx, conf_block_view(&b, MOUT), conf_block_view(&b, MTOK),
                                   conf_block_view(&b, MTABLE), conf_block_view(&b, MPOS), B, T,
                                   C, 1.0f, &d)) ||
        (st = cf_embedding_backward(ctx, conf_block_view(&b, MDT), conf_block_view(&b, MDP),
                                    conf_block_view(&b, MG), &index, B, T, C, 1.0f, &d)) ||
        (st = cf_finish(ctx)) || (st = conf_block_read(&b)))
        goto done;
    const float *y = conf_block_out(&b, MOUT), *dt = conf_block_out(&b, MDT),
                *dp = conf_block_out(&b, MDP);
    const char *bad = NULL;
    for (size_t c = 0; c < C; c++) {
        float row = 0.0f;
        for (size_t i = 0; i < bt; i++) row += y[i * C + c];
        if (dt[c] != row) bad = "the id's gradient is not the sum of the forward's mask";
        for (size_t t = 0; t < T; t++)
            if (dp[t * C + c] != y[t * C + c] + y[(T + t) * C + c])
                bad = "a position's gradient is not the sum of the forward's mask";
    }
    ref_cmp cmp = {0};
    cmp.pass = !bad, cmp.why = bad, cmp.rule = "exact";
    char shape[96];
    snprintf(shape, sizeof shape, "B=2 T=7 C=%zu V=1 p=0.5", C);
    conf_emit(sink, user, "embedding_dropout_mask", shape, conf_guarded(cmp, &b), 0.0);
done:
    conf_block_free(&b);
    free(tok), free(work);
    return st;
}

/* Bad arguments are errors naming the fix; empty shapes are no-ops. */
static clformer_status run_arguments(cf_ctx *ctx, conf_sink sink, void *user)
{
    static const int32_t ids[4] = {0, 1, 1, 0};
    conf_block b = {0};
    const size_t TOKS = conf_block_add(&b, 4), TAB = conf_block_add(&b, 8),
                 OUTS = conf_block_add(&b, 16);
    clformer_status st = conf_block_create(ctx, &b);
    if (st) goto done;
    put_ints(&b, TOKS, ids, 4);
    ref_rng r = ref_rng_new(12);
    ref_fill_uniform(&r, conf_block_init(&b, TAB), NULL, 8, -1, 1);
    ref_fill_uniform(&r, conf_block_init(&b, OUTS), NULL, 16, -1, 1);
    if ((st = conf_block_upload(&b))) goto done;
    const cf_view tok = conf_block_view(&b, TOKS), table = conf_block_view(&b, TAB),
                  out = conf_block_view(&b, OUTS), none = cf_view_at(NULL, 0);
    const cf_dropout all = {1.0f, 1, 1, 1};
    const cf_embedding_index empty = {tok, tok, tok, 0};
    const char *bad = NULL;
    if (cf_embedding_forward(ctx, out, tok, table, none, 2, 2, 4, 1.0f, &all) !=
        CLFORMER_ERR_INVALID_ARGUMENT)
        bad = "dropout p = 1 not refused";
    else if (cf_embedding_forward(ctx, out, none, table, none, 2, 2, 4, 1.0f, NULL) !=
             CLFORMER_ERR_INVALID_ARGUMENT)
        bad = "a NULL token buffer not refused";
    else if (cf_embedding_backward(ctx, table, none, out, &empty, 2, 2, 4, 1.0f, NULL) !=
             CLFORMER_ERR_INVALID_ARGUMENT)
        bad = "an empty index for a non-empty batch not refused";
    st = CLFORMER_OK;
    if (!bad && ((st = cf_embedding_forward(ctx, out, tok, table, none, 0, 2, 4, 1.0f, NULL)) ||
                 (st = cf_embedding_forward(ctx, out, tok, table, none, 2, 0, 4, 1.0f, NULL)) ||
                 (st = cf_embedding_forward(ctx, out, tok, table, none, 2, 2, 0, 1.0f, NULL)) ||
                 (st = cf_embedding_backward(ctx, table, none, out, &empty, 0, 2, 4, 1.0f,
                                             NULL)) ||
                 (st = cf_finish(ctx)) || (st = conf_block_read(&b))))
        goto done;
    conf_emit(sink, user, "embedding_arguments", "p=1, NULL ids, empty index, B/T/C=0",
              conf_block_refusals(&b, bad), 0.0);
done:
    conf_block_free(&b);
    return st;
}

typedef struct {
    size_t B, T, C, vocab;
} embedding_shape;

/* quick (simulators): small shapes; else odd B, T, C and vocabularies. Per
 * shape: the forward with sinusoidal, learned and no positions, dropout off
 * and on, and the backward with and without the position table, dropout off
 * and on. Then the check's own shapes (sinusoids to position 255), the
 * sinusoids alone, repeats, the shared mask and argument errors. */
static clformer_status embedding_check(cf_ctx *ctx, bool quick, conf_sink sink, void *user)
{
    static const embedding_shape odd[] = {{1, 1, 1, 1},     {7, 61, 93, 300}, {1, 257, 61, 2},
                                          {61, 7, 257, 61}, {93, 1, 7, 1},    {2, 93, 257, 257},
                                          {257, 7, 1, 7}};
    static const embedding_shape small[] = {{1, 1, 1, 1}, {2, 7, 5, 3}, {3, 5, 13, 1},
                                            {1, 9, 8, 300}, {7, 3, 61, 7}};
    const embedding_shape *shapes = quick ? small : odd;
    const size_t count = quick ? sizeof small / sizeof *small : sizeof odd / sizeof *odd;
    const cf_dropout fd = {0.1f, 0xfeedULL, 4, 0}, bd = {0.25f, 0xabcdef0123ULL, 9, 1};
    for (size_t i = 0; i < count; i++) {
        const embedding_shape s = shapes[i];
        for (int k = 0; k < 6; k++) { /* sinusoidal, learned, no positions; dropout off, on */
            const embedding_case c = {s.B, s.T, s.C, s.vocab, k % 3 == 1, k < 3 ? (cf_dropout){0} : fd,
                                      false, 20 * (uint64_t)k + i, k % 3 == 2};
            CF_TRY(run_forward(ctx, &c, sink, user));
        }
        for (int k = 0; k < 4; k++) { /* learned, sinusoidal; dropout off, on */
            const embedding_case c = {s.B, s.T, s.C, s.vocab, k % 2 == 0,
                                      k < 2 ? (cf_dropout){0} : bd, false, 100 + 20 * (uint64_t)k + i};
            CF_TRY(run_backward(ctx, &c, sink, user));
        }
    }
    const cf_dropout d = {0.1f, 0x5eedULL, 1, 0};
    /* {B, T, C, vocab, learned, drop, positions_only, seed}; every position up
     * to 255 for the sinusoids */
    static const embedding_case sinusoid[2] = {{2, 256, 13, 11, false, {0}, false, 1},
                                               {4, 256, 93, 300, false, {0}, false, 2}};
    static const embedding_case learned[2] = {{3, 7, 13, 11, true, {0}, false, 3},
                                              {7, 61, 257, 300, true, {0}, false, 4}};
    static const embedding_case back[2] = {{3, 7, 13, 5, true, {0}, false, 5},
                                           {16, 93, 61, 257, true, {0}, false, 6}};
    static const embedding_case tokens[2] = {{2, 9, 12, 11, false, {0}, false, 7, true},
                                             {5, 61, 288, 300, false, {0}, false, 8, true}};
    embedding_case s = sinusoid[!quick], b = back[!quick], t = tokens[!quick];
    s.drop = b.drop = t.drop = d;
    CF_TRY(run_forward(ctx, &s, sink, user));
    CF_TRY(run_forward(ctx, &learned[!quick], sink, user));
    CF_TRY(run_forward(ctx, &t, sink, user));
    CF_TRY(run_backward(ctx, &b, sink, user));
    /* the sinusoidal table alone (zero embeddings) at every position up to
     * 255 (1023 for one width on fast devices), even and odd widths */
    static const size_t fast[][2] = {{256, 61}, {256, 512}, {256, 93}, {1024, 512}},
                        slow[][2] = {{256, 7}, {256, 16}};
    for (size_t k = 0; k < (quick ? 2 : 4); k++) {
        const embedding_case c = {1, quick ? slow[k][0] : fast[k][0],
                                  quick ? slow[k][1] : fast[k][1], 1, false, {0}, true, k};
        CF_TRY(run_forward(ctx, &c, sink, user));
    }
    CF_TRY(quick ? run_repeat(ctx, 3, 7, 5, 4, sink, user)
                 : run_repeat(ctx, 16, 93, 61, 300, sink, user));
    CF_TRY(run_dropout_mask(ctx, quick ? 5 : 61, sink, user));
    return run_arguments(ctx, sink, user);
}

/* --- checks of the reference ---------------------------------------------------- */

/* Finite differences of the reference backward, learned and sinusoidal
 * positions, with and without dropout: ids 0 (pad) and 2 repeat, id 3 never
 * occurs (its gradient stays 0), and a second call adds the same again. */
enum { FB = 2, FT = 5, FC = 7, FV = 4 };
typedef struct {
    int32_t tokens[FB * FT];
    double table[FV * FC], pos[FT * FC], w[FB * FT * FC], out[FB * FT * FC];
    const double *pos_table; /* NULL: sinusoidal */
    const ref_dropout *dropout;
} fd_problem;

static double fd_loss(void *user)
{
    fd_problem *p = user;
    ref_embedding_forward(p->out, p->tokens, p->table, p->pos_table, FB, FT, FC, sqrt(FC),
                          p->dropout);
    double l = 0.0;
    for (size_t i = 0; i < FB * FT * FC; i++) l += p->w[i] * p->out[i];
    return l;
}

static int embedding_fd(bool learned, const ref_dropout *d)
{
    static const int32_t ids[FB * FT] = {1, 0, 2, 2, 0, 2, 0, 0, 1, 2};
    fd_problem p = {{0}};
    memcpy(p.tokens, ids, sizeof ids);
    ref_rng r = ref_rng_new(learned * 2 + (d != NULL));
    for (size_t i = 0; i < FV * FC; i++) p.table[i] = ref_rng_uniform(&r, -1, 1);
    for (size_t i = 0; i < FT * FC; i++) p.pos[i] = ref_rng_uniform(&r, -1, 1);
    for (size_t i = 0; i < FB * FT * FC; i++) p.w[i] = ref_rng_uniform(&r, -1, 1);
    p.pos_table = learned ? p.pos : NULL;
    p.dropout = d;
    double dtable[FV * FC] = {0}, dpos[FT * FC] = {0}, again[FV * FC];
    ref_embedding_backward(dtable, learned ? dpos : NULL, p.w, p.tokens, FB, FT, FC, sqrt(FC), d);
    int bad = conf_fd_check("embedding dtable", p.table, FV * FC, dtable, fd_loss, &p);
    if (learned) bad += conf_fd_check("embedding dpos", p.pos, FT * FC, dpos, fd_loss, &p);
    for (size_t i = 0; i < FC; i++) bad += dtable[3 * FC + i] != 0.0;
    memcpy(again, dtable, sizeof again);
    ref_embedding_backward(again, NULL, p.w, p.tokens, FB, FT, FC, sqrt(FC), d);
    for (size_t i = 0; i < FV * FC; i++) bad += !(fabs(again[i] - 2 * dtable[i]) <= 1e-12);
    return bad;
}

/* P[p, 2i] = sin(p * exp(2i * -ln(10000) / C)), P[p, 2i+1] = cos(same), as
 * the PyTorch tutorial builds it; for odd C the last column is a sine.
 * Returns the mismatches. */
static int sinusoid_matches_tutorial_formula(void)
{
    static const size_t widths[] = {1, 2, 7, 8, 61, 512};
    int bad = 0;
    for (size_t w = 0; w < sizeof widths / sizeof *widths; w++) {
        const size_t width = widths[w];
        for (size_t pos = 0; pos < 256; pos++)
            for (size_t c = 0; c < width; c++) {
                const double div = exp((double)(c / 2 * 2) * (-log(10000.0) / (double)width));
                const double want = c % 2 ? cos((double)pos * div) : sin((double)pos * div);
                bad += !(fabs(ref_sinusoid(pos, c, width) - want) <= 1e-12);
            }
    }
    bad += !(ref_sinusoid(0, 0, 8) == 0.0 && ref_sinusoid(0, 1, 8) == 1.0);
    bad += !(ref_sinusoid(3, 0, 8) == sin(3.0) && ref_sinusoid(3, 1, 8) == cos(3.0));
    return bad;
}

static int embedding_gradcheck(void)
{
    static const ref_dropout d = {0.4f, 77, 3, 1};
    int bad = embedding_fd(false, NULL) + embedding_fd(true, NULL) + embedding_fd(false, &d) +
              embedding_fd(true, &d);
    const int rules = sinusoid_matches_tutorial_formula();
    if (rules) fprintf(stderr, "embedding reference: %d sinusoids off the tutorial's\n", rules);
    return bad + rules;
}

CONF_OP(embedding) = {"embedding", "embedding_forward_sinusoidal embedding_forward_learned embedding_forward_tokens embedding_backward_table embedding_backward_pos",
    "cf_embedding_forward, cf_embedding_forward_tokens, cf_embedding_forward_at, cf_embedding_backward",
    "ref_embedding_forward, ref_embedding_backward (this file; the mask ref_philox.c)",
    "forward rule; gradient rule for the tables; exact for repeats and the shared mask",
    embedding_check, embedding_gradcheck, NULL, true};
