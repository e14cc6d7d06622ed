/* Multi-head attention on the device against the double-precision reference,
 * through the shared check's case runner (conf_attention_run: guards on every
 * tensor, rows >= Tk of dK and dV untouched, fully padded batches 0, a
 * bit-identical rerun): head dims 8, 64, 80; odd lengths; self-, causal,
 * cross- and decoding attention (Tk_cap > Tk, q_pos0 > 0); padded and fully
 * padded keys; dropout on and off; every case on the unfused and the fused
 * path. Then what only the device test does: the fused backward against
 * finite differences of the fused forward, degenerate sizes, argument
 * errors, the head split/merge layout, and which fused kernels run: the
 * tiled ones wherever the device profile has tiles (CLFORMER_PROFILE=
 * gpu-layouts), for every head size, and the per-row ones elsewhere. */
#include "harness.h"
#include "conformance.h"
#include "kernel_ids.h"
#include "ops.h"
#include "ref_attention.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Values in rows >= Tk of dkh/dvh and columns outside a merge: must survive. */
#define UNTOUCHED 777.0f

/* Elements [from, to) must be exactly 0 (a fully masked batch). */
static void assert_zero(const float *x, size_t from, size_t to, const char *what)
{
    for (size_t i = from; i < to; i++)
        if (x[i] != 0.0f) fail_msg("%s[%zu] = %g in a fully padded batch, want 0", what, i, x[i]);
}

/* Each case through the shared check on both paths (unfused, then fused),
 * with seeds seed, seed + 1, ... */
static void run_cases(const conf_attention_case *cases, size_t n, uint64_t seed)
{
    for (int fused = 0; fused < 2; fused++)
        for (size_t i = 0; i < n; i++) {
            conf_attention_case c = cases[i];
            c.seed = seed + i;
            c.fused = fused;
            assert_conformance_case(conf_attention_run(hctx(), &c, harness_conf_sink, &failures));
        }
}
#define RUN(cases, seed) run_cases((cases), sizeof(cases) / sizeof *(cases), (seed))

/* {B, H, dh, Tq, Tk, Tk_cap, q_pos0, causal, keys, p, separate_drop}; seeds by run_cases */

static void attention_self(void **state)
{
    (void)state;
    static const conf_attention_case slow[] = {
        {1, 2, 8, 7, 7, 7, 0, false, CONF_KEYS_RIGHT_PAD, 0.0f, false},
        {2, 1, 8, 1, 1, 1, 0, false, CONF_KEYS_FULL, 0.0f, true},
    };
    static const conf_attention_case fast[] = {
        {2, 3, 64, 61, 61, 61, 0, false, CONF_KEYS_RIGHT_PAD, 0.0f, false},
        {3, 2, 8, 7, 7, 7, 0, false, CONF_KEYS_RANDOM_PAD, 0.0f, true},
        {2, 2, 80, 93, 93, 93, 0, false, CONF_KEYS_RIGHT_PAD, 0.0f, false},
        {1, 5, 64, 1, 1, 1, 0, false, CONF_KEYS_FULL, 0.0f, false},
        {2, 2, 64, 61, 61, 61, 0, false, CONF_KEYS_NONE, 0.0f, true},
    };
    if (harness_is_slow()) RUN(slow, 100);
    else RUN(fast, 100);
}

static void attention_causal(void **state)
{
    (void)state;
    static const conf_attention_case slow[] = {{2, 1, 8, 7, 7, 7, 0, true, CONF_KEYS_RANDOM_PAD, 0.0f, false}};
    static const conf_attention_case fast[] = {
        {2, 3, 64, 61, 61, 61, 0, true, CONF_KEYS_RIGHT_PAD, 0.0f, false},
        {3, 2, 8, 7, 7, 7, 0, true, CONF_KEYS_RANDOM_PAD, 0.0f, false},
        {2, 2, 80, 93, 93, 93, 0, true, CONF_KEYS_NONE, 0.0f, false},
        {1, 2, 64, 257, 257, 257, 0, true, CONF_KEYS_RIGHT_PAD, 0.1f, true},
    };
    if (harness_is_slow()) RUN(slow, 200);
    else RUN(fast, 200);
}

