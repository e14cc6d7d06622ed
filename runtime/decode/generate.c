/*
 * Sampling from a decoder-only language model, a batch of prompts at once.
 * Each row (a prompt, or one of several samples of it) keeps a window of
 * its tokens in the key/value caches: the window but its last token is
 * prefilled in one forward pass (decode.c), then every step feeds each
 * row's last token at that row's own position (rows of different prompt
 * lengths sit at different positions: learned positions stay those a row
 * alone would see; a key mask hides the positions a row has not reached)
 * and chooses each row's next token on the host from its logits. The choice
 * is greedy (temperature 0 or top-k 1) or a draw: logits / temperature, the
 * top-k, softmax in double, the top-p nucleus, and one uniform number per
 * draw from a counter (seed, stream, draw index), not a stream of state, so
 * a row's n-th draw depends on neither the draws before it nor its
 * neighbours. Stream k is a prompt's sample k: a prompt's first sample draws
 * what a single-prompt generate with that seed draws, wherever it sits in a
 * batch, and every computation of a row uses that row's numbers alone, so a
 * row of a batch makes the tokens it makes alone.
 */
#include "decode.h"
#include "splitmix.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void clformer_sample_options_default(clformer_sample_options *o)
{
    o->max_tokens = 200;
    o->temperature = 1.0f;
    o->top_k = 0;
    o->top_p = 1.0f;
    o->seed = 1;
}

/* Uniform in [0, 1) for draw n of a stream of seed: 53 bits of a double mix.
 * Stream 0 uses the seed itself: the draws generate made before streams. */
static double uniform_at(uint64_t seed, uint64_t stream, uint64_t n)
{
    const uint64_t key = stream ? cf_mix64(seed ^ cf_mix64(stream + 0xD1B54A32D192ED03ull)) : seed;
    const uint64_t z = cf_mix64(key ^ cf_mix64(n + 0x9E3779B97F4A7C15ull));
    return (double)(z >> 11) / 9007199254740992.0;
}
/* Most likely first; equal logits by id, so the order is total. */
static int by_logit(const void *a, const void *b)
{
    const cf_sample_candidate *x = a, *y = b;
    if (x->p != y->p) return x->p > y->p ? -1 : 1;
    return (x->id > y->id) - (x->id < y->id);
}

static int32_t argmax(const float *logits, size_t V)
{
    size_t best = 0;
    for (size_t v = 1; v < V; v++)
        if (logits[v] > logits[best]) best = v;
    return (int32_t)best;
}

int32_t cf_sample_token(const float *logits, size_t V, const clformer_sample_options *o,
                        uint64_t stream, uint64_t draw, cf_sample_candidate *c)
{
    if (o->temperature <= 0.0f || o->top_k == 1) return argmax(logits, V);
    for (size_t v = 0; v < V; v++) c[v] = (cf_sample_candidate){(double)logits[v] / o->temperature, (int32_t)v};
    qsort(c, V, sizeof *c, by_logit);
    size_t n = o->top_k > 0 && (size_t)o->top_k < V ? (size_t)o->top_k : V;
    const double top = c[0].p;
    double sum = 0.0;
    for (size_t i = 0; i < n; i++) sum += (c[i].p = exp(c[i].p - top));
    if (o->top_p < 1.0f) { /* the fewest candidates whose probabilities reach top_p */
        double acc = 0.0;
        size_t keep = 0;
        while (keep < n && acc < (double)o->top_p * sum) acc += c[keep++].p;
        n = keep ? keep : 1;
        sum = acc > 0.0 ? acc : c[0].p;
    }
    const double u = uniform_at(o->seed, stream, draw) * sum;
    double acc = 0.0;
    for (size_t i = 0; i < n; i++) {
        acc += c[i].p;
        if (u < acc) return c[i].id;
    }
    return c[n - 1].id;
}

/* The rows of one generation: row r's tokens so far are ids[r*cap ..
 * r*cap + len[r]), of which ids[start[r], len[r]) are in its caches' window
 * (the last one is fed by the next step, at position len - 1 - start). */
typedef struct {
    size_t R, L, V, cap;
    int32_t *ids;
    size_t *len, *start, *pos;
    int32_t *step, *scratch_ids;        /* R, R x L */
    float *logits;                      /* R x V */
    cf_sample_candidate *candidates;    /* V */
    bool *todo;                         /* R: rows whose window needs a prefill */
} gen_rows;

