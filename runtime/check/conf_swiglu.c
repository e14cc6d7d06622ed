/* SiLU and SwiGLU, described once: the double-precision reference, its
 * finite-difference check, the conformance cases (forward; backward storing,
 * then accumulating; gates from -100 to 100 so sigmoid saturates both ways;
 * every tensor guarded) and the descriptor. The kernels are cl/swiglu.cl,
 * the launchers runtime/ops/ops_swiglu.c. */
#include "conf_block.h"
#include "conformance.h"
#include "ops.h"
#include "ref_random.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

/* --- the reference, in double ------------------------------------------------ */

static double sigmoid(double a) { return 1.0 / (1.0 + exp(-a)); }
static double silu(double a) { return a * sigmoid(a); }
static double silu_grad(double a) { return sigmoid(a) * (1.0 + a * (1.0 - sigmoid(a))); }

/* out = silu(gate) * up (up NULL: silu(gate) alone). */
static void ref_swiglu_forward(double *out, const double *gate, const double *up, size_t n)
{
    for (size_t i = 0; i < n; i++) out[i] = silu(gate[i]) * (up ? up[i] : 1.0);
}

/* dgate (+)= dout * up * silu'(gate); dup (+)= dout * silu(gate) (up NULL: SiLU). */
static void ref_swiglu_backward(double *dgate, double *dup, const double *dout,
                                const double *gate, const double *up, size_t n, bool accumulate)
{
    for (size_t i = 0; i < n; i++) {
        const double vg = dout[i] * (up ? up[i] : 1.0) * silu_grad(gate[i]);
        dgate[i] = accumulate ? dgate[i] + vg : vg;
        if (up) dup[i] = (accumulate ? dup[i] : 0.0) + dout[i] * silu(gate[i]);
    }
}

/* --- finite differences of the reference ------------------------------------- */

typedef struct {
    size_t n;
    double *gate, *up, *g, *out; /* up NULL: SiLU */
} fd_problem;

static double fd_loss(void *user)
{
    fd_problem *p = user;
    ref_swiglu_forward(p->out, p->gate, p->up, p->n);
    double s = 0.0;
    for (size_t i = 0; i < p->n; i++) s += p->out[i] * p->g[i];
    return s;
}

static int swiglu_gradcheck(void)
{
    enum { N = 41 };
    double gate[N], up[N], g[N], out[N], dgate[N], dup[N];
    ref_rng r = ref_rng_new(77);
    for (size_t i = 0; i < N; i++) {
        gate[i] = ref_rng_uniform(&r, -8, 8);
        up[i] = ref_rng_uniform(&r, -2, 2);
        g[i] = ref_rng_uniform(&r, -1, 1);
    }
    gate[0] = 0.0, gate[1] = -30.0, gate[2] = 30.0; /* the kink-free origin, saturation */
    int bad = 0;
    for (int glu = 0; glu < 2; glu++) {
        fd_problem p = {N, gate, glu ? up : NULL, g, out};
        ref_swiglu_backward(dgate, dup, g, gate, p.up, N, false);
        bad += conf_fd_check(glu ? "swiglu dgate" : "silu dx", gate, N, dgate, fd_loss, &p);
        if (glu) bad += conf_fd_check("swiglu dup", up, N, dup, fd_loss, &p);
    }
    return bad;
}

/* --- the conformance cases ----------------------------------------------------- */

typedef struct {
    size_t n;
    bool glu; /* SwiGLU, else SiLU */
    uint64_t seed;
} swiglu_case;

