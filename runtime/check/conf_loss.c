/* The softmax cross-entropy and the decoding helpers (row-wise log-softmax
 * and argmax), described once: their double-precision reference, the checks
 * of that reference (PyTorch's numbers, ignored rows, the in-place call,
 * extreme rows and the helpers by hand, finite differences of dlogits),
 * their conformance cases and their descriptor. The kernels are cl/loss.cl,
 * the launchers runtime/ops/ops_loss.c.
 *
 * The cross-entropy: the per-row losses and dlogits (the fused call) against
 * the reference, with or without label smoothing, ignored rows (every fifth
 * row is ignore_index), separate outputs prefilled with junk (they must be
 * overwritten) or dlogits in place over the logits, random or extreme
 * logits, guarded tensors and a bit-identical rerun; N from 1 to 257 against
 * V from 1 to a 50k vocabulary. Then targets outside [0, V) (NaN, no read
 * out of bounds) and argument errors (cross_entropy_bad_targets,
 * loss_arguments), log_softmax_rows under the forward rule, separate and in
 * place, and argmax_rows exactly, ties, NaN and -inf rows included. */
#include "conf_block.h"
#include "conformance.h"
#include "ops.h"
#include "ref_random.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* --- the reference, in double ---------------------------------------------------- */

/* The cross-entropy by its definition: the loss as the sum over classes of
 * q_c (logsumexp - x_c), with no rearrangement, so that it checks the
 * kernel's rearranged form rather than repeating it. */
/* log sum_c exp(x_c), shifted by the maximum. */
static double logsumexp(const double *x, size_t V)
{
    double m = -INFINITY, s = 0.0;
    for (size_t c = 0; c < V; c++) m = fmax(m, x[c]);
    for (size_t c = 0; c < V; c++) s += exp(x[c] - m);
    return m + log(s);
}

/* losses[r] = -sum_c q_c log softmax(logits_r)_c with q = (1-ls) onehot(y) + ls/V,
 * 0 when targets[r] == ignore_index; dlogits (NULL: skipped) =
 * grad_scale * (softmax - q), 0 for ignored rows. dlogits may equal logits. */
static void ref_cross_entropy(double *losses, double *dlogits, const double *logits,
                              const int32_t *targets, size_t N, size_t V, double label_smoothing,
                              int ignore_index, double grad_scale)
{
    const double ls = label_smoothing;
    for (size_t r = 0; r < N; r++) {
        const double *x = logits + r * V;
        double *dx = dlogits ? dlogits + r * V : NULL;
        const int32_t y = targets[r];
        if (y == ignore_index) {
            losses[r] = 0.0;
            if (dx)
                for (size_t c = 0; c < V; c++) dx[c] = 0.0;
            continue;
        }
        const double lse = logsumexp(x, V);
        double loss = 0.0;
        for (size_t c = 0; c < V; c++) {
            const double q = (1.0 - ls) * ((int32_t)c == y) + ls / (double)V;
            loss += q * (lse - x[c]);
        }
        losses[r] = loss;
        if (dx)
            for (size_t c = 0; c < V; c++) {
                const double q = (1.0 - ls) * ((int32_t)c == y) + ls / (double)V;
                dx[c] = grad_scale * (exp(x[c] - lse) - q);
            }
    }
}

/* out (N, V) = log_softmax of each row; out may equal logits. */
static void ref_log_softmax_rows(double *out, const double *logits, size_t N, size_t V)
{
    for (size_t r = 0; r < N; r++) {
        const double lse = logsumexp(logits + r * V, V);
        for (size_t c = 0; c < V; c++) out[r * V + c] = logits[r * V + c] - lse;
    }
}

/* out[r] = index of the row's largest value; the lowest index wins ties and
 * NaN counts as the largest value. */
