/* RMSNorm, described once: its double-precision reference, the
 * finite-difference check of it, its conformance cases (forward; backward
 * overwriting dinp, then accumulating into it; dweight added to existing
 * values; every tensor guarded) and its descriptor. The kernels are
 * cl/rmsnorm.cl, the launchers runtime/ops/ops_rmsnorm.c. */
#include "conf_block.h"
#include "conf_rmsnorm.h"
#include "conformance.h"
#include "ops.h"
#include "ref_random.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#define EPS 1e-5

/* --- the reference, in double ------------------------------------------------- */

void ref_rmsnorm_forward(double *y, double *rstd, const double *x, const double *w, size_t N,
                         size_t C, double eps)
{
    for (size_t r = 0; r < N; r++) {
        const double *xr = x + r * C;
        double s = 0.0;
        for (size_t c = 0; c < C; c++) s += xr[c] * xr[c];
        const double rs = 1.0 / sqrt(s / (double)C + eps);
        for (size_t c = 0; c < C; c++) y[r * C + c] = xr[c] * rs * w[c];
        rstd[r] = rs;
    }
}

void ref_rmsnorm_backward(double *dx, double *dw, const double *g, const double *x,
                          const double *w, const double *rstd, size_t N, size_t C,
                          bool accumulate)
{
    for (size_t r = 0; r < N; r++) {
        const double *xr = x + r * C, *gr = g + r * C, rs = rstd[r];
        double s = 0.0;
        for (size_t c = 0; c < C; c++) s += gr[c] * w[c] * xr[c];
        const double k = rs * rs * rs * s / (double)C;
        for (size_t c = 0; c < C; c++) {
            const double v = rs * gr[c] * w[c] - xr[c] * k;
            dx[r * C + c] = accumulate ? dx[r * C + c] + v : v;
            dw[c] += gr[c] * xr[c] * rs;
        }
    }
}

/* --- finite differences of the reference ------------------------------------- */

typedef struct {
    size_t N, C;
    double *x, *w, *g, *y, *rstd;
} fd_problem;

/* sum(y * g) for the fixed random g. */
static double fd_loss(void *user)
{
    fd_problem *p = user;
    ref_rmsnorm_forward(p->y, p->rstd, p->x, p->w, p->N, p->C, EPS);
    double s = 0.0;
    for (size_t i = 0; i < p->N * p->C; i++) s += p->y[i] * p->g[i];
    return s;
}

static int rmsnorm_gradcheck(void)
{
    /* odd shapes, one column, and a row of zeros next to a row of 1000 + noise */
    const size_t shapes[][2] = {{1, 1}, {3, 2}, {7, 5}, {2, 61}, {3, 9}};
    int bad = 0;
    for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++) {
        const size_t N = shapes[s][0], C = shapes[s][1], NC = N * C;
        double *buf = calloc(5 * NC + 2 * C + N, sizeof *buf);
        if (!buf) return 1;
        fd_problem p = {N, C, buf, buf + NC, buf + NC + C, buf + 2 * NC + C, buf + 3 * NC + C};
        double *dx = p.rstd + N, *dw = dx + NC;
        ref_rng r = ref_rng_new(300 + s);
        for (size_t i = 0; i < NC; i++) p.x[i] = ref_rng_uniform(&r, -2, 2);
        for (size_t c = 0; c < C; c++) p.w[c] = ref_rng_uniform(&r, 0.5, 1.5);
        for (size_t i = 0; i < NC; i++) p.g[i] = ref_rng_uniform(&r, -1, 1);
        if (s == 4) /* row 0: zeros (rstd = 1/sqrt(eps)); row 1: a large mean */
            for (size_t c = 0; c < C; c++) p.x[c] = 0.0, p.x[C + c] += 1000.0;
        fd_loss(&p);
        ref_rmsnorm_backward(dx, dw, p.g, p.x, p.w, p.rstd, N, C, false);
        bad += conf_fd_check("rmsnorm dinp", p.x, NC, dx, fd_loss, &p);
        bad += conf_fd_check("rmsnorm dweight", p.w, C, dw, fd_loss, &p);
        free(buf);
    }
    return bad;
}

/* --- the conformance cases ----------------------------------------------------- */

typedef struct {
    size_t N, C;
    uint64_t seed;
    bool special; /* every third row zeros, the next 1000 + noise */
} rmsnorm_case;

