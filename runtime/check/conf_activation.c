/* Conformance of bias + activation + dropout, for ReLU, GELU and GELU tanh: forward
 * (forward rule) and backward (dinp and dbias, gradient rule) twice and once
 * in place (dinp = dout), with dropout so the device's Philox mask is checked
 * against the reference's, every tensor guarded. `clformer check` runs one
 * shape per activation; test_activation runs many more cases. */
#include "conf_block.h"
#include "conformance.h"
#include "ops.h"
#include "ref_activation.h"
#include "ref_random.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

/* ReLU'(0) = 0 exactly: every fifth pre-activation is exactly 0. */
static ref_cmp relu_kink(ref_cmp c, const conf_activation_case *k, const float *dx)
{
    if (k->act == CLFORMER_ACT_RELU)
        for (size_t i = 0; i < k->N * k->C; i += 5)
            if (dx[i] != 0.0f) {
                c.pass = false;
                c.why = "ReLU'(0) is not 0";
                c.worst = i;
                c.worst_value = dx[i];
                c.worst_ref = 0.0;
                break;
            }
    return c;
}

clformer_status conf_activation_run(cf_ctx *ctx, const conf_activation_case *k, conf_sink sink,
                                    void *user)
{
    const size_t N = k->N, C = k->C, NC = N * C;
    const cf_dropout drop = {k->p, 0x1234567890ull + k->seed, (uint32_t)k->seed, 11};
    const ref_act_dropout rdrop = {drop.p, drop.seed, drop.step, drop.site};
    const char *name = clformer_activation_name(k->act);
    conf_block b = {0};
    enum { X, BIAS, DY, Y, DX, DB, COUNT };
    const size_t len[COUNT] = {NC, C, NC, NC, NC, C};
    for (int t = 0; t < COUNT; t++) conf_block_add(&b, len[t]);
    double *x64 = NULL, *b64 = NULL, *dy64 = NULL, *db64 = NULL, *y64 = NULL, *dx64 = NULL;
    double *dbx = NULL; /* dbias's carried rounding (16-bit runs) */
    clformer_status st = conf_block_create(ctx, &b);
    if (st) goto done;
    float *x = conf_block_init(&b, X), *bias = conf_block_init(&b, BIAS);
    ref_rng r = ref_rng_new(k->seed);
    ref_fill_uniform(&r, x, NULL, NC, -3, 3);
    ref_fill_uniform(&r, bias, NULL, C, -0.5, 0.5);
    ref_fill_uniform(&r, conf_block_init(&b, DY), NULL, NC, -1, 1);
    ref_fill_uniform(&r, conf_block_init(&b, DB), NULL, C, -1, 1); /* existing gradient */
    /* 16-bit runs: input, bias and dout as stored (the sums below stay 0
     * exactly: rounding is symmetric); the gradient dbias adds to stays fp32 */
    conf_round(ctx, x, NC);
    conf_round(ctx, bias, C);
    conf_round(ctx, conf_block_init(&b, DY), NC);
    for (size_t i = 0; i < NC; i += 5) x[i] = -bias[i % C]; /* pre-activation exactly 0 */
    conf_block_init_fill(&b, Y, NAN);  /* overwritten */
    conf_block_init_fill(&b, DX, NAN); /* overwritten */
    x64 = conf_widen(x, NC), b64 = conf_widen(bias, C), dy64 = conf_widen(conf_block_init(&b, DY), NC);
    db64 = conf_widen(conf_block_init(&b, DB), C);
    y64 = malloc(NC * sizeof *y64), dx64 = malloc(NC * sizeof *dx64);
    dbx = calloc(C, sizeof *dbx);
    if (!x64 || !b64 || !dy64 || !db64 || !y64 || !dx64 || !dbx) {
        st = cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory");
        goto done;
    }
    const cf_view vx = conf_block_view(&b, X), vb = conf_block_view(&b, BIAS),
                  vdy = conf_block_view(&b, DY), vy = conf_block_view(&b, Y),
                  vdx = conf_block_view(&b, DX), vdb = conf_block_view(&b, DB);
    char op[64], shape[96];
    snprintf(shape, sizeof shape, "N=%zu C=%zu p=%g", N, C, (double)k->p);

    /* Both kernels once before the timed runs (PoCL compiles at the first
     * launch); the upload afterwards restores every initial value. */
    if ((st = conf_block_upload(&b))) goto done;
    if (conf_warm_up(ctx) &&
        ((st = cf_bias_act_forward(ctx, vy, vx, vb, N, C, k->act, &drop)) ||
         (st = cf_bias_act_backward(ctx, vdx, vdb, vdy, vx, vb, N, C, k->act, &drop)) ||
         (st = cf_finish(ctx)) || (st = conf_block_upload(&b))))
        goto done;

    double t0 = conf_now_ms();
    if ((st = cf_bias_act_forward(ctx, vy, vx, vb, N, C, k->act, &drop)) || (st = cf_finish(ctx)))
        goto done;
    double ms = conf_now_ms() - t0;
    if ((st = conf_block_read(&b))) goto done;
    ref_bias_act_forward(y64, x64, b64, N, C, k->act, &rdrop);
    snprintf(op, sizeof op, "activation_forward_%s", name);
    conf_emit(sink, user, op, shape,
              conf_guarded(conf_compare_stored(ctx, conf_block_out(&b, Y), y64, NC, REF_RULE_FORWARD,
                                               NULL, NULL),
                           &b),
              ms);

    /* Backward twice (dinp the same both times: overwritten; dbias +=), then
     * in place over dout. */
    static const char *const pass_name[3] = {"", "_twice", "_in_place"};
    for (int pass = 0; pass < 3; pass++) {
        const cf_view out = pass == 2 ? vdy : vdx;
        t0 = conf_now_ms();
        if ((st = cf_bias_act_backward(ctx, out, vdb, vdy, vx, vb, N, C, k->act, &drop)) ||
            (st = cf_finish(ctx)))
            goto done;
        ms = conf_now_ms() - t0;
        if ((st = conf_block_read(&b))) goto done;
        ref_bias_act_backward(dx64, db64, dy64, x64, b64, N, C, k->act, &rdrop);
        const float *dx = conf_block_out(&b, pass == 2 ? DY : DX);
        /* dbias sums dinp as stored: each term carries dinp's rounding, at
         * most u |dinp|, into the fp32 sum (every pass adds to dbias) */
        const double u = conf_unit_roundoff(ctx);
        for (size_t i = 0; i < NC; i++) dbx[i % C] += u * fabs(dx64[i]);
        const ref_cmp cdb = u > 0.0 ? ref_compare_grad_carried(conf_block_out(&b, DB), db64, C, dbx)
                                    : ref_compare_grad(conf_block_out(&b, DB), db64, C);
        snprintf(op, sizeof op, "activation_backward%s_%s", pass_name[pass], name);
        conf_emit(sink, user, op, shape,
                  conf_guarded(relu_kink(conf_worse(conf_compare_stored(ctx, dx, dx64, NC,
                                                                        REF_RULE_GRAD, NULL, NULL),
                                                    cdb),
                                         k, dx),
                               &b),
                  ms);
    }
done:
    conf_block_free(&b);
    free(x64), free(b64), free(dy64), free(db64), free(y64), free(dx64), free(dbx);
    return st;
}