static void ref_argmax_rows(int32_t *out, const double *logits, size_t N, size_t V)
{
    for (size_t r = 0; r < N; r++) {
        const double *x = logits + r * V;
        size_t best = 0;
        for (size_t c = 1; c < V; c++) {
            if (isnan(x[best])) break; /* the first NaN wins */
            if (isnan(x[c]) || x[c] > x[best]) best = c;
        }
        out[r] = (int32_t)best;
    }
}

/* --- the conformance cases ----------------------------------------------------- */

typedef struct {
    size_t N, V;
    double ls;        /* label smoothing */
    int ignore;       /* ignore_index; every fifth row's target */
    bool alias;       /* dlogits is the logits buffer */
    bool gradient;    /* dlogits requested */
    float grad_scale;
    bool extreme;     /* logits of +-1e4, one-hot and constant rows */
    uint64_t seed;
} loss_case;

/* N x V logits drawn from r: uniform in +-6, or with `extreme` rows uniform in
 * +-1e4, rows of -1e4 with one 1e4 (on the target y[row] or elsewhere) and
 * rows of one value. */
static void loss_logits(float *x, const int32_t *y, size_t N, size_t V, bool extreme, ref_rng *r)
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

static clformer_status run_case(cf_ctx *ctx, const loss_case *k, conf_sink sink, void *user)
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
    loss_logits(x, y, N, V, k->extreme, &r);
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

/* Targets outside [0, V) that are not ignore_index give NaN losses and
 * gradients, not a read out of bounds (Oclgrind watches); the valid row
 * stays finite. */
static clformer_status run_bad_targets(cf_ctx *ctx, conf_sink sink, void *user)
{
    static const int32_t y[3] = {5, -1, 2};
    const size_t N = 3, V = 5;
    conf_block b = {0};
    const size_t X = conf_block_add(&b, N * V), Y = conf_block_add(&b, N),
                 L = conf_block_add(&b, N), D = conf_block_add(&b, N * V);
    clformer_status st = conf_block_create(ctx, &b);
    if (st) goto done;
    for (size_t i = 0; i < N * V; i++) conf_block_init(&b, X)[i] = (float)i * 0.25f;
    memcpy(conf_block_init(&b, Y), y, sizeof y);
    if ((st = conf_block_upload(&b)) ||
        (st = cf_cross_entropy(ctx, conf_block_view(&b, L), conf_block_view(&b, D),
                               conf_block_view(&b, X), conf_block_view(&b, Y), N, V, 0.1f, 0,
                               1.0f)) ||
        (st = cf_finish(ctx)) || (st = conf_block_read(&b)))
        goto done;
    const float *loss = conf_block_out(&b, L), *dx = conf_block_out(&b, D);
    const char *bad = NULL;
    if (!(isnan(loss[0]) && isnan(loss[1]) && isfinite(loss[2])))
        bad = "a target outside [0, V) gave a number, or the valid row did not";
    for (size_t c = 0; c < V; c++)
        if (!(isnan(dx[c]) && isnan(dx[V + c])))
            bad = "a target outside [0, V) gave a gradient that is a number";
    ref_cmp c = {0};
    c.pass = !bad, c.why = bad, c.rule = "NaN";
    conf_emit(sink, user, "cross_entropy_bad_targets", "N=3 V=5 targets 5, -1",
              conf_guarded(c, &b), 0.0);
done:
    conf_block_free(&b);
    return st;
}

/* Bad sizes, smoothing and a partly overlapping output are refused; size 0
 * is a no-op for every launcher. */
