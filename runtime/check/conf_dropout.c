/* Conformance of dropout: residual dropout forward, its backward and the
 * plain add, against the double reference (a mask that differs from the
 * host Philox by one element fails the element bound), every tensor guarded,
 * out of place or in place. Without dropout the results must be exact: the
 * float sum, or dout itself. `clformer check` runs one size per op;
 * test_dropout runs many more cases. */
#include "conf_block.h"
#include "conformance.h"
#include "ref_dropout.h"
#include "ref_random.h"

#include <stdio.h>
#include <stdlib.h>

/* Fails `c` unless y equals `want` (a + b when b is not NULL, rounded to
 * the storage precision) bit for bit,
 * or when input tensor `input` changed. */
static ref_cmp exact(const cf_ctx *ctx, ref_cmp c, const float *y, const float *a, const float *b,
                     size_t n)
{
    for (size_t i = 0; i < n; i++) {
        /* 16-bit runs: the float sum, stored (rounded once) */
        const float want = conf_round_value(ctx, b ? a[i] + b[i] : a[i]);
        if (y[i] != want) {
            c.pass = false;
            c.why = "not exact without dropout";
            c.worst = i, c.worst_value = y[i], c.worst_ref = want, c.worst_bound = 0.0;
            break;
        }
    }
    return c;
}

static ref_cmp input_kept(ref_cmp c, const conf_block *b, size_t t)
{
    if (!conf_block_unchanged(b, t)) {
        c.pass = false;
        c.why = "an input tensor changed";
    }
    return c;
}

clformer_status conf_dropout_run(cf_ctx *ctx, const conf_dropout_case *k, conf_sink sink,
                                 void *user)
{
    const size_t n = k->n;
    const cf_dropout *d = k->active ? &k->drop : NULL;
    const ref_dropout rd = {k->drop.p, k->drop.seed, k->drop.step, k->drop.site};
    const bool two_inputs = k->op != CONF_DROPOUT_BACKWARD;
    /* a: res (residual), dout (backward) or a (add); b: x or b; out unless in place */
    conf_block blk = {0};
    enum { A, B, OUT };
    conf_block_add(&blk, n);
    if (two_inputs) conf_block_add(&blk, n);
    const size_t out_t = k->in_place ? A : conf_block_add(&blk, n);
    double *a64 = NULL, *b64 = NULL, *y64 = malloc((n ? n : 1) * sizeof *y64);
    float *a0 = malloc((n ? n : 1) * 4); /* a before an in-place op */
    clformer_status st = conf_block_create(ctx, &blk);
    if (st) goto done;
    const double range = k->op == CONF_DROPOUT_RESIDUAL ? 2.0 : 1.0;
    ref_rng r = ref_rng_new(k->seed);
    ref_fill_uniform(&r, conf_block_init(&blk, A), NULL, n, -range, range);
    if (two_inputs) ref_fill_uniform(&r, conf_block_init(&blk, B), NULL, n, -range, range);
    conf_round(ctx, conf_block_init(&blk, A), n); /* 16-bit runs: the inputs as stored */
    if (two_inputs) conf_round(ctx, conf_block_init(&blk, B), n);
    a64 = conf_widen(conf_block_init(&blk, A), n);
    b64 = two_inputs ? conf_widen(conf_block_init(&blk, B), n) : NULL;
    if (!y64 || !a0 || !a64 || (two_inputs && !b64)) {
        st = cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory");
        goto done;
    }
    for (size_t i = 0; i < n; i++) a0[i] = conf_block_init(&blk, A)[i];
    const cf_view va = conf_block_view(&blk, A), vb = two_inputs ? conf_block_view(&blk, B) : va,
                  vy = conf_block_view(&blk, out_t);
    double ms = 0.0;
    /* once before the timed run (PoCL compiles at the first launch); the
     * upload afterwards restores the inputs */
    for (int run = conf_warm_up(ctx) ? 0 : 1; run < 2; run++) {
        if ((st = conf_block_upload(&blk))) goto done;
        const double t0 = conf_now_ms();
        st = k->op == CONF_DROPOUT_RESIDUAL ? cf_residual_dropout_forward(ctx, vy, va, vb, n, d)
             : k->op == CONF_DROPOUT_BACKWARD ? cf_dropout_backward(ctx, vy, va, n, d)
                                              : cf_add(ctx, vy, va, vb, n);
        if (st || (st = cf_finish(ctx))) goto done;
        ms = conf_now_ms() - t0;
    }
    if ((st = conf_block_read(&blk))) goto done;
    const float *y = conf_block_out(&blk, out_t);
    char shape[96];
    snprintf(shape, sizeof shape, "n=%zu p=%g%s", n, d ? (double)d->p : 0.0,
             k->in_place ? " in place" : "");
    ref_cmp c;
    const char *op;
    if (k->op == CONF_DROPOUT_RESIDUAL) {
        ref_residual_dropout_forward(y64, a64, b64, n, d ? &rd : &(ref_dropout){0});
        c = conf_compare_stored(ctx, y, y64, n, REF_RULE_FORWARD, NULL, NULL);
        op = "dropout_forward";
    } else if (k->op == CONF_DROPOUT_BACKWARD) {
        ref_dropout_backward(y64, a64, n, d ? &rd : NULL);
        c = conf_compare_stored(ctx, y, y64, n, REF_RULE_GRAD, NULL, NULL);
        op = "dropout_backward";
    } else {
        ref_add(y64, a64, b64, n);
        c = conf_compare_stored(ctx, y, y64, n, REF_RULE_FORWARD, NULL, NULL);
        op = "dropout_forward_add";
    }
    if (!cf_dropout_active(d)) c = exact(ctx, c, y, a0, two_inputs ? conf_block_init(&blk, B) : NULL, n);
    if (two_inputs) c = input_kept(c, &blk, B);
    if (!k->in_place) c = input_kept(c, &blk, A);
    conf_emit(sink, user, op, shape, conf_guarded(c, &blk), ms);
done:
    conf_block_free(&blk);
    free(a64), free(b64), free(y64), free(a0);
    return st;
}

