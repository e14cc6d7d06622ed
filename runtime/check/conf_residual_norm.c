/* The end of a sublayer, fused, described once: y = res + dropout(x + bias)
 * and out = LayerNorm(y) or RMSNorm(y) (cl/residual_norm.cl; launchers in
 * runtime/ops/ops_residual_norm.c). The double-precision reference, its
 * finite-difference check, the conformance cases (with and without bias,
 * dropout, y in place of res, rows of an odd width that take the scalar
 * path; every tensor guarded) and the descriptor. The backward is what
 * backward.c runs for it: cf_layernorm_backward adding into the residual
 * gradient, cf_dropout_backward, cf_colsum for the bias. The RMSNorm kernel
 * must also give the bits of cf_bias_residual_forward then
 * cf_rmsnorm_forward, which the blocks ran before it (checked exactly). */
#include "conf_block.h"
#include "conf_layernorm.h"
#include "conf_rmsnorm.h"
#include "conformance.h"
#include "ops.h"
#include "reduce.h"
#include "ref_philox.h"
#include "ref_random.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EPS 1e-5

/* The norm after the residual: none (bias_residual_forward), LayerNorm or
 * RMSNorm. */
typedef enum { NORM_NONE, NORM_LAYER, NORM_RMS } norm_kind;

/* --- the reference, in double ------------------------------------------------ */

/* y = res + dropout(x + bias) over (N, C) (bias NULL: none); out, mean and
 * rstd = LayerNorm(y), or out and rstd = RMSNorm(y) (weight alone). */
static void ref_bias_residual_forward(double *y, double *out, double *mean, double *rstd,
                                      const double *res, const double *x, const double *bias,
                                      norm_kind norm, const double *weight, const double *lnbias,
                                      size_t N, size_t C, const ref_dropout *drop)
{
    for (size_t i = 0; i < N * C; i++) {
        const double f = x[i] + (bias ? bias[i % C] : 0.0);
        y[i] = res[i] + f * ref_dropout_scale(drop, i);
    }
    if (norm == NORM_LAYER) ref_layernorm_forward(out, mean, rstd, y, weight, lnbias, N, C, EPS);
    if (norm == NORM_RMS) ref_rmsnorm_forward(out, rstd, y, weight, N, C, EPS);
}

/* The gradients of the sum of dy . y and dout . out: dres (overwritten) =
 * dy + the norm's input gradient of dout, dx (overwritten) = the mask of
 * dres, dbias += column sums of dx; dweight (and LayerNorm's dlnbias) += the
 * norm's. y, mean and rstd are the forward's. */
static void ref_bias_residual_backward(double *dres, double *dx, double *dbias, double *dweight,
                                       double *dlnbias, const double *dy, const double *dout,
                                       const double *y, norm_kind norm, const double *weight,
                                       const double *mean, const double *rstd, size_t N, size_t C,
                                       const ref_dropout *drop)
{
    memcpy(dres, dy, N * C * sizeof *dres);
    if (norm == NORM_LAYER)
        ref_layernorm_backward(dres, dweight, dlnbias, dout, y, weight, mean, rstd, N, C, true);
    if (norm == NORM_RMS) ref_rmsnorm_backward(dres, dweight, dout, y, weight, rstd, N, C, true);
    ref_dropout_backward(dx, dres, N * C, drop);
    if (dbias)
        for (size_t i = 0; i < N * C; i++) dbias[i % C] += dx[i];
}

/* --- finite differences of the reference ------------------------------------- */

typedef struct {
    size_t N, C;
    const ref_dropout *drop;
    norm_kind norm;
    double *res, *x, *b, *w, *lb, *gy, *gout;
    double *y, *out, *mean, *rstd;
} fd_problem;

static double fd_loss(void *user)
{
    fd_problem *p = user;
    ref_bias_residual_forward(p->y, p->out, p->mean, p->rstd, p->res, p->x, p->b, p->norm, p->w,
                              p->lb, p->N, p->C, p->drop);
    double s = 0.0;
    for (size_t i = 0; i < p->N * p->C; i++)
        s += p->y[i] * p->gy[i] + (p->norm != NORM_NONE ? p->out[i] * p->gout[i] : 0.0);
    return s;
}

