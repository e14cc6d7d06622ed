/* docs/TESTING.md's tolerance rules as functions. */
#include "ref_compare.h"

#include <math.h>
#include <string.h>

static void start(ref_cmp *r, double tol_abs, double tol_rel, const char *rule)
{
    *r = (ref_cmp){0};
    r->rule = rule;
    r->tol_abs = tol_abs;
    r->tol_rel = tol_rel;
    r->pass = true;
}

/* Records element i with its allowed bound; keeps the worst ratio err/bound. */
static void visit(ref_cmp *r, size_t i, double y, double ref, double bound, double *worst_ratio)
{
    double err = fabs(y - ref);
    if (err > r->max_abs_err) r->max_abs_err = err;
    double rel = err / fmax(fabs(ref), 1e-30);
    if (rel > r->max_rel_err) r->max_rel_err = rel;
    double ratio = err / bound;
    if (ratio > *worst_ratio || (i == 0 && *worst_ratio == 0.0)) {
        *worst_ratio = ratio;
        r->worst = i;
        r->worst_value = y;
        r->worst_ref = ref;
        r->worst_bound = bound;
    }
    if (err > bound && r->pass) {
        r->pass = false;
        r->why = "element bound";
    }
}

/* NaN/Inf must match in position and kind; returns true when either is non-finite. */
static bool nonfinite(ref_cmp *r, size_t i, double y, double ref)
{
    if (isfinite(y) && isfinite(ref)) return false;
    bool same = (isnan(y) && isnan(ref)) || (isinf(y) && isinf(ref) && (y > 0) == (ref > 0));
    if (!same && r->pass) {
        r->pass = false;
        r->why = "nan/inf mismatch";
        r->worst = i;
        r->worst_value = y;
        r->worst_ref = ref;
        r->max_abs_err = INFINITY;
    }
    return true;
}

ref_cmp ref_compare_forward(const float *y, const double *ref, size_t n)
{
    ref_cmp r;
    double worst = 0.0;
    start(&r, 2e-5, 1e-5, "|y-r| <= 2e-5 + 1e-5|r|");
    for (size_t i = 0; i < n; i++) {
        if (nonfinite(&r, i, y[i], ref[i])) continue;
        visit(&r, i, y[i], ref[i], 2e-5 + 1e-5 * fabs(ref[i]), &worst);
    }
    return r;
}

/* The gradient rule, each element's bound and the NMSE bound widened by
 * extra (may be NULL: none): extra_i, and sum extra^2 / sum r^2. */
static ref_cmp grad_rule(const float *g, const double *ref, size_t n, const double *extra,
                         const char *rule)
{
    ref_cmp r;
    double worst = 0.0, max_ref = 0.0, num = 0.0, den = 0.0, carried = 0.0;
    start(&r, 1e-5, 1e-4, rule);
    for (size_t i = 0; i < n; i++)
        if (isfinite(ref[i])) max_ref = fmax(max_ref, fabs(ref[i]));
    const double bound = 1e-4 * max_ref + 1e-5;
    for (size_t i = 0; i < n; i++) {
        if (nonfinite(&r, i, g[i], ref[i])) continue;
        visit(&r, i, g[i], ref[i], bound + (extra ? extra[i] : 0.0), &worst);
        num += (g[i] - ref[i]) * (g[i] - ref[i]);
        den += ref[i] * ref[i];
        if (extra) carried += extra[i] * extra[i];
    }
    r.nmse = den > 0.0 ? num / den : (num > 0.0 ? INFINITY : 0.0);
    if (r.pass && r.nmse > 1e-7 + (den > 0.0 ? carried / den : 0.0)) {
        r.pass = false;
        r.why = "nmse";
    }
    return r;
}

ref_cmp ref_compare_grad(const float *g, const double *ref, size_t n)
{
    return grad_rule(g, ref, n, NULL, "nmse <= 1e-7, |g-r| <= 1e-4 max|r| + 1e-5");
}

ref_cmp ref_compare_gemm(const float *c, const double *ref, const double *bound, size_t n)
{
    ref_cmp r;
    double worst = 0.0;
    start(&r, 0.0, 1e-5, "|c-r| <= 1e-5 (|A||B|)");
    for (size_t i = 0; i < n; i++) {
        if (nonfinite(&r, i, c[i], ref[i])) continue;
        visit(&r, i, c[i], ref[i], 1e-5 * fmax(bound[i], 1e-30), &worst);
    }
    return r;
}

/* The first mismatch of an exact comparison. */
static void mismatch(ref_cmp *r, size_t i, double y, double ref, const char *why)
{
    if (!r->pass) return;
    r->pass = false;
    r->why = why;
    r->worst = i;
    r->worst_value = y;
    r->worst_ref = ref;
}

ref_cmp ref_compare_exact(const float *y, const double *ref, size_t n)
{
    ref_cmp r;
    start(&r, 0.0, 0.0, "bit-exact (any NaN for NaN)");
    for (size_t i = 0; i < n; i++) {
        const double v = y[i];
        if (isnan(v) || isnan(ref[i])) {
            if (isnan(v) != isnan(ref[i])) mismatch(&r, i, v, ref[i], "nan mismatch");
            continue;
        }
        const double err = isinf(v) || isinf(ref[i]) ? (v == ref[i] ? 0.0 : INFINITY)
                                                     : fabs(v - ref[i]);
        if (err > r.max_abs_err) r.max_abs_err = err;
        if (v != ref[i] || signbit(v) != signbit(ref[i]))
            mismatch(&r, i, v, ref[i], v != ref[i] ? "value differs" : "sign of zero differs");
    }
    return r;
}

