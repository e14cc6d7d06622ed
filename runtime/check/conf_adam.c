/* The optimizer, described once: its double-precision reference (PyTorch's
 * documented Adam/AdamW and clip_grad_norm_), the checks of that reference
 * (a first step by hand, the clipping coefficient by hand, three steps
 * against PyTorch), its conformance cases and its descriptor. The kernels
 * are cl/adam.cl, the launchers runtime/ops/ops_adam.c.
 *
 * `steps` Adam (L2) or AdamW steps over a flat buffer with the weight-decay
 * boundary anywhere and an optional device grad_scale, every tensor guarded.
 * Two results per case:
 *   <adam|adamw>_update: the total displacement p_T - p_0 against the
 *     reference run in double throughout, under the gradient rule (an update
 *     is ~lr, far below |p|: comparing p alone would hide errors in the step);
 *   <adam|adamw>_update_steps: each step against the reference run from the
 *     device's own state before it (p under the forward rule, m and v under
 *     the gradient rule), and the last p against the reference in double
 *     throughout (forward rule). The step p' - p is not compared on its own
 *     per step: where m nearly cancels it falls to p's fp32 rounding.
 * Then the decay boundary bit for bit (adam_decay_boundary), the clipping
 * coefficient (clip_scale), the training step's chain norm -> clip -> update
 * (adam_clip_chain), bit-identical repeats (adam_repeat) and argument errors
 * (adam_arguments). */
#include "conf_block.h"
#include "conformance.h"
#include "ops.h"
#include "reduce.h"
#include "ref_random.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* --- the reference, in double --------------------------------------------------- */

/* cf_adam_params in double. */
typedef struct {
    double lr;
    double beta1, beta2, eps;
    double weight_decay;
    bool decoupled;          /* true: AdamW; false: Adam with L2 */
    double bias_correction1; /* 1 - beta1^t */
    double bias_correction2; /* 1 - beta2^t */
} ref_adam_params;

/* Bias corrections of step t (>= 1), as PyTorch computes them. */
static void ref_adam_bias_corrections(ref_adam_params *hp, int t)
{
    hp->bias_correction1 = 1.0 - pow(hp->beta1, t);
    hp->bias_correction2 = 1.0 - pow(hp->beta2, t);
}

/* min(1, max_norm / (sqrt(norm_sq) + 1e-6)); 1 when max_norm <= 0. */
static double ref_clip_scale(double norm_sq, double max_norm)
{
    if (max_norm <= 0.0) return 1.0;
    const double coef = max_norm / (sqrt(norm_sq) + 1e-6);
    return coef > 1.0 ? 1.0 : coef; /* NaN stays NaN, like torch.clamp */
}

/* One step over n elements (PyTorch's Adam/AdamW); weight decay only for
 * i < decay_end. */
static void ref_adam_update(double *params, const double *grads, double *m, double *v, size_t n,
                            size_t decay_end, double grad_scale, const ref_adam_params *hp)
{
    const double wd = hp->weight_decay;
    for (size_t i = 0; i < n; i++) {
        const bool decay = i < decay_end && wd != 0.0;
        double p = params[i], g = grads[i] * grad_scale;
        if (decay && !hp->decoupled) g += wd * p;
        m[i] = hp->beta1 * m[i] + (1.0 - hp->beta1) * g;
        v[i] = hp->beta2 * v[i] + (1.0 - hp->beta2) * g * g;
        if (decay && hp->decoupled) p *= 1.0 - hp->lr * wd;
        const double m_hat = m[i] / hp->bias_correction1, v_hat = v[i] / hp->bias_correction2;
        params[i] = p - hp->lr * m_hat / (sqrt(v_hat) + hp->eps);
    }
}

/* --- the conformance cases ----------------------------------------------------- */

