/* The roofline of `clformer bench` (bench_roofline.h). */
#include "bench_roofline.h"
#include "cli.h"

#include <stdio.h>
#include <string.h>

/* --quick: a few work-groups of FMA and 64 KiB copies, enough to run the
 * code on a simulator in a second */
#define QUICK_FMA_ITEMS 64
#define QUICK_FMA_ITERATIONS 16
#define QUICK_COPY_BYTES ((size_t)64 << 10)

clformer_status bench_roofs_measure(clformer_context *ctx, bool quick, bool again,
                                    bench_roofs *r)
{
    memset(r, 0, sizeof *r);
    r->quick = quick;
    if (quick) {
        CLI_TRY(clformer_context_fma_peak(ctx, QUICK_FMA_ITEMS, QUICK_FMA_ITERATIONS,
                                          &r->fma_gflops));
        return clformer_context_copy_bandwidth(ctx, QUICK_COPY_BYTES, &r->copy_gbps);
    }
    clformer_roofline roof;
    CLI_TRY(clformer_context_roofline(ctx, again, &roof));
    r->fma_gflops = roof.fma_gflops;
    r->copy_gbps = roof.copy_gbps;
    r->from_cache = roof.from_cache;
    return CLFORMER_OK;
}

typedef struct {
    double gflops, peak_fraction, gbps, copy_fraction, flop_per_byte, roof_fraction;
    const char *bound; /* "compute" or "memory" */
} family_roof;

static family_roof roof_of(const clformer_kernel_time *f, const bench_roofs *r)
{
    family_roof x = {0};
    const double s = f->ms * 1e-3;
    if (s <= 0) return x;
    x.gflops = (double)f->flop / s * 1e-9;
    x.gbps = (double)f->bytes / s * 1e-9;
    x.peak_fraction = r->fma_gflops > 0 ? x.gflops / r->fma_gflops : 0.0;
    x.copy_fraction = r->copy_gbps > 0 ? x.gbps / r->copy_gbps : 0.0;
    x.flop_per_byte = f->bytes ? (double)f->flop / (double)f->bytes : 0.0;
    const double compute_s = r->fma_gflops > 0 ? (double)f->flop / (r->fma_gflops * 1e9) : 0.0;
    const double memory_s = r->copy_gbps > 0 ? (double)f->bytes / (r->copy_gbps * 1e9) : 0.0;
    x.bound = compute_s > memory_s ? "compute" : "memory";
    x.roof_fraction = (compute_s > memory_s ? compute_s : memory_s) / s;
    return x;
}

void bench_roofline_print(const char *title, const clformer_kernel_time *f, size_t n,
                          const bench_roofs *r)
{
    printf("\n%s (FMA peak %.1f GFLOP/s, copy bandwidth %.1f GB/s; %s)\n", title, r->fma_gflops,
           r->copy_gbps,
           r->quick ? "measured small: not a measurement"
           : r->from_cache ? "measured once for this device and driver, from the cache"
                           : "measured now, kept in the cache");
    printf("  %-12s %10s %9s %7s %8s %7s %9s %8s %9s\n", "family", "ms", "GFLOP/s", "% peak",
           "GB/s", "% copy", "FLOP/B", "bound", "% of roof");
    for (size_t i = 0; i < n; i++) {
        const family_roof x = roof_of(&f[i], r);
        printf("  %-12s %10.3f", f[i].family, f[i].ms);
        if (f[i].flop) printf(" %9.1f %6.1f%%", x.gflops, 100.0 * x.peak_fraction);
        else printf(" %9s %7s", "-", "-");
        printf(" %8.2f %6.1f%% %9.2f %8s %8.1f%%\n", x.gbps, 100.0 * x.copy_fraction,
               x.flop_per_byte, x.bound ? x.bound : "-", 100.0 * x.roof_fraction);
    }
    printf("  (FLOP counted for matrix products; other families are set against bandwidth)\n");
}

json_t *bench_roofline_json(const bench_roofs *r)
{
    json_t *o = json_object();
    if (!o) return NULL;
    json_object_set_new(o, "fma_gflops", cli_json_number(r->fma_gflops));
    json_object_set_new(o, "copy_gbps", cli_json_number(r->copy_gbps));
    json_object_set_new(o, "from_cache", json_boolean(r->from_cache));
    return o;
}

void bench_roofline_json_add(json_t *o, const char *key, const clformer_kernel_time *f, size_t n,
                             const bench_roofs *r)
{
    json_t *families = json_object();
    for (size_t i = 0; families && i < n; i++) {
        const family_roof x = roof_of(&f[i], r);
        json_t *e = json_object();
        if (!e) break;
        json_object_set_new(e, "ms", cli_json_number(f[i].ms));
        json_object_set_new(e, "flop", json_integer((json_int_t)f[i].flop));
        json_object_set_new(e, "bytes", json_integer((json_int_t)f[i].bytes));
        json_object_set_new(e, "gflops", cli_json_number(x.gflops));
        json_object_set_new(e, "peak_fraction", cli_json_number(x.peak_fraction));
        json_object_set_new(e, "gbps", cli_json_number(x.gbps));
        json_object_set_new(e, "copy_fraction", cli_json_number(x.copy_fraction));
        json_object_set_new(e, "flop_per_byte", cli_json_number(x.flop_per_byte));
        json_object_set_new(e, "bound", json_string(x.bound ? x.bound : "memory"));
        json_object_set_new(e, "roof_fraction", cli_json_number(x.roof_fraction));
        json_object_set_new(families, f[i].family, e);
    }
    if (o && families) json_object_set_new(o, key, families);
    else json_decref(families);
}
