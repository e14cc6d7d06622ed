/*
 * The host provider's AVX-512 product (gemm_avx512.h says when it runs).
 * The usual blocked scheme: op(B) is copied in blocks of KC rows by NC
 * columns into panels NR columns wide, zero-padded to whole panels, and a
 * register tile of MR x NR (16 zmm accumulators) runs over each B panel and
 * MR rows of op(A). Those rows are read where they lie when they lie along
 * k (no trans_a: each of the MR rows streams forward); with trans_a, op(A)
 * is copied in blocks of MC rows into panels MR rows high first. Copying
 * rows that already stream would cost a pass over A: at m 768, k 512 that
 * copy took a quarter of the product, more with A out of cache (as it is
 * in a model's step). The sizes keep a B panel (32 KiB) in L1 and the A
 * block in L2.
 */
#include "gemm_avx512.h"
#include "status.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))

#include <immintrin.h>
#include <pthread.h>
#include <stdatomic.h>

#ifdef CLFORMER_HAVE_OPENBLAS
#include <cblas.h>
#endif

enum { MR = 8, NR = 32, KC = 256, MC = 128, NC = 1024 };

#define AVX512 __attribute__((target("avx512f")))

bool cf_gemm_avx512_available(void)
{
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f");
}

static int min_int(int a, int b) { return a < b ? a : b; }

/* The first n of 16 lanes (none for n <= 0, all for n >= 16). */
static __mmask16 lanes(int n)
{
    return n >= 16 ? 0xFFFF : n <= 0 ? 0 : (__mmask16)((1u << n) - 1);
}

/* r[i] (16 rows of 16) becomes its transpose: r[q] holds column q. Within
 * each 128-bit lane first (unpack, then shuffle: 4 x 4 blocks), then the
 * lanes themselves as a 4 x 4 transpose of 128-bit blocks. */
AVX512 static void transpose16(__m512 r[16])
{
    __m512 t[16];
    for (int i = 0; i < 16; i += 2) {
        t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
        t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
    }
    for (int g = 0; g < 16; g += 4) { /* r[g + c], lane L: column 4L + c of rows g..g+3 */
        r[g] = _mm512_shuffle_ps(t[g], t[g + 2], 0x44);
        r[g + 1] = _mm512_shuffle_ps(t[g], t[g + 2], 0xEE);
        r[g + 2] = _mm512_shuffle_ps(t[g + 1], t[g + 3], 0x44);
        r[g + 3] = _mm512_shuffle_ps(t[g + 1], t[g + 3], 0xEE);
    }
    for (int c = 0; c < 4; c++) {
        const __m512 u0 = _mm512_shuffle_f32x4(r[c], r[4 + c], 0x44),
                     u1 = _mm512_shuffle_f32x4(r[c], r[4 + c], 0xEE),
                     u2 = _mm512_shuffle_f32x4(r[8 + c], r[12 + c], 0x44),
                     u3 = _mm512_shuffle_f32x4(r[8 + c], r[12 + c], 0xEE);
        t[c] = _mm512_shuffle_f32x4(u0, u2, 0x88);
        t[4 + c] = _mm512_shuffle_f32x4(u0, u2, 0xDD);
        t[8 + c] = _mm512_shuffle_f32x4(u1, u3, 0x88);
        t[12 + c] = _mm512_shuffle_f32x4(u1, u3, 0xDD);
    }
    for (int i = 0; i < 16; i++) r[i] = t[i];
}

/* Up to 16 floats of each of `rows` rows (stride ld) from src, the first
 * `cols` of each (the rest, and rows past `rows`, zero), transposed: r[q]
 * holds column q: op(B)'s columns with trans_b lie along k and are packed so. */
AVX512 static void load_transposed(const float *src, size_t ld, int rows, int cols, __m512 r[16])
{
    const __mmask16 mask = lanes(cols);
    for (int i = 0; i < 16; i++)
        r[i] = i < rows ? _mm512_maskz_loadu_ps(mask, src + (size_t)i * ld) : _mm512_setzero_ps();
    transpose16(r);
}

