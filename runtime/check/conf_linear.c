/* The linear layer, described once: its double-precision reference, the
 * checks of that reference (finite differences, the += rules), its
 * conformance cases and its descriptor. Forward (GEMM + bias, GEMM rule with
 * the bias in the bound; out overwritten even over NaN) and backward (dinp,
 * dweight, dbias, gradient rule) overwriting dinp, accumulating into it, and
 * without dinp; dweight and dbias add to existing values; with or without
 * bias; every tensor guarded; odd shapes and the model's widths; repeats
 * bit-identical; empty sizes. The launchers are runtime/ops/ops_linear.c (the
 * products through cf_gemm, the bias through cl/activation.cl's bias_add);
 * test_gemm runs this check once more under each GEMM provider. */
#include "conf_block.h"
#include "conformance.h"
#include "ops.h"
#include "ref_gemm.h"
#include "ref_random.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

/* --- the reference, in double (weight (OC, IC) as PyTorch stores it) --------- */

/* out (N, OC) = inp (N, IC) weight^T + bias; bias may be NULL. */
static void ref_linear_forward(double *out, const double *inp, const double *weight,
                               const double *bias, size_t N, size_t IC, size_t OC)
{
    for (size_t n = 0; n < N; n++)
        for (size_t o = 0; o < OC; o++) {
            double acc = bias ? bias[o] : 0.0;
            for (size_t i = 0; i < IC; i++) acc += inp[n * IC + i] * weight[o * IC + i];
            out[n * OC + o] = acc;
        }
}

/* dweight += dout^T inp; dbias += sum_rows(dout) (skipped when NULL);
 * dinp = (or += when accumulate) dout weight (skipped when NULL). */
static void ref_linear_backward(double *dinp, double *dweight, double *dbias, const double *dout,
                                const double *inp, const double *weight, size_t N, size_t IC,
                                size_t OC, bool accumulate)
{
    for (size_t o = 0; o < OC; o++)
        for (size_t i = 0; i < IC; i++) {
            double acc = 0.0;
            for (size_t n = 0; n < N; n++) acc += dout[n * OC + o] * inp[n * IC + i];
            dweight[o * IC + i] += acc;
        }
    if (dbias)
        for (size_t o = 0; o < OC; o++)
            for (size_t n = 0; n < N; n++) dbias[o] += dout[n * OC + o];
    if (dinp)
        for (size_t n = 0; n < N; n++)
            for (size_t i = 0; i < IC; i++) {
                double acc = 0.0;
                for (size_t o = 0; o < OC; o++) acc += dout[n * OC + o] * weight[o * IC + i];
                dinp[n * IC + i] = accumulate ? dinp[n * IC + i] + acc : acc;
            }
}

/* --- the conformance cases ----------------------------------------------------- */

typedef struct {
    size_t N, IC, OC;
    bool bias;
    uint64_t seed;
} linear_case;

