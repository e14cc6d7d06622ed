/*
 * Tuned CLBlast GEMM parameters. CLBlast ships tuned parameters for many GPUs
 * but falls back to generic ones elsewhere (PoCL's CPU devices, new GPUs),
 * which on PoCL are several times slower than tuned ones. The sets live in a
 * table in gemm_tuning.c, keyed by what identifies a device, and are handed
 * to CLBlastOverrideParameters once per context (cf_context_create).
 *
 * The setting (clformer_context_params.gemm_tuning, CLFORMER_GEMM_TUNING
 * for the CLI):
 *   unset, "1" or "auto"  the table entry that matches the device (none:
 *                         CLBlast's own choice), and on devices whose
 *                         profile says gemm_search (GPUs) the per-shape
 *                         search of gemm_search.h on top
 *   "search"              the same, with the search on any device
 *   "table"               the table entry only, no search
 *   "off" or "0"          nothing: CLBlast's own parameters, no search
 *   anything else         a file of "Kernel NAME=value ..." lines
 *                         (tools/tuning/tune-clblast.sh writes one) applied
 *                         to whatever device is chosen, no search.
 * The search runs only where CLBlast is the GEMM provider. Whatever the
 * setting, a device that
 * allows work-groups of fewer than 256 items first gets a set whose kernels
 * launch at most 32 (CLBlast's generic sets would not run there; see
 * docs/DEVICES.md). Tuning never fails a context: a set
 * CLBlast rejects is logged and CLBlast keeps its parameters for that kernel.
 * CLBlast keeps parameters per device for the whole process, so the setting
 * of the first context opened on a device holds for later ones.
 */
#ifndef CF_GEMM_TUNING_H
#define CF_GEMM_TUNING_H

#include "context.h"
#include "log.h"

/* One CLBlast kernel's parameters: "NAME=value NAME=value ...", every
 * parameter of that kernel (CLBlast rejects a partial set). Kernels:
 * Xgemm, XgemmDirect, Copy, Pad, Transpose, Padtranspose, GemmRoutine. */
typedef struct {
    const char *kernel;
    const char *params;
} cf_clblast_params;

/* The sets measured on one kind of device. A device matches when every
 * non-NULL key matches (substrings are case-sensitive). */
typedef struct {
    const char *label;         /* what it was measured on, for logs */
    const char *platform;      /* part of the platform name */
    const char *vendor;        /* part of the device vendor */
    const char *device_prefix; /* the device name starts with this */
    const char *driver_prefix; /* the driver version starts with this */
    const cf_clblast_params *sets;
    size_t n_sets;
} cf_gemm_tuning;

/* The built-in table. */
const cf_gemm_tuning *cf_gemm_tuning_table(size_t *count);

/* The first table entry that matches `device`, or NULL. */
const cf_gemm_tuning *cf_gemm_tuning_find(const clformer_device_info *device);

/* Most parameters one kernel takes (Xgemm has 16). */
#define CF_CLBLAST_MAX_PARAMS 32

/* Splits "NAME=value ..." into `names` (pointers into `buf`, which receives
 * a copy of `text`) and `values`. Fails on anything but NAME=digits tokens. */
clformer_status cf_clblast_params_parse(const char *text, char *buf, size_t buf_size,
                                        const char **names, size_t *values, size_t *count);

/* Work-items per work-group that a kernel's parameter set launches with
 * (0: the kernel launches none, e.g. GemmRoutine, or `params` is malformed). */
size_t cf_clblast_params_work_group(const char *kernel, const char *params);

/* CLBlastOverrideParameters for the context's device, single precision.
 * Refuses a set whose work-groups are larger than the device allows. */
clformer_status cf_clblast_override(cf_ctx *ctx, const char *kernel, const char *params);
/* The same for any device, without the work-group check. */
clformer_status cf_clblast_override_on(cl_device_id device, const char *kernel, const char *params);

/* Applies every set of `tuning`; returns how many CLBlast accepted, logging
 * (at `level`) each one it rejected. */
size_t cf_gemm_tuning_apply(cf_ctx *ctx, const cf_gemm_tuning *tuning, cf_log_level level);

/* What context creation calls with clformer_context_params.gemm_tuning
 * (CLFORMER_GEMM_TUNING's value for the CLI), as described above. Returns
 * how many parameter sets CLBlast accepted (0: none applied); sets
 * ctx->gemm_search. */
size_t cf_gemm_tuning_init(cf_ctx *ctx, const char *setting);

/* What a setting asks for: a word of the grammar above, or a file (NULL
 * for the file: the setting is not one of the words). */
typedef enum {
    CF_GEMM_TUNING_AUTO,   /* unset, 1, auto */
    CF_GEMM_TUNING_SEARCH, /* search */
    CF_GEMM_TUNING_TABLE,  /* table */
    CF_GEMM_TUNING_OFF,    /* off, 0 */
    CF_GEMM_TUNING_FILE    /* anything else */
} cf_gemm_tuning_mode;
cf_gemm_tuning_mode cf_gemm_tuning_mode_of(const char *setting);

#endif
