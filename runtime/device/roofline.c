/*
 * The device's two roofs, FMA throughput and copy bandwidth
 * (clformer_context_roofline), measured once per device and driver and kept
 * beside the compiled kernels: $CLFORMER_CACHE_DIR/roofline-<16 hex>.txt,
 * the digits an FNV-1a hash of its first lines, which name the platform,
 * device and driver; then "fma_gflops X" and "copy_gbps Y". A file that does
 * not read back exactly so is measured again and replaced (format 1 files,
 * whose CPU roofs came from the OpenCL kernel alone, among them).
 */
#include "door.h"
#include "fileio.h"
#include "fnv1a.h"
#include "launch.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void header(const cf_ctx *ctx, char *out, size_t cap)
{
    snprintf(out, cap, "clformer roofline, format 2\nplatform %s\ndevice %s\ndriver %s\n",
             ctx->info.platform, ctx->info.name, ctx->info.driver_version);
}

static bool path_of(const cf_ctx *ctx, const char *head, char *out, size_t cap)
{
    if (!ctx->cache_dir) return false;
    const int n = snprintf(out, cap, "%s/roofline-%016llx.txt", ctx->cache_dir,
                           (unsigned long long)cf_fnv1a(CF_FNV1A_INIT, head, strlen(head)));
    return n > 0 && (size_t)n < cap;
}

static bool read_roofs(const char *path, const char *head, clformer_roofline *r)
{
    char *body = cf_read_cache_body(path, head);
    char tail[16];
    const bool ok = body &&
                    sscanf(body, "fma_gflops %lf\ncopy_gbps %lf\n%15s", &r->fma_gflops,
                           &r->copy_gbps, tail) == 2 &&
                    isfinite(r->fma_gflops) && r->fma_gflops > 0 && isfinite(r->copy_gbps) &&
                    r->copy_gbps > 0;
    free(body);
    return ok;
}

static void write_roofs(cf_ctx *ctx, const char *path, const char *head,
                        const clformer_roofline *r)
{
    char text[4096];
    const int n = snprintf(text, sizeof text, "%sfma_gflops %.6g\ncopy_gbps %.6g\n", head,
                           r->fma_gflops, r->copy_gbps);
    char *dir = strdup(path), *slash = dir ? strrchr(dir, '/') : NULL;
    if (slash) *slash = '\0';
    if (n < 0 || (size_t)n >= sizeof text || !dir || cf_make_dirs(dir) != CLFORMER_OK ||
        cf_write_cache_file(path, text, (size_t)n) != CLFORMER_OK)
        cf_log(&ctx->log, CF_LOG_WARN, "cannot keep the roofline in %s: %s (it is measured "
               "again next time)", path, clformer_last_error());
    cf_clear_error();
    free(dir);
}

clformer_status clformer_context_roofline(clformer_context *ctx, bool remeasure,
                                          clformer_roofline *r)
{
    if (!ctx || !r)
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                       "clformer_context_roofline: ctx and roofline must not be NULL");
    memset(r, 0, sizeof *r);
    char head[3072], path[4096];
    header(ctx, head, sizeof head);
    const bool cached = path_of(ctx, head, path, sizeof path);
    if (cached && !remeasure && read_roofs(path, head, r)) {
        r->from_cache = true;
        return CLFORMER_OK;
    }
    /* a roof is the most the device was seen to do: measuring again (a
     * first measurement on a busy machine) keeps the higher figures */
    clformer_roofline old = {0};
    if (!cached || !read_roofs(path, head, &old)) memset(&old, 0, sizeof old);
    memset(r, 0, sizeof *r);
    CF_TRY(clformer_context_fma_peak(ctx, 0, 0, &r->fma_gflops));
    if (ctx->info.type == CLFORMER_DEVICE_CPU) { /* its cores are ours (clformer.h) */
        const double host = clformer_host_fma_peak(ctx->info.compute_units, 0.2, NULL);
        if (host > r->fma_gflops) r->fma_gflops = host;
    }
    CF_TRY(clformer_context_copy_bandwidth(ctx, 0, &r->copy_gbps));
    if (old.fma_gflops > r->fma_gflops) r->fma_gflops = old.fma_gflops;
    if (old.copy_gbps > r->copy_gbps) r->copy_gbps = old.copy_gbps;
    if (cached && r->fma_gflops > 0 && r->copy_gbps > 0) write_roofs(ctx, path, head, r);
    return CLFORMER_OK;
}