typedef struct {
    size_t n, decay_end; /* weight decay on [0, decay_end) */
    bool decoupled;      /* AdamW, else Adam with L2 */
    float lr, weight_decay;
    float grad_scale;    /* read from the device; 0: none (NULL) */
    int steps;           /* >= 1 */
    bool decades;        /* gradients over eight decades with zeros, else uniform in +-1 */
    uint64_t seed;
} adam_case;

/* The paper's betas and eps; bias corrections of step t as the model sets them. */
static cf_adam_params hparams(float lr, float wd, bool decoupled, int t)
{
    cf_adam_params hp = {lr, 0.9f, 0.98f, 1e-9f, wd, decoupled, 0, 0};
    hp.bias_correction1 = (float)(1.0 - pow(hp.beta1, t));
    hp.bias_correction2 = (float)(1.0 - pow(hp.beta2, t));
    return hp;
}

/* The same numbers for the reference. */
static ref_adam_params to_ref(const cf_adam_params *hp)
{
    return (ref_adam_params){hp->lr,           hp->beta1,         hp->beta2,
                             hp->eps,          hp->weight_decay,  hp->decoupled,
                             hp->bias_correction1, hp->bias_correction2};
}

/* Gradients over eight decades (Adam's step barely depends on the scale),
 * with exact zeros (untouched rows of an embedding); g64 (may be NULL) gets
 * the same values. */
static void adam_grads(float *g, double *g64, size_t n, ref_rng *r)
{
    static const float decades[4] = {1.0f, 1e-2f, 1e-4f, 1e-6f};
    for (size_t i = 0; i < n; i++) {
        g[i] = i % 13 == 5 ? 0.0f : (float)ref_rng_uniform(r, -1, 1) * decades[(i / 3) % 4];
        if (g64) g64[i] = g[i];
    }
}