static clformer_status run_case(cf_ctx *ctx, const linear_case *k, conf_sink sink, void *user)
{
    const size_t N = k->N, IC = k->IC, OC = k->OC;
    conf_block b = {0};
    enum { X, W, BIAS, DY, Y, DX, DW, DB, COUNT };
    const size_t len[COUNT] = {N * IC, OC * IC, OC, N * OC, N * OC, N * IC, OC * IC, OC};
    for (int t = 0; t < COUNT; t++) conf_block_add(&b, len[t]);
    double *in64[COUNT] = {0}, *y64 = malloc(N * OC * 8), *bound = malloc(N * OC * 8),
           *dx64 = malloc(N * IC * 8);
    clformer_status st = conf_block_create(ctx, &b);
    if (st) goto done;
    ref_rng r = ref_rng_new(k->seed);
    for (int t = X; t <= DY; t++) ref_fill_uniform(&r, conf_block_init(&b, t), NULL, len[t], -1, 1);
    ref_fill_uniform(&r, conf_block_init(&b, DW), NULL, OC * IC, -1, 1); /* existing gradients */
    ref_fill_uniform(&r, conf_block_init(&b, DB), NULL, OC, -1, 1);
    /* 16-bit runs: input, weight, bias and dout as stored; the weight
     * gradients added to stay fp32 */
    for (int t = X; t <= DY; t++) conf_round(ctx, conf_block_init(&b, t), len[t]);
    conf_block_init_fill(&b, Y, NAN);  /* overwritten */
    conf_block_init_fill(&b, DX, NAN); /* overwritten first */
    bool oom = !y64 || !bound || !dx64;
    for (int t = 0; t < COUNT; t++)
        if (t != Y && t != DX) oom |= !(in64[t] = conf_widen(conf_block_init(&b, t), len[t]));
    if (oom) {
        st = cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory");
        goto done;
    }
    const cf_view vx = conf_block_view(&b, X), vw = conf_block_view(&b, W),
                  vb = k->bias ? conf_block_view(&b, BIAS) : cf_view_at(NULL, 0),
                  vdy = conf_block_view(&b, DY), vy = conf_block_view(&b, Y),
                  vdx = conf_block_view(&b, DX), vdw = conf_block_view(&b, DW),
                  vdb = k->bias ? conf_block_view(&b, DB) : cf_view_at(NULL, 0);
    const double *b64 = k->bias ? in64[BIAS] : NULL;
    double *db64 = k->bias ? in64[DB] : NULL; /* without bias: dbias stays as it was */
    char shape[96];
    snprintf(shape, sizeof shape, "N=%zu IC=%zu OC=%zu%s", N, IC, OC, k->bias ? "" : " no bias");

    /* Both kernels once before the timed runs (PoCL compiles at the first
     * launch); the upload afterwards restores every initial value. */
    if ((st = conf_block_upload(&b))) goto done;
    if (conf_warm_up(ctx) &&
        ((st = cf_linear_forward(ctx, vy, vx, vw, vb, N, IC, OC)) ||
         (st = cf_linear_backward(ctx, vdx, vdw, vdb, vdy, vx, vw, N, IC, OC, false)) ||
         (st = cf_finish(ctx)) || (st = conf_block_upload(&b))))
        goto done;

    double t0 = conf_now_ms();
    if ((st = cf_linear_forward(ctx, vy, vx, vw, vb, N, IC, OC)) || (st = cf_finish(ctx)))
        goto done;
    double ms = conf_now_ms() - t0;
    if ((st = conf_block_read(&b))) goto done;
    ref_gemm(false, true, N, OC, IC, 1.0, in64[X], IC, in64[W], IC, 0.0, y64, OC, bound);
    ref_linear_forward(y64, in64[X], in64[W], b64, N, IC, OC);
    for (size_t i = 0; b64 && i < N * OC; i++) bound[i] += fabs(b64[i % OC]);
    conf_emit(sink, user, "linear_forward", shape,
              conf_guarded(conf_compare_stored(ctx, conf_block_out(&b, Y), y64, N * OC,
                                               REF_RULE_GEMM, bound, NULL),
                           &b),
              ms);

    /* backward: dinp overwritten (over NaN), then accumulated, then not wanted */
    static const char *const op[3] = {"linear_backward", "linear_backward_accumulate",
                                      "linear_backward_params_only"};
    for (int pass = 0; pass < 3; pass++) {
        const bool acc = pass == 1, with_dx = pass < 2;
        t0 = conf_now_ms();
        if ((st = cf_linear_backward(ctx, with_dx ? vdx : cf_view_at(NULL, 0), vdw, vdb, vdy, vx,
                                     vw, N, IC, OC, acc)) ||
            (st = cf_finish(ctx)))
            goto done;
        ms = conf_now_ms() - t0;
        if ((st = conf_block_read(&b))) goto done;
        ref_linear_backward(with_dx ? dx64 : NULL, in64[DW], db64, in64[DY], in64[X], in64[W], N,
                            IC, OC, acc);
        ref_cmp c = conf_worse(ref_compare_grad(conf_block_out(&b, DW), in64[DW], OC * IC),
                               ref_compare_grad(conf_block_out(&b, DB), in64[DB], OC));
        if (with_dx)
            c = conf_worse(conf_compare_stored(ctx, conf_block_out(&b, DX), dx64, N * IC,
                                               REF_RULE_GRAD, NULL, NULL),
                           c);
        conf_emit(sink, user, op[pass], shape, conf_guarded(c, &b), ms);
    }
done:
    conf_block_free(&b);
    for (int t = 0; t < COUNT; t++) free(in64[t]);
    free(y64), free(bound), free(dx64);
    return st;
}

