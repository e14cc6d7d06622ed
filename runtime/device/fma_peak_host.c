/*
 * clformer_host_fma_peak (clformer.h): each thread runs CHAINS independent
 * FMA chains, enough to hide the FMA latency on two ports, in rounds of a
 * few milliseconds, and keeps its fastest round.
 */
#include "clformer.h"
#include "clock.h"

#include <pthread.h>
#include <stdlib.h>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define CF_X86 1
#endif

enum { CHAINS = 12, ITERS = 1 << 18 };

#ifdef CF_X86
__attribute__((target("avx512f"))) static float run_avx512(float seed)
{
    __m512 acc[CHAINS];
    const __m512 m = _mm512_set1_ps(0.999999f), a = _mm512_set1_ps(1e-7f);
    for (int c = 0; c < CHAINS; c++) acc[c] = _mm512_set1_ps(seed + (float)c);
    for (long i = 0; i < ITERS; i++)
#pragma GCC unroll 16
        for (int c = 0; c < CHAINS; c++) acc[c] = _mm512_fmadd_ps(acc[c], m, a);
    float sum = 0;
    for (int c = 0; c < CHAINS; c++) sum += _mm512_reduce_add_ps(acc[c]);
    return sum;
}

__attribute__((target("avx2,fma"))) static float run_avx2(float seed)
{
    __m256 acc[CHAINS];
    const __m256 m = _mm256_set1_ps(0.999999f), a = _mm256_set1_ps(1e-7f);
    for (int c = 0; c < CHAINS; c++) acc[c] = _mm256_set1_ps(seed + (float)c);
    for (long i = 0; i < ITERS; i++)
#pragma GCC unroll 16
        for (int c = 0; c < CHAINS; c++) acc[c] = _mm256_fmadd_ps(acc[c], m, a);
    float out[8], sum = 0;
    for (int c = 0; c < CHAINS; c++) {
        _mm256_storeu_ps(out, acc[c]);
        sum += out[0];
    }
    return sum;
}
#endif

static float run_scalar(float seed)
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

typedef struct {
    float (*loop)(float);
    double seconds; /* how long to run */
    double best;    /* the fastest round, seconds */
    volatile float sink;
} job;

static void *worker(void *arg)
{
    job *j = arg;
    const double t0 = cf_now_s();
    j->best = 1e30;
    for (long r = 0; r == 0 || cf_now_s() - t0 < j->seconds; r++) {
        const double s = cf_now_s();
        j->sink = j->loop((float)r);
        const double e = cf_now_s() - s;
        if (e < j->best) j->best = e;
    }
    return NULL;
}

double clformer_host_fma_peak(unsigned threads, double seconds, const char **isa)
{
    float (*loop)(float) = run_scalar;
    int lanes = 1;
    const char *name = "scalar";
#ifdef CF_X86
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f")) loop = run_avx512, lanes = 16, name = "AVX-512";
    else if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
        loop = run_avx2, lanes = 8, name = "AVX2";
#endif
    if (isa) *isa = name;
    if (threads == 0) threads = 1;
    pthread_t *t = calloc(threads, sizeof *t);
    job *jobs = calloc(threads, sizeof *jobs);
    unsigned started = 0;
    if (t && jobs)
        for (; started < threads; started++) {
            jobs[started].loop = loop;
            jobs[started].seconds = seconds;
            if (pthread_create(&t[started], NULL, worker, &jobs[started]) != 0) break;
        }
    double gflops = 0;
    for (unsigned i = 0; i < started; i++) {
        pthread_join(t[i], NULL);
        gflops += 2.0 * lanes * CHAINS * (double)ITERS / jobs[i].best * 1e-9;
    }
    free(t), free(jobs);
    return started == threads ? gflops : 0.0;
}
