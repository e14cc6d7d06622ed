/* LayerNorm, described once: its double-precision reference, its conformance
 * cases, the checks of its reference (finite differences, a constant row's
 * output, the forward's defining properties, the += rules) and its
 * descriptor. Forward (out, mean, rstd) and backward (dinp, dweight, dbias),
 * once overwriting dinp and once accumulating into it, against the
 * reference, with guarded tensors: odd shapes, model widths, rows of constant
 * values and rows with a large mean; repeats bit-identical; argument errors.
 * The reference is not static: the fused residual + LayerNorm's check
 * (conf_residual_norm.c) compares with it too, through conf_layernorm.h.
 * The kernels are cl/layernorm.cl, the launchers runtime/ops/ops_layernorm.c. */
#include "conf_layernorm.h"
#include "conf_block.h"
#include "conformance.h"
#include "ops.h"
#include "ref_random.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EPS 1e-5f

/* --- the reference, in double: two passes per row, the textbook formulas ------- */

void ref_layernorm_forward(double *out, double *mean, double *rstd, const double *inp,
                           const double *weight, const double *bias, size_t N, size_t C,
                           double eps)
{
    for (size_t r = 0; r < N; r++) {
        const double *x = inp + r * C;
        double m = 0.0, v = 0.0;
        for (size_t c = 0; c < C; c++) m += x[c];
        m /= (double)C;
        for (size_t c = 0; c < C; c++) v += (x[c] - m) * (x[c] - m);
        v /= (double)C; /* biased, as PyTorch */
        const double rs = 1.0 / sqrt(v + eps);
        for (size_t c = 0; c < C; c++) out[r * C + c] = (x[c] - m) * rs * weight[c] + bias[c];
        mean[r] = m;
        rstd[r] = rs;
    }
}

/* With g = dout * weight and xhat = (x - mean) * rstd:
 *   dx = rstd * (g - mean_c(g) - xhat * mean_c(g * xhat)). */
void ref_layernorm_backward(double *dinp, double *dweight, double *dbias, const double *dout,
                            const double *inp, const double *weight, const double *mean,
                            const double *rstd, size_t N, size_t C, bool accumulate)
{
    for (size_t r = 0; r < N; r++) {
        const double *x = inp + r * C, *dy = dout + r * C;
        double mg = 0.0, mgx = 0.0;
        for (size_t c = 0; c < C; c++) {
            const double xhat = (x[c] - mean[r]) * rstd[r];
            mg += dy[c] * weight[c];
            mgx += dy[c] * weight[c] * xhat;
            dweight[c] += dy[c] * xhat;
            dbias[c] += dy[c];
        }
        mg /= (double)C;
        mgx /= (double)C;
        for (size_t c = 0; c < C; c++) {
            const double xhat = (x[c] - mean[r]) * rstd[r];
            const double d = rstd[r] * (dy[c] * weight[c] - mg - xhat * mgx);
            dinp[r * C + c] = accumulate ? dinp[r * C + c] + d : d;
        }
    }
}

/* --- the conformance cases ----------------------------------------------------- */

typedef struct {
    size_t N, C;
    uint64_t seed;
    bool special; /* rows of constant values and rows with a large mean */
} layernorm_case;

/* Random inputs; with `special`, every third row is one repeated value
 * (variance 0) and the next one 1000 + noise (a naive fp32 sum loses it). */
static void fill_inputs(const layernorm_case *c, float *inp, float *weight, float *bias,
                        float *dout, float *dw0, float *db0)
{
    const size_t N = c->N, C = c->C;
    ref_rng r = ref_rng_new(c->seed);
    ref_fill_uniform(&r, inp, NULL, N * C, -2, 2);
    ref_fill_uniform(&r, weight, NULL, C, 0.5, 1.5);
    ref_fill_uniform(&r, bias, NULL, C, -0.5, 0.5);
    ref_fill_uniform(&r, dout, NULL, N * C, -1, 1);
    ref_fill_uniform(&r, dw0, NULL, C, -1, 1); /* existing gradients to add to */
    ref_fill_uniform(&r, db0, NULL, C, -1, 1);
    if (c->special)
        for (size_t row = 0; row < N; row++) {
            float *x = inp + row * C;
            if (row % 3 == 0)
                for (size_t k = 0; k < C; k++) x[k] = 0.375f + (float)row;
            else if (row % 3 == 1)
                for (size_t k = 0; k < C; k++) x[k] = 1000.0f + 0.5f * x[k];
        }
}

