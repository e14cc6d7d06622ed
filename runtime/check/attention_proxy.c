/*
 * clformer_check_attention_sims: the attention part of the GPU proxy's
 * simulator files (tools/proxy/attention-proxy.sh), kept in the library so that sources, build options,
 * tiles and launch sizes come from the code that builds and launches the
 * kernels, never from a copy. The .sim argument lists follow
 * runtime/ops/ops_attention.c's launches; each is checked against the
 * kernel's signature in cl/ (kernel_ids.h) before it is written.
 */
#include "clformer_check.h"
#include "kernel_ids.h"
#include "profile.h"
#include "program.h"
#include "status.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* NVIDIA's OpenCL on an H100 or H200, as clformer_list_devices describes it;
 * with amd, the same limits under AMD's name (its profile's tiles). */
static clformer_device_info reference_gpu(bool amd)
{
    clformer_device_info d;
    memset(&d, 0, sizeof d);
    snprintf(d.platform, sizeof d.platform, "%s",
             amd ? "AMD Accelerated Parallel Processing" : "NVIDIA CUDA");
    snprintf(d.vendor, sizeof d.vendor, "%s",
             amd ? "Advanced Micro Devices, Inc." : "NVIDIA Corporation");
    snprintf(d.name, sizeof d.name, "reference GPU (NVIDIA's OpenCL limits%s)",
             amd ? ", AMD's tiles" : "");
    d.type = CLFORMER_DEVICE_GPU;
    d.compute_units = 132;
    d.global_mem_bytes = (uint64_t)80 << 30;
    d.max_alloc_bytes = (uint64_t)20 << 30;
    d.local_mem_bytes = 48 << 10;
    d.max_work_group_size = 1024;
    d.fp64 = true;
    d.vector_width_float = d.native_vector_width_float = 1;
    return d;
}

/* One argument of a .sim file: a buffer of n floats (or ints) all `value`,
 * or a scalar; kind as kernel_ids.h (M buffer, u ulong, U uint, i int, f float). */
typedef struct {
    char kind;
    size_t n;
    double value;
} sim_arg;

#define BUF(n, fill) ((sim_arg){'M', (n), (fill)})
#define OFF ((sim_arg){'u', 0, 0})
#define INT(x) ((sim_arg){'i', 0, (double)(x)})
#define UINT(x) ((sim_arg){'U', 0, (double)(x)})
#define ULONG(x) ((sim_arg){'u', 0, (double)(x)})
#define FLT(x) ((sim_arg){'f', 0, (double)(x)})

typedef struct {
    const char *dir, *kernel_dir;
    size_t B, H, T, dh;
    clformer_device_profile gpu;
    char options[1024]; /* the profile's build options (and the tiles) */
    clformer_check_sim_sink sink;
    void *user;
} job;

static clformer_status write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    const bool ok = f && fputs(text, f) >= 0;
    if (f && fclose(f) != 0) return cf_fail(CLFORMER_ERR_IO, "cannot write %s", path);
    return ok ? CLFORMER_OK : cf_fail(CLFORMER_ERR_IO, "cannot write %s: %s", path, strerror(errno));
}

/* cl/<program>.cl as the library builds it, into the job's directory. */
static clformer_status write_program(const job *j, const char *program)
{
    char *source = NULL, path[4096];
    CF_TRY(cf_program_source(j->kernel_dir, program, &source));
    snprintf(path, sizeof path, "%s/%s.cl", j->dir, program);
    const clformer_status st = write_file(path, source);
    free(source);
    return st;
}

