/* The feed-forward layer, y = dropout(act(x W1^T + b1)) W2^T + b2, described once:
 * its double-precision reference, the reference's finite differences, its
 * conformance cases and its descriptor. It checks the two launchers that
 * join a product and the activation, cf_linear_act_forward and
 * cf_linear_act_backward, with the layer's other products around them. On
 * the host provider the activation and its gradient are the products'
 * epilogues (runtime/device/gemm_epilogue.c, ReLU and tanh GELU); elsewhere,
 * and for the erf GELU, they are the activation op's kernels. Each output is
 * compared with the reference computed from the device's own inputs to that
 * step (its pre-activation, activation and gradients), so that a product's
 * rounding is judged by the GEMM rule and the activation's by the forward
 * and gradient rules. */
#include "conf_activation.h"
#include "conf_block.h"
#include "conformance.h"
#include "ops.h"
#include "ref_gemm.h"
#include "ref_philox.h"
#include "ref_random.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* --- the reference, in double -------------------------------------------------- */

/* h (N, F) = dropout(act(pre + b1)), element i of the dropout site the
 * flat index r * F + c (NULL dropout: none) */
static void ref_act_rows(double *h, const double *pre, const double *b1, size_t N, size_t F,
                         clformer_activation act, const ref_dropout *drop)
{
    for (size_t i = 0; i < N * F; i++)
        h[i] = ref_act_value(pre[i] + b1[i % F], act) * ref_dropout_scale(drop, i);
}

/* y (N, D) = h W2^T + b2; bound (may be NULL): the GEMM rule's scale */
static void ref_second(double *y, double *bound, const double *h, const double *w2,
                       const double *b2, size_t N, size_t D, size_t F)
{
    ref_gemm(false, true, N, D, F, 1.0, h, F, w2, F, 0.0, y, D, bound);
    for (size_t i = 0; i < N * D; i++) {
        y[i] += b2[i % D];
        if (bound) bound[i] += fabs(b2[i % D]);
    }
}

/* The backward of the second product and the activation, from its inputs
 * h and pre: dw2 += dy^T h, db2 += colsum(dy), dpre = act'(pre + b1) mask
 * (dy W2), db1 += colsum(dpre). */
static void ref_second_backward(double *dpre, double *dw2, double *db2, double *db1,
                                const double *dy, const double *h, const double *w2,
                                const double *pre, const double *b1, size_t N, size_t D,
                                size_t F, clformer_activation act, const ref_dropout *drop)
{
    ref_gemm(true, false, D, F, N, 1.0, dy, D, h, F, 1.0, dw2, F, NULL);
    ref_gemm(false, false, N, F, D, 1.0, dy, D, w2, F, 0.0, dpre, F, NULL);
    for (size_t i = 0; i < N * D; i++) db2[i % D] += dy[i];
    for (size_t i = 0; i < N * F; i++) {
        dpre[i] *= ref_act_grad(pre[i] + b1[i % F], act) * ref_dropout_scale(drop, i);
        db1[i % F] += dpre[i];
    }
}

/* The first product's backward from dpre: dw1 += dpre^T x, dx = dpre W1. */
static void ref_first_backward(double *dx, double *dw1, const double *dpre, const double *x,
                               const double *w1, size_t N, size_t D, size_t F)
{
    ref_gemm(true, false, F, D, N, 1.0, dpre, F, x, D, 1.0, dw1, D, NULL);
    ref_gemm(false, false, N, D, F, 1.0, dpre, F, w1, D, 0.0, dx, D, NULL);
}

/* --- the conformance cases ----------------------------------------------------- */

typedef struct {
    size_t N, D, F; /* rows, model width, hidden width */
    clformer_activation act;
    uint64_t seed;
    float p; /* the activation's dropout */
} ffn_case;

enum { X, W1, B1, W2, B2, DY, PRE, H, Y, DPRE, DW2, DB2, DB1, DW1, DX, COUNT };

