/*
 * Rotary position embeddings (cl/rope.cl): the host side of cf_rope_*
 * (runtime/ops/ops.h), the table of cosines and sines and the launchers. Its
 * descriptor, reference and conformance cases are runtime/check/conf_rope.c.
 *
 * The angles follow transformers 4.36's LlamaRotaryEmbedding and its linear
 * and dynamic-NTK subclasses in fp32, operation by operation, since a
 * position times a frequency is where fp32 loses most (at position 4096 one
 * ulp of the angle is 5e-4): matching its roundings keeps long sequences at
 * parity. A table, not sines in the kernel: it is built once per model, and
 * each row's values are read by every head (measured: ops_rope.c's commit).
 */
#include "launch.h"
#include "ops.h"
#include "program.h"

#include <limits.h>
#include <math.h>
#include <stdlib.h>

clformer_status cf_rope_check_config(const cf_rope_config *c)
{
    if (!c) return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT, "rope: no configuration");
    if (c->dh == 0 || c->dh % 2 || c->dh > INT_MAX)
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                       "rope: head size %zu must be even and positive (pairs i, i + dh/2 turn)",
                       c->dh);
    if (!(c->theta > 0.0) || !isfinite(c->theta) || !((float)c->theta < INFINITY))
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                       "rope: rope_theta %g must be a positive finite number (10000 is usual)",
                       c->theta);
    if (c->scaling != CF_ROPE_PLAIN && c->scaling != CF_ROPE_LINEAR &&
        c->scaling != CF_ROPE_DYNAMIC)
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT, "rope: unknown scaling %d",
                       (int)c->scaling);
    if (c->scaling != CF_ROPE_PLAIN && !(c->factor > 1.0 && isfinite(c->factor)))
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                       "rope: rope_scaling factor %g must be a finite number > 1", c->factor);
    if (c->scaling == CF_ROPE_DYNAMIC && (c->max_positions == 0 || c->dh < 4))
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                       "rope: dynamic scaling needs max_position_embeddings > 0 and a head size "
                       "of at least 4 (its exponent is dh/(dh-2)); got %zu and %zu",
                       c->max_positions, c->dh);
    return CLFORMER_OK;
}

/* transformers: base' = base * (factor*L/M - (factor-1))^(dh/(dh-2)) in
 * Python floats when L > M; then 1 / (base' ** (arange(0, dh, 2).float() /
 * dh)), a float32 tensor: the base rounded to fp32, the exponent an fp32
 * quotient, the power and the reciprocal fp32 results. */
void cf_rope_frequencies(float *inv_freq, const cf_rope_config *c, size_t seq_len)
{
    double base = c->theta;
    if (c->scaling == CF_ROPE_DYNAMIC && seq_len > c->max_positions)
        base *= pow(c->factor * (double)seq_len / (double)c->max_positions - (c->factor - 1.0),
                    (double)c->dh / (double)(c->dh - 2));
    const float base32 = (float)base;
    for (size_t i = 0; i < c->dh / 2; i++) {
        const float e = (float)(2 * i) / (float)c->dh;
        inv_freq[i] = 1.0f / (float)pow(base32, e);
    }
}

/* transformers: t = arange(L).float() (/ factor, fp32, for linear), then
 * outer(t, inv_freq) in fp32. */
float cf_rope_angle(const float *inv_freq, const cf_rope_config *c, size_t position, size_t i)
{
    float p = (float)position;
    if (c->scaling == CF_ROPE_LINEAR) p = p / (float)c->factor;
    return p * inv_freq[i];
}

clformer_status cf_rope_table(float *table, size_t rows, const cf_rope_config *c, size_t seq_len)
{
    CF_TRY(cf_rope_check_config(c));
    const size_t half = c->dh / 2;
    float *inv = malloc(half * sizeof *inv);
    if (!inv) return cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "rope: out of host memory");
    cf_rope_frequencies(inv, c, seq_len);
    for (size_t p = 0; p < rows; p++)
        for (size_t i = 0; i < half; i++) {
            const double a = cf_rope_angle(inv, c, p, i);
            table[p * c->dh + i] = (float)cos(a);
            table[p * c->dh + half + i] = (float)sin(a);
        }
    free(inv);
    return CLFORMER_OK;
}

/* ------------------------------------------------------------------------- */
/* Launchers                                                                 */
/* ------------------------------------------------------------------------- */

/* One past the last element a layout touches. */
static size_t extent(const cf_rope_shape *s, cf_rope_strides st)
{
    return (s->B - 1) * st.b + (s->H - 1) * st.h + (s->T - 1) * st.t + s->dh;
}