static void attention_cross(void **state)
{
    (void)state;
    static const conf_attention_case slow[] = {{1, 2, 8, 7, 1, 1, 0, false, CONF_KEYS_FULL, 0.0f, false},
                                 {2, 1, 8, 1, 7, 7, 0, false, CONF_KEYS_RIGHT_PAD, 0.0f, false}};
    static const conf_attention_case fast[] = {
        {2, 3, 64, 7, 61, 61, 0, false, CONF_KEYS_RIGHT_PAD, 0.0f, false},
        {2, 2, 80, 61, 7, 7, 0, false, CONF_KEYS_RANDOM_PAD, 0.0f, false},
        {3, 2, 8, 61, 93, 93, 0, false, CONF_KEYS_RIGHT_PAD, 0.0f, false},
        {2, 2, 64, 93, 1, 1, 0, false, CONF_KEYS_FULL, 0.0f, false},
    };
    if (harness_is_slow()) RUN(slow, 300);
    else RUN(fast, 300);
}

/* Incremental decoding: a key cache of Tk_cap rows, Tk in use, queries from q_pos0. */
static void attention_decoding_cache(void **state)
{
    (void)state;
    static const conf_attention_case slow[] = {{2, 2, 8, 1, 7, 9, 6, true, CONF_KEYS_RIGHT_PAD, 0.0f, false},
                                 {1, 2, 8, 3, 7, 8, 2, true, CONF_KEYS_FULL, 0.0f, false}};
    static const conf_attention_case fast[] = {
        {3, 2, 64, 1, 61, 93, 60, true, CONF_KEYS_RIGHT_PAD, 0.0f, false},
        {2, 3, 80, 1, 7, 93, 6, true, CONF_KEYS_NONE, 0.0f, false},
        {2, 2, 8, 1, 61, 64, 30, true, CONF_KEYS_FULL, 0.0f, false}, /* keys after q_pos0 masked */
        {2, 2, 80, 7, 61, 64, 54, true, CONF_KEYS_RANDOM_PAD, 0.0f, false},
        {2, 2, 64, 1, 1, 93, 0, true, CONF_KEYS_FULL, 0.0f, false},
        {2, 2, 64, 7, 61, 93, 0, false, CONF_KEYS_RIGHT_PAD, 0.0f, false}, /* cross, cached memory */
    };
    if (harness_is_slow()) RUN(slow, 400);
    else RUN(fast, 400);
}

/* Grouped-query and multi-query attention: H_kv key/value heads, each read
 * by H / H_kv query heads (training, a decoding cache, padding, dropout). */
static void attention_grouped_query(void **state)
{
    (void)state;
    static const conf_attention_case slow[] = {
        {1, 4, 8, 5, 5, 5, 0, true, CONF_KEYS_NONE, 0.0f, false, 0, false, 2},
        {2, 2, 8, 1, 7, 9, 6, true, CONF_KEYS_RIGHT_PAD, 0.0f, false, 0, false, 1},
    };
    static const conf_attention_case fast[] = {
        {2, 6, 64, 61, 61, 61, 0, true, CONF_KEYS_NONE, 0.0f, false, 0, false, 2},
        {2, 4, 32, 37, 37, 37, 0, true, CONF_KEYS_NONE, 0.1f, true, 0, false, 1},
        {3, 6, 8, 7, 7, 7, 0, false, CONF_KEYS_RANDOM_PAD, 0.0f, false, 0, false, 3},
        {2, 4, 64, 1, 61, 93, 60, true, CONF_KEYS_FULL, 0.0f, false, 0, false, 2},
        {2, 3, 80, 7, 61, 64, 54, true, CONF_KEYS_NONE, 0.0f, false, 0, false, 1},
    };
    if (harness_is_slow()) RUN(slow, 700);
    else RUN(fast, 700);
}