static clformer_status run_case(cf_ctx *ctx, const layernorm_case *c, conf_sink sink,
                               void *user)
{
    const size_t N = c->N, C = c->C, NC = N * C;
    conf_block b = {0};
    enum { INP, W, BIAS, DOUT, OUT, MEAN, RSTD, DINP, DW, DB, COUNT };
    const size_t len[COUNT] = {NC, C, C, NC, NC, N, N, NC, C, C};
    for (int t = 0; t < COUNT; t++) conf_block_add(&b, len[t]);
    double *ref = NULL, *in64[COUNT] = {0};
    clformer_status st = conf_block_create(ctx, &b);
    if (st) goto done;
    fill_inputs(c, conf_block_init(&b, INP), conf_block_init(&b, W), conf_block_init(&b, BIAS),
                conf_block_init(&b, DOUT), conf_block_init(&b, DW), conf_block_init(&b, DB));
    /* 16-bit runs: the activations and the weights as the model holds them;
     * the weight gradients to add to stay fp32 */
    for (int t = INP; t <= DOUT; t++) conf_round(ctx, conf_block_init(&b, t), len[t]);
    conf_block_init_fill(&b, OUT, NAN);   /* forward overwrites */
    conf_block_init_fill(&b, DINP, 1e30f); /* overwritten first, not added to */
    for (int t = INP; t <= DOUT; t++) in64[t] = conf_widen(conf_block_init(&b, t), len[t]);
    in64[DW] = conf_widen(conf_block_init(&b, DW), C);
    in64[DB] = conf_widen(conf_block_init(&b, DB), C);
    /* the reference's y, mean, rstd and dinp; its dweight and dbias
     * accumulate in in64[DW] and in64[DB] */
    ref = malloc((2 * NC + 2 * N) * sizeof *ref);
    if (!ref || !in64[INP] || !in64[W] || !in64[BIAS] || !in64[DOUT] || !in64[DW] || !in64[DB]) {
        st = cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory");
        goto done;
    }
    double *y64 = ref, *m64 = ref + NC, *rs64 = m64 + N, *dx64 = rs64 + N;
    const cf_view v_inp = conf_block_view(&b, INP), v_w = conf_block_view(&b, W),
                  v_b = conf_block_view(&b, BIAS), v_dout = conf_block_view(&b, DOUT),
                  v_out = conf_block_view(&b, OUT), v_m = conf_block_view(&b, MEAN),
                  v_rs = conf_block_view(&b, RSTD), v_dinp = conf_block_view(&b, DINP),
                  v_dw = conf_block_view(&b, DW), v_db = conf_block_view(&b, DB);
    char shape[96];
    snprintf(shape, sizeof shape, "N=%zu C=%zu%s", N, C, c->special ? " special rows" : "");

    /* Both kernels run once before the timed runs (PoCL compiles at the first
     * launch); the upload afterwards restores every initial value. */
    if ((st = conf_block_upload(&b))) goto done;
    if (conf_warm_up(ctx) &&
        ((st = cf_layernorm_forward(ctx, v_out, v_m, v_rs, v_inp, v_w, v_b, N, C, EPS)) ||
         (st = cf_layernorm_backward(ctx, v_dinp, v_dw, v_db, v_dout, v_inp, v_w, v_m, v_rs, N, C,
                                     false)) ||
         (st = cf_finish(ctx)) || (st = conf_block_upload(&b))))
        goto done;

    double t0 = conf_now_ms();
    if ((st = cf_layernorm_forward(ctx, v_out, v_m, v_rs, v_inp, v_w, v_b, N, C, EPS)) ||
        (st = cf_finish(ctx)))
        goto done;
    double ms = conf_now_ms() - t0;
    if ((st = conf_block_read(&b))) goto done;
    ref_layernorm_forward(y64, m64, rs64, in64[INP], in64[W], in64[BIAS], N, C, EPS);
    conf_emit(sink, user, "layernorm_forward", shape,
              conf_guarded(conf_worse(conf_compare_stored(ctx, conf_block_out(&b, OUT), y64, NC,
                                                          REF_RULE_FORWARD, NULL, NULL),
                                      conf_worse(ref_compare_forward(conf_block_out(&b, MEAN), m64, N),
                                                 ref_compare_forward(conf_block_out(&b, RSTD), rs64, N))),
                           &b),
              ms);

    /* Backward twice: dinp overwritten, then accumulated; dweight and dbias
     * add to their existing values both times. */
    for (int pass = 0; pass < 2; pass++) {
        const bool acc = pass == 1;
        t0 = conf_now_ms();
        if ((st = cf_layernorm_backward(ctx, v_dinp, v_dw, v_db, v_dout, v_inp, v_w, v_m, v_rs, N,
                                        C, acc)) ||
            (st = cf_finish(ctx)))
            goto done;
        ms = conf_now_ms() - t0;
        if ((st = conf_block_read(&b))) goto done;
        ref_layernorm_backward(dx64, in64[DW], in64[DB], in64[DOUT], in64[INP], in64[W], m64, rs64,
                               N, C, acc);
        conf_emit(sink, user, acc ? "layernorm_backward_accumulate" : "layernorm_backward", shape,
                  conf_guarded(conf_worse(conf_compare_stored(ctx, conf_block_out(&b, DINP), dx64,
                                                              NC, REF_RULE_GRAD, NULL, NULL),
                                          conf_worse(ref_compare_grad(conf_block_out(&b, DW), in64[DW], C),
                                                     ref_compare_grad(conf_block_out(&b, DB), in64[DB], C))),
                               &b),
                  ms);
    }
done:
    conf_block_free(&b);
    for (int t = 0; t < COUNT; t++) free(in64[t]);
    free(ref);
    return st;
}

