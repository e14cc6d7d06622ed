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
const char *clformer_status_name(clformer_status status);

/* The message of the last failure on the calling thread ("" if none). */
const char *clformer_last_error(void);

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
const char *clformer_device_type_name(clformer_device_type type);

/* Lists every device of every platform. Free the array with free(). */
clformer_status clformer_list_devices(clformer_device_info **devices, size_t *count);

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
clformer_status clformer_select_device(const clformer_device_info *devices, size_t count,
                                       const char *selector, size_t *index);

/* ------------------------------------------------------------------------- */
/* Context: one device, its queue, its compiled programs                     */
/* ------------------------------------------------------------------------- */

typedef struct clformer_context clformer_context;

/* Opens the device chosen by `selector` (NULL: the CLFORMER_DEVICE variable). */
clformer_status clformer_context_create(const char *selector, clformer_context **ctx);
void clformer_context_free(clformer_context *ctx);
const clformer_device_info *clformer_context_device(const clformer_context *ctx);

/* Kernel program cache counters, for tests and `clformer bench`. */
typedef struct {
    unsigned memory_hits; /* served from this context's in-memory table */
    unsigned disk_hits;   /* loaded from the on-disk binary cache */
    unsigned builds;      /* compiled from source */
    unsigned disk_rejects;/* cache files found corrupt or stale and rebuilt */
} clformer_program_stats;
clformer_program_stats clformer_context_program_stats(const clformer_context *ctx);


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
void clformer_config_default(clformer_config *config);

/* Checks every field; the message names the field, the value and the fix. */
clformer_status clformer_config_validate(const clformer_config *config);

/* The config as the JSON object stored in checkpoints (malloc'd string). */
char *clformer_config_to_json(const clformer_config *config);
/* Parses that JSON object; unknown keys and missing keys are errors. */
clformer_status clformer_config_from_json(const char *json, clformer_config *config);

/* Special token ids of every vocabulary. */
enum { CLFORMER_PAD = 0, CLFORMER_SOS = 1, CLFORMER_EOS = 2, CLFORMER_UNK = 3 };

/* ------------------------------------------------------------------------- */
/* Models: parameters, optimizer state and activations on one device         */
/* ------------------------------------------------------------------------- */

typedef struct clformer_model clformer_model;

/* A fresh model: MODEL.md's initialisation (Xavier-uniform matrices and
 * embeddings, zero biases, unit LayerNorm), deterministic from `seed`, which
 * also seeds dropout. Fails with a clear message when the config is invalid
 * or the parameters and optimizer state do not fit the device. */
clformer_status clformer_model_create(clformer_context *ctx, const clformer_config *config,
                                      uint64_t seed, clformer_model **model);
void clformer_model_free(clformer_model *model);

const clformer_config *clformer_model_config(const clformer_model *model);
size_t clformer_model_parameter_count(const clformer_model *model);

/* Vocabularies (tokens in id order, vocab-size entries each). A model made
 * from a config has none until they are set; checkpoints store them. */
clformer_status clformer_model_set_vocabs(clformer_model *model, const char *const *src_tokens,
                                          const char *const *tgt_tokens);
const char *const *clformer_model_src_vocab(const clformer_model *model);
const char *const *clformer_model_tgt_vocab(const clformer_model *model);

/* Device memory in bytes. */
typedef struct {
    size_t parameters;   /* weights */
    size_t gradients;
    size_t optimizer;    /* Adam m and v */
    size_t activations;  /* the arena for the largest batch so far */
    size_t decoding;     /* inference caches */
    size_t total;        /* everything clformer allocated on the device */
} clformer_memory;
clformer_memory clformer_model_memory(const clformer_model *model);

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
void clformer_optim_config_default(clformer_optim_config *config);
clformer_status clformer_model_set_optimizer(clformer_model *model,
                                             const clformer_optim_config *config);

