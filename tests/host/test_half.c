/*
 * The host's 16-bit conversions (runtime/core/half.h, integer bit tricks)
 * against the reference (runtime/check/reference/ref_half.c, rounding in
 * double): every 16-bit pattern to fp32, fp32 to 16 bits at every tie
 * between two neighbours of each format, just beside each tie, and about
 * four million fp32 patterns spread over all 2^32; PyTorch's own casts
 * (tests/data/half/casts.safetensors, tools/reference/make_half_golden.py);
 * 16-bit tensors read from safetensors; and the names.
 */
#include "data_util.h"

#include "half.h"
#include "round_avx512.h"
#include "ref_half.h"
#include "safetensors.h"

#include <math.h>

static bool is_nan16(uint16_t h, ref_half_format f)
{
    return (h & 0x7FFF) > (f == REF_BF16 ? 0x7F80 : 0x7C00);
}

static uint16_t host_round(float x, ref_half_format f)
{
    return f == REF_BF16 ? cf_bf16_from_f32(x) : cf_f16_from_f32(x);
}

static float host_value(uint16_t h, ref_half_format f)
{
    return f == REF_BF16 ? cf_f32_from_bf16(h) : cf_f32_from_f16(h);
}

/* The host's rounding of x equals the reference's: bit for bit, except that
 * an fp16 NaN may keep x's payload (only NaN-ness and sign must agree). */
static int check_round(uint32_t u, ref_half_format f)
{
    const float x = cf_f32_of_bits(u);
    const uint16_t got = host_round(x, f), want = ref_half_round(x, f);
    const bool same = f == REF_F16 && isnan(x)
                          ? is_nan16(got, f) && (got & 0x8000) == (want & 0x8000)
                          : got == want;
    if (!same)
        print_error("%s(0x%08x = %.9g): got 0x%04x, the reference 0x%04x\n",
                    f == REF_BF16 ? "bf16" : "fp16", u, (double)x, got, want);
    return !same;
}

static void every_pattern_to_f32(void **state)
{
    (void)state;
    for (int f = 0; f < 2; f++)
        for (uint32_t h = 0; h < 65536; h++) {
            const float got = host_value((uint16_t)h, (ref_half_format)f);
            const double want = ref_half_value((uint16_t)h, (ref_half_format)f);
            if (isnan(want)) assert_true(isnan(got));
            else {
                assert_true((double)got == want);
                assert_int_equal(signbit(got) != 0, signbit(want) != 0);
                /* and back: every value of the format survives the round trip */
                assert_int_equal(host_round(got, (ref_half_format)f), h);
            }
        }
}

static void ties_and_neighbours(void **state)
{
    (void)state;
    int bad = 0;
    for (int f = 0; f < 2; f++) {
        const ref_half_format F = (ref_half_format)f;
        for (uint32_t h = 0; h < 65536; h++) {
            /* the midpoint between h and h + 1 of the same sign (a finite h) */
            if (is_nan16((uint16_t)h, F) || (h & 0x7FFF) == (f == REF_BF16 ? 0x7F80u : 0x7C00u))
                continue;
            const double a = ref_half_value((uint16_t)h, F),
                         b = ref_half_value((uint16_t)(h + 1), F);
            if (isnan(b)) continue;
            const double mid = 0.5 * (a + b); /* exact in fp32 */
            const float m = (float)mid;
            assert_true((double)m == mid);
            const uint32_t u = cf_f32_bits(m);
            bad += check_round(u, F) + check_round(u + 1, F) + check_round(u - 1, F);
            if (bad > 10) fail_msg("too many mismatches");
        }
    }
    assert_int_equal(bad, 0);
}

static void spread_over_fp32(void **state)
{
    (void)state;
    int bad = 0;
    for (int f = 0; f < 2; f++)
        for (uint64_t u = 0; u < (1ull << 32); u += 1021) {
            bad += check_round((uint32_t)u, (ref_half_format)f);
            if (bad > 10) fail_msg("too many mismatches");
        }
    assert_int_equal(bad, 0);
}

