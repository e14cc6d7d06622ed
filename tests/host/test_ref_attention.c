/* The attention reference against itself: central finite differences of its
 * forward check its backward (with masks, with and without dropout), and
 * the masks, softmax rows, dropout and head layout behave as ops.h says. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include <cmocka.h>

#include "ref_attention.h"
#include "ref_random.h"

#define EPS 1e-6
#define ATOL 1e-5
#define RTOL 1e-3
#define SENTINEL 12345.0 /* in rows >= Tk of dkh/dvh: backward must not write there */

typedef struct {
    ref_attention_shape s;
    const int32_t *keys; /* B*key_ld, or NULL */
    ref_attention_dropout drop;
} fd_case;

static double *alloc_d(size_t n)
{
    double *p = calloc(n ? n : 1, sizeof *p);
    assert_non_null(p);
    return p;
}

/* L = sum_i w_i out_i */
static double loss(const fd_case *c, const double *q, const double *k, const double *v,
                   const double *w)
{
    const ref_attention_shape *s = &c->s;
    const size_t no = s->B * s->H * s->Tq * s->dh, np = s->B * s->H * s->Tq * s->Tk;
    double *out = alloc_d(no), *p = alloc_d(np), *pd = alloc_d(np);
    ref_attention_forward(out, p, pd, q, k, v, c->keys, s, &c->drop);
    double l = 0.0;
    for (size_t i = 0; i < no; i++) {
        assert_false(isnan(out[i]));
        l += w[i] * out[i];
    }
    free(out), free(p), free(pd);
    return l;
}

/* Compares the analytic gradient g of x (n elements) with central differences.
 * rows_in_use/cap: only rows < rows_in_use of each block of cap rows are live;
 * the others must keep SENTINEL in g and have a zero numeric gradient. */
static void check_grad(const char *name, const fd_case *c, double *q, double *k, double *v,
                       const double *w, double *x, const double *g, size_t n, size_t cap,
                       size_t rows_in_use)
{
    const size_t dh = c->s.dh;
    for (size_t i = 0; i < n; i++) {
        const double x0 = x[i];
        x[i] = x0 + EPS;
        const double lp = loss(c, q, k, v, w);
        x[i] = x0 - EPS;
        const double lm = loss(c, q, k, v, w);
        x[i] = x0;
        const double fd = (lp - lm) / (2 * EPS);
        const bool live = (i / dh) % cap < rows_in_use;
        if (!live) {
            if (g[i] != SENTINEL) fail_msg("%s[%zu]: backward wrote a row beyond Tk", name, i);
            if (fd != 0.0) fail_msg("%s[%zu]: a row beyond Tk changes the output", name, i);
            continue;
        }
        if (fabs(fd - g[i]) > ATOL + RTOL * fabs(g[i]))
            fail_msg("%s[%zu]: analytic %.10g, finite differences %.10g", name, i, g[i], fd);
    }
}

static void run_fd(const fd_case *c, uint64_t seed)
{
    const ref_attention_shape *s = &c->s;
    const size_t BH = s->B * s->H;
    const size_t nq = BH * s->Tq * s->dh, nk = BH * s->Tk_cap * s->dh, np = BH * s->Tq * s->Tk;
    double *q = alloc_d(nq), *k = alloc_d(nk), *v = alloc_d(nk), *w = alloc_d(nq);
    double *out = alloc_d(nq), *p = alloc_d(np), *pd = alloc_d(np), *ds = alloc_d(np);
    double *dq = alloc_d(nq), *dk = alloc_d(nk), *dv = alloc_d(nk);
    ref_rng r = ref_rng_new(seed);
    for (size_t i = 0; i < nq; i++) q[i] = ref_rng_uniform(&r, -1.5, 1.5);
    for (size_t i = 0; i < nk; i++) k[i] = ref_rng_uniform(&r, -1.5, 1.5);
    for (size_t i = 0; i < nk; i++) v[i] = ref_rng_uniform(&r, -1, 1);
    for (size_t i = 0; i < nq; i++) w[i] = ref_rng_uniform(&r, -1, 1);
    for (size_t i = 0; i < nk; i++) dk[i] = dv[i] = SENTINEL;

    ref_attention_forward(out, p, pd, q, k, v, c->keys, s, &c->drop);
    ref_attention_backward(dq, dk, dv, ds, w, p, pd, q, k, v, s, &c->drop);
    check_grad("dqh", c, q, k, v, w, q, dq, nq, s->Tq, s->Tq);
    check_grad("dkh", c, q, k, v, w, k, dk, nk, s->Tk_cap, s->Tk);
    check_grad("dvh", c, q, k, v, w, v, dv, nk, s->Tk_cap, s->Tk);
    free(q), free(k), free(v), free(w), free(out), free(p), free(pd), free(ds);
    free(dq), free(dk), free(dv);
}

