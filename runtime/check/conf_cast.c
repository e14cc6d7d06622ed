/* The casts between fp32 and bf16/fp16, described once: the rule for their
 * gradients, the conformance cases and the descriptor. The reference is the
 * 16-bit formats' rounding in double (runtime/check/reference/ref_half.c,
 * shared with the round op and the host's conversions); the kernels
 * cl/cast.cl, the launchers runtime/ops/ops_cast.c.
 *
 * Tolerance: none. A cast has one right answer, so every element must equal
 * the reference bit for bit (zero's sign included): fp32 -> 16 bits as the
 * format's bit pattern, 16 bits -> fp32 as the value. NaN must give NaN: bf16
 * exactly PyTorch's 0x7FC0, fp16 and fp32 any NaN (vstore_half's payload is
 * the device's).
 *
 * Gradient: rounding is piecewise constant, so finite differences of the cast
 * itself say nothing useful. As in PyTorch's autograd for .to(dtype), the
 * gradient of a cast is the cast of the gradient back to the input's type
 * (straight-through: the identity the cast stands for). The device check runs
 * cf_cast_backward against that rule (storing, then adding); the gradcheck
 * below checks the reference's rule against finite differences of the
 * identity, with gradients the format holds exactly.
 *
 * The device also agrees bit for bit with the host's conversions
 * (runtime/core/half.c, which load and export 16-bit safetensors), so a tensor
 * rounded on either side is the same tensor; and bad arguments are errors
 * naming the fix (cast_arguments). */
#include "conf_block.h"
#include "conformance.h"
#include "half.h"
#include "ops.h"
#include "ref_half.h"
#include "ref_random.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* --- the rule for gradients, checked on the reference ------------------------ */

/* dx = value(round(dout)): the gradient of cast(x) in the reference. */
static void ref_cast_backward(double *dx, const double *dout, size_t n, ref_half_format f)
{
    for (size_t i = 0; i < n; i++) dx[i] = ref_half_value(ref_half_round(dout[i], f), f);
}

typedef struct {
    size_t n;
    const double *x, *g;
} fd_problem;

/* The identity the cast stands for: loss = sum(x * g). */
static double fd_loss(void *user)
{
    const fd_problem *p = user;
    double s = 0.0;
    for (size_t i = 0; i < p->n; i++) s += p->x[i] * p->g[i];
    return s;
}

static int cast_gradcheck(void)
{
    enum { N = 33 };
    double x[N], g[N], dx[N];
    int bad = 0;
    for (int f = 0; f < 2; f++) {
        const ref_half_format fmt = f ? REF_F16 : REF_BF16;
        ref_rng r = ref_rng_new(91 + (uint64_t)f);
        for (size_t i = 0; i < N; i++) {
            x[i] = ref_rng_uniform(&r, -4, 4);
            /* gradients the format holds exactly, from 2^-12 to 2^4 in size */
            g[i] = ref_half_value(ref_half_round(ref_rng_uniform(&r, -16, 16), fmt), fmt);
        }
        g[0] = ldexp(1.0, -12), g[1] = 0.0;
        ref_cast_backward(dx, g, N, fmt);
        fd_problem p = {N, x, g};
        bad += conf_fd_check(f ? "cast fp16 dx" : "cast bf16 dx", x, N, dx, fd_loss, &p);
    }
    return bad;
}

/* --- inputs ---------------------------------------------------------------- */

static float f32_of(uint32_t u)
{
    float v;
    memcpy(&v, &u, sizeof v);
    return v;
}

