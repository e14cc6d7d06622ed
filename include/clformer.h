/*
 * clformer: train and run the encoder-decoder Transformer on any OpenCL device.
 *
 * The public C API. Every object is an opaque handle with a create/free pair;
 * every function that can fail returns a clformer_status, and
 * clformer_last_error() gives the message of the last failure on this thread
 * (it names the problem and, where there is one, the fix).
 */
#ifndef CLFORMER_H
#define CLFORMER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define CLFORMER_VERSION "0.1.0"

/* Marks the public functions: the library is built with -fvisibility=hidden,
 * so these are the only symbols libclformer.so exports. */
#ifndef CLFORMER_API
#if defined(__GNUC__) && __GNUC__ >= 4
#define CLFORMER_API __attribute__((visibility("default")))
#else
#define CLFORMER_API
#endif
#endif

typedef enum {
    CLFORMER_OK = 0,
    CLFORMER_ERR_INVALID_ARGUMENT, /* bad user input: a config, a token id, a flag */
    CLFORMER_ERR_NO_DEVICE,        /* no OpenCL device, or a selector that matches none */
    CLFORMER_ERR_OPENCL,           /* an OpenCL call failed */
    CLFORMER_ERR_CLBLAST,          /* a CLBlast call failed */
    CLFORMER_ERR_BUILD,            /* a kernel did not compile (the message holds the log) */
    CLFORMER_ERR_OUT_OF_MEMORY,    /* device or host memory exhausted */
    CLFORMER_ERR_IO,               /* a file is missing, unreadable or unwritable */
    CLFORMER_ERR_FORMAT,           /* a file is malformed: checkpoint, corpus, cache */
    CLFORMER_ERR_INTERRUPTED       /* stopped on request (e.g. Ctrl-C) */
} clformer_status;

/* A short constant name for a status, e.g. "CLFORMER_ERR_IO". */
CLFORMER_API const char *clformer_status_name(clformer_status status);

/* The message of the last failure on the calling thread ("" if none). */
CLFORMER_API const char *clformer_last_error(void);

/* ------------------------------------------------------------------------- */
/* Devices                                                                    */
/* ------------------------------------------------------------------------- */

typedef enum {
    CLFORMER_DEVICE_CPU = 1,
    CLFORMER_DEVICE_GPU = 2,
    CLFORMER_DEVICE_ACCELERATOR = 4,
    CLFORMER_DEVICE_OTHER = 8
} clformer_device_type;

/* Everything clformer knows about one OpenCL device. Plain data, so that the
 * selection rule can be tested over a made-up list. */
typedef struct {
    int platform_index;
    int device_index;
    char selector[32]; /* "P:D", the index pair that names this device */
    char platform[128];
    char platform_version[128];
    char platform_vendor[128];
    char vendor[128];
    char name[256];
    char driver_version[128];
    char device_version[128]; /* "OpenCL 3.0 ..." */
    char c_version[128];      /* "OpenCL C 1.2 ..." */
    clformer_device_type type;
    uint32_t compute_units;
    uint32_t clock_mhz;
    uint64_t global_mem_bytes;
    uint64_t local_mem_bytes;
    uint64_t max_alloc_bytes;
    size_t max_work_group_size;
    bool fp16;
    bool fp64;
    bool unified_memory; /* host-unified memory: an integrated GPU or a CPU */
    bool simulator;      /* e.g. Oclgrind: chosen only when named */
} clformer_device_info;

/* "gpu", "cpu", "accelerator" or "other": the words CLFORMER_DEVICE accepts. */
CLFORMER_API const char *clformer_device_type_name(clformer_device_type type);

/* Lists every device of every platform. Free the array with free(). */
CLFORMER_API clformer_status clformer_list_devices(clformer_device_info **devices, size_t *count);

/*
 * Chooses a device by the CLFORMER_DEVICE grammar (pure function, no OpenCL):
 *   NULL or ""           the best GPU (discrete first, then compute units x
 *                        clock), else an accelerator, else a CPU; a simulator
 *                        only when it is the only device
 *   "P:D"                platform and device indices
 *   "gpu" "cpu" "accelerator"   the best device of that type
 *   "text" or "a:b"      case-insensitive substrings: "text" of the platform,
 *                        vendors or device name; "a" of the platform or vendors
 *                        and "b" of the device name or type ("intel:gpu",
 *                        "pocl:pthread", "oclgrind")
 * A selector that matches nothing is CLFORMER_ERR_NO_DEVICE with a message
 * that names it and lists the devices that exist.
 */
CLFORMER_API clformer_status clformer_select_device(const clformer_device_info *devices,
                                                    size_t count, const char *selector,
                                                    size_t *index);

