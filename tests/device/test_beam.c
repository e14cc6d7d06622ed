/*
 * The kernels of beam search on the device (cl/beam.cl) against host
 * references: each row's candidates in rank order with many tied
 * log-probabilities, the token table's and the caches' reordering (the
 * prefixes rows share with their parents, which need no copy), and one
 * step's selection in hand-worked cases (ties across beams, finished
 * hypotheses, an <eos> below the K best, early decisions, the last step,
 * done sentences). The whole
 * search against the host search is in test_session.
 */
#include "harness.h"
#include "ops_beam.h"
#include "ops_decode.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static cf_view view(hbuf b) { return cf_view_at(b.mem, b.off); }

/* n doubles at element offset 2 (doubles must start at an even offset). */
static hbuf doubles(const double *host, size_t n)
{
    return hbuf_from_f32((const float *)host, 2 * n, 2);
}

typedef struct {
    double score;
    int32_t token;
} ranked;

static int by_rank(const void *a, const void *b)
{
    const ranked *x = a, *y = b;
    if (x->score != y->score) return x->score > y->score ? -1 : 1;
    return (x->token > y->token) - (x->token < y->token);
}

/* Rows of V log-probabilities drawn from four values (ties everywhere);
 * sentence 1 is done and beam 2 of each sentence dead: their candidate
 * rows must stay untouched. */
static void check_candidates(size_t V)
{
    const size_t batch = 3, K = 3, R = batch * K, M = 2 * K;
    ref_rng rng = ref_rng_new(40 + V);
    float *logp = hmalloc(R * V * sizeof *logp);
    for (size_t i = 0; i < R * V; i++) logp[i] = -0.5f * (float)(ref_rng_next(&rng) % 4);
    double score[9], cand_score[9 * 6];
    int32_t cand_token[9 * 6], done[3] = {0, 1, 0};
    for (size_t r = 0; r < R; r++) score[r] = r % K == 2 ? -INFINITY : -1.25 * (double)r - 0.1;
    for (size_t i = 0; i < R * M; i++) cand_score[i] = 12345.0, cand_token[i] = -7;
    hbuf lp = hbuf_from_f32(logp, R * V, 3), sc = doubles(score, R);
    hbuf cs = doubles(cand_score, R * M);
    hbuf ct = hbuf_from_i32(cand_token, R * M, 5), dn = hbuf_from_i32(done, batch, 1);
    cf_beam_views b = {0};
    b.score = view(sc);
    b.cand_score = view(cs);
    b.cand_token = view(ct);
    b.done = view(dn);
    assert_ok(cf_beam_candidates(hctx(), &b, view(lp), R, K, V, M));
    double got_score[9 * 6];
    int32_t got_token[9 * 6];
    hbuf_read(cs, got_score);
    hbuf_read(ct, got_token);
    hbuf_check_canary(cs);
    hbuf_check_canary(ct);
    ranked *want = hmalloc(V * sizeof *want);
    for (size_t r = 0; r < R; r++) {
        const bool skipped = done[r / K] || !isfinite(score[r]);
        for (size_t v = 0; v < V; v++)
            want[v] = (ranked){score[r] + (double)logp[r * V + v], (int32_t)v};
        qsort(want, V, sizeof *want, by_rank);
        for (size_t j = 0; j < M; j++) {
            const double ws = skipped ? 12345.0 : want[j < V ? j : 0].score;
            /* -1 ends a short list; nothing is written after it */
            const int32_t wt = skipped || j > V ? -7 : j < V ? want[j].token : -1;
            if (got_token[r * M + j] != wt || (wt >= 0 && got_score[r * M + j] != ws))
                fail_msg("V=%zu row %zu candidate %zu: got token %d score %.17g, want %d %.17g",
                         V, r, j, got_token[r * M + j], got_score[r * M + j], wt, ws);
        }
    }
    free(want);
    free(logp);
    hbuf_free(lp);
    hbuf_free(sc);
    hbuf_free(cs);
    hbuf_free(ct);
    hbuf_free(dn);
}