static clformer_status run_case(cf_ctx *ctx, const adam_case *c, conf_sink sink, void *user)
{
    const size_t n = c->n, steps = (size_t)c->steps;
    conf_block b = {0};
    enum { P, G, M, VV, S, COUNT };
    const size_t len[COUNT] = {n, n * steps, n, n, 1};
    for (int t = 0; t < COUNT; t++) conf_block_add(&b, len[t]);
    /* state64: the reference in double throughout (p, m, v); step64: one step
     * from the device's state; p0: the initial parameters */
    double *g64 = malloc(n * steps * 8), *state64 = calloc(3 * n, 8), *step64 = malloc(3 * n * 8),
           *p0 = malloc(n * 8), *disp64 = malloc(n * 8);
    float *disp = malloc(n * 4);
    clformer_status st = conf_block_create(ctx, &b);
    if (st) goto done;
    if (!g64 || !state64 || !step64 || !p0 || !disp64 || !disp) {
        st = cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory");
        goto done;
    }
    ref_rng r = ref_rng_new(c->seed);
    ref_fill_uniform(&r, conf_block_init(&b, P), p0, n, -1, 1);
    for (size_t t = 0; t < steps; t++) {
        float *g = conf_block_init(&b, G) + t * n;
        if (c->decades) adam_grads(g, g64 + t * n, n, &r);
        else ref_fill_uniform(&r, g, g64 + t * n, n, -1, 1);
    }
    const bool scaled = c->grad_scale != 0.0f;
    conf_block_init_fill(&b, S, c->grad_scale);
    const double scale = scaled ? c->grad_scale : 1.0;
    double *p64 = state64, *m64 = state64 + n, *v64 = state64 + 2 * n;
    for (size_t i = 0; i < n; i++) p64[i] = p0[i];
    if ((st = conf_block_upload(&b))) goto done;

    ref_cmp steps_cmp = {0};
    double ms = 0.0;
    for (int t = 1; t <= c->steps; t++) {
        const cf_adam_params hp = hparams(c->lr, c->weight_decay, c->decoupled, t);
        const ref_adam_params rhp = to_ref(&hp);
        /* the device's state before this step: the upload, then the last read */
        const float *dev[3] = {t == 1 ? conf_block_init(&b, P) : conf_block_out(&b, P),
                               t == 1 ? conf_block_init(&b, M) : conf_block_out(&b, M),
                               t == 1 ? conf_block_init(&b, VV) : conf_block_out(&b, VV)};
        for (int k = 0; k < 3; k++)
            for (size_t i = 0; i < n; i++) step64[k * n + i] = dev[k][i];
        const double t0 = conf_now_ms();
        const cf_view g_view = cf_view_add(conf_block_view(&b, G), (size_t)(t - 1) * n);
        st = cf_adam_update(ctx, conf_block_view(&b, P), g_view, conf_block_view(&b, M),
                            conf_block_view(&b, VV), n, c->decay_end,
                            scaled ? conf_block_view(&b, S) : cf_view_at(NULL, 0), &hp);
        if (st || (st = cf_finish(ctx))) goto done;
        ms += conf_now_ms() - t0;
        if ((st = conf_block_read(&b))) goto done;
        const double *g_t = g64 + (size_t)(t - 1) * n;
        ref_adam_update(step64, g_t, step64 + n, step64 + 2 * n, n, c->decay_end, scale, &rhp);
        ref_adam_update(p64, g_t, m64, v64, n, c->decay_end, scale, &rhp);
        const ref_cmp step_cmp =
            conf_worse(ref_compare_forward(conf_block_out(&b, P), step64, n),
                       conf_worse(ref_compare_grad(conf_block_out(&b, M), step64 + n, n),
                                  ref_compare_grad(conf_block_out(&b, VV), step64 + 2 * n, n)));
        steps_cmp = t == 1 ? step_cmp : conf_worse(steps_cmp, step_cmp);
    }
    const float *p = conf_block_out(&b, P);
    steps_cmp = conf_worse(steps_cmp, ref_compare_forward(p, p64, n));
    for (size_t i = 0; i < n; i++) { /* p0 holds exactly the uploaded floats */
        disp64[i] = p64[i] - p0[i];
        disp[i] = (float)((double)p[i] - p0[i]);
    }
    char shape[96], op[64];
    snprintf(shape, sizeof shape, "n=%zu steps=%d decay_end=%zu%s", n, c->steps, c->decay_end,
             scaled ? " grad_scale" : "");
    const char *name = c->decoupled ? "adamw_update" : "adam_update";
    conf_emit(sink, user, name, shape, conf_guarded(ref_compare_grad(disp, disp64, n), &b),
              ms / c->steps);
    snprintf(op, sizeof op, "%s_steps", name);
    conf_emit(sink, user, op, shape, conf_guarded(steps_cmp, &b), ms / c->steps);
done:
    conf_block_free(&b);
    free(g64), free(state64), free(step64), free(p0), free(disp64), free(disp);
    return st;
}

/* Zero gradients and moments make Adam's own step exactly 0, so what is left
 * is the weight decay alone: AdamW multiplies exactly [0, decay_end) by
 * (float)(1 - lr*wd) and leaves the rest bit for bit; Adam-L2 moves only
 * [0, decay_end) (and m there only); weight_decay 0 moves nothing. */
