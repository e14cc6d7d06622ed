/*
 * Batcher: epoch orders, length bucketing, padding into host arrays, and the
 * resumable position. Everything an epoch needs is allocated at creation, so
 * moving to the next epoch cannot fail.
 */
#include "batcher.h"
#include "fnv1a.h"
#include "splitmix.h"
#include "status.h"
#include "vocab.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    uint32_t start; /* into order */
    uint32_t count;
} batch_range;

typedef struct {
    uint32_t cost; /* max(S, T+1) of the pair */
    uint32_t pos;  /* position in the shuffled order: makes the order total */
    uint32_t pair;
} sort_key;

struct cf_batcher {
    const cf_corpus *corpus;
    cf_batcher_config cfg; /* bucket_window resolved */
    uint64_t corpus_hash;
    uint64_t epoch;
    size_t index;
    uint32_t *order;       /* [n] this epoch's order of pair indices */
    batch_range *batches;  /* [n] token mode: this epoch's batches */
    size_t n_batches;
    sort_key *keys;        /* [min(n, window)] scratch for sorting a window */
    size_t *rows;          /* [max pairs per batch] scratch */
    size_t rows_cap;
};

/* --- batches ---------------------------------------------------------------- */

static clformer_status batch_reserve(cf_batch *b, size_t rows, size_t src, size_t tgt)
{
    if (rows > b->cap_rows) {
        int32_t *sl = realloc(b->src_len, rows * sizeof *sl);
        if (sl) b->src_len = sl;
        int32_t *tl = realloc(b->tgt_len, rows * sizeof *tl);
        if (tl) b->tgt_len = tl;
        size_t *pr = realloc(b->pair, rows * sizeof *pr);
        if (pr) b->pair = pr;
        if (!sl || !tl || !pr) goto oom;
        b->cap_rows = rows;
    }
    if (src > b->cap_src) {
        int32_t *p = realloc(b->src, src * sizeof *p);
        if (!p) goto oom;
        b->src = p;
        b->cap_src = src;
    }
    if (tgt > b->cap_tgt) {
        int32_t *p = realloc(b->tgt, tgt * sizeof *p);
        if (!p) goto oom;
        b->tgt = p;
        b->cap_tgt = tgt;
    }
    return CLFORMER_OK;
oom:
    return cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory for a batch of %zu pairs", rows);
}

clformer_status cf_batch_fill(cf_batch *batch, const cf_corpus *corpus, const size_t *pairs,
                              size_t n)
{
    if (n == 0 || n > INT32_MAX)
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT, "a batch needs 1 to %d pairs, not %zu",
                       INT32_MAX, n);
    int S = 0, T1 = 0;
    for (size_t r = 0; r < n; r++) {
        if (pairs[r] >= corpus->n)
            return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT, "batch row %zu asks for pair %zu; the "
                           "corpus has %zu pairs", r, pairs[r], corpus->n);
        int ls, lt;
        cf_corpus_src(corpus, pairs[r], &ls);
        cf_corpus_tgt(corpus, pairs[r], &lt);
        if (ls > S) S = ls;
        if (lt > T1) T1 = lt;
    }
    CF_TRY(batch_reserve(batch, n, n * (size_t)S, n * (size_t)T1));
    batch->B = (int)n;
    batch->S = S;
    batch->T = T1 - 1;
    batch->n_src_tokens = batch->n_tgt_tokens = 0;
    for (size_t r = 0; r < n; r++) {
        int ls, lt;
        const int32_t *s = cf_corpus_src(corpus, pairs[r], &ls);
        const int32_t *t = cf_corpus_tgt(corpus, pairs[r], &lt);
        int32_t *src_row = batch->src + r * (size_t)S, *tgt_row = batch->tgt + r * (size_t)T1;
        memcpy(src_row, s, (size_t)ls * sizeof *s);
        memset(src_row + ls, 0, (size_t)(S - ls) * sizeof *s); /* CF_PAD is 0 */
        memcpy(tgt_row, t, (size_t)lt * sizeof *t);
        memset(tgt_row + lt, 0, (size_t)(T1 - lt) * sizeof *t);
        batch->src_len[r] = ls;
        batch->tgt_len[r] = lt;
        batch->pair[r] = pairs[r];
        batch->n_src_tokens += (size_t)ls;
        batch->n_tgt_tokens += (size_t)lt;
    }
    batch->n_labels = batch->n_tgt_tokens - n;
    batch->epoch = 0;
    return CLFORMER_OK;
}