static void candidates_are_ranked_with_ties_to_the_lower_token(void **state)
{
    (void)state;
    if (!hctx()->info.fp64) skip(); /* the host search serves devices without fp64 */
    static const size_t fast[] = {1, 5, 23, 300, 10007}, slow[] = {1, 5, 23, 70};
    const size_t n = harness_is_slow() ? sizeof slow / sizeof *slow : sizeof fast / sizeof *fast;
    for (size_t i = 0; i < n; i++) check_candidates(harness_is_slow() ? slow[i] : fast[i]);
}

/* Rows gathered by parent, column `col` replaced by the step's tokens. */
static void token_table_is_reordered_by_parent(void **state)
{
    (void)state;
    enum { R = 5, L = 7, COL = 3 };
    int32_t table[R * L], parents[R] = {2, 2, 0, 4, 1}, next[R] = {9, 8, 7, 6, 5}, got[R * L];
    for (int i = 0; i < R * L; i++) table[i] = 100 + i;
    hbuf src = hbuf_from_i32(table, R * L, 1), dst = hbuf_zeros(R * L, 4);
    hbuf par = hbuf_from_i32(parents, R, 2), nx = hbuf_from_i32(next, R, 0);
    assert_ok(cf_beam_tokens(hctx(), view(dst), view(src), view(par), view(nx), L, R, COL));
    hbuf_read(dst, got);
    hbuf_check_canary(dst);
    for (int r = 0; r < R; r++)
        for (int c = 0; c < L; c++)
            assert_int_equal(got[r * L + c], c == COL ? next[r] : table[parents[r] * L + c]);
    hbuf_free(src);
    hbuf_free(dst);
    hbuf_free(par);
    hbuf_free(nx);
}

/* Rows gathered by index as raw words (cl/decode.cl's gather_rows, which
 * drops finished rows from decoding): ints, floats and NaN payloads arrive
 * bit for bit; rows outside the map and the guards stay untouched. */
static void rows_are_gathered_bit_for_bit(void **state)
{
    (void)state;
    enum { R = 7, W = 5, N = 4 };
    int32_t words[R * W], map[N] = {0, 2, 3, 6}, got[N * W];
    for (int i = 0; i < R * W; i++)
        words[i] = i % 3 == 0 ? 100 + i : i % 3 == 1 ? (int32_t)0x7fa00000 + i /* NaN payload */
                                                     : (int32_t)0x80000001 + i; /* denormal */
    hbuf src = hbuf_from_i32(words, R * W, 3), dst = hbuf_zeros(N * W, 2);
    hbuf m = hbuf_from_i32(map, N, 1);
    assert_ok(cf_gather_rows_words(hctx(), view(dst), view(src), view(m), W, N));
    hbuf_read(dst, got);
    hbuf_check_canary(dst);
    hbuf_check_canary(src);
    for (int r = 0; r < N; r++)
        for (int c = 0; c < W; c++)
            if (got[r * W + c] != words[map[r] * W + c])
                fail_msg("row %d word %d: %08x, want %08x", r, c, (unsigned)got[r * W + c],
                         (unsigned)words[map[r] * W + c]);
    hbuf_free(src);
    hbuf_free(dst);
    hbuf_free(m);
}

/* Cache rows by parent, through a scratch and back, as decoding reorders
 * its caches: the first n positions of rows that change parent move, the
 * rest stays. */
static void cache_rows_follow_their_parents(void **state)
{
    (void)state;
    enum { R = 6, H = 3, CAP = 5, DH = 4, N = 3, COUNT = R * H * CAP * DH };
    const int32_t parents[R] = {0, 0, 3, 1, 4, 2}; /* 0 and 4 keep theirs */
    float cache[COUNT], got[COUNT];
    for (int i = 0; i < COUNT; i++) cache[i] = (float)i;
    hbuf c = hbuf_from_f32(cache, COUNT, 3), tmp = hbuf_zeros(COUNT, 1);
    hbuf par = hbuf_from_i32(parents, R, 2);
    assert_ok(cf_beam_gather_cache(hctx(), view(tmp), view(c), view(par), R, H, CAP, DH, N, true));
    assert_ok(cf_beam_gather_cache(hctx(), view(c), view(tmp), view(par), R, H, CAP, DH, N, false));
    hbuf_read(c, got);
    hbuf_check_canary(c);
    hbuf_check_canary(tmp);
    for (int r = 0; r < R; r++)
        for (int h = 0; h < H; h++)
            for (int p = 0; p < CAP; p++)
                for (int j = 0; j < DH; j++) {
                    const int at = ((r * H + h) * CAP + p) * DH + j;
                    const int from = p < N ? ((parents[r] * H + h) * CAP + p) * DH + j : at;
                    if (got[at] != cache[from])
                        fail_msg("row %d head %d position %d: got %g, want %g", r, h, p,
                                 (double)got[at], (double)cache[from]);
                }
    hbuf_free(c);
    hbuf_free(tmp);
    hbuf_free(par);
}