clformer_status conf_dropout(cf_ctx *ctx, bool quick, conf_sink sink, void *user)
{
    const size_t n = quick ? 1031 : 93 * 257 * 61;
    const cf_dropout d = {0.1f, 0x5eedULL, 2, 1};
    const conf_dropout_case cases[] = {
        {CONF_DROPOUT_RESIDUAL, n, d, true, false, n},
        {CONF_DROPOUT_BACKWARD, n, d, true, false, n + 1},
        {CONF_DROPOUT_ADD, n, d, false, false, n + 2},
    };
    for (size_t i = 0; i < 3; i++) CF_TRY(conf_dropout_run(ctx, &cases[i], sink, user));
    return CLFORMER_OK;
}

/* Finite differences of the reference: out = res + dropout(x), so dres is
 * dout and dx is dropout_mask(dout), without and with dropout (the case with
 * it must drop some elements and keep others). */
typedef struct {
    size_t n;
    const ref_dropout *drop;
    double *res, *x, *g, *out;
} fd_problem;

static double fd_loss(void *user)
{
    fd_problem *p = user;
    ref_residual_dropout_forward(p->out, p->res, p->x, p->n, p->drop);
    double s = 0.0;
    for (size_t i = 0; i < p->n; i++) s += p->out[i] * p->g[i];
    return s;
}

static int dropout_gradcheck(void)
{
    enum { N = 61 };
    static const ref_dropout drop = {0.3f, 12345, 7, 3};
    int bad = 0;
    for (int dropped = 0; dropped < 2; dropped++) {
        double res[N], x[N], g[N], out[N], dx[N];
        fd_problem p = {N, dropped ? &drop : NULL, res, x, g, out};
        ref_rng r = ref_rng_new(5);
        for (size_t i = 0; i < N; i++) {
            g[i] = ref_rng_uniform(&r, -1, 1);
            res[i] = ref_rng_uniform(&r, -1, 1);
            x[i] = ref_rng_uniform(&r, -1, 1);
        }
        ref_dropout_backward(dx, g, N, p.drop);
        bad += conf_fd_check("dropout dx", x, N, dx, fd_loss, &p);
        bad += conf_fd_check("dropout dres", res, N, g, fd_loss, &p);
    }
    size_t kept = 0;
    for (size_t i = 0; i < N; i++) kept += ref_dropout_kept(&drop, i);
    if (kept == 0 || kept == N) {
        fprintf(stderr, "dropout gradcheck: p=0.3 kept %zu of %d elements\n", kept, (int)N);
        bad++;
    }
    return bad;
}

CONF_OP(dropout) = {"dropout", "residual_dropout_forward dropout_backward",
    "cf_residual_dropout_forward, cf_dropout_backward, cf_add",
    "ref_residual_dropout_forward, ref_dropout_backward, ref_add (reference/ref_dropout.c)",
    "forward rule",
    conf_dropout, dropout_gradcheck,
    "test_dropout (many more cases, determinism, argument errors)", true};
