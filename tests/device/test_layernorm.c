/* LayerNorm forward and backward against the double-precision reference:
 * odd shapes, offsets and canaries on every tensor, backward twice (+= for
 * dweight/dbias, dinp overwritten or accumulated per flag), rows of
 * constant values and rows with a large mean, bit-identical repeats. */
#include "harness.h"
#include "conformance.h"
#include "ops.h"
#include "ref_layernorm.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define EPS 1e-5f

typedef enum { DATA_PLAIN, DATA_SPECIAL } data_kind;

/* Inputs of one case, as floats and as the doubles the reference reads. */
typedef struct {
    size_t N, C;
    float *inp, *weight, *bias, *dout, *dw0, *db0;
    double *inp64, *weight64, *bias64, *dout64;
} problem;

static problem make(size_t N, size_t C, uint64_t seed, data_kind kind)
{
    problem p = {N, C};
    ref_rng r = ref_rng_new(seed);
    p.inp = hmalloc(N * C * 4), p.weight = hmalloc(C * 4), p.bias = hmalloc(C * 4);
    p.dout = hmalloc(N * C * 4), p.dw0 = hmalloc(C * 4), p.db0 = hmalloc(C * 4);
    ref_fill_uniform(&r, p.inp, NULL, N * C, -2, 2);
    ref_fill_uniform(&r, p.weight, NULL, C, 0.5, 1.5);
    ref_fill_uniform(&r, p.bias, NULL, C, -0.5, 0.5);
    ref_fill_uniform(&r, p.dout, NULL, N * C, -1, 1);
    ref_fill_uniform(&r, p.dw0, NULL, C, -1, 1); /* existing gradients to add to */
    ref_fill_uniform(&r, p.db0, NULL, C, -1, 1);
    if (kind == DATA_SPECIAL)
        for (size_t row = 0; row < N; row++) {
            float *x = p.inp + row * C;
            if (row % 3 == 0) /* variance 0 */
                for (size_t c = 0; c < C; c++) x[c] = 0.375f + (float)row;
            else if (row % 3 == 1) /* mean 1000, spread 1 */
                for (size_t c = 0; c < C; c++) x[c] = 1000.0f + 0.5f * x[c];
        }
    p.inp64 = to_double(p.inp, N * C), p.weight64 = to_double(p.weight, C);
    p.bias64 = to_double(p.bias, C), p.dout64 = to_double(p.dout, N * C);
    return p;
}

static void release(problem *p)
{
    free(p->inp), free(p->weight), free(p->bias), free(p->dout), free(p->dw0), free(p->db0);
    free(p->inp64), free(p->weight64), free(p->bias64), free(p->dout64);
}

static cf_view view(hbuf b) { return cf_view_at(b.mem, b.off); }

/* Forward, then backward twice (accumulate false, then true), each checked
 * against the reference, with every output guarded. */