void cf_batch_split_tgt(const cf_batch *batch, int32_t *decoder_input, int32_t *labels)
{
    size_t T = (size_t)batch->T;
    for (size_t r = 0; r < (size_t)batch->B; r++) {
        const int32_t *row = batch->tgt + r * (T + 1);
        memcpy(decoder_input + r * T, row, T * sizeof *row);
        memcpy(labels + r * T, row + 1, T * sizeof *row);
    }
}

double cf_batch_padding(const cf_batch *batch)
{
    double total = (double)batch->B * (batch->S + batch->T + 1);
    return total > 0 ? 1.0 - (double)(batch->n_src_tokens + batch->n_tgt_tokens) / total : 0.0;
}

void cf_batch_free(cf_batch *batch)
{
    free(batch->src);
    free(batch->tgt);
    free(batch->src_len);
    free(batch->tgt_len);
    free(batch->pair);
    memset(batch, 0, sizeof *batch);
}

/* --- epochs -------------------------------------------------------------------- */

static bool token_mode(const cf_batcher *b) { return b->cfg.batch_tokens > 0; }

static uint32_t pair_cost(const cf_corpus *c, size_t i)
{
    int ls, lt;
    cf_corpus_src(c, i, &ls);
    cf_corpus_tgt(c, i, &lt);
    return (uint32_t)(ls > lt ? ls : lt);
}

static int by_cost(const void *a, const void *b)
{
    const sort_key *x = a, *y = b;
    if (x->cost != y->cost) return x->cost < y->cost ? -1 : 1;
    return x->pos < y->pos ? -1 : x->pos > y->pos ? 1 : 0;
}

static void shuffle_u32(uint32_t *a, size_t n, uint64_t *rng)
{
    for (size_t i = n; i > 1; i--) {
        size_t j = (size_t)cf_rng_below(rng, i);
        uint32_t t = a[i - 1];
        a[i - 1] = a[j];
        a[j] = t;
    }
}

/* Greedy cut of order[from..to) into batches within the token budget. */
static void cut_batches(cf_batcher *b, size_t from, size_t to)
{
    size_t start = from, count = 0, budget = (size_t)b->cfg.batch_tokens;
    uint32_t widest = 0;
    for (size_t i = from; i < to; i++) {
        uint32_t cost = pair_cost(b->corpus, b->order[i]);
        uint32_t w = cost > widest ? cost : widest;
        if (count > 0 && (count + 1) * (size_t)w > budget) {
            b->batches[b->n_batches++] = (batch_range){(uint32_t)start, (uint32_t)count};
            start = i;
            count = 0;
            w = cost;
        }
        widest = w;
        count++;
    }
    if (count > 0) b->batches[b->n_batches++] = (batch_range){(uint32_t)start, (uint32_t)count};
}

/* Lays out epoch `e`: a pure function of (config, corpus, e). */
static void build_epoch(cf_batcher *b, uint64_t e)
{
    size_t n = b->corpus->n;
    uint64_t rng = cf_mix64(b->cfg.seed) ^ cf_mix64(e + 0x243F6A8885A308D3ull);
    for (size_t i = 0; i < n; i++) b->order[i] = (uint32_t)i;
    if (b->cfg.shuffle) shuffle_u32(b->order, n, &rng);
    b->epoch = e;
    b->index = 0;
    if (!token_mode(b)) return;

    b->n_batches = 0;
    size_t window = (size_t)b->cfg.bucket_window;
    if (b->cfg.shuffle && window > 1) {
        for (size_t w0 = 0; w0 < n; w0 += window) {
            size_t w1 = w0 + window < n ? w0 + window : n;
            for (size_t i = w0; i < w1; i++)
                b->keys[i - w0] = (sort_key){pair_cost(b->corpus, b->order[i]), (uint32_t)i,
                                             b->order[i]};
            qsort(b->keys, w1 - w0, sizeof *b->keys, by_cost);
            for (size_t i = w0; i < w1; i++) b->order[i] = b->keys[i - w0].pair;
            cut_batches(b, w0, w1);
        }
    } else {
        cut_batches(b, 0, n);
    }
    if (b->cfg.shuffle) {
        /* shuffle the batches themselves so lengths do not rise within a window */
        for (size_t i = b->n_batches; i > 1; i--) {
            size_t j = (size_t)cf_rng_below(&rng, i);
            batch_range t = b->batches[i - 1];
            b->batches[i - 1] = b->batches[j];
            b->batches[j] = t;
        }
    }
}