static void attention_padded_batches_give_zero_not_nan(void **state)
{
    (void)state;
    static const conf_attention_case slow[] = {{3, 1, 8, 7, 7, 7, 0, true, CONF_KEYS_ONE_EMPTY, 0.2f, true},
                                 {2, 1, 8, 1, 7, 9, 6, true, CONF_KEYS_ALL_EMPTY, 0.0f, false}};
    static const conf_attention_case fast[] = {
        {3, 2, 64, 61, 61, 61, 0, false, CONF_KEYS_ONE_EMPTY, 0.0f, false},
        {3, 2, 8, 7, 7, 7, 0, true, CONF_KEYS_ONE_EMPTY, 0.1f, true},
        {2, 2, 80, 7, 61, 61, 0, false, CONF_KEYS_ALL_EMPTY, 0.0f, true},
        {2, 3, 64, 1, 7, 93, 6, true, CONF_KEYS_ALL_EMPTY, 0.3f, true},
    };
    if (harness_is_slow()) RUN(slow, 500);
    else RUN(fast, 500);
}

static void attention_dropout(void **state)
{
    (void)state;
    static const conf_attention_case slow[] = {{1, 2, 8, 7, 7, 7, 0, true, CONF_KEYS_RIGHT_PAD, 0.25f, true}};
    static const conf_attention_case fast[] = {
        {2, 3, 64, 61, 61, 61, 0, false, CONF_KEYS_RIGHT_PAD, 0.1f, true},
        {2, 2, 80, 93, 93, 93, 0, true, CONF_KEYS_RANDOM_PAD, 0.1f, true},
        {3, 2, 8, 7, 61, 64, 0, false, CONF_KEYS_FULL, 0.5f, true},
        {2, 2, 64, 1, 61, 93, 60, true, CONF_KEYS_RIGHT_PAD, 0.2f, true},
    };
    if (harness_is_slow()) RUN(slow, 600);
    else RUN(fast, 600);
}

/* The head sizes of common models (32 to 128) and others: one that is no
 * whole number of float4 columns (6), one whose columns do not split evenly
 * over a row's work items (20). The tiled kernels are built per head size. */
static void attention_head_sizes(void **state)
{
    (void)state;
    static const conf_attention_case slow[] = {{1, 1, 6, 5, 5, 5, 0, true, CONF_KEYS_FULL, 0.0f, false}};
    static const conf_attention_case fast[] = {
        {1, 2, 32, 33, 33, 33, 0, true, CONF_KEYS_RIGHT_PAD, 0.1f, true},
        {1, 2, 96, 20, 33, 33, 0, false, CONF_KEYS_RANDOM_PAD, 0.0f, false},
        {1, 1, 128, 33, 33, 33, 0, true, CONF_KEYS_FULL, 0.0f, false},
        {2, 1, 6, 19, 19, 19, 0, false, CONF_KEYS_RIGHT_PAD, 0.1f, true},
        {1, 2, 20, 19, 19, 21, 0, true, CONF_KEYS_RANDOM_PAD, 0.0f, false},
    };
    if (harness_is_slow()) RUN(slow, 700);
    else RUN(fast, 700);
}

/* Launches of the fused kernels while one fused forward and backward of
 * head size dh run: tiled (the three of cl/flash_attention_tiled.cl) and
 * per row (cl/flash_attention.cl, either variant). */
static void fused_launches(size_t dh, uint64_t *tiled, uint64_t *rows)
{
    static const cf_kernel_id tiled_ids[] = {CF_K_FLASH_TILED_FORWARD,
                                             CF_K_FLASH_TILED_BACKWARD_DQ,
                                             CF_K_FLASH_TILED_BACKWARD_DKV};
    static const cf_kernel_id row_ids[] = {
        CF_K_FLASH_ATTENTION_FORWARD,       CF_K_FLASH_ATTENTION_FORWARD_SIMPLE,
        CF_K_FLASH_ATTENTION_BACKWARD_DQ,   CF_K_FLASH_ATTENTION_BACKWARD_DQ_SIMPLE,
        CF_K_FLASH_ATTENTION_BACKWARD_DKV,  CF_K_FLASH_ATTENTION_BACKWARD_DKV_SIMPLE};
    uint64_t before[CF_K_COUNT];
    memcpy(before, hctx()->kernel_launches, sizeof before);
    const conf_attention_case c = {1, 2, dh, 5, 5, 5, 0, true, CONF_KEYS_RIGHT_PAD, 0.0f, false,
                                   900, true};
    assert_conformance_case(conf_attention_run(hctx(), &c, harness_conf_sink, &failures));
    *tiled = *rows = 0;
    for (size_t i = 0; i < 3; i++)
        *tiled += hctx()->kernel_launches[tiled_ids[i]] - before[tiled_ids[i]];
    for (size_t i = 0; i < 6; i++)
        *rows += hctx()->kernel_launches[row_ids[i]] - before[row_ids[i]];
}

