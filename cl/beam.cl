/*
 * Beam search on the device (runtime/decode/beam_device.c drives it): the
 * candidates of every hypothesis, the choice of each sentence's next beams
 * and finished hypotheses, and the reordering of the token table and the
 * self-attention caches, so that a step reads back one counter instead of
 * the log-probabilities.
 *
 * Rows r = sentence * K + k. Scores are sums of float log-probabilities in
 * double, as the host search (runtime/decode/beam.c) keeps them; candidates
 * rank by score (higher first), then beam, then token (lower first), the
 * host's order, so both give the same hypotheses. Needs cl_khr_fp64: the
 * host search serves devices without it.
 */
#include "common.h"

#define BEAM_EOS 2 /* CLFORMER_EOS */

/* table[r*L + c] = c == col ? next[r] : src[parents[r]*L + c]: the token
 * table reordered by parent, with the step's tokens as column `col`. */
kernel void beam_tokens(global int *dst, ulong dst_off, global const int *src, ulong src_off,
                        global const int *parents, ulong parents_off, global const int *next,
                        ulong next_off, int L, int R, int col)
{
    const int c = get_global_id(0), r = get_global_id(1);
    if (c >= L || r >= R) return;
    dst[dst_off + (ulong)r * L + c] =
        c == col ? next[next_off + r] : src[src_off + (ulong)parents[parents_off + r] * L + c];
}

/* Positions p < n of a cache (R, H, cap, dh), for the rows that change
 * parent (parents[r] != r): dst[r, h, p] = src[from_parent ? parents[r] : r,
 * h, p]. Dropping finished rows (cf_decoder_compact) runs it into a scratch
 * by the kept rows, then back unchanged.
 * Three dimensions, no divisions: they cost more than the copy on CPUs. */
kernel void beam_gather_cache(global float *dst, ulong dst_off, global const float *src,
                              ulong src_off, global const int *parents, ulong parents_off,
                              int R, int H, int cap, int dh, int n, int from_parent)
{
    const int i = get_global_id(0), h = get_global_id(1), r = get_global_id(2);
    if (i >= n * dh || h >= H || r >= R) return;
    const int p = parents[parents_off + r];
    if (p == r) return;
    const ulong from = ((ulong)(from_parent ? p : r) * H + h) * cap * dh + i;
    dst[dst_off + ((ulong)r * H + h) * cap * dh + i] = src[src_off + from];
}

#define BEAM_MAX_K 64 /* the widest beam */

/* The private arrays below (beam_reorder_caches' rows, beam_candidates'
 * sorted lists, beam_select's heads) are indexed by run-time values (K, M,
 * an insertion point), so GPU compilers keep them in off-chip memory
 * (NVPTX local, AMDGPU scratch: 768, 2,048 and 256 bytes). That is
 * deliberate: they are each work item's own (beam_candidates: up to 128
 * entries for every item of a group, beyond any shared memory), and these
 * kernels run once a decoding step, never in training. */

/* first[r]: the first of positions 0..n-1 where row r's tokens (the token
 * table, R x L) differ from those of its parent parents[r]; n when they
 * agree throughout or r is its own parent. A position's keys and values
 * follow from the tokens up to it (row by row, whatever the batch), so the
 * rows' caches agree before first[r]: reordering copies none of that. */
kernel void beam_shared_prefix(global int *first, ulong first_off, global const int *tokens,
                               ulong tokens_off, global const int *parents, ulong parents_off,
                               int R, int L, int n)
{
    const int r = get_global_id(0);
    if (r >= R) return;
    const int p = parents[parents_off + r];
    int j = 0;
    if (p == r || p < 0 || p >= R) {
        first[first_off + r] = n;
        return;
    }
    global const int *a = tokens + tokens_off + (ulong)r * L, *b = tokens + tokens_off + (ulong)p * L;
    while (j < n && a[j] == b[j]) j++;
    first[first_off + r] = j;
}

/* The self-attention caches reordered by parent, in place and in one pass:
 * positions first[r] .. n-1 of row r of every cache become those of row
 * parents[r] (the earlier ones agree already: beam_shared_prefix), a row
 * of the same sentence (rows i*K .. i*K+K-1: beam_select and the host
 * search choose parents there). One work item per element of a head of a
 * sentence (dh, H, batch), over the positions that some row of the
 * sentence takes (few: beams share their prefixes): at each, it reads the
 * element of the rows it copies from, then writes the rows that take it,
 * so no row is written before it is read and no scratch copy is needed.
 * Cache c of layer l starts at off + l * layer_stride + c * value_stride
 * (keys, then values), each (rows, H, cap, dh). */