static uint64_t hash_corpus(const cf_corpus *c)
{
    uint64_t h = CF_FNV1A_INIT;
    for (size_t k = 0; k < 2 * c->n; k++) {
        h = cf_fnv1a_word(h, (uint64_t)(c->offset[k + 1] - c->offset[k]));
        for (size_t i = c->offset[k]; i < c->offset[k + 1]; i++)
            h = cf_fnv1a_word(h, (uint32_t)c->tokens[i]);
    }
    return cf_mix64(h);
}

/* --- the batcher ---------------------------------------------------------------- */

clformer_status cf_batcher_create(const cf_corpus *corpus, const cf_batcher_config *cfg,
                                  cf_batcher **out)
{
    *out = NULL;
    if (cfg->batch_size < 0 || cfg->batch_tokens < 0 || cfg->bucket_window < 0)
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT, "batch options must not be negative "
                       "(batch_size %d, batch_tokens %d, bucket_window %d)", cfg->batch_size,
                       cfg->batch_tokens, cfg->bucket_window);
    if ((cfg->batch_size > 0) == (cfg->batch_tokens > 0))
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT, "give exactly one of --batch-size (pairs "
                       "per batch) and --batch-tokens (padded tokens per batch), not %s",
                       cfg->batch_size > 0 ? "both" : "neither");
    if (corpus->n == 0 || corpus->n > UINT32_MAX)
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT, "the batcher takes 1 to %" PRIu32 " sentence "
                       "pairs; this corpus has %zu", UINT32_MAX, corpus->n);
    int widest = corpus->max_src_len > corpus->max_tgt_len ? corpus->max_src_len
                                                            : corpus->max_tgt_len;
    if (cfg->batch_tokens > 0 && cfg->batch_tokens < widest)
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT, "--batch-tokens %d is smaller than the "
                       "longest sentence pair (%d tokens, <sos> and <eos> included): raise it to "
                       "at least %d, or lower --max-len", cfg->batch_tokens, widest, widest);

    cf_batcher *b = calloc(1, sizeof *b);
    if (!b) goto oom;
    b->corpus = corpus;
    b->cfg = *cfg;
    if (b->cfg.batch_tokens > 0 && b->cfg.bucket_window == 0)
        b->cfg.bucket_window = CF_BUCKET_WINDOW_DEFAULT;
    if (b->cfg.batch_size > 0) b->cfg.bucket_window = 0; /* unused: keep the state tidy */
    size_t n = corpus->n, window = (size_t)b->cfg.bucket_window;
    b->rows_cap = b->cfg.batch_size > 0 ? (size_t)b->cfg.batch_size : n;
    b->order = malloc(n * sizeof *b->order);
    b->rows = malloc(b->rows_cap * sizeof *b->rows);
    if (!b->order || !b->rows) goto oom;
    if (token_mode(b)) {
        b->batches = malloc(n * sizeof *b->batches);
        b->keys = malloc((window < n ? window : n) * sizeof *b->keys);
        if (!b->batches || !b->keys) goto oom;
    }
    b->corpus_hash = hash_corpus(corpus);
    build_epoch(b, 0);
    *out = b;
    return CLFORMER_OK;
oom:
    cf_batcher_free(b);
    return cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory creating a batcher for %zu "
                   "pairs", corpus->n);
}

void cf_batcher_free(cf_batcher *b)
{
    if (!b) return;
    free(b->order);
    free(b->batches);
    free(b->keys);
    free(b->rows);
    free(b);
}

