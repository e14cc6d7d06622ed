/*
 * Data-parallel training through the caller's collectives
 * (clformer_collective): the global label count, the gradient sum between
 * backward and clipping, the loss sum, and the parameter checksum and
 * broadcast that keep or verify the ranks in step. docs/DISTRIBUTED.md has
 * the design and why the library takes callbacks rather than an MPI
 * communicator. The model sees this only through the hooks of model.h
 * (cf_parallel_hooks), installed by clformer_model_set_collective: the
 * collective and the gradient buckets belong to training, not to the model.
 */
#include "buffer.h"
#include "clock.h"
#include "fnv1a.h"
#include "model.h"
#include "status.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* The state behind the model's hooks (model.h); set only with two ranks or more. */
typedef struct {
    clformer_collective collective;  /* the caller's, copied */
    struct cf_grad_overlap *overlap; /* buckets summed during backward (NULL: after it) */
} data_parallel;

static data_parallel *dp(const cf_model *m) { return m->parallel_state; }
static bool alone(const cf_model *m) { return m->parallel_state == NULL; }

/* ---- overlapping the gradient sum with backward ------------------------
 * Backward marks numbered points (backward.c) where the gradients of some
 * tensors are final. Each tensor's point gives the buckets: runs of adjacent
 * tensors final at the same point, cut at BUCKET_MAX elements. At its point
 * a bucket is read back (non-blocking, on the in-order queue, into `host`);
 * once backward is enqueued the host waits for each read in turn and starts
 * its sum while the device computes the rest. The sums go back in one write.
 * Reads rather than a mapped buffer: OpenCL leaves kernels writing a buffer
 * that is mapped undefined, even in other regions. */
enum { BUCKET_MAX = 1 << 22 };

typedef struct {
    size_t off, n;
    int point;
    cl_event read;  /* enqueued at its point (NULL: not yet) */
    void *request;  /* its sum, once started */
} grad_bucket;

struct cf_grad_overlap {
    float *host;          /* the gradients, summed in place */
    grad_bucket *buckets; /* in point order, then buffer order */
    size_t n;
};

static bool has_offset(const cf_layer_params *p, bool decoder, size_t off)
{
    const cf_attn_params *a[2] = {&p->self_attn, &p->cross_attn};
    for (int k = 0; k < (decoder ? 2 : 1); k++)
        if (off == a[k]->in_proj_w || off == a[k]->in_proj_b || off == a[k]->out_w ||
            off == a[k]->out_b)
            return true;
    for (int n = 0; n < (decoder ? 3 : 2); n++)
        if (off == p->norm_w[n] || off == p->norm_b[n]) return true;
    return off == p->lin1_w || off == p->lin1_b || off == p->lin2_w || off == p->lin2_b;
}

/* The backward point (backward.c's numbering) after which the gradient of
 * the tensor at `off` is final. */
static int ready_point(const cf_model *m, size_t off)
{
    const cf_param_layout *l = &m->layout;
    const int nd = m->cfg.n_dec_layers, ne = m->cfg.n_enc_layers;
    /* with a tied generator too; shared with the source embedding, final last */
    if (off == l->tgt_embed) return l->src_embed == l->tgt_embed ? nd + ne + 3 : nd + 1;
    if (off == l->generator_w || off == l->generator_b || off == l->dec_norm_w ||
        off == l->dec_norm_b)
        return 0;
    for (int i = 0; i < nd; i++)
        if (has_offset(&l->dec[i], true, off)) return 1 + (nd - 1 - i);
    if (off == l->enc_norm_w || off == l->enc_norm_b) return nd + 2;
    for (int i = 0; i < ne; i++)
        if (has_offset(&l->enc[i], false, off)) return nd + 3 + (ne - 1 - i);
    return nd + ne + 3; /* the source embedding, and learned positions (both sides) */
}

static int by_point(const void *a, const void *b)
{
    const grad_bucket *x = a, *y = b;
    if (x->point != y->point) return x->point < y->point ? -1 : 1;
    return x->off < y->off ? -1 : x->off > y->off;
}