/* Which fused kernels run is the device profile's choice: the tiled ones
 * wherever it takes a GPU's paths (CLFORMER_PROFILE=gpu-layouts in CI), for
 * head sizes up to 256 (two launches per pass and kernel: a run and a rerun),
 * the per-row ones beyond and on devices with CPU paths. */
static void fused_kernels_follow_the_profile(void **state)
{
    (void)state;
    const bool gpu = hctx()->device_profile.tiled_attention;
    assert_int_equal(gpu, hctx()->device_profile.gpu_layouts);
    uint64_t tiled, rows;
    const size_t sizes[] = {8, 64, 257};
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
        if (harness_is_slow() && sizes[i] > 8) break;
        const bool want_tiled = gpu && sizes[i] <= 256;
        assert_int_equal(cf_attention_tiled(hctx(), sizes[i]), want_tiled);
        fused_launches(sizes[i], &tiled, &rows);
        if (want_tiled ? tiled != 6 || rows : rows != 6 || tiled)
            fail_msg("dh=%zu: %llu tiled and %llu per-row fused launches, want 6 %s", sizes[i],
                     (unsigned long long)tiled, (unsigned long long)rows,
                     want_tiled ? "tiled" : "per-row");
    }
}

/* Empty sizes write nothing; no keys at all gives a zero output. */
static void attention_degenerate_sizes(void **state)
{
    (void)state;
    hbuf a = hbuf_zeros(64, 4), g = hbuf_zeros(64, 4);
    const cf_view x = cf_view_at(a.mem, a.off), y = cf_view_at(g.mem, g.off);
    const cf_attention_saved saved = {y, y};
    cf_attention_shape s = {0, 2, 8, 3, 3, 3, 0, false, 3};
    assert_ok(cf_attention_forward(hctx(), x, &saved, x, x, x, cf_view_at(NULL, 0), &s, NULL));
    assert_ok(cf_attention_backward(hctx(), x, x, x, y, x, &saved, x, x, x, &s, NULL));
    hbuf_check_canary(a);
    hbuf_check_canary(g);
    hbuf_free(g);

    /* Tk == 0: ctx_h (1, 2, 3, 8) = 0, dqh = 0 */
    float ones[48], got[48];
    for (int i = 0; i < 48; i++) ones[i] = 1.0f;
    hbuf o = hbuf_from_f32(ones, 48, 6);
    s = (cf_attention_shape){1, 2, 8, 3, 0, 0, 0, true, 0};
    assert_ok(cf_attention_forward(hctx(), cf_view_at(o.mem, o.off), &saved, x, x, x,
                                   cf_view_at(NULL, 0), &s, NULL));
    hbuf_read(o, got);
    assert_zero(got, 0, 48, "ctx_h with Tk = 0");
    assert_ok(cf_upload(hctx(), o.mem, o.off, ones, 48));
    assert_ok(cf_attention_backward(hctx(), cf_view_at(o.mem, o.off), x, x, y, x, &saved, x, x,
                                    x, &s, NULL));
    hbuf_read(o, got);
    assert_zero(got, 0, 48, "dqh with Tk = 0");
    hbuf_check_canary(o);
    hbuf_check_canary(a);
    hbuf_free(o), hbuf_free(a);
}