static clformer_status run_arguments(cf_ctx *ctx, conf_sink sink, void *user)
{
    static const int32_t y[3] = {1, 0, 2};
    const size_t N = 3, V = 5;
    conf_block b = {0};
    const size_t X = conf_block_add(&b, N * V), Y = conf_block_add(&b, N),
                 L = conf_block_add(&b, N), D = conf_block_add(&b, N * V);
    clformer_status st = conf_block_create(ctx, &b);
    if (st) goto done;
    ref_rng r = ref_rng_new(17);
    ref_fill_uniform(&r, conf_block_init(&b, X), NULL, N * V, -1, 1);
    memcpy(conf_block_init(&b, Y), y, sizeof y);
    ref_fill_uniform(&r, conf_block_init(&b, L), NULL, N, -1, 1);
    ref_fill_uniform(&r, conf_block_init(&b, D), NULL, N * V, -1, 1);
    if ((st = conf_block_upload(&b))) goto done;
    const cf_view vx = conf_block_view(&b, X), vy = conf_block_view(&b, Y),
                  vl = conf_block_view(&b, L), vd = conf_block_view(&b, D);
    const char *bad = NULL;
    if (cf_cross_entropy(ctx, vl, vd, vx, vy, N, 0, 0.0f, 0, 1.0f) !=
            CLFORMER_ERR_INVALID_ARGUMENT ||
        !strstr(clformer_last_error(), "at least one class"))
        bad = "V = 0 not refused naming the fix";
    else if (cf_cross_entropy(ctx, vl, vd, vx, vy, N, V, 1.5f, 0, 1.0f) !=
             CLFORMER_ERR_INVALID_ARGUMENT)
        bad = "label smoothing 1.5 not refused";
    else if (cf_cross_entropy(ctx, vl, cf_view_add(vx, 1), vx, vy, N, V, 0.0f, 0, 1.0f) !=
             CLFORMER_ERR_INVALID_ARGUMENT)
        bad = "dlogits partly over the logits not refused";
    else if (cf_log_softmax_rows(ctx, cf_view_add(vx, 3), vx, N, V) !=
             CLFORMER_ERR_INVALID_ARGUMENT)
        bad = "log_softmax_rows' output partly over its input not refused";
    else if (cf_argmax_rows(ctx, vl, vx, N, 0) != CLFORMER_ERR_INVALID_ARGUMENT)
        bad = "argmax_rows with V = 0 not refused";
    st = CLFORMER_OK;
    if (!bad && ((st = cf_cross_entropy(ctx, vl, vd, vx, vy, 0, V, 0.0f, 0, 1.0f)) ||
                 (st = cf_log_softmax_rows(ctx, vd, vx, 0, V)) ||
                 (st = cf_argmax_rows(ctx, vl, vx, 0, V)) || (st = cf_finish(ctx)) ||
                 (st = conf_block_read(&b))))
        goto done;
    conf_emit(sink, user, "loss_arguments", "V=0, ls=1.5, overlaps, N=0",
              conf_block_refusals(&b, bad), 0.0);
done:
    conf_block_free(&b);
    return st;
}

/* A row op of a rerun (log_softmax_rows, argmax_rows), on its views. */
typedef struct {
    cf_view out, x;
    size_t N, V;
} rows_views;

static clformer_status log_softmax_launch(cf_ctx *ctx, const void *args)
{
    const rows_views *v = args;
    return cf_log_softmax_rows(ctx, v->out, v->x, v->N, v->V);
}

static clformer_status argmax_launch(cf_ctx *ctx, const void *args)
{
    const rows_views *v = args;
    return cf_argmax_rows(ctx, v->out, v->x, v->N, v->V);
}

/* log_softmax rows under the forward rule, separate and in place, random
 * or extreme logits; the separate call leaves its input, and both rerun bit
 * for bit. */