/* The forward and the backward of a repeat, on its views. */
typedef struct {
    cf_view inp, w, b, dout, out, mean, rstd, dinp, dw, db;
    size_t N, C;
} repeat_views;

static clformer_status repeat_launch(cf_ctx *ctx, const void *args)
{
    const repeat_views *v = args;
    CF_TRY(cf_layernorm_forward(ctx, v->out, v->mean, v->rstd, v->inp, v->w, v->b, v->N, v->C,
                                EPS));
    return cf_layernorm_backward(ctx, v->dinp, v->dw, v->db, v->dout, v->inp, v->w, v->mean,
                                 v->rstd, v->N, v->C, false);
}

/* Forward and backward twice into fresh outputs: every output bit-identical. */
static clformer_status run_repeat(cf_ctx *ctx, size_t N, size_t C, conf_sink sink, void *user)
{
    const size_t NC = N * C;
    conf_block b = {0};
    enum { INP, W, BIAS, DOUT, OUT, MEAN, RSTD, DINP, DW, DB, COUNT };
    const size_t len[COUNT] = {NC, C, C, NC, NC, N, N, NC, C, C};
    for (int t = 0; t < COUNT; t++) conf_block_add(&b, len[t]);
    clformer_status st = conf_block_create(ctx, &b);
    if (st) goto done;
    ref_rng r = ref_rng_new(60);
    ref_fill_uniform(&r, conf_block_init(&b, INP), NULL, NC, -2, 2);
    ref_fill_uniform(&r, conf_block_init(&b, W), NULL, C, 0.5, 1.5);
    ref_fill_uniform(&r, conf_block_init(&b, BIAS), NULL, C, -0.5, 0.5);
    ref_fill_uniform(&r, conf_block_init(&b, DOUT), NULL, NC, -1, 1);
    for (int t = INP; t <= DOUT; t++) conf_round(ctx, conf_block_init(&b, t), len[t]);
    const repeat_views v = {
        conf_block_view(&b, INP),  conf_block_view(&b, W),    conf_block_view(&b, BIAS),
        conf_block_view(&b, DOUT), conf_block_view(&b, OUT),  conf_block_view(&b, MEAN),
        conf_block_view(&b, RSTD), conf_block_view(&b, DINP), conf_block_view(&b, DW),
        conf_block_view(&b, DB),   N,                         C};
    ref_cmp c;
    if ((st = conf_block_repeat(&b, repeat_launch, &v, OUT, COUNT, &c))) goto done;
    char shape[96];
    snprintf(shape, sizeof shape, "N=%zu C=%zu twice", N, C);
    conf_emit(sink, user, "layernorm_repeat", shape, conf_guarded(c, &b), 0.0);
done:
    conf_block_free(&b);
    return st;
}