/* fp32 bit patterns where rounding to the format is easy to get wrong. */
static const uint32_t common_edges[] = {
    0x00000000u, 0x80000000u, 0x7F800000u, 0xFF800000u, /* zeros, infinities */
    0x7FC00000u, 0xFFC00000u, 0x7F800001u, 0xFF800001u, /* NaN, signalling NaN: not inf */
    0x7FFFFFFFu, 0x3F800000u, 0xBF800000u,             /* NaN, 1, -1 */
    0x7F7FFFFFu, 0xFF7FFFFFu, 0x00800000u, 0x80800000u, /* fp32 max, smallest normal */
    0x00000001u, 0x80000001u, 0x007FFFFFu, 0x807FFFFFu, /* fp32 subnormals */
};
static const uint32_t bf16_edges[] = {
    0x3F808000u, 0xBF808000u, /* 1 + 2^-8: a tie, to even (1) */
    0x3F818000u,              /* a tie whose lower neighbour is odd: up */
    0x3F808001u, 0x3F807FFFu, /* just above, just below a tie */
    0x7F7F8000u, 0xFF7F8000u, /* the tie above the largest bf16: infinity */
    0x7F7F7FFFu,              /* just below it: the largest bf16 */
    0x00008000u, 0x00018000u, /* subnormal ties: to 0, to 2 ulps */
    0x00007FFFu, 0x007FC000u, /* rounds to 0; carries into the smallest normal */
};
static const uint32_t f16_edges[] = {
    0x477FE000u, 0xC77FE000u, /* 65504, the largest fp16 */
    0x477FEFFFu, 0x477FF000u, /* just below 65520 (to 65504), 65520 (to infinity) */
    0x47800000u, 0x38800000u, /* 65536, 2^-14 (smallest normal) */
    0x387FFFFFu, 0x387FE000u, /* just below it: to it; the tie below it: to it (even) */
    0x33800000u, 0x33000000u, /* 2^-24 (smallest subnormal), 2^-25 (tie: to 0) */
    0xB3000000u, 0x33000001u, /* -2^-25 (to -0), just above 2^-25 (to 2^-24) */
    0x33C00000u, 0x34200000u, /* 1.5 and 2.5 * 2^-24: ties to 2 and to 2 */
    0x3F801000u, 0x3F803000u, /* 1 + 2^-11 (tie: to 1), 1 + 3 2^-11 (tie: up) */
    0x32FFFFFFu, 0x33FFFFFFu, /* just below 2^-25 (to 0), just below 2^-23 */
};

/* n fp32 inputs for the cast to format f: the edges, then, in turns, random
 * bit patterns (every exponent, NaN payloads), exact ties between two
 * neighbours of the format, and values spread over the format's range. */
static void fill_f32(float *x, size_t n, ref_half_format f, ref_rng *r)
{
    const uint32_t *own = f == REF_BF16 ? bf16_edges : f16_edges;
    const size_t n_common = sizeof common_edges / sizeof *common_edges,
                 n_own = f == REF_BF16 ? sizeof bf16_edges / sizeof *bf16_edges
                                       : sizeof f16_edges / sizeof *f16_edges;
    for (size_t i = 0; i < n; i++) {
        if (i < n_common) x[i] = f32_of(common_edges[i]);
        else if (i < n_common + n_own) x[i] = f32_of(own[i - n_common]);
        else if (i % 3 == 0) x[i] = f32_of((uint32_t)ref_rng_next(r));
        else if (i % 3 == 1) {
            /* the midpoint of a finite pattern and the next one up (exact in fp32) */
            uint16_t h = (uint16_t)ref_rng_next(r);
            if ((h & 0x7FFF) >= (f == REF_BF16 ? 0x7F7F : 0x7BFF)) h &= 0x3FFF;
            const double a = ref_half_value(h, f), b = ref_half_value((uint16_t)(h + 1), f);
            x[i] = (float)(0.5 * (a + b));
        } else {
            const double e = f == REF_BF16 ? ref_rng_uniform(r, -133, 127)
                                           : ref_rng_uniform(r, -26, 17);
            x[i] = (float)(ldexp(1.0, (int)floor(e)) * ref_rng_uniform(r, -1.999, 1.999));
        }
    }
}

/* n 16-bit patterns: all 65536 in order when n is 65536, else every
 * 65536/n-th with the specials (zeros, infinities, NaNs, extremes) first. */
static void fill_bits(uint16_t *h, size_t n, ref_half_format f)
{
    const uint16_t inf = f == REF_BF16 ? 0x7F80 : 0x7C00;
    const uint16_t specials[] = {0x0000, 0x8000, inf, (uint16_t)(inf | 0x8000), (uint16_t)(inf + 1),
                                 (uint16_t)(inf | 0x8000 | 0x40), 0x0001, 0x8001,
                                 (uint16_t)(inf - 1), (uint16_t)((inf - 1) | 0x8000)};
    const size_t ns = sizeof specials / sizeof *specials;
    for (size_t i = 0; i < n; i++)
        h[i] = n == 65536 ? (uint16_t)i : i < ns ? specials[i] : (uint16_t)(i * 65536 / n);
}

/* dout in the format without subnormals (accumulating adds in float, where a
 * device may flush subnormals to zero): random normal values, inf, NaN, max. */