/* What cl/common.h's round_storage_bits leaves of fp32 bits u: the
 * reference's rounding as an fp32 value (the sign of zero kept), bf16's
 * NaNs 0x7FC00000, fp16's NaNs as they were. */
static uint32_t kernel_rounding(uint32_t u, ref_half_format f)
{
    const float x = cf_f32_of_bits(u);
    if (isnan(x)) return f == REF_BF16 ? 0x7FC00000u : u;
    return cf_f32_bits((float)ref_half_value(ref_half_round(x, f), f));
}

/* The host provider's rounding of a product's rows (round_avx512.h) against
 * the reference: every tie of both formats and its neighbours, and fp32's
 * patterns 1021 apart, laid out as rows of 1,000 values 1,003 apart (the
 * last 16 of each row masked in part; the 3 between rows must stay). */
static void rounding_rows_on_the_host(void **state)
{
    (void)state;
    if (!cf_round_avx512_available()) skip(); /* the host provider rounds with a launch */
    enum { COLS = 1000, LD = 1003 };
    for (int f = 0; f < 2; f++) {
        const ref_half_format F = (ref_half_format)f;
        size_t n = 0, cap = 4400000;
        uint32_t *in = malloc(cap * sizeof *in);
        assert_non_null(in);
        for (uint32_t h = 0; h < 65536; h++) {
            const double a = ref_half_value((uint16_t)h, F), b = ref_half_value((uint16_t)(h + 1), F);
            if (isnan(a) || isnan(b) || isinf(a)) continue;
            const uint32_t mid = cf_f32_bits((float)(0.5 * (a + b)));
            in[n++] = mid, in[n++] = mid + 1, in[n++] = mid - 1;
        }
        for (uint64_t u = 0; u < (1ull << 32) && n < cap; u += 1021) in[n++] = (uint32_t)u;
        const size_t rows = (n + COLS - 1) / COLS;
        uint32_t *c = malloc(rows * LD * sizeof *c);
        assert_non_null(c);
        for (size_t i = 0; i < rows * LD; i++) c[i] = 0x3F800001u; /* between rows: untouched */
        for (size_t i = 0; i < n; i++) c[i / COLS * LD + i % COLS] = in[i];
        /* the last row's columns past n stay 0x3F800001 too: rounded, 1.0 */
        assert_true(cf_round_rows_avx512((float *)c, (int)rows, COLS, LD, f == REF_BF16 ? 1 : 2));
        int bad = 0;
        for (size_t i = 0; i < n && bad < 10; i++) {
            const uint32_t got = c[i / COLS * LD + i % COLS], want = kernel_rounding(in[i], F);
            if (got != want) {
                print_error("%s(0x%08x): 0x%08x, the kernel's 0x%08x\n",
                            f == REF_BF16 ? "bf16" : "fp16", in[i], got, want);
                bad++;
            }
        }
        for (size_t r = 0; r < rows; r++)
            for (size_t j = COLS; j < LD; j++) assert_int_equal(c[r * LD + j], 0x3F800001u);
        assert_int_equal(bad, 0);
        free(in), free(c);
    }
}

