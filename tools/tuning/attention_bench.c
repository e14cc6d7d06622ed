/*
 * attention_bench: the tiled attention kernels (cl/flash_attention_tiled.cl)
 * timed kernel by kernel - forward, dQ, dK/dV - on one self-attention shape,
 * with the device profile's tiles and with variations of them, on the
 * device CLFORMER_DEVICE selects. What it is for: choosing a GPU's tiles by
 * measurement, several sets in one sitting, where a model's step would give
 * one figure per set. Not part of the clformer command: CMake builds it as
 * build/attention_bench, and tools/device-check.sh runs it.
 *
 *   attention_bench [--batch B] [--heads H] [--len T] [--head-dim D] [--causal]
 *                   [--calls N] [--tiles SPEC]... [--profile-only]
 *
 * The variations change one thing for all three kernels at once: the rows
 * a work-group owns (halved, doubled, quartered), the items sharing a row
 * (doubled or halved, the group's size kept), the tile streamed through
 * local memory (halved, doubled), and five pairs of those; and items
 * holding 2 rows (dK/dV: keys) each, in four sets. Each kernel is timed on
 * its own, so a set is three kernels' variations. --tiles adds a set of
 * one's own, as "fwd=ROWSxSPLITxKEYS[xPER],dq=ROWSxSPLITxKEYS[xPER],
 * dkv=KEYSxSPLITxROWS[xPER]" (PER: the rows an item holds). A set the
 * device cannot run is listed with the reason. Each set's outputs (O, dQ,
 * dK, dV) are held to the profile's: a set whose results differ by more
 * than 1e-4 of a tensor's largest value fails the run (exit 1), as does an
 * error. The FLOP/s count the model's products the kernels stand in for.
 * Last, per kernel, the fastest set and its time against the profile's.
 * Only public headers: the timing is the library's
 * (clformer_check_attention_time).
 */
#include "clformer.h"
#include "clformer_check.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { MAX_SETS = 20 };

typedef struct {
    char name[24];
    clformer_attention_tiles t;
} tile_set;

/* The profile's tiles with one change for all three kernels. */
static tile_set varied(const clformer_attention_tiles *p, const char *name, double rows,
                       double split, double tile)
{
    tile_set s;
    snprintf(s.name, sizeof s.name, "%s", name);
    s.t = *p;
    const double r = rows / split; /* rows change against the split: the group keeps */
    s.t.fwd_rows = (unsigned)(p->fwd_rows * r);
    s.t.dq_rows = (unsigned)(p->dq_rows * r);
    s.t.dkv_keys = (unsigned)(p->dkv_keys * r);
    s.t.fwd_split = (unsigned)(p->fwd_split * split);
    s.t.dq_split = (unsigned)(p->dq_split * split);
    s.t.dkv_split = (unsigned)(p->dkv_split * split);
    s.t.fwd_keys = (unsigned)(p->fwd_keys * tile);
    s.t.dq_keys = (unsigned)(p->dq_keys * tile);
    s.t.dkv_rows = (unsigned)(p->dkv_rows * tile);
    return s;
}

/* The profile's tiles with each item holding `per` times the rows (dK/dV:
 * keys), the rows split over `split` times the items and the streamed
 * tile 1/`shrink` of the profile's, in all three kernels; the forward's
 * and dK/dV's groups owning `rows` times the rows (dQ's 128 rows fill its
 * local memory already). */
static tile_set held(const clformer_attention_tiles *p, const char *name, unsigned per,
                     unsigned split, unsigned rows, unsigned shrink)
{
    tile_set s;
    snprintf(s.name, sizeof s.name, "%s", name);
    s.t = *p;
    s.t.fwd_per_item = p->fwd_per_item * per;
    s.t.dq_per_item = p->dq_per_item * per;
    s.t.dkv_per_item = p->dkv_per_item * per;
    s.t.fwd_split = p->fwd_split * split;
    s.t.dq_split = p->dq_split * split;
    s.t.dkv_split = p->dkv_split * split;
    s.t.fwd_rows = p->fwd_rows * rows;
    s.t.dkv_keys = p->dkv_keys * rows;
    s.t.fwd_keys = p->fwd_keys / shrink;
    s.t.dq_keys = p->dq_keys / shrink;
    s.t.dkv_rows = p->dkv_rows / shrink;
    return s;
}