static int residual_norm_gradcheck(void)
{
    static const ref_dropout drop = {0.3f, 99, 4, 21};
    const size_t shapes[][2] = {{1, 1}, {3, 5}, {2, 8}, {2, 13}};
    int bad = 0;
    for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++)
        for (norm_kind norm = NORM_NONE; norm <= NORM_RMS; norm++)
            for (int dropped = 0; dropped < 2; dropped++) {
                const size_t N = shapes[s][0], C = shapes[s][1], NC = N * C;
                double *buf = calloc(10 * NC + 3 * C + 2 * N + 3 * C, sizeof *buf);
                if (!buf) return 1;
                double *q = buf;
                fd_problem p = {N, C, dropped ? &drop : NULL, norm};
                p.res = q, q += NC;
                p.x = q, q += NC;
                p.gy = q, q += NC;
                p.gout = q, q += NC;
                p.y = q, q += NC;
                p.out = q, q += NC;
                p.b = q, q += C;
                p.w = q, q += C;
                p.lb = q, q += C;
                p.mean = q, q += N;
                p.rstd = q, q += N;
                double *dres = q, *dx = q + NC, *db = q + 2 * NC, *dw = db + C, *dlb = dw + C;
                ref_rng r = ref_rng_new(40 + 6 * s + 2 * norm + dropped);
                for (size_t i = 0; i < NC; i++) {
                    p.res[i] = ref_rng_uniform(&r, -1, 1);
                    p.x[i] = ref_rng_uniform(&r, -1, 1);
                    p.gy[i] = ref_rng_uniform(&r, -1, 1);
                    p.gout[i] = ref_rng_uniform(&r, -1, 1);
                }
                for (size_t c = 0; c < C; c++) {
                    p.b[c] = ref_rng_uniform(&r, -0.5, 0.5);
                    p.w[c] = ref_rng_uniform(&r, 0.5, 1.5);
                    p.lb[c] = ref_rng_uniform(&r, -0.5, 0.5);
                }
                fd_loss(&p); /* y, mean and rstd of the unperturbed inputs */
                ref_bias_residual_backward(dres, dx, db, dw, dlb, p.gy, p.gout, p.y, norm, p.w,
                                           p.mean, p.rstd, N, C, p.drop);
                bad += conf_fd_check("residual_norm dres", p.res, NC, dres, fd_loss, &p);
                bad += conf_fd_check("residual_norm dx", p.x, NC, dx, fd_loss, &p);
                bad += conf_fd_check("residual_norm dbias", p.b, C, db, fd_loss, &p);
                if (norm != NORM_NONE)
                    bad += conf_fd_check("residual_norm dweight", p.w, C, dw, fd_loss, &p);
                if (norm == NORM_LAYER)
                    bad += conf_fd_check("residual_norm dlnbias", p.lb, C, dlb, fd_loss, &p);
                free(buf);
            }
    return bad;
}

/* --- the conformance cases ----------------------------------------------------- */

typedef struct {
    size_t N, C;
    norm_kind norm; /* bias_residual_layernorm_forward, _rmsnorm_forward, or bias_residual_forward */
    bool bias;
    float p;        /* dropout */
    bool in_place;  /* y is res */
    uint64_t seed;
} residual_case;

/* The RMSNorm kernel against the two launches the blocks ran before it:
 * cf_rmsnorm_forward on the y it stored (into tensors out2 and rstd2 of the
 * block) gives its out and rstd bit for bit. */
static clformer_status same_bits_as_unfused(cf_ctx *ctx, conf_block *b, cf_view y, cf_view w,
                                            int out, int rstd, int out2, int rstd2, size_t N,
                                            size_t C, const char *shape, conf_sink sink,
                                            void *user)
{
    clformer_status st;
    if ((st = cf_rmsnorm_forward(ctx, conf_block_view(b, out2), conf_block_view(b, rstd2), y, w,
                                 N, C, (float)EPS)) ||
        (st = cf_finish(ctx)) || (st = conf_block_read(b)))
        return st;
    double *o = conf_widen(conf_block_out(b, out), N * C), *r = conf_widen(conf_block_out(b, rstd), N);
    if (!o || !r) st = cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory");
    else {
        const ref_cmp cmp = conf_worse(ref_compare_exact(conf_block_out(b, out2), o, N * C),
                                       ref_compare_exact(conf_block_out(b, rstd2), r, N));
        conf_emit(sink, user, "residual_norm_forward_rmsnorm_as_unfused", shape,
                  conf_guarded(cmp, b), 0.0);
    }
    free(o);
    free(r);
    return st;
}