/* Each row's first position (of n) where its tokens differ from its
 * parent's: n for a row that is its own parent or agrees throughout. */
static void shared_prefix_ends_where_the_tokens_differ(void **state)
{
    (void)state;
    enum { R = 6, L = 6, N = 4 };
    const int32_t table[R * L] = {1, 5, 6, 7, 8, 9,  1, 5, 6, 3, 0, 0,  1, 4, 6, 7, 2, 2,
                                  1, 5, 6, 7, 0, 3,  1, 9, 9, 9, 9, 9,  1, 5, 6, 7, 8, 8};
    /* 1 agrees with 0 up to 3; 2 with 0 up to 1; 3 with 0 through n (its later
     * columns differ); 4 and 5 keep their own; 0 from 4: differs at 1 */
    const int32_t parents[R] = {4, 0, 0, 0, 4, 5}, want[R] = {1, 3, 1, N, N, N};
    int32_t got[R];
    hbuf tk = hbuf_from_i32(table, R * L, 3), par = hbuf_from_i32(parents, R, 1);
    hbuf first = hbuf_zeros(R, 2);
    assert_ok(cf_beam_shared_prefix(hctx(), view(first), view(tk), view(par), R, L, N));
    hbuf_read(first, got);
    hbuf_check_canary(first);
    for (int r = 0; r < R; r++) assert_int_equal(got[r], want[r]);
    hbuf_free(tk);
    hbuf_free(par);
    hbuf_free(first);
}

/* The self caches of two layers (keys and values, with gaps between them)
 * reordered in place by parent within each sentence: positions first[r]
 * .. n-1 of a row that changes parent take its parent's old numbers (also
 * when rows swap, or the parent moves too), everything else stays: the
 * earlier positions, those from n on, the gaps, rows that keep their
 * parent, and a row whose parent lies outside its sentence. */
static void caches_follow_their_parents_in_place(void **state)
{
    (void)state;
    enum { B = 3, K = 3, R = B * K, H = 2, CAP = 5, DH = 3, N = 4, ROWS = R * H * CAP * DH };
    enum { VALUE = ROWS + 7, LAYER = 2 * VALUE + 11, COUNT = 2 * LAYER };
    /* sentence 0: 0 keeps, 1 and 2 swap; sentence 1: all from row 3 (4 and
     * 5 from position 0 and 2); sentence 2: 6 from 7, 7 from 8, 8 from
     * row 0 (outside: stays) */
    const int32_t parents[R] = {0, 2, 1, 3, 3, 3, 7, 8, 0};
    const int32_t first[R] = {N, 1, 3, 0, 0, 2, 2, 0, 0};
    float *cache = hmalloc(COUNT * sizeof *cache), *got = hmalloc(COUNT * sizeof *got);
    for (int i = 0; i < COUNT; i++) cache[i] = (float)i + 0.5f;
    hbuf c = hbuf_from_f32(cache, COUNT, 3);
    hbuf par = hbuf_from_i32(parents, R, 1), fi = hbuf_from_i32(first, R, 2);
    assert_ok(cf_beam_reorder_caches(hctx(), view(c), LAYER, VALUE, 2, view(par), view(fi), B, K,
                                     H, CAP, DH, N));
    hbuf_read(c, got);
    hbuf_check_canary(c);
    hbuf_check_canary(par);
    for (int i = 0; i < COUNT; i++) {
        const int base = i / LAYER * LAYER + (i % LAYER) / VALUE * VALUE, e = i - base;
        int want = i;
        if (i % LAYER < 2 * VALUE && e < ROWS) { /* inside one cache */
            const int r = e / (H * CAP * DH), rest = e % (H * CAP * DH);
            const int pos = rest / DH % CAP, p = parents[r];
            if (p != r && p / K == r / K && pos >= first[r] && pos < N)
                want = base + p * H * CAP * DH + rest;
        }
        if (got[i] != cache[want])
            fail_msg("element %d: got %g, want %g (element %d)", i, (double)got[i],
                     (double)cache[want], want);
    }
    free(cache);
    free(got);
    hbuf_free(c);
    hbuf_free(par);
    hbuf_free(fi);
}