clformer_status conf_activation(cf_ctx *ctx, bool quick, conf_sink sink, void *user)
{
    const size_t N = quick ? 7 : 257, C = quick ? 37 : 2048;
    for (int act = CLFORMER_ACT_RELU; act <= CLFORMER_ACT_GELU_TANH; act++) {
        const conf_activation_case k = {N, C, (clformer_activation)act, 0.1f, N * 7919 + C + (uint64_t)act};
        CF_TRY(conf_activation_run(ctx, &k, sink, user));
    }
    return CLFORMER_OK;
}

/* Finite differences of the reference backward, ReLU and GELU, with and
 * without dropout. ReLU has a kink at 0: pre-activations stay at least 0.01
 * away from it so the differences (step 1e-6) never straddle it. */
typedef struct {
    size_t N, C;
    clformer_activation act;
    const ref_act_dropout *drop;
    double *x, *b, *g, *y;
} fd_problem;

static double fd_loss(void *user)
{
    fd_problem *p = user;
    ref_bias_act_forward(p->y, p->x, p->b, p->N, p->C, p->act, p->drop);
    double s = 0.0;
    for (size_t i = 0; i < p->N * p->C; i++) s += p->y[i] * p->g[i];
    return s;
}

static int activation_gradcheck(void)
{
    static const ref_act_dropout drop = {0.3f, 1234, 5, 6};
    const size_t shapes[][2] = {{1, 1}, {7, 5}, {3, 61}};
    int bad = 0;
    for (int act = 0; act <= CLFORMER_ACT_GELU_TANH; act++)
        for (size_t s = 0; s < 3; s++)
            for (int dropped = 0; dropped < 2; dropped++) {
                const size_t N = shapes[s][0], C = shapes[s][1], NC = N * C;
                double *buf = calloc(4 * NC + 2 * C, sizeof *buf);
                if (!buf) return 1;
                fd_problem p = {N,   C,      (clformer_activation)act, dropped ? &drop : NULL,
                                buf, buf + NC, buf + NC + C,      buf + 2 * NC + C};
                double *dx = p.y + NC, *db = dx + NC;
                ref_rng r = ref_rng_new((dropped ? 20 : 10) * s + (uint64_t)act);
                for (size_t c = 0; c < C; c++) p.b[c] = ref_rng_uniform(&r, -0.5, 0.5);
                for (size_t i = 0; i < NC; i++) {
                    do p.x[i] = ref_rng_uniform(&r, -3, 3);
                    while (fabs(p.x[i] + p.b[i % C]) < 0.01);
                    p.g[i] = ref_rng_uniform(&r, -1, 1);
                }
                ref_bias_act_backward(dx, db, p.g, p.x, p.b, N, C, p.act, p.drop);
                bad += conf_fd_check("activation dinp", p.x, NC, dx, fd_loss, &p);
                bad += conf_fd_check("activation dbias", p.b, C, db, fd_loss, &p);
                free(buf);
            }
    return bad;
}

CONF_OP(activation) = {"activation", "bias_act_forward bias_act_backward",
    "cf_bias_act_forward, cf_bias_act_backward",
    "ref_bias_act_forward, ref_bias_act_backward (reference/ref_activation.c)",
    "forward rule for out; gradient rule for dinp and dbias",
    conf_activation, activation_gradcheck,
    "test_activation (many more cases, determinism, argument errors)", true};
