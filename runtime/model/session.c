/*
 * Sessions: the workspace a caller makes for a model (activations,
 * decoding caches, step metrics), created empty and grown by the batches
 * it runs. Also the model's own session behind the clformer_model_* batch
 * calls.
 */
#include "buffer.h"
#include "decode.h"
#include "session.h"

#include <stdlib.h>

clformer_status clformer_session_create(clformer_model *model, clformer_session **out)
{
    *out = NULL;
    if (!model)
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT, "a session needs a model: got NULL");
    cf_session *s = calloc(1, sizeof *s);
    if (!s) return cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory");
    s->model = model;
    s->ctx = model->ctx;
    clformer_status st = cf_buffer_alloc(s->ctx, 16, "metrics", &s->metrics);
    if (st != CLFORMER_OK) {
        clformer_session_free(s);
        return st;
    }
    *out = s;
    return CLFORMER_OK;
}

void clformer_session_free(clformer_session *s)
{
    if (!s) return;
    cf_decoder_free(s);
    cf_acts_release(s);
    cf_buffer_free(s->ctx, s->metrics);
    free(s);
}

clformer_model *clformer_session_model(const clformer_session *s) { return s->model; }

clformer_memory clformer_session_memory(const clformer_session *s)
{
    clformer_memory r = {0};
    r.activations = s->arena_capacity * 4;
    r.decoding = cf_decoder_bytes(s);
    r.total = r.activations + r.decoding + 16 * 4;
    return r;
}

clformer_status cf_model_own_session(cf_model *m, cf_session **out)
{
    if (!m->own_session) CF_TRY(clformer_session_create(m, &m->own_session));
    *out = m->own_session;
    return CLFORMER_OK;
}

/* The clformer_model_* batch calls: the same on the model's own session. */

clformer_status clformer_model_train_step(clformer_model *m, const clformer_batch *b, float lr,
                                          clformer_step_stats *stats)
{
    cf_session *s;
    CF_TRY(cf_model_own_session(m, &s));
    return clformer_session_train_step(s, b, lr, stats);
}

clformer_status clformer_model_gradients(clformer_model *m, const clformer_batch *b,
                                         double *loss)
{
    cf_session *s;
    CF_TRY(cf_model_own_session(m, &s));
    return clformer_session_gradients(s, b, loss);
}

clformer_status clformer_model_eval_loss(clformer_model *m, const clformer_batch *b,
                                         double *loss_sum, size_t *tokens)
{
    cf_session *s;
    CF_TRY(cf_model_own_session(m, &s));
    return clformer_session_eval_loss(s, b, loss_sum, tokens);
}

clformer_status clformer_model_logits(clformer_model *m, const clformer_batch *b, float *logits)
{
    cf_session *s;
    CF_TRY(cf_model_own_session(m, &s));
    return clformer_session_logits(s, b, logits);
}

clformer_status clformer_translate(clformer_model *m, const int32_t *src, size_t batch,
                                   size_t src_len, const clformer_decode_options *o,
                                   clformer_translation *out)
{
    cf_session *s;
    CF_TRY(cf_model_own_session(m, &s));
    return clformer_session_translate(s, src, batch, src_len, o, out);
}
