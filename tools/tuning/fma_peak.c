/*
 * fma_peak: this machine's fp32 peak, measured with an FMA loop on every
 * core, so GEMM rates (build/gemm_bench) can be given as a fraction of it
 * from the same sitting. The loop is the library's own
 * (runtime/device/fma_peak_host.c), the compute roof `clformer bench` uses
 * for CPU devices.
 *
 *   fma_peak [--threads N] [--seconds S]     (default: all cores, 1 s)
 */
#include "clformer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    long threads = sysconf(_SC_NPROCESSORS_ONLN);
    double seconds = 1.0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--threads") && i + 1 < argc) threads = atol(argv[++i]);
        else if (!strcmp(argv[i], "--seconds") && i + 1 < argc) seconds = atof(argv[++i]);
        else {
            fprintf(stderr, "usage: fma_peak [--threads N] [--seconds S]\n");
            return strcmp(argv[i], "--help") && strcmp(argv[i], "-h") ? 2 : 0;
        }
    }
    if (threads < 1 || threads > 1024 || !(seconds > 0 && seconds <= 60)) {
        fprintf(stderr, "fma_peak: --threads must be 1..1024 and --seconds in (0, 60]\n");
        return 2;
    }
    const char *isa = NULL;
    const double gflops = clformer_host_fma_peak((unsigned)threads, seconds, &isa);
    if (gflops <= 0) {
        fprintf(stderr, "fma_peak: could not start %ld threads\n", threads);
        return 1;
    }
    printf("fp32 FMA peak: %.1f GFLOP/s (%ld threads, %s)\n", gflops, threads, isa);
    return 0;
}