/* Whether distinct (b, h, t) rows of the layout are disjoint: with the
 * dimensions sorted by stride, each stride clears everything inside it. */
static bool rows_disjoint(const cf_rope_shape *s, cf_rope_strides st)
{
    size_t stride[3] = {st.b, st.h, st.t}, count[3] = {s->B, s->H, s->T};
    for (int i = 1; i < 3; i++) /* insertion sort by stride */
        for (int j = i; j > 0 && stride[j] < stride[j - 1]; j--) {
            size_t t = stride[j];
            stride[j] = stride[j - 1], stride[j - 1] = t;
            t = count[j], count[j] = count[j - 1], count[j - 1] = t;
        }
    size_t inner = s->dh;
    for (int i = 0; i < 3; i++) {
        if (count[i] < 2) continue;
        if (stride[i] < inner) return false;
        inner = stride[i] * (count[i] - 1) + inner;
    }
    return true;
}

static bool same_strides(cf_rope_strides a, cf_rope_strides b)
{
    return a.b == b.b && a.h == b.h && a.t == b.t;
}

static clformer_status launch(cf_ctx *ctx, const char *fn, cf_view dst, cf_view src,
                              cf_view table, const cf_rope_shape *s, float sign)
{
    if (!s) return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT, "%s: no shape", fn);
    if (s->B == 0 || s->H == 0 || s->T == 0) return CLFORMER_OK;
    if (!dst.buf || !src.buf || !table.buf)
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT, "%s: every tensor must be a device buffer",
                       fn);
    if (s->dh == 0 || s->dh % 2)
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                       "%s: head size dh=%zu must be even and positive", fn, s->dh);
    if (s->pos0 > s->table_rows || s->T > s->table_rows - s->pos0)
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                       "%s: positions %zu..%zu are past the table's %zu rows; build a longer "
                       "table (cf_rope_table)", fn, s->pos0, s->pos0 + s->T - 1, s->table_rows);
    if (s->B * s->H > INT_MAX / s->T || s->H > INT_MAX || s->dh > INT_MAX ||
        s->table_rows > INT_MAX)
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                       "%s: B*H*T, dh and the table's rows must fit in an int; split the batch",
                       fn);
    if (!rows_disjoint(s, s->dst))
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                       "%s: the output's strides (b %zu, h %zu, t %zu) overlap its own rows of "
                       "dh=%zu", fn, s->dst.b, s->dst.h, s->dst.t, s->dh);
    const bool in_place = dst.off == src.off && same_strides(s->dst, s->src);
    if (dst.buf == src.buf && !in_place && dst.off < src.off + extent(s, s->src) &&
        src.off < dst.off + extent(s, s->dst))
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                       "%s: the output overlaps the input without being it; turn in place "
                       "(same view, same strides) or into separate storage", fn);
    cl_kernel k;
    CF_TRY(cf_kernel_get(ctx, CF_K_ROPE_ROTATE, &k));
    /* CPU devices: one work item per row (PoCL vectorises its loop); GPUs:
     * one per pair, neighbours in a row next to each other. */
    const bool per_row = !ctx->device_profile.gpu_layouts;
    const size_t half = s->dh / 2, rows = s->B * s->H * s->T;
    const size_t local[2] = {per_row ? 1 : ctx->elementwise_wg, 1},
                 global[2] = {per_row ? 1 : half, rows};
    /* reads src and the table's rows in use, writes dst */
    const uint64_t bytes = cf_f32_bytes(2 * rows * s->dh + s->T * s->dh);
    return CF_LAUNCH(ctx, "attention", bytes, k, 2, global, local, CF_VIEW(dst), CF_VIEW(src),
                     CF_VIEW(table), CF_I32(rows), CF_I32(s->T), CF_I32(s->H), CF_I32(half),
                     CF_U64(s->dst.b), CF_U64(s->dst.h), CF_U64(s->dst.t), CF_U64(s->src.b),
                     CF_U64(s->src.h), CF_U64(s->src.t), CF_I32(s->pos0), CF_F32(sign),
                     CF_I32(ctx->precision));
}

clformer_status cf_rope_forward(cf_ctx *ctx, cf_view out, cf_view x, cf_view table,
                                const cf_rope_shape *shape)
{
    return launch(ctx, "cf_rope_forward", out, x, table, shape, 1.0f);
}

clformer_status cf_rope_backward(cf_ctx *ctx, cf_view dx, cf_view dout, cf_view table,
                                 const cf_rope_shape *shape)
{
    return launch(ctx, "cf_rope_backward", dx, dout, table, shape, -1.0f);
}
