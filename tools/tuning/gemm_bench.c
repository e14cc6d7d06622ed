/*
 * gemm_bench: GFLOP/s of the GEMM provider (single and strided-batched
 * products) on the shapes a Transformer training step issues, on the device CLFORMER_DEVICE
 * selects, to compare CLBlast's own parameters (CLFORMER_GEMM_TUNING=0) with
 * tuned ones. Not part of the clformer command: CMake builds it as
 * build/gemm_bench, and tools/tuning/tune-clblast.sh -c runs it.
 *
 *   gemm_bench [--quick] [--min-time S] [--only NAME] [--list] [--direct]
 *              [--model PRESET --batch B --len T [--vocab V]] [--peak] [--tiles B]
 *
 * prints one line per shape: name, m n k batch, milliseconds, GFLOP/s (and
 * with --peak the share of the device's FMA peak, clformer_context_roofline),
 * and "tiled BxB" where CLBlast's per-shape search sends the shape to
 * clformer's own kernel with B x B blocks (clformer_check_gemm_kernel).
 * Shapes: d_model 256 and 512, N = 1024 and 4096 rows, d_ff = 4 d_model,
 * vocabulary 8000, attention with T = 32 at 64 and 256 (batch x heads);
 * --quick: N = 1024 and 64 only; --model: instead, every distinct product
 * of one training step of that encoder-decoder or GPT preset on B sentences
 * (windows) of T tokens, the output layer onto --vocab tokens (8000); --only:
 * the shapes whose name contains
 * NAME; --list: their names; --direct: no device, cblas_sgemm called
 * here on host arrays, a loop over the batch (what the host provider's
 * native kernel calls, without OpenCL around it: the bar for that provider;
 * needs a build with OpenBLAS). Where the provider runs its own AVX-512
 * product instead (CLFORMER_HOST_GEMM, clformer devices says which), this is
 * OpenBLAS's figure, not the provider's. --tiles: with CLFORMER_GEMM=tiled,
 * every product in B x B blocks of C (clformer_check_gemm_tiles).
 * tools/tuning/gemm_compare.py runs it to compare settings, interleaved.
 *
 * Linear layers keep W as (out, in) like PyTorch, so a forward is X W^T (NT),
 * the input gradient dY W (NN) and the weight gradient dY^T X (TN).
 * clformer_check_gemm_time (include/clformer_check.h) runs each shape once to
 * compile and warm up, then call by call until --min-time seconds have
 * passed; the fastest call is reported, the figure least disturbed by other
 * load on the machine. Every shape is called a few times before any is
 * timed, so that a GPU's per-shape GEMM search has chosen its sets for the
 * whole step. Only public headers: the timing loop is the library's.
 */
#include "clformer.h"
#include "clformer_check.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifdef GEMM_BENCH_HAVE_OPENBLAS
#include <cblas.h>
#endif

typedef struct {
    char name[48];
    clformer_gemm_shape g;
} shape;

/* Appends one shape named by a printf format. */
static void add(shape *s, size_t *n, bool ta, bool tb, size_t m, size_t nn, size_t k,
                size_t batch, const char *fmt, ...) __attribute__((format(printf, 9, 10)));
static void add(shape *s, size_t *n, bool ta, bool tb, size_t m, size_t nn, size_t k,
                size_t batch, const char *fmt, ...)
{
    shape *x = &s[(*n)++];
    *x = (shape){.g = {.trans_a = ta, .trans_b = tb, .m = m, .n = nn, .k = k, .batch = batch}};
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(x->name, sizeof x->name, fmt, ap);
    va_end(ap);
}

/* The three products of a linear layer y = x W^T, x (rows, in), W (out, in). */
static void add_linear(shape *s, size_t *n, size_t d, size_t rows, const char *layer, size_t in,
                       size_t out)
{
    add(s, n, false, true, rows, out, in, 1, "d%zu N%zu %s.fwd NT", d, rows, layer);
    add(s, n, false, false, rows, in, out, 1, "d%zu N%zu %s.dx NN", d, rows, layer);
    add(s, n, true, false, out, in, rows, 1, "d%zu N%zu %s.dw TN", d, rows, layer);
}

