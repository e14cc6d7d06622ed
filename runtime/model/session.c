/*
 * Sessions: the workspace a caller makes for a model (activations,
 * decoding caches, step metrics), created empty and grown by the batches
 * it runs.
 */
#include "buffer.h"
#include "gemm.h"
#include "ops.h"
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
    if (s->decoder_release) s->decoder_release(s);
    cf_split_buffers_free(s->ctx, &s->arena);
    free(s->acts.enc);
    free(s->acts.dec);
    cf_buffer_free(s->ctx, s->metrics);
    cf_buffer_free(s->ctx, s->weights);
    cf_buffer_free(s->ctx, s->weights16);
    cf_buffer_free(s->ctx, s->rope);
    free(s);
}

clformer_model *clformer_session_model(const clformer_session *s) { return s->model; }

clformer_memory clformer_session_memory(const clformer_session *s)
{
    clformer_memory r = {0};
    r.activations = cf_split_buffers_elements(&s->arena) * 4;
    r.decoding = s->decoder_bytes ? s->decoder_bytes(s) : 0;
    /* the rounded weights of a bf16/fp16 session count in its total */
    r.total = r.activations + r.decoding + 16 * 4 + (s->weights ? s->model->layout.total * 4 : 0) +
              (s->weights16 ? s->model->layout.total * 2 : 0) +
              (s->rope ? s->model->blocks.rope_config.dh * (size_t)s->model->cfg.max_len * 4 : 0);
    return r;
}

void clformer_session_set_recompute(clformer_session *s, bool recompute)
{
    if (s->recompute == recompute) return;
    s->recompute = recompute;
    /* the next batch lays out afresh; buffers sized for the other layout go */
    cf_split_buffers_free(s->ctx, &s->arena);
    s->acts.B = 0;
}

bool clformer_session_recompute(const clformer_session *s) { return s->recompute; }

clformer_attention_path clformer_session_training_attention(const clformer_session *s)
{
    return s->training_attention;
}

clformer_status clformer_session_set_precision(clformer_session *s, clformer_precision precision)
{
    if (!clformer_precision_name(precision))
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                       "precision %d is none of fp32, bf16 and fp16", (int)precision);
    s->precision = precision;
    if (precision == CLFORMER_FP32) { /* the passes read the master weights again */
        if (s->ctx->half_weights.of == s->weights) /* (a token callback may call this) */
            s->ctx->half_weights.of = s->ctx->half_weights.half = NULL;
        cf_buffer_free(s->ctx, s->weights);
        cf_buffer_free(s->ctx, s->weights16);
        s->weights = s->weights16 = NULL;
    }
    return CLFORMER_OK;
}

clformer_precision clformer_session_precision(const clformer_session *s) { return s->precision; }

clformer_status cf_session_pass_begin(cf_session *s, clformer_precision *saved)
{
    *saved = s->ctx->precision;
    s->ctx->precision = s->precision;
    if (s->precision == CLFORMER_FP32) return CLFORMER_OK;
    const unsigned long version = s->model->params_version;
    if (s->weights && s->weights_version == version && s->weights_precision == s->precision)
        return CLFORMER_OK;
    const size_t n = s->model->layout.total;
    clformer_status st = CLFORMER_OK;
    if (!s->weights) st = cf_buffer_alloc(s->ctx, n, "rounded weights", &s->weights);
    s->weights_version = 0; /* none until the rounding is enqueued */
    if (st == CLFORMER_OK)
        st = cf_round_storage(s->ctx, cf_view_at(s->weights, 0),
                              cf_view_at(s->model->params, 0), n, s->precision);
    if (st != CLFORMER_OK) {
        s->ctx->precision = *saved;
        return st;
    }
    s->weights_version = version;
    s->weights_precision = s->precision;
    return CLFORMER_OK;
}

clformer_status cf_session_pass_end(cf_session *s, clformer_precision saved, clformer_status st)
{
    s->ctx->precision = saved;
    s->ctx->half_weights.of = s->ctx->half_weights.half = NULL;
    return st;
}

clformer_status cf_session_decode_weights(cf_session *s)
{
    if (s->precision == CLFORMER_FP32 || !s->weights || s->decode_from_fp32 ||
        !cf_gemm_reads_half_weights(s->ctx))
        return CLFORMER_OK;
    if (!s->weights16 || s->half_version != s->weights_version ||
        s->half_precision != s->precision) {
        const size_t n = s->model->layout.total;
        if (!s->weights16) /* n 16-bit values in floats */
            CF_TRY(cf_buffer_alloc(s->ctx, (n + 1) / 2, "16-bit weights", &s->weights16));
        s->half_version = 0; /* none until the cast is enqueued */
        CF_TRY(cf_cast(s->ctx, cf_view_at(s->weights16, 0), s->precision,
                       cf_view_at(s->weights, 0), CLFORMER_FP32, n));
        s->half_version = s->weights_version;
        s->half_precision = s->precision;
    }
    s->ctx->half_weights.of = s->weights;
    s->ctx->half_weights.half = s->weights16;
    s->ctx->half_weights.fp16 = s->precision == CLFORMER_FP16;
    return CLFORMER_OK;
}
