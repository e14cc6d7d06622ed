/*
 * clformer_check: does a device compute clformer's operations right? Each
 * layer's check runs its operations (forward and backward) on random inputs
 * on the device and compares them with a double-precision C reference under
 * docs/TESTING.md's tolerance rules. `clformer check` and the tests use it.
 * Link the clformer_check library (it brings the reference with it).
 */
#ifndef CLFORMER_CHECK_H
#define CLFORMER_CHECK_H

#include "clformer.h"

#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* One compared output. */
typedef struct {
    const char *op;     /* "<layer>_<forward|backward>[_<variant>]", e.g. "layernorm_backward" */
    const char *shape;  /* human-readable, e.g. "N=61 C=93" */
    double max_abs_err; /* largest |y - ref| */
    double max_rel_err; /* largest |y - ref| / |ref| over finite refs */
    double nmse;        /* sum (y - ref)^2 / sum ref^2 */
    const char *rule;   /* the tolerance rule in words */
    bool pass;
    double ms;          /* device time of the op (wall clock around a finish) */
    const char *precision; /* the storage precision it ran in: "fp32", "bf16", "fp16" */
} clformer_check_result;

/* Receives each result as it is produced (valid during the call). */
typedef void (*clformer_check_sink)(const clformer_check_result *result, void *user);

/* The layers that have a check ("gemm", "layernorm", ...), in run order. */
CLFORMER_API size_t clformer_check_layer_count(void);
CLFORMER_API const char *clformer_check_layer_name(size_t index);

/* Runs layer `index`'s check on the context's device; quick: small shapes
 * only (simulators). A non-OK status means the check could not run (the
 * message says why), not that numbers were wrong: those are results with
 * pass = false. */
CLFORMER_API clformer_status clformer_check_layer(clformer_context *ctx, size_t index, bool quick,
                                                  clformer_check_sink sink, void *user);

/* The same in a storage precision (docs/TESTING.md, "Per precision"): with
 * CLFORMER_BF16 or CLFORMER_FP16 the inputs are rounded to it, every
 * activation the ops write is stored rounded to it, and the results are
 * judged against the double reference of the rounded inputs with PyTorch
 * assert_close's tolerances for the format plus the fp32 rule. A layer
 * without 16-bit storage (clformer_check_layer_has_precision false) is an
 * error there. clformer_check_layer is this with CLFORMER_FP32. */
CLFORMER_API bool clformer_check_layer_has_precision(size_t index, clformer_precision precision);
CLFORMER_API clformer_status clformer_check_layer_in(clformer_context *ctx, size_t index,
                                                     bool quick, clformer_precision precision,
                                                     clformer_check_sink sink, void *user);

/* One matrix product as the model issues it: C (m x n) = op(A) op(B) with
 * op(A) m x k and op(B) k x n, row-major, packed; batch > 1 is a strided
 * batch of such products (attention's per-head products). */
typedef struct {
    bool trans_a, trans_b;
    size_t m, n, k, batch;
} clformer_gemm_shape;

/* Times `shape` through the context's GEMM provider: runs it once to compile
 * and warm up, then call by call (finishing the queue after each) until
 * min_seconds have passed, at least 3 calls and at most 1000, and gives the
 * fastest call, the figure least disturbed by other load. For tuning
 * (tools/tuning/gemm_bench); *gflops counts 2mnk per product. */
CLFORMER_API clformer_status clformer_check_gemm_time(clformer_context *ctx,
                                                      const clformer_gemm_shape *shape,
                                                      double min_seconds, double *best_ms,
                                                      double *gflops);

/* Which kernel the context's provider runs `shape` with now: "clblast",
 * "host", "tiled" (the tiled provider's), or "tiled 128x128", "tiled
 * 64x64" or "tiled 32x32" where the GEMM search sends the shape to the tiled
 * kernel with that tile set (runtime/device/gemm_search.h; a shape it has
 * not seen yet says "clblast"). For tuning (gemm_bench marks such rows). */