static clformer_status run_log_softmax(cf_ctx *ctx, size_t N, size_t V, int variant,
                                       uint64_t seed, conf_sink sink, void *user)
{
    const size_t NV = N * V;
    const bool alias = variant & 1, extreme = variant & 2;
    conf_block b = {0};
    const size_t X = conf_block_add(&b, NV), O = alias ? X : conf_block_add(&b, NV);
    double *x64 = malloc(NV * 8 + 8), *out64 = malloc(NV * 8 + 8);
    int32_t *y = malloc(N * 4 + 4);
    clformer_status st = conf_block_create(ctx, &b);
    if (st) goto done;
    if (!x64 || !out64 || !y) {
        st = cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory");
        goto done;
    }
    ref_rng r = ref_rng_new(seed);
    for (size_t i = 0; i < N; i++) y[i] = i % 5 == 2 ? -1 : (int32_t)(ref_rng_next(&r) % V);
    float *x = conf_block_init(&b, X);
    loss_logits(x, y, N, V, extreme, &r);
    for (size_t i = 0; i < NV; i++) x64[i] = x[i];
    ref_log_softmax_rows(out64, x64, N, V);
    const rows_views v = {conf_block_view(&b, O), conf_block_view(&b, X), N, V};
    ref_cmp again;
    if ((st = conf_block_repeat(&b, log_softmax_launch, &v, O, O + 1, &again))) goto done;
    ref_cmp c = ref_compare_forward(conf_block_out(&b, O), out64, NV);
    if (!alias) c = require(c, conf_block_unchanged(&b, X), "the logits changed", 0, 0.0);
    c = require(c, again.pass, "a rerun differs", 0, 0.0);
    char shape[96];
    snprintf(shape, sizeof shape, "N=%zu V=%zu%s%s", N, V, alias ? " in place" : "",
             extreme ? " extreme" : "");
    conf_emit(sink, user, "log_softmax_rows", shape, conf_guarded(c, &b), 0.0);
done:
    conf_block_free(&b);
    free(x64), free(out64), free(y);
    return st;
}

/* Argmax with many ties (values from a handful of levels), rows of one
 * value, NaN, -inf rows and a last column that wins: exactly the
 * reference's index, and again on a rerun. */
static clformer_status run_argmax(cf_ctx *ctx, size_t N, size_t V, uint64_t seed, conf_sink sink,
                                  void *user)
{
    const size_t NV = N * V;
    conf_block b = {0};
    const size_t X = conf_block_add(&b, NV), O = conf_block_add(&b, N);
    double *x64 = malloc(NV * 8 + 8);
    int32_t *want = malloc(N * 4 + 4);
    clformer_status st = conf_block_create(ctx, &b);
    if (st) goto done;
    if (!x64 || !want) {
        st = cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory");
        goto done;
    }
    ref_rng r = ref_rng_new(seed);
    float *x = conf_block_init(&b, X);
    for (size_t row = 0; row < N; row++) {
        float *xr = x + row * V;
        for (size_t c = 0; c < V; c++) {
            switch (row % 5) {
            case 0: xr[c] = (float)(ref_rng_next(&r) % 4); break; /* ties everywhere */
            case 1: xr[c] = 2.5f; break;                          /* one value */
            case 2: xr[c] = -INFINITY; break;
            case 3: xr[c] = (float)ref_rng_uniform(&r, -1, 1); break;
            default: xr[c] = (float)(ref_rng_next(&r) % 3) - 1e4f;
            }
        }
        if (row % 7 == 6) xr[ref_rng_next(&r) % V] = NAN;
        if (row % 11 == 10) xr[V - 1] = 1e30f; /* the last column wins */
    }
    for (size_t i = 0; i < NV; i++) x64[i] = x[i];
    ref_argmax_rows(want, x64, N, V);
    const rows_views v = {conf_block_view(&b, O), conf_block_view(&b, X), N, V};
    ref_cmp again;
    if ((st = conf_block_repeat(&b, argmax_launch, &v, O, O + 1, &again))) goto done;
    ref_cmp c = {0};
    c.pass = true, c.rule = "exact index";
    for (size_t row = 0; row < N && c.pass; row++) {
        int32_t got;
        memcpy(&got, conf_block_out(&b, O) + row, 4); /* int32 bits in the float block */
        c = require(c, got == want[row], "an index differs from the reference's", row, got);
    }
    c = require(c, again.pass, "a rerun differs", 0, 0.0);
    char shape[96];
    snprintf(shape, sizeof shape, "N=%zu V=%zu ties, NaN, -inf", N, V);
    conf_emit(sink, user, "argmax_rows", shape, conf_guarded(c, &b), 0.0);
done:
    conf_block_free(&b);
    free(x64), free(want);
    return st;
}

