/* Conformance of the optimizer: three Adam (L2) or AdamW steps over a flat
 * buffer with the weight-decay boundary inside it and a device grad_scale,
 * against the reference run in double. The result compared is the total
 * displacement p_3 - p_0 under the gradient rule: an update is ~lr, far
 * below |p|, so comparing p itself would hide errors in the step. */
#include "buffer.h"
#include "conformance.h"
#include "ops.h"
#include "ref_adam.h"
#include "ref_random.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#define STEPS 3

static clformer_status one(cf_ctx *ctx, size_t n, bool decoupled, conf_sink sink, void *user)
{
    const size_t decay_end = n - n / 4;
    const float scale = 0.5f;
    float *p = malloc(n * 4), *g = malloc(n * STEPS * 4), *disp = malloc(n * 4);
    double *p64 = malloc(n * 8), *g64 = malloc(n * STEPS * 8), *m64 = calloc(n, 8),
           *v64 = calloc(n, 8), *disp64 = malloc(n * 8);
    cl_mem dp = NULL, dg = NULL, dm = NULL, dv = NULL, ds = NULL;
    clformer_status st = CLFORMER_OK;
    double ms = 0.0;
    if (!p || !g || !disp || !p64 || !g64 || !m64 || !v64 || !disp64) {
        st = cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory");
        goto done;
    }
    ref_rng r = ref_rng_new(n * 31 + decoupled);
    ref_fill_uniform(&r, p, p64, n, -1, 1);
    ref_fill_uniform(&r, g, g64, n * STEPS, -1, 1);
    if ((st = cf_buffer_alloc(ctx, n, "params", &dp)) ||
        (st = cf_buffer_alloc(ctx, n * STEPS, "grads", &dg)) ||
        (st = cf_buffer_alloc(ctx, n, "adam m", &dm)) ||
        (st = cf_buffer_alloc(ctx, n, "adam v", &dv)) ||
        (st = cf_buffer_alloc(ctx, 1, "grad scale", &ds)) || (st = cf_upload(ctx, dp, 0, p, n)) ||
        (st = cf_upload(ctx, dg, 0, g, n * STEPS)) || (st = cf_upload(ctx, ds, 0, &scale, 1)))
        goto done;
    for (int t = 1; t <= STEPS; t++) {
        cf_adam_params hp = {1e-3f, 0.9f, 0.98f, 1e-9f, 0.01f, decoupled, 0, 0};
        hp.bias_correction1 = (float)(1.0 - pow(hp.beta1, t));
        hp.bias_correction2 = (float)(1.0 - pow(hp.beta2, t));
        const ref_adam_params rhp = {hp.lr,           hp.beta1,     hp.beta2,
                                     hp.eps,          hp.weight_decay, decoupled,
                                     hp.bias_correction1, hp.bias_correction2};
        const double t0 = conf_now_ms();
        st = cf_adam_update(ctx, cf_view_at(dp, 0), cf_view_at(dg, (t - 1) * n),
                            cf_view_at(dm, 0), cf_view_at(dv, 0), n, decay_end,
                            cf_view_at(ds, 0), &hp);
        if (st == CLFORMER_OK) st = cf_finish(ctx);
        ms += conf_now_ms() - t0;
        if (st != CLFORMER_OK) goto done;
        ref_adam_update(p64, g64 + (t - 1) * n, m64, v64, n, decay_end, scale, &rhp);
    }
    if ((st = cf_download(ctx, dp, 0, disp, n))) goto done;
    for (size_t i = 0; i < n; i++) { /* p still holds p_0 */
        disp64[i] = p64[i] - p[i];
        disp[i] = (float)((double)disp[i] - p[i]);
    }
    char shape[96];
    snprintf(shape, sizeof shape, "n=%zu steps=%d", n, STEPS);
    conf_emit(sink, user, decoupled ? "adamw_update" : "adam_update", shape,
              ref_compare_grad(disp, disp64, n), ms / STEPS);
done:
    cf_buffer_free(ctx, dp);
    cf_buffer_free(ctx, dg);
    cf_buffer_free(ctx, dm);
    cf_buffer_free(ctx, dv);
    cf_buffer_free(ctx, ds);
    free(p), free(g), free(disp), free(p64), free(g64), free(m64), free(v64), free(disp64);
    return st;
}

clformer_status conf_adam(cf_ctx *ctx, bool quick, conf_sink sink, void *user)
{
    const size_t n = quick ? 1001 : (1u << 20) + 7;
    CF_TRY(one(ctx, n, false, sink, user));
    return one(ctx, n, true, sink, user);
}