static clformer_status run_case(cf_ctx *ctx, const ffn_case *k, conf_sink sink, void *user)
{
    const size_t N = k->N, D = k->D, F = k->F;
    const size_t len[COUNT] = {N * D, F * D, F, D * F, D, N * D, N * F, N * F,
                               N * D, N * F, D * F, D, F, F * D, N * D};
    conf_block b = {0};
    for (int t = 0; t < COUNT; t++) conf_block_add(&b, len[t]);
    double *v64[COUNT] = {0}, *ref[COUNT] = {0}, *bound = NULL;
    clformer_status st = conf_block_create(ctx, &b);
    if (st) goto done;
    ref_rng r = ref_rng_new(k->seed);
    for (int t = X; t <= DY; t++)
        ref_fill_uniform(&r, conf_block_init(&b, t), NULL, len[t], t == B1 ? -0.5 : -1, t == B1 ? 0.5 : 1);
    for (int t = DW2; t <= DW1; t++) /* gradients already there: added to */
        ref_fill_uniform(&r, conf_block_init(&b, t), NULL, len[t], -1, 1);
    for (int t = PRE; t <= DPRE; t++) conf_block_init_fill(&b, t, NAN); /* overwritten */
    conf_block_init_fill(&b, DX, NAN);
    bool oom = !(bound = malloc(sizeof *bound * (N * F > N * D ? N * F : N * D)));
    for (int t = 0; t < COUNT; t++) oom |= !(ref[t] = calloc(len[t], sizeof **ref));
    if (oom) {
        st = cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory");
        goto done;
    }
    cf_view v[COUNT];
    for (int t = 0; t < COUNT; t++) v[t] = conf_block_view(&b, t);
    char shape[96];
    snprintf(shape, sizeof shape, "N=%zu D=%zu F=%zu %s", N, D, F,
             clformer_activation_name(k->act));
    if (k->p > 0.0f) /* snprintf: the shape's text is far shorter than the buffer */
        snprintf(shape + strlen(shape), sizeof shape - strlen(shape), " dropout %g", (double)k->p);
    const cf_dropout drop = {k->p, 0xC0FFEEULL + k->seed, 4, 13};
    const ref_dropout rdrop = {drop.p, drop.seed, drop.step, drop.site};
    const cf_dropout *dev_drop = k->p > 0.0f ? &drop : NULL;

    if ((st = conf_block_upload(&b))) goto done;
    double t0 = conf_now_ms();
    if ((st = cf_linear_act_forward(ctx, v[H], v[PRE], v[X], v[W1], v[B1], N, D, F, k->act,
                                    dev_drop)) ||
        (st = cf_linear_forward(ctx, v[Y], v[H], v[W2], v[B2], N, F, D)) || (st = cf_finish(ctx)))
        goto done;
    double ms = conf_now_ms() - t0;
    if ((st = conf_block_read(&b))) goto done;
    for (int t = 0; t < COUNT; t++) /* what the device holds now, and held before */
        if (!(v64[t] = conf_widen(t <= DY || t >= DW2 ? conf_block_init(&b, t)
                                                       : conf_block_out(&b, t),
                                  len[t]))) {
            st = cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory");
            goto done;
        }
    ref_gemm(false, true, N, F, D, 1.0, v64[X], D, v64[W1], D, 0.0, ref[PRE], F, bound);
    ref_cmp c = ref_compare_gemm(conf_block_out(&b, PRE), ref[PRE], bound, N * F);
    ref_act_rows(ref[H], v64[PRE], v64[B1], N, F, k->act, &rdrop);
    c = conf_worse(c, ref_compare_forward(conf_block_out(&b, H), ref[H], N * F));
    ref_second(ref[Y], bound, v64[H], v64[W2], v64[B2], N, D, F);
    c = conf_worse(c, ref_compare_gemm(conf_block_out(&b, Y), ref[Y], bound, N * D));
    conf_emit(sink, user, "feed_forward_forward", shape, conf_guarded(c, &b), ms);

    t0 = conf_now_ms();
    if ((st = cf_linear_act_backward(ctx, v[DPRE], v[DW2], v[DB2], v[DB1], v[DY], v[H], v[W2],
                                     v[PRE], v[B1], N, F, D, k->act, dev_drop)) ||
        (st = cf_linear_backward(ctx, v[DX], v[DW1], cf_view_at(NULL, 0), v[DPRE], v[X], v[W1],
                                 N, D, F, false)) ||
        (st = cf_finish(ctx)))
        goto done;
    ms = conf_now_ms() - t0;
    if ((st = conf_block_read(&b))) goto done;
    for (int t = DW2; t <= DW1; t++) /* the gradients' starting values */
        for (size_t i = 0; i < len[t]; i++) ref[t][i] = v64[t][i];
    ref_second_backward(ref[DPRE], ref[DW2], ref[DB2], ref[DB1], v64[DY], v64[H], v64[W2],
                        v64[PRE], v64[B1], N, D, F, k->act, &rdrop);
    double *dpre = conf_widen(conf_block_out(&b, DPRE), N * F); /* the device's, for dx, dw1 */
    if (!dpre) {
        st = cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory");
        goto done;
    }
    ref_first_backward(ref[DX], ref[DW1], dpre, v64[X], v64[W1], N, D, F);
    free(dpre);
    c = ref_compare_grad(conf_block_out(&b, DPRE), ref[DPRE], N * F);
    static const int grads[] = {DW2, DB2, DB1, DW1, DX};
    for (size_t i = 0; i < sizeof grads / sizeof *grads; i++)
        c = conf_worse(c, ref_compare_grad(conf_block_out(&b, grads[i]), ref[grads[i]],
                                           len[grads[i]]));
    conf_emit(sink, user, "feed_forward_backward", shape, conf_guarded(c, &b), ms);
done:
    conf_block_free(&b);
    for (int t = 0; t < COUNT; t++) free(v64[t]), free(ref[t]);
    free(bound);
    return st;
}