/* Writes <dir>/<kernel>.sim for one launch and hands it to the sink. */
static clformer_status write_sim(const job *j, const char *program, const char *kernel,
                                 const char *phase, const size_t global[2],
                                 const size_t local[2], const sim_arg *args, size_t nargs)
{
    const cf_kernel_id id = cf_kernel_find(program, kernel);
    if (id == CF_K_COUNT || strlen(cf_kernel_kinds[id]) != nargs)
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                       "cl/%s.cl's %s takes other arguments than the %zu of "
                       "runtime/check/attention_proxy.c; update it with ops_attention.c",
                       program, kernel, nargs);
    for (size_t i = 0; i < nargs; i++)
        if (args[i].kind != cf_kernel_kinds[id][i])
            return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                           "%s's argument %zu is '%c' in cl/%s.cl but '%c' in "
                           "runtime/check/attention_proxy.c; update it with ops_attention.c",
                           kernel, i, cf_kernel_kinds[id][i], program, args[i].kind);
    char path[4096];
    snprintf(path, sizeof path, "%s/%s.sim", j->dir, kernel);
    FILE *f = fopen(path, "w");
    if (!f) return cf_fail(CLFORMER_ERR_IO, "cannot write %s: %s", path, strerror(errno));
    fprintf(f, "# %s (%s), by clformer_check_attention_sims\n%s/%s.cl\n%s\n", kernel, phase,
            j->dir, program, kernel);
    fprintf(f, "%zu %zu 1\n%zu %zu 1\n", global[0], global[1], local[0], local[1]);
    for (size_t i = 0; i < nargs; i++) {
        const sim_arg *a = &args[i];
        switch (a->kind) {
        case 'M': fprintf(f, "<size=%zu fill=%g>\n", 4 * a->n, a->value); break;
        case 'u': fprintf(f, "<size=8> %llu\n", (unsigned long long)a->value); break;
        case 'f': fprintf(f, "<size=4> %.9g\n", a->value); break;
        default: fprintf(f, "<size=4> %lld\n", (long long)a->value); break; /* i, U */
        }
    }
    if (fclose(f) != 0) return cf_fail(CLFORMER_ERR_IO, "cannot write %s", path);
    const clformer_check_sim sim = {kernel, phase, path, j->options,
                                    global[0] / local[0] * global[1] / local[1],
                                    local[0] * local[1], j->gpu.local_mem_bytes};
    j->sink(&sim, j->user);
    return CLFORMER_OK;
}

/* The inputs after each kernel's tensors: key tokens (none: a dummy buffer
 * never read), then no dropout. */
#define KEYS(T) BUF(1, 1), OFF, INT(T), INT(0)
#define DROP FLT(0), ULONG(0), UINT(0), UINT(0)

static clformer_status write_tiled(job *j)
{
    cf_attention_tiles t;
    const char *why;
    if (!cf_attention_tiles_for(&j->gpu, j->dh, &t, &why))
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT, "no tiles for dh=%zu: %s", j->dh, why);
    char tiles[256];
    cf_attention_tiles_options(&t, tiles, sizeof tiles);
    cf_program_options_for(&j->gpu, tiles, j->options, sizeof j->options);
    const char *prog = "flash_attention_tiled";
    CF_TRY(write_program(j, prog));
    /* laid out as the model's self-attention launches them: O and dO as rows
     * of the heads' width; Q, K, V, dQ, dK and dV as rows of the projection's
     * three (each its own buffer here, its heads at the start of each row) */
    const size_t BH = j->B * j->H, T = j->T, n = BH * T * j->dh, width = j->H * j->dh;
#define SHAPE                                                                                  \
    INT(j->H), INT(1), INT(T), INT(T), INT(T), INT(0), INT(0), FLT(1.0f / sqrtf((float)j->dh)), \
        DROP, INT(3 * width), INT(3 * width), INT(width), INT(3 * width), INT(3 * width)
    /* a block of rows a work-group, rows / per_item x split items; B*H heads */
#define GRID(rows, split, per_item)                                                            \
    const size_t local[2] = {(rows) / (per_item) * (split), 1},                                \
                 global[2] = {(T + (rows)-1) / (rows)*local[0], BH}
    /* floats: n a tensor in the head layout, r3 as the projection's rows,
     * stats the row statistics */
    const size_t r3 = 3 * n, stats = 2 * BH * T;
    {
        GRID(t.fwd_rows, t.fwd_split, t.fwd_per_item);
        const sim_arg a[] = {BUF(n, 0),     OFF, BUF(stats, 0), OFF, BUF(r3, 0.5), OFF,
                             BUF(r3, 0.25), OFF, BUF(r3, 1),    OFF, KEYS(T),      SHAPE};
        CF_TRY(write_sim(j, prog, "flash_tiled_forward", "forward", global, local, a,
                         sizeof a / sizeof *a));
    }
    {
        GRID(t.dq_rows, t.dq_split, t.dq_per_item);
        const sim_arg a[] = {BUF(r3, 0),    OFF, BUF(BH * T, 0),   OFF, BUF(n, 0.5),  OFF,
                             BUF(n, 0.1),   OFF, BUF(stats, 0.01), OFF, BUF(r3, 0.5), OFF,
                             BUF(r3, 0.25), OFF, BUF(r3, 1),       OFF, KEYS(T),      SHAPE};
        CF_TRY(write_sim(j, prog, "flash_tiled_backward_dq", "backward", global, local, a,
                         sizeof a / sizeof *a));
    }
    GRID(t.dkv_keys, t.dkv_split, t.dkv_per_item);
    const sim_arg a[] = {BUF(r3, 0),    OFF, BUF(r3, 0),       OFF, BUF(BH * T, 0.05), OFF,
                         BUF(n, 0.5),   OFF, BUF(stats, 0.01), OFF, BUF(r3, 0.5),      OFF,
                         BUF(r3, 0.25), OFF, BUF(r3, 1),       OFF, KEYS(T),           SHAPE};
    return write_sim(j, prog, "flash_tiled_backward_dkv", "backward", global, local, a,
                     sizeof a / sizeof *a);
