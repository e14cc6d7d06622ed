/* Conformance of bias + activation + dropout, for ReLU and GELU: forward
 * (forward rule) and backward (dinp and dbias, gradient rule), with dropout
 * on so the device's Philox mask is checked against the reference's. */
#include "buffer.h"
#include "conformance.h"
#include "ops.h"
#include "ref_activation.h"
#include "ref_random.h"

#include <stdio.h>
#include <stdlib.h>

static clformer_status one(cf_ctx *ctx, cf_activation act, size_t N, size_t C, conf_sink sink,
                           void *user)
{
    /* layout: inp (NC), dout (NC), bias (C) | out (NC), dinp (NC), dbias (C) */
    const size_t NC = N * C, n_in = 2 * NC + C, n_all = 2 * n_in;
    const size_t o_dout = NC, o_b = 2 * NC, o_out = n_in, o_dinp = o_out + NC, o_db = o_dinp + NC;
    float *h = calloc(n_all, 4);
    double *d = calloc(n_all, 8);
    cl_mem buf = NULL;
    clformer_status st = CLFORMER_OK;
    if (!h || !d) {
        st = cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory");
        goto done;
    }
    ref_rng r = ref_rng_new(N * 7919 + C + (uint64_t)act);
    ref_fill_uniform(&r, h, d, 2 * NC, -3, 3);
    ref_fill_uniform(&r, h + o_b, d + o_b, C, -0.5, 0.5);
    /* The whole buffer is uploaded (outputs as zeros): Oclgrind 21.10 marked part
     * of a partial upload as uninitialised. */
    if ((st = cf_buffer_alloc(ctx, n_all, "activation check", &buf)) ||
        (st = cf_upload(ctx, buf, 0, h, n_all)))
        goto done;
    const cf_dropout drop = {0.1f, 0x5eed, 7, 3};
    const ref_act_dropout rdrop = {drop.p, drop.seed, drop.step, drop.site};
    const ref_activation ract = act == CF_ACT_GELU ? REF_ACT_GELU : REF_ACT_RELU;
    const char *name = act == CF_ACT_GELU ? "gelu" : "relu";
    char op[64], shape[96];
    snprintf(shape, sizeof shape, "N=%zu C=%zu p=0.1", N, C);

    /* Each op runs twice, timed the second time: PoCL compiles a kernel at its
     * first launch. */
    double t0 = 0.0;
    for (int run = 0; run < 2; run++) {
        t0 = conf_now_ms();
        if ((st = cf_bias_act_forward(ctx, (cf_view){buf, o_out}, (cf_view){buf, 0},
                                      (cf_view){buf, o_b}, N, C, act, &drop)) ||
            (st = cf_finish(ctx)))
            goto done;
    }
    double ms = conf_now_ms() - t0;
    if ((st = cf_download(ctx, buf, o_out, h + o_out, NC))) goto done;
    ref_bias_act_forward(d + o_out, d, d + o_b, N, C, ract, &rdrop);
    snprintf(op, sizeof op, "activation_forward_%s", name);
    conf_emit(sink, user, op, shape, ref_compare_forward(h + o_out, d + o_out, NC), ms);

    for (int run = 0; run < 2; run++) {
        /* dbias accumulates: start each run from zero */
        if ((st = cf_fill(ctx, buf, o_db, C, 0.0f)) || (st = cf_finish(ctx)))
            goto done;
        t0 = conf_now_ms();
        if ((st = cf_bias_act_backward(ctx, (cf_view){buf, o_dinp}, (cf_view){buf, o_db},
                                       (cf_view){buf, o_dout}, (cf_view){buf, 0},
                                       (cf_view){buf, o_b}, N, C, act, &drop)) ||
            (st = cf_finish(ctx)))
            goto done;
    }
    ms = conf_now_ms() - t0;
    if ((st = cf_download(ctx, buf, o_dinp, h + o_dinp, NC + C))) goto done;
    ref_bias_act_backward(d + o_dinp, d + o_db, d + o_dout, d, d + o_b, N, C, ract, &rdrop);
    snprintf(op, sizeof op, "activation_backward_%s", name);
    conf_emit(sink, user, op, shape,
              conf_worse(ref_compare_grad(h + o_dinp, d + o_dinp, NC),
                         ref_compare_grad(h + o_db, d + o_db, C)),
              ms);
done:
    cf_buffer_free(ctx, buf);
    free(h), free(d);
    return st;
}

clformer_status conf_activation(cf_ctx *ctx, bool quick, conf_sink sink, void *user)
{
    const size_t N = quick ? 7 : 257, C = quick ? 37 : 2048;
    CF_TRY(one(ctx, CF_ACT_RELU, N, C, sink, user));
    return one(ctx, CF_ACT_GELU, N, C, sink, user);
}
