/*
 * The device profile: the one place that decides, from what a device is,
 * which code paths clformer takes on it (work-group layouts, reduction
 * partitions, simulator workarounds, the host GEMM, the attention rule).
 *
 * Pure over clformer_device_info, so every choice is unit-tested over
 * made-up devices, and a choice can be forced (CLFORMER_PROFILE) so that a
 * GPU's paths run on PoCL and Oclgrind in CI.
 */
#include "profile.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

/* Reductions: enough groups to fill a GPU, at least 4 work items' worth of
 * data each. Other devices get CPU_PARTIALS: a work-group with barriers costs
 * PoCL tens of microseconds, which 1024 groups turned into most of the time
 * of a norm over 1M floats. The count is the same on every CPU device (not
 * per compute unit), so PoCL pthread and basic ranks of one MPI run sum
 * alike, bit for bit (test_mpi_train@pocl_mixed). */
#define GPU_PARTIALS 1024
#define CPU_PARTIALS 16

const char *clformer_device_kind_name(clformer_device_kind kind)
{
    switch (kind) {
    case CLFORMER_KIND_CPU: return "cpu";
    case CLFORMER_KIND_GPU: return "gpu";
    case CLFORMER_KIND_ACCELERATOR: return "accelerator";
    case CLFORMER_KIND_SIMULATOR: return "simulator";
    default: return "other";
    }
}

clformer_device_kind cf_device_kind(const clformer_device_info *d)
{
    if (d->simulator) return CLFORMER_KIND_SIMULATOR;
    switch (d->type) {
    case CLFORMER_DEVICE_GPU: return CLFORMER_KIND_GPU;
    case CLFORMER_DEVICE_ACCELERATOR: return CLFORMER_KIND_ACCELERATOR;
    case CLFORMER_DEVICE_CPU: return CLFORMER_KIND_CPU;
    default: return CLFORMER_KIND_OTHER;
    }
}

int cf_device_tier(const clformer_device_info *d)
{
    switch (cf_device_kind(d)) {
    case CLFORMER_KIND_GPU: return d->unified_memory ? 1 : 0;
    case CLFORMER_KIND_ACCELERATOR: return 2;
    case CLFORMER_KIND_CPU: return 3;
    case CLFORMER_KIND_OTHER: return 4;
    default: return 5; /* simulators last */
    }
}

static bool has(const char *haystack, const char *needle)
{
    const size_t n = strlen(needle);
    for (const char *h = haystack; *h; h++)
        if (strncasecmp(h, needle, n) == 0) return true;
    return false;
}

static const char *vendor_word(const clformer_device_info *d)
{
    static const struct {
        const char *needle, *word;
    } vendors[] = {{"intel", "intel"},    {"advanced micro", "amd"}, {"amd", "amd"},
                   {"nvidia", "nvidia"},  {"apple", "apple"},        {"arm", "arm"},
                   {"qualcomm", "qualcomm"}};
    for (size_t i = 0; i < sizeof vendors / sizeof *vendors; i++)
        if (has(d->vendor, vendors[i].needle)) return vendors[i].word;
    return "other";
}

/* The largest power of two <= want that the device's work-groups allow. */
static size_t fit_wg(size_t want, size_t max_wg)
{
    while (want > 1 && want > max_wg) want /= 2;
    return want;
}

/* The layouts of a GPU or of a CPU; accelerators and unknown devices take a
 * CPU's (unmeasured there: what they ran before the profile existed). */
static void set_layouts(clformer_device_profile *p, bool gpu, uint32_t compute_units)
{
    p->gpu_layouts = gpu;
    p->tiled_attention = gpu;
    /* a GPU's weight gradients (k = the tokens, m x n = a layer's weights:
     * 36-256 tiles of 64 x 64 at d_model 384-512) would leave most of its
     * compute units idle (an H200 has 132); a CPU's few cores are busy */
    p->gemm_split_groups = gpu ? 4 * (size_t)(compute_units ? compute_units : 1) : 0;
    /* PoCL's CPU devices run barrier kernels fastest with small groups. */
    p->reduce_wg = fit_wg(gpu ? 256 : 16, p->max_work_group_size);
    p->reduce_partials = gpu ? GPU_PARTIALS : CPU_PARTIALS;
}