typedef struct {
    size_t N, V;
} loss_shape;

/* quick (simulators, where each row is a work-group of ~30 ms): few rows;
 * else N from 1 to 257 against V from 1 to a 50k vocabulary. 16-bit runs
 * take the small table too: they differ only where dlogits is stored, and
 * the decoding helpers read and write fp32 (fp32 runs only). */
static clformer_status loss_check(cf_ctx *ctx, bool quick, conf_sink sink, void *user)
{
    static const loss_shape all[] = {{1, 1},      {257, 1},    {7, 7},     {257, 7},
                                     {61, 61},    {1, 257},    {93, 257},  {257, 257},
                                     {7, 10007},  {61, 10007}, {1, 50000}, {17, 50000}};
    static const loss_shape few[] = {{1, 1}, {7, 1}, {5, 7}, {13, 3}, {3, 61}, {2, 257}};
    static const loss_shape extreme_all[] = {{7, 61}, {61, 257}, {5, 10007}, {3, 50000}},
                            extreme_few[] = {{5, 7}, {9, 61}};
    const bool fp32 = ctx->precision == CLFORMER_FP32, wide = !quick && fp32;
    const loss_shape *shapes = wide ? all : few, *extreme = wide ? extreme_all : extreme_few;
    const size_t count = wide ? 12 : 6, extremes = wide ? 4 : 2;
    /* every shape with and without smoothing, in place and separate; the
     * gradient scaled by 1/valid rows as the model does, or by 1 */
    for (size_t i = 0; i < count; i++)
        for (int v = 0; v < 4; v++) {
            const loss_shape s = shapes[i];
            const loss_case c = {s.N,  s.V, v & 1 ? 0.1 : 0.0, v & 2 ? 0 : -100, v >= 2, true,
                                 v & 1 ? 1.0f : 1.0f / (float)(s.N + 1), false, 1000 * i + (uint64_t)v};
            CF_TRY(run_case(ctx, &c, sink, user));
        }
    for (size_t i = 0; i < extremes; i++)
        for (int v = 0; v < 4; v++) {
            const loss_case c = {extreme[i].N, extreme[i].V, v & 1 ? 0.1 : 0.0, 0, v & 2, true,
                                 1.0f, true, 77 + 10 * i + (uint64_t)v};
            CF_TRY(run_case(ctx, &c, sink, user));
        }
    /* losses alone (dlogits NULL), a grad_scale that is not a reciprocal and
     * a positive ignore_index; then the model's shapes, losses alone and
     * fused */
    const loss_shape one = quick ? (loss_shape){7, 61} : (loss_shape){61, 10007};
    for (int ls = 0; ls < 2; ls++) {
        const loss_case alone = {one.N, one.V, ls ? 0.1 : 0.0, 0, false, false, 1.0f, false,
                                 5 + (uint64_t)ls},
                        scaled = {one.N, one.V, ls ? 0.1 : 0.0, 3, false, true, 2.5f, false,
                                  7 + (uint64_t)ls};
        CF_TRY(run_case(ctx, &alone, sink, user));
        CF_TRY(run_case(ctx, &scaled, sink, user));
    }
    static const loss_shape model[] = {{7, 61}, {257, 10007}, {33, 50000}};
    for (size_t i = quick ? 0 : 1; i < (quick ? 1 : 3); i++) {
        const size_t N = model[i].N, V = model[i].V;
        const double ls = N == 33 ? 0.0 : 0.1;
        const loss_case alone = {N, V, ls, 0, false, false, 1.0f / (float)N, false,
                                 N * 100003 + V},
                        fused = {N, V, ls, 0, false, true, 1.0f / (float)N, false,
                                 N * 100003 + V + 1};
        CF_TRY(run_case(ctx, &alone, sink, user));
        CF_TRY(run_case(ctx, &fused, sink, user));
    }
    CF_TRY(run_bad_targets(ctx, sink, user));
    CF_TRY(run_arguments(ctx, sink, user));
    if (!fp32) return CLFORMER_OK;
    for (size_t i = 0; i < count; i++)
        for (int v = 0; v < 4; v++)
            CF_TRY(run_log_softmax(ctx, shapes[i].N, shapes[i].V, v, 300 + 7 * i + (uint64_t)v,
                                   sink, user));
    for (size_t i = 0; i < count; i++)
        CF_TRY(run_argmax(ctx, shapes[i].N, shapes[i].V, 500 + i, sink, user));
    return CLFORMER_OK;
}