static void fill_grad_bits(uint16_t *h, size_t n, ref_half_format f, ref_rng *r)
{
    const uint16_t inf = f == REF_BF16 ? 0x7F80 : 0x7C00;
    for (size_t i = 0; i < n; i++) {
        uint16_t v = (uint16_t)ref_rng_next(r);
        if ((v & 0x7FFF) < (f == REF_BF16 ? 0x0080 : 0x0400)) v |= 0x3C00; /* no subnormal */
        h[i] = i == 0 ? inf : i == 1 ? (uint16_t)(inf | 0x8000) : i == 2 ? (uint16_t)(inf + 3)
             : i == 3 ? (uint16_t)(inf - 1) : v;
    }
}

/* --- the conformance cases ----------------------------------------------------- */

typedef struct {
    ref_half_format f;
    size_t n;
    uint64_t seed;
} cast_case;

/* A 16-bit tensor of n elements in a conf_block: ceil(n / 2) floats. */
static size_t add16(conf_block *b, size_t n) { return conf_block_add(b, (n + 1) / 2); }
static cf_view view16(const conf_block *b, size_t t)
{
    const cf_view v = conf_block_view(b, t);
    return cf_view_at(v.buf, 2 * v.off);
}
static void put16(conf_block *b, size_t t, const uint16_t *h, size_t n, uint16_t pad)
{
    float *dst = conf_block_init(b, t);
    memcpy(dst, h, n * 2);
    if (n % 2) memcpy((char *)dst + n * 2, &pad, 2);
}
/* Tensor t as read; false when its padding element (odd n) changed. */
static bool get16(const conf_block *b, size_t t, uint16_t *h, size_t n, uint16_t pad)
{
    const float *src = conf_block_out(b, t);
    memcpy(h, src, n * 2);
    uint16_t tail = pad;
    if (n % 2) memcpy(&tail, (const char *)src + n * 2, 2);
    return tail == pad;
}

static ref_cmp judged(ref_cmp c, const conf_block *b, bool pad_ok, bool inputs_ok)
{
    c = conf_guarded(c, b);
    if (c.pass && !pad_ok) c.pass = false, c.why = "wrote past the end of a 16-bit tensor";
    if (c.pass && !inputs_ok) c.pass = false, c.why = "changed an input";
    return c;
}

enum { JUNK16 = 0xBEEF };

/* c, failed when the device's 16-bit patterns (dev16, from x) or its fp32
 * values (dev32, from h) differ from the host's conversions (runtime/core/
 * half.c); fp16 NaN: any NaN on both sides (the payload is the device's). */
static ref_cmp host_agrees(ref_cmp c, ref_half_format f, const float *x, const uint16_t *dev16,
                           const uint16_t *h, const float *dev32, size_t n)
{
    uint16_t *host16 = malloc(n * 2);
    float *host32 = malloc(n * sizeof *host32);
    bool same = host16 && host32;
    if (same && dev16) {
        if (f == REF_BF16) cf_bf16_from_f32_n(host16, x, n);
        else cf_f16_from_f32_n(host16, x, n);
        for (size_t i = 0; same && i < n; i++)
            same = dev16[i] == host16[i] ||
                   (f == REF_F16 && (dev16[i] & 0x7FFF) > 0x7C00 && (host16[i] & 0x7FFF) > 0x7C00);
    }
    if (same && dev32) {
        if (f == REF_BF16) cf_f32_from_bf16_n(host32, h, n);
        else cf_f32_from_f16_n(host32, h, n);
        for (size_t i = 0; same && i < n; i++)
            same = !memcmp(&dev32[i], &host32[i], 4) ||
                   (f == REF_F16 && isnan(dev32[i]) && isnan(host32[i]));
    }
    free(host16), free(host32);
    if (c.pass && !same) c.pass = false, c.why = "differs from the host's conversion (half.c)";
    return c;
}