static clformer_status run_case(cf_ctx *ctx, const residual_case *c, conf_sink sink, void *user)
{
    const size_t N = c->N, C = c->C, NC = N * C;
    const cf_dropout drop = {c->p, 1000 + c->seed, 7, 33};
    const cf_dropout *d = c->p > 0.0f ? &drop : NULL;
    const ref_dropout rd = {c->p, drop.seed, drop.step, drop.site};
    conf_block b = {0};
    /* OUT2, RSTD2: the unfused RMSNorm's, for the exact comparison */
    enum { RES, X, BIAS, W, LB, DY, DOUT, Y, OUT, MEAN, RSTD, DX, DB, DW, DLB, OUT2, RSTD2, COUNT };
    const size_t len[COUNT] = {NC, NC, C, C, C, NC, NC, NC, NC, N, N, NC, C, C, C, NC, N};
    for (int t = 0; t < COUNT; t++) conf_block_add(&b, len[t]);
    double *in64[COUNT] = {0}, *ref = malloc((4 * NC + 2 * N + 3 * C) * sizeof *ref);
    clformer_status st = conf_block_create(ctx, &b);
    if (st) goto done;
    ref_rng r = ref_rng_new(c->seed);
    ref_fill_uniform(&r, conf_block_init(&b, RES), NULL, NC, -2, 2);
    ref_fill_uniform(&r, conf_block_init(&b, X), NULL, NC, -2, 2);
    ref_fill_uniform(&r, conf_block_init(&b, BIAS), NULL, C, -0.5, 0.5);
    ref_fill_uniform(&r, conf_block_init(&b, W), NULL, C, 0.5, 1.5);
    ref_fill_uniform(&r, conf_block_init(&b, LB), NULL, C, -0.5, 0.5);
    ref_fill_uniform(&r, conf_block_init(&b, DY), NULL, NC, -1, 1);
    ref_fill_uniform(&r, conf_block_init(&b, DOUT), NULL, NC, -1, 1);
    ref_fill_uniform(&r, conf_block_init(&b, DB), NULL, C, -1, 1); /* gradients to add to */
    ref_fill_uniform(&r, conf_block_init(&b, DW), NULL, C, -1, 1);
    ref_fill_uniform(&r, conf_block_init(&b, DLB), NULL, C, -1, 1);
    /* 16-bit runs: activations and weights as the model holds them */
    for (int t = RES; t <= DOUT; t++) conf_round(ctx, conf_block_init(&b, t), len[t]);
    conf_block_init_fill(&b, Y, NAN); /* overwritten */
    conf_block_init_fill(&b, OUT, NAN);
    conf_block_init_fill(&b, DX, 1e30f);
    for (int t = 0; t < COUNT; t++) in64[t] = conf_widen(conf_block_init(&b, t), len[t]);
    for (int t = 0; t < COUNT; t++)
        if (!in64[t] || !ref) {
            st = cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory");
            goto done;
        }
    double *y64 = ref, *out64 = y64 + NC, *dres64 = out64 + NC, *dx64 = dres64 + NC;
    double *m64 = dx64 + NC, *rs64 = m64 + N;
    const size_t y_t = c->in_place ? RES : Y; /* in place: y written over res */
    const cf_view v_res = conf_block_view(&b, RES), v_x = conf_block_view(&b, X),
                  v_bias = c->bias ? conf_block_view(&b, BIAS) : (cf_view){NULL, 0},
                  v_w = conf_block_view(&b, W), v_lb = conf_block_view(&b, LB),
                  v_y = conf_block_view(&b, y_t), v_out = conf_block_view(&b, OUT),
                  v_m = conf_block_view(&b, MEAN), v_rs = conf_block_view(&b, RSTD),
                  v_dres = conf_block_view(&b, DY), v_dout = conf_block_view(&b, DOUT),
                  v_dx = conf_block_view(&b, DX), v_db = conf_block_view(&b, DB),
                  v_dw = conf_block_view(&b, DW), v_dlb = conf_block_view(&b, DLB);
    char shape[96], op[64];
    snprintf(shape, sizeof shape, "N=%zu C=%zu%s p=%g%s", N, C, c->bias ? "" : " no bias",
             (double)c->p, c->in_place ? " in place" : "");
    const bool normed = c->norm != NORM_NONE, rms = c->norm == NORM_RMS;
    const char *variant = rms ? "_rmsnorm" : normed ? "_layernorm" : "";

    double ms = 0.0;
    for (int run = conf_warm_up(ctx) ? 0 : 1; run < 2; run++) { /* PoCL compiles at first */
        if ((st = conf_block_upload(&b))) goto done;
        const double t0 = conf_now_ms();
        st = rms      ? cf_bias_residual_rmsnorm_forward(ctx, v_y, v_out, v_rs, v_res, v_x, v_bias,
                                                         v_w, N, C, (float)EPS, d)
             : normed ? cf_bias_residual_layernorm_forward(ctx, v_y, v_out, v_m, v_rs, v_res, v_x,
                                                         v_bias, v_w, v_lb, N, C, (float)EPS, d)
                      : cf_bias_residual_forward(ctx, v_y, v_res, v_x, v_bias, N, C, d);
        if (st || (st = cf_finish(ctx))) goto done;
        ms = conf_now_ms() - t0;
    }
    if ((st = conf_block_read(&b))) goto done;
    ref_bias_residual_forward(y64, NULL, NULL, NULL, in64[RES], in64[X],
                              c->bias ? in64[BIAS] : NULL, NORM_NONE, NULL, NULL, N, C, &rd);
    ref_cmp cmp = conf_compare_stored(ctx, conf_block_out(&b, y_t), y64, NC, REF_RULE_FORWARD,
                                      NULL, NULL);
    /* the norm on y as stored (in 16 bits: rounded), as the kernel reads it */
    double *y_dev = conf_widen(conf_block_out(&b, y_t), NC);
    if (!y_dev) {
        st = cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory");
        goto done;
    }
    if (rms) {
        ref_rmsnorm_forward(out64, rs64, y_dev, in64[W], N, C, EPS);
        cmp = conf_worse(cmp, conf_compare_stored(ctx, conf_block_out(&b, OUT), out64, NC,
                                                  REF_RULE_FORWARD, NULL, NULL));
        cmp = conf_worse(cmp, ref_compare_forward(conf_block_out(&b, RSTD), rs64, N));
        if (!conf_block_unchanged(&b, MEAN)) {
            cmp.pass = false;
            cmp.why = "the RMSNorm wrote a mean";
        }
    } else if (normed) {
        ref_layernorm_forward(out64, m64, rs64, y_dev, in64[W], in64[LB], N, C, EPS);
        cmp = conf_worse(cmp, conf_compare_stored(ctx, conf_block_out(&b, OUT), out64, NC,
                                                  REF_RULE_FORWARD, NULL, NULL));
        cmp = conf_worse(cmp, ref_compare_forward(conf_block_out(&b, RSTD), rs64, N));
        cmp = conf_worse(cmp, ref_compare_forward(conf_block_out(&b, MEAN), m64, N));
    } else if (!conf_block_unchanged(&b, OUT) || !conf_block_unchanged(&b, MEAN)) {
        cmp.pass = false;
        cmp.why = "bias_residual_forward wrote a tensor it does not own";
    }
    if (!c->in_place && !conf_block_unchanged(&b, RES)) {
        cmp.pass = false;
        cmp.why = "an input tensor changed";
    }
    snprintf(op, sizeof op, "residual_norm_forward%s", variant);
    conf_emit(sink, user, op, shape, conf_guarded(cmp, &b), ms);
    if (rms && (st = same_bits_as_unfused(ctx, &b, v_y, v_w, OUT, RSTD, OUT2, RSTD2, N, C, shape,
                                          sink, user)))
        goto done_y;

    /* The backward as backward.c runs it, on the forward's y, mean and rstd:
     * dres = dy (+)= the norm's input gradient, dx = its mask, dbias += its
     * column sums. Each stage is judged on the device's stored input to it. */
    const double t0 = conf_now_ms();
    if ((rms && (st = cf_rmsnorm_backward(ctx, v_dres, v_dw, v_dout, v_y, v_w, v_rs, N, C,
                                          true))) ||
        (normed && !rms && (st = cf_layernorm_backward(ctx, v_dres, v_dw, v_dlb, v_dout, v_y, v_w,
                                                       v_m, v_rs, N, C, true))) ||
        (st = cf_dropout_backward(ctx, v_dx, v_dres, NC, d)) ||
        (c->bias && (st = cf_colsum(ctx, v_db.buf, v_db.off, v_dx.buf, v_dx.off, N, C, C, true))) ||
        (st = cf_finish(ctx)))
        goto done_y;
    ms = conf_now_ms() - t0;
    if ((st = conf_block_read(&b))) goto done_y;
    double *dres_dev = conf_widen(conf_block_out(&b, DY), NC);
    double *dx_dev = conf_widen(conf_block_out(&b, DX), NC);
    if (!dres_dev || !dx_dev) {
        st = cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory");
    } else {
        /* dres and the norm's weight gradients from the reference on y as
         * stored; dx from dres as stored, dbias from dx as stored */
        ref_bias_residual_backward(dres64, dx64, NULL, in64[DW], in64[DLB], in64[DY], in64[DOUT],
                                   y_dev, c->norm, in64[W], m64, rs64, N, C, &rd);
        ref_dropout_backward(dx64, dres_dev, NC, &rd);
        for (size_t i = 0; i < NC && c->bias; i++) in64[DB][i % C] += dx_dev[i];
        cmp = conf_worse(conf_compare_stored(ctx, conf_block_out(&b, DY), dres64, NC,
                                             REF_RULE_GRAD, NULL, NULL),
                         conf_compare_stored(ctx, conf_block_out(&b, DX), dx64, NC, REF_RULE_GRAD,
                                             NULL, NULL));
        if (c->bias) cmp = conf_worse(cmp, ref_compare_grad(conf_block_out(&b, DB), in64[DB], C));
        else if (!conf_block_unchanged(&b, DB)) {
            cmp.pass = false;
            cmp.why = "a bias gradient without a bias";
        }
        if (rms) {
            cmp = conf_worse(cmp, ref_compare_grad(conf_block_out(&b, DW), in64[DW], C));
            if (!conf_block_unchanged(&b, DLB)) {
                cmp.pass = false;
                cmp.why = "a norm bias gradient without a LayerNorm";
            }
        } else if (normed) {
            cmp = conf_worse(cmp, ref_compare_grad(conf_block_out(&b, DW), in64[DW], C));
            cmp = conf_worse(cmp, ref_compare_grad(conf_block_out(&b, DLB), in64[DLB], C));
        } else if (!conf_block_unchanged(&b, DW) || !conf_block_unchanged(&b, DLB)) {
            cmp.pass = false;
            cmp.why = "a norm gradient without a LayerNorm";
        }
        snprintf(op, sizeof op, "residual_norm_backward%s", variant);
        conf_emit(sink, user, op, shape, conf_guarded(cmp, &b), ms);
    }
    free(dres_dev);
    free(dx_dev);
done_y:
    free(y_dev);
done:
    conf_block_free(&b);
    for (int t = 0; t < COUNT; t++) free(in64[t]);
    free(ref);
    return st;
}

