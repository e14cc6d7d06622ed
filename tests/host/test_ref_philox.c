/* The host Philox4x32-10 against Random123's published known answers, and
 * the dropout numbers derived from it (the device tests then hold every
 * device to this code, bit for bit). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <math.h>
#include <cmocka.h>

#include "ref_philox.h"

/* Random123's kat_vectors for philox4x32_10: counter, key, expected output. */
static void kat(uint32_t c0, uint32_t c1, uint32_t c2, uint32_t c3, uint32_t k0, uint32_t k1,
                uint32_t r0, uint32_t r1, uint32_t r2, uint32_t r3)
{
    const uint32_t ctr[4] = {c0, c1, c2, c3}, key[2] = {k0, k1}, want[4] = {r0, r1, r2, r3};
    uint32_t got[4];
    ref_philox4x32_10(ctr, key, got);
    for (int i = 0; i < 4; i++)
        if (got[i] != want[i])
            fail_msg("philox4x32_10 word %d: got %08x, Random123 says %08x", i, got[i], want[i]);
}

static void philox_known_answers(void **state)
{
    (void)state;
    kat(0, 0, 0, 0, 0, 0, 0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8);
    kat(0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0x408f276d,
        0x41c83b0e, 0xa20bc7c6, 0x6d5451fd);
    kat(0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344, 0xa4093822, 0x299f31d0, 0xd16cfe09,
        0x94fdcceb, 0x5001e420, 0x24126ea1);
}

/* Element i takes word i % 4 of the block for counter (i/4 low, i/4 high,
 * site, step) under key (seed low, seed high), top 24 bits. */
static void uniform_numbering(void **state)
{
    (void)state;
    const uint64_t seed = 0x0123456789abcdefULL;
    const uint64_t indices[] = {0, 1, 2, 3, 4, 7, 1000003, (1ULL << 34) + 5, (1ULL << 40) + 2};
    for (size_t j = 0; j < sizeof indices / sizeof *indices; j++) {
        const uint64_t i = indices[j];
        const uint32_t ctr[4] = {(uint32_t)(i / 4), (uint32_t)(i / 4 >> 32), 17, 42};
        const uint32_t key[2] = {0x89abcdefu, 0x01234567u};
        uint32_t r[4];
        ref_philox4x32_10(ctr, key, r);
        assert_true(ref_dropout_uniform(seed, 42, 17, i) == (float)(r[i % 4] >> 8) / 16777216.0f);
    }
}

static void uniform_range_and_mean(void **state)
{
    (void)state;
    const size_t n = 1 << 18;
    double sum = 0.0;
    for (size_t i = 0; i < n; i++) {
        const float u = ref_dropout_uniform(7, 3, 11, i);
        assert_true(u >= 0.0f && u < 1.0f);
        sum += u;
    }
    /* mean of U(0,1): sd 1/sqrt(12 n) ~ 5.6e-4; allow 6 sd */
    assert_true(fabs(sum / n - 0.5) < 6.0 / sqrt(12.0 * n));
}

/* Changing any of seed (either half), step or site changes the stream. */
static void streams_differ(void **state)
{
    (void)state;
    const uint64_t base_seed = 0x1111222233334444ULL;
    const struct {
        uint64_t seed;
        uint32_t step, site;
    } v[] = {{base_seed, 5, 9}, {base_seed ^ 1, 5, 9}, {base_seed ^ (1ULL << 40), 5, 9},
             {base_seed, 6, 9}, {base_seed, 5, 10}};
    for (size_t a = 0; a < 5; a++)
        for (size_t b = a + 1; b < 5; b++) {
            int same = 0;
            for (uint64_t i = 0; i < 64; i++)
                same += ref_dropout_uniform(v[a].seed, v[a].step, v[a].site, i) ==
                        ref_dropout_uniform(v[b].seed, v[b].step, v[b].site, i);
            assert_true(same < 4);
        }
}

static void scale_and_kept(void **state)
{
    (void)state;
    assert_true(ref_dropout_scale(NULL, 5) == 1.0);
    const ref_dropout off = {0.0f, 1, 2, 3};
    assert_true(ref_dropout_scale(&off, 5) == 1.0 && ref_dropout_kept(&off, 5));
    const ref_dropout d = {0.25f, 99, 1, 2};
    size_t kept = 0;
    const size_t n = 1 << 16;
    for (size_t i = 0; i < n; i++) {
        const bool k = ref_dropout_kept(&d, i);
        assert_true(k == !(ref_dropout_uniform(99, 1, 2, i) < 0.25f));
        assert_true(ref_dropout_scale(&d, i) == (k ? 1.0 / 0.75 : 0.0));
        kept += k;
    }
    const double sd = sqrt(n * 0.25 * 0.75);
    assert_true(fabs((double)kept - 0.75 * n) < 6.0 * sd);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(philox_known_answers), cmocka_unit_test(uniform_numbering),
        cmocka_unit_test(uniform_range_and_mean), cmocka_unit_test(streams_differ),
        cmocka_unit_test(scale_and_kept),
    };
    return cmocka_run_group_tests_name("ref_philox", tests, NULL, NULL);
}