clformer_status cf_batcher_next(cf_batcher *b, cf_batch *batch)
{
    size_t n = b->corpus->n, count;
    uint64_t epoch = b->epoch;
    if (token_mode(b)) {
        batch_range r = b->batches[b->index];
        count = r.count;
        for (size_t i = 0; i < count; i++) b->rows[i] = b->order[r.start + i];
        if (++b->index == b->n_batches) build_epoch(b, b->epoch + 1);
    } else {
        /* an epoch's last batch is short rather than running into the next
         * epoch: a batch larger than the corpus is the corpus once, and
         * batches_per_epoch and --epochs count what was really seen */
        count = (size_t)b->cfg.batch_size;
        if (count > n - b->index) count = n - b->index;
        for (size_t i = 0; i < count; i++) b->rows[i] = b->order[b->index + i];
        b->index += count;
        if (b->index == n) build_epoch(b, b->epoch + 1);
    }
    CF_TRY(cf_batch_fill(batch, b->corpus, b->rows, count));
    batch->epoch = epoch;
    return CLFORMER_OK;
}

uint64_t cf_batcher_epoch(const cf_batcher *b) { return b->epoch; }

size_t cf_batcher_index(const cf_batcher *b) { return b->index; }

size_t cf_batcher_batches_per_epoch(const cf_batcher *b)
{
    if (token_mode(b)) return b->n_batches;
    return (b->corpus->n + (size_t)b->cfg.batch_size - 1) / (size_t)b->cfg.batch_size;
}

/* --- the position as JSON ---------------------------------------------------------- */

#define STATE_VERSION 1

json_t *cf_batcher_state_to_json(const cf_batcher *b)
{
    char seed[24], hash[20];
    snprintf(seed, sizeof seed, "%" PRIu64, b->cfg.seed);
    snprintf(hash, sizeof hash, "%016" PRIx64, b->corpus_hash);
    json_t *o = json_object();
    if (!o) return NULL;
    int err = json_object_set_new(o, "version", json_integer(STATE_VERSION));
    if (token_mode(b)) {
        err |= json_object_set_new(o, "mode", json_string("tokens"));
        err |= json_object_set_new(o, "batch_tokens", json_integer(b->cfg.batch_tokens));
    } else {
        err |= json_object_set_new(o, "mode", json_string("pairs"));
        err |= json_object_set_new(o, "batch_size", json_integer(b->cfg.batch_size));
    }
    err |= json_object_set_new(o, "shuffle", json_boolean(b->cfg.shuffle));
    err |= json_object_set_new(o, "seed", json_string(seed));
    if (token_mode(b))
        err |= json_object_set_new(o, "bucket_window", json_integer(b->cfg.bucket_window));
    err |= json_object_set_new(o, "pairs", json_integer((json_int_t)b->corpus->n));
    err |= json_object_set_new(o, "corpus_hash", json_string(hash));
    err |= json_object_set_new(o, "epoch", json_integer((json_int_t)b->epoch));
    err |= json_object_set_new(o, "index", json_integer((json_int_t)b->index));
    if (err) {
        json_decref(o);
        return NULL;
    }
    return o;
}

static clformer_status get_field(const json_t *o, const char *key, json_type type, json_t **v)
{
    *v = json_object_get(o, key);
    if (!*v || json_typeof(*v) != type) {
        const char *want = type == JSON_INTEGER ? "an integer" : "a string";
        return cf_fail(CLFORMER_ERR_FORMAT, "data position: \"%s\" is %s; it must be %s", key,
                       *v ? "of the wrong type" : "missing", want);
    }
    return CLFORMER_OK;
}

static clformer_status mismatch(const char *what, const char *saved, const char *now)
{
    return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT, "cannot resume the data order exactly: the "
                   "saved position was made with %s %s, this run has %s %s; use the same data "
                   "options and corpus to resume", what, saved, what, now);
}

static clformer_status check_int(const json_t *o, const char *key, long long now)
{
    json_t *v;
    CF_TRY(get_field(o, key, JSON_INTEGER, &v));
    if (json_integer_value(v) != now) {
        char saved[32], cur[32];
        snprintf(saved, sizeof saved, "%lld", (long long)json_integer_value(v));
        snprintf(cur, sizeof cur, "%lld", now);
        return mismatch(key, saved, cur);
    }
    return CLFORMER_OK;
}