clformer_status clformer_device_profile_for(const clformer_device_info *d, const char *force,
                                            clformer_device_profile *p)
{
    memset(p, 0, sizeof *p);
    p->size = sizeof *p;
    p->kind = cf_device_kind(d);
    snprintf(p->vendor, sizeof p->vendor, "%s", vendor_word(d));
    p->vector_width_float = d->vector_width_float;
    p->native_vector_width_float = d->native_vector_width_float;
    p->n_subgroup_sizes = d->n_subgroup_sizes > 8 ? 8 : d->n_subgroup_sizes;
    memcpy(p->subgroup_sizes, d->subgroup_sizes, sizeof p->subgroup_sizes);
    p->fp16 = d->fp16;
    p->fp64 = d->fp64;
    p->bf16 = d->bf16;
    p->native_kernels = d->native_kernels;
    p->unified_memory = d->unified_memory;
    p->max_alloc_bytes = d->max_alloc_bytes;
    p->local_mem_bytes = d->local_mem_bytes;
    p->max_work_group_size = d->max_work_group_size ? d->max_work_group_size : 1;

    const bool cpu = p->kind == CLFORMER_KIND_CPU, simulator = p->kind == CLFORMER_KIND_SIMULATOR;
    set_layouts(p, p->kind == CLFORMER_KIND_GPU, d->compute_units);
    p->elementwise_wg = p->max_work_group_size < 64 ? p->max_work_group_size : 64;
    /* Oclgrind: the scalar attention kernels (cl/flash_attention.cl), and the
     * workarounds for its shadow memory (buffer.c, gemm_clblast.c). */
    p->scalar_attention = simulator;
    p->stage_uploads = simulator;
    p->keep_released_buffers = simulator;
    p->batched_gemm_one_by_one = simulator;
    /* Oclgrind's compiler is not known to be safe on several threads. */
    p->compile_threads = simulator ? 1 : 0;
    p->timings_meaningful = !simulator;
    /* Host buffers and host code on the queue; a simulator keeps CLBlast so
     * that its checks see every product. */
    p->host_gemm = cpu && d->native_kernels;
    /* GPUs get CLBlast's sets timed per GEMM shape (gemm_search.h): there
     * CLBlast's defaults leave most of the peak unused; elsewhere it is asked
     * for (CLFORMER_GEMM_TUNING=search) */
    p->gemm_search = p->kind == CLFORMER_KIND_GPU;
    /* and the tiled attention kernels' tiles per head size (attention_search.h),
     * which no profile's guess suits every GPU's compiler and caches */
    p->attention_search = p->kind == CLFORMER_KIND_GPU;

    if (!force || !*force || !strcasecmp(force, "auto")) return CLFORMER_OK;
    if (!strcasecmp(force, "gpu-layouts")) {
        set_layouts(p, true, d->compute_units);
        p->forced = "gpu-layouts";
    } else if (!strcasecmp(force, "cpu-layouts")) {
        set_layouts(p, false, d->compute_units);
        p->forced = "cpu-layouts";
    } else if (!strcasecmp(force, "tiled-attention") || !strcasecmp(force, "row-attention")) {
        /* the fused attention's kernels alone, the layouts the device's own:
         * to time one against the other (docs/PERFORMANCE.md) */
        p->tiled_attention = tolower((unsigned char)force[0]) == 't';
        p->forced = p->tiled_attention ? "tiled-attention" : "row-attention";
    } else if (!strcasecmp(force, "whole-gradients")) {
        /* the weight gradients unsplit, the rest the device's own: to time
         * the split against them (tools/device-check.sh) */
        p->gemm_split_groups = 0;
        p->forced = "whole-gradients";
    } else {
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                       "device profile '%s' is not one (CLFORMER_PROFILE): use gpu-layouts, "
                       "cpu-layouts, tiled-attention, row-attention, whole-gradients or auto",
                       force);
    }
    return CLFORMER_OK;
}