/* One sentence, K = 2, M = 4, step t = 1 of L = 4, penalty 1 (pen[n] = n). */
enum { SK = 2, SM = 4, SL = 4 };
typedef struct {
    double score[SK], cand_score[SK * SM];
    int32_t cand_token[SK * SM];
    int32_t done, last;
} select_case;

typedef struct {
    double score[SK], best_score;
    int32_t parents[SK], next[SK], best_tokens[SL], best_len, finished, done, n_done;
} select_result;

static select_result run_select(const select_case *c)
{
    const double pen[SL + 1] = {1, 1, 2, 3, 4}, best = -INFINITY;
    const int32_t tokens[SK * SL] = {CLFORMER_SOS, 11, 2, 2, CLFORMER_SOS, 12, 2, 2};
    const int32_t ints[4] = {0, 0, c->done, 0}; /* best_len, finished, done, n_done */
    hbuf sc = doubles(c->score, SK), cs = doubles(c->cand_score, SK * SM);
    hbuf ct = hbuf_from_i32(c->cand_token, SK * SM, 1), pn = doubles(pen, SL + 1);
    hbuf bs = doubles(&best, 1), bt = hbuf_zeros(SL, 3), st = hbuf_from_i32(ints, 4, 1);
    hbuf tk = hbuf_from_i32(tokens, SK * SL, 0), par = hbuf_zeros(SK, 1), nx = hbuf_zeros(SK, 2);
    const cf_beam_views b = {view(sc), view(cs), view(ct), view(pn), view(bs), view(bt),
                             view(st), cf_view_add(view(st), 1), cf_view_add(view(st), 2),
                             cf_view_add(view(st), 3)};
    assert_ok(cf_beam_select(hctx(), &b, view(tk), view(par), view(nx), 1, SK, SM, SL, 1,
                             c->last));
    select_result r;
    int32_t got[4];
    hbuf_read(sc, r.score);
    hbuf_read(bs, &r.best_score);
    hbuf_read(par, r.parents);
    hbuf_read(nx, r.next);
    hbuf_read(bt, r.best_tokens);
    hbuf_read(st, got);
    r.best_len = got[0], r.finished = got[1], r.done = got[2], r.n_done = got[3];
    hbuf_check_canary(sc);
    hbuf_check_canary(bt);
    hbuf_check_canary(st);
    hbuf_check_canary(par);
    hbuf_check_canary(nx);
    hbuf_free(sc), hbuf_free(cs), hbuf_free(ct), hbuf_free(pn), hbuf_free(bs);
    hbuf_free(bt), hbuf_free(st), hbuf_free(tk), hbuf_free(par), hbuf_free(nx);
    return r;
}

