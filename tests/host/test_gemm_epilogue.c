/* The host provider's epilogues (runtime/device/gemm_epilogue.c) called
 * directly, no OpenCL device, in both their forms (AVX-512, where the CPU
 * has it, and the portable one): exp within 2 ulp of the exact value over
 * float's range, with its overflow, underflow and NaN; the bias and ReLU
 * with the bits of the kernels' arithmetic (cl/activation.cl), NaN, infinity
 * and -0 included; tanh GELU and its derivative against the double
 * reference; rows of a width that leaves a partial vector, inside a wider
 * row stride whose other columns stay untouched. The path through a device
 * (cf_linear_act_forward on the host provider) is test_gemm's and `clformer
 * check --layer feed_forward`'s. */
#include "gemm.h"
#include "gemm_epilogue.h"
#include "harness.h"
#include "host_exp.h"
#include "ref_philox.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

/* ulps between got and the exact value, in units of float's spacing at the
 * exact value (subnormal spacing below the normal range) */
static double ulps(float got, double exact)
{
    const double spacing = fmax(ldexp(1.0, ilogb(fmax(fabs(exact), 0x1p-126)) - 23), 0x1p-149);
    return fabs((double)got - exact) / spacing;
}

static void exp_within_two_ulp(void **state)
{
    (void)state;
    for (int form = 0; form < 1 + cf_host_avx512(); form++) {
        double worst = 0.0;
        float worst_y = 0.0f;
        /* 2^22 points evenly from -104 to 89, and as many of magnitude 2^-40 to 1 */
        enum { STEPS = 1 << 22 };
        for (int i = 0; i < 2 * STEPS; i++) {
            const float y = i < STEPS ? -104.0f + 193.0f * (float)i / STEPS
                                      : (i % 2 ? -1.0f : 1.0f) * exp2f(-40.0f * (float)(i - STEPS) / STEPS);
            const double exact = exp((double)y);
            const float got = cf_gemm_epilogue_exp(y, form == 1);
            const double e = exact > 0x1.fffffep127 ? (isinf(got) ? 0.0 : 1e9) : ulps(got, exact);
            if (e > worst) worst = e, worst_y = y;
        }
        if (worst > 2.0)
            fail_msg("%s exp: %.2f ulp at %.9g", form ? "AVX-512" : "portable", worst,
                     (double)worst_y);
        print_message("%s exp: worst %.3f ulp (at %.9g)\n", form ? "AVX-512" : "portable", worst,
                      (double)worst_y);
        assert_true(isinf(cf_gemm_epilogue_exp(89.0f, form)));
        assert_true(isinf(cf_gemm_epilogue_exp(INFINITY, form)));
        assert_true(cf_gemm_epilogue_exp(-104.0f, form) == 0.0f);
        assert_true(cf_gemm_epilogue_exp(-INFINITY, form) == 0.0f);
        assert_true(isnan(cf_gemm_epilogue_exp(NAN, form)));
        assert_true(cf_gemm_epilogue_exp(0.0f, form) == 1.0f);
        const float sub = cf_gemm_epilogue_exp(-100.0f, form); /* 3.7e-44: subnormal */
        assert_true(sub > 0.0f && sub < 0x1p-126f);
    }
}

enum { M = 3, N = 37, LD = 40 }; /* 37: two whole vectors and a partial one */

/* the epilogue of `kind` with dropout `drop` (p 0: none) on a slice whose
 * first element is element `first` of a C of ROW_LEN columns, by the form
 * asked for */
enum { ROW_LEN = 300 };
static void apply_dropping(int form, int kind, int act, float c[M * LD], float rows[M * LD],
                           const float bias[N], cf_host_dropout drop, uint64_t first)
{
    const cf_epilogue_slice e = {.kind = kind, .act = act, .bias = bias,
                                 .rows = kind == CF_EPILOGUE_BIAS ? NULL : rows, .drop = drop,
                                 .first = first, .row_len = ROW_LEN};
    if (form) cf_gemm_epilogue_rows(&e, c, M, N, LD);
    else cf_gemm_epilogue_rows_portable(&e, c, M, N, LD);
}

static void apply(int form, int kind, int act, float c[M * LD], float rows[M * LD],
                  const float bias[N])
{
    apply_dropping(form, kind, act, c, rows, bias, (cf_host_dropout){0}, 0);
}

