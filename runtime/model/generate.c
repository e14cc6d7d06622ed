/*
 * Sampling from a decoder-only language model: the prompt is fed one
 * position at a time through the decoding step (decode.c, key/value caches),
 * then each new token is chosen on the host from that step's logits and fed
 * back. The choice is greedy (temperature 0 or top-k 1) or a draw: logits /
 * temperature, the top-k, softmax in double, the top-p nucleus, and one
 * uniform number per draw from a counter (seed, draw index), not a stream,
 * so the n-th draw never depends on how many came before.
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

/* Uniform in [0, 1) for draw n of seed: 53 bits of a double mix of both. */
static double uniform_at(uint64_t seed, uint64_t n)
{
    const uint64_t z = cf_mix64(seed ^ cf_mix64(n + 0x9E3779B97F4A7C15ull));
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
                      uint64_t draw, cf_sample_candidate *c)
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
    const double u = uniform_at(o->seed, draw) * sum;
    double acc = 0.0;
    for (size_t i = 0; i < n; i++) {
        acc += c[i].p;
        if (u < acc) return c[i].id;
    }
    return c[n - 1].id;
}

/* Feeds ids[0..n) at positions 0..n-1 of fresh caches; the logits of the
 * last are left in the decoder's logits. */
static clformer_status prefill(cf_session *s, const int32_t *ids, size_t n, size_t L)
{
    CF_TRY(cf_decode_start_lm(s, 1, L));
    for (size_t t = 0; t < n; t++) {
        CF_TRY(cf_decode_set_tokens(s, &ids[t], t));
        CF_TRY(cf_decode_step(s, t, NULL));
    }
    return CLFORMER_OK;
}

clformer_status clformer_session_generate(clformer_session *s, const int32_t *prompt, size_t n,
                                          const clformer_sample_options *o,
                                          clformer_token_callback on_token, void *user,
                                          int32_t *out, size_t *count)
{
    const clformer_config *c = &s->model->cfg;
    if (count) *count = 0;
    if (!clformer_config_decoder_only(c))
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                       "generate needs a decoder-only language model (n_enc_layers 0); this "
                       "model has an encoder: translate with it instead");
    if (!prompt || n == 0)
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                       "the prompt is empty: give at least one token to continue");
    if (!o || o->max_tokens < 0 || !(o->temperature >= 0.0f) || o->top_k < 0 ||
        !(o->top_p > 0.0f && o->top_p <= 1.0f))
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                       "bad sampling options: max_tokens >= 0, temperature >= 0, top_k >= 0 "
                       "and top_p in (0, 1] are needed");
    for (size_t i = 0; i < n; i++)
        if (prompt[i] < 0 || prompt[i] >= c->tgt_vocab)
            return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                           "prompt token %zu has id %d, outside the vocabulary of %d tokens", i,
                           (int)prompt[i], c->tgt_vocab);
    const size_t L = (size_t)c->max_len, V = (size_t)c->tgt_vocab, total = n + (size_t)o->max_tokens;
    /* every token so far, for restarting the caches when they fill up */
    int32_t *ids = malloc(total * sizeof *ids);
    float *logits = malloc(V * sizeof *logits);
    cf_sample_candidate *scratch = malloc(V * sizeof *scratch);
    clformer_status st = ids && logits && scratch
                             ? CLFORMER_OK
                             : cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory");
    if (st == CLFORMER_OK) memcpy(ids, prompt, n * sizeof *ids);
    size_t len = n, start = n > L ? n - L : 0; /* the window in the caches: ids[start, len) */
    if (st == CLFORMER_OK) st = prefill(s, ids + start, len - start, L);
    size_t made = 0;
    for (; st == CLFORMER_OK && made < (size_t)o->max_tokens; made++) {
        const struct cf_decoder *d = s->decoder;
        st = cf_download(s->ctx, d->logits.buf, d->logits.off, logits, V);
        if (st != CLFORMER_OK) break;
        const int32_t id = cf_sample_token(logits, V, o, made, scratch);
        ids[len++] = id;
        if (out) out[made] = id;
        if (on_token && !on_token(user, id)) {
            made++;
            break;
        }
        if (made + 1 == (size_t)o->max_tokens) continue;
        if (len - start >= L) { /* full: restart from the last L / 2 tokens */
            start = len - (L / 2 > 0 ? L / 2 : 1);
            st = prefill(s, ids + start, len - start, L);
            continue;
        }
        st = cf_decode_set_tokens(s, &id, len - 1 - start);
        if (st == CLFORMER_OK) st = cf_decode_step(s, len - 1 - start, NULL);
    }
    if (count) *count = made;
    free(ids);
    free(logits);
    free(scratch);
    return st;
}
