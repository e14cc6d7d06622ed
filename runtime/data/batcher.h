/*
 * Batches of sentence pairs for training, as host arrays ready for upload.
 *
 * Two ways to size a batch:
 *   batch_size B     (--batch-size)  B consecutive pairs of the epoch's
 *                    order per batch; the epoch's last batch holds the rest
 *                    (fewer than B when B does not divide the corpus), so
 *                    --epochs counts passes over the data exactly.
 *   batch_tokens N   (--batch-tokens) as many pairs as fit B * max(S, T+1) <= N
 *                    (padded tokens of the larger side; fairseq's --max-tokens).
 *                    With shuffling, each epoch's order is cut into windows of
 *                    bucket_window pairs, each window is sorted by length and
 *                    cut into batches, and the batches of the epoch are then
 *                    shuffled: similar lengths within a batch, little padding,
 *                    random order of batches. A batch never straddles epochs.
 * Epoch order: file order without shuffling; with shuffling, a permutation
 * that is a pure function of (seed, epoch) through splitmix64 (splitmix.h), so
 * the same seed gives the same batches on every machine.
 *
 * The position (epoch, index within the epoch) is all the state there is; it
 * round-trips through a small JSON object (cf_batcher_state_to_json) that also
 * records the options and a hash of the corpus, so a resumed run produces
 * exactly the batches the interrupted run would have, or refuses to resume
 * with a message naming what differs.
 *
 *     cf_batcher_config cfg = {.batch_tokens = 4096, .shuffle = true, .seed = 1};
 *     cf_batcher *b;
 *     CF_TRY(cf_batcher_create(train, &cfg, &b));
 *     cf_batch batch = {0};                  // arrays are reused between calls
 *     for (step...) {
 *         CF_TRY(cf_batcher_next(b, &batch));
 *         upload(batch.src, batch.B * batch.S); upload(batch.tgt, batch.B * (batch.T + 1));
 *         loss_denominator = batch.n_labels;
 *     }
 *     cf_batch_free(&batch);
 *     cf_batcher_free(b);
 *
 * One pass over a validation set in file order: a batcher with batch_tokens
 * and shuffle off, called cf_batcher_batches_per_epoch() times (its epoch
 * ends exactly there); or cf_batch_fill() with any list of pairs.
 */
#ifndef CF_BATCHER_H
#define CF_BATCHER_H

#include "clformer.h"
#include "corpus.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Pairs sorted together in token mode when bucket_window is 0. */
#define CF_BUCKET_WINDOW_DEFAULT 16384

typedef struct {
    int batch_size;    /* pairs per batch; 0 when batch_tokens is used */
    int batch_tokens;  /* budget for B * max(S, T+1); 0 when batch_size is used */
    bool shuffle;      /* false: file order, no bucketing */
    uint64_t seed;     /* shuffle seed */
    int bucket_window; /* token mode with shuffle: pairs per length-sorted window
                          (0: CF_BUCKET_WINDOW_DEFAULT; 1: no bucketing) */
} cf_batcher_config;

/*
 * One batch. `src` is (B, S) and `tgt` is (B, T+1), row-major int32,
 * right-padded with <pad> (0); every row is <sos> ... <eos>. The decoder reads
 * tgt[:, :-1] (B, T) and is trained on labels tgt[:, 1:] (B, T).
 * Zero-initialise it; the arrays grow as needed and are reused by later
 * calls; release them with cf_batch_free.
 */
typedef struct {
    int B;                 /* pairs */
    int S;                 /* source width: the longest source row */
    int T;                 /* decoder length: the longest target row minus 1 */
    int32_t *src;          /* (B, S) */
    int32_t *tgt;          /* (B, T+1) */
    int32_t *src_len;      /* [B] real tokens of each source row (specials included) */
    int32_t *tgt_len;      /* [B] real tokens of each target row */
    size_t *pair;          /* [B] corpus pair index of each row */
    size_t n_src_tokens;   /* non-pad entries of src */
    size_t n_tgt_tokens;   /* non-pad entries of tgt */
    size_t n_labels;       /* non-pad labels in tgt[:, 1:] = n_tgt_tokens - B:
                              the cross-entropy denominator */
    uint64_t epoch;        /* epoch of the first row (batcher batches only) */
    size_t cap_rows, cap_src, cap_tgt; /* private: allocated sizes */
} cf_batch;

/* Fills `batch` with the given pairs of `corpus`, in that order (for
 * evaluation and translation: any subset, any order). n >= 1. */
clformer_status cf_batch_fill(cf_batch *batch, const cf_corpus *corpus, const size_t *pairs,
                              size_t n);

/* Writes the decoder input tgt[:, :-1] and the labels tgt[:, 1:] as two
 * contiguous (B, T) arrays, for kernels that want them apart. */
void cf_batch_split_tgt(const cf_batch *batch, int32_t *decoder_input, int32_t *labels);

/* Padding: the fraction of src and tgt entries that are <pad>. */
double cf_batch_padding(const cf_batch *batch);

void cf_batch_free(cf_batch *batch);

typedef struct cf_batcher cf_batcher;

/*
 * A batcher over `corpus`, which must outlive it. Errors
 * (CLFORMER_ERR_INVALID_ARGUMENT): not exactly one of batch_size and
 * batch_tokens set, negative values, a token budget below the longest pair's
 * max(S, T+1) (the message gives the minimum), a corpus above 2^32-1 pairs.
 */
clformer_status cf_batcher_create(const cf_corpus *corpus, const cf_batcher_config *cfg,
                                  cf_batcher **out);

void cf_batcher_free(cf_batcher *b);

/* The next batch; the position advances by one batch. */
clformer_status cf_batcher_next(cf_batcher *b, cf_batch *batch);

/* Epoch of the next batch (epochs completed: 0 before the first one ends). */
uint64_t cf_batcher_epoch(const cf_batcher *b);

/* Position in the epoch: the next pair of the epoch order (batch_size), or the
 * next batch of the epoch (batch_tokens). */
size_t cf_batcher_index(const cf_batcher *b);

/* Batches in the current epoch: exact with batch_tokens; ceil(pairs / B) with
 * batch_size (batches straddle epochs). For progress display. */
size_t cf_batcher_batches_per_epoch(const cf_batcher *b);

/*
 * The position as a JSON object (a new reference), e.g.
 *   {"version":1,"mode":"tokens","batch_tokens":4096,"shuffle":true,
 *    "seed":"1","bucket_window":16384,"pairs":29000,
 *    "corpus_hash":"9f1c...","epoch":3,"index":17}
 * The seed is a decimal string: JSON numbers lose 64-bit precision elsewhere.
 */
json_t *cf_batcher_state_to_json(const cf_batcher *b);

/*
 * Moves the batcher to a saved position. The saved options and corpus must
 * equal this batcher's: otherwise CLFORMER_ERR_INVALID_ARGUMENT naming the
 * field and both values (resuming with other data options cannot give the
 * same batches). A malformed object is CLFORMER_ERR_FORMAT naming the field.
 * On error the batcher is unchanged.
 */
clformer_status cf_batcher_state_from_json(cf_batcher *b, const json_t *state);

/* The same as compact JSON text; *json is malloc'd (free it). */
clformer_status cf_batcher_state_dumps(const cf_batcher *b, char **json);
clformer_status cf_batcher_state_loads(cf_batcher *b, const char *json);

/* The public clformer_batcher: a batcher and the batch that the
 * clformer_batch it hands out points into. */
struct clformer_batcher {
    cf_batcher *b;
    cf_batch batch;
};

#endif