static clformer_status plan_overlap(cf_model *m)
{
    const cf_param_layout *l = &m->layout;
    struct cf_grad_overlap *o = calloc(1, sizeof *o);
    /* at most one bucket per tensor plus the cuts of long runs */
    const size_t most = l->n_entries + l->total / BUCKET_MAX + 1;
    if (o) o->buckets = calloc(most, sizeof *o->buckets);
    if (o) o->host = malloc(l->total * sizeof *o->host);
    if (!o || !o->buckets || !o->host) {
        if (o) free(o->buckets), free(o->host);
        free(o);
        return cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory");
    }
    for (size_t k = 0; k < l->n_entries; k++) {
        const cf_param_entry *e = &l->entries[k];
        const size_t end = k + 1 < l->n_entries ? l->entries[k + 1].offset : l->total;
        const int point = ready_point(m, e->offset);
        grad_bucket *last = o->n ? &o->buckets[o->n - 1] : NULL;
        if (last && last->point == point && last->off + last->n == e->offset &&
            last->n + (end - e->offset) <= BUCKET_MAX) {
            last->n += end - e->offset;
            continue;
        }
        for (size_t at = e->offset; at < end; at += BUCKET_MAX)
            o->buckets[o->n++] = (grad_bucket){at, end - at < BUCKET_MAX ? end - at : BUCKET_MAX,
                                               point, NULL, NULL};
    }
    qsort(o->buckets, o->n, sizeof *o->buckets, by_point);
    dp(m)->overlap = o;
    return CLFORMER_OK;
}

static void release(cf_model *m)
{
    struct cf_grad_overlap *o = dp(m)->overlap;
    if (o) {
        for (size_t k = 0; k < o->n; k++)
            if (o->buckets[k].read) clReleaseEvent(o->buckets[k].read);
        free(o->buckets);
        free(o->host);
        free(o);
    }
    free(dp(m));
}

static clformer_status grads_ready(cf_model *m, int point)
{
    struct cf_grad_overlap *o = dp(m)->overlap;
    if (!o) return CLFORMER_OK;
    for (size_t k = 0; k < o->n; k++) {
        grad_bucket *b = &o->buckets[k];
        if (b->point != point) continue;
        if (b->read) clReleaseEvent(b->read), b->read = NULL;
        CL_CHECK(clEnqueueReadBuffer(m->ctx->queue, m->grads, CL_FALSE, b->off * sizeof(float),
                                     b->n * sizeof(float), o->host + b->off, 0, NULL, &b->read));
    }
    return CLFORMER_OK;
}

static clformer_status sum_f64(cf_model *m, double *values, size_t n)
{
    return dp(m)->collective.allreduce_sum_f64(dp(m)->collective.user, values, n);
}

static clformer_status gradients(cf_model *m, double step_start, clformer_step_stats *stats);

static const cf_parallel_hooks hooks = {sum_f64, gradients, grads_ready, release};

clformer_status clformer_model_set_collective(clformer_model *m, const clformer_collective *c)
{
    cf_collective_free(m);
    if (!c || c->size <= 1) return CLFORMER_OK;
    const int nonblocking = !!c->allreduce_start_f32 + !!c->test + !!c->wait;
    if (c->rank < 0 || c->rank >= c->size || !c->allreduce_sum_f32 || !c->allreduce_sum_f64 ||
        !c->broadcast || (nonblocking != 0 && nonblocking != 3))
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                       "collective: rank %d of %d, or a missing callback; give rank in "
                       "0..size-1, the three blocking callbacks, and all or none of "
                       "allreduce_start_f32, test and wait", c->rank, c->size);
    data_parallel *state = calloc(1, sizeof *state);
    if (!state) return cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory");
    state->collective = *c;
    m->parallel = &hooks;
    m->parallel_state = state;
    m->rank = c->rank;
    m->ranks = c->size;
    if (!nonblocking) return CLFORMER_OK;
    clformer_status st = plan_overlap(m);
    if (st != CLFORMER_OK) cf_collective_free(m);
    return st;
}

/* Waits for a bucket's read, letting the sums already started progress
 * (MPI implementations progress non-blocking collectives inside their calls). */
