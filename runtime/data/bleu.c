/*
 * BLEU. For each sentence pair the tokens of both sides get small integer ids
 * (by sorting the token strings), n-grams become fixed-size id tuples, and
 * clipped matches are counted by merging the sorted hypothesis and reference
 * n-gram lists. The final formula follows sacreBLEU's compute_bleu step by
 * step, in the same floating-point order, so scores agree to the last bits.
 */
#include "bleu.h"
#include "status.h"
#include "text.h"
#include "tok13a.h"
#include "unicode_lower.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    const char *s;
    size_t len;
    size_t index; /* position in the combined token list */
} span;

typedef struct {
    uint32_t t[CF_BLEU_ORDER]; /* unused slots are 0 */
} ngram;

static int by_bytes(const void *a, const void *b)
{
    const span *x = a, *y = b;
    int c = memcmp(x->s, y->s, x->len < y->len ? x->len : y->len);
    if (c) return c;
    return x->len < y->len ? -1 : x->len > y->len ? 1 : 0;
}

static int by_ngram(const void *a, const void *b)
{
    const ngram *x = a, *y = b;
    for (int k = 0; k < CF_BLEU_ORDER; k++)
        if (x->t[k] != y->t[k]) return x->t[k] < y->t[k] ? -1 : 1;
    return 0;
}

static size_t split(const char *s, span *out)
{
    size_t n = strlen(s), pos = 0, start, len, count = 0;
    while (cf_next_token(s, n, &pos, &start, &len)) {
        if (out) out[count] = (span){s + start, len, count};
        count++;
    }
    return count;
}

/* Sorted n-grams of order `order` of ids[0..len) into out; returns their number. */
static size_t ngrams(const uint32_t *ids, size_t len, int order, ngram *out)
{
    if (len < (size_t)order) return 0;
    size_t count = len - (size_t)order + 1;
    for (size_t i = 0; i < count; i++) {
        memset(&out[i], 0, sizeof out[i]);
        for (int k = 0; k < order; k++) out[i].t[k] = ids[i + (size_t)k];
    }
    qsort(out, count, sizeof *out, by_ngram);
    return count;
}

/* Sum over distinct n-grams of min(count in hyp, count in ref). */
static uint64_t clipped_matches(const ngram *h, size_t nh, const ngram *r, size_t nr)
{
    uint64_t matches = 0;
    size_t i = 0, j = 0;
    while (i < nh && j < nr) {
        int c = by_ngram(&h[i], &r[j]);
        if (c < 0) i++;
        else if (c > 0) j++;
        else {
            size_t ch = 0, cr = 0;
            ngram g = h[i];
            while (i < nh && by_ngram(&h[i], &g) == 0) i++, ch++;
            while (j < nr && by_ngram(&r[j], &g) == 0) j++, cr++;
            matches += ch < cr ? ch : cr;
        }
    }
    return matches;
}

static clformer_status check_utf8(const char *s, const char *side)
{
    size_t bad;
    if (!clformer_utf8_valid(s, strlen(s), &bad))
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT, "BLEU: the %s has invalid UTF-8 at byte "
                       "%zu (0x%02x)", side, bad + 1, (unsigned char)s[bad]);
    return CLFORMER_OK;
}

static clformer_status add_tokens(cf_bleu_stats *stats, const char *hyp, const char *ref);

static clformer_status add_cased(cf_bleu_stats *stats, const char *hyp, const char *ref)
{
    if (stats->tokenize == CF_BLEU_TOKENIZE_NONE) return add_tokens(stats, hyp, ref);
    char *th = NULL, *tr = NULL;
    clformer_status st = cf_tokenize_13a(hyp, &th);
    if (st == CLFORMER_OK) st = cf_tokenize_13a(ref, &tr);
    if (st == CLFORMER_OK) st = add_tokens(stats, th, tr);
    free(th);
    free(tr);
    return st;
}

clformer_status cf_bleu_add(cf_bleu_stats *stats, const char *hyp, const char *ref)
{
    CF_TRY(check_utf8(hyp, "hypothesis"));
    CF_TRY(check_utf8(ref, "reference"));
    if (!stats->lowercase) return add_cased(stats, hyp, ref);
    /* sacreBLEU lower-cases the line first, then tokenises it */
    char *lh = NULL, *lr = NULL;
    clformer_status st = cf_utf8_lower(hyp, strlen(hyp), &lh, NULL);
    if (st == CLFORMER_OK) st = cf_utf8_lower(ref, strlen(ref), &lr, NULL);
    if (st == CLFORMER_OK) st = add_cased(stats, lh, lr);
    free(lh);
    free(lr);
    return st;
}