static clformer_status run_decay_boundary(cf_ctx *ctx, size_t n, conf_sink sink, void *user)
{
    const size_t decay_end = n / 2 + 1;
    conf_block b = {0};
    enum { P, G, M, VV, COUNT };
    for (int t = 0; t < COUNT; t++) conf_block_add(&b, n);
    clformer_status st = conf_block_create(ctx, &b);
    if (st) goto done;
    ref_rng r = ref_rng_new(9);
    ref_fill_uniform(&r, conf_block_init(&b, P), NULL, n, -2, 2);
    const float *p = conf_block_init(&b, P);
    const char *bad = NULL;
    for (int mode = 0; mode < 3 && !bad; mode++) { /* AdamW, Adam-L2, no decay */
        const float wd = mode == 2 ? 0.0f : 0.5f, lr = 0.1f;
        const cf_adam_params hp = hparams(lr, wd, mode != 1, 1);
        if ((st = conf_block_upload(&b)) ||
            (st = cf_adam_update(ctx, conf_block_view(&b, P), conf_block_view(&b, G),
                                 conf_block_view(&b, M), conf_block_view(&b, VV), n, decay_end,
                                 cf_view_at(NULL, 0), &hp)) ||
            (st = cf_finish(ctx)) || (st = conf_block_read(&b)))
            goto done;
        const float factor = (float)(1.0 - (double)lr * wd);
        const float *out = conf_block_out(&b, P), *m = conf_block_out(&b, M);
        for (size_t i = 0; i < n && !bad; i++) {
            const bool decayed = i < decay_end && mode != 2;
            if (mode == 0 && out[i] != (decayed ? p[i] * factor : p[i]))
                bad = "AdamW did not scale exactly [0, decay_end) by (float)(1 - lr*wd)";
            else if (mode != 0 && (out[i] != p[i]) != (decayed && p[i] != 0.0f))
                bad = mode == 1 ? "Adam-L2 moved an element outside [0, decay_end) or kept one "
                                  "inside"
                                : "weight decay 0 moved an element";
            else if (i >= decay_end && m[i] != 0.0f)
                bad = "m moved past decay_end with zero gradients";
        }
    }
    ref_cmp c = {0};
    c.pass = !bad, c.why = bad, c.rule = "bit-exact";
    char shape[96];
    snprintf(shape, sizeof shape, "n=%zu decay_end=%zu AdamW, Adam-L2, wd=0", n, decay_end);
    conf_emit(sink, user, "adam_decay_boundary", shape, conf_guarded(c, &b), 0.0);
done:
    conf_block_free(&b);
    return st;
}

/* The coefficient for norms above and below max_norm, max_norm 0 and
 * negative (off), a zero norm, an infinite norm (0) and a NaN norm (NaN);
 * a NaN max_norm refused. */
static clformer_status run_clip_scale(cf_ctx *ctx, conf_sink sink, void *user)
{
    static const float cases[][2] = {{4.0f, 1.0f},  {0.25f, 1.0f},    {1e6f, 5.0f},
                                     {1.0f, 1.0f},  {100.0f, 0.0f},   {100.0f, -1.0f},
                                     {0.0f, 1.0f},  {INFINITY, 1.0f}, {NAN, 1.0f},
                                     {3e-12f, 1e-6f}};
    enum { COUNT = sizeof cases / sizeof *cases };
    double want[COUNT];
    conf_block b = {0};
    const size_t NORM = conf_block_add(&b, COUNT), S = conf_block_add(&b, COUNT);
    clformer_status st = conf_block_create(ctx, &b);
    if (st) goto done;
    for (size_t i = 0; i < COUNT; i++) {
        conf_block_init(&b, NORM)[i] = cases[i][0];
        want[i] = ref_clip_scale(cases[i][0], cases[i][1]);
    }
    if ((st = conf_block_upload(&b))) goto done;
    for (size_t i = 0; i < COUNT; i++)
        if ((st = cf_clip_scale(ctx, cf_view_add(conf_block_view(&b, S), i),
                                cf_view_add(conf_block_view(&b, NORM), i), cases[i][1])))
            goto done;
    const bool refused = cf_clip_scale(ctx, conf_block_view(&b, S), conf_block_view(&b, NORM),
                                       NAN) == CLFORMER_ERR_INVALID_ARGUMENT;
    if ((st = cf_finish(ctx)) || (st = conf_block_read(&b))) goto done;
    const float *out = conf_block_out(&b, S);
    ref_cmp c = ref_compare_forward(out, want, COUNT);
    if (c.pass && !(out[0] < 0.5f && out[1] == 1.0f && out[4] == 1.0f && out[5] == 1.0f))
        c.pass = false, c.why = "clipped below max_norm or with clipping off";
    if (c.pass && !(out[7] == 0.0f && isnan(out[8])))
        c.pass = false, c.why = "an infinite norm not 0 or a NaN norm not NaN";
    if (c.pass && !refused) c.pass = false, c.why = "a NaN max_norm not refused";
    conf_emit(sink, user, "clip_scale", "10 norms, NaN max_norm", conf_guarded(c, &b), 0.0);
done:
    conf_block_free(&b);
    return st;
}

