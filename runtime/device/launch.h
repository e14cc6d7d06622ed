/*
 * Enqueueing kernels: argument lists without boilerplate, global sizes
 * rounded up to the work-group size, and optional profiling by family.
 *
 *   CF_LAUNCH(ctx, "layernorm", cf_f32_bytes(2 * n), k, 1, global, local,
 *             CF_MEM(out), CF_U64(out_off), CF_MEM(inp), CF_U64(inp_off), CF_I32(n));
 *
 * Every launch states the bytes it moves: the ideal traffic of the op, every
 * input element read once and every output element written once (an output
 * that is accumulated into is read too), from the op's shapes. A launch whose
 * arithmetic matters (matrix products, attention) also states its FLOP
 * (CF_LAUNCH_FLOP; a multiply-add counts 2). Profiling sums both per family,
 * so `clformer bench` can set each family's time against the device's copy
 * bandwidth and FMA peak (a roofline). Kernels check their own bounds
 * (global sizes are rounded up).
 */
#ifndef CF_LAUNCH_H
#define CF_LAUNCH_H

#include "context.h"

/* One kernel argument. `kind` is the letter cmake/kernel_list.cmake gives
 * the kernel's parameter: cf_launch refuses a launch whose kinds differ from
 * the kernel's signature in cl/ (kernel_ids.h), naming the argument. */
typedef struct {
    size_t size;
    const void *value; /* NULL with size > 0: __local memory of that many bytes */
    char kind;         /* M buffer, L local, u ulong, U uint, i int, f float */
} cf_arg;

#define CF_MEM(m) ((cf_arg){sizeof(cl_mem), &(cl_mem){(m)}, 'M'})
#define CF_U64(x) ((cf_arg){sizeof(cl_ulong), &(cl_ulong){(cl_ulong)(x)}, 'u'})
#define CF_I32(x) ((cf_arg){sizeof(cl_int), &(cl_int){(cl_int)(x)}, 'i'})
#define CF_U32(x) ((cf_arg){sizeof(cl_uint), &(cl_uint){(cl_uint)(x)}, 'U'})
#define CF_F32(x) ((cf_arg){sizeof(cl_float), &(cl_float){(cl_float)(x)}, 'f'})
#define CF_LOCAL(bytes) ((cf_arg){(bytes), NULL, 'L'})
/* A tensor view as the kernels take it: the buffer, then its element offset. */
#define CF_VIEW(v) CF_MEM((v).buf), CF_U64((v).off)

clformer_status cf_launch(cf_ctx *ctx, const char *family, uint64_t bytes, cl_kernel kernel,
                          cl_uint dims, const size_t *global, const size_t *local, size_t nargs,
                          const cf_arg *args);
/* cf_launch with the launch's floating-point operations (an FMA counts 2). */
clformer_status cf_launch_flop(cf_ctx *ctx, const char *family, uint64_t bytes, uint64_t flop,
                               cl_kernel kernel, cl_uint dims, const size_t *global,
                               const size_t *local, size_t nargs, const cf_arg *args);

#define CF_LAUNCH(ctx, family, bytes, kernel, dims, global, local, ...)                        \
    cf_launch((ctx), (family), (bytes), (kernel), (dims), (global), (local),                   \
              sizeof((cf_arg[]){__VA_ARGS__}) / sizeof(cf_arg), (cf_arg[]){__VA_ARGS__})
#define CF_LAUNCH_FLOP(ctx, family, bytes, flop, kernel, dims, global, local, ...)             \
    cf_launch_flop((ctx), (family), (bytes), (flop), (kernel), (dims), (global), (local),      \
                   sizeof((cf_arg[]){__VA_ARGS__}) / sizeof(cf_arg), (cf_arg[]){__VA_ARGS__})

/* The bytes of n elements of 4 bytes (float, int32, uint32: every tensor here). */
static inline uint64_t cf_f32_bytes(size_t n) { return (uint64_t)n * 4u; }

/* Rounds n up to a multiple of m (m > 0). */
static inline size_t cf_round_up(size_t n, size_t m) { return (n + m - 1) / m * m; }

/* The grid of a row kernel over `rows` rows (cl/common.h's ROW_ITEMS): a
 * work-group of reduce_wg items per row with GPU layouts, else a work item
 * per row in groups of elementwise_wg. */
void cf_row_grid(const cf_ctx *ctx, size_t rows, size_t *global, size_t *local);

/* The items of a run kernel over `n` elements or columns (a fill, a copy,
 * one block of rows of a column reduction): one per ITEM_RUN of them
 * (cl/common.h, cf_item_run: one each with GPU layouts, else one per 16, in
 * groups of elementwise_wg). */
void cf_run_grid(const cf_ctx *ctx, size_t n, size_t *global, size_t *local);

/* The row ops' shape check before a launch: N rows of C columns must fit the
 * kernels' int arguments; else an error naming `op` and saying to split the rows. */
clformer_status cf_check_rows(const char *op, size_t N, size_t C);

/* Where profiling is on, the event slot for the next command of `family`,
 * which moves `bytes` and does `flop` (NULL when off). The event is owned by
 * the profile record. */
cl_event *cf_profile_slot(cf_ctx *ctx, const char *family, uint64_t bytes, uint64_t flop);

/* Brackets a library call that enqueues several commands (CLBlast may pad,
 * transpose and multiply): markers before and after, so the whole call is
 * timed, not only its last kernel. No-ops when profiling is off. */
cl_event cf_profile_begin(cf_ctx *ctx);
void cf_profile_end(cf_ctx *ctx, const char *family, uint64_t bytes, uint64_t flop,
                    cl_event begin);

/* Seconds a finished command took by its event (from a profiling queue),
 * else `wall`, the wall clock around it; releases the event. */
double cf_event_seconds(cl_event ev, double wall);

/* Time, bytes and FLOP per family since the last reset, after waiting for the queue. */
typedef clformer_kernel_time cf_profile_total;
/* Fills up to `cap` totals (sorted by time, largest first) and, where
 * `kernels` is not NULL, up to `kernel_cap` per kernel name (the same order),
 * and clears the record. */
clformer_status cf_profile_collect(cf_ctx *ctx, cf_profile_total *totals, size_t cap, size_t *n,
                                   clformer_named_kernel_time *kernels, size_t kernel_cap,
                                   size_t *kernel_n);

#endif
