/*
 * Counting a split arena (runtime/model/arena.h) on the host: tensors that do
 * not fit in what is left of a buffer start the next one, and the union of
 * two layouts begun from one state (recomputation lays every layer's tensors
 * out from one state, then the encoder's and the decoder's share memory)
 * covers both, so that a tensor taken after it overlaps neither.
 */
#include "data_util.h"

#include "arena.h"

/* [off, off + n) of buffer i, as a counting pass hands it out */
typedef struct {
    size_t buf, off, n;
} span;

/* Takes n elements and says where, as the buffer index the count is at. */
static span take(cf_split_arena *a, size_t n)
{
    const cf_view v = cf_split_arena_take(a, n);
    return (span){a->count - 1, v.off, cf_arena_round(n)};
}

static bool overlap(span x, span y)
{
    return x.buf == y.buf && x.off < y.off + y.n && y.off < x.off + x.n;
}

static void tensors_start_a_new_buffer_when_full(void **state)
{
    (void)state;
    cf_split_arena a = {.bufs = NULL, .limit = 64};
    const span s0 = take(&a, 40); /* 48 after rounding to 16 */
    const span s1 = take(&a, 20); /* 32: more than the 16 left, so buffer 1 */
    const span s2 = take(&a, 10); /* 16: fits after it */
    const span s3 = take(&a, 100); /* larger than a buffer: one of its own */
    const span s4 = take(&a, 5);   /* and nothing joins it there */
    assert_true(s0.buf == 0 && s0.off == 0);
    assert_true(s1.buf == 1 && s1.off == 0);
    assert_true(s2.buf == 1 && s2.off == 32);
    assert_true(s3.buf == 2 && s3.off == 0);
    assert_true(s4.buf == 3 && s4.off == 0);
    assert_int_equal(a.count, 4);
    assert_false(a.overflow);
}

/* The union of a short layout and a long one that spans more buffers, both
 * ways round: later tensors overlap neither. */
static void union_covers_both_layouts(void **state)
{
    (void)state;
    for (int order = 0; order < 2; order++) {
        cf_split_arena base = {.bufs = NULL, .limit = 64};
        const span kept = take(&base, 30); /* before the shared region */
        cf_split_arena shorter = base, longer = base;
        span sh[2], lo[4];
        sh[0] = take(&shorter, 20);
        sh[1] = take(&shorter, 10);
        for (int i = 0; i < 4; i++) lo[i] = take(&longer, 40);
        cf_split_arena u = order ? longer : shorter;
        cf_split_arena_union(&u, order ? &shorter : &longer);
        assert_int_equal(u.count, longer.count);
        const span after[2] = {take(&u, 16), take(&u, 64)};
        for (int k = 0; k < 2; k++) {
            assert_false(overlap(after[k], kept));
            for (int i = 0; i < 2; i++) assert_false(overlap(after[k], sh[i]));
            for (int i = 0; i < 4; i++) assert_false(overlap(after[k], lo[i]));
        }
        /* every buffer is as large as either layout used it */
        for (size_t i = 0; i < shorter.count; i++) assert_true(u.used[i] >= shorter.used[i]);
        for (size_t i = 0; i < longer.count; i++) assert_true(u.used[i] >= longer.used[i]);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(tensors_start_a_new_buffer_when_full),
        cmocka_unit_test(union_covers_both_layouts),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