static clformer_status run_case(cf_ctx *ctx, const cast_case *c, conf_sink sink, void *user)
{
    const size_t n = c->n;
    const ref_half_format f = c->f;
    const clformer_precision dt = f == REF_BF16 ? CLFORMER_BF16 : CLFORMER_FP16;
    const char *name = f == REF_BF16 ? "bf16" : "f16"; /* as the kernels */
    const uint16_t nan_above = f == REF_BF16 ? 0 : 0x7C00; /* bf16: exactly 0x7FC0 */
    conf_block b = {0};
    const size_t X = conf_block_add(&b, n), Y16 = add16(&b, n), H = add16(&b, n),
                 Y32 = conf_block_add(&b, n), DOUT16 = add16(&b, n),
                 DX32 = conf_block_add(&b, n), DX16 = add16(&b, n);
    uint16_t *h = malloc(n * 2), *ref16 = malloc(n * 2), *got16 = malloc(n * 2),
             *dout16 = malloc(n * 2);
    double *ref = malloc(n * sizeof *ref);
    float *x = malloc(n * sizeof *x);
    clformer_status st = CLFORMER_OK;
    if (!h || !ref16 || !got16 || !dout16 || !ref || !x) {
        st = cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory");
        goto done;
    }
    if ((st = conf_block_create(ctx, &b))) goto done;
    ref_rng r = ref_rng_new(c->seed);
    fill_f32(x, n, f, &r);
    memcpy(conf_block_init(&b, X), x, n * sizeof *x);
    fill_bits(h, n, f);
    put16(&b, H, h, n, JUNK16);
    fill_grad_bits(dout16, n, f, &r);
    put16(&b, DOUT16, dout16, n, JUNK16);
    for (size_t i = 0; i < n; i++) got16[i] = JUNK16;
    put16(&b, Y16, got16, n, JUNK16); /* outputs: junk that must be overwritten */
    put16(&b, DX16, got16, n, JUNK16);
    conf_block_init_fill(&b, Y32, NAN);
    conf_block_init_fill(&b, DX32, 1e30f);
    const cf_view v_x = conf_block_view(&b, X), v_y16 = view16(&b, Y16), v_h = view16(&b, H),
                  v_y32 = conf_block_view(&b, Y32), v_dout16 = view16(&b, DOUT16),
                  v_dx32 = conf_block_view(&b, DX32), v_dx16 = view16(&b, DX16);
    char shape[96], op[64];
    snprintf(shape, sizeof shape, "n=%zu", n);
    if ((st = conf_block_upload(&b))) goto done;

    /* fp32 -> 16 bits */
    double t0 = conf_now_ms();
    if ((st = cf_cast(ctx, v_y16, dt, v_x, CLFORMER_FP32, n)) || (st = cf_finish(ctx)))
        goto done;
    double ms = conf_now_ms() - t0;
    if ((st = conf_block_read(&b))) goto done;
    bool pad_ok = get16(&b, Y16, got16, n, JUNK16);
    for (size_t i = 0; i < n; i++) ref16[i] = ref_half_round(x[i], f);
    snprintf(op, sizeof op, "cast_to_%s", name);
    conf_emit(sink, user, op, shape,
              host_agrees(judged(ref_compare_bits16(got16, ref16, n, nan_above), &b, pad_ok,
                                 conf_block_unchanged(&b, X)),
                          f, x, got16, NULL, NULL, n),
              ms);

    /* 16 bits -> fp32 */
    t0 = conf_now_ms();
    if ((st = cf_cast(ctx, v_y32, CLFORMER_FP32, v_h, dt, n)) || (st = cf_finish(ctx)))
        goto done;
    ms = conf_now_ms() - t0;
    if ((st = conf_block_read(&b))) goto done;
    for (size_t i = 0; i < n; i++) ref[i] = ref_half_value(h[i], f);
    snprintf(op, sizeof op, "cast_from_%s", name);
    conf_emit(sink, user, op, shape,
              host_agrees(judged(ref_compare_exact(conf_block_out(&b, Y32), ref, n), &b,
                                 get16(&b, H, got16, n, JUNK16), conf_block_unchanged(&b, H)),
                          f, NULL, NULL, h, conf_block_out(&b, Y32), n),
              ms);

    /* the gradient of fp32 -> 16 bits: dx (fp32) = dout, stored, then added */
    for (int pass = 0; pass < 2; pass++) {
        const bool acc = pass == 1;
        t0 = conf_now_ms();
        if ((st = cf_cast_backward(ctx, v_dx32, CLFORMER_FP32, v_dout16, dt, n, acc)) ||
            (st = cf_finish(ctx)))
            goto done;
        ms = conf_now_ms() - t0;
        if ((st = conf_block_read(&b))) goto done;
        for (size_t i = 0; i < n; i++) {
            const double v = ref_half_value(dout16[i], f) * (acc ? 2.0 : 1.0);
            ref[i] = fabs(v) >= 0x1p128 ? copysign(INFINITY, v) : v; /* exact in fp32 */
        }
        snprintf(op, sizeof op, "cast_to_%s_backward%s", name, acc ? "_accumulate" : "");
        conf_emit(sink, user, op, shape,
                  judged(ref_compare_exact(conf_block_out(&b, DX32), ref, n), &b,
                         get16(&b, DOUT16, got16, n, JUNK16), conf_block_unchanged(&b, DOUT16)),
                  ms);
    }

    /* the gradient of 16 bits -> fp32: dx (16 bits) = dout rounded (x as dout) */
    t0 = conf_now_ms();
    if ((st = cf_cast_backward(ctx, v_dx16, dt, v_x, CLFORMER_FP32, n, false)) ||
        (st = cf_finish(ctx)))
        goto done;
    ms = conf_now_ms() - t0;
    if ((st = conf_block_read(&b))) goto done;
    pad_ok = get16(&b, DX16, got16, n, JUNK16);
    snprintf(op, sizeof op, "cast_from_%s_backward", name);
    conf_emit(sink, user, op, shape,
              judged(ref_compare_bits16(got16, ref16, n, nan_above), &b, pad_ok,
                     conf_block_unchanged(&b, X)),
              ms);
done:
    conf_block_free(&b);
    free(h), free(ref16), free(got16), free(dout16), free(ref), free(x);
    return st;
}

