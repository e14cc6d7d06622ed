/* Conformance of dropout: residual dropout forward, its backward and the
 * plain add, against the double reference (a mask that differs from the
 * host Philox by one element fails the element bound). */
#include "buffer.h"
#include "conformance.h"
#include "ops.h"
#include "ref_dropout.h"
#include "ref_random.h"

#include <stdio.h>
#include <stdlib.h>

typedef enum { RESIDUAL, BACKWARD, ADD } which;

static clformer_status one(cf_ctx *ctx, which w, size_t n, const cf_dropout *d, conf_sink sink,
                           void *user)
{
    float *a = malloc(n * 4), *b = malloc(n * 4), *y = malloc(n * 4);
    double *a64 = malloc(n * 8), *b64 = malloc(n * 8), *y64 = malloc(n * 8);
    cl_mem da = NULL, db = NULL, dy = NULL;
    clformer_status st = CLFORMER_OK;
    if (!a || !b || !y || !a64 || !b64 || !y64) {
        st = cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory");
        goto done;
    }
    ref_rng r = ref_rng_new(n + w);
    ref_fill_uniform(&r, a, a64, n, -1, 1);
    ref_fill_uniform(&r, b, b64, n, -1, 1);
    if ((st = cf_buffer_alloc(ctx, n, "dropout a", &da)) ||
        (st = cf_buffer_alloc(ctx, n, "dropout b", &db)) ||
        (st = cf_buffer_alloc(ctx, n, "dropout out", &dy)) || (st = cf_upload(ctx, da, 0, a, n)) ||
        (st = cf_upload(ctx, db, 0, b, n)))
        goto done;
    const cf_view va = cf_view_at(da, 0), vb = cf_view_at(db, 0), vy = cf_view_at(dy, 0);
    double t0 = conf_now_ms();
    st = w == RESIDUAL ? cf_residual_dropout_forward(ctx, vy, va, vb, n, d)
         : w == BACKWARD ? cf_dropout_backward(ctx, vy, vb, n, d)
                         : cf_add(ctx, vy, va, vb, n);
    if (st == CLFORMER_OK) st = cf_finish(ctx);
    double ms = conf_now_ms() - t0;
    if (st == CLFORMER_OK) st = cf_download(ctx, dy, 0, y, n);
    if (st != CLFORMER_OK) goto done;
    const ref_dropout rd = d ? (ref_dropout){d->p, d->seed, d->step, d->site} : (ref_dropout){0};
    char shape[96];
    snprintf(shape, sizeof shape, "n=%zu p=%g", n, d ? (double)d->p : 0.0);
    if (w == RESIDUAL) {
        ref_residual_dropout_forward(y64, a64, b64, n, &rd);
        conf_emit(sink, user, "dropout_forward", shape, ref_compare_forward(y, y64, n), ms);
    } else if (w == BACKWARD) {
        ref_dropout_backward(y64, b64, n, &rd);
        conf_emit(sink, user, "dropout_backward", shape, ref_compare_grad(y, y64, n), ms);
    } else {
        ref_add(y64, a64, b64, n);
        conf_emit(sink, user, "dropout_forward_add", shape, ref_compare_forward(y, y64, n), ms);
    }
done:
    cf_buffer_free(ctx, da), cf_buffer_free(ctx, db), cf_buffer_free(ctx, dy);
    free(a), free(b), free(y), free(a64), free(b64), free(y64);
    return st;
}

clformer_status conf_dropout(cf_ctx *ctx, bool quick, conf_sink sink, void *user)
{
    const size_t n = quick ? 1031 : 93 * 257 * 61;
    const cf_dropout d = {0.1f, 0x5eedULL, 2, 1};
    CF_TRY(one(ctx, RESIDUAL, n, &d, sink, user));
    CF_TRY(one(ctx, BACKWARD, n, &d, sink, user));
    return one(ctx, ADD, n, NULL, sink, user);
}
