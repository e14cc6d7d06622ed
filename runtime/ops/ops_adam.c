/*
 * Host side of cl/adam.cl: the clipping coefficient (one work item, so the
 * scale never leaves the device) and one Adam/AdamW step over flat buffers.
 * Scalars that PyTorch derives in double precision are derived here the
 * same way and handed to the kernel as floats.
 */
#include "launch.h"
#include "ops.h"
#include "program.h"

#include <math.h>

clformer_status cf_clip_scale(cf_ctx *ctx, cf_view grad_scale, cf_view norm_sq, float max_norm)
{
    if (!grad_scale.buf || !norm_sq.buf)
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                       "cf_clip_scale: grad_scale and norm_sq need buffers");
    if (isnan(max_norm))
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                       "cf_clip_scale: max_norm is NaN; pass 0 to turn clipping off");
    cl_kernel k;
    CF_TRY(cf_kernel_get(ctx, CF_K_CLIP_SCALE, &k));
    size_t global = 1, local = 1;
    return CF_LAUNCH(ctx, "optimizer", cf_f32_bytes(2), k, 1, &global, &local,
                     CF_MEM(grad_scale.buf),
                     CF_U64(grad_scale.off), CF_MEM(norm_sq.buf), CF_U64(norm_sq.off),
                     CF_F32(max_norm));
}

clformer_status cf_adam_update(cf_ctx *ctx, cf_view params, cf_view grads, cf_view m, cf_view v,
                               size_t n, size_t decay_end, cf_view grad_scale,
                               const cf_adam_params *hp)
{
    if (!hp) return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT, "cf_adam_update: hp is NULL");
    if (n == 0) return CLFORMER_OK;
    if (!params.buf || !grads.buf || !m.buf || !v.buf)
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                       "cf_adam_update: params, grads, m and v need buffers");
    if (!(hp->bias_correction1 > 0.0f && hp->bias_correction2 > 0.0f))
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                       "cf_adam_update: bias corrections %g, %g must be > 0 (1 - beta^t with "
                       "step t >= 1)",
                       (double)hp->bias_correction1, (double)hp->bias_correction2);
    const double lr = hp->lr, wd = hp->weight_decay;
    const bool has_scale = grad_scale.buf != NULL;
    const cf_view scale = has_scale ? grad_scale : grads; /* not read without a scale */
    cl_kernel k;
    CF_TRY(cf_kernel_get(ctx, CF_K_ADAM_UPDATE, &k));
    const size_t run = cf_item_run(&ctx->device_profile); /* elements an item */
    size_t local = ctx->elementwise_wg, global = cf_round_up((n + run - 1) / run, local);
    /* reads params, grads, m, v (and the scale); writes params, m, v */
    return CF_LAUNCH(ctx, "optimizer", cf_f32_bytes(7 * n + has_scale), k, 1, &global, &local,
                     CF_MEM(params.buf),
                     CF_U64(params.off), CF_MEM(grads.buf), CF_U64(grads.off), CF_MEM(m.buf),
                     CF_U64(m.off), CF_MEM(v.buf), CF_U64(v.off), CF_U64(n),
                     CF_U64(wd != 0.0 ? decay_end : 0), CF_MEM(scale.buf), CF_U64(scale.off),
                     CF_I32(has_scale), CF_F32(hp->beta1), CF_F32(1.0 - (double)hp->beta1),
                     CF_F32(hp->beta2), CF_F32(1.0 - (double)hp->beta2), CF_F32(hp->eps),
                     CF_F32(wd), CF_I32(hp->decoupled), CF_F32(1.0 - lr * wd),
                     CF_F32(lr / hp->bias_correction1), CF_F32(sqrt((double)hp->bias_correction2)));
}
