/* cf_embedding_index_build: every position appears once, grouped by id in
 * increasing id order, positions increasing within an id. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>

#include "ops.h"
#include "ref_random.h"

static void check(const int32_t *tokens, size_t n)
{
    int32_t *unique = malloc((n + 1) * 4), *starts = malloc((n + 1) * 4),
            *positions = malloc((n + 1) * 4);
    char *seen = calloc(n + 1, 1);
    const size_t nu = cf_embedding_index_build(tokens, n, unique, starts, positions);
    assert_true(nu <= n && (n == 0) == (nu == 0));
    assert_int_equal(starts[0], 0);
    assert_int_equal(starts[nu], (int32_t)n);
    for (size_t u = 0; u < nu; u++) {
        if (u > 0) assert_true(unique[u] > unique[u - 1]);
        assert_true(starts[u + 1] > starts[u]);
        for (int32_t j = starts[u]; j < starts[u + 1]; j++) {
            const int32_t pos = positions[j];
            assert_true(pos >= 0 && (size_t)pos < n && !seen[pos]);
            seen[pos] = 1;
            assert_int_equal(tokens[pos], unique[u]);
            if (j > starts[u]) assert_true(pos > positions[j - 1]);
        }
    }
    free(unique), free(starts), free(positions), free(seen);
}

static void index_groups_positions_by_id(void **state)
{
    (void)state;
    check(NULL, 0);
    const int32_t one[] = {5};
    check(one, 1);
    const int32_t same[] = {0, 0, 0, 0, 0, 0, 0};
    check(same, 7);
    const int32_t descending[] = {6, 5, 4, 3, 2, 1, 0};
    check(descending, 7);
    ref_rng r = ref_rng_new(3);
    const size_t sizes[] = {2, 61, 93, 257, 7 * 257, 4096};
    for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++) {
        int32_t *t = malloc(sizes[s] * 4);
        const uint64_t vocab = 1 + s * 60; /* 1 .. 301: many repeats, pad id 0 included */
        for (size_t i = 0; i < sizes[s]; i++) t[i] = (int32_t)(ref_rng_next(&r) % vocab);
        check(t, sizes[s]);
        free(t);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(index_groups_positions_by_id)};
    return cmocka_run_group_tests_name("embedding_index", tests, NULL, NULL);
}