/* Prefetches. The operands of a model's products are mostly out of cache
 * (written by the kernel before, or weights last read a step ago), and
 * OpenBLAS's kernels read ahead in software too. Measured cold (each call on
 * operands not touched for 48 MiB, 2-vCPU AMD EPYC, gpt-mini's 19 shapes):
 * 6.1 ms without, 5.3 with those below; the products' bits do not change.
 * B's rows are read PREFETCH_ROWS ahead as they are packed, A's rows (read
 * in place) A_AHEAD floats ahead once a line, and a tile's rows of C before
 * its sums over k, so that the stores find them. */
enum { PREFETCH_ROWS = 8, A_AHEAD = 64 };

#define PREFETCH(p) _mm_prefetch((const char *)(p), _MM_HINT_T0)

static inline void prefetch_line_pair(const float *p)
{
    PREFETCH(p);
    PREFETCH(p + 16);
}

/* op(B) rows p0..p0+kc, columns j0..j0+nc into panels of NR columns. */
AVX512 static void pack_b(bool trans, const float *b, int ldb, int p0, int kc, int j0, int nc,
                          float *out)
{
    for (int jp = 0; jp < nc; jp += NR, out += (size_t)NR * kc) {
        const int w = min_int(NR, nc - jp);
        if (!trans) { /* rows of op(B) are rows of b; past w, zeros */
            const __mmask16 m0 = lanes(w), m1 = lanes(w - 16);
            for (int p = 0; p < kc; p++) {
                const float *row = b + (size_t)(p0 + p) * ldb + j0 + jp;
                if (p + PREFETCH_ROWS < kc) prefetch_line_pair(row + (size_t)PREFETCH_ROWS * ldb);
                _mm512_store_ps(out + (size_t)p * NR, _mm512_maskz_loadu_ps(m0, row));
                _mm512_store_ps(out + (size_t)p * NR + 16, _mm512_maskz_loadu_ps(m1, row + 16));
            }
        } else { /* op(B)'s columns are rows of b: transposed 16 x 16 at a time */
            for (int p = 0; p < kc; p += 16)
                for (int half = 0; half < NR; half += 16) {
                    __m512 r[16];
                    for (int q = 0; half + q < w && q < 16 && p + 16 < kc; q++) /* the next 16 */
                        PREFETCH(b + (size_t)(j0 + jp + half + q) * ldb + p0 + p + 16);
                    if (half < w)
                        load_transposed(b + (size_t)(j0 + jp + half) * ldb + p0 + p,
                                        (size_t)ldb, w - half, kc - p, r);
                    else /* columns past the product: zero */
                        for (int q = 0; q < 16; q++) r[q] = _mm512_setzero_ps();
                    for (int q = 0; q < 16 && p + q < kc; q++)
                        _mm512_store_ps(out + (size_t)(p + q) * NR + half, r[q]);
                }
        }
    }
}

/* op(A) rows i0..i0+mc, columns p0..p0+kc into panels of MR rows, for
 * trans_a only: columns of op(A) are rows of a (past h, zeros). */
AVX512 static void pack_a(const float *a, int lda, int i0, int mc, int p0, int kc, float *out)
{
    for (int ip = 0; ip < mc; ip += MR, out += (size_t)MR * kc) {
        const __mmask16 m = lanes(min_int(MR, mc - ip));
        for (int p = 0; p < kc; p++) {
            const __m512 col = _mm512_maskz_loadu_ps(m, a + (size_t)(p0 + p) * lda + i0 + ip);
            _mm256_store_ps(out + (size_t)p * MR, _mm512_castps512_ps256(col));
        }
    }
}

