/*
 * The per-shape GEMM parameter search: on the first use of each kind of
 * product (transposes, m, n, k, batch) the CLBlast provider times a few
 * candidate parameter sets (gemm_candidates.h) of its two kernels, Xgemm
 * (indirect) and XgemmDirect, on that shape, and keeps the times in a file
 * per device and driver beside the kernel cache, so later runs only read it.
 *
 * What is overridden. CLBlast keeps one parameter set per kernel and device
 * for the whole process, and changing it costs about 0.6 ms of host time
 * per kernel (CLBlastOverrideParameters copies CLBlast's whole database;
 * measured on PoCL and Intel's runtime), more than many products take on a
 * GPU. So the sets are not switched per call: from the times of every shape
 * this process has used, one Xgemm set, one XgemmDirect set and the switch
 * between them (XGEMM_MIN_INDIRECT_SIZE: products with m*n*k below its cube
 * take the direct kernel) are chosen that make the sum of the shapes' times,
 * each weighted by its calls so far, smallest. The choice is made again
 * whenever a shape seen before comes back after new shapes were timed (in a
 * training loop: at the start of the second layer, the decoder, the
 * backward pass, the next step), and applied only when it changes.
 *
 * Same numbers, whichever set wins. A candidate is timed only if its result
 * on the shape equals, bit for bit, the result of the sets CLBlast would use
 * without the search; one that differs once (a GEMMK 1 set can sum in
 * another order) is left out for the device. So the search changes speed,
 * never results: a resumed run, a run without the cache, and a run with
 * CLFORMER_GEMM_TUNING=off compute the same numbers.
 *
 * Budget: at most CF_GEMM_SEARCH_XGEMM + CF_GEMM_SEARCH_DIRECT sets (each
 * compiled once per CLBlast routine, which dominates on a GPU), each timed
 * for at most ~20 ms after one warm-up call; a shape stops after
 * class_seconds of timing (compiles not counted: they are paid once per set,
 * by whichever shape comes first), the process after budget_seconds in all
 * (later shapes keep the current sets until a later run times them). Products below min_fma
 * multiply-adds, and batched products with arbitrary offsets, are never
 * timed: they are too small to gain from it, or the model does not use them.
 *
 * clformer's own kernel. Where the context's GEMM provider was chosen
 * automatically (CLFORMER_GEMM unset or auto) and the device runs the tiled
 * provider's kernel (cl/gemm.cl, gemm_tiled.c), each shape also times that
 * kernel with each tile set the device runs, under the same rule: it takes
 * part only where its result equals CLBlast's own bit for bit. A shape whose
 * time with its fastest tile set beats its time under the CLBlast sets
 * chosen goes to it, with that set, call by call: unlike CLBlast's
 * sets it costs nothing to switch, so each shape gets whichever is faster
 * for it. So clformer's kernel runs only where measurement shows it wins
 * (issue 28), and results stay those of CLBlast's own sets.
 *
 * Progress: the context's progress callback hears "tuning GEMM MxNxK"
 * (candidates done of total) for each shape timed.
 */
#ifndef CF_GEMM_SEARCH_H
#define CF_GEMM_SEARCH_H

#include "context.h"
#include "gemm_provider.h"

/* Most candidate sets per kernel, CLBlast's current set included. */
#define CF_GEMM_SEARCH_XGEMM 8
#define CF_GEMM_SEARCH_DIRECT 6

/* Whether the tiled kernel is timed and chosen: AUTO where the provider
 * was chosen automatically; OFF never; ON for every searching context;
 * PREFERRED as ON, and chosen wherever it has a time (tests: it wins
 * nowhere on a CPU device). */
typedef enum {
    CF_GS_TILED_AUTO = 0,
    CF_GS_TILED_OFF,
    CF_GS_TILED_ON,
    CF_GS_TILED_PREFERRED,
} cf_gemm_search_tiled;

typedef struct {
    size_t max_xgemm, max_direct; /* candidate sets per kernel, CLBlast's own included */
    double min_fma;               /* smallest product (m*n*k*batch) that is timed */
    double budget_seconds;        /* the most one process spends on one device */
    double class_seconds;         /* the most one shape's timing loops take */
    double seconds_per_set;       /* timing of one set on one shape (after its warm-up) */
    /* the candidates besides CLBlast's own: NULL the device's
     * (gemm_candidates.h), else these (tests) */
    const char *const *xgemm_sets, *const *direct_sets;
    size_t n_xgemm_sets, n_direct_sets;
    cf_gemm_search_tiled tiled; /* whether clformer's own kernel takes part */
} cf_gemm_search_limits;

/* The limits in force; tests lower them (shapes and candidates) to run fast. */
cf_gemm_search_limits cf_gemm_search_get_limits(void);
void cf_gemm_search_set_limits(const cf_gemm_search_limits *limits);

/* Called by cf_gemm_tuning_init when the search is on for a context: the
 * device's record (CLBlast's current sets, the candidates, the times on
 * disk) is made on the first call for a device. A failure turns the search
 * off for the context (logged), never the context. */
void cf_gemm_search_start(cf_ctx *ctx);

/* Around context creation handing CLBlast parameter sets for `device` (its
 * table): `hold` waits until no call or search of another context runs on
 * the device (NULL: the device has no record); `release` lets them go on,
 * and the record applies its choice again before the next call. */
void *cf_gemm_search_hold(cl_device_id device);
void cf_gemm_search_release(void *held);

/* Around every CLBlast call of a searching context (ctx->gemm_search):
 * `before` times the call's shape if it is new (on scratch buffers, never
 * the call's own) and applies the chosen sets; the device's sets stay as
 * they are until `after` gets what `before` returned, so two contexts on one
 * device in two threads never run with a candidate that is being checked.
 * *tiled_set >= 0 says that the call goes to the tiled kernel instead, with
 * that tile set (an index of cf_gemm_tile_sets; the caller may then call
 * `after` at once). Failures in the search are logged and the
 * call runs with the current sets. */
void *cf_gemm_search_before(cf_ctx *ctx, const cf_gemm_call *call, int *tiled_set);
void cf_gemm_search_after(void *held);

/* The tile set the context's calls of this shape go to the tiled kernel
 * with now, -1 for CLBlast (as `before` would say for a shape it has seen;
 * no timing, nothing counted). */
int cf_gemm_search_tiled_set(const cf_ctx *ctx, const cf_gemm_call *call);

/* Forgets every device's record when the last context closes, after
 * handing CLBlast back the sets each device had when its search began
 * (CLBlast keeps overrides for the whole process). */
void cf_gemm_search_forget(void);

/* What the search did on the context's device, for tests and bench. */
typedef struct {
    size_t shapes;        /* kinds of product seen in this process */
    size_t timed;         /* of them timed here */
    size_t from_cache;    /* of them read from the file */
    size_t skipped;       /* too small, or past the budget */
    size_t rejected;      /* candidate sets left out: they round differently or failed */
    size_t tiled;         /* the tiled kernel's tile sets that are candidates here */
    size_t tiled_shapes;  /* kinds of product in use that go to it */
    size_t tiled_calls;   /* calls that went to it */
    size_t choices;       /* times the sets in force changed */
    double seconds;       /* spent timing */
    int xgemm, direct;    /* candidate index in force (0: CLBlast's own) */
    size_t switch_size;   /* XGEMM_MIN_INDIRECT_SIZE in force */
    char cache_path[1024]; /* the file of times ("" when the cache is off) */
} cf_gemm_search_stats;
bool cf_gemm_search_stats_for(const cf_ctx *ctx, cf_gemm_search_stats *stats);

#endif