static void gen_free(gen_rows *g)
{
    free(g->ids);
    free(g->len);
    free(g->start);
    free(g->pos);
    free(g->step);
    free(g->scratch_ids);
    free(g->logits);
    free(g->candidates);
    free(g->todo);
}

/* Positions one prefill pass takes at most (when it holds more than one
 * row): the pass lays out training's activations, logits (rows x T x V)
 * included, so long prompts of a large vocabulary go a few rows at a time. */
enum { PREFILL_POSITIONS = 2048 };

/* Prefills the rows marked todo: each row's window but its last token, in
 * one pass per run of neighbouring rows with windows of one length. */
static clformer_status prefill_marked(cf_session *s, gen_rows *g)
{
    for (size_t r0 = 0, r1; r0 < g->R; r0 = r1) {
        const size_t T = g->len[r0] - 1 - g->start[r0];
        for (r1 = r0 + 1; r1 < g->R && g->todo[r1] == g->todo[r0] &&
                          g->len[r1] - 1 - g->start[r1] == T &&
                          (r1 - r0 + 1) * T <= PREFILL_POSITIONS;)
            r1++;
        if (!g->todo[r0] || T == 0) continue;
        for (size_t r = r0; r < r1; r++)
            memcpy(g->scratch_ids + (r - r0) * T, g->ids + r * g->cap + g->start[r],
                   T * sizeof *g->ids);
        CF_TRY(cf_decode_prefill(s, r0, r1 - r0, g->scratch_ids, T));
    }
    return CLFORMER_OK;
}

/* Feeds every row's last token at its position: logits in g->logits. */
static clformer_status step_rows(cf_session *s, gen_rows *g)
{
    const struct cf_decoder *d = s->decoder;
    for (size_t r = 0; r < g->R; r++) {
        g->pos[r] = g->len[r] - 1 - g->start[r];
        g->step[r] = g->ids[r * g->cap + g->len[r] - 1];
    }
    CF_TRY(cf_decode_step_rows(s, g->step, g->pos));
    return cf_download(s->ctx, d->logits.buf, d->logits.off, g->logits, g->R * g->V);
}

static clformer_status check_options(const cf_model *m, const clformer_sample_options *o)
{
    CF_TRY(cf_family_check_task(m->family, CLFORMER_TASK_LM, "generating text"));
    if (!o || o->max_tokens < 0 || !(o->temperature >= 0.0f) || o->top_k < 0 ||
        !(o->top_p > 0.0f && o->top_p <= 1.0f))
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                       "bad sampling options: max_tokens >= 0, temperature >= 0, top_k >= 0 "
                       "and top_p in (0, 1] are needed");
    return CLFORMER_OK;
}

static clformer_status check_prompt(const clformer_config *c, const int32_t *prompt, size_t n,
                                    size_t index)
{
    if (!prompt || n == 0)
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                       "prompt %zu is empty: give at least one token to continue", index);
    for (size_t i = 0; i < n; i++)
        if (prompt[i] < 0 || prompt[i] >= c->tgt_vocab)
            return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                           "prompt %zu: token %zu has id %d, outside the vocabulary of %d tokens",
                           index, i, (int)prompt[i], c->tgt_vocab);
    return CLFORMER_OK;
}