/* "name=RxSxK" or "name=RxSxKxP" (P: the rows an item holds, 1 if left
 * out) at *spec; *spec moves past it. */
static bool parse_kernel(const char **spec, const char *name, unsigned v[3], unsigned *per)
{
    const size_t len = strlen(name);
    int used = 0;
    if (strncmp(*spec, name, len) || (*spec)[len] != '=' ||
        sscanf(*spec + len + 1, "%ux%ux%u%n", &v[0], &v[1], &v[2], &used) != 3)
        return false;
    *spec += len + 1 + used;
    *per = 1;
    if (**spec == 'x') {
        if (sscanf(*spec + 1, "%u%n", per, &used) != 1) return false;
        *spec += 1 + used;
    }
    return true;
}

static bool parse_tiles(const char *spec, tile_set *s)
{
    unsigned f[3], q[3], d[3], fwd_per, dq_per, dkv_per;
    if (!parse_kernel(&spec, "fwd", f, &fwd_per) || *spec++ != ',' ||
        !parse_kernel(&spec, "dq", q, &dq_per) || *spec++ != ',' ||
        !parse_kernel(&spec, "dkv", d, &dkv_per) || *spec != '\0')
        return false;
    snprintf(s->name, sizeof s->name, "given");
    s->t = (clformer_attention_tiles){f[0], f[1], f[2], q[0], q[1], q[2],
                                      d[0], d[1], d[2], fwd_per, dq_per, dkv_per};
    return true;
}

static void describe(char *out, size_t cap, const clformer_attention_tiles *t)
{
    char fp[16] = "", qp[16] = "", dp[16] = "";
    if (t->fwd_per_item > 1) snprintf(fp, sizeof fp, "x%u", t->fwd_per_item);
    if (t->dq_per_item > 1) snprintf(qp, sizeof qp, "x%u", t->dq_per_item);
    if (t->dkv_per_item > 1) snprintf(dp, sizeof dp, "x%u", t->dkv_per_item);
    snprintf(out, cap, "%ux%ux%u%s %ux%ux%u%s %ux%ux%u%s", t->fwd_rows, t->fwd_split,
             t->fwd_keys, fp, t->dq_rows, t->dq_split, t->dq_keys, qp, t->dkv_keys,
             t->dkv_split, t->dkv_rows, dp);
}

/* The largest difference from `ref` in each of the four outputs, over that
 * output's largest magnitude; the worst of the four. */
static double worst_difference(const float *x, const float *ref, size_t n)
{
    double worst = 0.0;
    for (int o = 0; o < 4; o++) {
        double diff = 0.0, scale = 0.0;
        for (size_t i = (size_t)o * n; i < (size_t)(o + 1) * n; i++) {
            diff = fmax(diff, fabs((double)x[i] - (double)ref[i]));
            scale = fmax(scale, fabs((double)ref[i]));
        }
        if (!isfinite(diff)) return INFINITY;
        worst = fmax(worst, scale > 0 ? diff / scale : diff);
    }
    return worst;
}

static void usage(FILE *to)
{
    fprintf(to,
            "usage: attention_bench [--batch B] [--heads H] [--len T] [--head-dim D] [--causal]\n"
            "                       [--calls N] [--tiles SPEC]... [--profile-only]\n"
            "Times the tiled attention kernels (forward, dQ, dK/dV) on B x H heads of T\n"
            "queries and keys of head size D (16 x 8 x 1024 x 64, not causal: base's\n"
            "long-context step) with the device profile's tiles and variations of them,\n"
            "N timed calls each (5). --tiles adds a set,\n"
            "fwd=ROWSxSPLITxKEYS[xPER],dq=ROWSxSPLITxKEYS[xPER],dkv=KEYSxSPLITxROWS[xPER]\n"
            "(PER: the rows, or keys, a work item holds; 1 if left out); --profile-only\n"
            "times the profile's alone. Each set's outputs are held to the profile's\n"
            "(1e-4 of each output's largest value); a difference or an error exits 1.\n"
            "Last, the fastest set per kernel against the profile's.\n"
            "The device is CLFORMER_DEVICE's; CLFORMER_PROFILE=tiled-attention runs the\n"
            "tiled kernels on a device whose profile does not.\n");
}

