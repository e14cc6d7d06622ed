/*
 * The built-in translation task of `clformer demo`: two small made-up
 * languages, generated in memory from a seed (no files needed).
 *
 * Source sentences (3 to 12 words, 32-word vocabulary):
 *     DET ADJ* NOUN VERB_T DET ADJ* NOUN [ADV]      (transitive)
 *     DET ADJ* NOUN VERB_I [ADV]                   (intransitive)
 * with 0 to 3 adjectives per noun phrase. The determiner carries number
 * (singular or plural) and definiteness.
 *
 * Targets (same length, 56-word vocabulary) are a word-by-word translation
 * through a fixed dictionary, reordered and inflected:
 *   - adjectives follow their noun (same relative order);
 *   - the verb moves to the end, after the object and the adverb (SOV);
 *   - a noun takes its plural form after a plural determiner;
 *   - an adjective agrees with its noun's gender (every noun has one);
 *   - the verb agrees in number with the SUBJECT, whose determiner may be
 *     10 words earlier: long-range agreement plus reordering, which takes
 *     attention, yet the rules are regular enough to learn in minutes.
 *     (Measured with PyTorch on 2 CPU threads, 2+2 layers, d=64, 4 heads,
 *     batch 64, Adam 1e-3: 93% of test sentences exact after 200 steps,
 *     99% after 300.)
 * Example:  kai bri minu golo lota mo dabu yesto
 *        -> els kuvani nera suda un toram vexa kasun
 *
 * Generation is deterministic (splitmix64): the same seed gives the same
 * pairs on every machine. The test sentences are distinct, and no test source
 * sentence occurs in the training set (training sentences are distinct too).
 * Feed the pairs to cf_parallel_text_from_lines, so the demo uses the same
 * vocabulary, corpus and batcher code as real data.
 */
#ifndef CF_DEMO_TASK_H
#define CF_DEMO_TASK_H

#include "clformer.h"

#include <stddef.h>
#include <stdint.h>

#define CF_DEMO_TRAIN_DEFAULT 12000
#define CF_DEMO_TEST_DEFAULT 200

/* n sentence pairs; the strings are owned by the split. */
typedef struct {
    size_t n;
    char **src; /* [n] NUL-terminated source sentences */
    char **tgt; /* [n] their translations */
} cf_demo_split;

typedef struct {
    cf_demo_split train;
    cf_demo_split test;
} cf_demo_data;

/*
 * Generates n_train training and n_test test pairs from `seed`.
 * n_train + n_test must be at most 1,000,000 and n_test >= 1
 * (CLFORMER_ERR_INVALID_ARGUMENT otherwise).
 */
clformer_status cf_demo_generate(uint64_t seed, size_t n_train, size_t n_test,
                                 cf_demo_data *out);

void cf_demo_free(cf_demo_data *data);

/* A few lines describing the languages and the rules, for `clformer demo`. */
const char *cf_demo_description(void);

#endif