static clformer_status run_case(cf_ctx *ctx, const swiglu_case *c, conf_sink sink, void *user)
{
    const size_t n = c->n;
    const char *name = c->glu ? "swiglu" : "silu";
    conf_block b = {0};
    enum { GATE, UP, DOUT, OUT, DGATE, DUP, COUNT };
    for (int t = 0; t < COUNT; t++) conf_block_add(&b, n);
    double *in64[COUNT] = {0};
    clformer_status st = conf_block_create(ctx, &b);
    if (st) goto done;
    ref_rng r = ref_rng_new(c->seed);
    float *gate = conf_block_init(&b, GATE);
    ref_fill_uniform(&r, gate, NULL, n, -8, 8);
    for (size_t i = 0; i < n; i += 7) gate[i] = (float)(i % 2 ? 100.0 : -100.0) * (i % 3 ? 1 : 0);
    ref_fill_uniform(&r, conf_block_init(&b, UP), NULL, n, -2, 2);
    ref_fill_uniform(&r, conf_block_init(&b, DOUT), NULL, n, -1, 1);
    for (int t = GATE; t <= DOUT; t++) conf_round(ctx, conf_block_init(&b, t), n); /* as stored */
    conf_block_init_fill(&b, OUT, NAN);      /* forward overwrites */
    conf_block_init_fill(&b, DGATE, 1e30f);  /* overwritten first, not added to */
    conf_block_init_fill(&b, DUP, 1e30f);
    for (int t = 0; t < COUNT; t++) in64[t] = conf_widen(conf_block_init(&b, t), n);
    for (int t = 0; t < COUNT; t++)
        if (!in64[t]) {
            st = cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory");
            goto done;
        }
    const cf_view v_gate = conf_block_view(&b, GATE), v_up = conf_block_view(&b, UP),
                  v_dout = conf_block_view(&b, DOUT), v_out = conf_block_view(&b, OUT),
                  v_dgate = conf_block_view(&b, DGATE), v_dup = conf_block_view(&b, DUP);
    const double *up64 = c->glu ? in64[UP] : NULL;
    char shape[96], op[64];
    snprintf(shape, sizeof shape, "n=%zu", n);

    if ((st = conf_block_upload(&b))) goto done;
    double t0 = conf_now_ms();
    if ((st = c->glu ? cf_swiglu_forward(ctx, v_out, v_gate, v_up, n)
                     : cf_silu_forward(ctx, v_out, v_gate, n)) ||
        (st = cf_finish(ctx)))
        goto done;
    double ms = conf_now_ms() - t0;
    if ((st = conf_block_read(&b))) goto done;
    ref_swiglu_forward(in64[OUT], in64[GATE], up64, n);
    snprintf(op, sizeof op, "%s_forward", name);
    conf_emit(sink, user, op, shape,
              conf_guarded(conf_compare_stored(ctx, conf_block_out(&b, OUT), in64[OUT], n,
                                               REF_RULE_FORWARD, NULL, NULL),
                           &b),
              ms);

    for (int pass = 0; pass < 2; pass++) {
        const bool acc = pass == 1;
        t0 = conf_now_ms();
        if ((st = c->glu ? cf_swiglu_backward(ctx, v_dgate, v_dup, v_dout, v_gate, v_up, n, acc)
                         : cf_silu_backward(ctx, v_dgate, v_dout, v_gate, n, acc)) ||
            (st = cf_finish(ctx)))
            goto done;
        ms = conf_now_ms() - t0;
        if ((st = conf_block_read(&b))) goto done;
        if (!acc) /* the reference's gradients start where the device's do: stored, then added */
            for (size_t i = 0; i < n; i++) in64[DGATE][i] = in64[DUP][i] = 0.0;
        ref_swiglu_backward(in64[DGATE], in64[DUP], in64[DOUT], in64[GATE], up64, n, acc);
        ref_cmp cmp = conf_compare_stored(ctx, conf_block_out(&b, DGATE), in64[DGATE], n,
                                          REF_RULE_GRAD, NULL, NULL);
        if (c->glu)
            cmp = conf_worse(cmp, conf_compare_stored(ctx, conf_block_out(&b, DUP), in64[DUP], n,
                                                      REF_RULE_GRAD, NULL, NULL));
        else if (!conf_block_unchanged(&b, DUP)) { /* SiLU has no second gradient */
            cmp.pass = false;
            cmp.why = "silu_backward wrote a tensor it does not own";
        }
        snprintf(op, sizeof op, "%s_backward%s", name, acc ? "_accumulate" : "");
        conf_emit(sink, user, op, shape, conf_guarded(cmp, &b), ms);
    }
done:
    conf_block_free(&b);
    for (int t = 0; t < COUNT; t++) free(in64[t]);
    return st;
}

/* quick (simulators): an odd size of each; else a feed-forward layer's size too */
static clformer_status swiglu_check(cf_ctx *ctx, bool quick, conf_sink sink, void *user)
{
    static const swiglu_case small[] = {{1, false, 1}, {1, true, 2}, {1031, false, 3},
                                        {1031, true, 4}},
                             full[] = {{64 * 2048 + 5, false, 5}, {64 * 2048 + 5, true, 6}};
    CONF_RUN_CASES(run_case, small, full, quick, ctx, sink, user);
    return CLFORMER_OK;
}

CONF_OP(swiglu) = {"swiglu",
                   "silu_forward silu_backward swiglu_forward swiglu_backward",
                   "cf_silu_forward, cf_silu_backward, cf_swiglu_forward, cf_swiglu_backward",
                   "ref_swiglu_forward, ref_swiglu_backward (this file; SiLU is up = 1)",
                   "forward rule for out; gradient rule for dgate and dup",
                   swiglu_check,
                   swiglu_gradcheck,
                   NULL, true};
