/* Bias + ReLU/GELU/GELU-tanh + dropout, described once: its double-precision
 * reference, the checks of that reference (finite differences, dbias's +=,
 * known values, the dropout mask's Philox words), its conformance cases and
 * its descriptor. Forward (forward rule) and backward (dinp and dbias,
 * gradient rule) twice and once in place (dinp = dout), with dropout so the
 * device's Philox mask is checked against the reference's (ref_philox.c,
 * shared with dropout and the fused residual), every tensor guarded; odd
 * shapes and model widths; dropout's limits (p = 1, p = 0); repeats
 * bit-identical; argument errors. The kernels are cl/activation.cl, the
 * launchers runtime/ops/ops_activation.c. */
#include "conf_activation.h"
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

/* GPT-2's tanh approximation: u = sqrt(2/pi) (x + 0.044715 x^3). */
#define SQRT_2_OVER_PI 0.79788456080286535588
static double gelu_tanh_u(double x) { return SQRT_2_OVER_PI * (x + 0.044715 * x * x * x); }

double ref_act_value(double x, clformer_activation act)
{
    if (act == CLFORMER_ACT_GELU_TANH) return 0.5 * x * (1.0 + tanh(gelu_tanh_u(x)));
    if (act == CLFORMER_ACT_GELU) return 0.5 * x * (1.0 + erf(x / sqrt(2.0)));
    return x > 0.0 ? x : 0.0;
}

/* d/dx of x Phi(x) = Phi(x) + x phi(x); ReLU'(0) = 0. */
double ref_act_grad(double x, clformer_activation act)
{
    const double inv_sqrt_2pi = 0.39894228040143267794;
    if (act == CLFORMER_ACT_GELU_TANH) {
        const double t = tanh(gelu_tanh_u(x));
        return 0.5 * (1.0 + t) +
               0.5 * x * (1.0 - t * t) * SQRT_2_OVER_PI * (1.0 + 3.0 * 0.044715 * x * x);
    }
    if (act == CLFORMER_ACT_GELU)
        return 0.5 * (1.0 + erf(x / sqrt(2.0))) + x * exp(-0.5 * x * x) * inv_sqrt_2pi;
    return x > 0.0 ? 1.0 : 0.0;
}

/* out = dropout(act(inp + bias)) over (N, C); GELU is the exact erf form. */
static void ref_bias_act_forward(double *out, const double *inp, const double *bias, size_t N,
                                 size_t C, clformer_activation act, const ref_dropout *dropout)
{
    for (size_t r = 0; r < N; r++)
        for (size_t c = 0; c < C; c++) {
            const size_t i = r * C + c;
            out[i] = ref_act_value(inp[i] + bias[c], act) * ref_dropout_scale(dropout, i);
        }
}

/* dinp = dropout_mask(dout) * act'(inp + bias) (overwrites; may alias dout);
 * dbias += sum_rows(dinp). ReLU'(0) = 0, as PyTorch. */
static void ref_bias_act_backward(double *dinp, double *dbias, const double *dout,
                                  const double *inp, const double *bias, size_t N, size_t C,
                                  clformer_activation act, const ref_dropout *dropout)
{
    for (size_t r = 0; r < N; r++)
        for (size_t c = 0; c < C; c++) {
            const size_t i = r * C + c;
            const double g =
                dout[i] * ref_dropout_scale(dropout, i) * ref_act_grad(inp[i] + bias[c], act);
            dinp[i] = g;
            dbias[c] += g;
        }
}

/* --- the conformance cases ----------------------------------------------------- */

typedef struct {
    size_t N, C;
    clformer_activation act;
    float p; /* dropout */
    uint64_t seed;
} activation_case;

/* ReLU'(0) = 0 exactly: every fifth pre-activation is exactly 0. */
static ref_cmp relu_kink(ref_cmp c, const activation_case *k, const float *dx)
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