/* The training step's tail as the model runs it: norm_sq = sum g^2
 * (cf_reduce_sum), scale = cf_clip_scale, then the update reading it; the
 * case clips. The scale and p under the forward rule, the displacement
 * under the gradient rule. */
static clformer_status run_clip_chain(cf_ctx *ctx, size_t n, conf_sink sink, void *user)
{
    const size_t decay_end = n - n / 3;
    conf_block b = {0};
    enum { P, G, M, VV, NORM, S, COUNT };
    const size_t len[COUNT] = {n, n, n, n, 1, 1};
    for (int t = 0; t < COUNT; t++) conf_block_add(&b, len[t]);
    double *p64 = malloc(n * 8), *g64 = malloc(n * 8), *mv64 = calloc(2 * n, 8),
           *d64 = malloc(n * 8);
    float *d = malloc(n * 4);
    clformer_status st = conf_block_create(ctx, &b);
    if (st) goto done;
    if (!p64 || !g64 || !mv64 || !d64 || !d) {
        st = cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory");
        goto done;
    }
    ref_rng r = ref_rng_new(21);
    ref_fill_uniform(&r, conf_block_init(&b, P), p64, n, -1, 1);
    ref_fill_uniform(&r, conf_block_init(&b, G), g64, n, -1, 1);
    const cf_adam_params hp = hparams(3e-3f, 0.01f, true, 1);
    const ref_adam_params rhp = to_ref(&hp);
    const cf_view vg = conf_block_view(&b, G), vnorm = conf_block_view(&b, NORM),
                  vs = conf_block_view(&b, S);
    if ((st = conf_block_upload(&b)) ||
        (st = cf_reduce_sum(ctx, vnorm.buf, vnorm.off, vg.buf, vg.off, n, true, false)) ||
        (st = cf_clip_scale(ctx, vs, vnorm, 1.0f)) ||
        (st = cf_adam_update(ctx, conf_block_view(&b, P), vg, conf_block_view(&b, M),
                             conf_block_view(&b, VV), n, decay_end, vs, &hp)) ||
        (st = cf_finish(ctx)) || (st = conf_block_read(&b)))
        goto done;
    double norm_sq = 0;
    for (size_t i = 0; i < n; i++) norm_sq += g64[i] * g64[i];
    const double scale = ref_clip_scale(norm_sq, 1.0);
    const float *p = conf_block_out(&b, P), *p0 = conf_block_init(&b, P);
    for (size_t i = 0; i < n; i++) d64[i] = -p64[i];
    ref_adam_update(p64, g64, mv64, mv64 + n, n, decay_end, scale, &rhp);
    for (size_t i = 0; i < n; i++) { /* p0 holds exactly the uploaded floats */
        d64[i] += p64[i];
        d[i] = (float)((double)p[i] - p0[i]);
    }
    ref_cmp c = conf_worse(ref_compare_forward(conf_block_out(&b, S), &scale, 1),
                           conf_worse(ref_compare_forward(p, p64, n), ref_compare_grad(d, d64, n)));
    if (c.pass && !(scale < 1.0)) c.pass = false, c.why = "the case does not clip";
    char shape[96];
    snprintf(shape, sizeof shape, "n=%zu max_norm=1 AdamW", n);
    conf_emit(sink, user, "adam_clip_chain", shape, conf_guarded(c, &b), 0.0);
done:
    conf_block_free(&b);
    free(p64), free(g64), free(mv64), free(d64), free(d);
    return st;
}

/* The step of a repeat, on its views. */
typedef struct {
    cf_view p, g, m, v;
    size_t n;
    const cf_adam_params *hp;
} repeat_views;

