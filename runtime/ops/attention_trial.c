/* Self-attention calls on tensors of their own (attention_trial.h). */
#include "attention_trial.h"
#include "buffer.h"
#include "splitmix.h"

#include <stdlib.h>
#include <string.h>

void cf_attention_trial_free(cf_ctx *ctx, cf_attention_trial *t)
{
    for (int i = 0; i < CF_TRIAL_BUFS; i++)
        if (t->buf[i]) cf_buffer_free(ctx, t->buf[i]);
    memset(t->buf, 0, sizeof t->buf);
}

static clformer_status fill(cf_ctx *ctx, cf_attention_trial *t, uint64_t seed)
{
    float *host = malloc(t->n * sizeof *host);
    if (!host) return cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "attention trial: no host memory");
    uint64_t state = seed;
    clformer_status st = CLFORMER_OK;
    for (int i = CF_TRIAL_Q; i <= CF_TRIAL_DO && st == CLFORMER_OK; i++) {
        for (size_t e = 0; e < t->n; e++)
            host[e] = (float)((double)(cf_splitmix64(&state) >> 40) / (double)(1u << 23) - 1.0);
        st = cf_upload(ctx, t->buf[i], 0, host, t->n);
    }
    if (st == CLFORMER_OK) st = cf_finish(ctx);
    free(host);
    return st;
}

clformer_status cf_attention_trial_make(cf_ctx *ctx, size_t batch, size_t heads, size_t len,
                                        size_t head_dim, bool causal, uint64_t seed,
                                        cf_attention_trial *t)
{
    static const char *const what[CF_TRIAL_BUFS] = {
        "Q", "K", "V", "dO", "O", "dQ", "dK", "dV", "row statistics", "row sums D"};
    memset(t, 0, sizeof *t);
    t->shape = (cf_attention_shape){.B = batch, .H = heads, .dh = head_dim, .Tq = len, .Tk = len,
                                    .Tk_cap = len, .causal = causal, .key_ld = len};
    const size_t rows = batch * heads * len;
    t->n = rows * head_dim;
    clformer_status st = CLFORMER_OK;
    for (int i = 0; i < CF_TRIAL_BUFS && st == CLFORMER_OK; i++) {
        const size_t count = i == CF_TRIAL_STATS ? 2 * rows : i == CF_TRIAL_DSUM ? rows : t->n;
        st = cf_buffer_alloc(ctx, count, what[i], &t->buf[i]);
    }
    if (st == CLFORMER_OK) st = fill(ctx, t, seed);
    if (st != CLFORMER_OK) cf_attention_trial_free(ctx, t);
    return st;
}

#define TRIAL_VIEW(t, i) cf_view_at((t)->buf[CF_TRIAL_##i], 0)

static cf_attention_saved saved_of(const cf_attention_trial *t)
{
    const cf_view none = cf_view_at(NULL, 0);
    return (cf_attention_saved){none, none, TRIAL_VIEW(t, STATS), TRIAL_VIEW(t, O), none, none};
}

clformer_status cf_attention_trial_forward(cf_ctx *ctx, const cf_attention_trial *t)
{
    const cf_attention_saved saved = saved_of(t);
    return cf_attention_forward(ctx, TRIAL_VIEW(t, O), &saved, TRIAL_VIEW(t, Q),
                                TRIAL_VIEW(t, K), TRIAL_VIEW(t, V), cf_view_at(NULL, 0),
                                &t->shape, NULL);
}

clformer_status cf_attention_trial_backward(cf_ctx *ctx, const cf_attention_trial *t)
{
    const cf_attention_saved saved = saved_of(t);
    return cf_attention_backward(ctx, TRIAL_VIEW(t, DQ), TRIAL_VIEW(t, DK), TRIAL_VIEW(t, DV),
                                 TRIAL_VIEW(t, DSUM), TRIAL_VIEW(t, DO), &saved,
                                 TRIAL_VIEW(t, Q), TRIAL_VIEW(t, K), TRIAL_VIEW(t, V),
                                 &t->shape, NULL);
}