CLFORMER_API clformer_status clformer_check_gemm_kernel(clformer_context *ctx,
                                                        const clformer_gemm_shape *shape,
                                                        const char **kernel);

/* Makes the context's tiled GEMM provider (CLFORMER_GEMM=tiled, cl/gemm.cl)
 * compute every product with block x block blocks of C a work-group (128,
 * 64 or 32) instead of the set each shape gets; 0 returns to that. For
 * tuning (gemm_bench --tiles). CLFORMER_ERR_INVALID_ARGUMENT, saying why,
 * for another size, a context on another provider, or a set the device's
 * work-groups or local memory cannot hold. */
CLFORMER_API clformer_status clformer_check_gemm_tiles(clformer_context *ctx, int block);

/* The tiles of the tiled attention kernels (cl/flash_attention_tiled.cl),
 * per kernel: the rows a work-group owns, the work items sharing a row
 * (each holds a slice of its columns) and the rows streamed through local
 * memory a tile at a time; and the rows (dK/dV: keys) each work item
 * holds, each value read from a tile serving them all (0 counts as 1). A
 * device profile chooses them; a tuning check varies them
 * (tools/tuning/attention_bench). */
typedef struct {
    unsigned fwd_rows, fwd_split, fwd_keys; /* forward: query rows, items a row, key tile */
    unsigned dq_rows, dq_split, dq_keys;    /* dQ: the same */
    unsigned dkv_keys, dkv_split, dkv_rows; /* dK/dV: key rows, items a row, query tile */
    unsigned fwd_per_item, dq_per_item, dkv_per_item; /* rows (dK/dV: keys) an item holds */
} clformer_attention_tiles;

/* One self-attention call of the tiled kernels: batch x heads heads of len
 * queries and keys of head_dim floats, causal or not. */
typedef struct {
    size_t batch, heads, len, head_dim;
    bool causal;
} clformer_attention_time_shape;

/* What clformer_check_attention_time measured: the mean device time of each
 * kernel over the timed calls (OpenCL profiling), and the FLOP/s of the
 * model's products they stand in for (QK^T, PV and the backward's four: 12
 * x len^2 x head_dim a head, every score counted). */
typedef struct {
    double forward_ms, dq_ms, dkv_ms, total_ms;
    double gflops;
} clformer_attention_timing;

/* The device profile's tiles for head_dim; false, with *why, where the
 * profile runs the per-row kernels there. */
CLFORMER_API bool clformer_check_attention_tiles(clformer_context *ctx, size_t head_dim,
                                                 clformer_attention_tiles *tiles,
                                                 const char **why);

/* Whether the context's device can run the kernels with `tiles` at
 * head_dim (group sizes, splits, local memory); false, with *why. */
CLFORMER_API bool clformer_check_attention_tiles_fit(clformer_context *ctx, size_t head_dim,
                                                     const clformer_attention_tiles *tiles,
                                                     const char **why);

/* Times the tiled forward, dQ and dK/dV kernels on `shape` with `tiles`
 * (NULL: the profile's), on inputs drawn from `seed`: one call to compile
 * and warm up, then `calls` timed ones. With `outputs` (4 x batch x heads x
 * len x head_dim floats), the last call's O, dQ, dK and dV are copied
 * there, so that tiles can be held to the same results. Needs a context
 * created with params.profiling. */
CLFORMER_API clformer_status clformer_check_attention_time(
    clformer_context *ctx, const clformer_attention_time_shape *shape,
    const clformer_attention_tiles *tiles, unsigned calls, uint64_t seed,
    clformer_attention_timing *timing, float *outputs);