/* Batch 0 unpadded, batch 1 right-padded after 3 keys (and one pad inside). */
static const int32_t keys_2x8[] = {5, 6, 7, 8, 9, 10, 11, 12, /**/ 4, 0, 9, 0, 0, 0, 0, 0};

static void fd_self_attention_padded(void **state)
{
    (void)state;
    fd_case c = {{2, 2, 4, 5, 5, 5, 0, false, 8}, keys_2x8, {0}};
    run_fd(&c, 1);
}

static void fd_self_attention_causal(void **state)
{
    (void)state;
    fd_case c = {{2, 2, 4, 5, 5, 5, 0, true, 8}, keys_2x8, {0}};
    run_fd(&c, 2);
}

/* Tq != Tk, Tk_cap > Tk, q_pos0 > 0: the incremental-decoding shapes. */
static void fd_cross_and_decoding_shapes(void **state)
{
    (void)state;
    fd_case cross = {{2, 1, 3, 3, 6, 8, 0, false, 8}, keys_2x8, {0}};
    run_fd(&cross, 3);
    fd_case dec = {{2, 2, 4, 2, 6, 7, 3, true, 8}, keys_2x8, {0}};
    run_fd(&dec, 4);
    fd_case one = {{1, 2, 5, 1, 6, 9, 5, true, 8}, NULL, {0}};
    run_fd(&one, 5);
}

static void fd_with_dropout(void **state)
{
    (void)state;
    fd_case c = {{2, 2, 4, 4, 5, 6, 0, false, 8}, keys_2x8, {0.3f, 99, 7, 3}};
    run_fd(&c, 6);
    fd_case causal = {{2, 1, 3, 5, 5, 5, 0, true, 8}, keys_2x8, {0.5f, 1234567890123ULL, 1, 2}};
    run_fd(&causal, 7);
}

/* Batch 1 has only pad keys: its outputs and gradients are exactly 0. */
static void all_padded_batch_is_zero_not_nan(void **state)
{
    (void)state;
    static const int32_t keys[] = {3, 4, 5, 6, 0, 0, 0, 0};
    const ref_attention_shape s = {2, 2, 3, 4, 4, 4, 0, true, 4};
    const ref_attention_dropout drop = {0.2f, 5, 1, 1};
    const size_t n = 2 * 2 * 4 * 3, np = 2 * 2 * 4 * 4, half = n / 2, halfp = np / 2;
    double q[48], k[48], v[48], w[48], out[48], dq[48], dk[48], dv[48], p[64], pd[64], ds[64];
    ref_rng r = ref_rng_new(8);
    for (size_t i = 0; i < n; i++) {
        q[i] = ref_rng_uniform(&r, -1, 1), k[i] = ref_rng_uniform(&r, -1, 1);
        v[i] = ref_rng_uniform(&r, -1, 1), w[i] = ref_rng_uniform(&r, -1, 1);
    }
    ref_attention_forward(out, p, pd, q, k, v, keys, &s, &drop);
    ref_attention_backward(dq, dk, dv, ds, w, p, pd, q, k, v, &s, &drop);
    for (size_t i = half; i < n; i++) {
        assert_true(out[i] == 0.0 && dq[i] == 0.0 && dk[i] == 0.0 && dv[i] == 0.0);
    }
    for (size_t i = halfp; i < np; i++) assert_true(p[i] == 0.0 && pd[i] == 0.0 && ds[i] == 0.0);
    double any = 0.0;
    for (size_t i = 0; i < half; i++) any += fabs(out[i]) + fabs(dq[i]);
    assert_true(any > 0.0);
    fd_case c = {s, keys, drop};
    run_fd(&c, 9);
}

