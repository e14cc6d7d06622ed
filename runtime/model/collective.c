/*
 * Data-parallel training through the caller's collectives
 * (clformer_collective): the global label count, the gradient sum between
 * backward and clipping, the loss sum, and the parameter checksum and
 * broadcast that keep or verify the ranks in step. docs/DISTRIBUTED.md has
 * the design and why the library takes callbacks rather than an MPI
 * communicator.
 */
#include "buffer.h"
#include "fnv1a.h"
#include "model.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static bool alone(const cf_model *m) { return m->collective.size <= 1; }

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

clformer_status clformer_model_set_collective(clformer_model *m, const clformer_collective *c)
{
    if (!c || c->size <= 1) {
        memset(&m->collective, 0, sizeof m->collective);
        return CLFORMER_OK;
    }
    if (c->rank < 0 || c->rank >= c->size || !c->allreduce_sum_f32 || !c->allreduce_sum_f64 ||
        !c->broadcast)
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                       "collective: rank %d of %d, or a missing callback; give rank in "
                       "0..size-1 and all three callbacks", c->rank, c->size);
    m->collective = *c;
    return CLFORMER_OK;
}

uint64_t cf_rank_seed(const cf_model *m)
{
    /* rank 0 keeps the seed, so one rank draws what a single process draws */
    return m->seed ^ (0x9E3779B97F4A7C15ULL * (uint64_t)(alone(m) ? 0 : m->collective.rank));
}

clformer_status cf_collective_sum(cf_model *m, double *values, size_t n)
{
    if (alone(m)) return CLFORMER_OK;
    return m->collective.allreduce_sum_f64(m->collective.user, values, n);
}

void cf_collective_share(const cf_model *m, int *rank, int *size)
{
    *rank = alone(m) ? 0 : m->collective.rank;
    *size = alone(m) ? 1 : m->collective.size;
}

clformer_status cf_collective_count(cf_model *m, size_t *count)
{
    if (alone(m)) return CLFORMER_OK;
    double c = (double)*count; /* exact below 2^53 tokens */
    CF_TRY(cf_collective_sum(m, &c, 1));
    *count = (size_t)c;
    return CLFORMER_OK;
}

/* Maps the whole gradient buffer: no copy on CPU and unified-memory devices;
 * a discrete GPU's driver copies it to host memory and back. */
clformer_status cf_collective_gradients(cf_model *m, double step_start,
                                        clformer_step_stats *stats)
{
    if (alone(m)) return CLFORMER_OK;
    const size_t n = m->layout.total;
    CF_TRY(cf_finish(m->ctx));
    const double t0 = now_s();
    cl_int err;
    float *g = clEnqueueMapBuffer(m->ctx->queue, m->grads, CL_TRUE, CL_MAP_READ | CL_MAP_WRITE,
                                  0, n * sizeof(float), 0, NULL, NULL, &err);
    if (err != CL_SUCCESS) return cf_fail_cl(err, "clEnqueueMapBuffer", __FILE__, __LINE__);
    clformer_status st = m->collective.allreduce_sum_f32(m->collective.user, g, n);
    err = clEnqueueUnmapMemObject(m->ctx->queue, m->grads, g, 0, NULL, NULL);
    if (st == CLFORMER_OK && err != CL_SUCCESS)
        st = cf_fail_cl(err, "clEnqueueUnmapMemObject", __FILE__, __LINE__);
    if (stats) {
        stats->compute_s = t0 - step_start;
        stats->allreduce_s = now_s() - t0;
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
    const int n = m->collective.size, r = m->collective.rank;
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
    const int n = m->collective.size;
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
    CF_TRY(m->collective.broadcast(m->collective.user, host, n * sizeof *host, root));
    return cf_upload(m->ctx, buf, 0, host, n);
}

clformer_status clformer_model_broadcast(clformer_model *m, int root)
{
    if (alone(m)) return CLFORMER_OK;
    float *host = malloc(m->layout.total * sizeof *host);
    if (!host) return cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory");
    clformer_status st = CLFORMER_OK;
    cl_mem bufs[3] = {m->params, m->adam_m, m->adam_v};
    for (int i = 0; i < 3 && st == CLFORMER_OK; i++) st = broadcast_buffer(m, bufs[i], host, root);
    free(host);
    return st;
}