/* C, rows and bias with the kernels' edge values in the first columns */
static void fill(float c[M * LD], float rows[M * LD], float bias[N])
{
    static const float edge[] = {NAN, INFINITY, -INFINITY, -0.0f, 0.0f, 1e-40f, -1e-40f, 3.0f};
    for (int j = 0; j < N; j++) bias[j] = (float)((j * 37) % 19 - 9) / 8.0f;
    bias[4] = 0.0f, bias[3] = 0.0f;
    for (int i = 0; i < M * LD; i++) {
        const int j = i % LD;
        c[i] = j < 8 ? edge[j] : (float)((i * 7919) % 2001 - 1000) / 125.0f;
        rows[i] = j < 8 ? edge[7 - j] : (float)((i * 104729) % 2001 - 1000) / 125.0f;
    }
}

static void guards_untouched(const float *got, const float *before, const char *what)
{
    for (int i = 0; i < M; i++)
        for (int j = N; j < LD; j++)
            if (memcmp(&got[i * LD + j], &before[i * LD + j], 4) != 0)
                fail_msg("%s: column %d of row %d (past the slice) changed", what, j, i);
}

/* float bits, NaN as one value */
static bool same(float a, float b) { return (isnan(a) && isnan(b)) || memcmp(&a, &b, 4) == 0; }

static void bias_and_relu_have_the_kernels_bits(void **state)
{
    (void)state;
    for (int form = 0; form < 1 + cf_host_avx512(); form++) {
        float c[M * LD], rows[M * LD], bias[N], c0[M * LD], r0[M * LD];
        static const int kinds[] = {CF_EPILOGUE_BIAS, CF_EPILOGUE_BIAS_ACT, CF_EPILOGUE_ACT_GRAD};
        for (int q = 0; q < 3; q++) {
            fill(c, rows, bias);
            memcpy(c0, c, sizeof c), memcpy(r0, rows, sizeof rows);
            apply(form, kinds[q], CLFORMER_ACT_RELU, c, rows, bias);
            for (int i = 0; i < M; i++)
                for (int j = 0; j < N; j++) {
                    const int e = i * LD + j;
                    const float v = c0[e] + bias[j], x = r0[e] + bias[j];
                    float want_c = c0[e], want_r = r0[e];
                    if (kinds[q] == CF_EPILOGUE_BIAS) want_c = v;
                    else if (kinds[q] == CF_EPILOGUE_BIAS_ACT) want_r = v < 0.0f ? 0.0f : v;
                    else want_c = c0[e] * (x > 0.0f ? 1.0f : 0.0f);
                    if (!same(c[e], want_c) || !same(rows[e], want_r))
                        fail_msg("%s kind %d at (%d, %d): C %a rows %a, the kernel's %a %a",
                                 form ? "AVX-512" : "portable", kinds[q], i, j, (double)c[e],
                                 (double)rows[e], (double)want_c, (double)want_r);
                }
            guards_untouched(c, c0, "C"), guards_untouched(rows, r0, "rows");
        }
    }
}

/* With dropout, the kernels' order: act(x) m forward, (dy m) act'(x)
 * backward, m the multiplier of element (row, column) of the whole C
 * (first + i * ROW_LEN + j) as the reference numbers them; act(x) and
 * act'(x) as the epilogue computes them without dropout (act' from a
 * gradient of 1). */