/* The GEMM part of the GPU proxy (tools/proxy/gemm-proxy.sh): CLBlast's
 * kernels with the parameter sets an NVIDIA GPU runs, on Oclgrind's device
 * (runtime/check/gemm_proxy.c). `list` writes the sets and shapes, one per
 * line; `run` makes one product of a shape with a set on the first Oclgrind
 * device, then writes a line of facts ("gemm_proxy set=... kernel=... fma=...
 * model_work_groups=..."). Run it under OCLGRIND_INST_COUNTS=1 for the
 * counts. */
CLFORMER_API void clformer_check_gemm_proxy_list(FILE *out);
CLFORMER_API clformer_status clformer_check_gemm_proxy_run(const char *set, const char *shape,
                                                           FILE *out);

/*
 * The attention part of the GPU proxy (tools/proxy/attention-proxy.sh): the
 * GPU profile's attention kernels written as Oclgrind simulator files, so
 * that `oclgrind-kernel --inst-counts` counts their memory traffic and
 * arithmetic on any machine (runtime/check/attention_proxy.c). Each launch
 * is a .sim file (work sizes and arguments as the library launches it)
 * beside its program (cl/ with common.h inlined, as the library builds it);
 * its build options are the ones the library would build with on that GPU.
 */
typedef struct {
    const char *kernel;        /* e.g. "flash_tiled_forward" */
    const char *phase;         /* "forward" or "backward" */
    const char *sim;           /* the .sim file written */
    const char *build_options; /* for oclgrind-kernel --build-options */
    size_t groups, items;      /* work-groups of the launch, work items each */
    uint64_t local_bytes;      /* local memory the device offers a group */
} clformer_check_sim;
/* Receives each launch written (valid during the call). */
typedef void (*clformer_check_sim_sink)(const clformer_check_sim *sim, void *user);

/* The fused attention of B x H heads of T queries and T keys of dh floats
 * (self-attention, no masks, no dropout) on a reference GPU with NVIDIA's
 * OpenCL limits (48 KiB of local memory and 1024 items a work-group): the
 * tiled kernels (tiled) or the per-row ones that GPUs ran before, one
 * forward and two backward launches, written under `dir` (which must
 * exist). kernel_dir: where to read cl/ (NULL: the sources built in).
 * vendor: "nvidia" (NULL) or "amd", whose device profile picks the tiles
 * (they differ: runtime/device/profile.c). */
CLFORMER_API clformer_status clformer_check_attention_sims(const char *dir, const char *kernel_dir,
                                                           size_t B, size_t H, size_t T,
                                                           size_t dh, bool tiled,
                                                           const char *vendor,
                                                           clformer_check_sim_sink sink,
                                                           void *user);

/* One kernel as the device's OpenCL compiler built it (valid during the
 * call): clGetKernelWorkGroupInfo's private memory per work item (off-chip
 * on GPUs: spills and private arrays), local memory per group, the largest
 * group it may launch with and the preferred multiple, and the program's
 * build log (NVIDIA: ptxas' registers and spill bytes per kernel). */
typedef struct {
    const char *program;      /* cl/<program>.cl */
    const char *kernel;
    size_t head_dim;          /* flash_attention_tiled's head size; gemm's block rows (the
                                 tiled GEMM's tile set); 0 for the others */
    uint64_t private_bytes, local_bytes;
    size_t max_work_group, preferred_multiple;
    const char *build_log;
} clformer_check_kernel;
typedef void (*clformer_check_kernel_sink)(const clformer_check_kernel *kernel, void *user);

/* Builds every kernel program for the context's device from source, with
 * the options its profile gives (the tiled attention program once per head
 * size in head_dims, where the profile runs it; the tiled GEMM's once per
 * tile set the device holds), and hands each kernel to the sink
 * (tools/tuning/kernel_resources, docs/DEVICE-CHECK.md). */
CLFORMER_API clformer_status clformer_check_kernel_resources(clformer_context *ctx,
                                                             const size_t *head_dims,
                                                             size_t n_head_dims,
                                                             clformer_check_kernel_sink sink,
                                                             void *user);

#ifdef __cplusplus
}
#endif
#endif /* CLFORMER_CHECK_H */