static clformer_status check_str(const json_t *o, const char *key, const char *now)
{
    json_t *v;
    CF_TRY(get_field(o, key, JSON_STRING, &v));
    if (strcmp(json_string_value(v), now) != 0) return mismatch(key, json_string_value(v), now);
    return CLFORMER_OK;
}

clformer_status cf_batcher_state_from_json(cf_batcher *b, const json_t *state)
{
    if (!json_is_object(state))
        return cf_fail(CLFORMER_ERR_FORMAT, "data position: expected a JSON object");
    json_t *v;
    CF_TRY(get_field(state, "version", JSON_INTEGER, &v));
    if (json_integer_value(v) != STATE_VERSION)
        return cf_fail(CLFORMER_ERR_FORMAT, "data position: version %lld is not supported (this "
                       "build reads version %d)", (long long)json_integer_value(v), STATE_VERSION);
    CF_TRY(check_str(state, "mode", token_mode(b) ? "tokens" : "pairs"));
    if (token_mode(b)) {
        CF_TRY(check_int(state, "batch_tokens", b->cfg.batch_tokens));
    } else {
        CF_TRY(check_int(state, "batch_size", b->cfg.batch_size));
    }
    v = json_object_get(state, "shuffle");
    if (!json_is_boolean(v))
        return cf_fail(CLFORMER_ERR_FORMAT, "data position: \"shuffle\" is %s; it must be a "
                       "boolean", v ? "of the wrong type" : "missing");
    if (json_is_true(v) != b->cfg.shuffle)
        return mismatch("shuffle", json_is_true(v) ? "on" : "off", b->cfg.shuffle ? "on" : "off");
    char text[24];
    snprintf(text, sizeof text, "%" PRIu64, b->cfg.seed);
    CF_TRY(check_str(state, "seed", text));
    if (token_mode(b)) CF_TRY(check_int(state, "bucket_window", b->cfg.bucket_window));
    CF_TRY(check_int(state, "pairs", (long long)b->corpus->n));
    snprintf(text, sizeof text, "%016" PRIx64, b->corpus_hash);
    CF_TRY(check_str(state, "corpus_hash", text));

    json_t *je, *ji;
    CF_TRY(get_field(state, "epoch", JSON_INTEGER, &je));
    CF_TRY(get_field(state, "index", JSON_INTEGER, &ji));
    json_int_t epoch = json_integer_value(je), index = json_integer_value(ji);
    if (epoch < 0 || index < 0)
        return cf_fail(CLFORMER_ERR_FORMAT, "data position: epoch %lld and index %lld must not "
                       "be negative", (long long)epoch, (long long)index);
    uint64_t old_epoch = b->epoch;
    size_t old_index = b->index;
    build_epoch(b, (uint64_t)epoch);
    size_t limit = token_mode(b) ? b->n_batches : b->corpus->n;
    if ((size_t)index >= limit) {
        build_epoch(b, old_epoch);
        b->index = old_index;
        return cf_fail(CLFORMER_ERR_FORMAT, "data position: index %lld is past the end of epoch "
                       "%lld (%zu %s)", (long long)index, (long long)epoch, limit,
                       token_mode(b) ? "batches" : "pairs");
    }
    b->index = (size_t)index;
    return CLFORMER_OK;
}

clformer_status cf_batcher_state_dumps(const cf_batcher *b, char **json)
{
    json_t *o = cf_batcher_state_to_json(b);
    *json = o ? json_dumps(o, JSON_COMPACT) : NULL;
    json_decref(o);
    if (!*json) return cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory saving the data "
                               "position");
    return CLFORMER_OK;
}

clformer_status cf_batcher_state_loads(cf_batcher *b, const char *json)
{
    json_error_t jerr;
    json_t *o = json_loads(json, 0, &jerr);
    if (!o)
        return cf_fail(CLFORMER_ERR_FORMAT, "data position: not valid JSON: %s (line %d, column "
                       "%d)", jerr.text, jerr.line, jerr.column);
    clformer_status st = cf_batcher_state_from_json(b, o);
    json_decref(o);
    return st;
}
