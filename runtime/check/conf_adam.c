/* Conformance of the optimizer: `steps` Adam (L2) or AdamW steps over a flat
 * buffer with the weight-decay boundary anywhere and an optional device
 * grad_scale, every tensor guarded. Two results per case:
 *   <adam|adamw>_update: the total displacement p_T - p_0 against the
 *     reference run in double throughout, under the gradient rule (an update
 *     is ~lr, far below |p|: comparing p alone would hide errors in the step);
 *   <adam|adamw>_update_steps: each step against the reference run from the
 *     device's own state before it (p under the forward rule, m and v under
 *     the gradient rule), and the last p against the reference in double
 *     throughout (forward rule). The step p' - p is not compared on its own
 *     per step: where m nearly cancels it falls to p's fp32 rounding. */
#include "conf_block.h"
#include "conformance.h"
#include "ops.h"
#include "ref_adam.h"
#include "ref_random.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

void conf_adam_grads(float *g, double *g64, size_t n, ref_rng *r)
{
    static const float decades[4] = {1.0f, 1e-2f, 1e-4f, 1e-6f};
    for (size_t i = 0; i < n; i++) {
        g[i] = i % 13 == 5 ? 0.0f : (float)ref_rng_uniform(r, -1, 1) * decades[(i / 3) % 4];
        if (g64) g64[i] = g[i];
    }
}

clformer_status conf_adam_run(cf_ctx *ctx, const conf_adam_case *c, conf_sink sink, void *user)
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
        if (c->decades) conf_adam_grads(g, g64 + t * n, n, &r);
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
        cf_adam_params hp = {c->lr, 0.9f, 0.98f, 1e-9f, c->weight_decay, c->decoupled, 0, 0};
        hp.bias_correction1 = (float)(1.0 - pow(hp.beta1, t));
        hp.bias_correction2 = (float)(1.0 - pow(hp.beta2, t));
        const ref_adam_params rhp = {hp.lr,           hp.beta1,          hp.beta2,
                                     hp.eps,          hp.weight_decay,   c->decoupled,
                                     hp.bias_correction1, hp.bias_correction2};
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

clformer_status conf_adam(cf_ctx *ctx, bool quick, conf_sink sink, void *user)
{
    const size_t n = quick ? 1001 : (1u << 20) + 7;
    for (int decoupled = 0; decoupled < 2; decoupled++) {
        const conf_adam_case c = {n,    n - n / 4, decoupled, 1e-3f,
                                  0.01f, 0.5f,     3,         false,
                                  n * 31 + (uint64_t)decoupled};
        CF_TRY(conf_adam_run(ctx, &c, sink, user));
    }
    return CLFORMER_OK;
}

CONF_OP(adam) = {"adam", "adam_update ~clip_scale",
    "cf_adam_update, cf_clip_scale",
    "ref_adam_update, ref_clip_scale (reference/ref_adam.c)",
    "gradient rule for the displacement and m, v; forward rule for p",
    conf_adam, NULL,
    "test_adam (clip_scale, many more cases, determinism, argument errors); no backward: test_ref_adam checks the reference against PyTorch and by hand"};
