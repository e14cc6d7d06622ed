/*
 * The host CPU's fp32 multiply-add throughput, measured in C on the widest
 * vectors it has. A CPU OpenCL device runs on these cores, but its compiler
 * need not vectorise clformer_context_fma_peak's kernel: PoCL's reached 50
 * GFLOP/s on an AVX-512 core pair where this loop reaches ~358, and the
 * host provider's own product ran at 125, "229% of peak". So the roofline
 * of a CPU device takes the higher of the two (roofline.c), and
 * build/fma_peak prints this figure.
 */
#ifndef CF_FMA_PEAK_HOST_H
#define CF_FMA_PEAK_HOST_H

/* GFLOP/s (an FMA counts 2) of `threads` threads, each running independent
 * FMA chains for about `seconds`; the sum of each thread's fastest round, the
 * figure least disturbed by other load. *isa (if not NULL) names the vectors:
 * "AVX-512", "AVX2" or "scalar". Returns 0 when a thread cannot be started. */
double cf_host_fma_peak(unsigned threads, double seconds, const char **isa);

#endif
