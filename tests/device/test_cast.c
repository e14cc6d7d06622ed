/*
 * Casts (cf_cast, cf_cast_backward; the conformance cases are
 * runtime/check/conf_cast.c, run by test_ops): what is the test's own here.
 * The device agrees bit for bit with the host's conversions
 * (runtime/core/half.h), which load and export 16-bit safetensors, so a
 * tensor rounded on either side is the same tensor; and bad arguments are
 * errors naming the fix.
 */
#include "harness.h"

#include "half.h"
#include "ops.h"

#include <stdlib.h>
#include <string.h>

static cf_view view(hbuf b) { return cf_view_at(b.mem, b.off); }

/* n random fp32 bit patterns (NaNs with payloads, subnormals, every exponent). */
static void random_bits(uint32_t *u, size_t n, uint64_t seed)
{
    ref_rng r = ref_rng_new(seed);
    for (size_t i = 0; i < n; i++) u[i] = (uint32_t)ref_rng_next(&r);
}

static void device_matches_host(void **state)
{
    (void)state;
    const size_t n = harness_is_slow() ? 515 : 100003;
    uint32_t *u = malloc(n * 4);
    uint16_t *host16 = malloc(n * 2), *dev16 = malloc(n * 2 + 2);
    float *x = malloc(n * 4), *back = malloc(n * 4), *dev32 = malloc(n * 4);
    assert_true(u && host16 && dev16 && x && back && dev32);
    random_bits(u, n, 5);
    memcpy(x, u, n * 4);
    const clformer_precision types[] = {CLFORMER_BF16, CLFORMER_FP16};
    for (int t = 0; t < 2; t++) {
        const clformer_precision p = types[t];
        hbuf hx = hbuf_from_f32(x, n, 3), h16 = hbuf_zeros((n + 1) / 2, 5), hy = hbuf_zeros(n, 7);
        /* the 16-bit tensor starts at 16-bit element 2 * 5 of its buffer */
        const cf_view v16 = cf_view_at(h16.mem, 2 * h16.off);
        assert_ok(cf_cast(hctx(), v16, p, view(hx), CLFORMER_FP32, n));
        assert_ok(cf_cast(hctx(), view(hy), CLFORMER_FP32, v16, p, n));
        hbuf_read(h16, dev16);
        hbuf_read(hy, dev32);
        if (p == CLFORMER_BF16) cf_bf16_from_f32_n(host16, x, n), cf_f32_from_bf16_n(back, host16, n);
        else cf_f16_from_f32_n(host16, x, n), cf_f32_from_f16_n(back, host16, n);
        for (size_t i = 0; i < n; i++) {
            const bool nan = p == CLFORMER_BF16 ? (host16[i] & 0x7FFF) > 0x7F80
                                                : (host16[i] & 0x7FFF) > 0x7C00;
            if (nan && p == CLFORMER_FP16) { /* the payload is the device's */
                assert_true((dev16[i] & 0x7FFF) > 0x7C00);
                assert_true(dev32[i] != dev32[i]);
                continue;
            }
            if (dev16[i] != host16[i])
                fail_msg("%s: element %zu (0x%08x): device 0x%04x, host 0x%04x",
                         clformer_precision_name(p), i, u[i], dev16[i], host16[i]);
            assert_memory_equal(&dev32[i], &back[i], 4);
        }
        hbuf_check_canary(hx), hbuf_check_canary(h16), hbuf_check_canary(hy);
        hbuf_free(hx), hbuf_free(h16), hbuf_free(hy);
    }
    free(u), free(host16), free(dev16), free(x), free(back), free(dev32);
}

static void bad_arguments(void **state)
{
    (void)state;
    hbuf a = hbuf_zeros(16, 0), b = hbuf_zeros(16, 0);
    assert_int_equal(cf_cast(hctx(), view(a), CLFORMER_FP32, view(b), CLFORMER_FP32, 4),
                     CLFORMER_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(clformer_last_error(), "no cast from fp32 to fp32"));
    assert_int_equal(cf_cast(hctx(), view(a), CLFORMER_BF16, view(b), CLFORMER_FP16, 4),
                     CLFORMER_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(clformer_last_error(), "one side must be fp32"));
    assert_int_equal(cf_cast(hctx(), view(a), (clformer_precision)9, view(b), CLFORMER_FP32, 4),
                     CLFORMER_ERR_INVALID_ARGUMENT);
    assert_int_equal(cf_cast_backward(hctx(), view(a), CLFORMER_BF16, view(b), CLFORMER_FP32, 4,
                                      true),
                     CLFORMER_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(clformer_last_error(), "add in fp32 and cast"));
    assert_int_equal(cf_cast(hctx(), cf_view_at(NULL, 0), CLFORMER_BF16, view(b), CLFORMER_FP32, 4),
                     CLFORMER_ERR_INVALID_ARGUMENT);
    assert_ok(cf_cast(hctx(), view(a), CLFORMER_BF16, view(b), CLFORMER_FP32, 0)); /* no-op */
    hbuf_check_canary(a), hbuf_check_canary(b);
    hbuf_free(a), hbuf_free(b);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(device_matches_host),
    cmocka_unit_test(bad_arguments),
};
HARNESS_DEVICE_MAIN("cast", tests)
