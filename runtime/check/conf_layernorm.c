/* Conformance of LayerNorm: forward (out, mean, rstd) and backward (dinp,
 * dweight, dbias) against the reference at an odd shape and a model width. */
#include "buffer.h"
#include "conformance.h"
#include "ops.h"
#include "ref_layernorm.h"
#include "ref_random.h"

#include <stdio.h>
#include <stdlib.h>

static clformer_status one(cf_ctx *ctx, size_t N, size_t C, conf_sink sink, void *user)
{
    /* host: inp, dout (NC each), weight, bias (C each), then the results
     * y, dx (NC each), m, rs (N each), gw, gb (C each) */
    const size_t NC = N * C, n_all = 4 * NC + 2 * N + 4 * C;
    float *h = calloc(n_all, 4);
    double *d = calloc(n_all, 8);
    cl_mem buf = NULL;
    clformer_status st = CLFORMER_OK;
    if (!h || !d) {
        st = cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory");
        goto done;
    }
    float *inp = h, *dout = h + NC, *weight = h + 2 * NC, *bias = weight + C, *y = bias + C,
          *dx = y + NC, *m = dx + NC, *rs = m + N, *gw = rs + N, *gb = gw + C;
    double *inp64 = d, *dout64 = d + NC, *weight64 = d + 2 * NC, *bias64 = weight64 + C,
           *y64 = bias64 + C, *dx64 = y64 + NC, *m64 = dx64 + NC, *rs64 = m64 + N,
           *gw64 = rs64 + N, *gb64 = gw64 + C;
    ref_rng r = ref_rng_new(N * 7919 + C);
    ref_fill_uniform(&r, inp, inp64, NC, -2, 2);
    ref_fill_uniform(&r, dout, dout64, NC, -1, 1);
    ref_fill_uniform(&r, weight, weight64, C, 0.5, 1.5);
    ref_fill_uniform(&r, bias, bias64, C, -0.5, 0.5);

    /* One device buffer laid out like the host block. The whole block is
     * uploaded (outputs as zeros): Oclgrind 21.10 marked part of a partial
     * upload as uninitialised. */
    if ((st = cf_buffer_alloc(ctx, n_all, "layernorm check", &buf)) ||
        (st = cf_upload(ctx, buf, 0, h, n_all)))
        goto done;
    const cf_view v = {buf, 0};
    const cf_view vinp = v, vdout = cf_view_add(v, NC), vw = cf_view_add(v, 2 * NC),
                  vb = cf_view_add(vw, C), vy = cf_view_add(vb, C), vdx = cf_view_add(vy, NC),
                  vm = cf_view_add(vdx, NC), vrs = cf_view_add(vm, N), vgw = cf_view_add(vrs, N),
                  vgb = cf_view_add(vgw, C);
    char shape[96];
    snprintf(shape, sizeof shape, "N=%zu C=%zu", N, C);

    /* Each op runs once untimed first: PoCL compiles a kernel at its first launch. */
    if ((st = cf_layernorm_forward(ctx, vy, vm, vrs, vinp, vw, vb, N, C, 1e-5f))) goto done;
    double t0 = conf_now_ms();
    if ((st = cf_layernorm_forward(ctx, vy, vm, vrs, vinp, vw, vb, N, C, 1e-5f)) ||
        (st = cf_finish(ctx)))
        goto done;
    double ms = conf_now_ms() - t0;
    if ((st = cf_download(ctx, buf, vy.off, y, NC)) ||
        (st = cf_download(ctx, buf, vm.off, m, 2 * N))) /* mean, rstd */
        goto done;
    ref_layernorm_forward(y64, m64, rs64, inp64, weight64, bias64, N, C, 1e-5);
    conf_emit(sink, user, "layernorm_forward", shape,
              conf_worse(ref_compare_forward(y, y64, NC),
                         conf_worse(ref_compare_forward(m, m64, N),
                                    ref_compare_forward(rs, rs64, N))),
              ms);

    if ((st = cf_layernorm_backward(ctx, vdx, vgw, vgb, vdout, vinp, vw, vm, vrs, N, C, false)) ||
        (st = cf_fill(ctx, buf, vgw.off, 2 * C, 0.0f)) || /* dweight, dbias accumulate */
        (st = cf_finish(ctx)))
        goto done;
    t0 = conf_now_ms();
    if ((st = cf_layernorm_backward(ctx, vdx, vgw, vgb, vdout, vinp, vw, vm, vrs, N, C, false)) ||
        (st = cf_finish(ctx)))
        goto done;
    ms = conf_now_ms() - t0;
    if ((st = cf_download(ctx, buf, vdx.off, dx, NC)) ||
        (st = cf_download(ctx, buf, vgw.off, gw, 2 * C)))
        goto done;
    ref_layernorm_backward(dx64, gw64, gb64, dout64, inp64, weight64, m64, rs64, N, C, false);
    conf_emit(sink, user, "layernorm_backward", shape,
              conf_worse(ref_compare_grad(dx, dx64, NC),
                         conf_worse(ref_compare_grad(gw, gw64, C), ref_compare_grad(gb, gb64, C))),
              ms);
done:
    cf_buffer_free(ctx, buf);
    free(h), free(d);
    return st;
}

clformer_status conf_layernorm(cf_ctx *ctx, bool quick, conf_sink sink, void *user)
{
    if (quick) return one(ctx, 7, 37, sink, user);
    CF_TRY(one(ctx, 93, 257, sink, user));
    return one(ctx, 256, 512, sink, user);
}