/* The forward and the backward of a repeat, on its views. */
typedef struct {
    cf_view x, w, bias, dy, y, dx, dw, db;
    size_t N, IC, OC;
} repeat_views;

static clformer_status repeat_launch(cf_ctx *ctx, const void *args)
{
    const repeat_views *v = args;
    CF_TRY(cf_linear_forward(ctx, v->y, v->x, v->w, v->bias, v->N, v->IC, v->OC));
    return cf_linear_backward(ctx, v->dx, v->dw, v->db, v->dy, v->x, v->w, v->N, v->IC, v->OC,
                              false);
}

/* Forward and backward twice on the same inputs into fresh outputs: every
 * output bit-identical (the GEMM providers and bias_add fix their order of
 * summation). */
static clformer_status run_repeat(cf_ctx *ctx, size_t N, size_t IC, size_t OC, conf_sink sink,
                                  void *user)
{
    conf_block b = {0};
    enum { X, W, BIAS, DY, Y, DX, DW, DB, COUNT };
    const size_t len[COUNT] = {N * IC, OC * IC, OC, N * OC, N * OC, N * IC, OC * IC, OC};
    for (int t = 0; t < COUNT; t++) conf_block_add(&b, len[t]);
    clformer_status st = conf_block_create(ctx, &b);
    if (st) goto done;
    ref_rng r = ref_rng_new(60);
    for (int t = X; t <= DY; t++) ref_fill_uniform(&r, conf_block_init(&b, t), NULL, len[t], -1, 1);
    for (int t = X; t <= DY; t++) conf_round(ctx, conf_block_init(&b, t), len[t]);
    const repeat_views v = {conf_block_view(&b, X),  conf_block_view(&b, W),
                            conf_block_view(&b, BIAS), conf_block_view(&b, DY),
                            conf_block_view(&b, Y),  conf_block_view(&b, DX),
                            conf_block_view(&b, DW), conf_block_view(&b, DB),
                            N, IC, OC};
    ref_cmp c;
    if ((st = conf_block_repeat(&b, repeat_launch, &v, Y, COUNT, &c))) goto done;
    char shape[96];
    snprintf(shape, sizeof shape, "N=%zu IC=%zu OC=%zu twice", N, IC, OC);
    conf_emit(sink, user, "linear_repeat", shape, conf_guarded(c, &b), 0.0);
done:
    conf_block_free(&b);
    return st;
}

/* Empty sizes: N or OC of 0 touch nothing; IC of 0 gives out = bias, and a
 * backward with OC of 0 dinp = 0. */
static clformer_status run_empty(cf_ctx *ctx, conf_sink sink, void *user)
{
    conf_block b = {0};
    enum { BIAS, Y, ANY, COUNT };
    conf_block_add(&b, 3), conf_block_add(&b, 6), conf_block_add(&b, 8);
    clformer_status st = conf_block_create(ctx, &b);
    if (st) goto done;
    static const float bias[3] = {0.5f, -1.0f, 2.0f};
    for (int i = 0; i < 3; i++) conf_block_init(&b, BIAS)[i] = bias[i];
    conf_block_init_fill(&b, Y, NAN);
    const cf_view vb = conf_block_view(&b, BIAS), vy = conf_block_view(&b, Y),
                  any = conf_block_view(&b, ANY);
    double want[6];
    for (int i = 0; i < 6; i++) want[i] = bias[i % 3];
    if ((st = conf_block_upload(&b)) || (st = cf_linear_forward(ctx, vy, any, any, vb, 2, 0, 3)) ||
        (st = cf_linear_forward(ctx, any, any, any, vb, 0, 4, 3)) ||
        (st = cf_linear_forward(ctx, any, any, any, vb, 2, 4, 0)) || (st = cf_finish(ctx)) ||
        (st = conf_block_read(&b)))
        goto done;
    ref_cmp c = ref_compare_exact(conf_block_out(&b, Y), want, 6);
    if ((st = cf_linear_backward(ctx, vy, any, vb, any, any, any, 2, 3, 0, false)) ||
        (st = cf_finish(ctx)) || (st = conf_block_read(&b)))
        goto done;
    for (int i = 0; i < 6; i++) want[i] = 0.0; /* dinp = dout W with OC = 0 */
    c = conf_worse(c, ref_compare_exact(conf_block_out(&b, Y), want, 6));
    if (!conf_block_unchanged(&b, ANY) || !conf_block_unchanged(&b, BIAS))
        c.pass = false, c.why = "an empty call changed a tensor";
    conf_emit(sink, user, "linear_empty", "IC=0, N=0, OC=0", conf_guarded(c, &b), 0.0);
done:
    conf_block_free(&b);
    return st;
}