/* ------------------------------------------------------------------------- */
/* Tiles of the tiled attention kernels (cl/flash_attention_tiled.cl)        */
/* ------------------------------------------------------------------------- */

/* Floats of a row's operands and accumulators one work item may hold in
 * registers: the forward holds 2 arrays (q, o), dQ 3 (q, dO, dq), dK/dV 4
 * (k, v, dk, dv). Past it the row's columns are split over more items. No
 * AMD GPU has run the kernels yet; a compiler's figures (clang 14 + libclc for
 * AMDGPU gfx906 as a driver builds them, at the head sizes 32 to 128 and
 * the tiles below) are 121-159 VGPRs an item in the forward, 163-212 in dQ
 * and 170-226 in dK/dV, none spilled, of the 256 an item has in a
 * 256-item group (tools/proxy/register-proxy.sh). */
#define TILED_REGISTER_FLOATS 96
/* On NVIDIA's GPUs measurement replaces that budget (an H200,
 * tools/tuning/attention_bench at T=1024, every kernel timed with 12 sets
 * of tiles at head sizes 32, 64 and 128: docs/gpu/2026-11-30-h200-8ba21e0.md).
 * All three kernels split a row alike: not at all up to dh 32, else over
 * the fewest items that hold at most 64 floats of it each, and at least 2.
 * Unsplit at dh 64, dK/dV took 121 ms a call against 3.47 (its 4 arrays
 * of 64 floats an item, where the 2-way split's build already takes
 * ptxas' 255 registers an item); at dh 128 the 2-way split took 9.7 ms
 * for the three kernels against 13.5 over 4 items; at dh 32, unsplit, 6.0
 * against 7.4 over 2. The forward's groups own 64 rows: 1.64 ms against
 * 1.89 with 128 at dh 64 (twice the groups: a T=1024 head gives 16), 1.55
 * against 1.62 at dh 32. */
#define NVIDIA_FWD_ROWS 64
/* Work items per group: AMD's limit, and enough rows to share each tile. */
#define TILED_GROUP 256
/* Local memory a group may use: NVIDIA's OpenCL limit (48 KiB), also on
 * devices with more, so that a profile's tiles hold there too. */
#define TILED_LOCAL_BYTES (48u << 10)
/* Head sizes past this would need more than 8 items per row. */
#define TILED_MAX_HEAD_DIM 256

/* Items per row: the least power of two whose slices of `arrays` arrays of
 * dh floats fit the register budget, at most one float4 column each. */
static unsigned split_for(unsigned arrays, unsigned dh)
{
    const unsigned columns = (dh + 3) / 4;
    unsigned split = 1;
    while (split < columns && arrays * dh > TILED_REGISTER_FLOATS * split) split *= 2;
    return split;
}

/* The rows a group of at most wg items owns at `split` items a row: as
 * many as fit, at most `most`. */
static unsigned group_rows(size_t wg, unsigned split, size_t most)
{
    return (unsigned)(wg / split > most ? most : wg / split);
}

/* NVIDIA's split, the same for all three kernels (above). */
static unsigned nvidia_split(unsigned dh)
{
    if (dh <= 32) return 1;
    unsigned split = 2;
    while (dh > 64 * split) split *= 2;
    return split;
}

/* Floats of an exchange of `values` floats, held as float4s. */
static size_t exchange(size_t values) { return (values + 3) / 4 * 4; }

/* Bytes of the local arrays each kernel declares (keep in step with
 * cl/flash_attention_tiled.cl): two streamed tiles of `tile` rows of
 * 4 * ceil(dh / 4) floats, the exchange of `values` partial sums per item
 * when rows are split, a tile of dropout multipliers (row stride keys + 1)
 * and per-tile flags and row statistics (three a row). */
