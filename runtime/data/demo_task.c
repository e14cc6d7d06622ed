/*
 * The demo task's generator: sample a sentence structure, render it in both
 * languages, and keep it if its source is new (an open-addressing set of
 * source strings keeps the test set disjoint from training).
 */
#include "demo_task.h"
#include "fnv1a.h"
#include "splitmix.h"
#include "status.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { N_DET = 4, N_NOUN = 10, N_ADJ = 8, N_VERB_T = 4, N_VERB = 6, N_ADV = 4, MAX_ADJ = 3 };

/* determiners: definite singular, definite plural, indefinite singular, indefinite plural */
static const char *const det_src[N_DET] = {"ka", "kai", "mo", "moi"};
static const char *const det_tgt[N_DET] = {"el", "els", "un", "uns"};
static bool det_plural(int d) { return d == 1 || d == 3; }

static const char *const noun_src[N_NOUN] = {"dabu", "fenir", "golo", "hasik", "jumo",
                                             "lerat", "nupi", "sorem", "tavi", "wuzel"};
static const char *const noun_tgt[N_NOUN] = {"toram", "bisel", "kuvan", "melor", "paxit",
                                             "renud", "sifan", "volum", "yarek", "zonib"};
/* the target gender of each noun: 0 takes adjectives in -a, 1 in -o */
static const int noun_gender[N_NOUN] = {0, 1, 0, 1, 1, 0, 0, 1, 0, 1};

static const char *const adj_src[N_ADJ] = {"bri", "kelo", "minu", "parsa",
                                           "ruvo", "silti", "tepo", "zana"};
static const char *const adj_tgt[N_ADJ] = {"ner", "fal", "sud", "gim", "lak", "pom", "rix", "tul"};

/* verbs 0..3 take an object, 4..5 do not */
static const char *const verb_src[N_VERB] = {"lota", "veni", "sura", "gamba", "pelu", "dorni"};
static const char *const verb_tgt[N_VERB] = {"kasu", "dremi", "fola", "wento", "hiru", "belsa"};

static const char *const adv_src[N_ADV] = {"yesto", "kuma", "rafi", "olen"};
static const char *const adv_tgt[N_ADV] = {"vexa", "lomu", "tirsi", "panu"};

typedef struct {
    int det, noun, n_adj, adj[MAX_ADJ];
} noun_phrase;

typedef struct {
    noun_phrase subj, obj;
    int verb; /* < N_VERB_T: transitive, obj is used */
    int adv;  /* -1: none */
} sentence;

/* Adjective counts 0..3 with weights 45/33/16/6 percent. */
static int sample_n_adj(uint64_t *rng)
{
    uint64_t r = cf_rng_below(rng, 100);
    return r < 45 ? 0 : r < 78 ? 1 : r < 94 ? 2 : 3;
}

static noun_phrase sample_np(uint64_t *rng)
{
    noun_phrase np;
    np.det = (int)cf_rng_below(rng, N_DET);
    np.n_adj = sample_n_adj(rng);
    for (int k = 0; k < np.n_adj; k++) np.adj[k] = (int)cf_rng_below(rng, N_ADJ);
    np.noun = (int)cf_rng_below(rng, N_NOUN);
    return np;
}

static sentence sample_sentence(uint64_t *rng)
{
    sentence s;
    s.subj = sample_np(rng);
    s.verb = cf_rng_below(rng, 10) < 7 ? (int)cf_rng_below(rng, N_VERB_T)
                                       : N_VERB_T + (int)cf_rng_below(rng, N_VERB - N_VERB_T);
    if (s.verb < N_VERB_T) s.obj = sample_np(rng);
    s.adv = cf_rng_below(rng, 100) < 35 ? (int)cf_rng_below(rng, N_ADV) : -1;
    return s;
}

/* A sentence being written: words separated by single spaces. */
typedef struct {
    char *start, *end;
} writer;

/* Appends a word (the buffers hold 12 words of at most 7 bytes and more). */
static void put(writer *w, const char *word, const char *suffix)
{
    w->end += sprintf(w->end, "%s%s%s", w->end == w->start ? "" : " ", word, suffix);
}

static void render_src_np(writer *w, const noun_phrase *np)
{
    put(w, det_src[np->det], "");
    for (int k = 0; k < np->n_adj; k++) put(w, adj_src[np->adj[k]], "");
    put(w, noun_src[np->noun], "");
}

static void render_tgt_np(writer *w, const noun_phrase *np)
{
    put(w, det_tgt[np->det], "");
    put(w, noun_tgt[np->noun], det_plural(np->det) ? "i" : "");
    for (int k = 0; k < np->n_adj; k++)
        put(w, adj_tgt[np->adj[k]], noun_gender[np->noun] ? "o" : "a");
}

