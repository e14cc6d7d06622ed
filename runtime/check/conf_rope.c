/* Rotary position embeddings, described once: the double-precision
 * reference, its finite-difference check, the conformance cases (forward and
 * backward in place, between the head-split and projection-row layouts, at
 * positions past 4000, with linear and dynamic scaling; every tensor
 * guarded, and the columns a row layout leaves alone checked unchanged) and
 * the descriptor. The kernels are cl/rope.cl, the launchers and the angles
 * runtime/ops/ops_rope.c.
 *
 * The reference takes its angles from cf_rope_frequencies and cf_rope_angle:
 * the angle is part of the op's definition (transformers' fp32 roundings,
 * which a parity test against transformers checks, tests/data/llama); the
 * reference computes their cosines and sines and the turn in double, so the
 * check judges the table's roundings and the kernel's arithmetic. */
#include "conf_block.h"
#include "conformance.h"
#include "ops.h"
#include "ref_random.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

/* --- the reference, in double ------------------------------------------------ */

/* dst = rope(src) (sign 1) or its inverse (sign -1), at the layouts of s;
 * dst may be src with the same strides. */
static void ref_rope(double *dst, const double *src, const cf_rope_shape *s,
                     const cf_rope_config *cfg, size_t seq_len, double sign)
{
    const size_t half = s->dh / 2;
    float *inv = malloc(half * sizeof *inv);
    if (!inv) return;
    cf_rope_frequencies(inv, cfg, seq_len);
    for (size_t b = 0; b < s->B; b++)
        for (size_t h = 0; h < s->H; h++)
            for (size_t t = 0; t < s->T; t++) {
                double *d = dst + b * s->dst.b + h * s->dst.h + t * s->dst.t;
                const double *x = src + b * s->src.b + h * s->src.h + t * s->src.t;
                for (size_t i = 0; i < half; i++) {
                    const double a = cf_rope_angle(inv, cfg, s->pos0 + t, i);
                    const double c = cos(a), sn = sign * sin(a), x0 = x[i], x1 = x[half + i];
                    d[i] = x0 * c - x1 * sn;
                    d[half + i] = x1 * c + x0 * sn;
                }
            }
    free(inv);
}

/* --- finite differences of the reference ------------------------------------- */

typedef struct {
    cf_rope_shape s;
    const cf_rope_config *cfg;
    size_t seq_len;
    double *x, *g, *y;
} fd_problem;

/* sum(rope(x) * g) for the fixed random g. */
static double fd_loss(void *user)
{
    fd_problem *p = user;
    ref_rope(p->y, p->x, &p->s, p->cfg, p->seq_len, 1.0);
    const size_t n = p->s.B * p->s.H * p->s.T * p->s.dh;
    double sum = 0.0;
    for (size_t i = 0; i < n; i++) sum += p->y[i] * p->g[i];
    return sum;
}

static int rope_gradcheck(void)
{
    /* B, H, T, dh, pos0 with each scaling; dynamic past its length */
    static const struct {
        size_t B, H, T, dh, pos0;
        cf_rope_config cfg;
        size_t seq_len;
    } cases[] = {
        {1, 1, 1, 2, 0, {2, 10000.0, CF_ROPE_PLAIN, 0, 0}, 1},
        {2, 3, 4, 6, 5, {6, 10000.0, CF_ROPE_PLAIN, 0, 0}, 9},
        {1, 2, 3, 8, 100, {8, 500000.0, CF_ROPE_LINEAR, 4.0, 0}, 103},
        {2, 1, 5, 4, 30, {4, 10000.0, CF_ROPE_DYNAMIC, 2.0, 16}, 35},
    };
    int bad = 0;
    for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
        const size_t B = cases[k].B, H = cases[k].H, T = cases[k].T, dh = cases[k].dh;
        const size_t n = B * H * T * dh;
        double *buf = calloc(4 * n, sizeof *buf);
        if (!buf) return 1;
        fd_problem p = {{B, H, T, dh, cases[k].pos0, cases[k].pos0 + T, cf_rope_heads(H, T, dh),
                         cf_rope_heads(H, T, dh)},
                        &cases[k].cfg, cases[k].seq_len, buf, buf + n, buf + 2 * n};
        double *dx = buf + 3 * n;
        ref_rng r = ref_rng_new(500 + k);
        for (size_t i = 0; i < n; i++) p.x[i] = ref_rng_uniform(&r, -2, 2);
        for (size_t i = 0; i < n; i++) p.g[i] = ref_rng_uniform(&r, -1, 1);
        ref_rope(dx, p.g, &p.s, p.cfg, p.seq_len, -1.0); /* the backward: g turned back */
        bad += conf_fd_check("rope dx", p.x, n, dx, fd_loss, &p);
        free(buf);
    }
    return bad;
}