static clformer_status repeat_launch(cf_ctx *ctx, const void *args)
{
    const repeat_views *v = args;
    return cf_adam_update(ctx, v->p, v->g, v->m, v->v, v->n, v->n / 2, cf_view_at(NULL, 0), v->hp);
}

/* The same state and gradients twice give the same bits. */
static clformer_status run_repeat(cf_ctx *ctx, size_t n, conf_sink sink, void *user)
{
    conf_block b = {0};
    enum { G, P, M, VV, COUNT };
    for (int t = 0; t < COUNT; t++) conf_block_add(&b, n);
    clformer_status st = conf_block_create(ctx, &b);
    if (st) goto done;
    ref_rng r = ref_rng_new(33);
    ref_fill_uniform(&r, conf_block_init(&b, P), NULL, n, -1, 1);
    adam_grads(conf_block_init(&b, G), NULL, n, &r);
    ref_fill_uniform(&r, conf_block_init(&b, M), NULL, n, 0, 1e-3);
    memcpy(conf_block_init(&b, VV), conf_block_init(&b, M), n * sizeof(float));
    const cf_adam_params hp = hparams(1e-3f, 0.01f, false, 7);
    const repeat_views v = {conf_block_view(&b, P), conf_block_view(&b, G),
                            conf_block_view(&b, M), conf_block_view(&b, VV), n, &hp};
    ref_cmp c;
    if ((st = conf_block_repeat(&b, repeat_launch, &v, P, COUNT, &c))) goto done;
    char shape[96];
    snprintf(shape, sizeof shape, "n=%zu Adam-L2 step 7 twice", n);
    conf_emit(sink, user, "adam_repeat", shape, conf_guarded(c, &b), 0.0);
done:
    conf_block_free(&b);
    return st;
}

/* Bad arguments are errors naming the fix; n = 0 is a no-op. */
static clformer_status run_arguments(cf_ctx *ctx, conf_sink sink, void *user)
{
    conf_block b = {0};
    const size_t A = conf_block_add(&b, 16);
    clformer_status st = conf_block_create(ctx, &b);
    if (st) goto done;
    ref_rng r = ref_rng_new(34);
    ref_fill_uniform(&r, conf_block_init(&b, A), NULL, 16, 0, 1);
    if ((st = conf_block_upload(&b))) goto done;
    const cf_view a = conf_block_view(&b, A), none = cf_view_at(NULL, 0);
    cf_adam_params step0 = hparams(1e-3f, 0.01f, false, 1);
    step0.bias_correction2 = 0.0f;
    const char *bad = NULL;
    if (cf_adam_update(ctx, a, a, a, a, 16, 16, none, NULL) != CLFORMER_ERR_INVALID_ARGUMENT)
        bad = "NULL hyperparameters not refused";
    else if (cf_adam_update(ctx, a, a, a, a, 16, 16, none, &step0) !=
                 CLFORMER_ERR_INVALID_ARGUMENT ||
             !strstr(clformer_last_error(), "step t >= 1"))
        bad = "a zero bias correction not refused naming the step";
    const cf_adam_params hp = hparams(1e-3f, 0.01f, false, 1);
    st = CLFORMER_OK;
    if (!bad && ((st = cf_adam_update(ctx, a, a, a, a, 0, 0, none, &hp)) ||
                 (st = cf_finish(ctx)) || (st = conf_block_read(&b))))
        goto done;
    conf_emit(sink, user, "adam_arguments", "hp NULL, bias correction 0, n=0",
              conf_block_refusals(&b, bad), 0.0);
done:
    conf_block_free(&b);
    return st;
}

/* quick (simulators): the small sizes, two steps; else every size, four
 * steps, and a million elements. The decay boundary nowhere, inside (odd),
 * everywhere and past the end; Adam and AdamW; with and without a device
 * grad_scale; gradients over eight decades with exact zeros. */