/* ------------------------------------------------------------------------- */
/* Context: one device, its queue, its compiled programs                     */
/* ------------------------------------------------------------------------- */

typedef struct clformer_context clformer_context;

/* Opens the device chosen by `selector` (NULL: the CLFORMER_DEVICE variable). */
CLFORMER_API clformer_status clformer_context_create(const char *selector, clformer_context **ctx);
CLFORMER_API void clformer_context_free(clformer_context *ctx);
CLFORMER_API const clformer_device_info *clformer_context_device(const clformer_context *ctx);

/* Kernel program cache counters, for tests and `clformer bench`. */
typedef struct {
    unsigned memory_hits; /* served from this context's in-memory table */
    unsigned disk_hits;   /* loaded from the on-disk binary cache */
    unsigned builds;      /* compiled from source */
    unsigned disk_rejects;/* cache files found corrupt or stale and rebuilt */
} clformer_program_stats;
CLFORMER_API clformer_program_stats clformer_context_program_stats(const clformer_context *ctx);


/* ------------------------------------------------------------------------- */
/* Model configuration (../shared/docs/MODEL.md)                              */
/* ------------------------------------------------------------------------- */

typedef enum { CLFORMER_ACT_RELU = 0, CLFORMER_ACT_GELU = 1 } clformer_activation;
typedef enum { CLFORMER_POS_SINUSOIDAL = 0, CLFORMER_POS_LEARNED = 1 } clformer_positional;

typedef struct {
    int d_model;         /* width of every token vector (512) */
    int n_heads;         /* attention heads, d_model % n_heads == 0 (8) */
    int d_ff;            /* feed-forward hidden width (2048) */
    int n_enc_layers;    /* (6) */
    int n_dec_layers;    /* (6) */
    int src_vocab;       /* sizes including the 4 special tokens */
    int tgt_vocab;
    int max_len;         /* longest sequence, specials included (256) */
    bool norm_first;     /* pre-norm (true) or the paper's post-norm */
    clformer_activation activation;
    clformer_positional positional;
    float dropout;       /* (0.1) */
    float ln_eps;        /* (1e-5) */
    float label_smoothing; /* (0.0) */
    bool share_tgt_embed;  /* generator weight tied to the target embedding */
} clformer_config;

/* MODEL.md's defaults; vocabulary sizes are left 0 (they come from data). */
CLFORMER_API void clformer_config_default(clformer_config *config);

/* Checks every field; the message names the field, the value and the fix. */
CLFORMER_API clformer_status clformer_config_validate(const clformer_config *config);

/* The config as the JSON object stored in checkpoints (malloc'd string). */
CLFORMER_API char *clformer_config_to_json(const clformer_config *config);
/* Parses that JSON object; unknown keys and missing keys are errors. */
CLFORMER_API clformer_status clformer_config_from_json(const char *json, clformer_config *config);

/* Special token ids of every vocabulary. */
enum { CLFORMER_PAD = 0, CLFORMER_SOS = 1, CLFORMER_EOS = 2, CLFORMER_UNK = 3 };

/* ------------------------------------------------------------------------- */
/* Models: parameters, gradients and optimizer state on one device          */
/* ------------------------------------------------------------------------- */

typedef struct clformer_model clformer_model;

/* A fresh model: MODEL.md's initialisation (Xavier-uniform matrices and
 * embeddings, zero biases, unit LayerNorm), deterministic from `seed`, which
 * also seeds dropout. Fails with a clear message when the config is invalid
 * or the parameters and optimizer state do not fit the device. */
CLFORMER_API clformer_status clformer_model_create(clformer_context *ctx,
                                                   const clformer_config *config, uint64_t seed,
                                                   clformer_model **model);
CLFORMER_API void clformer_model_free(clformer_model *model);

CLFORMER_API const clformer_config *clformer_model_config(const clformer_model *model);
CLFORMER_API size_t clformer_model_parameter_count(const clformer_model *model);

/* Vocabularies (tokens in id order, vocab-size entries each). A model made
 * from a config has none until they are set; checkpoints store them. */
CLFORMER_API clformer_status clformer_model_set_vocabs(clformer_model *model,
                                                       const char *const *src_tokens,
                                                       const char *const *tgt_tokens);
CLFORMER_API const char *const *clformer_model_src_vocab(const clformer_model *model);
CLFORMER_API const char *const *clformer_model_tgt_vocab(const clformer_model *model);

/* Device memory in bytes, of a model (weights, gradients, optimizer state)
 * or of a session (activations, decoding caches); the other's fields are 0. */