/* --- the conformance cases ----------------------------------------------------- */

typedef enum {
    IN_PLACE, /* heads -> the same heads */
    ROWS_TO_HEADS, /* projection rows (ld > H*dh) -> a KV cache of T_cap > T rows */
    HEADS_TO_ROWS, /* and back */
} rope_layout;

typedef struct {
    size_t B, H, T, dh, pos0;
    rope_layout layout;
    cf_rope_config cfg;
    size_t seq_len;
    uint64_t seed;
} rope_case;

#define ROW_PAD 5 /* extra columns of a row layout */
#define CAP_PAD 3 /* extra rows of a head layout's capacity */
#define UNTOUCHED 7.0f /* what the op must leave in the elements it does not own */

static clformer_status run_case(cf_ctx *ctx, const rope_case *c, conf_sink sink, void *user)
{
    const size_t B = c->B, H = c->H, T = c->T, dh = c->dh;
    const size_t ld = H * dh + ROW_PAD, cap = c->pos0 + T + CAP_PAD;
    const cf_rope_strides rows = cf_rope_rows(T, ld, dh), heads = cf_rope_heads(H, cap, dh);
    cf_rope_shape s = {B, H, T, dh, c->pos0, c->pos0 + T, heads, heads};
    /* the forward's rows t sit at positions pos0 + t of a cache */
    size_t x_skip = c->pos0 * dh, out_skip = x_skip;
    if (c->layout == ROWS_TO_HEADS) s.src = rows, x_skip = 0;
    if (c->layout == HEADS_TO_ROWS) s.dst = rows, out_skip = 0;
    const size_t n_x = B * s.src.b, n_out = B * s.dst.b;
    const bool in_place = c->layout == IN_PLACE;

    conf_block b = {0};
    enum { X, OUT, TABLE, DOUT, DX, COUNT };
    const size_t len[COUNT] = {n_x, n_out, s.table_rows * dh, n_out, n_x};
    for (int t = 0; t < COUNT; t++) conf_block_add(&b, len[t]);
    double *x64 = NULL, *out64 = NULL, *dout64 = NULL, *dx64 = NULL;
    clformer_status st = conf_block_create(ctx, &b);
    if (st) goto done;
    ref_rng r = ref_rng_new(c->seed);
    for (int t = 0; t < COUNT; t++) conf_block_init_fill(&b, t, UNTOUCHED);
    float *x = conf_block_init(&b, X), *dout = conf_block_init(&b, DOUT);
    /* only the elements the layouts name get values: the others must stay */
    for (size_t bb = 0; bb < B; bb++)
        for (size_t h = 0; h < H; h++)
            for (size_t t = 0; t < T; t++) {
                ref_fill_uniform(&r, x + x_skip + bb * s.src.b + h * s.src.h + t * s.src.t, NULL,
                                 dh, -2, 2);
                ref_fill_uniform(&r, dout + out_skip + bb * s.dst.b + h * s.dst.h + t * s.dst.t,
                                 NULL, dh, -1, 1);
            }
    conf_round(ctx, x, n_x); /* 16-bit runs: activations as stored */
    conf_round(ctx, dout, n_out);
    if ((st = cf_rope_table(conf_block_init(&b, TABLE), s.table_rows, &c->cfg, c->seq_len)))
        goto done;
    x64 = conf_widen(x, n_x), dout64 = conf_widen(dout, n_out);
    out64 = conf_widen(conf_block_init(&b, in_place ? X : OUT), n_out);
    dx64 = conf_widen(conf_block_init(&b, in_place ? DOUT : DX), n_x);
    if (!x64 || !dout64 || !out64 || !dx64) {
        st = cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory");
        goto done;
    }
    const cf_view v_x = cf_view_add(conf_block_view(&b, X), x_skip),
                  v_dout = cf_view_add(conf_block_view(&b, DOUT), out_skip),
                  v_out = cf_view_add(conf_block_view(&b, in_place ? X : OUT), out_skip),
                  v_dx = cf_view_add(conf_block_view(&b, in_place ? DOUT : DX), x_skip),
                  v_table = conf_block_view(&b, TABLE);
    static const char *const layouts[] = {"in place", "rows->heads", "heads->rows"},
                             *const scalings[] = {"", " linear", " dynamic"};
    char shape[96];
    snprintf(shape, sizeof shape, "B=%zu H=%zu T=%zu dh=%zu pos0=%zu theta=%g%s %s", B, H, T, dh,
             c->pos0, c->cfg.theta, scalings[c->cfg.scaling], layouts[c->layout]);

    if ((st = conf_block_upload(&b))) goto done;
    /* the backward turns the forward's output layout back into its input's */
    cf_rope_shape back = s;
    back.dst = s.src, back.src = s.dst;
    if (conf_warm_up(ctx) && ((st = cf_rope_forward(ctx, v_out, v_x, v_table, &s)) ||
                              (st = cf_rope_backward(ctx, v_dx, v_dout, v_table, &back)) ||
                              (st = cf_finish(ctx)) || (st = conf_block_upload(&b))))
        goto done;

    double t0 = conf_now_ms();
    if ((st = cf_rope_forward(ctx, v_out, v_x, v_table, &s)) || (st = cf_finish(ctx))) goto done;
    double ms = conf_now_ms() - t0;
    if ((st = conf_block_read(&b))) goto done;
    ref_rope(out64 + out_skip, x64 + x_skip, &s, &c->cfg, c->seq_len, 1.0);
    conf_emit(sink, user, "rope_forward", shape,
              conf_guarded(conf_compare_stored(ctx, conf_block_out(&b, in_place ? X : OUT),
                                               out64, n_out, REF_RULE_FORWARD, NULL, NULL),
                           &b),
              ms);

    t0 = conf_now_ms();
    if ((st = cf_rope_backward(ctx, v_dx, v_dout, v_table, &back)) || (st = cf_finish(ctx)))
        goto done;
    ms = conf_now_ms() - t0;
    if ((st = conf_block_read(&b))) goto done;
    ref_rope(dx64 + x_skip, dout64 + out_skip, &back, &c->cfg, c->seq_len, -1.0);
    conf_emit(sink, user, "rope_backward", shape,
              conf_guarded(conf_compare_stored(ctx, conf_block_out(&b, in_place ? DOUT : DX),
                                               dx64, n_x, REF_RULE_GRAD, NULL, NULL),
                           &b),
              ms);
done:
    conf_block_free(&b);
    free(x64), free(out64), free(dout64), free(dx64);
    return st;
}