kernel void beam_reorder_caches(global float *caches, ulong off, ulong layer_stride,
                                ulong value_stride, int layers, global const int *parents,
                                ulong parents_off, global const int *first, ulong first_off,
                                int batch, int K, int H, int cap, int dh, int n)
{
    const int e = get_global_id(0), h = get_global_id(1), s = get_global_id(2);
    if (e >= dh || h >= H || s >= batch) return;
    const int r0 = s * K;
    int from[BEAM_MAX_K], at[BEAM_MAX_K]; /* each row's parent (-1: keeps its own), first */
    int lo = n;
    for (int k = 0; k < K; k++) {
        const int p = parents[parents_off + r0 + k] - r0;
        const bool moves = p != k && p >= 0 && p < K; /* never from outside the sentence */
        from[k] = moves ? p : -1;
        at[k] = moves ? first[first_off + r0 + k] : n;
        lo = min(lo, at[k]);
    }
    const ulong row = (ulong)H * cap * dh;
    for (int pos = lo; pos < n; pos++)
        for (int l = 0; l < layers; l++)
            for (int c = 0; c < 2; c++) {
                global float *x = caches + off + l * layer_stride + c * value_stride +
                                  (ulong)r0 * row + ((ulong)h * cap + pos) * dh + e;
                float v[BEAM_MAX_K];
                for (int k = 0; k < K; k++)
                    if (at[k] <= pos) v[k] = x[from[k] * row];
                for (int k = 0; k < K; k++)
                    if (at[k] <= pos) x[k * row] = v[k];
            }
}

#if HAS_FP64
#pragma OPENCL EXTENSION cl_khr_fp64 : enable

/* True when (sb, vb) ranks before (sa, va): higher score, then lower index. */
static inline bool beam_before(double sb, int vb, double sa, int va)
{
    return sb > sa || (sb == sa && vb < va);
}

#define BEAM_MAX_M 128 /* 2 x the widest beam (64) */

/* The M best continuations of row r (one work-group per row, of a power of
 * two items up to REDUCE_WG: one on CPUs, where a group's barriers cost
 * more than one item's pass over the row), in rank order: cand_score = score[r] + logp[r][v], cand_token = v;
 * token -1 ends a list shorter than M (V < M). Each item keeps the M best of
 * its columns in a sorted list (one pass over the row); the group then
 * takes the best list head M times. Ranks are a total order, so ties are
 * exact and the lists the same on every device. Rows of finished sentences
 * and dead hypotheses (score not finite) are skipped: beam_select never
 * reads them. */
kernel void beam_candidates(global double *cand_score, ulong cand_score_off,
                            global int *cand_token, ulong cand_token_off,
                            global const float *logp, ulong logp_off, global const double *score,
                            ulong score_off, global const int *done, ulong done_off, int R,
                            int K, int V, int M)
{
    local double vals[REDUCE_WG];
    local int idx[REDUCE_WG];
    const int r = get_group_id(0), lid = get_local_id(0), wg = get_local_size(0);
    if (r >= R) return;
    const double base = score[score_off + r];
    if (done[done_off + r / K] || !isfinite(base)) return;
    global const float *x = logp + logp_off + (ulong)r * V;
    double ls[BEAM_MAX_M];
    float lx[BEAM_MAX_M]; /* the entries' log-probabilities */
    int lv[BEAM_MAX_M], n = 0;
    for (int v = lid; v < V; v += wg) { /* increasing v: ties stay behind */
        /* A full list takes v (above every v in it) only with a score above
         * its last's, which needs a larger log-probability (the score rises
         * with it, never falls): one float compare rejects the rest. */
        if (n == M && !(x[v] > lx[M - 1])) continue;
        const double s = base + (double)x[v];
        if (n == M && !beam_before(s, v, ls[M - 1], lv[M - 1])) continue;
        int j = n < M ? n++ : M - 1;
        for (; j > 0 && beam_before(s, v, ls[j - 1], lv[j - 1]); j--) {
            ls[j] = ls[j - 1];
            lx[j] = lx[j - 1];
            lv[j] = lv[j - 1];
        }
        ls[j] = s;
        lx[j] = x[v];
        lv[j] = v;
    }
    int head = 0;
    for (int j = 0; j < M; j++) {
        vals[lid] = head < n ? ls[head] : -INFINITY;
        idx[lid] = head < n ? lv[head] : INT_MAX; /* "none": loses every tie */
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int h = wg / 2; h > 0; h >>= 1) {
            if (lid < h && beam_before(vals[lid + h], idx[lid + h], vals[lid], idx[lid])) {
                vals[lid] = vals[lid + h];
                idx[lid] = idx[lid + h];
            }
            barrier(CLK_LOCAL_MEM_FENCE);
        }
        const double best = vals[0];
        const int at = idx[0];
        barrier(CLK_LOCAL_MEM_FENCE); /* every item has read the winner */
        if (head < n && lv[head] == at) head++; /* columns are distinct: one owner */
        if (lid == 0) {
            cand_score[cand_score_off + (ulong)r * M + j] = best;
            cand_token[cand_token_off + (ulong)r * M + j] = at == INT_MAX ? -1 : at;
        }
        if (at == INT_MAX) break;
    }
}

