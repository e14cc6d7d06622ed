/*
 * The roofline of `clformer bench`: per kernel family, the FLOP/s and bytes/s
 * it reached against the device's two roofs, its fp32 FMA peak and its copy
 * bandwidth (clformer_context_roofline: measured once per device and driver,
 * kept in the cache directory), so a report says how far each family is
 * from its limit. A family's roof time is the larger of FLOP / peak and
 * bytes / bandwidth; "% of roof" is that time over the time it took, and
 * "bound" says which of the two roofs is the lower one for it.
 */
#ifndef CLFORMER_BENCH_ROOFLINE_H
#define CLFORMER_BENCH_ROOFLINE_H

#include "clformer.h"

#include <jansson.h>
#include <stdbool.h>

/* The roofs bench measures against. --quick (simulators) measures small
 * and keeps nothing: there, times are not measurements. `again`
 * (--remeasure-roofs) measures even when they are in the cache. */
typedef struct {
    double fma_gflops, copy_gbps;
    bool from_cache; /* read from the cache directory */
    bool quick;      /* measured small, not kept */
} bench_roofs;
clformer_status bench_roofs_measure(clformer_context *ctx, bool quick, bool again,
                                    bench_roofs *roofs);

/* The table, families as given (ms, bytes and FLOP per repetition). */
void bench_roofline_print(const char *title, const clformer_kernel_time *families, size_t n,
                          const bench_roofs *roofs);

/* {"fma_gflops", "copy_gbps", "from_cache", then per family {"ms", "gflops",
 * "peak_fraction", "gbps", "copy_fraction", "flop_per_byte", "bound",
 * "roof_fraction"}} under `key`s given to bench_roofline_json_add. */
json_t *bench_roofline_json(const bench_roofs *roofs);
void bench_roofline_json_add(json_t *roofline, const char *key,
                             const clformer_kernel_time *families, size_t n,
                             const bench_roofs *roofs);

#endif