/* The MR x NR tile: acc = sum over p of A(i, p) * B(p, j), then rows < h
 * and columns < w of C get alpha * acc + beta * C (first block of k, beta
 * 0: alpha * acc) or alpha * acc + C (later blocks). A(i, p) is
 * arow[i][p * kstep]: a packed panel (kstep MR) or op(A) read in place
 * (kstep 1, rows past h repeating row h - 1 so as to read within A). B(p, j)
 * is bp[p * NR + j] in a packed panel (b_packed: 64-byte aligned, zero past
 * w) or bp[p * ldb + j] in op(B) read in place (columns past w not read,
 * taken as zero: the same sums). */
__attribute__((always_inline)) AVX512 static inline void
tile_body(int kc, const float *const arow[MR], size_t kstep, const float *bp, bool b_packed,
          size_t ldb, float *c, int ldc, int h, int w, float alpha, float beta, bool first)
{
    const float *a0 = arow[0], *a1 = arow[1], *a2 = arow[2], *a3 = arow[3], *a4 = arow[4],
                *a5 = arow[5], *a6 = arow[6], *a7 = arow[7];
    __m512 c00 = _mm512_setzero_ps(), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00,
           c30 = c00, c31 = c00, c40 = c00, c41 = c00, c50 = c00, c51 = c00, c60 = c00,
           c61 = c00, c70 = c00, c71 = c00;
    for (int i = 0; i < h; i++) prefetch_line_pair(c + (size_t)i * ldc);
    const __mmask16 bm0 = lanes(w), bm1 = lanes(w - 16);
    const size_t bstep = b_packed ? NR : ldb;
    for (size_t p = 0; p < (size_t)kc; p++, bp += bstep) {
        const __m512 b0 = b_packed ? _mm512_load_ps(bp) : _mm512_maskz_loadu_ps(bm0, bp),
                     b1 = b_packed ? _mm512_load_ps(bp + 16) : _mm512_maskz_loadu_ps(bm1, bp + 16);
        const size_t q = p * kstep;
        if (kstep == 1 && p % 16 == 0) { /* A read in place: a line ahead of each row */
            const size_t f = q + A_AHEAD;
            PREFETCH(a0 + f), PREFETCH(a1 + f), PREFETCH(a2 + f), PREFETCH(a3 + f);
            PREFETCH(a4 + f), PREFETCH(a5 + f), PREFETCH(a6 + f), PREFETCH(a7 + f);
        }
#define ROW(i)                                                                                 \
    do {                                                                                       \
        const __m512 ai = _mm512_set1_ps(a##i[q]);                                             \
        c##i##0 = _mm512_fmadd_ps(ai, b0, c##i##0);                                            \
        c##i##1 = _mm512_fmadd_ps(ai, b1, c##i##1);                                            \
    } while (0)
        ROW(0);
        ROW(1);
        ROW(2);
        ROW(3);
        ROW(4);
        ROW(5);
        ROW(6);
        ROW(7);
#undef ROW
    }
    const __m512 acc[MR][2] = {{c00, c01}, {c10, c11}, {c20, c21}, {c30, c31},
                               {c40, c41}, {c50, c51}, {c60, c61}, {c70, c71}};
    const __mmask16 m0 = bm0, m1 = bm1;
    const __m512 va = _mm512_set1_ps(alpha), vb = _mm512_set1_ps(beta);
    for (int i = 0; i < h; i++, c += ldc)
        for (int half = 0; half < 2; half++) {
            const __mmask16 m = half ? m1 : m0;
            float *out = c + 16 * half;
            __m512 v;
            if (first && beta == 0.0f) v = _mm512_mul_ps(acc[i][half], va);
            else if (first)
                v = _mm512_fmadd_ps(acc[i][half], va,
                                    _mm512_mul_ps(_mm512_maskz_loadu_ps(m, out), vb));
            else v = _mm512_fmadd_ps(acc[i][half], va, _mm512_maskz_loadu_ps(m, out));
            _mm512_mask_storeu_ps(out, m, v);
        }
}

/* The tile on a packed panel of A (ap: kc steps of MR rows), B packed
 * (ldb 0) or in place (rows ldb apart). */
AVX512 static void tile_packed(int kc, const float *ap, const float *bp, int ldb, float *c,
                               int ldc, int h, int w, float alpha, float beta, bool first)
{
    const float *const arow[MR] = {ap, ap + 1, ap + 2, ap + 3, ap + 4, ap + 5, ap + 6, ap + 7};
    if (!ldb) tile_body(kc, arow, MR, bp, true, 0, c, ldc, h, w, alpha, beta, first);
    else tile_body(kc, arow, MR, bp, false, (size_t)ldb, c, ldc, h, w, alpha, beta, first);
}

/* The tile on op(A) read in place: rows of a lie along k (no trans_a), so
 * each row streams forward and packing it would only copy it. */
AVX512 static void tile_direct(int kc, const float *a, int lda, const float *bp, int ldb,
                               float *c, int ldc, int h, int w, float alpha, float beta,
                               bool first)
{
    const float *arow[MR];
    for (int i = 0; i < MR; i++) arow[i] = a + (size_t)min_int(i, h - 1) * lda;
    if (!ldb) tile_body(kc, arow, 1, bp, true, 0, c, ldc, h, w, alpha, beta, first);
    else tile_body(kc, arow, 1, bp, false, (size_t)ldb, c, ldc, h, w, alpha, beta, first);
}

/* Rows [0, m) of C += the product of op(A)'s rows (from a: row 0 of op(A)
 * at a) with one block of op(B) (kc rows, nc columns from jc): packed (bp,
 * in panels of NR; ldb 0) or in place (bp at its row pc, column jc; rows
 * ldb apart), the first block of k (pc == 0) applying beta. apack: MC x kc
 * floats, for trans_a. */
AVX512 static void block_rows(bool trans_a, int m, int jc, int nc, int pc, int kc, float alpha,
                              const float *a, int lda, const float *bp, int ldb, float beta,
                              float *c, int ldc, float *apack)
{
    for (int ic = 0; ic < m; ic += MC) {
        const int mc = min_int(MC, m - ic);
        if (trans_a) pack_a(a, lda, ic, mc, pc, kc, apack);
        for (int jr = 0; jr < nc; jr += NR)
            for (int ir = 0; ir < mc; ir += MR) {
                float *ct = c + (size_t)(ic + ir) * ldc + jc + jr;
                const int h = min_int(MR, mc - ir), w = min_int(NR, nc - jr);
                const float *panel = bp + (ldb ? (size_t)jr : (size_t)jr * kc);
                if (trans_a)
                    tile_packed(kc, apack + (size_t)ir * kc, panel, ldb, ct, ldc, h, w, alpha,
                                beta, pc == 0);
                else
                    tile_direct(kc, a + (size_t)(ic + ir) * lda + pc, lda, panel, ldb, ct, ldc,
                                h, w, alpha, beta, pc == 0);
            }
    }
}

/* Packing space kept by each thread between products (the largest it was
 * asked for; freed when the thread ends), in two slots: a product's own
 * packing (SCRATCH_PRODUCT) and a lone product's op(B) packed for every
 * thread (SCRATCH_SHARED, used while the same thread packs its chunks' A in
 * the other). Allocated and freed for each product, a gpt-mini step's 1,200
 * products (most of them attention's small ones) put 1.5% of the step into
 * malloc and free (2-vCPU AMD EPYC, perf), 0.9% with the first slot kept. */
enum { SCRATCH_PRODUCT, SCRATCH_SHARED, SCRATCH_SLOTS };

typedef struct {
    size_t floats[SCRATCH_SLOTS];
    float *data[SCRATCH_SLOTS];
} scratch;

/* `floats` floats, 64-byte aligned; NULL without memory. */
static float *alloc_floats(size_t floats)
{
    /* aligned_alloc takes a multiple of the alignment (ASan holds it to that) */
    return aligned_alloc(64, (floats * sizeof(float) + 63) / 64 * 64);
}

static pthread_key_t scratch_key;
static pthread_once_t scratch_once = PTHREAD_ONCE_INIT;
static bool scratch_keyed;

static void scratch_free(void *p)
{
    scratch *s = p;
    for (int i = 0; i < SCRATCH_SLOTS; i++) free(s->data[i]);
    free(s);
}

static void scratch_make_key(void)
{
    scratch_keyed = pthread_key_create(&scratch_key, scratch_free) == 0;
}

/* At least `floats` floats of this thread's slot, 64-byte aligned (its
 * earlier contents gone); NULL without memory. */
static float *scratch_floats(int slot, size_t floats)
{
    pthread_once(&scratch_once, scratch_make_key);
    if (!scratch_keyed) return NULL;
    scratch *s = pthread_getspecific(scratch_key);
    if (s && s->floats[slot] >= floats) return s->data[slot];
    if (!s) {
        if (!(s = calloc(1, sizeof *s))) return NULL;
        if (pthread_setspecific(scratch_key, s) != 0) {
            free(s);
            return NULL;
        }
    }
    float *data = alloc_floats(floats);
    if (!data) return NULL;
    free(s->data[slot]);
    s->data[slot] = data, s->floats[slot] = floats;
    return data;
}

/* The largest op(B) read in place: 1 M floats, 4 MiB. Its rows lie along
 * n, so a tile's B panel is NR floats of each row: from a block of KC rows
 * (KC x NR floats, 32 KiB) that stays in L1 while MC rows of A pass over it,
 * as a packed panel would. Packing copied every B: a third of the time of
 * attention's small products (a head's 64 x 32 V), 6% of a gpt-mini
 * training step's samples for its weight gradients' B (the 768-token
 * activations); read in place, the step took 2.5% less (bench). */
#define DIRECT_B_MAX_FLOATS ((size_t)1 << 20)

bool cf_gemm_avx512_reads_b_in_place(bool trans_b, int n, int k)
{
    return !trans_b && (size_t)k * (size_t)n <= DIRECT_B_MAX_FLOATS;
}

bool cf_gemm_avx512(bool trans_a, bool trans_b, int m, int n, int k, float alpha,
                    const float *a, int lda, const float *b, int ldb, float beta, float *c,
                    int ldc)
{
    if (!cf_gemm_avx512_available()) return false;
    if (cf_gemm_avx512_reads_b_in_place(trans_b, n, k)) {
        float *apack = NULL;
        if (trans_a && !(apack = scratch_floats(SCRATCH_PRODUCT, (size_t)MC * min_int(k, KC))))
            return false;
        for (int jc = 0; jc < n; jc += NC)
            for (int pc = 0; pc < k; pc += KC)
                block_rows(trans_a, m, jc, min_int(NC, n - jc), pc, min_int(KC, k - pc), alpha,
                           a, lda, b + (size_t)pc * ldb + jc, ldb, beta, c, ldc, apack);
        return true;
    }
    const int nc_max = (min_int(n, NC) + NR - 1) / NR * NR,
              mc_max = trans_a ? (min_int(m, MC) + MR - 1) / MR * MR : 0,
              kc_max = min_int(k, KC);
    float *bpack = scratch_floats(SCRATCH_PRODUCT, ((size_t)nc_max + mc_max) * kc_max);
    if (!bpack) return false;
    float *apack = bpack + (size_t)nc_max * kc_max;
    for (int jc = 0; jc < n; jc += NC) {
        const int nc = min_int(NC, n - jc);
        for (int pc = 0; pc < k; pc += KC) {
            const int kc = min_int(KC, k - pc);
            pack_b(trans_b, b, ldb, pc, kc, jc, nc, bpack);
            block_rows(trans_a, m, jc, nc, pc, kc, alpha, a, lda, bpack, 0, beta, c, ldc, apack);
        }
    }
    return true;
}

/* The packed form of op(B) whole: its blocks of columns (NC) in order, and
 * within each its blocks of k (KC) in order, each block as pack_b lays it
 * out (panels of NR columns, zero-padded). Every block before (jc, pc) is
 * full, and NC is a multiple of NR, so block (jc, pc) starts at jc * k +
 * round_up(nc, NR) * pc. */
static size_t packed_offset(int k, int jc, int nc, int pc)
{
    return (size_t)jc * k + (size_t)((nc + NR - 1) / NR * NR) * pc;
}

size_t cf_gemm_avx512_packed_floats(int n, int k)
{
    return (size_t)((n + NR - 1) / NR * NR) * (size_t)k;
}

/* The most floats of a packed op(B) a thread keeps (2 MiB; gpt-mini's
 * largest is 1.5 MiB). */
#define SHARED_KEEP_FLOATS ((size_t)1 << 19)

float *cf_gemm_avx512_packed_buffer(int n, int k, bool *own)
{
    const size_t floats = cf_gemm_avx512_packed_floats(n, k);
    *own = floats > SHARED_KEEP_FLOATS;
    if (!cf_gemm_avx512_available()) return NULL;
    return *own ? alloc_floats(floats) : scratch_floats(SCRATCH_SHARED, floats);
}

/* A task packs PACK_TASK_PANELS panels (fewer at a block's end) of one
 * block (jc, pc): numbered block by block in packed order. */
enum { PACK_TASK_PANELS = 2 };

static int tasks_per_block(int nc)
{
    const int panels = (nc + NR - 1) / NR;
    return (panels + PACK_TASK_PANELS - 1) / PACK_TASK_PANELS;
}

size_t cf_gemm_avx512_pack_tasks(int n, int k)
{
    const int k_blocks = (k + KC - 1) / KC;
    size_t tasks = 0;
    for (int jc = 0; jc < n; jc += NC)
        tasks += (size_t)tasks_per_block(min_int(NC, n - jc)) * k_blocks;
    return tasks;
}

void cf_gemm_avx512_pack_task(bool trans_b, int n, int k, const float *b, int ldb, float *out,
                              size_t task)
{
    const int k_blocks = (k + KC - 1) / KC;
    for (int jc = 0; jc < n; jc += NC) {
        const int nc = min_int(NC, n - jc);
        const size_t per_block = (size_t)tasks_per_block(nc);
        if (task >= per_block * k_blocks) {
            task -= per_block * k_blocks;
            continue;
        }
        const int pc = (int)(task / per_block) * KC, kc = min_int(KC, k - pc),
                  first = (int)(task % per_block) * PACK_TASK_PANELS * NR;
        pack_b(trans_b, b, ldb, pc, kc, jc + first, min_int(PACK_TASK_PANELS * NR, nc - first),
               out + packed_offset(k, jc, nc, pc) + (size_t)first * kc);
        return;
    }
}

bool cf_gemm_avx512_packed(bool trans_a, int m, int n, int k, float alpha, const float *a,
                           int lda, const float *packed, float beta, float *c, int ldc)
{
    if (!cf_gemm_avx512_available()) return false;
    float *apack = NULL;
    if (trans_a && !(apack = scratch_floats(SCRATCH_PRODUCT, (size_t)MC * min_int(k, KC))))
        return false;
    for (int jc = 0; jc < n; jc += NC) {
        const int nc = min_int(NC, n - jc);
        for (int pc = 0; pc < k; pc += KC)
            block_rows(trans_a, m, jc, nc, pc, min_int(KC, k - pc), alpha, a, lda,
                       packed + packed_offset(k, jc, nc, pc), 0, beta, c, ldc, apack);
    }
    return true;
}

/* CLFORMER_HOST_GEMM: 0 auto, 1 own, 2 openblas, -1 anything else. */
static int read_setting(void)
{
    const char *v = getenv("CLFORMER_HOST_GEMM");
    if (!v || !*v || !strcasecmp(v, "auto")) return 0;
    if (!strcasecmp(v, "own")) return 1;
    if (!strcasecmp(v, "openblas")) return 2;
    return -1;
}

/* Read once, as the choice it leads to is made once: the provider checks it
 * before every product, and the check and the choice agree. */
static int setting(void)
{
    static atomic_int cached = -2; /* -2: not read yet; a race stores the same value */
    int s = atomic_load(&cached);
    if (s == -2) atomic_store(&cached, s = read_setting());
    return s;
}

static bool decide(void)
{
    const int s = setting();
    if (s < 0 || s == 2 || !cf_gemm_avx512_available()) return false;
    if (s == 1) return true;
#ifdef CLFORMER_HAVE_OPENBLAS
    const char *core = openblas_get_corename();
    /* OpenBLAS's AVX-512 kernels: SkylakeX and the cores built on it */
    static const char *const fast[] = {"skylakex", "cooperlake", "sapphirerapids"};
    for (size_t i = 0; core && i < sizeof fast / sizeof *fast; i++)
        if (!strcasecmp(core, fast[i])) return false;
#endif
    return true;
}

bool cf_gemm_host_openblas_only(void) { return setting() == 2; }

bool cf_gemm_avx512_wanted(void)
{
    static atomic_int wanted = -1; /* decided once; a race stores the same value */
    int w = atomic_load(&wanted);
    if (w < 0) atomic_store(&wanted, w = decide());
    return w;
}

clformer_status cf_gemm_avx512_check_setting(void)
{
    const int s = setting();
    if (s < 0)
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                       "CLFORMER_HOST_GEMM=%s is not a choice; use auto, own or openblas",
                       getenv("CLFORMER_HOST_GEMM"));
    if (s == 1 && !cf_gemm_avx512_available())
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                       "CLFORMER_HOST_GEMM=own needs a CPU with AVX-512F; use auto or openblas");
    return CLFORMER_OK;
}