static size_t fwd_local(const cf_attention_tiles *t)
{
    /* the exchange: rows / per_item * split items of per_item * keys
     * partials each, rows * split * keys in all (the same in the others) */
    const size_t ld = 4 * ((t->head_dim + 3) / 4), w = (size_t)t->fwd_rows * t->fwd_split;
    return 4 * (2 * t->fwd_keys * ld + t->fwd_keys +
                (t->fwd_split > 1 ? exchange(t->fwd_keys * w) : 4) +
                t->fwd_rows * (t->fwd_keys + 1));
}
static size_t dq_local(const cf_attention_tiles *t)
{
    const size_t ld = 4 * ((t->head_dim + 3) / 4), w = (size_t)t->dq_rows * t->dq_split;
    const size_t xs = exchange(t->dq_split > 1    ? 2 * t->dq_keys * w
                               : t->dkv_split > 1 ? t->dkv_split / t->dq_split * w
                                                  : 1); /* and D's shares for dK/dV */
    return 4 * (2 * t->dq_keys * ld + t->dq_keys + xs + t->dq_rows * (t->dq_keys + 4));
}
static size_t dkv_local(const cf_attention_tiles *t)
{
    const size_t ld = 4 * ((t->head_dim + 3) / 4), w = (size_t)t->dkv_keys * t->dkv_split;
    return 4 * (2 * t->dkv_rows * ld + 3 * t->dkv_rows +
                (t->dkv_split > 1 ? exchange(2 * t->dkv_rows * w) : 4) +
                t->dkv_rows * (t->dkv_keys + 1));
}

void cf_attention_tiles_options(const cf_attention_tiles *t, char *out, size_t cap)
{
    snprintf(out, cap,
             "-DHEAD_DIM=%u -DFWD_ROWS=%u -DFWD_SPLIT=%u -DFWD_KEYS=%u -DDQ_ROWS=%u "
             "-DDQ_SPLIT=%u -DDQ_KEYS=%u -DDKV_KEYS=%u -DDKV_SPLIT=%u -DDKV_ROWS=%u "
             "-DFWD_PER_ITEM=%u -DDQ_PER_ITEM=%u -DDKV_PER_ITEM=%u",
             t->head_dim, t->fwd_rows, t->fwd_split, t->fwd_keys, t->dq_rows, t->dq_split,
             t->dq_keys, t->dkv_keys, t->dkv_split, t->dkv_rows, t->fwd_per_item,
             t->dq_per_item, t->dkv_per_item);
}

size_t cf_attention_tiles_local_bytes(const cf_attention_tiles *t)
{
    size_t a = fwd_local(t), b = dq_local(t), c = dkv_local(t);
    return a > b ? (a > c ? a : c) : (b > c ? b : c);
}

static bool power_of_two(unsigned x) { return x && !(x & (x - 1)); }

/* One kernel's rows, split, tile and rows an item holds on a device
 * allowing groups of wg items. */
static const char *kernel_fit(unsigned rows, unsigned split, unsigned tile, unsigned per_item,
                              unsigned columns, size_t wg)
{
    if (!rows || !tile || tile > 32) return "rows and tiles must be 1 or more, tiles 32 at most";
    if (!per_item || per_item > 4 || rows % per_item)
        return "the rows an item holds must be 1 to 4 and divide the group's rows";
    if (!power_of_two(split) || split > columns)
        return "a split must be a power of two no larger than the float4 columns of a row";
    const size_t items = (size_t)rows / per_item * split;
    if (items > wg) return "a group is larger than the device allows";
    /* the group's first `tile` items load the tile's flags or row statistics */
    if (items < tile) return "a group has fewer items than its tile has rows";
    return NULL;
}

bool cf_attention_tiles_fit(const clformer_device_profile *p, const cf_attention_tiles *t,
                            const char **why)
{
    const unsigned columns = (t->head_dim + 3) / 4;
    const size_t local = p->local_mem_bytes < TILED_LOCAL_BYTES ? p->local_mem_bytes
                                                                 : TILED_LOCAL_BYTES;
    if (t->head_dim == 0 || t->head_dim > TILED_MAX_HEAD_DIM)
        *why = "the head size must be 1 to 256";
    else if (!(*why = kernel_fit(t->fwd_rows, t->fwd_split, t->fwd_keys, t->fwd_per_item,
                                 columns, p->max_work_group_size)) &&
             !(*why = kernel_fit(t->dq_rows, t->dq_split, t->dq_keys, t->dq_per_item,
                                 columns, p->max_work_group_size)) &&
             !(*why = kernel_fit(t->dkv_keys, t->dkv_split, t->dkv_rows, t->dkv_per_item,
                                 columns, p->max_work_group_size))) {
        if (t->dkv_split % t->dq_split != 0)
            *why = "the dK/dV split must be a multiple of the dQ split";
        else if (cf_attention_tiles_local_bytes(t) > local)
            *why = "the tiles need more local memory than the device allows (48 KiB at most)";
    }
    return *why == NULL;
}