/* quick (simulators): small odd shapes; else also gpt-mini's layer (768
 * rows: the host provider spreads its products' rows over its threads) and
 * a wide one with few rows (spread by columns). Each activation, the erf
 * GELU taking the activation op's kernels everywhere; with dropout, one
 * small shape and the wide one (its slices of columns number the mask from
 * their first column). */
static clformer_status ffn_check(cf_ctx *ctx, bool quick, conf_sink sink, void *user)
{
    static const ffn_case small[] = {{7, 13, 37, 0, 1, 0}, {1, 1, 1, 0, 2, 0},
                                     {40, 9, 70, 0, 3, 0}, {40, 9, 70, 0, 7, 0.2f}},
                          full[] = {{768, 128, 512, 0, 4, 0}, {40, 128, 1100, 0, 5, 0},
                                    {257, 93, 61, 0, 6, 0}, {40, 128, 1100, 0, 8, 0.1f}};
    enum { SMALL = sizeof small / sizeof *small, FULL = sizeof full / sizeof *full };
    for (int a = CLFORMER_ACT_RELU; a <= CLFORMER_ACT_GELU_TANH; a++)
        for (size_t i = 0; i < SMALL + (quick ? 0 : FULL); i++) {
            ffn_case k = i < SMALL ? small[i] : full[i - SMALL];
            k.act = (clformer_activation)a, k.seed += 100 * (uint64_t)a;
            CF_TRY(run_case(ctx, &k, sink, user));
        }
    return CLFORMER_OK;
}

/* --- checks of the reference ---------------------------------------------------- */

typedef struct {
    size_t N, D, F;
    clformer_activation act;
    double *x, *w1, *b1, *w2, *b2, *g, *pre, *h, *y;
    const ref_dropout *drop; /* a fixed mask: the loss stays smooth */
} fd_problem;

static double fd_loss(void *user)
{
    fd_problem *p = user;
    ref_gemm(false, true, p->N, p->F, p->D, 1.0, p->x, p->D, p->w1, p->D, 0.0, p->pre, p->F, NULL);
    ref_act_rows(p->h, p->pre, p->b1, p->N, p->F, p->act, p->drop);
    ref_second(p->y, NULL, p->h, p->w2, p->b2, p->N, p->D, p->F);
    double s = 0.0;
    for (size_t i = 0; i < p->N * p->D; i++) s += p->y[i] * p->g[i];
    return s;
}

