/* Dropout, described once: its double-precision reference (the mask is
 * ref_philox.c's, shared with the activation, the embedding and the fused
 * residual, which also applies it with ref_dropout_backward), the checks of
 * that reference, its conformance cases and its descriptor. The kernels are
 * cl/dropout.cl, the launchers runtime/ops/ops_dropout.c.
 *
 * Residual dropout forward, its backward and the plain add against the
 * double reference (a mask that differs from the host Philox by one element
 * fails the element bound), every tensor guarded, out of place or in place,
 * at odd sizes. Without dropout the results must be exact: the float sum, or
 * dout itself. Then the masks against the host Philox bit for bit with the
 * kept fraction near 1 - p (dropout_mask), the add with its output over
 * either input (dropout_add_aliasing), the same site twice bit for bit and
 * another step another mask (dropout_repeat), and argument errors
 * (dropout_arguments). */
#include "conf_block.h"
#include "conformance.h"
#include "ref_philox.h"
#include "ref_random.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* --- the reference, in double (the mask is ref_philox.c's) --------------------- */

/* out = res + dropout(x), n elements; out may alias res. */
static void ref_residual_dropout_forward(double *out, const double *res, const double *x,
                                         size_t n, const ref_dropout *dropout)
{
    for (size_t i = 0; i < n; i++) out[i] = res[i] + x[i] * ref_dropout_scale(dropout, i);
}

/* out = a + b; out may alias a or b. */
static void ref_add(double *out, const double *a, const double *b, size_t n)
{
    for (size_t i = 0; i < n; i++) out[i] = a[i] + b[i];
}

/* --- the conformance cases ----------------------------------------------------- */

typedef enum { DROPOUT_RESIDUAL, DROPOUT_BACKWARD, DROPOUT_ADD } dropout_op;
typedef struct {
    dropout_op op;  /* out = a + dropout(b); out = dropout(a); out = a + b */
    size_t n;
    cf_dropout drop;
    bool active;    /* false: no dropout (NULL) */
    bool in_place;  /* out is a */
    uint64_t seed;
} dropout_case;

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

