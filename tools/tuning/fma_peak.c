/*
 * fma_peak: this machine's fp32 peak, measured with an FMA loop on every
 * core, so GEMM rates (build/gemm_bench) can be given as a fraction of it
 * from the same sitting. Each thread runs independent chains of fused
 * multiply-adds on the widest vectors the CPU has (AVX-512, else AVX2, else
 * scalar). Each thread times its rounds (a few ms each) and the sum of
 * the threads' fastest rounds is printed in GFLOP/s: like gemm_bench's
 * fastest call, the figure least disturbed by other load on the machine.
 *
 *   fma_peak [--threads N] [--seconds S]     (default: all cores, 1 s)
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define X86 1
#endif

enum { CHAINS = 12, ITERS = 1 << 18 }; /* 12 chains hide the FMA latency */

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

#ifdef X86
__attribute__((target("avx512f"))) static double run_avx512(float seed)
{
    __m512 acc[CHAINS], m = _mm512_set1_ps(0.999999f), a = _mm512_set1_ps(1e-7f);
    for (int c = 0; c < CHAINS; c++) acc[c] = _mm512_set1_ps(seed + (float)c);
    for (long i = 0; i < ITERS; i++)
#pragma GCC unroll 16
        for (int c = 0; c < CHAINS; c++) acc[c] = _mm512_fmadd_ps(acc[c], m, a);
    float sum = 0, out[16];
    for (int c = 0; c < CHAINS; c++) {
        _mm512_storeu_ps(out, acc[c]);
        sum += out[0];
    }
    return sum;
}

__attribute__((target("avx2,fma"))) static double run_avx2(float seed)
{
    __m256 acc[CHAINS], m = _mm256_set1_ps(0.999999f), a = _mm256_set1_ps(1e-7f);
    for (int c = 0; c < CHAINS; c++) acc[c] = _mm256_set1_ps(seed + (float)c);
    for (long i = 0; i < ITERS; i++)
#pragma GCC unroll 16
        for (int c = 0; c < CHAINS; c++) acc[c] = _mm256_fmadd_ps(acc[c], m, a);
    float sum = 0, out[8];
    for (int c = 0; c < CHAINS; c++) {
        _mm256_storeu_ps(out, acc[c]);
        sum += out[0];
    }
    return sum;
}
#endif

static double run_scalar(float seed)
{
    float acc[CHAINS];
    for (int c = 0; c < CHAINS; c++) acc[c] = seed + (float)c;
    for (long i = 0; i < ITERS; i++)
#pragma GCC unroll 16
        for (int c = 0; c < CHAINS; c++) acc[c] = __builtin_fmaf(acc[c], 0.999999f, 1e-7f);
    float sum = 0;
    for (int c = 0; c < CHAINS; c++) sum += acc[c];
    return sum;
}

static int lanes;                       /* floats per vector of the chosen loop */
static double (*kernel)(float) = run_scalar;
static volatile double sink;

typedef struct {
    double seconds; /* how long to run */
    double best;    /* the fastest round, seconds */
} job;

static void *worker(void *arg)
{
    job *j = arg;
    const double t0 = now();
    j->best = 1e30;
    for (long r = 0; now() - t0 < j->seconds; r++) {
        const double s = now();
        sink = kernel((float)r);
        const double e = now() - s;
        if (e < j->best) j->best = e;
    }
    return NULL;
}

int main(int argc, char **argv)
{
    long threads = sysconf(_SC_NPROCESSORS_ONLN);
    double seconds = 1.0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--threads") && i + 1 < argc) threads = atol(argv[++i]);
        else if (!strcmp(argv[i], "--seconds") && i + 1 < argc) seconds = atof(argv[++i]);
        else {
            fprintf(stderr, "usage: fma_peak [--threads N] [--seconds S]\n");
            return 2;
        }
    }
    if (threads < 1 || threads > 1024 || !(seconds > 0)) {
        fprintf(stderr, "fma_peak: --threads must be 1..1024 and --seconds positive\n");
        return 2;
    }
    const char *isa = "scalar";
    lanes = 1;
#ifdef X86
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f")) kernel = run_avx512, lanes = 16, isa = "AVX-512";
    else if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
        kernel = run_avx2, lanes = 8, isa = "AVX2";
#endif
    pthread_t *t = calloc((size_t)threads, sizeof *t);
    job *jobs = calloc((size_t)threads, sizeof *jobs);
    if (!t || !jobs) return 1;
    for (long i = 0; i < threads; i++) {
        jobs[i].seconds = seconds;
        if (pthread_create(&t[i], NULL, worker, &jobs[i]) != 0) return 1;
    }
    double gflops = 0;
    for (long i = 0; i < threads; i++) {
        pthread_join(t[i], NULL);
        gflops += 2.0 * lanes * CHAINS * (double)ITERS / jobs[i].best / 1e9;
    }
    printf("fp32 FMA peak: %.1f GFLOP/s (%ld threads, %s)\n", gflops, threads, isa);
    free(t), free(jobs);
    return 0;
}
