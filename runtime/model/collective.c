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

#include <math.h>
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