int main(int argc, char **argv)
{
    clformer_attention_time_shape shape = {16, 8, 1024, 64, false};
    unsigned calls = 5;
    bool profile_only = false;
    tile_set sets[MAX_SETS];
    size_t n_given = 0;
    tile_set given[4];
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(a, "--causal")) {
            shape.causal = true;
        } else if (!strcmp(a, "--profile-only")) {
            profile_only = true;
        } else if (v && !strcmp(a, "--tiles")) {
            if (n_given == 4 || !parse_tiles(v, &given[n_given])) {
                fprintf(stderr, "attention_bench: --tiles '%s' is not "
                                "fwd=ROWSxSPLITxKEYS[xPER],dq=ROWSxSPLITxKEYS[xPER],"
                                "dkv=KEYSxSPLITxROWS[xPER] (four at most)\n", v);
                return 2;
            }
            n_given++;
            i++;
        } else if (v && (!strcmp(a, "--batch") || !strcmp(a, "--heads") || !strcmp(a, "--len") ||
                         !strcmp(a, "--head-dim") || !strcmp(a, "--calls"))) {
            char *end;
            const unsigned long x = strtoul(v, &end, 10);
            if (*end || x == 0 || x > 1u << 20) {
                fprintf(stderr, "attention_bench: %s needs a whole number from 1 to %u, not '%s'\n",
                        a, 1u << 20, v);
                return 2;
            }
            size_t *field = !strcmp(a, "--batch")   ? &shape.batch
                            : !strcmp(a, "--heads") ? &shape.heads
                            : !strcmp(a, "--len")   ? &shape.len
                                                    : !strcmp(a, "--head-dim") ? &shape.head_dim
                                                                               : NULL;
            if (field) *field = x;
            else calls = (unsigned)x;
            i++;
        } else {
            fprintf(stderr, "attention_bench: unknown argument '%s'\n", a);
            usage(stderr);
            return 2;
        }
    }

    clformer_context_params params; /* CLFORMER_DEVICE, CLFORMER_PROFILE, ... */
    clformer_context *ctx = NULL;
    if (clformer_context_params_from_env(&params) != CLFORMER_OK ||
        (params.profiling = true, clformer_context_create_with_params(&params, &ctx)) !=
            CLFORMER_OK) {
        fprintf(stderr, "attention_bench: %s\n", clformer_last_error());
        return 1;
    }
    const char *why = NULL;
    clformer_attention_tiles profile;
    if (!clformer_check_attention_tiles(ctx, shape.head_dim, &profile, &why)) {
        fprintf(stderr,
                "attention_bench: the device profile runs no tiled kernels at head size %zu "
                "(%s); set CLFORMER_PROFILE=tiled-attention to time them anyway\n",
                shape.head_dim, why);
        clformer_context_free(ctx);
        return 1;
    }
    size_t n = 0;
    sets[n++] = varied(&profile, "profile", 1, 1, 1);
    if (!profile_only) {
        sets[n++] = varied(&profile, "rows/2", 0.5, 1, 1);
        sets[n++] = varied(&profile, "rows*2", 2, 1, 1);
        sets[n++] = varied(&profile, "split*2", 1, 2, 1);
        sets[n++] = varied(&profile, "split/2", 1, 0.5, 1);
        sets[n++] = varied(&profile, "tile/2", 1, 1, 0.5);
        sets[n++] = varied(&profile, "tile*2", 1, 1, 2);
        /* and two at once, and a quarter of the rows: a step's best set of
         * one kernel is often a neighbour's neighbour */
        sets[n++] = varied(&profile, "rows/4", 0.25, 1, 1);
        sets[n++] = varied(&profile, "r/2 s/2", 0.5, 0.5, 1);
        sets[n++] = varied(&profile, "r/2 t/2", 0.5, 1, 0.5);
        sets[n++] = varied(&profile, "r*2 s*2", 2, 2, 1);
        sets[n++] = varied(&profile, "s/2 t/2", 1, 0.5, 0.5);
        /* items holding 2 rows (dK/dV: keys): a value read from a tile
         * serves both, where a GPU's shared-memory reads bound the
         * profile's kernels: half the items, a group of twice the rows, or
         * rows split over twice the items (the registers an item holds
         * kept), with the profile's tile or half of it (fewer registers
         * for the tile's sums) */
        sets[n++] = held(&profile, "per*2", 2, 1, 1, 1);
        sets[n++] = held(&profile, "p*2 r*2", 2, 1, 2, 1);
        sets[n++] = held(&profile, "p*2 s*2", 2, 2, 1, 1);
        sets[n++] = held(&profile, "p2 s2 t2", 2, 2, 1, 2);
    }
    for (size_t i = 0; i < n_given; i++) sets[n++] = given[i];

    const clformer_device_info *dev = clformer_context_device(ctx);
    printf("attention_bench: %zu x %zu heads x len %zu, head size %zu, %s; %s; %u timed calls "
           "a set\n",
           shape.batch, shape.heads, shape.len, shape.head_dim,
           shape.causal ? "causal" : "not causal", dev->name, calls);
    printf("tiles: forward rows x split x keys, dQ rows x split x keys, dK/dV keys x split x "
           "rows\n");
    printf("%-8s %-28s %9s %9s %9s %9s %9s %9s\n", "set", "tiles", "fwd ms", "dQ ms",
           "dK/dV ms", "total ms", "GFLOP/s", "max diff");
    const size_t per = shape.batch * shape.heads * shape.len * shape.head_dim;
    float *ref = malloc(4 * per * sizeof *ref), *out = malloc(4 * per * sizeof *out);
    if (!ref || !out) {
        fprintf(stderr, "attention_bench: no host memory for 8 tensors of %zu floats\n", per);
        free(ref);
        free(out);
        clformer_context_free(ctx);
        return 1;
    }
    int rc = 0;
    /* per kernel (forward, dQ, dK/dV): the fastest set timed and its ms */
    static const char *const kernel_names[3] = {"forward", "dQ", "dK/dV"};
    size_t best[3] = {0, 0, 0};
    double best_ms[3] = {INFINITY, INFINITY, INFINITY}, profile_ms[3] = {0, 0, 0};
    for (size_t i = 0; i < n; i++) {
        char tiles[96];
        describe(tiles, sizeof tiles, &sets[i].t);
        if (!sets[i].t.fwd_split || !sets[i].t.dq_split || !sets[i].t.dkv_split) {
            printf("%-8s %-28s none: a kernel of the profile holds a row in one item already\n",
                   sets[i].name, tiles);
            continue;
        }
        if (!clformer_check_attention_tiles_fit(ctx, shape.head_dim, &sets[i].t, &why)) {
            printf("%-8s %-28s does not fit: %s\n", sets[i].name, tiles, why);
            continue;
        }
        clformer_attention_timing t;
        if (clformer_check_attention_time(ctx, &shape, &sets[i].t, calls, 1, &t,
                                          i == 0 ? ref : out) != CLFORMER_OK) {
            printf("%-8s %-28s failed: %s\n", sets[i].name, tiles, clformer_last_error());
            rc = 1;
            if (i == 0) break; /* nothing to hold the others to */
            continue;
        }
        const double diff = i == 0 ? 0.0 : worst_difference(out, ref, per);
        printf("%-8s %-28s %9.3f %9.3f %9.3f %9.3f %9.0f %9.1e%s\n", sets[i].name, tiles,
               t.forward_ms, t.dq_ms, t.dkv_ms, t.total_ms, t.gflops, diff,
               diff > 1e-4 ? "  DIFFERS from the profile's" : "");
        if (diff > 1e-4) rc = 1;
        const double ms[3] = {t.forward_ms, t.dq_ms, t.dkv_ms};
        for (int k = 0; k < 3; k++) {
            if (i == 0) profile_ms[k] = ms[k];
            if (diff <= 1e-4 && ms[k] < best_ms[k]) best_ms[k] = ms[k], best[k] = i;
        }
        fflush(stdout);
    }
    /* what a profile would take, kernel by kernel (each is timed alone) */
    if (!rc && n > 1) {
        printf("fastest set per kernel (each kernel is timed alone):\n");
        for (int k = 0; k < 3; k++) {
            char tiles[96];
            describe(tiles, sizeof tiles, &sets[best[k]].t);
            printf("  %-8s %-8s %-28s %9.3f ms, the profile's %.3f\n", kernel_names[k],
                   sets[best[k]].name, tiles, best_ms[k], profile_ms[k]);
        }
    }
    free(ref);
    free(out);
    clformer_context_free(ctx);
    return rc;
}