/* --- checks of the reference ---------------------------------------------------- */

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

static int near(double got, double want, double tol) { return !(fabs(got - want) <= tol); }

/* Generated once with PyTorch 1.13 in float64:
 *   x = [[1, -2, .5, 3], [0, 0, 0, 0], [2.5, -1, -1.5, .25]], y = [2, 0, 3]
 *   l = F.cross_entropy(x, y, reduction="none", ignore_index=ign, label_smoothing=ls)
 *   g = autograd.grad(0.5 * l.sum(), x)
 * with ign = 0 (row 1 ignored) and ls in {0, 0.1}; with ignore_index=-100
 * (nothing ignored) row 1 is log 4. Returns the mismatches. */
static int matches_pytorch(void)
{
    static const double x[12] = {1, -2, .5, 3, 0, 0, 0, 0, 2.5, -1, -1.5, .25};
    static const int32_t y[3] = {2, 0, 3};
    static const double loss_want[2][3] = {{2.7022534476793516, 0, 2.393158122623396},
                                           {2.6897534476793519, 0, 2.4119081226233963}};
    static const double grad_want[2][12] = {
        {0.055276875180869614, 0.0027520735637918355, -0.46647288042969426,
         0.40844393168503285, 0, 0, 0, 0, 0.43330851315166441, 0.013084783311795547,
         0.0079363222543002137, -0.45432961871776018},
        {0.042776875180869617, -0.0097479264362081656, -0.42897288042969428,
         0.39594393168503283, 0, 0, 0, 0, 0.4208085131516644, 0.00058478331179554616,
         -0.004563677745699787, -0.4168296187177602}}; /* ls 0, 0.1 */
    int bad = 0;
    for (int smooth = 0; smooth < 2; smooth++) {
        double loss[3], grad[12];
        ref_cross_entropy(loss, grad, x, y, 3, 4, smooth ? 0.1 : 0.0, 0, 0.5);
        for (size_t i = 0; i < 3; i++) bad += near(loss[i], loss_want[smooth][i], 1e-13);
        for (size_t i = 0; i < 12; i++) bad += near(grad[i], grad_want[smooth][i], 1e-13);
    }
    double loss[3];
    ref_cross_entropy(loss, NULL, x, y, 3, 4, 0.0, -100, 1.0);
    return bad + near(loss[1], log(4.0), 1e-15);
}

/* Rows of +-1e4 whose values are known exactly (no overflow, no NaN), and
 * the decoding helpers on rows worked out by hand: ties go to the lowest
 * index and NaN wins (torch.argmax gives [1, 1] for [[1, nan, 3, nan],
 * [2, 5, 5, 1]]). Returns the mismatches. */