static void selection_follows_the_host_search(void **state)
{
    (void)state;
    if (!hctx()->info.fp64) skip(); /* the host search serves devices without fp64 */
    const int E = CLFORMER_EOS;
    /* equal scores across beams: the lower beam first, whatever the tokens */
    select_case c = {{-0.5, -0.75}, {-1, -1.5, -3, -4, -1, -1.25, -5, -6},
                     {5, E, 7, 8, 4, 6, 9, 10}, 0, 0};
    select_result r = run_select(&c);
    assert_int_equal(r.parents[0], 0), assert_int_equal(r.parents[1], 1);
    assert_int_equal(r.next[0], 5), assert_int_equal(r.next[1], 4);
    assert_true(r.score[0] == -1 && r.score[1] == -1);
    assert_int_equal(r.finished, 0), assert_int_equal(r.done, 0), assert_int_equal(r.n_done, 0);
    assert_true(r.best_score == -INFINITY);

    /* <eos> first: finished (score / 2 with its <eos>), then two continue */
    const select_case eos_first = {{-0.5, -0.75}, {-0.6, -1, -3, -4, -1, -1.25, -5, -6},
                                   {E, 5, 7, 8, 4, 6, 9, 10}, 0, 0};
    r = run_select(&eos_first);
    assert_true(r.best_score == -0.3);
    assert_int_equal(r.best_len, 1), assert_int_equal(r.best_tokens[0], 11);
    assert_int_equal(r.parents[0], 0), assert_int_equal(r.parents[1], 1);
    assert_int_equal(r.next[0], 5), assert_int_equal(r.next[1], 4);
    assert_int_equal(r.finished, 1), assert_int_equal(r.done, 0);

    /* an <eos> ranked below the K best ends nothing (fairseq's and Hugging
     * Face's rule): beam 1's at rank 2 is passed over, so one hypothesis has
     * finished, not K, and the sentence goes on */
    const select_case eos_low = {{-0.5, -0.75}, {-0.6, -1, -3, -4, -1.1, -1.2, -5, -6},
                                 {E, 5, 7, 8, E, 4, 9, 10}, 0, 0};
    r = run_select(&eos_low);
    assert_true(r.best_score == -0.3);
    assert_int_equal(r.finished, 1), assert_int_equal(r.done, 0), assert_int_equal(r.n_done, 0);
    assert_int_equal(r.parents[0], 0), assert_int_equal(r.parents[1], 1);
    assert_int_equal(r.next[0], 5), assert_int_equal(r.next[1], 4);
    assert_true(r.score[0] == -1 && r.score[1] == -1.2);

    /* a finished hypothesis no live one can beat (-1 / 4 <= -0.1): decided */
    select_case hopeless = eos_first;
    hopeless.cand_score[0] = -0.2;
    r = run_select(&hopeless);
    assert_true(r.best_score == -0.1);
    assert_int_equal(r.finished, 1), assert_int_equal(r.done, 1), assert_int_equal(r.n_done, 1);
    assert_int_equal(r.parents[0], 0), assert_int_equal(r.parents[1], 1);

    /* last step: the 2K best all finish; the best keeps its last token */
    select_case last = eos_first;
    last.cand_score[SM] = -0.4;
    last.last = 1;
    r = run_select(&last);
    assert_true(r.best_score == -0.2);
    assert_int_equal(r.best_len, 2);
    assert_int_equal(r.best_tokens[0], 12), assert_int_equal(r.best_tokens[1], 4);
    assert_int_equal(r.finished, 2 * SK), assert_int_equal(r.done, 1);
    assert_int_equal(r.n_done, 1);
    assert_true(r.score[0] == -INFINITY && r.score[1] == -INFINITY);
    assert_int_equal(r.next[0], E), assert_int_equal(r.next[1], E);

    /* a done sentence idles: each row its own parent, <eos> next */
    select_case idle = c;
    idle.done = 1;
    r = run_select(&idle);
    assert_int_equal(r.parents[0], 0), assert_int_equal(r.parents[1], 1);
    assert_int_equal(r.next[0], E), assert_int_equal(r.next[1], E);
    assert_true(r.score[0] == -0.5 && r.score[1] == -0.75);
    assert_int_equal(r.n_done, 0);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(candidates_are_ranked_with_ties_to_the_lower_token),
    cmocka_unit_test(token_table_is_reordered_by_parent),
    cmocka_unit_test(rows_are_gathered_bit_for_bit),
    cmocka_unit_test(cache_rows_follow_their_parents),
    cmocka_unit_test(shared_prefix_ends_where_the_tokens_differ),
    cmocka_unit_test(caches_follow_their_parents_in_place),
    cmocka_unit_test(selection_follows_the_host_search),
};

HARNESS_DEVICE_MAIN("beam", tests)
