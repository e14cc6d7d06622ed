/* Rounding fp32 to a 16-bit format's values in fp32 containers
 * (cf_round_storage, cl/cast.cl's round_storage): what every op does to its
 * activations in a bf16 or fp16 run (docs/ARCHITECTURE.md "Half
 * precision"). Described once here: the cases and the descriptor; the
 * reference is runtime/check/reference/ref_half.c (rounding in double).
 *
 * Tolerance: none. Each element must equal value(round(x)) bit for bit (the
 * sign of zero included), NaN giving NaN, both out of place and in place.
 *
 * Gradient: none of its own. The passes round values as they are stored,
 * and backward treats the rounding as the identity (the straight-through
 * rule of cf_cast_backward, checked with the cast op); the rounded
 * gradients themselves go through this same kernel. */
#include "conf_block.h"
#include "conformance.h"
#include "ops.h"
#include "ref_half.h"
#include "ref_random.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static float f32_of(uint32_t u)
{
    float v;
    memcpy(&v, &u, sizeof v);
    return v;
}

/* fp32 patterns where rounding goes wrong most easily, for both formats:
 * zeros, infinities, NaNs, bf16's ties and its overflow tie, fp16's largest
 * value, its overflow tie, its smallest normal and its subnormal ties. */
static const uint32_t edges[] = {
    0x00000000u, 0x80000000u, 0x7F800000u, 0xFF800000u, 0x7FC00000u, 0xFF800001u,
    0x3F800000u, 0x3F808000u, 0x3F818000u, 0x3F808001u, 0x7F7F8000u, 0x7F7F7FFFu,
    0x00008000u, 0x007FC000u, 0x477FE000u, 0x477FEFFFu, 0x477FF000u, 0xC77FF000u,
    0x38800000u, 0x387FFFFFu, 0x387FE000u, 0x33800000u, 0x33000000u, 0xB3000000u,
    0x33000001u, 0x33C00000u, 0x34200000u, 0x3F801000u, 0x3F803000u, 0x00000001u,
};

/* n inputs: the edges, then random bit patterns and values spread over the
 * format's range (subnormals included), in turns. */
static void fill(float *x, size_t n, ref_half_format f, ref_rng *r)
{
    const size_t ne = sizeof edges / sizeof *edges;
    for (size_t i = 0; i < n; i++) {
        if (i < ne) x[i] = f32_of(edges[i]);
        else if (i % 2) x[i] = f32_of((uint32_t)ref_rng_next(r));
        else {
            const double e = f == REF_BF16 ? ref_rng_uniform(r, -133, 127)
                                           : ref_rng_uniform(r, -26, 17);
            x[i] = (float)(ldexp(1.0, (int)floor(e)) * ref_rng_uniform(r, -1.999, 1.999));
        }
    }
}

typedef struct {
    ref_half_format f;
    size_t n;
    uint64_t seed;
} round_case;

static clformer_status run_case(cf_ctx *ctx, const round_case *c, conf_sink sink, void *user)
{
    const size_t n = c->n;
    const clformer_precision p = c->f == REF_BF16 ? CLFORMER_BF16 : CLFORMER_FP16;
    conf_block b = {0};
    const size_t X = conf_block_add(&b, n), Y = conf_block_add(&b, n),
                 Z = conf_block_add(&b, n); /* Z: rounded in place */
    float *x = malloc(n * sizeof *x);
    double *ref = malloc(n * sizeof *ref);
    clformer_status st = x && ref ? CLFORMER_OK
                                  : cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory");
    if (st || (st = conf_block_create(ctx, &b))) goto done;
    ref_rng r = ref_rng_new(c->seed);
    fill(x, n, c->f, &r);
    for (size_t i = 0; i < n; i++) ref[i] = ref_half_value(ref_half_round(x[i], c->f), c->f);
    memcpy(conf_block_init(&b, X), x, n * sizeof *x);
    memcpy(conf_block_init(&b, Z), x, n * sizeof *x);
    conf_block_init_fill(&b, Y, NAN);
    if ((st = conf_block_upload(&b))) goto done;
    const cf_view vx = conf_block_view(&b, X), vy = conf_block_view(&b, Y),
                  vz = conf_block_view(&b, Z);
    const double t0 = conf_now_ms();
    if ((st = cf_round_storage(ctx, vy, vx, n, p)) || (st = cf_finish(ctx))) goto done;
    const double ms = conf_now_ms() - t0;
    if ((st = cf_round_storage(ctx, vz, vz, n, p)) || (st = conf_block_read(&b))) goto done;
    char shape[96], op[64];
    snprintf(shape, sizeof shape, "n=%zu", n);
    snprintf(op, sizeof op, "round_to_%s", clformer_precision_name(p));
    ref_cmp cmp = conf_guarded(ref_compare_exact(conf_block_out(&b, Y), ref, n), &b);
    if (cmp.pass && !conf_block_unchanged(&b, X)) cmp.pass = false, cmp.why = "changed its input";
    conf_emit(sink, user, op, shape, cmp, ms);
    snprintf(op, sizeof op, "round_to_%s_in_place", clformer_precision_name(p));
    conf_emit(sink, user, op, shape,
              conf_guarded(ref_compare_exact(conf_block_out(&b, Z), ref, n), &b), 0.0);
done:
    conf_block_free(&b);
    free(x), free(ref);
    return st;
}

static clformer_status round_check(cf_ctx *ctx, bool quick, conf_sink sink, void *user)
{
    static const round_case small[] = {{REF_BF16, 1031, 11}, {REF_F16, 1031, 12}},
                            full[] = {{REF_BF16, 300007, 13}, {REF_F16, 300007, 14}};
    CONF_RUN_CASES(run_case, small, full, quick, ctx, sink, user);
    return CLFORMER_OK;
}

CONF_OP(round) = {"round",
                  "round_storage",
                  "cf_round_storage, cf_round_activation",
                  "ref_half_round, ref_half_value (runtime/check/reference/ref_half.c)",
                  "bit-exact: every element equals value(round(x)) (NaN: any NaN), out of "
                  "place and in place",
                  round_check,
                  NULL,
                  "no gradient of its own: backward treats storage rounding as the identity "
                  "(cf_cast_backward's straight-through rule, gradchecked by the cast op); "
                  "tests/device/test_precision.c checks the passes round what they store"};