/* Every distinct product of one training step of `c` on B x T tokens: the
 * linear layers' three products each (an encoder-decoder's cross-attention
 * key and value projection is d -> 2d; a GPT has none), the generator's (a
 * GPT's head) onto `vocab` tokens, and attention's six per
 * (sentence, head): the forward's scores (NT) and context (NN), and the
 * backward's dV = P^T dO (TN), dP = dO V^T (NT), dQ = dS K (NN) and
 * dK = dS^T Q (TN), whose shapes repeat the first three. */
static size_t model_shapes(shape *s, const clformer_config *c, size_t B, size_t T, size_t vocab)
{
    const size_t d = (size_t)c->d_model, f = (size_t)c->d_ff, N = B * T;
    const size_t heads = (size_t)c->n_heads, dh = d / heads;
    size_t n = 0;
    add_linear(s, &n, d, N, "qkv", d, 3 * d);
    add_linear(s, &n, d, N, "proj", d, d);
    if (!clformer_config_decoder_only(c)) add_linear(s, &n, d, N, "kv", d, 2 * d);
    add_linear(s, &n, d, N, "ff1", d, f);
    add_linear(s, &n, d, N, "ff2", f, d);
    add_linear(s, &n, d, N, "gen", d, vocab);
    add(s, &n, false, true, T, T, dh, B * heads, "attn T%zu scores NT", T);
    add(s, &n, false, false, T, dh, T, B * heads, "attn T%zu context NN", T);
    add(s, &n, true, false, T, dh, T, B * heads, "attn T%zu grad TN", T);
    return n;
}

static size_t build_shapes(shape *s, bool quick)
{
    static const size_t ds[] = {256, 512}, rows[] = {1024, 4096}, heads[] = {64, 256};
    const size_t vocab = 8000, variants = quick ? 1 : 2;
    size_t n = 0;
    for (size_t di = 0; di < 2; di++) {
        for (size_t ri = 0; ri < variants; ri++) {
            size_t d = ds[di], N = rows[ri];
            add_linear(s, &n, d, N, "qkv", d, 3 * d);
            add_linear(s, &n, d, N, "proj", d, d);
            add_linear(s, &n, d, N, "ff1", d, 4 * d);
            add_linear(s, &n, d, N, "ff2", 4 * d, d);
            add_linear(s, &n, d, N, "gen", d, vocab);
        }
    }
    /* Attention per (batch * head), T = 32: scores Q K^T (T x T x dh, NT),
     * context P V (T x dh x T, NN), gradients P^T dO and dS^T Q (TN). */
    for (size_t hi = 0; hi < variants; hi++) {
        size_t bh = heads[hi];
        add(s, &n, false, true, 32, 32, 64, bh, "attn BH%zu scores NT", bh);
        add(s, &n, false, false, 32, 64, 32, bh, "attn BH%zu context NN", bh);
        add(s, &n, true, false, 32, 64, 32, bh, "attn BH%zu grad TN", bh);
    }
    return n;
}

#ifdef GEMM_BENCH_HAVE_OPENBLAS
static double seconds_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static void direct_call(const clformer_gemm_shape *g, const float *a, const float *b, float *c)
{
    const int m = (int)g->m, n = (int)g->n, k = (int)g->k;
    const int lda = g->trans_a ? m : k, ldb = g->trans_b ? k : n;
    for (size_t i = 0; i < g->batch; i++)
        cblas_sgemm(CblasRowMajor, g->trans_a ? CblasTrans : CblasNoTrans,
                    g->trans_b ? CblasTrans : CblasNoTrans, m, n, k, 1.0f, a + i * g->m * g->k,
                    lda, b + i * g->k * g->n, ldb, 0.0f, c + i * g->m * g->n, n);
}

static float *aligned_floats(size_t n)
{
    return aligned_alloc(128, (n * sizeof(float) + 127) / 128 * 128);
}

/* The timing loop of clformer_check_gemm_time (one warm-up call, then the
 * fastest of at least 3 calls and min_time seconds) around direct_call. */
