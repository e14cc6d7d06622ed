/*
 * Corpus BLEU, computed exactly as sacreBLEU 2.x does with its defaults
 * (tokenizer 13a, tok13a.h) or with `--tokenize none` (tokens split as
 * Python's str.split() does, text.h), and its other defaults: one reference per sentence, n-grams up to 4 with
 * uniform weights, clipped counts summed over the corpus, the brevity penalty
 * exp(1 - ref_len / hyp_len) when the hypotheses are shorter, and the 'exp'
 * smoothing (an n-gram order with no match gets precision
 * 100 / (2^k * total), k counting such orders so far), case-sensitive
 * unless `lowercase` (sacreBLEU's -lc: both sides go through Python's
 * str.lower() before they are tokenised, unicode_lower.h). As in
 * sacreBLEU, a corpus without a single matching unigram scores 0 with all
 * precisions 0.
 *
 * Sentence statistics add up, so evaluation can stream:
 *
 *     cf_bleu_stats st = {.tokenize = CF_BLEU_TOKENIZE_13A};
 *     for each sentence: CF_TRY(cf_bleu_add(&st, hyp, ref));
 *     cf_bleu_result r;
 *     cf_bleu_compute(&st, &r);
 */
#ifndef CF_BLEU_H
#define CF_BLEU_H

#include "clformer.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CF_BLEU_ORDER 4

/* The sacreBLEU release whose numbers these are (checked against it in
 * tests/host/test_bleu.c); its signature names it. */
#define CF_BLEU_SACREBLEU_VERSION "2.6.0"

typedef enum {
    CF_BLEU_TOKENIZE_NONE = 0, /* whitespace tokens as given (sacreBLEU's 'none') */
    CF_BLEU_TOKENIZE_13A,      /* sacreBLEU's default, for detokenised text */
} cf_bleu_tokenize;

/* Sufficient statistics of a corpus (sacreBLEU's `counts`, `totals`, ...). */
typedef struct {
    uint64_t correct[CF_BLEU_ORDER]; /* clipped matching n-grams, n = 1..4 */
    uint64_t total[CF_BLEU_ORDER];   /* hypothesis n-grams */
    uint64_t hyp_len;                /* hypothesis tokens (sacreBLEU's sys_len) */
    uint64_t ref_len;                /* reference tokens */
    cf_bleu_tokenize tokenize;       /* how cf_bleu_add splits lines ({0}: none) */
    bool lowercase;                  /* lower-case both sides first (sacreBLEU's -lc) */
} cf_bleu_stats;

typedef struct {
    double score;                     /* BLEU, 0..100 */
    double precisions[CF_BLEU_ORDER]; /* percent, smoothed, as sacreBLEU reports them */
    double bp;                        /* brevity penalty */
    cf_bleu_stats stats;
} cf_bleu_result;

/* Adds one hypothesis and its reference (NUL-terminated UTF-8). Invalid
 * UTF-8 is CLFORMER_ERR_INVALID_ARGUMENT; `stats` is then unchanged. */
clformer_status cf_bleu_add(cf_bleu_stats *stats, const char *hyp, const char *ref);

/* BLEU from the statistics. */
void cf_bleu_compute(const cf_bleu_stats *stats, cf_bleu_result *result);

/* BLEU of n >= 1 hypothesis/reference pairs, lower-cased first when
 * `lowercase` (errors name the line, 1-based). */
clformer_status cf_bleu_corpus(const char *const *hyps, const char *const *refs, size_t n,
                               cf_bleu_tokenize tokenize, bool lowercase, cf_bleu_result *result);

/* The tokenizer's name in sacreBLEU's signature and on the command line
 * ("none", "13a"); cf_bleu_tokenize_parse is its inverse (false: unknown). */
const char *cf_bleu_tokenize_name(cf_bleu_tokenize tokenize);
bool cf_bleu_tokenize_parse(const char *name, cf_bleu_tokenize *tokenize);

/* sacreBLEU's signature of the score: "nrefs:1|case:mixed|eff:no|tok:13a|
 * smooth:exp|version:2.6.0" (case:lc when `lowercase`). */
void cf_bleu_signature(cf_bleu_tokenize tokenize, bool lowercase, char *buf, size_t size);

/* sacreBLEU's summary line: "BLEU = 35.12 67.1/41.0/27.3/18.7 (BP = 1.000
 * ratio = 1.012 hyp_len = 12345 ref_len = 12200)". */
void cf_bleu_format(const cf_bleu_result *result, char *buf, size_t size);

#endif
