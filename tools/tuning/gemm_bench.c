/*
 * gemm_bench: GFLOP/s of the GEMM provider (single and strided-batched
 * products) on the shapes a Transformer training step issues, on the device CLFORMER_DEVICE
 * selects, to compare CLBlast's own parameters (CLFORMER_GEMM_TUNING=0) with
 * tuned ones. Not part of the clformer command: CMake builds it as
 * build/gemm_bench, and tools/tuning/tune-clblast.sh -c runs it.
 *
 *   gemm_bench [--quick] [--min-time S] [--only NAME] [--list]
 *
 * prints one line per shape: name, m n k batch, milliseconds, GFLOP/s.
 * Shapes: d_model 256 and 512, N = 1024 and 4096 rows, d_ff = 4 d_model,
 * vocabulary 8000, attention with T = 32 at 64 and 256 (batch x heads);
 * --quick: N = 1024 and 64 only; --only: the shapes whose name contains
 * NAME; --list: their names.
 * tools/tuning/gemm_compare.py runs it to compare settings, interleaved.
 *
 * Linear layers keep W as (out, in) like PyTorch, so a forward is X W^T (NT),
 * the input gradient dY W (NN) and the weight gradient dY^T X (TN).
 * clformer_check_gemm_time (include/clformer_check.h) runs each shape once to
 * compile and warm up, then call by call until --min-time seconds have
 * passed; the fastest call is reported, the figure least disturbed by other
 * load on the machine. Only public headers: the timing loop is the library's.
 */
#include "clformer.h"
#include "clformer_check.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

int main(int argc, char **argv)
{
    bool quick = false;
    double min_time = 0.5;
    const char *only = NULL;
    bool list = false;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--quick")) quick = true;
        else if (!strcmp(argv[i], "--min-time") && i + 1 < argc) min_time = atof(argv[++i]);
        else if (!strcmp(argv[i], "--only") && i + 1 < argc) only = argv[++i];
        else if (!strcmp(argv[i], "--list")) list = true;
        else {
            fprintf(stderr, "usage: gemm_bench [--quick] [--min-time S] [--only NAME] [--list]\n");
            return 2;
        }
    }
    shape shapes[128];
    size_t n = build_shapes(shapes, quick);
    if (list) {
        for (size_t i = 0; i < n; i++) printf("%s\n", shapes[i].name);
        return 0;
    }
    clformer_context *ctx = NULL;
    clformer_status st = clformer_context_create(NULL, &ctx);
    if (st != CLFORMER_OK) {
        fprintf(stderr, "gemm_bench: %s\n", clformer_last_error());
        return 1;
    }
    const clformer_device_info *dev = clformer_context_device(ctx);
    printf("# device: %s | %s\n", dev->platform, dev->name);
    for (size_t i = 0; i < n && st == CLFORMER_OK; i++) {
        const shape *s = &shapes[i];
        if (only && !strstr(s->name, only)) continue;
        double ms = 0, gflops = 0;
        st = clformer_check_gemm_time(ctx, &s->g, min_time, &ms, &gflops);
        if (st != CLFORMER_OK) break;
        printf("%-26s %5zu %5zu %5zu %4zu %10.3f %7.1f\n", s->name, s->g.m, s->g.n, s->g.k,
               s->g.batch, ms, gflops);
        fflush(stdout);
    }
    if (st != CLFORMER_OK) fprintf(stderr, "gemm_bench: %s\n", clformer_last_error());
    clformer_context_free(ctx);
    return st == CLFORMER_OK ? 0 : 1;
}