typedef struct {
    double loss;       /* mean cross-entropy over counted target tokens, before the update */
    double grad_norm;  /* global gradient norm before clipping */
    size_t tokens;     /* counted (non-pad) target tokens */
    uint64_t step;     /* optimizer steps taken, this one included */
} clformer_step_stats;

/* One training step: forward, loss, backward, clipping and the optimizer
 * update at learning rate `lr`, all enqueued; reads back only the loss and
 * the gradient norm. */
clformer_status clformer_model_train_step(clformer_model *model, const clformer_batch *batch,
                                          float lr, clformer_step_stats *stats);

/* Loss without training (dropout off, and no label smoothing: the plain
 * cross-entropy, whose exp is the perplexity): sum of token losses and
 * their count. */
clformer_status clformer_model_eval_loss(clformer_model *model, const clformer_batch *batch,
                                         double *loss_sum, size_t *tokens);

/* Logits (batch x (tgt_len-1) x tgt_vocab floats) of a batch, dropout off. */
clformer_status clformer_model_logits(clformer_model *model, const clformer_batch *batch,
                                      float *logits);

/* Forward and backward without an update, for gradient checks: afterwards
 * clformer_model_read_tensor(..., gradient=true) gives this batch's
 * gradients of the mean loss (dropout as in training). */
clformer_status clformer_model_gradients(clformer_model *model, const clformer_batch *batch,
                                         double *loss);

/* Copies the named parameter (PyTorch name) or its gradient to host memory;
 * `count` must be the tensor's element count. */
clformer_status clformer_model_read_tensor(clformer_model *model, const char *name,
                                           bool gradient, float *out, size_t count);

/* Optimizer steps taken so far. */
uint64_t clformer_model_step(const clformer_model *model);

/* Changes the training-only settings of a loaded model: dropout and label
 * smoothing (the weights do not depend on them). */
clformer_status clformer_model_set_regularization(clformer_model *model, float dropout,
                                                  float label_smoothing);

/* The seed of dropout masks (a loaded plain model has seed 0 until set). */
void clformer_model_set_seed(clformer_model *model, uint64_t seed);

/* Learning rate at step (from 1): constant, or the paper's noam schedule
 * factor * d_model^-0.5 * min(step^-0.5, step * warmup^-1.5). */