static clformer_status run_case(cf_ctx *ctx, const activation_case *k, conf_sink sink,
                                void *user)
{
    const size_t N = k->N, C = k->C, NC = N * C;
    const cf_dropout drop = {k->p, 0x1234567890ull + k->seed, (uint32_t)k->seed, 11};
    const ref_dropout rdrop = {drop.p, drop.seed, drop.step, drop.site};
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

/* Dropout's limits on one shape (GELU forward, ReLU backward in place):
 * p = 1 drops everything (PyTorch gives zeros), and p = 0 gives what no
 * dropout gives, bit for bit. */
static clformer_status run_dropout_limits(cf_ctx *ctx, conf_sink sink, void *user)
{
    const size_t N = 7, C = 61, NC = N * C;
    conf_block b = {0};
    enum { X, BIAS, Y, Y0, DB, COUNT };
    const size_t len[COUNT] = {NC, C, NC, NC, C};
    for (int t = 0; t < COUNT; t++) conf_block_add(&b, len[t]);
    double *y0 = NULL;
    clformer_status st = conf_block_create(ctx, &b);
    if (st) goto done;
    ref_rng r = ref_rng_new(70);
    ref_fill_uniform(&r, conf_block_init(&b, X), NULL, NC, -3, 3);
    ref_fill_uniform(&r, conf_block_init(&b, BIAS), NULL, C, -1, 1);
    conf_round(ctx, conf_block_init(&b, X), NC);
    conf_round(ctx, conf_block_init(&b, BIAS), C);
    const cf_view vx = conf_block_view(&b, X), vb = conf_block_view(&b, BIAS),
                  vy = conf_block_view(&b, Y), vy0 = conf_block_view(&b, Y0),
                  vdb = conf_block_view(&b, DB);
    const cf_dropout all = {1.0f, 5, 6, 7}, none = {0.0f, 5, 6, 7};
    /* Y: p = 1; Y0: p = 0, then compared with no dropout */
    if ((st = conf_block_upload(&b)) ||
        (st = cf_bias_act_forward(ctx, vy, vx, vb, N, C, CLFORMER_ACT_GELU, &all)) ||
        (st = cf_bias_act_forward(ctx, vy0, vx, vb, N, C, CLFORMER_ACT_GELU, &none)) ||
        (st = cf_finish(ctx)) || (st = conf_block_read(&b)))
        goto done;
    bool all_dropped = true; /* zeros of either sign, as PyTorch's */
    for (size_t i = 0; i < NC; i++) all_dropped &= conf_block_out(&b, Y)[i] == 0.0f;
    if (!(y0 = conf_widen(conf_block_out(&b, Y0), NC))) {
        st = cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory");
        goto done;
    }
    if ((st = cf_bias_act_forward(ctx, vy0, vx, vb, N, C, CLFORMER_ACT_GELU, NULL)) ||
        (st = cf_bias_act_backward(ctx, vy, vdb, vy, vx, vb, N, C, CLFORMER_ACT_RELU, &all)) ||
        (st = cf_finish(ctx)) || (st = conf_block_read(&b)))
        goto done;
    ref_cmp c = ref_compare_exact(conf_block_out(&b, Y0), y0, NC);
    for (size_t i = 0; i < NC; i++) all_dropped &= conf_block_out(&b, Y)[i] == 0.0f; /* dinp */
    if (c.pass && !all_dropped) c.pass = false, c.why = "p = 1 kept an element";
    conf_emit(sink, user, "activation_dropout_limits", "N=7 C=61 p=1, p=0 vs none",
              conf_guarded(c, &b), 0.0);
done:
    conf_block_free(&b);
    free(y0);
    return st;
}

/* The forward and the backward of a repeat, on its views. */
typedef struct {
    cf_view x, bias, dy, y, dx, db;
    size_t N, C;
    const cf_dropout *drop;
} repeat_views;

static clformer_status repeat_launch(cf_ctx *ctx, const void *args)
{
    const repeat_views *v = args;
    CF_TRY(cf_bias_act_forward(ctx, v->y, v->x, v->bias, v->N, v->C, CLFORMER_ACT_GELU, v->drop));
    return cf_bias_act_backward(ctx, v->dx, v->db, v->dy, v->x, v->bias, v->N, v->C,
                                CLFORMER_ACT_GELU, v->drop);
}

/* Forward and backward twice with dropout into fresh outputs: every output
 * bit-identical (the mask depends only on seed, step, site and index). */
static clformer_status run_repeat(cf_ctx *ctx, size_t N, size_t C, conf_sink sink, void *user)
{
    const size_t NC = N * C;
    const cf_dropout drop = {0.1f, 99, 1, 2};
    conf_block b = {0};
    enum { X, BIAS, DY, Y, DX, DB, COUNT };
    const size_t len[COUNT] = {NC, C, NC, NC, NC, C};
    for (int t = 0; t < COUNT; t++) conf_block_add(&b, len[t]);
    clformer_status st = conf_block_create(ctx, &b);
    if (st) goto done;
    ref_rng r = ref_rng_new(80);
    ref_fill_uniform(&r, conf_block_init(&b, X), NULL, NC, -3, 3);
    ref_fill_uniform(&r, conf_block_init(&b, BIAS), NULL, C, -1, 1);
    ref_fill_uniform(&r, conf_block_init(&b, DY), NULL, NC, -1, 1);
    for (int t = X; t <= DY; t++) conf_round(ctx, conf_block_init(&b, t), len[t]);
    const repeat_views v = {conf_block_view(&b, X),  conf_block_view(&b, BIAS),
                            conf_block_view(&b, DY), conf_block_view(&b, Y),
                            conf_block_view(&b, DX), conf_block_view(&b, DB),
                            N,                       C,
                            &drop};
    ref_cmp c;
    if ((st = conf_block_repeat(&b, repeat_launch, &v, Y, COUNT, &c))) goto done;
    char shape[96];
    snprintf(shape, sizeof shape, "N=%zu C=%zu p=0.1 twice", N, C);
    conf_emit(sink, user, "activation_repeat", shape, conf_guarded(c, &b), 0.0);
done:
    conf_block_free(&b);
    return st;
}

/* Bad arguments are errors naming the fix; N = 0 is a no-op. */
static clformer_status run_arguments(cf_ctx *ctx, conf_sink sink, void *user)
{
    conf_block b = {0};
    const size_t A = conf_block_add(&b, 16);
    clformer_status st = conf_block_create(ctx, &b);
    if (st || (st = conf_block_upload(&b))) goto done;
    const cf_view a = conf_block_view(&b, A);
    const cf_dropout negative = {-0.5f, 1, 2, 3}, above_one = {1.5f, 1, 2, 3};
    const char *bad = NULL;
    st = cf_bias_act_forward(ctx, a, a, a, 2, 2, (clformer_activation)7, NULL);
    if (st != CLFORMER_ERR_INVALID_ARGUMENT || !strstr(clformer_last_error(), "CLFORMER_ACT_RELU"))
        bad = "an unknown activation not refused naming the known ones";
    else if (cf_bias_act_forward(ctx, a, a, a, 2, 2, CLFORMER_ACT_RELU, &negative) !=
             CLFORMER_ERR_INVALID_ARGUMENT)
        bad = "a negative dropout probability not refused";
    else if (cf_bias_act_backward(ctx, a, a, a, a, a, 2, 2, CLFORMER_ACT_GELU, &above_one) !=
             CLFORMER_ERR_INVALID_ARGUMENT)
        bad = "a dropout probability above 1 not refused";
    st = CLFORMER_OK;
    if (!bad && ((st = cf_bias_act_forward(ctx, a, a, a, 0, 2, CLFORMER_ACT_RELU, NULL)) ||
                 (st = cf_finish(ctx)) || (st = conf_block_read(&b))))
        goto done;
    conf_emit(sink, user, "activation_arguments", "bad activation, p < 0, p > 1, N=0",
              conf_block_refusals(&b, bad), 0.0);
done:
    conf_block_free(&b);
    return st;
}

/* quick (simulators): small odd shapes per activation, with and without
 * dropout; else odd sizes in both positions and the model's widths. */
static clformer_status activation_check(cf_ctx *ctx, bool quick, conf_sink sink, void *user)
{
    static const activation_case small[] = {{7, 37, 0, 0.1f, 7 * 7919 + 37}, {1, 1, 0, 0.0f, 10},
                                            {7, 5, 0, 0.25f, 11}, {40, 9, 0, 0.0f, 12},
                                            {3, 37, 0, 0.25f, 13}};
    static const size_t odd[] = {1, 7, 61, 93, 257};
    for (int a = CLFORMER_ACT_RELU; a <= CLFORMER_ACT_GELU_TANH; a++) {
        const clformer_activation act = (clformer_activation)a;
        for (size_t i = 0; i < 5; i++) {
            activation_case k = small[i];
            k.act = act, k.seed += (uint64_t)a;
            CF_TRY(run_case(ctx, &k, sink, user));
        }
        if (quick) continue;
        for (size_t i = 0; i < 5; i++)
            for (size_t j = 0; j < 5; j++) {
                const activation_case k = {odd[i], odd[j], act, (i + j) % 2 ? 0.1f : 0.0f,
                                           100 + 5 * i + j + 1000 * (uint64_t)a};
                CF_TRY(run_case(ctx, &k, sink, user));
            }
        static const activation_case widths[] = {{257, 2048, 0, 0.1f, 257 * 7919 + 2048},
                                                 {61, 2048, 0, 0.1f, 41},
                                                 {257, 512, 0, 0.5f, 42},
                                                 {93, 2048, 0, 0.0f, 43}};
        for (size_t i = 0; i < 4; i++) {
            activation_case k = widths[i];
            k.act = act, k.seed += (uint64_t)a;
            CF_TRY(run_case(ctx, &k, sink, user));
        }
    }
    CF_TRY(run_dropout_limits(ctx, sink, user));
    CF_TRY(quick ? run_repeat(ctx, 40, 9, sink, user) : run_repeat(ctx, 257, 2048, sink, user));
    return run_arguments(ctx, sink, user);
}

/* --- checks of the reference ---------------------------------------------------- */

/* dbias accumulates and dinp is overwritten, also over dout; ReLU'(0) = 0
 * (PyTorch); GELU's and GELU tanh's values from their definitions; the
 * dropout mask uses Philox4x32-10's words (key 0, counter 0 gives 0x6627e8d5
 * 0xe169c58d 0xbc57ac4c 0x9b00dbd8, Random123's known-answer vectors; element
 * i < 4 of site 0, step 0, seed 0 uses word i: its uniform is word >> 8 over
 * 2^24, so p equal to it keeps the element and the next float above drops
 * it), drops about p of a long run and depends on every field. Returns the
 * mismatches. */
static int activation_reference_rules(void)
{
    int bad = 0;
    enum { N = 4, C = 3, NC = N * C };
    double x[NC], bias[C], g[NC], d1[NC], out[NC], b1[C] = {0}, b2[C] = {0};
    ref_rng r = ref_rng_new(7);
    for (size_t c = 0; c < C; c++) bias[c] = ref_rng_uniform(&r, -0.5, 0.5);
    for (size_t i = 0; i < NC; i++) x[i] = ref_rng_uniform(&r, -3, 3), g[i] = ref_rng_uniform(&r, -1, 1);
    ref_bias_act_backward(d1, b1, g, x, bias, N, C, CLFORMER_ACT_GELU, NULL);
    ref_bias_act_backward(out, b2, g, x, bias, N, C, CLFORMER_ACT_GELU, NULL);
    ref_bias_act_backward(g, b2, g, x, bias, N, C, CLFORMER_ACT_GELU, NULL); /* aliased */
    for (size_t i = 0; i < NC; i++) bad += g[i] != d1[i];
    for (size_t c = 0; c < C; c++) bad += !(fabs(b2[c] - 2.0 * b1[c]) < 1e-12);

    const double v[4] = {0.0, 1.0, -1.0, 2.0}, zero[1] = {0.0}, ones[4] = {1, 1, 1, 1};
    double y[4], d[4], db[1] = {0.0};
    ref_bias_act_forward(y, v, zero, 4, 1, CLFORMER_ACT_GELU, NULL);
    bad += y[0] != 0.0;
    bad += !(fabs(y[1] - 0.8413447460685429) < 1e-15); /* Phi(1) */
    bad += !(fabs(y[2] + 0.15865525393145707) < 1e-15);
    bad += !(fabs(y[3] - 1.9544997361036416) < 1e-15);
    ref_bias_act_backward(d, db, ones, v, zero, 4, 1, CLFORMER_ACT_GELU, NULL);
    bad += !(fabs(d[0] - 0.5) < 1e-15);
    /* GPT-2's tanh form: gelu_tanh(1) = 0.5 (1 + tanh(sqrt(2/pi) 1.044715)) */
    ref_bias_act_forward(y, v, zero, 4, 1, CLFORMER_ACT_GELU_TANH, NULL);
    bad += y[0] != 0.0;
    bad += !(fabs(y[1] - 0.8411919906082768) < 1e-15);
    bad += !(fabs(y[2] + 0.15880800939172324) < 1e-15);
    ref_bias_act_backward(d, db, ones, v, zero, 4, 1, CLFORMER_ACT_GELU_TANH, NULL);
    bad += !(fabs(d[0] - 0.5) < 1e-15);
    ref_bias_act_backward(d, db, ones, v, zero, 4, 1, CLFORMER_ACT_RELU, NULL);
    bad += !(d[0] == 0.0 && d[1] == 1.0 && d[2] == 0.0 && d[3] == 1.0);

    const uint32_t words[4] = {0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu, 0x9b00dbd8u};
    for (uint64_t i = 0; i < 4; i++) {
        const float u = (float)((double)(words[i] >> 8) / 16777216.0);
        ref_dropout k = {u, 0, 0, 0};
        bad += !(fabs(ref_dropout_scale(&k, i) - 1.0 / (1.0 - (double)u)) < 1e-15);
        k.p = nextafterf(u, 1.0f);
        bad += ref_dropout_scale(&k, i) != 0.0;
    }
    const ref_dropout a = {0.25f, 42, 3, 9}, sb = {0.25f, 42, 3, 10}, sc = {0.25f, 42, 4, 9},
                      se = {0.25f, 43, 3, 9};
    size_t dropped = 0, diff_site = 0, diff_step = 0, diff_seed = 0;
    for (uint64_t i = 0; i < 100000; i++) {
        const double s = ref_dropout_scale(&a, i);
        dropped += s == 0.0;
        diff_site += s != ref_dropout_scale(&sb, i);
        diff_step += s != ref_dropout_scale(&sc, i);
        diff_seed += s != ref_dropout_scale(&se, i);
    }
    bad += !(dropped > 24000 && dropped < 26000);
    bad += !(diff_site > 30000 && diff_step > 30000 && diff_seed > 30000);
    bad += ref_dropout_scale(NULL, 5) != 1.0;
    if (bad) fprintf(stderr, "activation reference: %d mismatches of its rules\n", bad);
    return bad;
}

/* Finite differences of the reference backward, ReLU and GELU, with and
 * without dropout. ReLU has a kink at 0: pre-activations stay at least 0.01
 * away from it so the differences (step 1e-6) never straddle it. */
typedef struct {
    size_t N, C;
    clformer_activation act;
    const ref_dropout *drop;
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
    static const ref_dropout drop = {0.3f, 1234, 5, 6};
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
    return bad + activation_reference_rules();
}

CONF_OP(activation) = {"activation", "bias_act_forward bias_act_backward",
    "cf_bias_act_forward, cf_bias_act_backward",
    "ref_bias_act_forward, ref_bias_act_backward (this file; the mask ref_philox.c)",
    "forward rule for out; gradient rule for dinp and dbias",
    activation_check, activation_gradcheck, NULL, true};
