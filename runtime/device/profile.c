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
static void set_layouts(clformer_device_profile *p, bool gpu)
{
    p->gpu_layouts = gpu;
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
    p->max_work_group_size = d->max_work_group_size ? d->max_work_group_size : 1;

    const bool cpu = p->kind == CLFORMER_KIND_CPU, simulator = p->kind == CLFORMER_KIND_SIMULATOR;
    set_layouts(p, p->kind == CLFORMER_KIND_GPU);
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
    /* measured on PoCL (docs/PERFORMANCE.md): fused attention about level at length 32,
     * twice as fast from 256 on; elsewhere unmeasured, so memory decides */
    p->fused_attention_long = cpu;

    if (!force || !*force || !strcasecmp(force, "auto")) return CLFORMER_OK;
    if (!strcasecmp(force, "gpu-layouts")) {
        set_layouts(p, true);
        p->forced = "gpu-layouts";
    } else if (!strcasecmp(force, "cpu-layouts")) {
        set_layouts(p, false);
        p->forced = "cpu-layouts";
    } else {
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                       "device profile '%s' is not one (CLFORMER_PROFILE): use gpu-layouts, "
                       "cpu-layouts or auto",
                       force);
    }
    return CLFORMER_OK;
}