static void check_case(size_t N, size_t C, uint64_t seed, data_kind kind)
{
    problem p = make(N, C, seed, kind);
    const size_t NC = N * C;
    hbuf inp = hbuf_from_f32(p.inp, NC, 3), weight = hbuf_from_f32(p.weight, C, 5),
         bias = hbuf_from_f32(p.bias, C, 7), out = hbuf_zeros(NC, 11), mean = hbuf_zeros(N, 13),
         rstd = hbuf_zeros(N, 1), dout = hbuf_from_f32(p.dout, NC, 2);
    float *y = hmalloc(NC * 4), *m = hmalloc(N * 4), *rs = hmalloc(N * 4);
    double *y64 = hmalloc(NC * 8), *m64 = hmalloc(N * 8), *rs64 = hmalloc(N * 8);

    assert_ok(cf_fill(hctx(), out.mem, out.off, NC, NAN)); /* forward overwrites */
    assert_ok(cf_layernorm_forward(hctx(), view(out), view(mean), view(rstd), view(inp),
                                   view(weight), view(bias), N, C, EPS));
    ref_layernorm_forward(y64, m64, rs64, p.inp64, p.weight64, p.bias64, N, C, EPS);
    hbuf_read(out, y), hbuf_read(mean, m), hbuf_read(rstd, rs);
    assert_forward_close(y, y64, NC);
    assert_forward_close(m, m64, N);
    assert_forward_close(rs, rs64, N);
    hbuf_check_canary(out), hbuf_check_canary(mean), hbuf_check_canary(rstd);

    hbuf dinp = hbuf_zeros(NC, 17), dw = hbuf_from_f32(p.dw0, C, 19),
         db = hbuf_from_f32(p.db0, C, 23);
    assert_ok(cf_fill(hctx(), dinp.mem, dinp.off, NC, 1e30f)); /* overwritten: not added to */
    double *dx64 = hmalloc(NC * 8), *dw64 = to_double(p.dw0, C), *db64 = to_double(p.db0, C);
    float *dx = hmalloc(NC * 4), *gw = hmalloc(C * 4), *gb = hmalloc(C * 4);
    for (int pass = 0; pass < 2; pass++) {
        const bool acc = pass == 1;
        assert_ok(cf_layernorm_backward(hctx(), view(dinp), view(dw), view(db), view(dout),
                                        view(inp), view(weight), view(mean), view(rstd), N, C,
                                        acc));
        ref_layernorm_backward(dx64, dw64, db64, p.dout64, p.inp64, p.weight64, m64, rs64, N, C,
                               acc);
        hbuf_read(dinp, dx), hbuf_read(dw, gw), hbuf_read(db, gb);
        assert_grad_close(dx, dx64, NC);
        assert_grad_close(gw, dw64, C);
        assert_grad_close(gb, db64, C);
        hbuf_check_canary(dinp), hbuf_check_canary(dw), hbuf_check_canary(db);
    }
    hbuf_check_canary(inp), hbuf_check_canary(dout); /* inputs untouched around */

    hbuf_free(inp), hbuf_free(weight), hbuf_free(bias), hbuf_free(out), hbuf_free(mean);
    hbuf_free(rstd), hbuf_free(dout), hbuf_free(dinp), hbuf_free(dw), hbuf_free(db);
    free(y), free(m), free(rs), free(y64), free(m64), free(rs64), free(dx64), free(dw64);
    free(db64), free(dx), free(gw), free(gb);
    release(&p);
}

static const size_t odd[] = {1, 7, 61, 93, 257};

static void layernorm_odd_shapes(void **state)
{
    (void)state;
    if (harness_is_slow()) {
        const size_t shapes[][2] = {{1, 1}, {7, 5}, {3, 37}, {40, 9}};
        for (size_t i = 0; i < 4; i++) check_case(shapes[i][0], shapes[i][1], 10 + i, DATA_PLAIN);
        return;
    }
    for (size_t i = 0; i < 5; i++)
        for (size_t j = 0; j < 5; j++) check_case(odd[i], odd[j], 100 + 5 * i + j, DATA_PLAIN);
}

static void layernorm_model_widths(void **state)
{
    (void)state;
    if (harness_is_slow()) {
        check_case(2, 512, 40, DATA_PLAIN);
        return;
    }
    check_case(257, 512, 41, DATA_PLAIN);
    check_case(93, 2048, 42, DATA_PLAIN);
    check_case(1, 2048, 43, DATA_PLAIN);
}

/* Rows of one repeated value (variance 0: out = bias, finite rstd) and rows
 * 1000 + noise (a naive fp32 sum would lose the noise). */
static void layernorm_constant_rows_and_large_mean(void **state)
{
    (void)state;
    if (harness_is_slow()) {
        check_case(6, 37, 50, DATA_SPECIAL);
        return;
    }
    check_case(7, 61, 51, DATA_SPECIAL);
    check_case(61, 512, 52, DATA_SPECIAL);
    check_case(12, 2048, 53, DATA_SPECIAL);
}

