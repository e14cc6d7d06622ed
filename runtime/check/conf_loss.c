/* Conformance of the softmax cross-entropy: the per-row losses (forward,
 * timed without a gradient) and dlogits (backward, the fused call), with
 * label smoothing 0.1 and every fifth row ignored (<pad> = 0). */
#include "buffer.h"
#include "conformance.h"
#include "ops.h"
#include "ref_loss.h"
#include "ref_random.h"

#include <stdio.h>
#include <stdlib.h>

static clformer_status one(cf_ctx *ctx, size_t N, size_t V, float ls, conf_sink sink, void *user)
{
    const size_t NV = N * V;
    float *x = malloc(NV * 4), *dx = malloc(NV * 4), *loss = malloc(N * 4);
    int32_t *y = malloc(N * 4);
    double *x64 = malloc(NV * 8), *dx64 = malloc(NV * 8), *loss64 = malloc(N * 8);
    cl_mem dx_ = NULL, dy = NULL, dl = NULL, dd = NULL;
    clformer_status st = CLFORMER_OK;
    if (!x || !dx || !loss || !y || !x64 || !dx64 || !loss64) {
        st = cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory");
        goto done;
    }
    ref_rng r = ref_rng_new(N * 100003 + V);
    ref_fill_uniform(&r, x, x64, NV, -8, 8);
    for (size_t i = 0; i < N; i++) y[i] = i % 5 == 2 ? 0 : (int32_t)(ref_rng_next(&r) % V);
    const float grad_scale = 1.0f / (float)N;
    if ((st = cf_buffer_alloc(ctx, NV, "logits", &dx_)) ||
        (st = cf_buffer_alloc(ctx, N, "targets", &dy)) ||
        (st = cf_buffer_alloc(ctx, N, "losses", &dl)) ||
        (st = cf_buffer_alloc(ctx, NV, "dlogits", &dd)) || (st = cf_upload(ctx, dx_, 0, x, NV)) ||
        (st = cf_upload(ctx, dy, 0, y, N)))
        goto done;
    ref_cross_entropy(loss64, dx64, x64, y, N, V, ls, 0, grad_scale);
    char shape[96];
    snprintf(shape, sizeof shape, "N=%zu V=%zu ls=%.2g", N, V, (double)ls);

    double t0 = conf_now_ms();
    st = cf_cross_entropy(ctx, cf_view_at(dl, 0), cf_view_at(NULL, 0), cf_view_at(dx_, 0),
                          cf_view_at(dy, 0), N, V, ls, 0, grad_scale);
    if (st == CLFORMER_OK) st = cf_finish(ctx);
    double ms = conf_now_ms() - t0;
    if (st == CLFORMER_OK) st = cf_download(ctx, dl, 0, loss, N);
    if (st != CLFORMER_OK) goto done;
    conf_emit(sink, user, "cross_entropy_forward", shape, ref_compare_forward(loss, loss64, N), ms);

    t0 = conf_now_ms();
    st = cf_cross_entropy(ctx, cf_view_at(dl, 0), cf_view_at(dd, 0), cf_view_at(dx_, 0),
                          cf_view_at(dy, 0), N, V, ls, 0, grad_scale);
    if (st == CLFORMER_OK) st = cf_finish(ctx);
    ms = conf_now_ms() - t0;
    if (st == CLFORMER_OK) st = cf_download(ctx, dd, 0, dx, NV);
    if (st != CLFORMER_OK) goto done;
    conf_emit(sink, user, "cross_entropy_backward", shape, ref_compare_grad(dx, dx64, NV), ms);
done:
    cf_buffer_free(ctx, dx_);
    cf_buffer_free(ctx, dy);
    cf_buffer_free(ctx, dl);
    cf_buffer_free(ctx, dd);
    free(x), free(dx), free(loss), free(y), free(x64), free(dx64), free(loss64);
    return st;
}

clformer_status conf_loss(cf_ctx *ctx, bool quick, conf_sink sink, void *user)
{
    if (quick) return one(ctx, 7, 61, 0.1f, sink, user);
    CF_TRY(one(ctx, 257, 10007, 0.1f, sink, user));
    return one(ctx, 33, 50000, 0.0f, sink, user);
}