/* Sizes of 0 are no-ops; dinp overlapping dout and eps = 0 are refused. */
static clformer_status run_arguments(cf_ctx *ctx, conf_sink sink, void *user)
{
    conf_block b = {0};
    const size_t A = conf_block_add(&b, 64), B = conf_block_add(&b, 64),
                 C = conf_block_add(&b, 64);
    clformer_status st = conf_block_create(ctx, &b);
    if (st) goto done;
    ref_rng r = ref_rng_new(61);
    for (size_t t = A; t <= C; t++) ref_fill_uniform(&r, conf_block_init(&b, t), NULL, 64, -1, 1);
    if ((st = conf_block_upload(&b))) goto done;
    const cf_view va = conf_block_view(&b, A), vb = conf_block_view(&b, B),
                  vc = conf_block_view(&b, C);
    const char *bad = NULL;
    st = cf_layernorm_backward(ctx, va, vb, vc, cf_view_add(va, 4), vb, vc, vb, vc, 2, 8, false);
    if (st != CLFORMER_ERR_INVALID_ARGUMENT || !strstr(clformer_last_error(), "dinp overlaps dout"))
        bad = "dinp overlapping dout not refused as such";
    else if (cf_layernorm_forward(ctx, va, vb, vc, va, vb, vc, 2, 8, 0.0f) !=
             CLFORMER_ERR_INVALID_ARGUMENT)
        bad = "eps = 0 not refused";
    st = CLFORMER_OK;
    if (!bad && ((st = cf_layernorm_forward(ctx, va, vb, vc, va, vb, vc, 0, 8, EPS)) ||
                 (st = cf_layernorm_backward(ctx, va, vb, vc, vb, va, vb, va, vc, 8, 0, false)) ||
                 (st = cf_finish(ctx)) || (st = conf_block_read(&b))))
        goto done;
    conf_emit(sink, user, "layernorm_arguments", "dinp over dout, eps=0, N=0, C=0",
              conf_block_refusals(&b, bad), 0.0);
done:
    conf_block_free(&b);
    return st;
}

/* quick (simulators): small odd shapes, a model width and special rows; else
 * odd sizes in both positions, the model's widths and special rows at them. */
static clformer_status layernorm_check(cf_ctx *ctx, bool quick, conf_sink sink, void *user)
{
    static const layernorm_case small[] = {{7, 37, 7 * 7919 + 37, false}, {1, 1, 10, false},
                                           {7, 5, 11, false},   {3, 37, 12, false},
                                           {40, 9, 13, false},  {2, 512, 40, false},
                                           {6, 37, 50, true}},
                                full[] = {{93, 257, 93 * 7919 + 257, false},
                                          {256, 512, 256 * 7919 + 512, false},
                                          {257, 512, 41, false},
                                          {93, 2048, 42, false},
                                          {1, 2048, 43, false},
                                          {7, 61, 51, true},
                                          {61, 512, 52, true},
                                          {12, 2048, 53, true}};
    static const size_t odd[] = {1, 7, 61, 93, 257};
    CONF_RUN_CASES(run_case, small, full, quick, ctx, sink, user);
    if (!quick)
        for (size_t i = 0; i < 5; i++)
            for (size_t j = 0; j < 5; j++) {
                const layernorm_case k = {odd[i], odd[j], 100 + 5 * i + j, false};
                CF_TRY(run_case(ctx, &k, sink, user));
            }
    CF_TRY(quick ? run_repeat(ctx, 40, 9, sink, user) : run_repeat(ctx, 257, 512, sink, user));
    return run_arguments(ctx, sink, user);
}

/* --- checks of the reference ---------------------------------------------------- */

/* A row of one value gives out = bias and rstd = 1/sqrt(eps); each row
 * normalised (weight 1, bias 0) has mean 0 and variance var/(var + eps);
 * dweight and dbias accumulate, dinp only when asked. Returns the mismatches. */
static int layernorm_reference_rules(void)
{
    int bad = 0;
    enum { N = 5, C = 31, NC = N * C };
    double x[NC], w[C], bias[C], g[NC], y[NC], mean[N], rstd[N];
    ref_rng r = ref_rng_new(30);
    for (size_t i = 0; i < NC; i++) x[i] = 3.0 + ref_rng_uniform(&r, -1, 1);
    for (size_t c = 0; c < C; c++)
        w[c] = ref_rng_uniform(&r, 0.5, 1.5), bias[c] = ref_rng_uniform(&r, -0.5, 0.5);
    for (size_t i = 0; i < NC; i++) g[i] = ref_rng_uniform(&r, -1, 1);

    double ones[C], zeros[C];
    for (size_t c = 0; c < C; c++) ones[c] = 1.0, zeros[c] = 0.0;
    ref_layernorm_forward(y, mean, rstd, x, ones, zeros, N, C, 1e-5);
    for (size_t row = 0; row < N; row++) {
        double m = 0.0, v = 0.0;
        for (size_t c = 0; c < C; c++) m += y[row * C + c];
        m /= (double)C;
        for (size_t c = 0; c < C; c++) v += pow(y[row * C + c] - m, 2);
        v /= (double)C;
        const double var = 1.0 / (rstd[row] * rstd[row]) - 1e-5;
        bad += !(fabs(m) < 1e-12);
        bad += !(fabs(v - var / (var + 1e-5)) < 1e-12);
        bad += !(fabs(mean[row] - 3.0) < 0.5);
    }

    double dx1[NC], dw1[C] = {0}, db1[C] = {0}, dx2[NC], dw2[C] = {0}, db2[C] = {0};
    ref_layernorm_forward(y, mean, rstd, x, w, bias, N, C, 1e-5);
    ref_layernorm_backward(dx1, dw1, db1, g, x, w, mean, rstd, N, C, false);
    for (size_t i = 0; i < NC; i++) dx2[i] = 100.0; /* overwritten when accumulate is false */
    ref_layernorm_backward(dx2, dw2, db2, g, x, w, mean, rstd, N, C, false);
    ref_layernorm_backward(dx2, dw2, db2, g, x, w, mean, rstd, N, C, true);
    for (size_t i = 0; i < NC; i++) bad += !(fabs(dx2[i] - 2.0 * dx1[i]) < 1e-12);
    for (size_t c = 0; c < C; c++)
        bad += !(fabs(dw2[c] - 2.0 * dw1[c]) < 1e-12 && fabs(db2[c] - 2.0 * db1[c]) < 1e-12);

    for (size_t c = 0; c < C; c++) x[C + c] = 0.75; /* row 1: variance 0 */
    ref_layernorm_forward(y, mean, rstd, x, w, bias, N, C, 1e-5);
    for (size_t c = 0; c < C; c++) bad += !(fabs(y[C + c] - bias[c]) < 1e-12);
    bad += !(fabs(rstd[1] - 1.0 / sqrt(1e-5)) < 1e-9);
    if (bad) fprintf(stderr, "layernorm reference: %d mismatches of its rules\n", bad);
    return bad;
}