/* The beams of one step (one work item per sentence i), as the host's
 * advance(): the 2K best candidates of the sentence's live beams (a merge of
 * their sorted lists), in rank order until K continue; one that ends the
 * sentence (<eos> among the K best, or any on the last step; an <eos> ranked
 * lower is passed over) is finished instead: scored
 * score / pen[t + 1] (pen[n] = n^penalty), it replaces the sentence's best
 * when higher. A sentence is done when K finished, none continues, none
 * can still beat the best, or at the last step; done ones keep their rows
 * (parent = itself, token <eos>).
 * Writes the next scores, parents and tokens; counts done sentences in
 * n_done. The token table (R, L) holds each row's <sos> and its t tokens. */
kernel void beam_select(global double *score, ulong score_off,
                        global const double *cand_score, ulong cand_score_off,
                        global const int *cand_token, ulong cand_token_off,
                        global const double *pen, ulong pen_off,
                        global const int *tokens, ulong tokens_off,
                        global int *parents, ulong parents_off, global int *next, ulong next_off,
                        global double *best_score, ulong best_score_off,
                        global int *best_tokens, ulong best_tokens_off,
                        global int *best_len, ulong best_len_off,
                        global int *finished, ulong finished_off,
                        global int *done, ulong done_off, global int *n_done, ulong n_done_off,
                        int batch, int K, int M, int L, int t, int last)
{
    const int i = get_global_id(0);
    if (i >= batch) return;
    const int r0 = i * K;
    if (done[done_off + i]) { /* finished sentences idle on <eos> */
        for (int k = 0; k < K; k++) {
            parents[parents_off + r0 + k] = r0 + k;
            next[next_off + r0 + k] = BEAM_EOS;
        }
        return;
    }
    int head[64]; /* per beam: its next candidate; M when it has none */
    for (int k = 0; k < K; k++) head[k] = isfinite(score[score_off + r0 + k]) ? 0 : M;
    int kept = 0, n_finished = finished[finished_off + i];
    double best = best_score[best_score_off + i];
    for (int n = 0; n < 2 * K && kept < K; n++) {
        int bk = -1, tok = -1;
        double bs = -INFINITY;
        for (int k = 0; k < K; k++) { /* ties go to the lower beam */
            if (head[k] >= M) continue;
            const ulong c = (ulong)(r0 + k) * M + head[k];
            const int v = cand_token[cand_token_off + c];
            const double s = cand_score[cand_score_off + c];
            if (v >= 0 && (bk < 0 || s > bs)) {
                bk = k;
                bs = s;
                tok = v;
            }
        }
        if (bk < 0) break;
        head[bk]++;
        if (tok == BEAM_EOS && n >= K && !last) continue; /* below the K best: ends nothing */
        if (tok == BEAM_EOS || last) {
            const double ns = bs / pen[pen_off + t + 1];
            if (ns > best) {
                global const int *h = tokens + tokens_off + (ulong)(r0 + bk) * L;
                global int *b = best_tokens + best_tokens_off + (ulong)i * L;
                for (int j = 0; j < t; j++) b[j] = h[j + 1];
                if (tok != BEAM_EOS) b[t] = tok;
                best = ns;
                best_len[best_len_off + i] = t + (tok != BEAM_EOS);
            }
            n_finished++;
            continue;
        }
        score[score_off + r0 + kept] = bs;
        parents[parents_off + r0 + kept] = r0 + bk;
        next[next_off + r0 + kept] = tok;
        kept++;
    }
    for (int k = kept; k < K; k++) { /* fewer live candidates than beams */
        score[score_off + r0 + k] = -INFINITY;
        parents[parents_off + r0 + k] = r0;
        next[next_off + r0 + k] = BEAM_EOS;
    }
    best_score[best_score_off + i] = best;
    finished[finished_off + i] = n_finished;
    /* Scores never rise (log-probabilities <= 0), so a live hypothesis can
     * at most reach score / L^penalty: when none can beat the best, the
     * sentence is decided early, with the result it would get anyway. */
    bool hopeless = kept > 0;
    for (int k = 0; k < kept; k++) {
        const double s = score[score_off + r0 + k];
        hopeless = hopeless && s <= 0.0 && s / pen[pen_off + L] <= best;
    }
    if (n_finished >= K || kept == 0 || last || hopeless) {
        done[done_off + i] = 1;
        atomic_inc(n_done + n_done_off);
    }
}
#endif
