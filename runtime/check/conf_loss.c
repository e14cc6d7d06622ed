/* Conformance of the softmax cross-entropy: the per-row losses and dlogits
 * (the fused call) against the reference, with or without label smoothing,
 * ignored rows (every fifth row is ignore_index), separate outputs prefilled
 * with junk (they must be overwritten) or dlogits in place over the logits,
 * random or extreme logits, guarded tensors and a bit-identical rerun.
 * `clformer check` runs a few shapes; test_loss runs many more cases. */
#include "conf_block.h"
#include "conformance.h"
#include "ops.h"
#include "ref_loss.h"
#include "ref_random.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void conf_loss_logits(float *x, const int32_t *y, size_t N, size_t V, bool extreme, ref_rng *r)
{
    if (!extreme) {
        ref_fill_uniform(r, x, NULL, N * V, -6.0, 6.0);
        return;
    }
    for (size_t row = 0; row < N; row++) {
        float *xr = x + row * V;
        switch (row % 4) {
        case 0: ref_fill_uniform(r, xr, NULL, V, -1e4, 1e4); break;
        case 1:
        case 2: {
            for (size_t c = 0; c < V; c++) xr[c] = -1e4f;
            const bool on_target = row % 4 == 1 && y[row] >= 0 && (size_t)y[row] < V;
            xr[on_target ? (size_t)y[row] : (size_t)(ref_rng_next(r) % V)] = 1e4f;
            break;
        }
        default:
            for (size_t c = 0; c < V; c++) xr[c] = 1e4f;
        }
    }
}

/* Fails `c` with `why` (at element i, value v) unless ok. */
static ref_cmp require(ref_cmp c, bool ok, const char *why, size_t i, double v)
{
    if (!ok && c.pass) {
        c.pass = false;
        c.why = why;
        c.worst = i, c.worst_value = v, c.worst_ref = 0.0, c.worst_bound = 0.0;
    }
    return c;
}

clformer_status conf_loss_run(cf_ctx *ctx, const conf_loss_case *k, conf_sink sink, void *user)
{
    const size_t N = k->N, V = k->V, NV = N * V;
    conf_block b = {0};
    enum { X, Y, LOSS, D };
    conf_block_add(&b, NV);
    conf_block_add(&b, N);
    conf_block_add(&b, N);
    const size_t d_t = k->alias ? X : conf_block_add(&b, NV);
    double *x64 = malloc(NV * 8), *dx64 = malloc(NV * 8), *loss64 = malloc(N * 8);
    float *first = malloc((NV + N) * 4); /* loss, dlogits of the first run */
    int32_t *y = malloc(N * 4);
    clformer_status st = conf_block_create(ctx, &b);
    if (st) goto done;
    if (!x64 || !dx64 || !loss64 || !first || !y) {
        st = cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory");
        goto done;
    }
    ref_rng r = ref_rng_new(k->seed);
    for (size_t i = 0; i < N; i++) y[i] = i % 5 == 2 ? k->ignore : (int32_t)(ref_rng_next(&r) % V);
    memcpy(conf_block_init(&b, Y), y, N * 4); /* int32 bits in the float buffer */
    float *x = conf_block_init(&b, X);
    conf_loss_logits(x, y, N, V, k->extreme, &r);
    conf_round(ctx, x, NV); /* 16-bit runs: the logits as stored; the losses stay fp32 */
    for (size_t i = 0; i < NV; i++) x64[i] = x[i];
    ref_fill_uniform(&r, conf_block_init(&b, LOSS), NULL, N, -3, 3); /* junk: overwritten */
    if (!k->alias) ref_fill_uniform(&r, conf_block_init(&b, D), NULL, NV, -3, 3);
    const cf_view vx = conf_block_view(&b, X), vy = conf_block_view(&b, Y),
                  vl = conf_block_view(&b, LOSS),
                  vd = k->gradient ? conf_block_view(&b, d_t) : cf_view_at(NULL, 0);
    ref_cross_entropy(loss64, k->gradient ? dx64 : NULL, x64, y, N, V, (float)k->ls, k->ignore,
                      k->grad_scale);

    /* once before the timed run (PoCL compiles at the first launch); the
     * upload afterwards restores the inputs and the junk */
    double ms = 0.0;
    for (int run = conf_warm_up(ctx) ? 0 : 1; run < 2; run++) {
        if ((st = conf_block_upload(&b))) goto done;
        const double t0 = conf_now_ms();
        if ((st = cf_cross_entropy(ctx, vl, vd, vx, vy, N, V, (float)k->ls, k->ignore,
                                   k->grad_scale)) ||
            (st = cf_finish(ctx)))
            goto done;
        ms = conf_now_ms() - t0;
    }
    if ((st = conf_block_read(&b))) goto done;
    const float *loss = conf_block_out(&b, LOSS), *dx = conf_block_out(&b, d_t);
    memcpy(first, loss, N * 4);
    if (k->gradient) memcpy(first + N, dx, NV * 4);
    char shape[96];
    snprintf(shape, sizeof shape, "N=%zu V=%zu ls=%.2g%s%s", N, V, k->ls,
             k->alias && k->gradient ? " in place" : "", k->extreme ? " extreme" : "");

    ref_cmp cl = ref_compare_forward(loss, loss64, N), cd = {.pass = true};
    for (size_t i = 0; i < N; i++)
        cl = require(cl, y[i] != k->ignore || loss[i] == 0.0f, "an ignored row has a loss", i,
                     loss[i]);
    if (k->gradient) {
        cd = conf_compare_stored(ctx, dx, dx64, NV, REF_RULE_GRAD, NULL, NULL);
        for (size_t i = 0; i < NV; i++)
            cd = require(cd, y[i / V] != k->ignore || dx[i] == 0.0f,
                         "an ignored row has a gradient", i, dx[i]);
    }
    if (!k->gradient || !k->alias) {
        /* the logits are still the input, and a rerun gives the same bits */
        cl = require(cl, conf_block_unchanged(&b, X), "the logits changed", 0, 0.0);
        if ((st = cf_cross_entropy(ctx, vl, vd, vx, vy, N, V, (float)k->ls, k->ignore,
                                   k->grad_scale)) ||
            (st = conf_block_read(&b)))
            goto done;
        cl = require(cl, memcmp(first, conf_block_out(&b, LOSS), N * 4) == 0,
                     "a rerun gave other losses", 0, 0.0);
        if (k->gradient)
            cd = require(cd, memcmp(first + N, conf_block_out(&b, d_t), NV * 4) == 0,
                         "a rerun gave another gradient", 0, 0.0);
    }
    conf_emit(sink, user, "cross_entropy_forward", shape, conf_guarded(cl, &b), ms);
    if (k->gradient)
        conf_emit(sink, user, "cross_entropy_backward", shape, conf_guarded(cd, &b), ms);
done:
    conf_block_free(&b);
    free(x64), free(dx64), free(loss64), free(first), free(y);
    return st;
}

