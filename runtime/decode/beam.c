/*
 * Beam search over a session's decoding caches: K hypotheses per sentence
 * (rows r = sentence * K + k), ranked by log-probability / length^penalty.
 * Each step scores every live hypothesis's V continuations on the host,
 * keeps the K best that do not end the sentence, records the ones among the
 * K best that do,
 * then reorders the self-attention caches and the token table by parent.
 */
#include "beam.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* One hypothesis of a sentence's beam. */
typedef struct {
    double score;   /* sum of log-probabilities */
    int32_t *tokens;/* L entries; `len` used */
    size_t len;
} hypothesis;

typedef struct {
    hypothesis *alive;    /* K */
    hypothesis best;      /* best finished so far (normalised score in best.score) */
    size_t n_finished;
    bool done;
} sentence_beam;

typedef struct {
    double score;
    size_t beam;
    int32_t token;
} candidate;

/* The candidates' order, total so that ties never depend on the heap or
 * qsort: higher score first, then the lower beam, then the lower token
 * (the device search, beam_device.c, ranks them the same way). */
static bool before(const candidate *a, const candidate *b)
{
    if (a->score != b->score) return a->score > b->score;
    return a->beam != b->beam ? a->beam < b->beam : a->token < b->token;
}

static int by_rank(const void *a, const void *b)
{
    return before(a, b) ? -1 : before(b, a) ? 1 : 0;
}

/* Keeps the `cap` best candidates seen in a min-heap (worst at the root):
 * O(K V log K) per sentence instead of sorting all K V candidates. */
static void heap_offer(candidate *heap, size_t *n, size_t cap, candidate c)
{
    size_t i;
    if (*n < cap) {
        i = (*n)++;
        while (i > 0 && before(&heap[(i - 1) / 2], &c)) {
            heap[i] = heap[(i - 1) / 2];
            i = (i - 1) / 2;
        }
        heap[i] = c;
        return;
    }
    if (!before(&c, &heap[0])) return;
    i = 0;
    for (;;) { /* sift the new candidate down from the root */
        size_t l = 2 * i + 1, r = l + 1, m = i;
        const candidate *worst = &c;
        if (l < cap && before(worst, &heap[l])) m = l, worst = &heap[l];
        if (r < cap && before(worst, &heap[r])) m = r;
        if (m == i) break;
        heap[i] = heap[m];
        i = m;
    }
    heap[i] = c;
}

static double normalised(double score, size_t len, float penalty)
{
    return score / pow((double)(len ? len : 1), (double)penalty);
}

/* Host state of one search: hypotheses, candidates and the next step's rows. */
typedef struct {
    size_t batch, K, L, V;
    float penalty;
    float *logp;           /* (R, V) log-probabilities of the step */
    candidate *cand;       /* 2K: always holds K that do not end the sentence */
    sentence_beam *sb;     /* batch */
    hypothesis *store;     /* 2R: alive (K per sentence), then the next generation */
    int32_t *pool;         /* token storage of every hypothesis and best */
    int32_t *parents, *next; /* (R): the row each new row continues, and its token */
    size_t sentences_done;
} beam_state;

static void beam_free(beam_state *b)
{
    free(b->logp);
    free(b->cand);
    free(b->sb);
    free(b->store);
    free(b->pool);
    free(b->parents);
    free(b->next);
}

static clformer_status beam_init(beam_state *b, size_t batch, size_t K, size_t L, size_t V,
                                 float penalty)
{
    const size_t R = batch * K;
    *b = (beam_state){batch, K, L, V, penalty, NULL, NULL, NULL, NULL, NULL, NULL, NULL, 0};
    b->logp = malloc(R * V * sizeof *b->logp);
    b->cand = malloc(2 * K * sizeof *b->cand);
    b->sb = calloc(batch, sizeof *b->sb);
    b->store = calloc(2 * R, sizeof *b->store);
    b->pool = calloc(2 * R * L + batch * L, sizeof *b->pool);
    b->parents = malloc(R * sizeof *b->parents);
    b->next = malloc(R * sizeof *b->next);
    if (!b->logp || !b->cand || !b->sb || !b->store || !b->pool || !b->parents || !b->next) {
        beam_free(b);
        return cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory");
    }
    for (size_t s = 0; s < batch; s++) {
        b->sb[s].alive = b->store + s * K;
        b->sb[s].best.tokens = b->pool + 2 * R * L + s * L;
        b->sb[s].best.score = -INFINITY;
        for (size_t k = 0; k < K; k++) {
            b->sb[s].alive[k].tokens = b->pool + (s * K + k) * L;
            b->sb[s].alive[k].score = k == 0 ? 0.0 : -INFINITY; /* one live beam at first */
        }
    }
    for (size_t i = 0; i < R; i++) b->store[R + i].tokens = b->pool + (R + i) * L;
    return CLFORMER_OK;
}

/* A finished hypothesis h + token (<eos> counts towards its length). */
static void finish(const beam_state *b, sentence_beam *s, const hypothesis *h, const candidate *c)
{
    double ns = normalised(c->score, h->len + 1, b->penalty);
    if (ns > s->best.score) {
        s->best.score = ns;
        memcpy(s->best.tokens, h->tokens, h->len * sizeof *h->tokens);
        s->best.len = h->len;
        if (c->token != CLFORMER_EOS) s->best.tokens[s->best.len++] = c->token;
    }
    s->n_finished++;
}