/* One bad call: refused as an invalid argument whose message holds `says`. */
static bool refused(clformer_status st, const char *says)
{
    return st == CLFORMER_ERR_INVALID_ARGUMENT && (!says || strstr(clformer_last_error(), says));
}

/* Bad arguments are errors naming the fix, before any launch; n = 0 is a no-op. */
static clformer_status run_arguments(cf_ctx *ctx, conf_sink sink, void *user)
{
    conf_block b = {0};
    const size_t A = conf_block_add(&b, 16), B = conf_block_add(&b, 16);
    clformer_status st = conf_block_create(ctx, &b);
    if (st || (st = conf_block_upload(&b))) goto done;
    const cf_view a = conf_block_view(&b, A), v = conf_block_view(&b, B);
    const char *bad = NULL;
    if (!refused(cf_cast(ctx, a, CLFORMER_FP32, v, CLFORMER_FP32, 4), "no cast from fp32 to fp32"))
        bad = "fp32 to fp32 not refused";
    else if (!refused(cf_cast(ctx, a, CLFORMER_BF16, v, CLFORMER_FP16, 4), "one side must be fp32"))
        bad = "bf16 to fp16 not refused";
    else if (!refused(cf_cast(ctx, a, (clformer_precision)9, v, CLFORMER_FP32, 4), NULL))
        bad = "an unknown precision not refused";
    else if (!refused(cf_cast_backward(ctx, a, CLFORMER_BF16, v, CLFORMER_FP32, 4, true),
                      "add in fp32 and cast"))
        bad = "accumulating into bf16 not refused";
    else if (!refused(cf_cast(ctx, cf_view_at(NULL, 0), CLFORMER_BF16, v, CLFORMER_FP32, 4), NULL))
        bad = "a NULL buffer not refused";
    else if ((st = cf_cast(ctx, a, CLFORMER_BF16, v, CLFORMER_FP32, 0)) || (st = cf_finish(ctx)) ||
             (st = conf_block_read(&b)))
        goto done;
    conf_emit(sink, user, "cast_arguments", "bad dtypes, NULL, n=0", conf_block_refusals(&b, bad),
              0.0);
done:
    conf_block_free(&b);
    return st;
}

/* quick (simulators): odd sizes with the edges and a sample of the 16-bit
 * patterns; else every 16-bit pattern, and many random inputs */
static clformer_status cast_check(cf_ctx *ctx, bool quick, conf_sink sink, void *user)
{
    static const cast_case small[] = {{REF_BF16, 1, 1}, {REF_F16, 1, 2}, {REF_BF16, 1031, 3},
                                      {REF_F16, 1031, 4}},
                           full[] = {{REF_BF16, 65536, 5}, {REF_F16, 65536, 6},
                                     {REF_BF16, 300007, 7}, {REF_F16, 300007, 8}};
    CONF_RUN_CASES(run_case, small, full, quick, ctx, sink, user);
    return run_arguments(ctx, sink, user);
}

CONF_OP(cast) = {"cast",
                 "cast_f32_to_bf16 cast_bf16_to_f32 cast_f32_to_f16 cast_f16_to_f32",
                 "cf_cast, cf_cast_backward",
                 "ref_half_round, ref_half_value (runtime/check/reference/ref_half.c, shared "
                 "with round and test_half); the host's conversions (runtime/core/half.c)",
                 "bit-exact: every element equals the reference's bits (NaN: bf16 0x7FC0, "
                 "fp16/fp32 any NaN); gradient: the cast back (straight-through), bit-exact",
                 cast_check,
                 cast_gradcheck,
                 NULL};
