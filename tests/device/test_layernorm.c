/* LayerNorm forward and backward against the double-precision reference,
 * through the shared check's case runner (conf_layernorm_run: guards on every
 * tensor, backward twice, += for dweight/dbias): odd shapes, model widths,
 * rows of constant values and rows with a large mean. Then what only the
 * device test does: bit-identical repeats and argument errors. */
#include "harness.h"
#include "conformance.h"
#include "ops.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define EPS 1e-5f

typedef enum { DATA_PLAIN, DATA_SPECIAL } data_kind;

/* Inputs for the determinism test. */
typedef struct {
    size_t N, C;
    float *inp, *weight, *bias, *dout;
} problem;

static problem make(size_t N, size_t C, uint64_t seed)
{
    problem p = {N, C};
    ref_rng r = ref_rng_new(seed);
    p.inp = hmalloc(N * C * 4), p.weight = hmalloc(C * 4), p.bias = hmalloc(C * 4);
    p.dout = hmalloc(N * C * 4);
    ref_fill_uniform(&r, p.inp, NULL, N * C, -2, 2);
    ref_fill_uniform(&r, p.weight, NULL, C, 0.5, 1.5);
    ref_fill_uniform(&r, p.bias, NULL, C, -0.5, 0.5);
    ref_fill_uniform(&r, p.dout, NULL, N * C, -1, 1);
    return p;
}

static void release(problem *p) { free(p->inp), free(p->weight), free(p->bias), free(p->dout); }

static cf_view view(hbuf b) { return cf_view_at(b.mem, b.off); }

/* One case of the shared check (runtime/check/conf_layernorm.c): forward,
 * then backward overwriting and accumulating, every tensor guarded. */
static void check_case(size_t N, size_t C, uint64_t seed, data_kind kind)
{
    const conf_layernorm_case c = {N, C, seed, kind == DATA_SPECIAL};
    assert_conformance_case(conf_layernorm_run(hctx(), &c, harness_conf_sink, &failures));
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
    problem p = make(N, C, 60);
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

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(layernorm_odd_shapes),
    cmocka_unit_test(layernorm_model_widths),
    cmocka_unit_test(layernorm_constant_rows_and_large_mean),
    cmocka_unit_test(layernorm_is_deterministic),
    cmocka_unit_test(layernorm_edge_arguments),
};
HARNESS_DEVICE_MAIN("layernorm", tests)