#define PLAIN(dh, theta) {dh, theta, CF_ROPE_PLAIN, 0, 0}

/* quick (simulators): odd halves, both layouts, each scaling, positions past
 * a dynamic table's length; else a Llama layer's shapes, at positions past
 * 4000 too (where an angle's ulp is 5e-4, so a table rounded differently
 * from transformers' would show). */
static clformer_status rope_check(cf_ctx *ctx, bool quick, conf_sink sink, void *user)
{
    static const rope_case small[] = {
        {2, 3, 5, 8, 0, IN_PLACE, PLAIN(8, 10000.0), 5, 1},
        {1, 2, 3, 6, 7, ROWS_TO_HEADS, {6, 500000.0, CF_ROPE_LINEAR, 2.0, 0}, 10, 2},
        {2, 1, 4, 2, 16, HEADS_TO_ROWS, PLAIN(2, 10000.0), 20, 3},
        {1, 3, 6, 10, 30, ROWS_TO_HEADS, {10, 10000.0, CF_ROPE_DYNAMIC, 4.0, 8}, 36, 4},
    },
                          full[] = {
        {4, 8, 64, 64, 0, ROWS_TO_HEADS, PLAIN(64, 10000.0), 64, 5},
        {4, 8, 64, 64, 0, HEADS_TO_ROWS, PLAIN(64, 10000.0), 64, 6},
        {1, 4, 16, 128, 4000, IN_PLACE, PLAIN(128, 500000.0), 4016, 7},
        {8, 2, 128, 64, 900, ROWS_TO_HEADS, {64, 10000.0, CF_ROPE_DYNAMIC, 2.0, 512}, 1028, 8},
        {2, 12, 256, 64, 0, IN_PLACE, {64, 10000.0, CF_ROPE_LINEAR, 4.0, 0}, 256, 9},
    };
    CONF_RUN_CASES(run_case, small, full, quick, ctx, sink, user);
    return CLFORMER_OK;
}

CONF_OP(rope) = {"rope",
                 "rope_rotate",
                 "cf_rope_forward, cf_rope_backward, cf_rope_table",
                 "ref_rope (this file), angles from cf_rope_frequencies and cf_rope_angle",
                 "forward rule for out; gradient rule for dx",
                 rope_check,
                 rope_gradcheck,
                 "the table against transformers' own: tests/host/test_rope_table.c",
                 true};