/* The smallest |pre + b1| of the problem (ReLU's kink must stay clear of
 * the differences' steps). */
static double kink_margin(fd_problem *p)
{
    fd_loss(p);
    double least = INFINITY;
    for (size_t i = 0; i < p->N * p->F; i++) least = fmin(least, fabs(p->pre[i] + p->b1[i % p->F]));
    return least;
}

/* Finite differences of the whole layer's reference backward, for every
 * parameter and the input, each activation. */
static int ffn_gradcheck(void)
{
    /* the last with dropout: half the hidden units dropped, a fixed mask */
    const size_t shapes[][3] = {{1, 1, 1}, {3, 5, 7}, {4, 3, 9}, {4, 3, 9}};
    const ref_dropout half = {0.5f, 77, 2, 5};
    int bad = 0;
    for (int act = CLFORMER_ACT_RELU; act <= CLFORMER_ACT_GELU_TANH; act++)
        for (size_t s = 0; s < 4; s++) {
            const size_t N = shapes[s][0], D = shapes[s][1], F = shapes[s][2];
            const size_t sizes[] = {N * D, F * D, F, D * F, D, N * D, N * F, N * F, N * D,
                                    N * F, D * F, D, F, F * D, N * D};
            double *t[15];
            bool oom = false;
            for (int i = 0; i < 15; i++) oom |= !(t[i] = calloc(sizes[i], sizeof **t));
            fd_problem p = {N, D, F, (clformer_activation)act, t[0], t[1], t[2], t[3], t[4],
                            t[5], t[6], t[7], t[8], s == 3 ? &half : NULL};
            double *dpre = t[9], *dw2 = t[10], *db2 = t[11], *db1 = t[12], *dw1 = t[13],
                   *dx = t[14];
            ref_rng r = ref_rng_new(1000 + 10 * (uint64_t)act + s);
            for (int tries = 0; !oom && tries < 50; tries++) {
                for (int i = 0; i < 6; i++)
                    for (size_t j = 0; j < sizes[i]; j++) t[i][j] = ref_rng_uniform(&r, -1, 1);
                if (act != CLFORMER_ACT_RELU || kink_margin(&p) > 0.01) break;
            }
            if (!oom) {
                fd_loss(&p);
                ref_second_backward(dpre, dw2, db2, db1, p.g, p.h, p.w2, p.pre, p.b1, N, D, F,
                                    p.act, p.drop);
                ref_first_backward(dx, dw1, dpre, p.x, p.w1, N, D, F);
                bad += conf_fd_check("feed_forward dx", p.x, N * D, dx, fd_loss, &p);
                bad += conf_fd_check("feed_forward dw1", p.w1, F * D, dw1, fd_loss, &p);
                bad += conf_fd_check("feed_forward db1", p.b1, F, db1, fd_loss, &p);
                bad += conf_fd_check("feed_forward dw2", p.w2, D * F, dw2, fd_loss, &p);
                bad += conf_fd_check("feed_forward db2", p.b2, D, db2, fd_loss, &p);
            }
            bad += oom;
            for (int i = 0; i < 15; i++) free(t[i]);
        }
    return bad;
}

CONF_OP(feed_forward) = {"feed_forward", "",
    "cf_linear_act_forward, cf_linear_act_backward (with cf_linear_forward and "
    "cf_linear_backward around them)",
    "ref_gemm (reference/ref_gemm.c), ref_act_value, ref_act_grad (conf_activation.c); the "
    "dropout mask ref_philox.c",
    "GEMM rule for the products; forward rule for the activation; gradient rule for the "
    "gradients (each from the device's inputs to its step)",
    ffn_check, ffn_gradcheck,
    "no kernels of its own: the products' epilogues on the host provider, else the activation "
    "op's kernels (checked there, in bf16 and fp16 too; the epilogues run on fp32 only)",
    false};