/* Rows a tile may have where a row is split over `split` items: the
 * kernels unroll their loops over a tile, and the compiler's figures above
 * had 16-row tiles spill in dQ and dK/dV (dh 64 and 80: 256 VGPRs and
 * 28-48 bytes of scratch an item) and 8-row tiles at 8 items a row (dK/dV at
 * dh 128, 255 and 12); 8-row tiles let the forward at dh 32 and 64 keep two
 * groups per compute unit (122 and 127 VGPRs). */
static unsigned max_tile(unsigned split) { return split >= 8 ? 4 : 8; }

/* The largest tile of max_tile(split) rows, or of half that (at least 4),
 * with which local_of(t) fits `local`; with 4 not fitting, the owned rows
 * halve (down to one), then 0: none fits. */
static bool fit_tile(cf_attention_tiles *t, unsigned *tile, unsigned *owned, unsigned split,
                     size_t local, size_t (*local_of)(const cf_attention_tiles *))
{
    for (;;) {
        for (*tile = max_tile(split); *tile >= 4; *tile /= 2)
            if (local_of(t) <= local) return true;
        if (*owned == 1) return false;
        *owned /= 2;
    }
}

bool cf_attention_tiles_for(const clformer_device_profile *p, size_t dh, cf_attention_tiles *t,
                            const char **why)
{
    memset(t, 0, sizeof *t);
    if (!p->tiled_attention) {
        *why = "the device profile runs the per-row kernels";
        return false;
    }
    if (dh == 0 || dh > TILED_MAX_HEAD_DIM) {
        *why = "the head size is above 256";
        return false;
    }
    const size_t wg = p->max_work_group_size < TILED_GROUP ? p->max_work_group_size : TILED_GROUP;
    const size_t local = p->local_mem_bytes < TILED_LOCAL_BYTES ? p->local_mem_bytes
                                                                 : TILED_LOCAL_BYTES;
    const bool nvidia = !strcmp(p->vendor, "nvidia");
    t->head_dim = (unsigned)dh;
    t->fwd_per_item = t->dq_per_item = t->dkv_per_item = 1;
    if (nvidia) {
        t->fwd_split = t->dq_split = t->dkv_split = nvidia_split(t->head_dim);
    } else {
        t->fwd_split = split_for(2, t->head_dim);
        t->dq_split = split_for(3, t->head_dim);
        t->dkv_split = split_for(4, t->head_dim);
    }
    if (wg < t->fwd_split || wg < t->dq_split || wg < t->dkv_split) {
        *why = "the device's work-groups are too small for the head size";
        return false;
    }
    /* at most 128 rows a group, a sequence of 1024 still giving 8 per head
     * (NVIDIA's forward: 64) */
    t->fwd_rows = group_rows(wg, t->fwd_split, nvidia ? NVIDIA_FWD_ROWS : 128);
    t->dq_rows = group_rows(wg, t->dq_split, 128);
    t->dkv_keys = group_rows(wg, t->dkv_split, 128);
    if (!fit_tile(t, &t->fwd_keys, &t->fwd_rows, t->fwd_split, local, fwd_local) ||
        !fit_tile(t, &t->dq_keys, &t->dq_rows, t->dq_split, local, dq_local) ||
        !fit_tile(t, &t->dkv_rows, &t->dkv_keys, t->dkv_split, local, dkv_local)) {
        *why = "the device's local memory is too small for the head size";
        return false;
    }
    *why = NULL;
    return true;
}