ref_cmp ref_compare_bits16(const uint16_t *y, const uint16_t *ref, size_t n, uint16_t nan_above)
{
    ref_cmp r;
    start(&r, 0.0, 0.0, nan_above ? "bit-exact (any NaN for NaN)" : "bit-exact");
    for (size_t i = 0; i < n; i++) {
        if (nan_above && (ref[i] & 0x7FFF) > nan_above) {
            if ((y[i] & 0x7FFF) <= nan_above) mismatch(&r, i, y[i], ref[i], "nan mismatch");
            continue;
        }
        if (y[i] != ref[i]) {
            r.max_abs_err = 1.0; /* in bit patterns: the values are the format's */
            mismatch(&r, i, y[i], ref[i], "bits differ");
        }
    }
    return r;
}

bool ref_is_format_value(float y, int format)
{
    if (!isfinite(y)) return true;
    uint32_t u;
    memcpy(&u, &y, sizeof u);
    if (format == 1) return (u & 0xFFFFu) == 0; /* bf16: the top half of a float */
    if (format != 2) return false;
    const double a = fabs((double)y);
    if (a > 65504.0) return false;
    if (a >= 0x1p-14) return (u & 0x1FFFu) == 0; /* normal fp16: 11 significant bits */
    return a * 0x1p24 == floor(a * 0x1p24);      /* subnormal fp16: multiples of 2^-24 */
}

double ref_format_unit_roundoff(int format)
{
    return format == 1 ? 0x1p-8 : format == 2 ? 0x1p-11 : 0.0;
}

/* The rule in words, per format and rule, with and without a carried rounding. */
static const char *stored_rule(int format, ref_rule rule, bool extra)
{
    static const char *const words[2][3][2] = {
        {{"bf16; 1e-5+1.6e-2|r| + fwd rule", "bf16; 1e-5+1.6e-2|r| + fwd + carried"},
         {"bf16; 1e-5+1.6e-2|r| + grad rule", "bf16; 1e-5+1.6e-2|r| + grad + carried"},
         {"bf16; 1e-5+1.6e-2|r| + 1e-5|A||B|", "bf16; 1e-5+1.6e-2|r| + gemm + carried"}},
        {{"fp16; 1e-5+1e-3|r| + fwd rule", "fp16; 1e-5+1e-3|r| + fwd + carried"},
         {"fp16; 1e-5+1e-3|r| + grad rule", "fp16; 1e-5+1e-3|r| + grad + carried"},
         {"fp16; 1e-5+1e-3|r| + 1e-5|A||B|", "fp16; 1e-5+1e-3|r| + gemm + carried"}}};
    return words[format == 2][rule][extra];
}

ref_cmp ref_compare_stored(const float *y, const double *ref, size_t n, int format, ref_rule rule,
                           const double *gemm_bound, const double *extra)
{
    ref_cmp r;
    const double atol = 1e-5, rtol = format == 2 ? 1e-3 : 1.6e-2;
    double worst = 0.0, max_ref = 0.0, num = 0.0, den = 0.0, carried = 0.0;
    start(&r, atol, rtol, stored_rule(format, rule, extra != NULL));
    if (format != 1 && format != 2) {
        r.pass = false;
        r.why = "no such 16-bit format";
        return r;
    }
    for (size_t i = 0; i < n; i++)
        if (isfinite(ref[i])) max_ref = fmax(max_ref, fabs(ref[i]));
    for (size_t i = 0; i < n; i++) {
        if (!ref_is_format_value(y[i], format)) {
            mismatch(&r, i, y[i], ref[i], format == 1 ? "not a bf16 value" : "not an fp16 value");
            continue;
        }
        if (nonfinite(&r, i, y[i], ref[i])) continue;
        const double a = fabs(ref[i]);
        double fp32 = rule == REF_RULE_FORWARD ? 2e-5 + 1e-5 * a
                      : rule == REF_RULE_GRAD  ? 1e-4 * max_ref + 1e-5
                                               : 1e-5 * fmax(gemm_bound ? gemm_bound[i] : 0.0, 1e-30);
        visit(&r, i, y[i], ref[i], atol + rtol * a + fp32 + (extra ? extra[i] : 0.0), &worst);
        num += (y[i] - ref[i]) * (y[i] - ref[i]);
        den += ref[i] * ref[i];
        if (extra) carried += extra[i] * extra[i];
    }
    if (rule == REF_RULE_GRAD) {
        r.nmse = den > 0.0 ? num / den : (num > 0.0 ? INFINITY : 0.0);
        if (r.pass && r.nmse > rtol * rtol + (den > 0.0 ? carried / den : 0.0)) {
            r.pass = false;
            r.why = "nmse";
        }
    }
    return r;
}

ref_cmp ref_compare_grad_carried(const float *g, const double *ref, size_t n, const double *extra)
{
    return grad_rule(g, ref, n, extra, "grad rule + carried rounding");
}