/* Counts the whitespace-separated tokens' n-grams of a (valid UTF-8) pair. */
static clformer_status add_tokens(cf_bleu_stats *stats, const char *hyp, const char *ref)
{
    size_t nh = split(hyp, NULL), nr = split(ref, NULL), n = nh + nr;
    span *tokens = malloc((n ? n : 1) * sizeof *tokens);
    uint32_t *ids = malloc((n ? n : 1) * sizeof *ids);
    ngram *gh = malloc((nh ? nh : 1) * sizeof *gh), *gr = malloc((nr ? nr : 1) * sizeof *gr);
    if (!tokens || !ids || !gh || !gr) {
        free(tokens);
        free(ids);
        free(gh);
        free(gr);
        return cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory computing BLEU");
    }
    split(hyp, tokens);
    split(ref, tokens + nh);
    for (size_t i = nh; i < n; i++) tokens[i].index = i;

    /* equal strings get equal ids, 1-based so that 0 marks unused slots */
    qsort(tokens, n, sizeof *tokens, by_bytes);
    uint32_t next = 0;
    for (size_t i = 0; i < n; i++) {
        if (i == 0 || by_bytes(&tokens[i - 1], &tokens[i]) != 0) next++;
        ids[tokens[i].index] = next;
    }

    for (int order = 1; order <= CF_BLEU_ORDER; order++) {
        size_t ch = ngrams(ids, nh, order, gh), cr = ngrams(ids + nh, nr, order, gr);
        stats->total[order - 1] += ch;
        stats->correct[order - 1] += clipped_matches(gh, ch, gr, cr);
    }
    stats->hyp_len += nh;
    stats->ref_len += nr;
    free(tokens);
    free(ids);
    free(gh);
    free(gr);
    return CLFORMER_OK;
}

/* sacreBLEU's my_log: log with log(0) floored to -9999999999. */
static double floored_log(double x) { return x == 0.0 ? -9999999999.0 : log(x); }

void cf_bleu_compute(const cf_bleu_stats *stats, cf_bleu_result *result)
{
    memset(result, 0, sizeof *result);
    result->stats = *stats;
    double hyp_len = (double)stats->hyp_len, ref_len = (double)stats->ref_len;
    result->bp = 1.0;
    if (stats->hyp_len < stats->ref_len)
        result->bp = stats->hyp_len > 0 ? exp(1.0 - ref_len / hyp_len) : 0.0;

    bool any = false;
    for (int k = 0; k < CF_BLEU_ORDER; k++) any = any || stats->correct[k] > 0;
    if (!any) return; /* score 0, precisions 0 (sacreBLEU's early stop) */

    double smooth = 1.0;
    for (int k = 0; k < CF_BLEU_ORDER; k++) {
        if (stats->total[k] == 0) break; /* the remaining precisions stay 0 */
        if (stats->correct[k] == 0) {
            smooth *= 2.0;
            result->precisions[k] = 100.0 / (smooth * (double)stats->total[k]);
        } else {
            result->precisions[k] = 100.0 * (double)stats->correct[k] / (double)stats->total[k];
        }
    }
    double sum = 0.0;
    for (int k = 0; k < CF_BLEU_ORDER; k++) sum += floored_log(result->precisions[k]);
    result->score = result->bp * exp(sum / CF_BLEU_ORDER);
}

clformer_status cf_bleu_corpus(const char *const *hyps, const char *const *refs, size_t n,
                               cf_bleu_tokenize tokenize, bool lowercase, cf_bleu_result *result)
{
    memset(result, 0, sizeof *result);
    if (n == 0)
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT, "BLEU needs at least one sentence");
    cf_bleu_stats stats = {.tokenize = tokenize, .lowercase = lowercase};
    for (size_t i = 0; i < n; i++) {
        clformer_status st = cf_bleu_add(&stats, hyps[i], refs[i]);
        if (st != CLFORMER_OK) return cf_fail_prefix(st, "line %zu: ", i + 1);
    }
    cf_bleu_compute(&stats, result);
    return CLFORMER_OK;
}

void cf_bleu_format(const cf_bleu_result *r, char *buf, size_t size)
{
    double ratio = r->stats.ref_len ? (double)r->stats.hyp_len / (double)r->stats.ref_len : 0.0;
    snprintf(buf, size, "BLEU = %.2f %.1f/%.1f/%.1f/%.1f (BP = %.3f ratio = %.3f hyp_len = "
             "%llu ref_len = %llu)", r->score, r->precisions[0], r->precisions[1],
             r->precisions[2], r->precisions[3], r->bp, ratio,
             (unsigned long long)r->stats.hyp_len, (unsigned long long)r->stats.ref_len);
}

const char *cf_bleu_tokenize_name(cf_bleu_tokenize tokenize)
{
    return tokenize == CF_BLEU_TOKENIZE_13A ? "13a" : "none";
}

bool cf_bleu_tokenize_parse(const char *name, cf_bleu_tokenize *tokenize)
{
    if (strcmp(name, "13a") == 0) *tokenize = CF_BLEU_TOKENIZE_13A;
    else if (strcmp(name, "none") == 0) *tokenize = CF_BLEU_TOKENIZE_NONE;
    else return false;
    return true;
}

void cf_bleu_signature(cf_bleu_tokenize tokenize, bool lowercase, char *buf, size_t size)
{
    snprintf(buf, size, "nrefs:1|case:%s|eff:no|tok:%s|smooth:exp|version:%s",
             lowercase ? "lc" : "mixed", cf_bleu_tokenize_name(tokenize),
             CF_BLEU_SACREBLEU_VERSION);
}