#else /* not x86-64 */

bool cf_gemm_avx512_available(void) { return false; }

bool cf_gemm_avx512_wanted(void) { return false; }

bool cf_gemm_host_openblas_only(void)
{
    const char *v = getenv("CLFORMER_HOST_GEMM");
    return v && !strcasecmp(v, "openblas");
}

clformer_status cf_gemm_avx512_check_setting(void)
{
    const char *v = getenv("CLFORMER_HOST_GEMM");
    if (v && *v && strcasecmp(v, "auto") && strcasecmp(v, "openblas"))
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                       "CLFORMER_HOST_GEMM=%s: this build's CPU has no AVX-512 product; use auto "
                       "or openblas", v);
    return CLFORMER_OK;
}

bool cf_gemm_avx512_reads_b_in_place(bool trans_b, int n, int k)
{
    (void)trans_b, (void)n, (void)k;
    return false;
}

bool cf_gemm_avx512(bool trans_a, bool trans_b, int m, int n, int k, float alpha,
                    const float *a, int lda, const float *b, int ldb, float beta, float *c,
                    int ldc)
{
    (void)trans_a, (void)trans_b, (void)m, (void)n, (void)k, (void)alpha, (void)a, (void)lda;
    (void)b, (void)ldb, (void)beta, (void)c, (void)ldc;
    return false;
}

size_t cf_gemm_avx512_packed_floats(int n, int k)
{
    (void)n, (void)k;
    return 0;
}

float *cf_gemm_avx512_packed_buffer(int n, int k, bool *own)
{
    (void)n, (void)k;
    *own = false;
    return NULL;
}

size_t cf_gemm_avx512_pack_tasks(int n, int k)
{
    (void)n, (void)k;
    return 0;
}

void cf_gemm_avx512_pack_task(bool trans_b, int n, int k, const float *b, int ldb, float *out,
                              size_t task)
{
    (void)trans_b, (void)n, (void)k, (void)b, (void)ldb, (void)out, (void)task;
}

bool cf_gemm_avx512_packed(bool trans_a, int m, int n, int k, float alpha, const float *a,
                           int lda, const float *packed, float beta, float *c, int ldc)
{
    (void)trans_a, (void)m, (void)n, (void)k, (void)alpha, (void)a, (void)lda, (void)packed;
    (void)beta, (void)c, (void)ldc;
    return false;
}

#endif