/* Finite differences of the reference backward: odd shapes, a row of one
 * value (variance 0) and rows around 1000. */
typedef struct {
    size_t N, C;
    double *x, *w, *b, *g, *y, *mean, *rstd;
} fd_problem;

static double fd_loss(void *user)
{
    fd_problem *p = user;
    ref_layernorm_forward(p->y, p->mean, p->rstd, p->x, p->w, p->b, p->N, p->C, 1e-5);
    double s = 0.0;
    for (size_t i = 0; i < p->N * p->C; i++) s += p->y[i] * p->g[i];
    return s;
}

static int layernorm_gradcheck(void)
{
    const size_t shapes[][2] = {{1, 1}, {1, 7}, {3, 2}, {7, 5}, {2, 61}, {3, 9}, {2, 13}};
    int bad = 0;
    for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++) {
        const size_t N = shapes[s][0], C = shapes[s][1], NC = N * C;
        double *buf = calloc(5 * NC + 5 * C + 2 * N, sizeof *buf);
        if (!buf) return 1;
        fd_problem p = {N, C, buf, buf + NC, buf + NC + C, buf + NC + 2 * C, buf + 2 * NC + 2 * C,
                        buf + 3 * NC + 2 * C, buf + 3 * NC + 2 * C + N};
        double *dx = p.rstd + N, *dw = dx + NC, *db = dw + C;
        const double center = s == 6 ? 1000.0 : 0.0;
        ref_rng r = ref_rng_new(10 + s);
        for (size_t i = 0; i < NC; i++) p.x[i] = center + ref_rng_uniform(&r, -1, 1);
        for (size_t c = 0; c < C; c++) {
            p.w[c] = ref_rng_uniform(&r, 0.5, 1.5);
            p.b[c] = ref_rng_uniform(&r, -0.5, 0.5);
        }
        for (size_t i = 0; i < NC; i++) p.g[i] = ref_rng_uniform(&r, -1, 1);
        if (s == 5)
            for (size_t c = 0; c < C; c++) p.x[C + c] = 0.75; /* row 1: variance 0 */
        fd_loss(&p); /* mean and rstd of the unperturbed input */
        ref_layernorm_backward(dx, dw, db, p.g, p.x, p.w, p.mean, p.rstd, N, C, false);
        bad += conf_fd_check("layernorm dinp", p.x, NC, dx, fd_loss, &p);
        bad += conf_fd_check("layernorm dweight", p.w, C, dw, fd_loss, &p);
        bad += conf_fd_check("layernorm dbias", p.b, C, db, fd_loss, &p);
        free(buf);
    }
    return bad + layernorm_reference_rules();
}

CONF_OP(layernorm) = {"layernorm", "layernorm_forward layernorm_backward_input layernorm_backward_params layernorm_backward_params_final",
    "cf_layernorm_forward, cf_layernorm_backward",
    "ref_layernorm_forward, ref_layernorm_backward (this file; residual_norm's check uses them "
    "too, through conf_layernorm.h)",
    "forward rule for out, mean, rstd; gradient rule for dinp, dweight, dbias",
    layernorm_check, layernorm_gradcheck, NULL, true};