static void dropout_as_the_kernels_apply_it(void **state)
{
    (void)state;
    const cf_host_dropout drop = {0.3f, 0xfeedULL, 9, 4};
    const ref_dropout rd = {drop.p, drop.seed, drop.step, drop.site};
    const uint64_t first = 2 * ROW_LEN + 19; /* row 2, column 19 of C */
    const float keep = 1.0f / (1.0f - drop.p);
    static const int acts[] = {CLFORMER_ACT_RELU, CLFORMER_ACT_GELU_TANH};
    for (int form = 0; form < 1 + cf_host_avx512(); form++)
        for (int a = 0; a < 2; a++)
            for (int kind = CF_EPILOGUE_BIAS_ACT; kind <= CF_EPILOGUE_ACT_GRAD; kind++) {
                float c[M * LD], rows[M * LD], bias[N], c0[M * LD], r0[M * LD];
                float act[M * LD], grad[M * LD];
                fill(c, rows, bias);
                memcpy(c0, c, sizeof c), memcpy(r0, rows, sizeof rows);
                memcpy(act, rows, sizeof rows);
                apply(form, CF_EPILOGUE_BIAS_ACT, acts[a], c0, act, bias); /* act(c0 + b) */
                for (int i = 0; i < M * LD; i++) grad[i] = 1.0f;
                apply(form, CF_EPILOGUE_ACT_GRAD, acts[a], grad, r0, bias); /* act'(r0 + b) */
                apply_dropping(form, kind, acts[a], c, rows, bias, drop, first);
                size_t dropped = 0;
                for (int i = 0; i < M; i++)
                    for (int j = 0; j < N; j++) {
                        const int e = i * LD + j;
                        const uint64_t index = first + (uint64_t)i * ROW_LEN + (uint64_t)j;
                        const float m = ref_dropout_kept(&rd, index) ? keep : 0.0f;
                        dropped += m == 0.0f;
                        const float want_c = kind == CF_EPILOGUE_ACT_GRAD ? c0[e] * m * grad[e]
                                                                          : c0[e],
                                    want_r = kind == CF_EPILOGUE_BIAS_ACT ? act[e] * m : r0[e];
                        if (!same(c[e], want_c) || !same(rows[e], want_r))
                            fail_msg("%s %s kind %d at (%d, %d): C %a rows %a, the kernels' %a %a",
                                     form ? "AVX-512" : "portable",
                                     clformer_activation_name(acts[a]), kind, i, j, (double)c[e],
                                     (double)rows[e], (double)want_c, (double)want_r);
                    }
                assert_true(dropped > 0 && dropped < (size_t)(M * N)); /* both happen */
                guards_untouched(c, c0, "C"), guards_untouched(rows, r0, "rows");
            }
}

/* double tanh GELU and its derivative, GPT-2's form */
static double gelu_tanh(double x, bool grad)
{
    const double k = 0.79788456080286535588, u = k * (x + 0.044715 * x * x * x), t = tanh(u);
    return grad ? 0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * k * (1.0 + 3.0 * 0.044715 * x * x)
                : 0.5 * x * (1.0 + t);
}

static void gelu_tanh_against_the_reference(void **state)
{
    (void)state;
    for (int form = 0; form < 1 + cf_host_avx512(); form++) {
        float c[M * LD], rows[M * LD], bias[N], c0[M * LD], r0[M * LD];
        fill(c, rows, bias);
        memcpy(c0, c, sizeof c), memcpy(r0, rows, sizeof rows);
        apply(form, CF_EPILOGUE_BIAS_ACT, CLFORMER_ACT_GELU_TANH, c, rows, bias);
        assert_memory_equal(c, c0, sizeof c); /* the pre-activation stays */
        float g[M * LD];
        memcpy(g, c0, sizeof g);
        for (int i = 0; i < M * LD; i++)
            if (i % LD >= 8) g[i] = 1.0f; /* the derivative itself where C is finite */
        float g0[M * LD];
        memcpy(g0, g, sizeof g);
        apply(form, CF_EPILOGUE_ACT_GRAD, CLFORMER_ACT_GELU_TANH, g, r0, bias);
        for (int i = 0; i < M; i++)
            for (int j = 8; j < N; j++) {
                const int e = i * LD + j;
                const double fx = (double)(c0[e] + bias[j]), gx = (double)(r0[e] + bias[j]);
                const double want = gelu_tanh(fx, false), dwant = gelu_tanh(gx, true);
                if (!(fabs(rows[e] - want) <= 2e-6 * (1.0 + fabs(want))))
                    fail_msg("%s gelu_tanh(%.9g) = %.9g, reference %.9g",
                             form ? "AVX-512" : "portable", fx, (double)rows[e], want);
                if (!(fabs(g[e] - dwant) <= 2e-6 * (1.0 + fabs(dwant))))
                    fail_msg("%s gelu_tanh'(%.9g) = %.9g, reference %.9g",
                             form ? "AVX-512" : "portable", gx, (double)g[e], dwant);
            }
        /* the edges: NaN stays NaN, the limits at infinity, -0 and tiny values 0 */
        assert_true(isnan(rows[0]));                      /* NaN + bias */
        assert_true(isinf(rows[1]) && rows[1] > 0);       /* +inf: x s(x) -> inf */
        assert_true(isnan(rows[2]));                      /* -inf * 0 */
        assert_true(rows[3] == 0.0f && rows[4] == 0.0f); /* -0 and 0 (bias 0) */
        guards_untouched(rows, r0, "rows"), guards_untouched(g, g0, "C");
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(exp_within_two_ulp),
        cmocka_unit_test(bias_and_relu_have_the_kernels_bits),
        cmocka_unit_test(gelu_tanh_against_the_reference),
        cmocka_unit_test(dropout_as_the_kernels_apply_it),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
