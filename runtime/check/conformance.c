/* The table of conformance checks and shared helpers. */
#include "conformance.h"
#include "clock.h"
#include "half.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The kernels no op's check launches: the shared reductions (reached through
 * the ops that use them), tensor fills and copies, and translation's. */
CONF_OP(reduce) = {"reduce", "reduce_partial reduce_final colsum_partial colsum_final colsum_whole",
                   "cf_reduce_sum, cf_colsum (reduce.h)", NULL, NULL, NULL, NULL,
                   "test_runtime (against sums in double); the linear and layernorm checks"};
CONF_OP(tensor) = {"tensor", "fill_u32 copy_u32", "cf_fill, cf_copy (buffer.h)", NULL, NULL,
                   NULL, NULL, "test_runtime (bit-exact)"};
CONF_OP(beam) = {"beam", "beam_tokens beam_gather_cache beam_shared_prefix beam_reorder_caches "
                          "beam_candidates beam_select",
                 "cf_beam_* (ops_beam.h)", NULL, NULL, NULL, NULL,
                 "test_beam (against the host beam search)"};
CONF_OP(decode) = {"decode", "set_column gather_rows", "runtime/decode/decode.c", NULL, NULL,
                   NULL, NULL, "test_session and test_model (decoding against the full forward), test_beam (gather_rows)"};

size_t conf_op_check_count(void)
{
    size_t n = 0;
    for (size_t i = 0; conf_ops[i]; i++) n += conf_ops[i]->check != NULL;
    return n;
}

const conf_op *conf_op_check(size_t index)
{
    for (size_t i = 0; conf_ops[i]; i++)
        if (conf_ops[i]->check && index-- == 0) return conf_ops[i];
    return NULL;
}

int conf_fd_check(const char *what, double *x, size_t n, const double *analytic,
                  double (*loss)(void *user), void *user)
{
    const double eps = 1e-6, atol = 1e-5, rtol = 1e-3;
    int bad = 0;
    for (size_t i = 0; i < n; i++) {
        const double saved = x[i];
        x[i] = saved + eps;
        const double lp = loss(user);
        x[i] = saved - eps;
        const double lm = loss(user);
        x[i] = saved;
        const double fd = (lp - lm) / (2.0 * eps);
        if (!(fabs(fd - analytic[i]) <= atol + rtol * fabs(fd)) && bad++ < 5)
            fprintf(stderr, "%s[%zu]: analytic %.10g, finite difference %.10g\n", what, i,
                    analytic[i], fd);
    }
    return bad;
}

double conf_now_ms(void) { return 1e3 * cf_now_s(); }

double *conf_widen(const float *x, size_t n)
{
    double *d = malloc((n ? n : 1) * sizeof *d);
    for (size_t i = 0; d && i < n; i++) d[i] = x[i];
    return d;
}

bool conf_warm_up(const cf_ctx *ctx) { return ctx->device_profile.timings_meaningful; }

void conf_emit(conf_sink sink, void *user, const char *op, const char *shape, ref_cmp cmp,
               double ms)
{
    conf_result r;
    memset(&r, 0, sizeof r);
    snprintf(r.op, sizeof r.op, "%s", op);
    snprintf(r.shape, sizeof r.shape, "%s", shape);
    r.cmp = cmp;
    r.ms = ms;
    sink(user, &r);
}

ref_cmp conf_worse(ref_cmp a, ref_cmp b)
{
    if (!a.pass || !b.pass) return a.pass ? b : a;
    const double ra = fabs(a.worst_value - a.worst_ref) / fmax(a.worst_bound, 1e-30);
    const double rb = fabs(b.worst_value - b.worst_ref) / fmax(b.worst_bound, 1e-30);
    return rb > ra ? b : a;
}

float conf_round_value(const cf_ctx *ctx, float x)
{
    switch (ctx->precision) {
    case CLFORMER_BF16: return cf_f32_from_bf16(cf_bf16_from_f32(x));
    case CLFORMER_FP16: return cf_f32_from_f16(cf_f16_from_f32(x));
    default: return x;
    }
}

void conf_round(const cf_ctx *ctx, float *x, size_t n)
{
    if (ctx->precision == CLFORMER_FP32) return;
    for (size_t i = 0; i < n; i++) x[i] = conf_round_value(ctx, x[i]);
}

double conf_unit_roundoff(const cf_ctx *ctx) { return ref_format_unit_roundoff((int)ctx->precision); }

ref_cmp conf_compare_stored(const cf_ctx *ctx, const float *y, const double *ref, size_t n,
                            ref_rule rule, const double *gemm_bound, const double *extra)
{
    if (ctx->precision != CLFORMER_FP32)
        return ref_compare_stored(y, ref, n, (int)ctx->precision, rule, gemm_bound, extra);
    switch (rule) {
    case REF_RULE_FORWARD: return ref_compare_forward(y, ref, n);
    case REF_RULE_GRAD: return ref_compare_grad(y, ref, n);
    default: return ref_compare_gemm(y, ref, gemm_bound, n);
    }
}
