/* The host's dropout multipliers (runtime/device/host_philox.c), in both
 * forms (AVX-512 where the CPU has it, and the portable one), against the
 * reference's Philox numbering (runtime/check/reference/ref_philox.c, itself
 * held to Random123's known answers by test_ref_philox): every element of
 * ranges that start inside a block, cross sixteen-block groups, and cross
 * the counter's 32-bit word. The fused ops that use them are test_gemm's
 * and `clformer check`'s. */
#include "harness.h"
#include "host_exp.h"
#include "host_philox.h"
#include "ref_philox.h"

#include <stdint.h>
#include <string.h>

static void scales(int form, const cf_host_dropout *d, uint64_t first, size_t n, float *out)
{
    if (form) cf_host_dropout_scales(d, first, n, out);
    else cf_host_dropout_scales_portable(d, first, n, out);
}

static void multipliers_are_the_references(void **state)
{
    (void)state;
    static const struct {
        uint64_t first;
        size_t count;
    } ranges[] = {{0, 1}, {0, 1000}, {3, 61}, {130, 67}, {(1ull << 34) - 37, 200}, {5, 0}};
    static const float ps[] = {0.1f, 0.5f, 0.9f};
    enum { MAX = 1000 };
    float got[MAX + 1];
    for (int form = 0; form < 1 + cf_host_avx512(); form++)
        for (size_t r = 0; r < sizeof ranges / sizeof *ranges; r++)
            for (int k = 0; k < 3; k++) {
                const cf_host_dropout d = {ps[k], 0x0123456789abcdefULL + r, 7 + (uint32_t)k,
                                           40 + (uint32_t)r};
                const ref_dropout rd = {d.p, d.seed, d.step, d.site};
                const size_t n = ranges[r].count;
                got[n] = -1.0f; /* past the range: untouched */
                scales(form, &d, ranges[r].first, n, got);
                const float keep = 1.0f / (1.0f - d.p);
                size_t dropped = 0;
                for (size_t i = 0; i < n; i++) {
                    const float want = ref_dropout_kept(&rd, ranges[r].first + i) ? keep : 0.0f;
                    dropped += want == 0.0f;
                    if (memcmp(&got[i], &want, sizeof want) != 0)
                        fail_msg("%s p %g element %llu: %g, the reference's %g",
                                 form ? "AVX-512" : "portable", (double)d.p,
                                 (unsigned long long)(ranges[r].first + i), (double)got[i],
                                 (double)want);
                }
                assert_true(got[n] == -1.0f);
                if (n == MAX) /* the reference drops about p of them */
                    assert_true(dropped > (size_t)(n * d.p) / 2 && dropped < n);
            }
}

static void no_dropout_is_all_ones(void **state)
{
    (void)state;
    const cf_host_dropout d = {0.0f, 1, 2, 3};
    float got[37];
    for (int form = 0; form < 1 + cf_host_avx512(); form++) {
        memset(got, 0, sizeof got);
        scales(form, &d, 11, 37, got);
        for (int i = 0; i < 37; i++) assert_true(got[i] == 1.0f);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(multipliers_are_the_references),
        cmocka_unit_test(no_dropout_is_all_ones),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