static clformer_status adam_check(cf_ctx *ctx, bool quick, conf_sink sink, void *user)
{
    static const size_t sizes[] = {1, 7, 61, 257, 1001, 10007, 100003};
    const size_t count = quick ? 5 : 7;
    for (size_t i = 0; i < count; i++) {
        const size_t n = sizes[i];
        const size_t ends[4] = {0, n / 2 + 1 < n ? n / 2 + 1 : n, n, n + 5};
        for (int variant = 0; variant < 8; variant++) {
            const adam_case c = {n,     ends[variant % 4], variant & 1, 1e-2f, 0.1f,
                                 variant & 4 ? 0.37f : 0.0f, quick ? 2 : 4, true,
                                 10 * i + (uint64_t)variant};
            CF_TRY(run_case(ctx, &c, sink, user));
        }
    }
    if (!quick) /* a million elements, uniform gradients */
        for (int decoupled = 0; decoupled < 2; decoupled++) {
            const size_t n = (1u << 20) + 7;
            const adam_case c = {n,     n - n / 4, decoupled, 1e-3f, 0.01f, 0.5f, 3, false,
                                 n * 31 + (uint64_t)decoupled};
            CF_TRY(run_case(ctx, &c, sink, user));
        }
    CF_TRY(run_decay_boundary(ctx, quick ? 61 : 10007, sink, user));
    CF_TRY(run_clip_scale(ctx, sink, user));
    CF_TRY(run_clip_chain(ctx, quick ? 61 : 10007, sink, user));
    CF_TRY(run_repeat(ctx, quick ? 61 : 100003, sink, user));
    return run_arguments(ctx, sink, user);
}

/* --- checks of the reference ---------------------------------------------------- */

/* Step 1 by hand, lr 0.1, betas (0.9, 0.98): m = 0.1 g, v = 0.02 g^2, and the
 * bias corrections 0.1 and 0.02 undo exactly that, so the step is
 * lr * g / (|g| + eps).
 *   element 0: p 1, g 0.5           -> 1 - 0.1 * 0.5 / 0.500000001
 *   element 1: p 2, g 0, decayed     AdamW: 2 * (1 - 0.1 * 0.5) = 1.9
 *                                    Adam:  g = 0.5 * 2 = 1 -> 2 - 0.1 / (1 + 1e-9)
 *   element 2: p 2, g 0, not decayed (i >= decay_end) -> 2 exactly
 * Returns the mismatches. */
static int first_step_by_hand(void)
{
    int bad = 0;
    for (int decoupled = 0; decoupled < 2; decoupled++) {
        /* decay_end = 2 covers elements 0 and 1 */
        double p[3] = {1, 2, 2}, g[3] = {0.5, 0, 0}, m[3] = {0}, v[3] = {0};
        ref_adam_params hp = {0.1, 0.9, 0.98, 1e-9, 0.5, decoupled, 0, 0};
        ref_adam_bias_corrections(&hp, 1);
        ref_adam_update(p, g, m, v, 3, 2, 1.0, &hp);
        const double p0 = decoupled ? 1 * 0.95 - 0.1 * 0.5 / 0.500000001
                                    : 1 - 0.1 * 1.0 / (1.0 + 1e-9); /* g = 0.5 + 0.5*1 */
        bad += !(fabs(p[0] - p0) <= 1e-15);
        bad += !(fabs(p[1] - (decoupled ? 1.9 : 2 - 0.1 / (1 + 1e-9))) <= 1e-15);
        bad += !(p[2] == 2.0 && m[2] == 0.0 && v[2] == 0.0);
        bad += !(fabs(m[0] - (decoupled ? 0.05 : 0.1)) <= 1e-16);
        bad += !(fabs(v[0] - (decoupled ? 0.005 : 0.02)) <= 1e-16);
    }
    bad += !(fabs(ref_clip_scale(4.0, 1.0) - 1.0 / (2.0 + 1e-6)) <= 1e-16);
    bad += ref_clip_scale(0.25, 1.0) != 1.0;  /* norm below max_norm */
    bad += ref_clip_scale(100.0, 0.0) != 1.0; /* clipping off */
    bad += ref_clip_scale(100.0, -1.0) != 1.0;
    bad += ref_clip_scale(0.0, 1.0) != 1.0;
    bad += !isnan(ref_clip_scale(NAN, 1.0)); /* torch.clamp keeps NaN */
    return bad;
}