/* The source and its translation into src/tgt (each >= 128 bytes). */
static void render(const sentence *s, char *src, char *tgt)
{
    writer w = {src, src};
    *src = '\0';
    render_src_np(&w, &s->subj);
    put(&w, verb_src[s->verb], "");
    if (s->verb < N_VERB_T) render_src_np(&w, &s->obj);
    if (s->adv >= 0) put(&w, adv_src[s->adv], "");

    w = (writer){tgt, tgt};
    *tgt = '\0';
    render_tgt_np(&w, &s->subj);
    if (s->verb < N_VERB_T) render_tgt_np(&w, &s->obj);
    if (s->adv >= 0) put(&w, adv_tgt[s->adv], "");
    put(&w, verb_tgt[s->verb], det_plural(s->subj.det) ? "n" : "");
}

/* --- a set of source strings ------------------------------------------------- */

typedef struct {
    char **items; /* borrowed strings */
    size_t *slot; /* index + 1 into items; 0 = empty */
    size_t mask;
} string_set;

/* Adds items[i] unless an equal string is present; returns whether it was added. */
static bool set_add(string_set *set, size_t i)
{
    size_t k = (size_t)cf_fnv1a(CF_FNV1A_INIT, set->items[i], strlen(set->items[i])) & set->mask;
    while (set->slot[k]) {
        if (strcmp(set->items[set->slot[k] - 1], set->items[i]) == 0) return false;
        k = (k + 1) & set->mask;
    }
    set->slot[k] = i + 1;
    return true;
}

/* --- generation ---------------------------------------------------------------- */

static void free_split(cf_demo_split *s)
{
    for (size_t i = 0; i < s->n; i++) {
        free(s->src[i]);
        free(s->tgt[i]);
    }
    free(s->src);
    free(s->tgt);
    memset(s, 0, sizeof *s);
}

void cf_demo_free(cf_demo_data *data)
{
    free_split(&data->train);
    free_split(&data->test);
}

clformer_status cf_demo_generate(uint64_t seed, size_t n_train, size_t n_test, cf_demo_data *out)
{
    memset(out, 0, sizeof *out);
    if (n_test < 1 || n_train > 1000000 || n_test > 1000000 || n_train + n_test > 1000000)
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT, "the demo task makes 1 to 1000000 pairs "
                       "with at least one test pair; asked for %zu training and %zu test pairs",
                       n_train, n_test);
    size_t total = n_test + n_train, cap = 1, made = 0;
    while (cap < 2 * total) cap *= 2;
    /* every pair in flat arrays (test pairs first, so each training source is
     * checked against them); the test split keeps the flat arrays */
    char **src = calloc(total, sizeof *src), **tgt = calloc(total, sizeof *tgt);
    char **train_src = malloc((n_train ? n_train : 1) * sizeof *train_src);
    char **train_tgt = malloc((n_train ? n_train : 1) * sizeof *train_tgt);
    string_set set = {src, calloc(cap, sizeof(size_t)), cap - 1};
    clformer_status st = CLFORMER_OK;
    if (!src || !tgt || !train_src || !train_tgt || !set.slot) goto oom;

    uint64_t rng = cf_mix64(seed ^ 0x6A09E667F3BCC909ull);
    char s_buf[128], t_buf[128];
    for (size_t attempts = 0; made < total; attempts++) {
        if (attempts > 50 * total + 1000) { /* unreachable: ~1e10 sentences exist */
            st = cf_fail(CLFORMER_ERR_INVALID_ARGUMENT, "the demo task could not find %zu "
                         "distinct sentences", total);
            goto done;
        }
        sentence s = sample_sentence(&rng);
        render(&s, s_buf, t_buf);
        src[made] = strdup(s_buf);
        tgt[made] = strdup(t_buf);
        if (!src[made] || !tgt[made]) {
            made++; /* free this one too */
            goto oom;
        }
        if (set_add(&set, made)) {
            made++;
        } else {
            free(src[made]);
            free(tgt[made]);
            src[made] = tgt[made] = NULL;
        }
    }
    memcpy(train_src, src + n_test, n_train * sizeof *src);
    memcpy(train_tgt, tgt + n_test, n_train * sizeof *tgt);
    out->test = (cf_demo_split){n_test, src, tgt};
    out->train = (cf_demo_split){n_train, train_src, train_tgt};
    free(set.slot);
    return CLFORMER_OK;

oom:
    st = cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory generating the demo task");
done:
    for (size_t i = 0; i < made; i++) {
        free(src[i]);
        free(tgt[i]);
    }
    free(src);
    free(tgt);
    free(train_src);
    free(train_tgt);
    free(set.slot);
    return st;
}

const char *cf_demo_description(void)
{
    return "The demo task: translate a made-up language into another.\n"
           "  source: DET ADJ* NOUN VERB [DET ADJ* NOUN] [ADV]      (32 words)\n"
           "  target: DET NOUN ADJ* [DET NOUN ADJ*] [ADV] VERB      (56 words)\n"
           "  adjectives follow their noun and agree with its gender (-a/-o), nouns take\n"
           "  the plural -i after a plural determiner, and the verb goes to the end and\n"
           "  agrees with the number of the subject (-n).\n"
           "  e.g. kai bri minu golo lota mo dabu yesto\n"
           "    -> els kuvani nera suda un toram vexa kasun\n";
}
