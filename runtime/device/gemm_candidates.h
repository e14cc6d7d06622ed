/*
 * The CLBlast parameter sets the per-shape GEMM search (gemm_search.h) times
 * on a device besides the ones CLBlast would use there: sets from CLBlast's
 * own database for related devices of the same vendor (facts read from
 * CLBlast's src/database/kernels/, 1.5.3 and later), and a few of our own
 * with larger tiles for the large products of a Transformer. Each kernel's
 * sets are separate: Xgemm (the "indirect" kernel, which pads and
 * transposes its operands first) and XgemmDirect.
 */
#ifndef CF_GEMM_CANDIDATES_H
#define CF_GEMM_CANDIDATES_H

#include "context.h"

typedef struct {
    const char *origin; /* where the set comes from, for logs */
    const char *params; /* every parameter of the kernel, "NAME=value ..." */
} cf_gemm_candidate;

/* The candidate sets of Xgemm (direct = false) or XgemmDirect for the
 * context's device (by its profile's vendor), those that fit it (see
 * cf_gemm_candidate_fits), at most `cap`, into `out`; returns how many. */
size_t cf_gemm_candidates(cf_ctx *ctx, bool direct, const cf_gemm_candidate **out,
                          size_t cap);

/* What CLBlast 1.5.3 gives an NVIDIA GPU its database does not know (an H100,
 * an H200: NVIDIA's "default" architecture entries), for the GPU proxy
 * (tools/proxy/gemm_proxy.c), which runs them on a simulator. */
extern const cf_gemm_candidate cf_gemm_nvidia_fallback_xgemm, cf_gemm_nvidia_fallback_direct;
#define CF_GEMM_NVIDIA_FALLBACK_SWITCH 1472

/* The candidates of one vendor's GPUs ("nvidia", "amd", "intel"; anything
 * else: the list for other devices), `count` of them. */
const cf_gemm_candidate *cf_gemm_candidates_of(const char *vendor, bool direct, size_t *count);

/* Every candidate of every vendor, for the tests (`count` of them). */
const cf_gemm_candidate *cf_gemm_candidates_all(bool direct, size_t *count);

/* Whether `params` is a complete Xgemm (or XgemmDirect) set that CLBlast's
 * tuner would accept (its divisibility constraints) and that fits the
 * device: work-group size and local memory. Otherwise false with the
 * reason in `why`. */
bool cf_gemm_candidate_fits(const clformer_device_info *device, bool direct, const char *params,
                            char *why, size_t cap);

#endif
