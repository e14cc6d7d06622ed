/* Conformance of the linear layer: forward (GEMM + bias, GEMM rule with the
 * bias in the bound; out overwritten even over NaN) and backward (dinp,
 * dweight, dbias, gradient rule) overwriting dinp, accumulating into it, and
 * without dinp; dweight and dbias add to existing values; with or without
 * bias; every tensor guarded. `clformer check` runs an odd shape and a model
 * width; test_linear runs many more cases. */
#include "conf_block.h"
#include "conformance.h"
#include "ops.h"
#include "ref_gemm.h"
#include "ref_linear.h"
#include "ref_random.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

clformer_status conf_linear_run(cf_ctx *ctx, const conf_linear_case *k, conf_sink sink,
                                void *user)
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

clformer_status conf_linear(cf_ctx *ctx, bool quick, conf_sink sink, void *user)
{
    static const conf_linear_case small = {7, 13, 5, true, 7 * 7919 + 13 * 31 + 5},
                                  full[] = {{93, 257, 61, true, 93 * 7919 + 257 * 31 + 61},
                                            {128, 512, 2048, true, 128 * 7919 + 512 * 31 + 2048}};
    if (quick) return conf_linear_run(ctx, &small, sink, user);
    for (size_t i = 0; i < sizeof full / sizeof full[0]; i++)
        CF_TRY(conf_linear_run(ctx, &full[i], sink, user));
    return CLFORMER_OK;
}

/* Finite differences of the reference backward, with and without bias. */
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
    return bad;
}

CONF_OP(linear) = {"linear", "bias_add",
    "cf_linear_forward, cf_linear_backward",
    "ref_linear_forward, ref_linear_backward (reference/ref_linear.c)",
    "GEMM rule with the bias for out; gradient rule for the gradients",
    conf_linear, linear_gradcheck,
    "test_linear (many more cases, determinism, argument errors)", true};
