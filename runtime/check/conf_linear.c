/* Conformance of the linear layer: forward (GEMM + bias, GEMM rule with the
 * bias in the bound) and backward (dinp, dweight, dbias, gradient rule). */
#include "buffer.h"
#include "conformance.h"
#include "ops.h"
#include "ref_gemm.h"
#include "ref_linear.h"
#include "ref_random.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

static clformer_status one(cf_ctx *ctx, size_t N, size_t IC, size_t OC, conf_sink sink,
                           void *user)
{
    /* layout (host floats, doubles and the device buffer alike):
     * inp (N IC), weight (OC IC), bias (OC), dout (N OC) | out (N OC), dinp (N IC),
     * dweight (OC IC), dbias (OC) */
    const size_t n_in = N * IC + OC * IC + OC + N * OC, n_all = 2 * n_in;
    float *h = calloc(n_all, 4);
    double *d = calloc(n_all, 8), *bound = malloc(N * OC * 8);
    cl_mem buf = NULL;
    clformer_status st = CLFORMER_OK;
    if (!h || !d || !bound) {
        st = cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory");
        goto done;
    }
    const size_t o_w = N * IC, o_b = o_w + OC * IC, o_dout = o_b + OC, o_out = n_in,
                 o_dinp = o_out + N * OC, o_dw = o_dinp + N * IC, o_db = o_dw + OC * IC;
    ref_rng r = ref_rng_new(N * 7919 + IC * 31 + OC);
    ref_fill_uniform(&r, h, d, n_in, -1, 1);
    /* The whole buffer is uploaded (outputs as zeros): Oclgrind 21.10 marked part
     * of a partial upload as uninitialised. */
    if ((st = cf_buffer_alloc(ctx, n_all, "linear check", &buf)) ||
        (st = cf_upload(ctx, buf, 0, h, n_all)))
        goto done;
    const cf_view inp = {buf, 0}, w = {buf, o_w}, b = {buf, o_b}, dout = {buf, o_dout},
                  out = {buf, o_out}, dinp = {buf, o_dinp}, dw = {buf, o_dw}, db = {buf, o_db};
    char shape[96];
    snprintf(shape, sizeof shape, "N=%zu IC=%zu OC=%zu", N, IC, OC);

    /* Each op runs once untimed first: PoCL compiles a kernel at its first launch. */
    if ((st = cf_linear_forward(ctx, out, inp, w, b, N, IC, OC))) goto done;
    double t0 = conf_now_ms();
    if ((st = cf_linear_forward(ctx, out, inp, w, b, N, IC, OC)) || (st = cf_finish(ctx)))
        goto done;
    double ms = conf_now_ms() - t0;
    if ((st = cf_download(ctx, buf, o_out, h + o_out, N * OC))) goto done;
    ref_gemm(false, true, N, OC, IC, 1.0, d, IC, d + o_w, IC, 0.0, d + o_out, OC, bound);
    ref_linear_forward(d + o_out, d, d + o_w, d + o_b, N, IC, OC);
    for (size_t i = 0; i < N * OC; i++) bound[i] += fabs(d[o_b + i % OC]);
    conf_emit(sink, user, "linear_forward", shape,
              ref_compare_gemm(h + o_out, d + o_out, bound, N * OC), ms);

    if ((st = cf_linear_backward(ctx, dinp, dw, db, dout, inp, w, N, IC, OC, false)) ||
        (st = cf_fill(ctx, buf, o_dw, OC * IC + OC, 0.0f)) || /* dweight, dbias accumulate */
        (st = cf_finish(ctx)))
        goto done;
    t0 = conf_now_ms();
    if ((st = cf_linear_backward(ctx, dinp, dw, db, dout, inp, w, N, IC, OC, false)) ||
        (st = cf_finish(ctx)))
        goto done;
    ms = conf_now_ms() - t0;
    if ((st = cf_download(ctx, buf, o_dinp, h + o_dinp, n_all - o_dinp))) goto done;
    ref_linear_backward(d + o_dinp, d + o_dw, d + o_db, d + o_dout, d, d + o_w, N, IC, OC, false);
    conf_emit(sink, user, "linear_backward", shape,
              conf_worse(ref_compare_grad(h + o_dinp, d + o_dinp, N * IC),
                         conf_worse(ref_compare_grad(h + o_dw, d + o_dw, OC * IC),
                                    ref_compare_grad(h + o_db, d + o_db, OC))),
              ms);
done:
    cf_buffer_free(ctx, buf);
    free(h), free(d), free(bound);
    return st;
}

clformer_status conf_linear(cf_ctx *ctx, bool quick, conf_sink sink, void *user)
{
    if (quick) return one(ctx, 7, 13, 5, sink, user);
    CF_TRY(one(ctx, 93, 257, 61, sink, user));
    return one(ctx, 128, 512, 2048, sink, user);
}