static clformer_status wait_for_read(cf_model *m, cl_event read, void *running)
{
    for (;;) {
        cl_int status;
        CL_CHECK(clGetEventInfo(read, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status,
                                NULL));
        if (status < 0)
            return cf_fail_cl(status, "reading back gradients", __FILE__, __LINE__);
        if (status == CL_COMPLETE) return CLFORMER_OK;
        if (running) {
            int done;
            CF_TRY(dp(m)->collective.test(dp(m)->collective.user, running, &done));
        }
        const struct timespec pause = {0, 20000};
        nanosleep(&pause, NULL);
    }
}

/* The buckets read back during backward, summed as each arrives, and
 * written back in one piece. */
static clformer_status overlapped_sum(cf_model *m, double step_start, clformer_step_stats *stats)
{
    struct cf_grad_overlap *o = dp(m)->overlap;
    CL_CHECK(clFlush(m->ctx->queue));
    clformer_status st = CLFORMER_OK;
    double first_start = 0, ready = 0;
    size_t started = 0;
    for (; started < o->n && st == CLFORMER_OK; started++) {
        grad_bucket *b = &o->buckets[started];
        if (!b->read) {
            st = cf_fail(CLFORMER_ERR_INVALID_ARGUMENT, "internal: gradient bucket at %zu was "
                         "never read back (backward point %d)", b->off, b->point);
            break;
        }
        st = wait_for_read(m, b->read, started ? o->buckets[started - 1].request : NULL);
        if (st != CLFORMER_OK) break;
        clReleaseEvent(b->read);
        b->read = NULL;
        ready = cf_now_s();
        if (started == 0) first_start = ready;
        st = dp(m)->collective.allreduce_start_f32(dp(m)->collective.user, o->host + b->off, b->n,
                                               &b->request);
        if (st != CLFORMER_OK) break;
    }
    /* every started sum is completed (and freed), also after an error */
    for (size_t k = 0; k < started; k++) {
        clformer_status w = dp(m)->collective.wait(dp(m)->collective.user, o->buckets[k].request);
        o->buckets[k].request = NULL;
        if (st == CLFORMER_OK) st = w;
    }
    for (size_t k = 0; k < o->n; k++)
        if (o->buckets[k].read) clReleaseEvent(o->buckets[k].read), o->buckets[k].read = NULL;
    if (st != CLFORMER_OK) return st;
    const double done = cf_now_s();
    /* one write; later commands on the in-order queue see it, and the next
     * step's reads into `host` come after it */
    CL_CHECK(clEnqueueWriteBuffer(m->ctx->queue, m->grads, CL_FALSE, 0,
                                  m->layout.total * sizeof(float), o->host, 0, NULL, NULL));
    if (stats) {
        stats->compute_s = ready - step_start;
        stats->allreduce_s = done - ready;
        stats->overlap_s = ready - first_start;
        stats->allreduce_bytes = m->layout.total * sizeof(float);
    }
    return CLFORMER_OK;
}

/* With the non-blocking callbacks, the buckets of overlapped_sum; without
 * them the whole gradient buffer is mapped and summed after backward: no
 * copy on CPU and unified-memory devices; a discrete GPU's driver copies it
 * to host memory and back. */
static clformer_status gradients(cf_model *m, double step_start, clformer_step_stats *stats)
{
    if (dp(m)->overlap) return overlapped_sum(m, step_start, stats);
    const size_t n = m->layout.total;
    CF_TRY(cf_finish(m->ctx));
    const double t0 = cf_now_s();
    cl_int err;
    float *g = clEnqueueMapBuffer(m->ctx->queue, m->grads, CL_TRUE, CL_MAP_READ | CL_MAP_WRITE,
                                  0, n * sizeof(float), 0, NULL, NULL, &err);
    if (err != CL_SUCCESS) return cf_fail_cl(err, "clEnqueueMapBuffer", __FILE__, __LINE__);
    clformer_status st = dp(m)->collective.allreduce_sum_f32(dp(m)->collective.user, g, n);
    err = clEnqueueUnmapMemObject(m->ctx->queue, m->grads, g, 0, NULL, NULL);
    if (st == CLFORMER_OK && err != CL_SUCCESS)
        st = cf_fail_cl(err, "clEnqueueUnmapMemObject", __FILE__, __LINE__);
    if (stats) {
        stats->compute_s = t0 - step_start;
        stats->allreduce_s = cf_now_s() - t0;
        stats->allreduce_bytes = n * sizeof(float);
    }
    return st;
}