/* quick (simulators): small odd shapes with and without bias; else odd
 * shapes in every position and a model width, and in fp32 the model's other
 * feed-forward and projection widths (d_model 512, d_ff 2048: a 16-bit run
 * differs from fp32 only where it stores, which the shapes before check). */
static clformer_status linear_check(cf_ctx *ctx, bool quick, conf_sink sink, void *user)
{
    static const linear_case small[] = {
        {7, 13, 5, true, 7 * 7919 + 13 * 31 + 5},
        {1, 1, 1, true, 10}, {7, 5, 3, true, 11}, {3, 7, 13, true, 12}, {13, 3, 5, true, 13},
        {1, 1, 1, false, 30}, {7, 5, 3, false, 31}, {3, 7, 13, false, 32}, {13, 3, 5, false, 33},
        {5, 24, 16, true, 50},
        /* N long, the weights one tile: with GPU layouts the weight gradient
         * is split over N (ops_linear.c), here in two; in `full` up to 8 ways
         * (one tile) and over four tiles */
        {1024, 8, 6, true, 60}};
    static const linear_case full[] = {
        {93, 257, 61, true, 93 * 7919 + 257 * 31 + 61},
        {128, 512, 2048, true, 128 * 7919 + 512 * 31 + 2048},
        {7, 61, 93, true, 111},   {61, 93, 257, true, 112},  {93, 257, 7, true, 113},
        {257, 7, 61, true, 114},  {1, 257, 93, true, 115},   {257, 1, 7, true, 116},
        {7, 7, 257, true, 117},   {7, 61, 93, false, 131},   {61, 93, 257, false, 132},
        {93, 257, 7, false, 133}, {257, 7, 61, false, 134},  {1, 257, 93, false, 135},
        {257, 1, 7, false, 136},  {7, 7, 257, false, 137},  {4096, 24, 20, true, 61},
        {4096, 67, 65, false, 62}};
    static const linear_case widths[] = {
        {61, 512, 2048, true, 51}, {93, 2048, 512, true, 52}, {257, 512, 512, true, 53}};
    CONF_RUN_CASES(run_case, small, full, quick, ctx, sink, user);
    for (size_t i = 0; !quick && ctx->precision == CLFORMER_FP32 && i < 3; i++)
        CF_TRY(run_case(ctx, &widths[i], sink, user));
    CF_TRY(quick ? run_repeat(ctx, 40, 9, 7, sink, user)
                 : run_repeat(ctx, 257, 512, 93, sink, user));
    return run_empty(ctx, sink, user);
}

/* --- checks of the reference ---------------------------------------------------- */

typedef struct {
    size_t N, IC, OC;
    double *x, *w, *b, *g, *y; /* b NULL: no bias */
} fd_problem;

static double fd_loss(void *user)
{
    fd_problem *p = user;
    ref_linear_forward(p->y, p->x, p->w, p->b, p->N, p->IC, p->OC);
    double s = 0.0;
    for (size_t i = 0; i < p->N * p->OC; i++) s += p->y[i] * p->g[i];
    return s;
}

/* The += rules: a second backward adds its dweight and dbias, dinp is
 * overwritten unless accumulating, and without dinp only the parameter
 * gradients move. Returns the mismatches. */