static int time_direct(const clformer_gemm_shape *g, double min_time, double *ms, double *gflops)
{
    const size_t na = g->m * g->k * g->batch, nb = g->k * g->n * g->batch,
                 nc = g->m * g->n * g->batch;
    /* aligned like a device buffer (PoCL aligns them to at least 128 bytes) */
    float *a = aligned_floats(na), *b = aligned_floats(nb), *c = aligned_floats(nc);
    if (!a || !b || !c) {
        free(a), free(b), free(c);
        fprintf(stderr, "gemm_bench: out of host memory\n");
        return 1;
    }
    for (size_t i = 0; i < na; i++) a[i] = 0.5f;
    for (size_t i = 0; i < nb; i++) b[i] = 0.25f;
    direct_call(g, a, b, c);
    double start = seconds_now(), best = 1e30;
    for (int i = 0; (i < 3 || seconds_now() - start < min_time) && i < 1000; i++) {
        double t0 = seconds_now();
        direct_call(g, a, b, c);
        double t = seconds_now() - t0;
        if (t < best) best = t;
    }
    free(a), free(b), free(c);
    *ms = 1e3 * best;
    *gflops = 2.0 * (double)g->m * (double)g->n * (double)g->k * (double)g->batch / (best * 1e9);
    return 0;
}
#endif

static void print_row(const shape *s, double ms, double gflops, double peak, const char *kernel)
{
    printf("%-26s %5zu %5zu %5zu %4zu %10.3f %7.1f", s->name, s->g.m, s->g.n, s->g.k,
           s->g.batch, ms, gflops);
    if (peak > 0) printf(" %6.1f%%", 100.0 * gflops / peak);
    if (kernel && !strncmp(kernel, "tiled ", 6)) printf("  %s", kernel); /* the search's choice */
    printf("\n");
    fflush(stdout);
}