typedef enum { CLFORMER_LR_CONSTANT = 0, CLFORMER_LR_NOAM = 1 } clformer_lr_schedule;
float clformer_learning_rate(clformer_lr_schedule schedule, float base, int d_model,
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
void clformer_decode_options_default(clformer_decode_options *options);

typedef struct {
    int32_t *tokens;        /* batch x max_len: row b holds lengths[b] ids, no <sos>/<eos> */
    size_t *lengths;
    size_t max_len;
    float *attention;       /* attention_rows x heads x src_len, when recorded */
    size_t attention_rows, heads, src_len;
} clformer_translation;
void clformer_translation_free(clformer_translation *translation);

/* Translates `batch` source sentences (batch x src_len ids, right-padded with
 * <pad>; each sentence <sos> ... <eos> as in training). */
clformer_status clformer_translate(clformer_model *model, const int32_t *src, size_t batch,
                                   size_t src_len, const clformer_decode_options *options,
                                   clformer_translation *out);

/* ------------------------------------------------------------------------- */
/* Checkpoints: one .safetensors file (MODEL.md)                             */
/* ------------------------------------------------------------------------- */

/* Saves the weights under PyTorch's state_dict names with the config and
 * vocabularies as metadata; with_training_state adds Adam's m and v
 * (optim.m.<name>, optim.v.<name>) and clformer.train_state (step, seed,
 * optimizer, and the trainer's JSON, see below). The write is atomic: a
 * temp file, fsync, rename, fsync of the directory. */
clformer_status clformer_model_save(clformer_model *model, const char *path,
                                    bool with_training_state);

/* Loads a checkpoint, validating everything (header, dtypes, shapes,
 * metadata, vocabularies) before allocating on the device. A training
 * checkpoint restores the optimizer state and step as well. */
clformer_status clformer_model_load(clformer_context *ctx, const char *path,
                                    clformer_model **model);

/* True when the loaded checkpoint held optimizer state. */
bool clformer_model_has_training_state(const clformer_model *model);

/* The trainer's own state (a JSON object: data position, schedule, ...),
 * stored in clformer.train_state; NULL when none. */
clformer_status clformer_model_set_trainer_state(clformer_model *model, const char *json);
const char *clformer_model_trainer_state(const clformer_model *model);

/* ------------------------------------------------------------------------- */
/* Text data: parallel sentences, vocabularies, corpora, batches, BLEU       */
/* ------------------------------------------------------------------------- */
/*
 * Sentences are UTF-8 with whitespace-separated tokens, split exactly as
 * Python's str.split() splits (so the tokens equal sacreBLEU's with
 * --tokenize none). The pipeline of `clformer train`:
 *
 *     clformer_parallel_text *text;   // validated sentence pairs
 *     clformer_parallel_text_load("train.en", "train.de", &text);
 *     clformer_vocab *sv, *tv;        // ids 0..3: <pad> <sos> <eos> <unk>
 *     clformer_vocab_build(text, CLFORMER_SIDE_SOURCE, 2, 0, &sv);
 *     clformer_vocab_build(text, CLFORMER_SIDE_TARGET, 2, 0, &tv);
 *     clformer_corpus *corpus;        // token ids; pairs over max_len skipped
 *     clformer_corpus_encode(text, sv, tv, 100, &corpus);
 *     clformer_batcher *b;            // shuffled, length-bucketed batches
 *     clformer_batcher_create(corpus, &batching, &b);
 *     clformer_batcher_next(b, &batch); clformer_model_train_step(model, &batch, lr, &stats);
 */

typedef struct clformer_parallel_text clformer_parallel_text;

/* Reads two line-aligned files (one sentence per line): strict UTF-8 (a
 * byte order mark is skipped), the same number of lines on both sides; a
 * pair with an empty side is skipped and counted. Errors name file:line. */
clformer_status clformer_parallel_text_load(const char *src_path, const char *tgt_path,
                                            clformer_parallel_text **text);
/* The same from n in-memory line pairs (copied); the names stand for file
 * names in messages. */
clformer_status clformer_parallel_text_from_lines(const char *const *src, const char *const *tgt,
                                                  size_t n, const char *src_name,
                                                  const char *tgt_name,
                                                  clformer_parallel_text **text);
void clformer_parallel_text_free(clformer_parallel_text *text);
/* Pairs kept, and pair i's sentences (valid while the text lives). */
size_t clformer_parallel_text_size(const clformer_parallel_text *text);
const char *clformer_parallel_text_source(const clformer_parallel_text *text, size_t i);
const char *clformer_parallel_text_target(const clformer_parallel_text *text, size_t i);

/* Whitespace tokens of a NUL-terminated UTF-8 sentence. */
size_t clformer_count_tokens(const char *sentence);

/* The artificial language pair of `clformer demo`, generated from `seed`
 * (no files): n_train training and n_test held-out pairs, no held-out
 * source among the training ones. */
#define CLFORMER_DEMO_TRAIN_PAIRS 12000
#define CLFORMER_DEMO_TEST_PAIRS 200
clformer_status clformer_demo_task(uint64_t seed, size_t n_train, size_t n_test,
                                   clformer_parallel_text **train, clformer_parallel_text **test);
/* The demo languages' rules, a few lines of text. */
const char *clformer_demo_task_description(void);

/* Vocabularies: ids 0..3 are CLFORMER_PAD/SOS/EOS/UNK ("<pad>" ...), then
 * tokens by falling frequency (ties bytewise). Immutable once made. */
typedef struct clformer_vocab clformer_vocab;
typedef enum { CLFORMER_SIDE_SOURCE = 0, CLFORMER_SIDE_TARGET = 1 } clformer_side;

/* From one side of a text: tokens seen at least min_freq (>= 1) times, at
 * most max_vocab ids with the specials (0: no cap). */
clformer_status clformer_vocab_build(const clformer_parallel_text *text, clformer_side side,
                                     int min_freq, int max_vocab, clformer_vocab **vocab);
/* From tokens in id order (specials first), e.g. clformer_model_src_vocab. */
clformer_status clformer_vocab_from_tokens(const char *const *tokens, size_t n,
                                           clformer_vocab **vocab);
/* A model's vocabulary for one side (the model must have vocabularies). */
clformer_status clformer_vocab_from_model(const clformer_model *model, clformer_side side,
                                          clformer_vocab **vocab);
void clformer_vocab_free(clformer_vocab *vocab);
int32_t clformer_vocab_size(const clformer_vocab *vocab);
/* The token of an id (NULL when out of range). */
const char *clformer_vocab_token(const clformer_vocab *vocab, int32_t id);
/* The id of a token, CLFORMER_UNK when absent. */
int32_t clformer_vocab_id(const clformer_vocab *vocab, const char *token);
/* Encodes a sentence (valid UTF-8): one id per token, in <sos> ... <eos>
 * when `specials`. Writes at most `cap` ids and returns the full count
 * (cap 0 sizes a buffer); *n_unk (may be NULL) counts <unk>s. */
size_t clformer_vocab_encode(const clformer_vocab *vocab, const char *sentence, bool specials,
                             int32_t *ids, size_t cap, size_t *n_unk);
/* Ids to a sentence (malloc'd): tokens joined by spaces, <pad>/<sos>
 * dropped, stopping at the first <eos>. */
clformer_status clformer_vocab_decode(const clformer_vocab *vocab, const int32_t *ids, size_t n,
                                      char **sentence);

/* A text encoded with two vocabularies: every sequence <sos> ... <eos>;
 * pairs with a side longer than max_len tokens (0: no limit) are skipped
 * and counted. The text may be freed afterwards. */
typedef struct clformer_corpus clformer_corpus;
clformer_status clformer_corpus_encode(const clformer_parallel_text *text,
                                       const clformer_vocab *src_vocab,
                                       const clformer_vocab *tgt_vocab, int max_len,
                                       clformer_corpus **corpus);
void clformer_corpus_free(clformer_corpus *corpus);
size_t clformer_corpus_size(const clformer_corpus *corpus);
/* One line: "29000 pairs, 12 skipped (longer than max_len 100)". */
void clformer_corpus_summary(const clformer_corpus *corpus, char *buf, size_t size);

/* Mean plain cross-entropy (dropout off, no label smoothing) of a model over
 * every pair of a corpus, in file order, batched by about batch_tokens
 * padded tokens; *tokens receives the target tokens counted. */
clformer_status clformer_corpus_loss(clformer_model *model, const clformer_corpus *corpus,
                                     size_t batch_tokens, double *loss, size_t *tokens);

/* Training batches. Exactly one of batch_size (pairs per batch; batches may
 * straddle epochs) and batch_tokens (pairs while batch x max(src, tgt
 * length) fits; never straddles epochs). With shuffle, every epoch's order
 * is a pure function of (seed, epoch), and with batch_tokens the pairs are
 * sorted by length in windows of bucket_window pairs (0: 16384; 1: none)
 * before the batches are shuffled. */
typedef struct {
    int batch_size;
    int batch_tokens;
    bool shuffle;
    uint64_t seed;
    int bucket_window;
} clformer_batcher_options;

typedef struct clformer_batcher clformer_batcher;
/* The corpus must outlive the batcher. */
clformer_status clformer_batcher_create(const clformer_corpus *corpus,
                                        const clformer_batcher_options *options,
                                        clformer_batcher **batcher);
void clformer_batcher_free(clformer_batcher *batcher);
/* The next batch; its arrays belong to the batcher and stay valid until the
 * next call. */
clformer_status clformer_batcher_next(clformer_batcher *batcher, clformer_batch *batch);
/* Epochs completed (the epoch of the next batch, from 0). */
uint64_t clformer_batcher_epoch(const clformer_batcher *batcher);
/* Position in the epoch: the next pair (batch_size) or batch (batch_tokens). */
size_t clformer_batcher_index(const clformer_batcher *batcher);
/* Batches of the current epoch (with batch_size: ceil(pairs / size)). */
size_t clformer_batcher_batches_per_epoch(const clformer_batcher *batcher);
/* The position with the options and a hash of the corpus, as JSON
 * (malloc'd); restoring it into a batcher over the same corpus with the same
 * options continues with exactly the batches that would have come next (a
 * difference is an error naming the option). */
clformer_status clformer_batcher_save_position(const clformer_batcher *batcher, char **json);
clformer_status clformer_batcher_restore_position(clformer_batcher *batcher, const char *json);

/* Corpus BLEU as sacreBLEU 2.x computes it with --tokenize none (4-grams,
 * 'exp' smoothing, one reference per sentence). */
typedef struct {
    double score;          /* 0..100 */
    double precisions[4];  /* percent, 1- to 4-grams */
    double bp;             /* brevity penalty */
    uint64_t hyp_len, ref_len;
} clformer_bleu;
clformer_status clformer_bleu_corpus(const char *const *hyps, const char *const *refs, size_t n,
                                     clformer_bleu *bleu);
/* sacreBLEU's line: "BLEU = 35.12 67.1/41.0/27.3/18.7 (BP = 1.000 ratio = ...)". */
void clformer_bleu_format(const clformer_bleu *bleu, char *buf, size_t size);

/* Translates n sentences into outputs[i] (malloc'd; free each): sorted by
 * length and decoded batch_size at a time; a sentence without a token gives
 * "" without decoding; a source longer than the model's max_len is cut to
 * fit (counted in *truncated, may be NULL). `progress` (may be NULL) is
 * called after each batch with the sentences decoded so far and their total. */
typedef void (*clformer_translate_progress)(void *user, size_t done, size_t total);
clformer_status clformer_translate_sentences(clformer_model *model, const char *const *sentences,
                                             size_t n, const clformer_decode_options *options,
                                             size_t batch_size, char **outputs, size_t *truncated,
                                             clformer_translate_progress progress, void *user);
/* One sentence's source ids as the model reads them (<sos> ... <eos>, cut to
 * max_len); *ids is malloc'd. */
clformer_status clformer_encode_source(const clformer_model *model, const char *sentence,
                                       int32_t **ids, size_t *len);

/* ------------------------------------------------------------------------- */
/* Training: what `clformer train` runs                                       */
/* ------------------------------------------------------------------------- */

/* What the progress callback receives after every step and every validation. */
typedef enum { CLFORMER_TRAIN_STEP = 0, CLFORMER_TRAIN_VALIDATION = 1 } clformer_train_event;

typedef struct {
    clformer_train_event event;
    uint64_t step;         /* optimizer steps taken, this one included (from 1) */
    uint64_t epoch;        /* epoch of this step, from 1 */
    double loss;           /* the step's mean training loss */
    size_t tokens;         /* target tokens of the step */
    float lr;
    double grad_norm;      /* before clipping */
    double tokens_per_s;   /* over about the last 20 steps */
    double elapsed_s;      /* since clformer_trainer_run began */
    double steps_left;     /* estimate (exact with a step limit) */
    bool last;             /* the run's last step */
    /* CLFORMER_TRAIN_VALIDATION only */
    double val_loss;       /* plain cross-entropy over the validation pairs */
    double val_ppl;        /* exp(val_loss) */
    double val_bleu;       /* greedy BLEU of the first bleu_sentences (NAN: none) */
    size_t val_tokens, val_bleu_sentences;
    double val_seconds;
} clformer_train_progress;

/* Return false to stop the run as clformer_trainer_request_stop does. */
typedef bool (*clformer_train_callback)(const clformer_train_progress *progress, void *user);

typedef struct {
    /* data: in-memory texts (used when set) or files; the texts must outlive the trainer */
    const clformer_parallel_text *train_text, *val_text;
    const char *src_path, *tgt_path, *val_src_path, *val_tgt_path;
    int min_freq, max_vocab;           /* vocabularies of a fresh model (1, 0) */
    clformer_batcher_options batching; /* (4096 tokens, shuffled, seed 1) */
    /* the model: fresh from `config` (vocabulary sizes from the data), or
     * the weights of init_path, or exactly where resume_path stopped */
    clformer_config config;
    const char *init_path, *resume_path;
    bool override_dropout, override_label_smoothing; /* with init_path: use config's */
    uint64_t seed;                     /* initialisation and dropout (1) */
    /* optimisation (from the checkpoint when resuming) */
    clformer_optim_config optim;
    float lr;                          /* or the noam factor (5e-4) */
    clformer_lr_schedule schedule;
    uint64_t warmup;                   /* noam warm-up steps (4000) */
    uint64_t steps;                    /* stop when the model has taken `steps` steps, */
    uint64_t epochs;                   /* or after `epochs` epochs: exactly one is set */
    /* validation: loss and perplexity over val_text, BLEU over its first
     * bleu_sentences sentences (greedy), every eval_every steps (0: only at
     * the end) and at the end */
    uint64_t eval_every;
    size_t bleu_sentences;             /* (200) */
    /* output */
    const char *save_path;             /* training checkpoint at the end */
    uint64_t save_every;               /* and every N steps (0: never) */
    const char *stop_save_path;        /* saved on a stop request (NULL: save_path) */
    const char *log_path;              /* JSON lines: one object per step and validation */
    clformer_train_callback callback;
    void *user;
} clformer_train_options;

/* The defaults noted above; config is clformer_config_default's. */
void clformer_train_options_default(clformer_train_options *options);

typedef struct {
    uint64_t steps;        /* optimizer steps of the model at the end */
    double loss;           /* last training loss */
    double val_loss;       /* last validation loss (NAN when none) */
    double val_bleu;       /* last validation BLEU (NAN when none) */
    double seconds;        /* wall time of clformer_trainer_run */
    double tokens_per_s;   /* target tokens per second over the run */
    bool stopped;          /* stopped on request (after saving) */
    const char *saved_to;  /* the checkpoint written last (NULL: none) */
} clformer_train_result;

typedef struct clformer_trainer clformer_trainer;

/* Prepares a run: reads and encodes the data, makes, loads or resumes the
 * model, and positions the batcher. Errors name the option or file. */
clformer_status clformer_trainer_create(clformer_context *ctx,
                                        const clformer_train_options *options,
                                        clformer_trainer **trainer);
void clformer_trainer_free(clformer_trainer *trainer);

/* Trains until the step or epoch limit, validating and saving as asked, then
 * validates and saves once more. After a stop request (from any thread or a
 * signal handler, or the callback's false) it saves at the end of the current
 * step and returns CLFORMER_ERR_INTERRUPTED. */
clformer_status clformer_trainer_run(clformer_trainer *trainer, clformer_train_result *result);
void clformer_trainer_request_stop(clformer_trainer *trainer);

/* The model being trained (owned by the trainer). */
clformer_model *clformer_trainer_model(clformer_trainer *trainer);
/* Hands the model to the caller, who frees it; the trainer is then spent. */
clformer_model *clformer_trainer_release_model(clformer_trainer *trainer);
/* The encoded training and validation data (validation: NULL when none). */
const clformer_corpus *clformer_trainer_corpus(const clformer_trainer *trainer, bool validation);
/* The batcher that feeds the steps (its position is saved with the model). */
clformer_batcher *clformer_trainer_batcher(clformer_trainer *trainer);
/* True when the model was resumed from resume_path. */
bool clformer_trainer_resumed(const clformer_trainer *trainer);

#ifdef __cplusplus
}
#endif
#endif /* CLFORMER_H */