static int linear_accumulate_rules(void)
{
    enum { N = 5, IC = 4, OC = 3 };
    double x[N * IC], w[OC * IC], g[N * OC];
    double d1[N * IC] = {0}, w1[OC * IC] = {0}, b1[OC] = {0};
    double d2[N * IC], w2[OC * IC] = {0}, b2[OC] = {0};
    ref_rng r = ref_rng_new(99);
    for (size_t i = 0; i < N * IC; i++) x[i] = ref_rng_uniform(&r, -1, 1);
    for (size_t i = 0; i < OC * IC; i++) w[i] = ref_rng_uniform(&r, -1, 1);
    for (size_t i = 0; i < N * OC; i++) g[i] = ref_rng_uniform(&r, -1, 1);
    ref_linear_backward(d1, w1, b1, g, x, w, N, IC, OC, false);
    for (size_t i = 0; i < N * IC; i++) d2[i] = -7.0; /* overwritten when accumulate is false */
    ref_linear_backward(d2, w2, b2, g, x, w, N, IC, OC, false);
    ref_linear_backward(d2, w2, b2, g, x, w, N, IC, OC, true);
    int bad = 0;
    for (size_t i = 0; i < N * IC; i++) bad += !(fabs(d2[i] - 2.0 * d1[i]) < 1e-12);
    for (size_t i = 0; i < OC * IC; i++) bad += !(fabs(w2[i] - 2.0 * w1[i]) < 1e-12);
    for (size_t i = 0; i < OC; i++) bad += !(fabs(b2[i] - 2.0 * b1[i]) < 1e-12);
    ref_linear_backward(NULL, w2, b2, g, x, w, N, IC, OC, true);
    for (size_t i = 0; i < OC * IC; i++) bad += !(fabs(w2[i] - 3.0 * w1[i]) < 1e-12);
    if (bad) fprintf(stderr, "linear reference: %d mismatches of the += rules\n", bad);
    return bad;
}

/* Finite differences of the reference backward, with and without bias; then
 * the += rules. */
static int linear_gradcheck(void)
{
    const size_t shapes[][3] = {{1, 1, 1}, {7, 5, 3}, {3, 7, 13}, {2, 61, 4}};
    int bad = 0;
    for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++)
        for (int with_bias = 0; with_bias < 2; with_bias++) {
            const size_t N = shapes[s][0], IC = shapes[s][1], OC = shapes[s][2];
            const size_t n = 2 * N * IC + 2 * OC * IC + 2 * OC + 2 * N * OC;
            double *buf = calloc(n, sizeof *buf);
            if (!buf) return 1;
            fd_problem p = {N, IC, OC, buf, buf + N * IC, buf + N * IC + OC * IC, NULL, NULL};
            p.g = p.b + OC;
            p.y = p.g + N * OC;
            double *dx = p.y + N * OC, *dw = dx + N * IC, *db = dw + OC * IC;
            ref_rng r = ref_rng_new(10 * s + (uint64_t)with_bias);
            for (size_t i = 0; i < N * IC; i++) p.x[i] = ref_rng_uniform(&r, -1, 1);
            for (size_t i = 0; i < OC * IC; i++) p.w[i] = ref_rng_uniform(&r, -1, 1);
            for (size_t i = 0; i < OC; i++) p.b[i] = ref_rng_uniform(&r, -1, 1);
            for (size_t i = 0; i < N * OC; i++) p.g[i] = ref_rng_uniform(&r, -1, 1);
            double *bias = p.b;
            if (!with_bias) p.b = NULL;
            ref_linear_backward(dx, dw, p.b ? db : NULL, p.g, p.x, p.w, N, IC, OC, false);
            bad += conf_fd_check("linear dinp", p.x, N * IC, dx, fd_loss, &p);
            bad += conf_fd_check("linear dweight", p.w, OC * IC, dw, fd_loss, &p);
            if (with_bias) bad += conf_fd_check("linear dbias", bias, OC, db, fd_loss, &p);
            free(buf);
        }
    return bad + linear_accumulate_rules();
}

CONF_OP(linear) = {"linear", "bias_add",
    "cf_linear_forward, cf_linear_backward",
    "ref_linear_forward, ref_linear_backward (this file; the bound from ref_gemm, shared with gemm)",
    "GEMM rule with the bias for out; gradient rule for the gradients; repeats bit-identical",
    linear_check, linear_gradcheck,
    "test_gemm runs this check once more under each GEMM provider", true};