/* Softmax rows sum to 1 over visible keys and are 0 on masked ones; dropout
 * keeps about 1-p of the entries and scales them by 1/(1-p). */
static void masks_softmax_and_dropout(void **state)
{
    (void)state;
    const ref_attention_shape s = {2, 4, 8, 16, 40, 48, 10, true, 40};
    int32_t keys[80];
    for (int i = 0; i < 80; i++) keys[i] = (i % 40) < (i < 40 ? 40 : 29) ? 7 + i : 0;
    const size_t BH = 8, nq = BH * 16 * 8, nk = BH * 48 * 8, np = BH * 16 * 40;
    double *q = alloc_d(nq), *k = alloc_d(nk), *v = alloc_d(nk), *out = alloc_d(nq);
    double *p = alloc_d(np), *pd = alloc_d(np);
    ref_rng r = ref_rng_new(10);
    for (size_t i = 0; i < nq; i++) q[i] = ref_rng_uniform(&r, -2, 2);
    for (size_t i = 0; i < nk; i++) k[i] = ref_rng_uniform(&r, -2, 2), v[i] = k[i];
    const ref_attention_dropout drop = {0.25f, 42, 3, 17};
    ref_attention_forward(out, p, pd, q, k, v, keys, &s, &drop);
    size_t kept = 0, nonzero = 0;
    for (size_t bh = 0; bh < BH; bh++)
        for (size_t t = 0; t < 16; t++) {
            double sum = 0.0;
            for (size_t j = 0; j < 40; j++) {
                const size_t i = (bh * 16 + t) * 40 + j;
                const bool vis = j <= 10 + t && keys[(bh / 4) * 40 + j] != 0;
                if (!vis) assert_true(p[i] == 0.0 && pd[i] == 0.0);
                sum += p[i];
                if (p[i] > 0.0) {
                    nonzero++;
                    if (pd[i] != 0.0) {
                        kept++;
                        assert_true(fabs(pd[i] - p[i] / 0.75) <= 1e-15);
                    }
                }
            }
            assert_true(fabs(sum - 1.0) < 1e-12);
        }
    const double frac = (double)kept / (double)nonzero;
    if (fabs(frac - 0.75) > 0.04)
        fail_msg("dropout kept %.3f of %zu entries, want ~0.75", frac, nonzero);
    /* another site draws another mask */
    const ref_attention_dropout other = {0.25f, 42, 3, 18};
    double *pd2 = alloc_d(np);
    ref_attention_forward(out, p, pd2, q, k, v, keys, &s, &other);
    assert_true(memcmp(pd, pd2, np * sizeof *pd) != 0);
    free(q), free(k), free(v), free(out), free(p), free(pd), free(pd2);
}

static void split_merge_round_trip(void **state)
{
    (void)state;
    const size_t B = 2, T = 3, H = 3, dh = 5, ld = H * dh + 4;
    double src[2 * 3 * 19], heads[2 * 3 * 3 * 5], back[2 * 3 * 19];
    for (size_t i = 0; i < B * T * ld; i++) src[i] = (double)i, back[i] = -1.0;
    ref_split_heads(heads, src, ld, B, T, H, dh);
    /* element (b=1, h=2, t=1, j=3) came from row b*T+t, column h*dh+j */
    assert_true(heads[((1 * H + 2) * T + 1) * dh + 3] == src[(1 * T + 1) * ld + 2 * dh + 3]);
    ref_merge_heads(back, ld, heads, B, T, H, dh);
    for (size_t row = 0; row < B * T; row++)
        for (size_t c = 0; c < ld; c++)
            assert_true(back[row * ld + c] == (c < H * dh ? src[row * ld + c] : -1.0));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(fd_self_attention_padded),
        cmocka_unit_test(fd_self_attention_causal),
        cmocka_unit_test(fd_cross_and_decoding_shapes),
        cmocka_unit_test(fd_with_dropout),
        cmocka_unit_test(all_padded_batch_is_zero_not_nan),
        cmocka_unit_test(masks_softmax_and_dropout),
        cmocka_unit_test(split_merge_round_trip),
    };
    return cmocka_run_group_tests_name("ref_attention", tests, NULL, NULL);
}