static clformer_status session_generate_batch_passes(clformer_session *s,
                                                     const int32_t *const *prompts,
                                                     const size_t *lengths, size_t n_prompts,
                                                     size_t samples,
                                                     const clformer_sample_options *o,
                                                     clformer_row_token_callback on_token, void *user,
                                                     int32_t *out, size_t *counts)
{
    const clformer_config *c = &s->model->cfg;
    CF_TRY(check_options(s->model, o));
    if (n_prompts == 0 || samples == 0 || !prompts || !lengths)
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                       "no rows to generate: give at least one prompt and one sample of each");
    for (size_t p = 0; p < n_prompts; p++) CF_TRY(check_prompt(c, prompts[p], lengths[p], p));
    gen_rows g = {0};
    g.R = n_prompts * samples;
    g.L = (size_t)c->max_len;
    g.V = (size_t)c->tgt_vocab;
    size_t longest = 0;
    for (size_t p = 0; p < n_prompts; p++)
        if (lengths[p] > longest) longest = lengths[p];
    g.cap = longest + (size_t)o->max_tokens;
    if (counts) memset(counts, 0, g.R * sizeof *counts);
    g.ids = malloc(g.R * g.cap * sizeof *g.ids);
    g.len = malloc(g.R * sizeof *g.len);
    g.start = malloc(g.R * sizeof *g.start);
    g.pos = malloc(g.R * sizeof *g.pos);
    g.step = malloc(g.R * sizeof *g.step);
    g.scratch_ids = malloc(g.R * g.L * sizeof *g.scratch_ids);
    g.logits = malloc(g.R * g.V * sizeof *g.logits);
    g.candidates = malloc(g.V * sizeof *g.candidates);
    g.todo = malloc(g.R * sizeof *g.todo);
    clformer_status st = g.ids && g.len && g.start && g.pos && g.step &&
                                 g.scratch_ids && g.logits && g.candidates && g.todo
                             ? CLFORMER_OK
                             : cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory");
    for (size_t r = 0; r < g.R && st == CLFORMER_OK; r++) {
        const size_t n = lengths[r / samples];
        memcpy(g.ids + r * g.cap, prompts[r / samples], n * sizeof *g.ids);
        g.len[r] = n;
        g.start[r] = n > g.L ? n - g.L : 0; /* the prompt's last L tokens */
        g.todo[r] = true;
    }
    if (st == CLFORMER_OK) st = cf_decode_start_lm(s, g.R, g.L);
    if (st == CLFORMER_OK) st = prefill_marked(s, &g);
    bool stop = false;
    for (size_t made = 0; st == CLFORMER_OK && !stop && made < (size_t)o->max_tokens; made++) {
        st = step_rows(s, &g);
        for (size_t r = 0; r < g.R && st == CLFORMER_OK && !stop; r++) {
            const int32_t id = cf_sample_token(g.logits + r * g.V, g.V, o, r % samples, made,
                                               g.candidates);
            g.ids[r * g.cap + g.len[r]++] = id;
            if (out) out[r * (size_t)o->max_tokens + made] = id;
            if (counts) counts[r]++;
            if (on_token && !on_token(r, id, user)) stop = true;
        }
        if (st != CLFORMER_OK || stop || made + 1 == (size_t)o->max_tokens) break;
        /* a full window (L tokens, as before batches) restarts from its last L / 2 */
        bool any = false;
        for (size_t r = 0; r < g.R; r++) {
            g.todo[r] = g.len[r] - g.start[r] >= g.L;
            if (g.todo[r]) g.start[r] = g.len[r] - (g.L / 2 > 0 ? g.L / 2 : 1);
            any = any || g.todo[r];
        }
        if (any) st = prefill_marked(s, &g);
    }
    gen_free(&g);
    return st;
}

typedef struct {
    clformer_token_callback on_token;
    void *user;
} one_row;

static bool one_row_token(size_t row, int32_t token, void *user)
{
    (void)row;
    const one_row *w = user;
    return w->on_token(w->user, token);
}

clformer_status clformer_session_generate(clformer_session *s, const int32_t *prompt, size_t n,
                                          const clformer_sample_options *o,
                                          clformer_token_callback on_token, void *user,
                                          int32_t *out, size_t *count)
{
    if (count) *count = 0;
    CF_TRY(check_options(s->model, o));
    if (!prompt || n == 0)
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                       "the prompt is empty: give at least one token to continue");
    one_row w = {on_token, user};
    size_t made = 0;
    const clformer_status st = clformer_session_generate_batch(
        s, &prompt, &n, 1, 1, o, on_token ? one_row_token : NULL, &w, out, &made);
    if (count) *count = made;
    return st;
}

clformer_status clformer_session_generate_batch(clformer_session *s, const int32_t *const *prompts,
                                                const size_t *lengths, size_t n_prompts,
                                                size_t samples, const clformer_sample_options *o,
                                                clformer_row_token_callback on_token, void *user,
                                                int32_t *out, size_t *counts)
{
    clformer_precision saved;
    CF_TRY(cf_session_pass_begin(s, &saved));
    return cf_session_pass_end(s, saved,
                               session_generate_batch_passes(s, prompts, lengths, n_prompts,
                                                             samples, o, on_token, user, out,
                                                             counts));
}