typedef struct {
    size_t parameters;   /* weights */
    size_t gradients;
    size_t optimizer;    /* Adam m and v */
    size_t activations;  /* the arena for the largest batch so far */
    size_t decoding;     /* decoding caches */
    size_t total;        /* model: everything clformer allocated on the context's device
                            (every model and session); session: the session's bytes */
} clformer_memory;
/* The model's memory (and, while the clformer_model_* batch calls exist,
 * the activations and caches of the session they use). */
CLFORMER_API clformer_memory clformer_model_memory(const clformer_model *model);

/* A batch of sentence pairs as token ids, right-padded with CLFORMER_PAD:
 * src is batch x src_len, tgt is batch x tgt_len (each target starts with
 * <sos> and ends with <eos>; the decoder reads tgt[:, :-1] and predicts
 * tgt[:, 1:]). Ids are validated before anything runs on the device. */
typedef struct {
    size_t batch, src_len, tgt_len;
    const int32_t *src;
    const int32_t *tgt;
} clformer_batch;

typedef enum { CLFORMER_ADAM = 0, CLFORMER_ADAMW = 1 } clformer_optimizer;

typedef struct {
    clformer_optimizer optimizer; /* Adam (L2 decay) or AdamW (decoupled) */
    float beta1, beta2, eps;      /* (0.9, 0.98, 1e-9): the paper's */
    float weight_decay;           /* rank-2 tensors only (0) */
    float clip;                   /* global gradient-norm clip, 0 = off (1.0) */
} clformer_optim_config;
CLFORMER_API void clformer_optim_config_default(clformer_optim_config *config);
CLFORMER_API clformer_status clformer_model_set_optimizer(clformer_model *model,
                                                          const clformer_optim_config *config);

typedef struct {
    double loss;       /* mean cross-entropy over counted target tokens, before the update */
    double grad_norm;  /* global gradient norm before clipping */
    size_t tokens;     /* counted (non-pad) target tokens */
    uint64_t step;     /* optimizer steps taken, this one included */
} clformer_step_stats;

/* The batch calls below run on a session the model makes on first use;
 * clformer_session_* (further down) are the same on a session of the
 * caller's. */

/* One training step: forward, loss, backward, clipping and the optimizer
 * update at learning rate `lr`, all enqueued; reads back only the loss and
 * the gradient norm. */
CLFORMER_API clformer_status clformer_model_train_step(clformer_model *model,
                                                       const clformer_batch *batch, float lr,
                                                       clformer_step_stats *stats);

/* Loss without training (dropout off, and no label smoothing: the plain
 * cross-entropy, whose exp is the perplexity): sum of token losses and
 * their count. */
CLFORMER_API clformer_status clformer_model_eval_loss(clformer_model *model,
                                                      const clformer_batch *batch, double *loss_sum,
                                                      size_t *tokens);

/* Logits (batch x (tgt_len-1) x tgt_vocab floats) of a batch, dropout off. */
CLFORMER_API clformer_status clformer_model_logits(clformer_model *model,
                                                   const clformer_batch *batch, float *logits);

/* Forward and backward without an update, for gradient checks: afterwards
 * clformer_model_read_tensor(..., gradient=true) gives this batch's
 * gradients of the mean loss (dropout as in training). */
CLFORMER_API clformer_status clformer_model_gradients(clformer_model *model,
                                                      const clformer_batch *batch, double *loss);

/* Copies the named parameter (PyTorch name) or its gradient to host memory;
 * `count` must be the tensor's element count. */
CLFORMER_API clformer_status clformer_model_read_tensor(clformer_model *model, const char *name,
                                                        bool gradient, float *out, size_t count);

/* Optimizer steps taken so far. */
CLFORMER_API uint64_t clformer_model_step(const clformer_model *model);

/* Changes the training-only settings of a loaded model: dropout and label
 * smoothing (the weights do not depend on them). */
CLFORMER_API clformer_status clformer_model_set_regularization(clformer_model *model, float dropout,
                                                               float label_smoothing);

/* The seed of dropout masks (a loaded plain model has seed 0 until set). */
CLFORMER_API void clformer_model_set_seed(clformer_model *model, uint64_t seed);

/* Learning rate at step (from 1): constant, or the paper's noam schedule
 * factor * d_model^-0.5 * min(step^-0.5, step * warmup^-1.5). */
typedef enum { CLFORMER_LR_CONSTANT = 0, CLFORMER_LR_NOAM = 1 } clformer_lr_schedule;
CLFORMER_API float clformer_learning_rate(clformer_lr_schedule schedule, float base, int d_model,
                                          uint64_t step, uint64_t warmup);

