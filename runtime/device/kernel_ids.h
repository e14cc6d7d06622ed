/*
 * The kernels the ops launch, by id: each op looks its kernel up in the
 * context's table (one array read) instead of by name on every launch
 * (option string, program and kernel name comparisons). A table slot is
 * filled by cf_kernel on first use and cleared with the programs.
 */
#ifndef CF_KERNEL_IDS_H
#define CF_KERNEL_IDS_H

/* X(id, program, kernel): cl/<program>.cl's __kernel <kernel>. */
#define CF_KERNEL_LIST(X)                                                                      \
    X(BIAS_ACT_BACKWARD, "activation", "bias_act_backward")                                    \
    X(BIAS_ACT_FORWARD, "activation", "bias_act_forward")                                      \
    X(BIAS_ADD, "activation", "bias_add")                                                      \
    X(ADAM_UPDATE, "adam", "adam_update")                                                      \
    X(CLIP_SCALE, "adam", "clip_scale")                                                        \
    X(SPLIT_HEADS, "attention", "split_heads")                                                 \
    X(MERGE_HEADS, "attention", "merge_heads")                                                 \
    X(ATTENTION_SOFTMAX, "attention", "attention_softmax")                                     \
    X(ATTENTION_SOFTMAX_BACKWARD, "attention", "attention_softmax_backward")                   \
    X(BEAM_CANDIDATES, "beam", "beam_candidates")                                              \
    X(BEAM_GATHER_CACHE, "beam", "beam_gather_cache")                                          \
    X(BEAM_SELECT, "beam", "beam_select")                                                      \
    X(BEAM_TOKENS, "beam", "beam_tokens")                                                      \
    X(KV_CACHE_WRITE, "decode", "kv_cache_write")                                              \
    X(SET_COLUMN, "decode", "set_column")                                                      \
    X(DROPOUT_BACKWARD, "dropout", "dropout_backward")                                         \
    X(FLASH_ATTENTION_FORWARD, "flash_attention", "flash_attention_forward")                   \
    X(FLASH_ATTENTION_BACKWARD_DQ, "flash_attention", "flash_attention_backward_dq")           \
    X(FLASH_ATTENTION_BACKWARD_DKV, "flash_attention", "flash_attention_backward_dkv")         \
    X(FLASH_ATTENTION_FORWARD_SIMPLE, "flash_attention",                                       \
      "flash_attention_forward_simple")                                                        \
    X(FLASH_ATTENTION_BACKWARD_DQ_SIMPLE, "flash_attention",                                   \
      "flash_attention_backward_dq_simple")                                                    \
    X(FLASH_ATTENTION_BACKWARD_DKV_SIMPLE, "flash_attention",                                  \
      "flash_attention_backward_dkv_simple")                                                   \
    X(RESIDUAL_DROPOUT_FORWARD, "dropout", "residual_dropout_forward")                         \
    X(EMBEDDING_BACKWARD_POS, "embedding", "embedding_backward_pos")                           \
    X(EMBEDDING_BACKWARD_TABLE, "embedding", "embedding_backward_table")                       \
    X(EMBEDDING_FORWARD_LEARNED, "embedding", "embedding_forward_learned")                     \
    X(EMBEDDING_FORWARD_SINUSOIDAL, "embedding", "embedding_forward_sinusoidal")               \
    X(LAYERNORM_BACKWARD_INPUT, "layernorm", "layernorm_backward_input")                       \
    X(LAYERNORM_BACKWARD_PARAMS, "layernorm", "layernorm_backward_params")                     \
    X(LAYERNORM_BACKWARD_PARAMS_FINAL, "layernorm", "layernorm_backward_params_final")         \
    X(LAYERNORM_FORWARD, "layernorm", "layernorm_forward")                                     \
    X(ARGMAX_ROWS, "loss", "argmax_rows")                                                      \
    X(CROSS_ENTROPY, "loss", "cross_entropy")                                                  \
    X(LOG_SOFTMAX_ROWS, "loss", "log_softmax_rows")                                            \
    X(COLSUM_FINAL, "reduce", "colsum_final")                                                  \
    X(COLSUM_PARTIAL, "reduce", "colsum_partial")                                              \
    X(REDUCE_FINAL, "reduce", "reduce_final")                                                  \
    X(REDUCE_PARTIAL, "reduce", "reduce_partial")                                              \
    X(COPY_U32, "tensor", "copy_u32")                                                          \
    X(FILL_U32, "tensor", "fill_u32")

typedef enum {
#define CF_KERNEL_ENUM(id, program, kernel) CF_K_##id,
    CF_KERNEL_LIST(CF_KERNEL_ENUM)
#undef CF_KERNEL_ENUM
    CF_K_COUNT
} cf_kernel_id;

#endif