static void named_values(void **state)
{
    (void)state;
    assert_int_equal(cf_bf16_from_f32(cf_f32_of_bits(0x7F800001u)), 0x7FC0); /* a NaN, not inf */
    assert_int_equal(cf_bf16_from_f32(3.0e38f * 10.0f), 0x7F80);
    assert_int_equal(cf_bf16_from_f32(cf_f32_of_bits(0x7F7FFFFFu)), 0x7F80); /* fp32 max: inf */
    assert_int_equal(cf_f16_from_f32(65504.0f), 0x7BFF);
    assert_int_equal(cf_f16_from_f32(65519.0f), 0x7BFF);
    assert_int_equal(cf_f16_from_f32(65520.0f), 0x7C00);
    assert_int_equal(cf_f16_from_f32(-0x1p-25f), 0x8000);
    assert_int_equal(cf_f16_from_f32(0x1.8p-24f), 0x0002);
    assert_true(cf_f32_from_f16(0x0001) == 0x1p-24f);
    float b[3] = {1.0f, -2.5f, 1e-3f}, back[3];
    uint16_t h[3];
    cf_f16_from_f32_n(h, b, 3);
    cf_f32_from_f16_n(back, h, 3);
    assert_true(back[0] == 1.0f && back[1] == -2.5f && fabsf(back[2] - 1e-3f) < 1e-6f);
    cf_bf16_from_f32_n(h, b, 3);
    cf_f32_from_bf16_n(back, h, 3);
    assert_true(back[0] == 1.0f && back[1] == -2.5f);
}

static void *read_tensor(cf_st_reader *r, const char *name, cf_st_dtype dtype, size_t n)
{
    const cf_st_tensor *t = cf_st_find(r, name);
    if (!t) fail_msg("casts.safetensors lacks %s", name);
    assert_int_equal(t->dtype, dtype);
    assert_int_equal(t->numel, n);
    void *p = malloc(t->nbytes);
    assert_non_null(p);
    assert_ok(cf_st_read(r, t, p, t->nbytes));
    return p;
}

/* PyTorch's src.to(bfloat16 / float16) and back with .float(): the host's
 * conversions give the same bits (fp16 NaN: any NaN), and cf_st_read_f32
 * reads the 16-bit tensors as PyTorch's .float() does. */
static void same_as_pytorch(void **state)
{
    (void)state;
    cf_st_reader *r;
    assert_ok(cf_st_open(data_path("half/casts.safetensors"), &r));
    const cf_st_tensor *ts = cf_st_find(r, "src");
    assert_non_null(ts);
    const size_t n = (size_t)ts->numel;
    float *src = read_tensor(r, "src", CF_ST_F32, n);
    const char *names[2] = {"bf16", "f16"}, *back_names[2] = {"bf16_as_f32", "f16_as_f32"};
    float *mine = malloc(n * sizeof *mine);
    for (int f = 0; f < 2; f++) {
        uint16_t *torch16 = read_tensor(r, names[f], f ? CF_ST_F16 : CF_ST_BF16, n);
        float *torch32 = read_tensor(r, back_names[f], CF_ST_F32, n);
        for (size_t i = 0; i < n; i++) {
            const uint16_t h = f ? cf_f16_from_f32(src[i]) : cf_bf16_from_f32(src[i]);
            /* NaN: any NaN (PyTorch 1.13's vectorised CPU cast writes bf16 0xFFFF, its
             * scalar one 0x7FC0, which clformer writes) */
            const ref_half_format F = f ? REF_F16 : REF_BF16;
            if (is_nan16(torch16[i], F)) assert_true(is_nan16(h, F));
            else if (h != torch16[i])
                fail_msg("%s(0x%08x): clformer 0x%04x, PyTorch 0x%04x", names[f], cf_f32_bits(src[i]),
                         h, torch16[i]);
        }
        assert_ok(cf_st_read_f32(r, cf_st_find(r, names[f]), mine, n));
        for (size_t i = 0; i < n; i++)
            if (isnan(torch32[i])) assert_true(isnan(mine[i]));
            else assert_int_equal(cf_f32_bits(mine[i]), cf_f32_bits(torch32[i]));
        free(torch16);
        free(torch32);
    }
    printf("%zu values: clformer's bf16 and fp16 casts equal PyTorch 1.13's\n", n);
    free(mine);
    free(src);
    cf_st_close(r);
}

/* A dtype clformer does not read as floats is refused, naming it and the fix;
 * 16-bit tensors read as fp32, exactly. */