static int extreme_rows_and_helpers_by_hand(void)
{
    static const double x[8] = {1e4, -1e4, -1e4, -1e4, -1e4, -1e4, -1e4, 1e4};
    static const int32_t y[2] = {0, 0};
    double loss[2], g[8];
    int bad = 0;
    /* ls = 0: row 0 is certain (loss 0); row 1 is wrong by 2e4 */
    ref_cross_entropy(loss, g, x, y, 2, 4, 0.0, -100, 1.0);
    bad += near(loss[0], 0.0, 1e-12) + near(loss[1], 2e4, 1e-9);
    bad += near(g[4], -1.0, 1e-15) + near(g[7], 1.0, 1e-15);
    /* ls = 0.1: row 0 pays ls/V * 3 * 2e4 = 1500 for the three other classes */
    ref_cross_entropy(loss, g, x, y, 2, 4, 0.1, -100, 1.0);
    bad += near(loss[0], 1500.0, 1e-9) + near(loss[1], 0.925 * 2e4 + 0.025 * 2 * 2e4, 1e-9);
    bad += near(g[0], 1.0 - 0.925, 1e-15) + near(g[1], -0.025, 1e-15);

    static const double s[8] = {0, 0, 0, 0, 1e4, -1e4, 3, 1e4};
    double out[8];
    ref_log_softmax_rows(out, s, 2, 4);
    for (size_t i = 0; i < 4; i++) bad += near(out[i], -log(4.0), 1e-15);
    bad += near(out[4], -log(2.0), 1e-12) + near(out[5], -2e4 - log(2.0), 1e-9);
    bad += near(out[6], 3 - 1e4 - log(2.0), 1e-9);
    static const double t[12] = {1, NAN, 3, NAN, 2, 5, 5, 1,
                                 -INFINITY, -INFINITY, -INFINITY, -INFINITY};
    int32_t idx[3];
    ref_argmax_rows(idx, t, 3, 4);
    return bad + (idx[0] != 1) + (idx[1] != 1) + (idx[2] != 0);
}

/* Ignored rows have loss and gradient 0, and the in-place call (dlogits in
 * the logits' buffer) gives the same numbers. Returns the mismatches. */
static int ignored_rows_and_in_place(const fd_problem *p, const double *g)
{
    const size_t N = p->N, V = p->V;
    double *alias = malloc(N * V * sizeof *alias), *lp = malloc(N * sizeof *lp);
    if (!alias || !lp) {
        free(alias), free(lp);
        return 1;
    }
    int bad = 0;
    for (size_t i = 0; i < N * V; i++)
        bad += p->y[i / V] == p->ignore && !(g[i] == 0.0 && p->losses[i / V] == 0.0);
    memcpy(alias, p->x, N * V * sizeof *alias);
    ref_cross_entropy(lp, alias, alias, p->y, N, V, p->ls, p->ignore, p->grad_scale);
    bad += memcmp(alias, g, N * V * sizeof *g) != 0;
    bad += memcmp(lp, p->losses, N * sizeof *lp) != 0;
    free(alias), free(lp);
    return bad;
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
            const int rules = ignored_rows_and_in_place(&p, g);
            if (rules) fprintf(stderr, "cross_entropy reference: ignored rows or in place wrong\n");
            bad += rules;
            bad += conf_fd_check("cross_entropy dlogits", p.x, N * V, g, fd_loss, &p);
            free(buf), free(y);
        }
    const int by_hand = matches_pytorch() + extreme_rows_and_helpers_by_hand();
    if (by_hand) fprintf(stderr, "loss reference: %d mismatches of its known values\n", by_hand);
    return bad + by_hand;
}

CONF_OP(loss) = {"loss", "cross_entropy log_softmax_rows argmax_rows",
    "cf_cross_entropy, cf_log_softmax_rows, cf_argmax_rows",
    "ref_cross_entropy, ref_log_softmax_rows, ref_argmax_rows (this file)",
    "forward rule for the losses and log_softmax_rows; gradient rule for dlogits; exact for "
    "argmax_rows and reruns",
    loss_check, loss_gradcheck, NULL, true};
