/*
 * The runtime context: one OpenCL device, its context and in-order queue,
 * the kernel programs compiled for it, and the profiling record.
 * Everything in runtime/ takes a cf_ctx* first.
 */
#ifndef CF_CONTEXT_H
#define CF_CONTEXT_H

#include "cl_status.h"
#include "kernel_ids.h"
#include "log.h"
#include "profile.h"
#include "status.h"

#include <stdbool.h>
#include <stddef.h>

typedef struct clformer_context cf_ctx;

/* Head sizes one context remembers the attention tile search's choice for. */
#define CF_ATTENTION_HEAD_SIZES 8

/* The attention tile search of one context (runtime/ops/attention_search.h). */
typedef struct {
    bool on;
    size_t n;
    cf_attention_tiles chosen[CF_ATTENTION_HEAD_SIZES]; /* the launches' tiles, by head_dim */
    bool searched[CF_ATTENTION_HEAD_SIZES];          /* the search's, not the profile's */
    size_t timed, from_file;                          /* head sizes */
    size_t rejected;                                  /* tile sets that rounded otherwise */
} cf_attention_search_state;

/* One compiled program and the kernels created from it so far. */
typedef struct {
    char *program_name; /* "layernorm" for cl/layernorm.cl */
    char *options;      /* the full build options string */
    cl_program program;
    size_t n_kernels;
    char **kernel_names;
    cl_kernel *kernels;
    cf_kernel_id *kernel_ids; /* each kernel's row of kernel_ids.h (its argument kinds) */
} cf_program_entry;

/* One profiled command: the family it is counted under, the bytes it moves
 * and the FLOP it does (launch.h) and its event. For
 * a library call that enqueues several kernels (CLBlast), `start` is a
 * marker before them and `event` a marker after them. */
typedef struct {
    const char *family; /* static string: "gemm", "attention", ... */
    const char *kernel; /* the cl/ kernel's name (static), or NULL for a library call */
    uint64_t bytes;
    uint64_t flop;      /* floating-point operations where counted (launch.h), else 0 */
    cl_event event;
    cl_event start;     /* NULL for a single command */
} cf_profile_entry;

struct clformer_context {
    clformer_device_info info;
    /* Every device-dependent choice (profile.c); nothing else asks what the
     * device is. */
    clformer_device_profile device_profile;
    cl_platform_id platform;
    cl_device_id device;
    cl_context context;
    cl_command_queue queue;
    clformer_gemm_provider gemm_provider; /* see clformer_gemm_provider_for */
    bool gemm_auto; /* chosen by the rule (CLFORMER_GEMM unset or auto), not named */
    bool gemm_search; /* CLBlast's sets timed per GEMM shape (gemm_search.h) */
    clformer_attention_path attention_path; /* the choice; acts.c applies it per batch */
    bool attention_fallback_logged; /* a head size without tiles was logged (ops_attention.c) */
    /* Tiles a check runs the tiled attention kernels with at their head size
     * instead of the profile's (clformer_check_attention_time); head_dim 0:
     * none. The model never sets them. */
    cf_attention_tiles forced_tiles;
    /* The attention tile search (runtime/ops/attention_search.h): whether it
     * runs (attention_tuning, the profile's attention_search), and the tiles
     * the launches take per head size seen so far, with what it did. */
    cf_attention_search_state attention_search;
    /* The tiled GEMM provider's tile set, 1-based in cf_gemm_tile_sets,
     * instead of the one the shape gets (the GPU proxy); 0: none. */
    int forced_gemm_tiles;
    /* The host provider runs none of the ops' fused host work (no product
     * epilogues: cf_gemm_fuses false; no attention items: attention_host.h):
     * the ops launch the kernels those replace, which tests compare them
     * with. */
    bool host_fusion_off;
    /* The storage precision of the activations the ops write (FP32 unless a
     * session's pass is running: the session sets it for the passes it
     * enqueues and restores it after). With BF16 or FP16, each op wrapper in
     * runtime/ops/ rounds every activation or activation gradient it writes
     * to that precision in place (cf_round_activation); statistics, losses
     * and weight gradients stay fp32 (docs/ARCHITECTURE.md "Half precision"). */
    clformer_precision precision;
    /* A decoding step is enqueueing its passes (cf_decode_step and
     * cf_decode_step_rows set it and clear it after): the host provider then
     * runs a linear layer's product as dot products (gemm_dots.h), whatever
     * the rows, so that a row's bits do not depend on the rows with it. */
    bool decoding;
    /* While a bf16/fp16 session decodes on the host provider: `half` holds
     * the values of `of` (the session's rounded weights) in 16 bits,
     * element for element (fp16: IEEE half, else bf16), and a decoding
     * step's products read B there where B is `of`: the same bits from half
     * the bytes (cf_session_decode_weights; of NULL: none). */
    struct {
        cl_mem of, half;
        bool fp16;
    } half_weights;