static void dtypes_in_files(void **state)
{
    (void)state;
    char dir[] = "/tmp/clformer_half_XXXXXX", path[600];
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/t.safetensors", dir);
    const int64_t shape[1] = {3};
    const int8_t i8[3] = {1, 2, 3};
    const double f64[3] = {1, 2, 3};
    const float f32[3] = {1.0f, -0.1f, 70000.0f};
    cf_st_writer *w;
    assert_ok(cf_st_writer_new(path, &w));
    assert_ok(cf_st_declare(w, "i8", CF_ST_I8, 1, shape));
    assert_ok(cf_st_declare(w, "f64", CF_ST_F64, 1, shape));
    assert_ok(cf_st_declare(w, "bf16", CF_ST_BF16, 1, shape));
    assert_ok(cf_st_begin(w));
    assert_ok(cf_st_write(w, "i8", i8, sizeof i8));
    assert_ok(cf_st_write(w, "f64", f64, sizeof f64));
    assert_ok(cf_st_write_f32(w, "bf16", f32, 3));
    assert_ok(cf_st_commit(w));
    cf_st_writer_free(w);
    cf_st_reader *r;
    assert_ok(cf_st_open(path, &r));
    const cf_st_tensor *t;
    assert_int_equal(cf_st_expect_float(r, "i8", 1, shape, &t), CLFORMER_ERR_FORMAT);
    assert_null(t);
    assert_non_null(strstr(clformer_last_error(), "tensor 'i8' is I8"));
    assert_non_null(strstr(clformer_last_error(), "model.to(torch.float32)"));
    float back[3];
    assert_int_equal(cf_st_read_f32(r, cf_st_find(r, "f64"), back, 3), CLFORMER_ERR_FORMAT);
    assert_non_null(strstr(clformer_last_error(), "tensor 'f64' is F64"));
    assert_ok(cf_st_expect_float(r, "bf16", 1, shape, &t));
    assert_int_equal(t->dtype, CF_ST_BF16);
    assert_int_equal(cf_st_read_f32(r, t, back, 2), CLFORMER_ERR_INVALID_ARGUMENT);
    assert_ok(cf_st_read_f32(r, t, back, 3));
    for (int i = 0; i < 3; i++) assert_true(back[i] == cf_f32_from_bf16(cf_bf16_from_f32(f32[i])));
    cf_st_close(r);
    unlink(path);

    /* fp16 cannot hold 70000: refused, and no file appears */
    assert_ok(cf_st_writer_new(path, &w));
    assert_ok(cf_st_declare(w, "x", CF_ST_F16, 1, shape));
    assert_ok(cf_st_begin(w));
    assert_int_equal(cf_st_write_f32(w, "x", f32, 3), CLFORMER_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(clformer_last_error(), "element 2 is 70000, beyond the range of F16"));
    assert_non_null(strstr(clformer_last_error(), "export as bf16 or fp32"));
    cf_st_writer_free(w);
    assert_int_equal(access(path, F_OK), -1);
    rmdir(dir);
}

static void precision_names(void **state)
{
    (void)state;
    clformer_precision p;
    assert_ok(clformer_precision_parse("bf16", &p));
    assert_int_equal(p, CLFORMER_BF16);
    assert_string_equal(clformer_precision_name(CLFORMER_FP16), "fp16");
    assert_null(clformer_precision_name((clformer_precision)7));
    assert_int_equal(clformer_precision_parse("fp8", &p), CLFORMER_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(clformer_last_error(), "fp32, bf16 or fp16"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_pattern_to_f32),
        cmocka_unit_test(ties_and_neighbours),
        cmocka_unit_test(spread_over_fp32),
        cmocka_unit_test(rounding_rows_on_the_host),
        cmocka_unit_test(named_values),
        cmocka_unit_test(same_as_pytorch),
        cmocka_unit_test(dtypes_in_files),
        cmocka_unit_test(precision_names),
    };
    return cmocka_run_group_tests_name("half", tests, NULL, NULL);
}