/* quick (simulators): odd shapes, the three kernels, with and without
 * dropout and bias, in place; else model widths too (gpt-mini's rows, a
 * wide one, smollm-135m's, llama-small's rows). */
static clformer_status residual_norm_check(cf_ctx *ctx, bool quick, conf_sink sink, void *user)
{
    static const residual_case small[] = {
        {7, 37, NORM_LAYER, true, 0.0f, false, 1},  {5, 12, NORM_LAYER, true, 0.2f, true, 2},
        {3, 40, NORM_LAYER, false, 0.1f, false, 3}, {9, 33, NORM_NONE, true, 0.2f, false, 4},
        {4, 8, NORM_NONE, false, 0.0f, true, 5},  {6, 24, NORM_RMS, false, 0.0f, true, 12},
        {5, 21, NORM_RMS, true, 0.2f, false, 13},
        /* rows of 32-element runs: CPU layouts draw the LayerNorm kernel's
         * dropout 32 elements at a time */
        {3, 64, NORM_LAYER, true, 0.2f, false, 16},
    };
    static const residual_case full[] = {
        {768, 128, NORM_LAYER, true, 0.0f, false, 6},
        {257, 512, NORM_LAYER, true, 0.1f, true, 7},
        {768, 128, NORM_NONE, true, 0.1f, false, 8},
        {512, 256, NORM_NONE, false, 0.0f, true, 11},
        {512, 576, NORM_RMS, false, 0.1f, true, 14}, /* smollm-135m's rows */
        {257, 128, NORM_RMS, true, 0.0f, false, 15},
    };
    CONF_RUN_CASES(run_case, small, full, quick, ctx, sink, user);
    return CLFORMER_OK;
}

CONF_OP(residual_norm) = {"residual_norm",
    "bias_residual_forward bias_residual_layernorm_forward bias_residual_rmsnorm_forward",
    "cf_bias_residual_forward, cf_bias_residual_layernorm_forward, "
    "cf_bias_residual_rmsnorm_forward",
    "ref_bias_residual_forward, ref_bias_residual_backward (this file; LayerNorm's from "
    "conf_layernorm.c, RMSNorm's from conf_rmsnorm.c, dropout's from reference/ref_philox.c)",
    "forward rule for y, out, mean, rstd; gradient rule for dres, dx, dbias, dweight, dlnbias; "
    "the RMSNorm's out and rstd exactly those of cf_rmsnorm_forward on its y",
    residual_norm_check, residual_norm_gradcheck,
    "the backward's kernels are the layernorm, dropout and reduce ops' (their own tests); "
    "test_model_parity, test_gpt2_parity and test_llama_parity run the fused path in "
    "the models", true};