static clformer_status run_case(cf_ctx *ctx, const rmsnorm_case *c, conf_sink sink, void *user)
{
    const size_t N = c->N, C = c->C, NC = N * C;
    conf_block b = {0};
    enum { INP, W, DOUT, OUT, RSTD, DINP, DW, COUNT };
    const size_t len[COUNT] = {NC, C, NC, NC, N, NC, C};
    for (int t = 0; t < COUNT; t++) conf_block_add(&b, len[t]);
    double *in64[COUNT] = {0}, *ref = NULL;
    clformer_status st = conf_block_create(ctx, &b);
    if (st) goto done;
    ref_rng r = ref_rng_new(c->seed);
    float *inp = conf_block_init(&b, INP);
    ref_fill_uniform(&r, inp, NULL, NC, -2, 2);
    ref_fill_uniform(&r, conf_block_init(&b, W), NULL, C, 0.5, 1.5);
    ref_fill_uniform(&r, conf_block_init(&b, DOUT), NULL, NC, -1, 1);
    ref_fill_uniform(&r, conf_block_init(&b, DW), NULL, C, -1, 1); /* existing gradient */
    for (size_t row = 0; c->special && row < N; row++)
        for (size_t k = 0; k < C; k++) {
            if (row % 3 == 0)
                inp[row * C + k] = 0.0f;
            else if (row % 3 == 1)
                inp[row * C + k] = 1000.0f + 0.5f * inp[row * C + k];
        }
    /* 16-bit runs: activations and weight as stored; dweight stays fp32 */
    for (int t = INP; t <= DOUT; t++) conf_round(ctx, conf_block_init(&b, t), len[t]);
    conf_block_init_fill(&b, OUT, NAN);    /* forward overwrites */
    conf_block_init_fill(&b, DINP, 1e30f); /* overwritten first, not added to */
    for (int t = INP; t <= DOUT; t++) in64[t] = conf_widen(conf_block_init(&b, t), len[t]);
    in64[DW] = conf_widen(conf_block_init(&b, DW), C);
    ref = malloc((2 * NC + N) * sizeof *ref);
    if (!ref || !in64[INP] || !in64[W] || !in64[DOUT] || !in64[DW]) {
        st = cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory");
        goto done;
    }
    double *y64 = ref, *rs64 = ref + NC, *dx64 = rs64 + N;
    const cf_view v_inp = conf_block_view(&b, INP), v_w = conf_block_view(&b, W),
                  v_dout = conf_block_view(&b, DOUT), v_out = conf_block_view(&b, OUT),
                  v_rs = conf_block_view(&b, RSTD), v_dinp = conf_block_view(&b, DINP),
                  v_dw = conf_block_view(&b, DW);
    char shape[96];
    snprintf(shape, sizeof shape, "N=%zu C=%zu%s", N, C, c->special ? " special rows" : "");

    if ((st = conf_block_upload(&b))) goto done;
    if (conf_warm_up(ctx) &&
        ((st = cf_rmsnorm_forward(ctx, v_out, v_rs, v_inp, v_w, N, C, (float)EPS)) ||
         (st = cf_rmsnorm_backward(ctx, v_dinp, v_dw, v_dout, v_inp, v_w, v_rs, N, C, false)) ||
         (st = cf_finish(ctx)) || (st = conf_block_upload(&b))))
        goto done;

    double t0 = conf_now_ms();
    if ((st = cf_rmsnorm_forward(ctx, v_out, v_rs, v_inp, v_w, N, C, (float)EPS)) ||
        (st = cf_finish(ctx)))
        goto done;
    double ms = conf_now_ms() - t0;
    if ((st = conf_block_read(&b))) goto done;
    ref_rmsnorm_forward(y64, rs64, in64[INP], in64[W], N, C, EPS);
    conf_emit(sink, user, "rmsnorm_forward", shape,
              conf_guarded(conf_worse(conf_compare_stored(ctx, conf_block_out(&b, OUT), y64, NC,
                                                          REF_RULE_FORWARD, NULL, NULL),
                                      ref_compare_forward(conf_block_out(&b, RSTD), rs64, N)),
                           &b),
              ms);

    /* backward twice: dinp overwritten, then accumulated; dweight adds both times */
    for (int pass = 0; pass < 2; pass++) {
        const bool acc = pass == 1;
        t0 = conf_now_ms();
        if ((st = cf_rmsnorm_backward(ctx, v_dinp, v_dw, v_dout, v_inp, v_w, v_rs, N, C, acc)) ||
            (st = cf_finish(ctx)))
            goto done;
        ms = conf_now_ms() - t0;
        if ((st = conf_block_read(&b))) goto done;
        ref_rmsnorm_backward(dx64, in64[DW], in64[DOUT], in64[INP], in64[W], rs64, N, C, acc);
        conf_emit(sink, user, acc ? "rmsnorm_backward_accumulate" : "rmsnorm_backward", shape,
                  conf_guarded(conf_worse(conf_compare_stored(ctx, conf_block_out(&b, DINP), dx64,
                                                              NC, REF_RULE_GRAD, NULL, NULL),
                                          ref_compare_grad(conf_block_out(&b, DW), in64[DW], C)),
                               &b),
                  ms);
    }
done:
    conf_block_free(&b);
    for (int t = 0; t < COUNT; t++) free(in64[t]);
    free(ref);
    return st;
}

/* quick (simulators): odd shapes and special rows; else model widths too. No
 * C = 1: there y = w x / sqrt(x^2 + eps) is w sign(x) to within eps, and its
 * gradient, w eps / (x^2 + eps)^1.5, is the difference of two equal fp32 terms. */
static clformer_status rmsnorm_check(cf_ctx *ctx, bool quick, conf_sink sink, void *user)
{
    static const rmsnorm_case small[] = {{1, 3, 1, false}, {7, 37, 2, false}, {6, 61, 3, true}},
                              full[] = {{93, 257, 4, false}, {61, 512, 5, true},
                                        {256, 2048, 6, false}};
    CONF_RUN_CASES(run_case, small, full, quick, ctx, sink, user);
    return CLFORMER_OK;
}

CONF_OP(rmsnorm) = {"rmsnorm",
                    "rmsnorm_forward rmsnorm_backward_input rmsnorm_backward_weight",
                    "cf_rmsnorm_forward, cf_rmsnorm_backward",
                    "ref_rmsnorm_forward, ref_rmsnorm_backward (this file)",
                    "forward rule for out and rstd; gradient rule for dinp and dweight",
                    rmsnorm_check,
                    rmsnorm_gradcheck,
                    NULL, true};
