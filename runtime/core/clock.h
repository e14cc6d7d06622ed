/*
 * The one monotonic clock the runtime times things with (steps, collective
 * waits, conformance and GEMM timings): seconds, never going back.
 */
#ifndef CF_CLOCK_H
#define CF_CLOCK_H

#include <time.h>

static inline double cf_now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

#endif