int main(int argc, char **argv)
{
    bool quick = false;
    double min_time = 0.5;
    const char *only = NULL;
    bool list = false, direct = false, peak = false;
    const char *model = NULL;
    long batch = 0, len = 0, vocab = 8000, tiles = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--quick")) quick = true;
        else if (!strcmp(argv[i], "--model") && i + 1 < argc) model = argv[++i];
        else if (!strcmp(argv[i], "--batch") && i + 1 < argc) batch = atol(argv[++i]);
        else if (!strcmp(argv[i], "--len") && i + 1 < argc) len = atol(argv[++i]);
        else if (!strcmp(argv[i], "--vocab") && i + 1 < argc) vocab = atol(argv[++i]);
        else if (!strcmp(argv[i], "--peak")) peak = true;
        else if (!strcmp(argv[i], "--min-time") && i + 1 < argc) min_time = atof(argv[++i]);
        else if (!strcmp(argv[i], "--only") && i + 1 < argc) only = argv[++i];
        else if (!strcmp(argv[i], "--list")) list = true;
        else if (!strcmp(argv[i], "--direct")) direct = true;
        else if (!strcmp(argv[i], "--tiles") && i + 1 < argc) tiles = atol(argv[++i]);
        else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            printf("usage: gemm_bench [--quick] [--min-time S] [--only NAME] [--list] "
                   "[--direct]\n"
                   "                  [--model PRESET --batch B --len T [--vocab V]] [--peak] "
                   "[--tiles B]\n\n"
                   "GFLOP/s of the GEMM provider of the device CLFORMER_DEVICE selects on a\n"
                   "Transformer step's shapes (fastest call of at least --min-time seconds, 0.5).\n"
                   "  --quick      N = 1024 rows and 64 attention heads only\n"
                   "  --model P    instead, the products of one training step of preset P (tiny,\n"
                   "               small, base; gpt-mini, gpt-char, gpt2) on --batch B sentences\n"
                   "               or windows of --len T tokens, the output layer onto --vocab V\n"
                   "               tokens (8000; gpt-mini and gpt-char have 65, gpt2 50257)\n"
                   "  --peak       also the share of the device's FMA peak (measured once per\n"
                   "               device, cached: clformer_context_roofline)\n"
                   "  --only NAME  the shapes whose name contains NAME\n"
                   "  --list       print the shapes' names\n"
                   "  --direct     no device: cblas_sgemm called here on host arrays, the bar\n"
                   "               for the host provider (builds with OpenBLAS)\n"
                   "  --tiles B    with CLFORMER_GEMM=tiled: every product in B x B blocks of C\n"
                   "               (128, 64 or 32) instead of the set its shape gets\n");
            return 0;
        } else {
            fprintf(stderr, "usage: gemm_bench [--quick] [--min-time S] [--only NAME] [--list] "
                            "[--direct] [--model PRESET --batch B --len T [--vocab V]] [--peak] "
                            "[--tiles B]\n");
            return 2;
        }
    }
    shape shapes[128];
    size_t n = 0;
    if (model) {
        clformer_config c;
        clformer_config_default(&c);
        const bool known = clformer_config_preset(model, &c) == CLFORMER_OK ||
                           clformer_config_lm_preset(model, &c) == CLFORMER_OK;
        if (!known || clformer_config_family(&c) == CLFORMER_FAMILY_LLAMA || batch < 1 ||
            len < 1 || vocab < 1) {
            fprintf(stderr, "gemm_bench: --model needs an encoder-decoder preset (tiny, small, "
                            "base) or a GPT one (gpt-mini, gpt-char, gpt2), and --batch, --len "
                            "and --vocab of at least 1\n");
            return 2;
        }
        n = model_shapes(shapes, &c, (size_t)batch, (size_t)len, (size_t)vocab);
    } else {
        n = build_shapes(shapes, quick);
    }
    if (list) {
        for (size_t i = 0; i < n; i++) printf("%s\n", shapes[i].name);
        return 0;
    }
    if (direct) {
#ifdef GEMM_BENCH_HAVE_OPENBLAS
        printf("# device: none | cblas_sgemm called directly (OpenBLAS, %d threads)\n",
               openblas_get_num_threads());
        for (size_t i = 0; i < n; i++) {
            double ms = 0, gflops = 0;
            if (only && !strstr(shapes[i].name, only)) continue;
            if (time_direct(&shapes[i].g, min_time, &ms, &gflops) != 0) return 1;
            print_row(&shapes[i], ms, gflops, 0.0, NULL);
        }
        return 0;
#else
        fprintf(stderr, "gemm_bench: --direct needs a build with OpenBLAS (install "
                        "libopenblas-dev and rebuild)\n");
        return 1;
#endif
    }
    clformer_context *ctx = NULL;
    clformer_status st = clformer_context_create(NULL, &ctx);
    if (st != CLFORMER_OK) {
        fprintf(stderr, "gemm_bench: %s\n", clformer_last_error());
        return 1;
    }
    const clformer_device_info *dev = clformer_context_device(ctx);
    if (tiles && clformer_check_gemm_tiles(ctx, (int)tiles) != CLFORMER_OK) {
        fprintf(stderr, "gemm_bench: %s\n", clformer_last_error());
        clformer_context_free(ctx);
        return 1;
    }
    printf("# device: %s | %s\n", dev->platform, dev->name);
    if (tiles) printf("# tiled provider: %ld x %ld blocks for every product\n", tiles, tiles);
    clformer_roofline roof = {0};
    if (peak && (st = clformer_context_roofline(ctx, false, &roof)) == CLFORMER_OK)
        printf("# FMA peak %.1f GFLOP/s (%s)\n", roof.fma_gflops,
               roof.from_cache ? "from the cache" : "measured now");
    /* Every shape a few calls first: a per-shape GEMM search (GPUs) then has
     * timed them all and chooses its sets for all of them, as in a training
     * step, before any is timed; else each row would run the sets chosen for
     * the shapes before it, weighted by their timing loops' calls. */
    for (size_t i = 0; i < n && st == CLFORMER_OK; i++) {
        double ms = 0, gflops = 0;
        if (!only || strstr(shapes[i].name, only))
            st = clformer_check_gemm_time(ctx, &shapes[i].g, 0.0, &ms, &gflops);
    }
    for (size_t i = 0; i < n && st == CLFORMER_OK; i++) {
        const shape *s = &shapes[i];
        if (only && !strstr(s->name, only)) continue;
        double ms = 0, gflops = 0;
        const char *kernel = NULL;
        st = clformer_check_gemm_time(ctx, &s->g, min_time, &ms, &gflops);
        if (st == CLFORMER_OK) st = clformer_check_gemm_kernel(ctx, &s->g, &kernel);
        if (st != CLFORMER_OK) break;
        print_row(s, ms, gflops, roof.fma_gflops, kernel);
    }
    if (st != CLFORMER_OK) fprintf(stderr, "gemm_bench: %s\n", clformer_last_error());
    clformer_context_free(ctx);
    return st == CLFORMER_OK ? 0 : 1;
}