/* One step of sentence i: its next K hypotheses, their parents and tokens. */
static void advance(beam_state *b, size_t i, bool last)
{
    const size_t K = b->K, V = b->V;
    sentence_beam *s = &b->sb[i];
    hypothesis *scratch = b->store + b->batch * K + i * K; /* the next generation */
    if (s->done) { /* finished sentences idle on <eos> */
        for (size_t k = 0; k < K; k++) {
            b->parents[i * K + k] = (int32_t)(i * K + k);
            b->next[i * K + k] = CLFORMER_EOS;
        }
        return;
    }
    size_t nc = 0;
    for (size_t k = 0; k < K; k++) {
        if (!isfinite(s->alive[k].score)) continue;
        const float *lp = b->logp + (i * K + k) * V;
        for (size_t v = 0; v < V; v++)
            heap_offer(b->cand, &nc, 2 * K, (candidate){s->alive[k].score + lp[v], k, (int32_t)v});
    }
    qsort(b->cand, nc, sizeof *b->cand, by_rank);
    size_t kept = 0;
    for (size_t c = 0; c < nc && kept < K; c++) {
        const hypothesis *h = &s->alive[b->cand[c].beam];
        if (b->cand[c].token == CLFORMER_EOS || last) {
            /* an <eos> ranked below the K best ends no hypothesis (fairseq's
             * and Hugging Face's rule): finishing it would count a weak
             * ending towards the K that end the sentence */
            if (c < K || last) finish(b, s, h, &b->cand[c]);
            continue;
        }
        hypothesis *n = &scratch[kept];
        memcpy(n->tokens, h->tokens, h->len * sizeof *h->tokens);
        n->len = h->len;
        n->tokens[n->len++] = b->cand[c].token;
        n->score = b->cand[c].score;
        b->parents[i * K + kept] = (int32_t)(i * K + b->cand[c].beam);
        b->next[i * K + kept] = b->cand[c].token;
        kept++;
    }
    for (size_t k = kept; k < K; k++) { /* fewer live candidates than beams */
        scratch[k].score = -INFINITY;
        scratch[k].len = 0;
        b->parents[i * K + k] = (int32_t)(i * K);
        b->next[i * K + k] = CLFORMER_EOS;
    }
    /* finished when K hypotheses ended, or no live one can beat the best */
    if (s->n_finished >= K || kept == 0 || last) {
        s->done = true;
        b->sentences_done++;
    }
    for (size_t k = 0; k < K; k++) { /* swap generations */
        hypothesis tmp = s->alive[k];
        s->alive[k] = scratch[k];
        scratch[k] = tmp;
    }
}

/* The next step's inputs: caches reordered by parent, the token table
 * rebuilt from the hypotheses (it is small), and the step tokens. */
static clformer_status reorder(cf_session *s, const beam_state *b, size_t t)
{
    struct cf_decoder *d = s->decoder;
    const size_t R = d->R, L = b->L, K = b->K;
    CF_TRY(cf_decoder_gather(s, b->parents, K, t + 1)); /* positions 0..t are written */
    int32_t *table = malloc(R * L * sizeof *table);
    if (!table) return cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory");
    for (size_t r = 0; r < R; r++) {
        const hypothesis *h = &b->sb[r / K].alive[r % K];
        table[r * L] = CLFORMER_SOS;
        for (size_t i = 1; i < L; i++)
            table[r * L + i] = i <= h->len ? h->tokens[i - 1] : CLFORMER_EOS;
    }
    clformer_status st = cf_upload(s->ctx, d->tokens.buf, d->tokens.off, table, R * L);
    free(table);
    CF_TRY(st);
    return cf_upload(s->ctx, d->step_tokens.buf, d->step_tokens.off, b->next, R);
}

clformer_status cf_beam_search_host(cf_session *s, size_t batch, size_t K, size_t L, float penalty,
                               clformer_translation *out)
{
    struct cf_decoder *d = s->decoder;
    const size_t R = batch * K, V = (size_t)s->model->cfg.tgt_vocab;
    beam_state b;
    CF_TRY(beam_init(&b, batch, K, L, V, penalty));
    clformer_status st = CLFORMER_OK;
    for (size_t t = 0; t < L && st == CLFORMER_OK; t++) {
        st = cf_decode_step(s, t, NULL);
        if (st == CLFORMER_OK) st = cf_log_softmax_rows(s->ctx, d->logits, d->logits, R, V);
        if (st == CLFORMER_OK) st = cf_download(s->ctx, d->logits.buf, d->logits.off, b.logp, R * V);
        for (size_t i = 0; i < batch && st == CLFORMER_OK; i++) advance(&b, i, t + 1 == L);
        if (st != CLFORMER_OK || t + 1 >= L || b.sentences_done == batch) break;
        st = reorder(s, &b, t);
    }
    for (size_t i = 0; i < batch && st == CLFORMER_OK; i++) {
        memcpy(out->tokens + i * L, b.sb[i].best.tokens, b.sb[i].best.len * sizeof(int32_t));
        out->lengths[i] = b.sb[i].best.len;
    }
    beam_free(&b);
    return st;
}