static clformer_status run_case(cf_ctx *ctx, const dropout_case *k, conf_sink sink, void *user)
{
    const size_t n = k->n;
    const cf_dropout *d = k->active ? &k->drop : NULL;
    const ref_dropout rd = {k->drop.p, k->drop.seed, k->drop.step, k->drop.site};
    const bool two_inputs = k->op != DROPOUT_BACKWARD;
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
    const double range = k->op == DROPOUT_RESIDUAL ? 2.0 : 1.0;
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
        st = k->op == DROPOUT_RESIDUAL ? cf_residual_dropout_forward(ctx, vy, va, vb, n, d)
             : k->op == DROPOUT_BACKWARD ? cf_dropout_backward(ctx, vy, va, n, d)
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
    if (k->op == DROPOUT_RESIDUAL) {
        ref_residual_dropout_forward(y64, a64, b64, n, d ? &rd : &(ref_dropout){0});
        c = conf_compare_stored(ctx, y, y64, n, REF_RULE_FORWARD, NULL, NULL);
        op = "dropout_forward";
    } else if (k->op == DROPOUT_BACKWARD) {
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

/* dx = mask(ones) with dropout_backward: every element's kept or dropped
 * state the host's, a kept value 1/(1-p) (as stored), and the kept count
 * within 6 standard deviations of binomial(n, 1 - p). */
static clformer_status run_mask(cf_ctx *ctx, size_t n, const cf_dropout *d, conf_sink sink,
                                void *user)
{
    conf_block b = {0};
    const size_t ONES = conf_block_add(&b, n), DX = conf_block_add(&b, n);
    clformer_status st = conf_block_create(ctx, &b);
    if (st) goto done;
    conf_block_init_fill(&b, ONES, 1.0f);
    if ((st = conf_block_upload(&b)) ||
        (st = cf_dropout_backward(ctx, conf_block_view(&b, DX), conf_block_view(&b, ONES), n, d)) ||
        (st = cf_finish(ctx)) || (st = conf_block_read(&b)))
        goto done;
    const ref_dropout r = {d->p, d->seed, d->step, d->site};
    const double keep = 1.0 / (1.0 - (double)d->p),
                 tol = (1e-6 + conf_unit_roundoff(ctx)) * keep; /* 16-bit runs store it */
    const float *dx = conf_block_out(&b, DX);
    ref_cmp c = {0};
    c.pass = true, c.rule = "the host's mask bit for bit";
    size_t kept = 0;
    for (size_t i = 0; i < n; i++) {
        const bool host_kept = ref_dropout_kept(&r, i);
        if (c.pass && ((dx[i] != 0.0f) != host_kept || (host_kept && fabs(dx[i] - keep) > tol))) {
            c.pass = false;
            c.why = (dx[i] != 0.0f) != host_kept ? "an element kept or dropped unlike the host's"
                                                 : "a kept value is not 1/(1-p)";
            c.worst = i, c.worst_value = dx[i], c.worst_ref = host_kept ? keep : 0.0;
        }
        kept += host_kept;
    }
    const double mean = (1.0 - d->p) * (double)n, sd = sqrt((double)n * d->p * (1.0 - d->p));
    if (c.pass && fabs((double)kept - mean) > 6.0 * sd)
        c.pass = false, c.why = "the kept fraction is not near 1 - p";
    char shape[96];
    snprintf(shape, sizeof shape, "n=%zu p=%g step=%u site=%u", n, (double)d->p, d->step,
             d->site);
    conf_emit(sink, user, "dropout_mask", shape, conf_guarded(c, &b), 0.0);
done:
    conf_block_free(&b);
    return st;
}

/* out = a + b with out over a, then over b: the float sums exactly (as
 * stored), the other input unchanged. */
static clformer_status run_add_aliasing(cf_ctx *ctx, size_t n, conf_sink sink, void *user)
{
    conf_block b = {0};
    const size_t A = conf_block_add(&b, n), B = conf_block_add(&b, n);
    clformer_status st = conf_block_create(ctx, &b);
    if (st) goto done;
    ref_rng r = ref_rng_new(8);
    ref_fill_uniform(&r, conf_block_init(&b, A), NULL, n, -1, 1);
    ref_fill_uniform(&r, conf_block_init(&b, B), NULL, n, -1, 1);
    conf_round(ctx, conf_block_init(&b, A), n);
    conf_round(ctx, conf_block_init(&b, B), n);
    ref_cmp c = {0};
    c.pass = true, c.rule = "exact";
    for (size_t out = A; out <= B && c.pass; out++) {
        if ((st = conf_block_upload(&b)) ||
            (st = cf_add(ctx, conf_block_view(&b, out), conf_block_view(&b, A),
                         conf_block_view(&b, B), n)) ||
            (st = cf_finish(ctx)) || (st = conf_block_read(&b)))
            goto done;
        c = exact(ctx, c, conf_block_out(&b, out), conf_block_init(&b, A), conf_block_init(&b, B),
                  n);
        c = input_kept(c, &b, out == A ? B : A);
    }
    char shape[96];
    snprintf(shape, sizeof shape, "n=%zu out = a, out = b", n);
    conf_emit(sink, user, "dropout_add_aliasing", shape, conf_guarded(c, &b), 0.0);
done:
    conf_block_free(&b);
    return st;
}

/* The same site twice: identical bits; the next step: another mask (more
 * than a tenth of the outputs differ). */
static clformer_status run_repeat(cf_ctx *ctx, size_t n, conf_sink sink, void *user)
{
    conf_block b = {0};
    const size_t X = conf_block_add(&b, n), RES = conf_block_add(&b, n),
                 Y1 = conf_block_add(&b, n), Y2 = conf_block_add(&b, n),
                 Y3 = conf_block_add(&b, n);
    clformer_status st = conf_block_create(ctx, &b);
    if (st) goto done;
    ref_rng r = ref_rng_new(4);
    ref_fill_uniform(&r, conf_block_init(&b, X), NULL, n, -1, 1);
    conf_round(ctx, conf_block_init(&b, X), n);
    cf_dropout d = {0.3f, 5, 10, 2};
    const cf_view vx = conf_block_view(&b, X), vres = conf_block_view(&b, RES);
    if ((st = conf_block_upload(&b)) ||
        (st = cf_residual_dropout_forward(ctx, conf_block_view(&b, Y1), vres, vx, n, &d)) ||
        (st = cf_residual_dropout_forward(ctx, conf_block_view(&b, Y2), vres, vx, n, &d)))
        goto done;
    d.step++;
    if ((st = cf_residual_dropout_forward(ctx, conf_block_view(&b, Y3), vres, vx, n, &d)) ||
        (st = cf_finish(ctx)) || (st = conf_block_read(&b)))
        goto done;
    const float *y1 = conf_block_out(&b, Y1), *y3 = conf_block_out(&b, Y3);
    ref_cmp c = {0};
    c.pass = !memcmp(y1, conf_block_out(&b, Y2), n * sizeof *y1), c.rule = "bit-identical";
    if (!c.pass) c.why = "a repeat differs";
    size_t differ = 0;
    for (size_t i = 0; i < n; i++) differ += y1[i] != y3[i];
    if (c.pass && !(differ > n / 10)) c.pass = false, c.why = "the next step kept the mask";
    char shape[96];
    snprintf(shape, sizeof shape, "n=%zu p=0.3 twice, next step", n);
    conf_emit(sink, user, "dropout_repeat", shape, conf_guarded(c, &b), 0.0);
done:
    conf_block_free(&b);
    return st;
}

/* p = 1, 1.5, -0.1 and NaN are refused (naming [0, 1)) by the forward and
 * the backward; empty tensors are no-ops. */
static clformer_status run_arguments(cf_ctx *ctx, conf_sink sink, void *user)
{
    conf_block b = {0};
    const size_t A = conf_block_add(&b, 8), B = conf_block_add(&b, 8);
    clformer_status st = conf_block_create(ctx, &b);
    if (st) goto done;
    ref_rng r = ref_rng_new(6);
    ref_fill_uniform(&r, conf_block_init(&b, A), NULL, 8, -1, 1);
    ref_fill_uniform(&r, conf_block_init(&b, B), NULL, 8, -1, 1);
    if ((st = conf_block_upload(&b))) goto done;
    const cf_view a = conf_block_view(&b, A), v = conf_block_view(&b, B);
    static const float ps[] = {1.0f, 1.5f, -0.1f, NAN};
    const char *bad = NULL;
    for (size_t i = 0; i < 4 && !bad; i++) {
        const cf_dropout d = {ps[i], 1, 1, 1};
        if (cf_residual_dropout_forward(ctx, a, a, v, 8, &d) != CLFORMER_ERR_INVALID_ARGUMENT ||
            !strstr(clformer_last_error(), "[0, 1)"))
            bad = "a probability outside [0, 1) not refused by the forward, naming [0, 1)";
        else if (cf_dropout_backward(ctx, a, v, 8, &d) != CLFORMER_ERR_INVALID_ARGUMENT)
            bad = "a probability outside [0, 1) not refused by the backward";
    }
    const cf_dropout d = {0.5f, 1, 1, 1};
    st = CLFORMER_OK;
    if (!bad && ((st = cf_residual_dropout_forward(ctx, a, a, v, 0, &d)) ||
                 (st = cf_dropout_backward(ctx, a, v, 0, &d)) || (st = cf_add(ctx, a, a, v, 0)) ||
                 (st = cf_finish(ctx)) || (st = conf_block_read(&b))))
        goto done;
    conf_emit(sink, user, "dropout_arguments", "p = 1, 1.5, -0.1, NaN; n=0",
              conf_block_refusals(&b, bad), 0.0);
done:
    conf_block_free(&b);
    return st;
}

/* quick (simulators): sizes to 257; else to 61 x 93, and the check's own
 * sizes (1031, or 93 x 257 x 61). Residual forward out of and in place,
 * with and without dropout (and an active site of p = 0); the backward the
 * same; the add; then the masks of four sites, aliasing, repeats and
 * argument errors. */
static clformer_status dropout_check(cf_ctx *ctx, bool quick, conf_sink sink, void *user)
{
    static const size_t odd[] = {1, 7, 61, 93, 257, 61 * 93};
    const cf_dropout fd = {0.1f, 0xdeadbeefcafeULL, 3, 17}, bd = {0.25f, 77, 9, 4},
                     off = {0.0f, 1, 2, 3};
    for (size_t i = 0; i < (quick ? 5 : 6); i++)
        for (int in_place = 0; in_place < 2; in_place++)
            for (int active = 0; active < 2; active++) {
                const dropout_case fw = {DROPOUT_RESIDUAL, odd[i], active ? fd : (cf_dropout){0},
                                         active, in_place, 10 * (uint64_t)active + i},
                                   bw = {DROPOUT_BACKWARD, odd[i], active ? bd : (cf_dropout){0},
                                         active, in_place, i * 4 + in_place * 2 + (uint64_t)active};
                CF_TRY(run_case(ctx, &fw, sink, user));
                CF_TRY(run_case(ctx, &bw, sink, user));
            }
    const dropout_case p0 = {DROPOUT_RESIDUAL, 93, off, true, false, 99};
    CF_TRY(run_case(ctx, &p0, sink, user));
    const size_t n = quick ? 1031 : 93 * 257 * 61;
    const cf_dropout d = {0.1f, 0x5eedULL, 2, 1};
    const dropout_case cases[] = {
        {DROPOUT_RESIDUAL, n, d, true, false, n},
        {DROPOUT_BACKWARD, n, d, true, false, n + 1},
        {DROPOUT_ADD, n, d, false, false, n + 2},
    };
    for (size_t i = 0; i < 3; i++) CF_TRY(run_case(ctx, &cases[i], sink, user));
    static const cf_dropout sites[] = {
        {0.1f, 0x0123456789abcdefULL, 0, 0},
        {0.5f, 1, 7, 3},
        {0.9f, 0xffffffff00000000ULL, 123456, 0xffffffffu},
        {0.0001f, 42, 1, 1},
    };
    for (size_t s = 0; s < 4; s++)
        CF_TRY(run_mask(ctx, quick ? 4099 : (1u << 20) + 3, &sites[s], sink, user));
    CF_TRY(run_add_aliasing(ctx, 257, sink, user));
    CF_TRY(run_repeat(ctx, quick ? 1000 : 100000, sink, user));
    return run_arguments(ctx, sink, user);
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
    /* the add over its own input, and the backward in place */
    double a[3] = {1, 2, 3}, b[3] = {0.5, -1, 4}, ones[64];
    ref_add(a, a, b, 3);
    int rules = !(a[0] == 1.5 && a[1] == 1 && a[2] == 7);
    const ref_dropout half = {0.5f, 1, 1, 1};
    for (size_t i = 0; i < 64; i++) ones[i] = 1.0;
    ref_dropout_backward(ones, ones, 64, &half);
    for (size_t i = 0; i < 64; i++) rules += ones[i] != (ref_dropout_kept(&half, i) ? 2.0 : 0.0);
    if (rules) fprintf(stderr, "dropout reference: %d mismatches of its rules\n", rules);
    return bad + rules;
}

CONF_OP(dropout) = {"dropout", "residual_dropout_forward dropout_backward",
    "cf_residual_dropout_forward, cf_dropout_backward, cf_add",
    "ref_residual_dropout_forward, ref_add (this file), ref_dropout_backward (ref_philox.c, "
    "with the mask the fused residual shares)",
    "forward rule; gradient rule for the backward; exact without dropout, for the mask, the "
    "aliased add and repeats",
    dropout_check, dropout_gradcheck, NULL, true};