/* Same inputs, same bits: forward outputs and accumulated gradients. */
static void layernorm_is_deterministic(void **state)
{
    (void)state;
    const size_t N = harness_is_slow() ? 40 : 257, C = harness_is_slow() ? 9 : 512, NC = N * C;
    problem p = make(N, C, 60, DATA_PLAIN);
    hbuf inp = hbuf_from_f32(p.inp, NC, 0), weight = hbuf_from_f32(p.weight, C, 0),
         bias = hbuf_from_f32(p.bias, C, 0), dout = hbuf_from_f32(p.dout, NC, 0);
    float *first = hmalloc((NC + 2 * N + NC + 2 * C) * 4);
    float *again = hmalloc((NC + 2 * N + NC + 2 * C) * 4);
    for (int run = 0; run < 2; run++) {
        float *dst = run ? again : first;
        hbuf out = hbuf_zeros(NC, 0), mean = hbuf_zeros(N, 0), rstd = hbuf_zeros(N, 0),
             dinp = hbuf_zeros(NC, 0), dw = hbuf_zeros(C, 0), db = hbuf_zeros(C, 0);
        assert_ok(cf_layernorm_forward(hctx(), view(out), view(mean), view(rstd), view(inp),
                                       view(weight), view(bias), N, C, EPS));
        assert_ok(cf_layernorm_backward(hctx(), view(dinp), view(dw), view(db), view(dout),
                                        view(inp), view(weight), view(mean), view(rstd), N, C,
                                        false));
        hbuf_read(out, dst), hbuf_read(mean, dst + NC), hbuf_read(rstd, dst + NC + N);
        hbuf_read(dinp, dst + NC + 2 * N), hbuf_read(dw, dst + 2 * NC + 2 * N);
        hbuf_read(db, dst + 2 * NC + 2 * N + C);
        hbuf_free(out), hbuf_free(mean), hbuf_free(rstd), hbuf_free(dinp), hbuf_free(dw);
        hbuf_free(db);
    }
    assert_memory_equal(first, again, (NC + 2 * N + NC + 2 * C) * 4);
    hbuf_free(inp), hbuf_free(weight), hbuf_free(bias), hbuf_free(dout);
    free(first), free(again);
    release(&p);
}

/* Sizes of 0 are no-ops; aliasing dinp with dout and a bad eps are refused. */
static void layernorm_edge_arguments(void **state)
{
    (void)state;
    hbuf a = hbuf_zeros(64, 4), b = hbuf_zeros(64, 4), c = hbuf_zeros(64, 4);
    cf_view va = view(a), vb = view(b), vc = view(c);
    assert_ok(cf_layernorm_forward(hctx(), va, vb, vc, va, vb, vc, 0, 8, EPS));
    assert_ok(cf_layernorm_backward(hctx(), va, vb, vc, vb, va, vb, va, vc, 8, 0, false));
    hbuf_check_canary(a), hbuf_check_canary(b), hbuf_check_canary(c);
    assert_int_equal(cf_layernorm_backward(hctx(), va, vb, vc, cf_view_add(va, 4), vb, vc, vb,
                                           vc, 2, 8, false),
                     CLFORMER_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(clformer_last_error(), "dinp overlaps dout"));
    assert_int_equal(cf_layernorm_forward(hctx(), va, vb, vc, va, vb, vc, 2, 8, 0.0f),
                     CLFORMER_ERR_INVALID_ARGUMENT);
    hbuf_free(a), hbuf_free(b), hbuf_free(c);
}

/* The check `clformer check --layer layernorm` runs passes here too. */
static void layernorm_conformance(void **state)
{
    (void)state;
    assert_conformance(conf_layernorm);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(layernorm_odd_shapes),
    cmocka_unit_test(layernorm_model_widths),
    cmocka_unit_test(layernorm_constant_rows_and_large_mean),
    cmocka_unit_test(layernorm_is_deterministic),
    cmocka_unit_test(layernorm_edge_arguments),
    cmocka_unit_test(layernorm_conformance),
};
HARNESS_DEVICE_MAIN("layernorm", tests)