static void attention_bad_arguments_are_reported(void **state)
{
    (void)state;
    hbuf a = hbuf_zeros(256, 0), b = hbuf_zeros(256, 0);
    const cf_view x = cf_view_at(a.mem, 0);
    const cf_attention_saved same = {cf_view_at(b.mem, 0), cf_view_at(b.mem, 0)};
    cf_attention_shape s = {1, 1, 8, 2, 5, 4, 0, false, 5}; /* Tk > Tk_cap */
    assert_int_equal(cf_attention_forward(hctx(), x, &same, x, x, x, x, &s, NULL),
                     CLFORMER_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(clformer_last_error(), "Tk_cap"));
    s.Tk_cap = 5;
    const cf_dropout drop = {0.1f, 1, 1, 1};
    assert_int_equal(cf_attention_forward(hctx(), x, &same, x, x, x, x, &s, &drop),
                     CLFORMER_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(clformer_last_error(), "probs_drop"));
    /* p = 1 would scale the kept (none) by 1/(1-p) = inf: refused */
    const cf_attention_saved apart = {cf_view_at(b.mem, 0), cf_view_at(b.mem, 128)};
    const cf_dropout all = {1.0f, 1, 1, 1};
    assert_int_equal(cf_attention_forward(hctx(), x, &apart, x, x, x, x, &s, &all),
                     CLFORMER_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(clformer_last_error(), "must be below 1"));
    assert_int_equal(cf_split_heads(hctx(), x, x, 7, 1, 2, 2, 4), CLFORMER_ERR_INVALID_ARGUMENT);
    cf_attention_shape g = {1, 4, 8, 2, 2, 2, 0, true, 2, 3}; /* 3 key/value heads for 4 */
    assert_int_equal(cf_attention_forward(hctx(), x, &apart, x, x, x, x, &g, NULL),
                     CLFORMER_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(clformer_last_error(), "must divide H=4"));
    hbuf_free(a), hbuf_free(b);
}

/* split then merge restores the packed rows; merge leaves other columns alone. */
static void split_merge_heads(void **state)
{
    (void)state;
    const size_t B = harness_is_slow() ? 2 : 3, T = harness_is_slow() ? 7 : 61, H = 3;
    const size_t dhs[] = {6, 8, 64, 80}; /* 6: CPU devices' float4 moves leave a tail */
    for (size_t d = 0; d < sizeof dhs / sizeof *dhs; d++) {
        const size_t dh = dhs[d], ld = H * dh + 5, n = B * T * ld, nh = B * H * T * dh;
        ref_rng r = ref_rng_new(d);
        float *src = hmalloc(n * 4), *heads = hmalloc(nh * 4), *back = hmalloc(n * 4);
        double *src64 = hmalloc(n * 8), *heads64 = hmalloc(nh * 8);
        ref_fill_uniform(&r, src, src64, n, -1, 1);
        hbuf ds = hbuf_from_f32(src, n, 3), dh_ = hbuf_zeros(nh, 5);
        assert_ok(cf_split_heads(hctx(), cf_view_at(dh_.mem, dh_.off), cf_view_at(ds.mem, ds.off),
                                 ld, B, T, H, dh));
        hbuf_read(dh_, heads);
        ref_split_heads(heads64, src64, ld, B, T, H, dh);
        for (size_t i = 0; i < nh; i++)
            if (heads[i] != (float)heads64[i]) fail_msg("split_heads: element %zu differs", i);

        for (size_t i = 0; i < n; i++) back[i] = UNTOUCHED;
        hbuf db = hbuf_from_f32(back, n, 7);
        assert_ok(cf_merge_heads(hctx(), cf_view_at(db.mem, db.off), ld,
                                 cf_view_at(dh_.mem, dh_.off), B, T, H, dh));
        hbuf_read(db, back);
        for (size_t row = 0; row < B * T; row++)
            for (size_t c = 0; c < ld; c++)
                if (back[row * ld + c] != (c < H * dh ? src[row * ld + c] : UNTOUCHED))
                    fail_msg("merge_heads: row %zu column %zu", row, c);
        hbuf_check_canary(ds), hbuf_check_canary(dh_), hbuf_check_canary(db);
        hbuf_free(ds), hbuf_free(dh_), hbuf_free(db);
        free(src), free(heads), free(back), free(src64), free(heads64);
    }
}

/* The fused backward against central finite differences of the fused
 * forward itself, in float on the device: L = sum(out * W) over a causal,
 * padded case with dropout (a fixed mask: L is smooth in q, k and v), so
 * dL/dx is the backward with dout = W. Every 5th element of q, k and v;
 * every 17th on a simulator (two forward launches an element, which under
 * Oclgrind's checks with a GPU's tiles take about a second each), which still
 * crosses every head and the padded key. */