#undef GRID
#undef SHAPE
}

/* The per-row kernels (cl/flash_attention.cl) as GPUs ran them before the
 * tiled ones: one work item per query row (per four key rows for dK, dV),
 * elementwise_wg items a group. */
static clformer_status write_rows(job *j)
{
    cf_program_options_for(&j->gpu, NULL, j->options, sizeof j->options);
    const char *prog = "flash_attention";
    CF_TRY(write_program(j, prog));
    const size_t BH = j->B * j->H, T = j->T, n = BH * T * j->dh, wg = j->gpu.elementwise_wg;
    const size_t rows = BH * T, blocks = BH * ((T + 3) / 4);
#define SHAPE(items)                                                                           \
    INT(items), INT(j->H), INT(1), INT(T), INT(T), INT(T), INT(j->dh), INT(0), INT(0),         \
        FLT(1.0f / sqrtf((float)j->dh)), DROP
    const size_t local[2] = {wg, 1}, rg[2] = {(rows + wg - 1) / wg * wg, 1},
                 bg[2] = {(blocks + wg - 1) / wg * wg, 1};
    const sim_arg fwd[] = {BUF(n, 0),     OFF, BUF(2 * rows, 0), OFF, BUF(n, 0.5), OFF,
                           BUF(n, 0.25), OFF, BUF(n, 1),        OFF, KEYS(T),     SHAPE(rows)};
    const sim_arg dq[] = {BUF(n, 0),    OFF, BUF(rows, 0),        OFF, BUF(n, 0.5), OFF,
                          BUF(n, 0.1),  OFF, BUF(2 * rows, 0.01), OFF, BUF(n, 0.5), OFF,
                          BUF(n, 0.25), OFF, BUF(n, 1),           OFF, KEYS(T),     SHAPE(rows)};
    const sim_arg dkv[] = {BUF(n, 0),    OFF, BUF(n, 0),           OFF, BUF(rows, 0.05), OFF,
                           BUF(n, 0.5),  OFF, BUF(2 * rows, 0.01), OFF, BUF(n, 0.5),     OFF,
                           BUF(n, 0.25), OFF, BUF(n, 1),           OFF, KEYS(T),
                           SHAPE(blocks)};
#undef SHAPE
    CF_TRY(write_sim(j, prog, "flash_attention_forward", "forward", rg, local, fwd,
                     sizeof fwd / sizeof *fwd));
    CF_TRY(write_sim(j, prog, "flash_attention_backward_dq", "backward", rg, local, dq,
                     sizeof dq / sizeof *dq));
    return write_sim(j, prog, "flash_attention_backward_dkv", "backward", bg, local, dkv,
                     sizeof dkv / sizeof *dkv);
}

clformer_status clformer_check_attention_sims(const char *dir, const char *kernel_dir, size_t B,
                                              size_t H, size_t T, size_t dh, bool tiled,
                                              const char *vendor, clformer_check_sim_sink sink,
                                              void *user)
{
    if (!dir || !sink || !B || !H || !T || !dh || B * H > 4096 || T > 4096 || dh > 256)
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                       "clformer_check_attention_sims needs a directory, a sink, B*H from 1 to "
                       "4096, T from 1 to 4096 and dh from 1 to 256");
    if (vendor && strcmp(vendor, "nvidia") && strcmp(vendor, "amd"))
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                       "clformer_check_attention_sims: vendor '%s' is not one: use nvidia or amd",
                       vendor);
    job j = {dir, kernel_dir, B, H, T, dh, {0}, "", sink, user};
    const clformer_device_info gpu = reference_gpu(vendor && !strcmp(vendor, "amd"));
    CF_TRY(clformer_device_profile_for(&gpu, NULL, &j.gpu));
    return tiled ? write_tiled(&j) : write_rows(&j);
}
