/*
 * A session (internal): the workspace of one caller of a model, the
 * llama_context to the model's llama_model. It owns the activation arena
 * of its batches, the decoding caches and the metrics of its steps; the
 * model owns weights, gradients and optimizer state. Sessions of one model
 * can be used in turn (not from two threads at once: they share the
 * model's context and, when training, its gradients).
 */
#ifndef CF_SESSION_H
#define CF_SESSION_H

#include "arena.h"
#include "graph.h"

struct clformer_session {
    cf_model *model;
    cf_ctx *ctx;                   /* the model's */
    cf_split_buffers arena;        /* activations (arena.h) */
    size_t arena_limit;            /* elements per arena buffer; 0: the device's largest
                                    * allocation (tests set less to split small arenas) */
    bool recompute;                /* training keeps each layer's output alone and
                                    * recomputes the rest in backward (graph.h) */
    clformer_attention_path training_attention; /* the last training batch's path
                                                 * (clformer_session_training_attention) */
    /* Storage precision of the passes (clformer_session_set_precision): the
     * ops round every activation they write to it (ctx->precision, set for
     * the passes this session enqueues), and the passes read `weights`, the
     * master weights rounded to it, made again as a pass begins if the
     * master weights were written since (the model's params_version, which
     * `weights_version` holds of the copy) or the precision changed. */
    clformer_precision precision;
    cl_mem weights;                /* layout.total fp32 values; NULL with FP32 */
    unsigned long weights_version;
    clformer_precision weights_precision;
    /* The rounded weights in 16 bits, for decoding steps whose products
     * read them so (cf_session_decode_weights): made on a decoding step
     * when `weights` was made again since (`half_version`, the
     * weights_version it was cast from) or the precision changed
     * (`half_precision`: a token callback may change it within a pass) */
    cl_mem weights16;
    unsigned long half_version;
    clformer_precision half_precision;
    /* decoding reads the fp32 rounded weights instead of weights16: the
     * same bits, twice the bytes (tests compare the two) */
    bool decode_from_fp32;
    /* 16-bit training keeps what backward reads in fp32 rather than in 16
     * bits (graph.h half_saved): the same bits, more memory, no casts
     * (tests compare the two) */
    bool saved_in_fp32;
    cf_acts acts;                  /* views for the current batch shape */
    cl_mem metrics;                /* [loss_sum, grad_norm_sq, clip_scale, spare] */
    /* rotary positions' table (rotary.c; NULL until a pass needs it) and
     * the sequence length its dynamic angles were made for (0: none) */
    cl_mem rope;
    size_t rope_key;
    /* decoding's caches (the decode layer's, decode.h), made on first use;
     * whoever makes them sets how they are freed and counted, so that the
     * session, below decoding, never calls it */
    struct cf_decoder *decoder;
    void (*decoder_release)(cf_session *s);
    size_t (*decoder_bytes)(const cf_session *s);
    /* decoding keeps finished rows in the batch, as before they were
     * dropped (tests compare both ways: the output must not change) */
    bool keep_finished_rows;
};

/* The view of parameter (or gradient) element `off` of the session's model. */
/* A parameter (or its gradient) by offset; none ({NULL, 0}) for CF_NO_PARAM,
 * so an absent bias is simply not applied. */
static inline cf_view cf_param(const cf_session *s, size_t off)
{
    if (off == CF_NO_PARAM) return (cf_view){NULL, 0};
    /* 16-bit runs read the rounded copy; the optimizer updates the master */
    return cf_view_at(s->precision != CLFORMER_FP32 ? s->weights : s->model->params, off);
}
static inline cf_view cf_grad(const cf_session *s, size_t off)
{
    return off == CF_NO_PARAM ? (cf_view){NULL, 0} : cf_view_at(s->model->grads, off);
}

/* Every public entry that enqueues passes (train step, evaluation, logits,
 * translation, generation) brackets them with these: begin sets the
 * context's storage precision to the session's (saving the caller's in
 * *saved) and, for bf16/fp16, rounds the master weights again if any
 * writer (an optimizer step, write_tensor, a broadcast:
 * cf_model_params_written) changed them since the last pass, so that the
 * change is seen and an unchanged model costs nothing; end restores the
 * saved precision and passes `st` through. */
clformer_status cf_session_pass_begin(cf_session *s, clformer_precision *saved);
clformer_status cf_session_pass_end(cf_session *s, clformer_precision saved, clformer_status st);

/* Before a decoding step of a bf16/fp16 session on a context whose products
 * read 16-bit weights (cf_gemm_reads_half_weights): the rounded weights in
 * 16 bits, made once a pass, and registered on the context until the pass
 * ends (cf_ctx.half_weights), so that the step's products read half the
 * bytes. Nothing otherwise. */
clformer_status cf_session_decode_weights(cf_session *s);

#endif