clformer_status clformer_model_parameter_checksum(clformer_model *m, uint64_t *checksum)
{
    const size_t n = m->layout.total;
    float *host = malloc(n * sizeof *host);
    if (!host) return cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory");
    clformer_status st = cf_download(m->ctx, m->params, 0, host, n);
    *checksum = cf_fnv1a(CF_FNV1A_INIT, host, n * sizeof *host);
    free(host);
    return st;
}

/* Every rank's checksum on every rank, through the sum callback: rank r
 * fills slots 2r and 2r+1 (the checksum's 32-bit halves, exact in a double)
 * and leaves the others zero, so the sum gathers them. */
static clformer_status gather_checksums(cf_model *m, uint64_t mine, uint64_t *all)
{
    const int n = dp(m)->collective.size, r = dp(m)->collective.rank;
    double *slots = calloc(2 * (size_t)n, sizeof *slots);
    if (!slots) return cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory");
    slots[2 * r] = (double)(mine >> 32);
    slots[2 * r + 1] = (double)(mine & 0xFFFFFFFFu);
    clformer_status st = cf_collective_sum(m, slots, 2 * (size_t)n);
    for (int k = 0; k < n && st == CLFORMER_OK; k++)
        all[k] = ((uint64_t)slots[2 * k] << 32) | (uint64_t)slots[2 * k + 1];
    free(slots);
    return st;
}

clformer_status clformer_model_check_sync(clformer_model *m)
{
    if (alone(m)) return CLFORMER_OK;
    uint64_t mine;
    CF_TRY(clformer_model_parameter_checksum(m, &mine));
    const int n = dp(m)->collective.size;
    uint64_t *all = malloc((size_t)n * sizeof *all);
    if (!all) return cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory");
    clformer_status st = gather_checksums(m, mine, all);
    /* the ranks that differ from rank 0, named in the message */
    char differ[256] = "";
    int count = 0;
    for (int k = 1; k < n && st == CLFORMER_OK; k++) {
        if (all[k] == all[0]) continue;
        size_t used = strlen(differ);
        if (count < 16)
            snprintf(differ + used, sizeof differ - used, "%s%d (checksum %016" PRIx64 ")",
                     count ? ", " : "", k, all[k]);
        else if (count == 16)
            snprintf(differ + used, sizeof differ - used, ", ...");
        count++;
    }
    if (st == CLFORMER_OK && count > 0)
        st = cf_fail(CLFORMER_ERR_DIVERGED,
                     "the ranks' parameters differ: %d of %d ranks differ from rank 0 "
                     "(checksum %016" PRIx64 "): rank %s. Ranks on devices that round "
                     "differently drift apart (run every rank on one kind of device, or "
                     "re-synchronise with clformer_model_broadcast); otherwise the collective "
                     "returned different sums on different ranks",
                     count, n, all[0], differ);
    free(all);
    return st;
}

/* Broadcasts one parameter-shaped buffer through host memory. */
static clformer_status broadcast_buffer(cf_model *m, cl_mem buf, float *host, int root)
{
    const size_t n = m->layout.total;
    CF_TRY(cf_download(m->ctx, buf, 0, host, n));
    CF_TRY(dp(m)->collective.broadcast(dp(m)->collective.user, host, n * sizeof *host, root));
    return cf_upload(m->ctx, buf, 0, host, n);
}

clformer_status clformer_model_broadcast(clformer_model *m, int root)
{
    if (alone(m)) return CLFORMER_OK;
    float *host = malloc(m->layout.total * sizeof *host);
    if (!host) return cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory");
    clformer_status st = CLFORMER_OK;
    cl_mem bufs[3] = {m->params, m->adam_m, m->adam_v};
    cf_model_params_written(m);
    for (int i = 0; i < 3 && st == CLFORMER_OK; i++) st = broadcast_buffer(m, bufs[i], host, root);
    free(host);
    return st;
}