/* Generated once with PyTorch 1.13 in float64:
 *   w = p0[:4] (weight_decay 0.1), b = p0[4:] (weight_decay 0), one optimizer
 *   torch.optim.Adam / AdamW(lr=0.01, betas=(0.9, 0.98), eps=1e-9); each step
 *   sets the gradients, calls clip_grad_norm_([w, b], 1.0), then opt.step().
 * The gradients' norms are above, below, above max_norm. Returns the
 * mismatches (beyond 1e-14). */
static int matches_pytorch_three_steps(void)
{
    static const double p0[6] = {0.5, -1.25, 2.0, -0.75, 0.3, -0.2};
    static const double grads[3][6] = {{0.8, -0.6, 1.5, 0.05, -0.9, 0.4},
                                       {0.01, 0.02, -0.03, 0.04, -0.05, 0.0},
                                       {-2.0, 1.0, 0.5, -0.25, 3.0, -1.5}};
    static const double torch[2][3][6] = {
        {{0.49000000002276256, -1.2400000000239815, 1.9900000000107529, -0.74000000019736478,
          0.30999999997716804, -0.20999999994862817},
         {0.48233253283116179, -1.231661718759506, 1.9820404908247629, -0.73027132990052612,
          0.31753708815210296, -0.21673299759416997},
         {0.48268176436617627, -1.2272094474594983, 1.9741270193391141, -0.72141392071396704,
          0.3150385953745386, -0.21351749496788147}},
        {{0.48950000002568594, -1.238750000034248, 1.9880000000136993, -0.75924999958902539,
          0.30999999997716804, -0.20999999994862817},
         {0.48208767317076151, -1.2313055136953233, 1.9795919869013368, -0.76830852611925959,
          0.31753708815210296, -0.21673299759416997},
         {0.48330471398037156, -1.2305300126282801, 1.9716273256508077, -0.76706940523160982,
          0.3150385953745386, -0.21351749496788147}}}; /* Adam, AdamW */
    int bad = 0;
    for (int decoupled = 0; decoupled < 2; decoupled++) {
        double p[6], m[6] = {0}, v[6] = {0};
        memcpy(p, p0, sizeof p);
        ref_adam_params hp = {0.01, 0.9, 0.98, 1e-9, 0.1, decoupled, 0, 0};
        for (int t = 1; t <= 3; t++) {
            double norm_sq = 0;
            for (size_t i = 0; i < 6; i++) norm_sq += grads[t - 1][i] * grads[t - 1][i];
            ref_adam_bias_corrections(&hp, t);
            ref_adam_update(p, grads[t - 1], m, v, 6, 4, ref_clip_scale(norm_sq, 1.0), &hp);
            for (size_t i = 0; i < 6; i++)
                bad += !(fabs(p[i] - torch[decoupled][t - 1][i]) <= 1e-14);
        }
    }
    return bad;
}

/* No backward to difference: the reference's own rules instead. */
static int adam_reference_rules(void)
{
    const int bad = first_step_by_hand() + matches_pytorch_three_steps();
    if (bad) fprintf(stderr, "adam reference: %d mismatches of its rules\n", bad);
    return bad;
}

CONF_OP(adam) = {"adam", "adam_update clip_scale",
    "cf_adam_update, cf_clip_scale",
    "ref_adam_update, ref_clip_scale (this file)",
    "gradient rule for the displacement and m, v; forward rule for p; exact for the decay "
    "boundary and repeats",
    adam_check, adam_reference_rules,
    "no backward: its gradcheck checks the reference by hand and against PyTorch", false};