clformer_status conf_loss(cf_ctx *ctx, bool quick, conf_sink sink, void *user)
{
    static const size_t shapes[][2] = {{7, 61}, {257, 10007}, {33, 50000}};
    for (size_t i = quick ? 0 : 1; i < (quick ? 1 : 3); i++) {
        const size_t N = shapes[i][0], V = shapes[i][1];
        const double ls = N == 33 ? 0.0 : 0.1;
        /* losses alone, then the fused call with dlogits */
        const conf_loss_case alone = {N, V, ls, 0, false, false, 1.0f / (float)N, false,
                                      N * 100003 + V},
                             fused = {N, V, ls, 0, false, true, 1.0f / (float)N, false,
                                      N * 100003 + V + 1};
        CF_TRY(conf_loss_run(ctx, &alone, sink, user));
        CF_TRY(conf_loss_run(ctx, &fused, sink, user));
    }
    return CLFORMER_OK;
}

/* Finite differences of the reference's dlogits: L = grad_scale * sum of the
 * row losses, with and without label smoothing, ignored rows, one dominant
 * logit, one class, and logits of +-1e3. */
typedef struct {
    size_t N, V;
    double ls, grad_scale;
    int ignore;
    double *x, *losses;
    const int32_t *y;
} fd_problem;

static double fd_loss(void *user)
{
    fd_problem *p = user;
    ref_cross_entropy(p->losses, NULL, p->x, p->y, p->N, p->V, p->ls, p->ignore, 1.0);
    double s = 0.0;
    for (size_t i = 0; i < p->N; i++) s += p->losses[i];
    return p->grad_scale * s;
}

static int loss_gradcheck(void)
{
    /* N, V, ignore_index, the scale of each row's first logit, the logits' spread */
    static const struct {
        size_t N, V;
        int ignore;
        double scale, spread;
    } cases[] = {{7, 5, 0, 1.0, 3.0},      {4, 61, -100, 1.0, 8.0}, {5, 7, 2, 40.0, 2.0},
                 {3, 1, -100, 1.0, 1.0},   {2, 3, -100, 1.0, 1e3}};
    int bad = 0;
    for (int smooth = 0; smooth < 2; smooth++)
        for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
            const size_t N = cases[k].N, V = cases[k].V;
            double *buf = malloc((2 * N * V + N) * sizeof *buf);
            int32_t *y = malloc(N * sizeof *y);
            if (!buf || !y) {
                free(buf), free(y);
                return 1;
            }
            fd_problem p = {N, V, smooth ? 0.1 : 0.0, 0.375, cases[k].ignore, buf, buf + N * V, y};
            double *g = p.losses + N;
            ref_rng r = ref_rng_new(1 + 2 * k + (uint64_t)smooth);
            for (size_t i = 0; i < N * V; i++)
                p.x[i] = ref_rng_uniform(&r, -cases[k].spread, cases[k].spread);
            for (size_t i = 0; i < N; i++) {
                y[i] = (int32_t)(ref_rng_next(&r) % V);
                if (i % 3 == 1) y[i] = cases[k].ignore;
                p.x[i * V] *= cases[k].scale;
            }
            ref_cross_entropy(p.losses, g, p.x, y, N, V, p.ls, p.ignore, p.grad_scale);
            bad += conf_fd_check("cross_entropy dlogits", p.x, N * V, g, fd_loss, &p);
            free(buf), free(y);
        }
    return bad;
}

CONF_OP(loss) = {"loss", "cross_entropy ~log_softmax_rows ~argmax_rows",
    "cf_cross_entropy, cf_log_softmax_rows, cf_argmax_rows",
    "ref_cross_entropy, ref_log_softmax_rows, ref_argmax_rows (reference/ref_loss.c)",
    "forward rule for the losses; gradient rule for dlogits",
    conf_loss, loss_gradcheck,
    "test_loss (log_softmax_rows, argmax_rows, many more cases, determinism, argument errors)", true};
