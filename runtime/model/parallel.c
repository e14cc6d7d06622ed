/* The model's side of data parallelism: the calls forward, backward, the
 * train step and the pipeline make, passed to the hooks that the train
 * layer's collective.c installs (model.h). Alone (no hooks) each is a no-op
 * for one rank. */
#include "model.h"

uint64_t cf_rank_seed(const cf_model *m)
{
    /* rank 0 keeps the seed, so one rank draws what a single process draws */
    return m->seed ^ (0x9E3779B97F4A7C15ULL * (uint64_t)(m->parallel ? m->rank : 0));
}

void cf_collective_share(const cf_model *m, int *rank, int *size)
{
    *rank = m->parallel ? m->rank : 0;
    *size = m->parallel ? m->ranks : 1;
}

clformer_status cf_collective_sum(cf_model *m, double *values, size_t n)
{
    return m->parallel ? m->parallel->sum_f64(m, values, n) : CLFORMER_OK;
}

clformer_status cf_collective_count(cf_model *m, size_t *count)
{
    if (!m->parallel) return CLFORMER_OK;
    double c = (double)*count; /* exact below 2^53 tokens */
    CF_TRY(cf_collective_sum(m, &c, 1));
    *count = (size_t)c;
    return CLFORMER_OK;
}

clformer_status cf_collective_gradients(cf_model *m, double step_start,
                                        clformer_step_stats *stats)
{
    return m->parallel ? m->parallel->gradients(m, step_start, stats) : CLFORMER_OK;
}

clformer_status cf_grads_ready(cf_model *m, int point)
{
    return m->parallel ? m->parallel->grads_ready(m, point) : CLFORMER_OK;
}