static void fused_backward_matches_finite_differences(void **state)
{
    (void)state;
    enum { B = 1, H = 2, TQ = 5, TK = 6, DH = 8, NQ = B * H * TQ * DH, NK = B * H * TK * DH };
    const cf_attention_shape s = {B, H, DH, TQ, TK, TK, 1, true, TK};
    const cf_dropout drop = {0.2f, 99, 3, 7};
    const int32_t keys[TK] = {5, 9, 0, 7, 8, 6}; /* key 2 is padding */
    float x[3][NK], w[NQ], got[3][NK], out[NQ];
    const size_t n[3] = {NQ, NK, NK};
    ref_rng r = ref_rng_new(77);
    double scratch[NK];
    for (int t = 0; t < 3; t++) ref_fill_uniform(&r, x[t], scratch, n[t], -1, 1);
    ref_fill_uniform(&r, w, scratch, NQ, -1, 1);
    hbuf in[3], grad[3];
    for (int t = 0; t < 3; t++) in[t] = hbuf_from_f32(x[t], n[t], 3), grad[t] = hbuf_zeros(n[t], 5);
    hbuf o = hbuf_zeros(NQ, 7), dout = hbuf_from_f32(w, NQ, 9), stats = hbuf_zeros(2 * B * H * TQ, 11),
         dsum = hbuf_zeros(B * H * TQ, 13), kt = hbuf_from_i32(keys, TK, 15);
#define V_(b) cf_view_at((b).mem, (b).off)
    const cf_view none = cf_view_at(NULL, 0);
    const cf_attention_saved saved = {none, none, V_(stats), V_(o), V_(kt)};
    assert_ok(cf_attention_forward(hctx(), V_(o), &saved, V_(in[0]), V_(in[1]), V_(in[2]), V_(kt),
                                   &s, &drop));
    assert_ok(cf_attention_backward(hctx(), V_(grad[0]), V_(grad[1]), V_(grad[2]), V_(dsum),
                                    V_(dout), &saved, V_(in[0]), V_(in[1]), V_(in[2]), &s, &drop));
    for (int t = 0; t < 3; t++) hbuf_read(grad[t], got[t]);
    const float h = 1e-2f;
    const size_t stride = harness_is_slow() ? 17 : 5;
    for (int t = 0; t < 3; t++) {
        float gmax = 0.0f;
        for (size_t i = 0; i < n[t]; i++) gmax = fmaxf(gmax, fabsf(got[t][i]));
        for (size_t i = 0; i < n[t]; i += stride) {
            double L[2];
            for (int side = 0; side < 2; side++) {
                float y[NK];
                memcpy(y, x[t], n[t] * 4);
                y[i] += side ? -h : h;
                assert_ok(cf_upload(hctx(), in[t].mem, in[t].off, y, n[t]));
                assert_ok(cf_attention_forward(hctx(), V_(o), &saved, V_(in[0]), V_(in[1]),
                                               V_(in[2]), V_(kt), &s, &drop));
                hbuf_read(o, out);
                L[side] = 0.0;
                for (size_t e = 0; e < NQ; e++) L[side] += (double)out[e] * w[e];
            }
            assert_ok(cf_upload(hctx(), in[t].mem, in[t].off, x[t], n[t]));
            const double fd = (L[0] - L[1]) / (2.0 * h);
            if (fabs(fd - got[t][i]) > 2e-3 * gmax + 2e-4)
                fail_msg("d%c[%zu]: fused backward %.6g, finite differences %.6g", "qkv"[t], i,
                         got[t][i], fd);
        }
    }
#undef V_
    for (int t = 0; t < 3; t++) hbuf_free(in[t]), hbuf_free(grad[t]);
    hbuf_free(o), hbuf_free(dout), hbuf_free(stats), hbuf_free(dsum), hbuf_free(kt);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(attention_self),
    cmocka_unit_test(attention_causal),
    cmocka_unit_test(attention_cross),
    cmocka_unit_test(attention_decoding_cache),
    cmocka_unit_test(attention_grouped_query),
    cmocka_unit_test(attention_padded_batches_give_zero_not_nan),
    cmocka_unit_test(attention_dropout),
    cmocka_unit_test(attention_head_sizes),
    cmocka_unit_test(fused_kernels_follow_the_profile),
    cmocka_unit_test(attention_degenerate_sizes),
    cmocka_unit_test(attention_bad_arguments_are_reported),
    cmocka_unit_test(split_merge_heads),
    cmocka_unit_test(fused_backward_matches_finite_differences),
};
HARNESS_DEVICE_MAIN("attention", tests)