    /* Copies of device_profile.reduce_wg and .elementwise_wg, which every
     * launcher reads: work-group sizes of row reductions (a power of two)
     * and of element-wise kernels. */
    size_t reduce_wg;
    size_t elementwise_wg;

    /* Programs compiled for this device, searched linearly (there are few). */
    cf_program_entry *programs;
    size_t n_programs;
    clformer_program_stats program_stats;
    bool ops_prepared[2]; /* cf_programs_prepare_ops has run, by fused_attention */
    /* The ops' kernels by id (cf_kernel_get), NULL until first used. */
    cl_kernel kernel_by_id[CF_K_COUNT];
    /* Launches of each kernel since the context opened (cf_launch): the
     * tests check that every kernel of every op ran. */
    uint64_t kernel_launches[CF_K_COUNT];

    /* Settings from clformer_context_params (owned copies). */
    cf_log_sink log;
    clformer_progress_callback progress; /* NULL: none */
    void *progress_user;
    char *cache_dir;  /* on-disk program cache; NULL: off */
    struct cf_deferred_store *deferred_stores; /* built, written at free (program_store.c) */
    char *kernel_dir; /* cl/ sources read at build time; NULL: the embedded ones */

    /* Profiling: commands record events while `profiling` is set, which
     * needs a queue created with profiling (queue_profiling). */
    bool profiling, queue_profiling;
    cf_profile_entry *profile;
    size_t n_profile, profile_capacity;

    size_t bytes_allocated; /* live device buffers made by cf_buffer_alloc */

    /* On simulators, released buffers are kept here until the context is
     * freed (see cf_buffer_free). */
    cl_mem *retired;
    size_t n_retired;

    /* Scratch for leaf operations (reduction partials); see cf_scratch. */
    cl_mem scratch;
    size_t scratch_count;
};

/* Opens a context from the environment's settings (clformer_context_params_from_env)
 * with `selector` (NULL: CLFORMER_DEVICE) and optional queue profiling. */
clformer_status cf_context_create(const char *selector, bool profiling, cf_ctx **ctx);

/* The attention tile search's setting (clformer_context_params.attention_tuning)
 * for a device with profile p: whether the search runs; an unknown word is
 * CLFORMER_ERR_INVALID_ARGUMENT naming the words (attention_path.c). */
clformer_status cf_attention_tuning_parse(const char *setting, const clformer_device_profile *p,
                                          bool *on);

/* The per-user cache directory: $XDG_CACHE_HOME/clformer, else
 * $HOME/.cache/clformer; false when neither is set or it does not fit. */
bool cf_default_cache_dir(char *out, size_t cap);

/* What decides which OpenCL drivers the ICD loader sees (icd_vendors.c). */
typedef struct {
    bool user_vendors;         /* OCL_ICD_VENDORS is set: the loader reads what it names */
    char system_dir[4096];     /* the loader's own directory: $OPENCL_VENDOR_PATH, else
                                * /etc/OpenCL/vendors */
    char cache_dir[4096];      /* $CLFORMER_CACHE_DIR, else cf_default_cache_dir */
    char intel_dirs[2][4096];  /* where Intel's CPU runtime may be installed:
                                * $CLFORMER_INTEL_OPENCL_DIR or its default, and the
                                * build's CLFORMER_INTEL_OPENCL_DIR */
    size_t n_intel_dirs;
} cf_icd_env;
/* Reads it from the environment; false when no cache directory is known. */
bool cf_icd_env_read(cf_icd_env *e);

/* Once per process, before its first OpenCL call: unless OCL_ICD_VENDORS is
 * set, points it at a directory of the system's .icd files plus those of the
 * drivers the project installs (Oclgrind, Intel's CPU runtime), so that the
 * loader lists them too. */
void cf_icd_add_project_vendors(void);

#endif