/* ------------------------------------------------------------------------- */
/* Translation (greedy or beam search, with key/value caches)                */
/* ------------------------------------------------------------------------- */

typedef struct {
    int beam;              /* 1: greedy decoding */
    int max_len;           /* most output tokens (with <eos>); 0: the model's max_len - 1 */
    float length_penalty;  /* beam: hypotheses ranked by logprob / length^penalty (1.0) */
    bool record_attention; /* greedy: keep the last decoder layer's cross-attention of sentence 0 */
} clformer_decode_options;
CLFORMER_API void clformer_decode_options_default(clformer_decode_options *options);

typedef struct {
    int32_t *tokens;        /* batch x max_len: row b holds lengths[b] ids, no <sos>/<eos> */
    size_t *lengths;
    size_t max_len;
    float *attention;       /* attention_rows x heads x src_len, when recorded */
    size_t attention_rows, heads, src_len;
} clformer_translation;
CLFORMER_API void clformer_translation_free(clformer_translation *translation);

/* Translates `batch` source sentences (batch x src_len ids, right-padded with
 * <pad>; each sentence <sos> ... <eos> as in training). */
CLFORMER_API clformer_status clformer_translate(clformer_model *model, const int32_t *src,
                                                size_t batch, size_t src_len,
                                                const clformer_decode_options *options,
                                                clformer_translation *out);

/* ------------------------------------------------------------------------- */
/* Sessions: the activations and decoding caches of one user of a model      */
/* ------------------------------------------------------------------------- */

/* A model holds weights, gradients and optimizer state; a session holds
 * what running it needs: the activations of its batches and the caches of
 * its translations, grown to the largest batch it has run. Several sessions
 * can share one model (two translators, or a trainer and a validator),
 * used in turn from one thread. Free every session before its model. */
typedef struct clformer_session clformer_session;
CLFORMER_API clformer_status clformer_session_create(clformer_model *model,
                                                     clformer_session **session);
CLFORMER_API void clformer_session_free(clformer_session *session);
CLFORMER_API clformer_model *clformer_session_model(const clformer_session *session);

/* The session's device memory: activations, decoding and their total. */
CLFORMER_API clformer_memory clformer_session_memory(const clformer_session *session);

/* The batch calls of the model section, on this session: a training step
 * (it updates the model), the evaluation loss, the logits, the gradients
 * (into the model's gradients) and translation. */
CLFORMER_API clformer_status clformer_session_train_step(clformer_session *session,
                                                         const clformer_batch *batch, float lr,
                                                         clformer_step_stats *stats);
CLFORMER_API clformer_status clformer_session_eval_loss(clformer_session *session,
                                                        const clformer_batch *batch,
                                                        double *loss_sum, size_t *tokens);
CLFORMER_API clformer_status clformer_session_logits(clformer_session *session,
                                                     const clformer_batch *batch, float *logits);
CLFORMER_API clformer_status clformer_session_gradients(clformer_session *session,
                                                        const clformer_batch *batch, double *loss);
CLFORMER_API clformer_status clformer_session_translate(clformer_session *session,
                                                        const int32_t *src, size_t batch,
                                                        size_t src_len,
                                                        const clformer_decode_options *options,
                                                        clformer_translation *out);

/* ------------------------------------------------------------------------- */
/* Checkpoints: one .safetensors file (MODEL.md)                             */
/* ------------------------------------------------------------------------- */

/* Saves the weights under PyTorch's state_dict names with the config and
 * vocabularies as metadata; with_training_state adds Adam's m and v
 * (optim.m.<name>, optim.v.<name>) and clformer.train_state (step, seed,
 * optimizer, and the trainer's JSON, see below). The write is atomic: a
 * temp file, fsync, rename, fsync of the directory. */
CLFORMER_API clformer_status clformer_model_save(clformer_model *model, const char *path,
                                                 bool with_training_state);

/* Loads a checkpoint, validating everything (header, dtypes, shapes,
 * metadata, vocabularies) before allocating on the device. A training
 * checkpoint restores the optimizer state and step as well. */
CLFORMER_API clformer_status clformer_model_load(clformer_context *ctx, const char *path,
                                                 clformer_model **model);

/* True when the loaded checkpoint held optimizer state. */
CLFORMER_API bool clformer_model_has_training_state(const clformer_model *model);

/* The trainer's own state (a JSON object: data position, schedule, ...),
 * stored in clformer.train_state; NULL when none. */
CLFORMER_API clformer_status clformer_model_set_trainer_state(clformer_model *model,
                                                              const char *json);
CLFORMER_API const char *clformer_model_trainer_state(const clformer_model *model);

#ifdef __cplusplus
}
#endif
#endif /* CLFORMER_H */
