/*
 * Device buffers. A tensor is a (cl_mem, element offset) pair: no
 * sub-buffers, whose alignment rules differ per vendor. Elements are 32-bit
 * (float or int32); offsets and counts are in elements.
 */
#ifndef CF_BUFFER_H
#define CF_BUFFER_H

#include "context.h"

/* A tensor: a buffer and an element offset into it. */
typedef struct {
    cl_mem buf;
    size_t off;
} cf_view;

static inline cf_view cf_view_at(cl_mem buf, size_t off) { return (cf_view){buf, off}; }
/* The view `elements` further along the same buffer. */
static inline cf_view cf_view_add(cf_view v, size_t elements) { return (cf_view){v.buf, v.off + elements}; }

/* The most bytes clformer puts in one buffer: the device's largest
 * allocation, but under 2^31 elements (8 GiB), because CLBlast's kernels
 * take offsets and leading dimensions as int (on an NVIDIA H100, whose
 * largest allocation is 20 GiB, an 11.8 GB arena in one buffer made its
 * GEMMs fail and the queue die). Activation arenas split at this size. */
#define CF_BUFFER_MAX_ELEMENTS (((size_t)1 << 31) - 16)
static inline uint64_t cf_buffer_max_bytes(uint64_t device_max_alloc_bytes)
{
    const uint64_t cap = (uint64_t)CF_BUFFER_MAX_ELEMENTS * 4;
    return device_max_alloc_bytes < cap ? device_max_alloc_bytes : cap;
}

/* Allocates `count` 32-bit elements, zero-filled. Requests beyond
 * cf_buffer_max_bytes or the device's memory fail with the sizes in the message, and
 * allocation that a driver defers to first use is forced and checked here. */
clformer_status cf_buffer_alloc(cf_ctx *ctx, size_t count, const char *what, cl_mem *out);
void cf_buffer_free(cf_ctx *ctx, cl_mem buf);

/* Blocking copies between host and device. */
clformer_status cf_upload(cf_ctx *ctx, cl_mem buf, size_t off, const void *host, size_t count);
clformer_status cf_download(cf_ctx *ctx, cl_mem buf, size_t off, void *host, size_t count);

/* Enqueued (non-blocking) device operations. */
clformer_status cf_copy(cf_ctx *ctx, cl_mem src, size_t src_off, cl_mem dst, size_t dst_off,
                        size_t count);
clformer_status cf_fill(cf_ctx *ctx, cl_mem buf, size_t off, size_t count, float value);
clformer_status cf_fill_u32(cf_ctx *ctx, cl_mem buf, size_t off, size_t count, uint32_t value);

/* The context's scratch buffer with at least `count` elements. It is shared:
 * valid only until the next cf_scratch call, so only leaf operations (which
 * call no other op while they use it) may take it. The in-order queue makes
 * reuse by the next op safe. */
clformer_status cf_scratch(cf_ctx *ctx, size_t count, cl_mem *out);

/* Waits for everything enqueued so far. */
clformer_status cf_finish(cf_ctx *ctx);

#endif
