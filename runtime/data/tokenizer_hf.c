/*
 * The tokenizer of a Hugging Face language-model directory
 * (tokenizer_hf.h): tokenizer.json's byte-level BPE over tokenizer_bpe.c,
 * tokenizer.model over tokenizer_spm.cc's native ids, and what both add
 * around them (literal tokens cut out of the text first, BOS or a template).
 */
#include "tokenizer_hf.h"
#include "fileio.h"
#include "status.h"
#include "tokenizer_bpe.h"
#include "tokenizer_spm.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define LLAMA3_REGEX                                                                               \
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| "                     \
    "?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"

typedef struct {
    char *content;
    size_t len;
    int32_t id;
    bool special;
} literal;

struct cf_hf_tokenizer {
    cf_bpe *bpe; /* one of bpe and spm */
    cf_spm *spm;
    literal *lit; /* cut out of the text before the model sees it */
    size_t n_lit;
    int32_t *prefix, *suffix; /* added around the ids when add_special */
    size_t n_prefix, n_suffix;
    int32_t size;
    int32_t bos, eos; /* tokenizer_config.json's (or the SentencePiece model's); -1: none */
};

const char *const cf_hf_tok_file_names[CF_HF_TOK_FILES] = {
    "tokenizer.json", "tokenizer.model", "tokenizer_config.json", "special_tokens_map.json"};

void cf_hf_tokenizer_free(cf_hf_tokenizer *t)
{
    if (!t) return;
    cf_bpe_free(t->bpe);
    cf_spm_free(t->spm);
    for (size_t i = 0; i < t->n_lit; i++) free(t->lit[i].content);
    free(t->lit);
    free(t->prefix);
    free(t->suffix);
    free(t);
}

static clformer_status oom(void)
{
    return cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory loading a tokenizer");
}

static clformer_status add_literal(cf_hf_tokenizer *t, const char *content, int32_t id,
                                   bool special)
{
    literal *grown = realloc(t->lit, (t->n_lit + 1) * sizeof *grown);
    if (!grown) return oom();
    t->lit = grown;
    char *copy = strdup(content);
    if (!copy) return oom();
    t->lit[t->n_lit++] = (literal){copy, strlen(content), id, special};
    if (id >= t->size) t->size = id + 1;
    return CLFORMER_OK;
}

/* tokenizer_config.json's bos_token or eos_token ("<s>", or {"content": "<s>", ...}) as an
 * id; -1 when it names none or a token the tokenizer lacks. */
static int32_t config_token(const cf_hf_tokenizer *t, json_t *config, const char *key)
{
    json_t *v = json_object_get(config, key);
    const char *token = json_is_object(v) ? json_string_value(json_object_get(v, "content"))
                                          : json_string_value(v);
    return token ? cf_hf_tokenizer_token_id(t, token) : -1;
}

/* BOS and EOS: tokenizer_config.json's, else the template's or the SentencePiece model's. */
static void read_bos_eos(cf_hf_tokenizer *t, const char *config, size_t size)
{
    json_t *root = config ? json_loadb(config, size, 0, NULL) : NULL;
    t->bos = config_token(t, root, "bos_token");
    t->eos = config_token(t, root, "eos_token");
    json_decref(root);
    if (t->bos < 0 && t->n_prefix) t->bos = t->prefix[0];
    if (t->eos < 0 && t->spm) {
        int32_t unk, bos, eos, pad;
        cf_spm_native_specials(t->spm, &unk, &bos, &eos, &pad);
        t->eos = eos;
    }
}

/* ---- tokenizer.json ---- */

static const char *type_of(json_t *o)
{
    const char *s = json_string_value(json_object_get(o, "type"));
    return s ? s : "(no type)";
}

static bool is_true(json_t *o, const char *key) { return json_is_true(json_object_get(o, key)); }

/* ByteLevel as the step that turns bytes into the vocabulary's characters:
 * add_prefix_space false; use_regex as `regex` wants. */
static bool byte_level(json_t *p, bool regex)
{
    json_t *use = json_object_get(p, "use_regex");
    const bool uses = use ? json_is_true(use) : true; /* tokenizers' default */
    return p && !strcmp(type_of(p), "ByteLevel") && !is_true(p, "add_prefix_space") &&
           uses == regex;
}

static clformer_status read_pre_tokenizer(cf_hf_tokenizer *t, json_t *p, const char *origin)
{
    json_t *seq = json_object_get(p, "pretokenizers");
    json_t *a = json_array_get(seq, 0), *b = json_array_get(seq, 1);
    if (byte_level(p, true)) {
        cf_bpe_set_split(t->bpe, CF_BPE_SPLIT_GPT2);
        return CLFORMER_OK;
    }
    if (p && !strcmp(type_of(p), "Sequence") && json_array_size(seq) == 2) {
        if (!strcmp(type_of(a), "Digits") && is_true(a, "individual_digits") &&
            byte_level(b, true)) {
            cf_bpe_set_split(t->bpe, CF_BPE_SPLIT_DIGITS_GPT2);
            return CLFORMER_OK;
        }
        const char *regex = json_string_value(json_object_get(json_object_get(a, "pattern"),
                                                              "Regex"));
        const char *behavior = json_string_value(json_object_get(a, "behavior"));
        if (!strcmp(type_of(a), "Split") && regex && !strcmp(regex, LLAMA3_REGEX) && behavior &&
            !strcmp(behavior, "Isolated") && !is_true(a, "invert") && byte_level(b, false)) {
            cf_bpe_set_split(t->bpe, CF_BPE_SPLIT_LLAMA3);
            return CLFORMER_OK;
        }
    }
    char *text = p ? json_dumps(p, JSON_COMPACT) : NULL;
    clformer_status st = cf_fail(
        CLFORMER_ERR_FORMAT,
        "%s: pre_tokenizer %.200s is not one clformer reads: ByteLevel (GPT-2's regex), "
        "Sequence[Digits(individual_digits), ByteLevel] (SmolLM) or Sequence[Split(Llama 3's "
        "regex, Isolated), ByteLevel(use_regex false)], each without add_prefix_space",
        origin, text ? text : "null");
    free(text);
    return st;
}

/* TemplateProcessing's "single": special tokens before and after $A. */
static clformer_status read_template(cf_hf_tokenizer *t, json_t *p, const char *origin)
{
    json_t *single = json_object_get(p, "single"), *specials = json_object_get(p, "special_tokens");
    bool after = false;
    size_t i;
    json_t *item;
    json_array_foreach(single, i, item)
    {
        json_t *seq = json_object_get(item, "Sequence"), *sp = json_object_get(item, "SpecialToken");
        if (seq) {
            if (after)
                return cf_fail(CLFORMER_ERR_FORMAT, "%s: post_processor's single template names "
                               "the sequence twice", origin);
            after = true;
            continue;
        }
        const char *name = json_string_value(json_object_get(sp, "id"));
        json_t *ids = json_object_get(json_object_get(specials, name ? name : ""), "ids");
        if (!name || !json_array_size(ids))
            return cf_fail(CLFORMER_ERR_FORMAT, "%s: post_processor's single template holds an "
                           "item that is neither $A nor a special token with ids", origin);
        size_t k;
        json_t *id;
        json_array_foreach(ids, k, id)
        {
            int32_t **list = after ? &t->suffix : &t->prefix;
            size_t *n = after ? &t->n_suffix : &t->n_prefix;
            int32_t *grown = realloc(*list, (*n + 1) * sizeof *grown);
            if (!grown) return oom();
            *list = grown;
            grown[(*n)++] = (int32_t)json_integer_value(id);
        }
    }
    return CLFORMER_OK;
}

static clformer_status read_post_processor(cf_hf_tokenizer *t, json_t *p, const char *origin)
{
    if (!p || json_is_null(p) || !strcmp(type_of(p), "ByteLevel")) return CLFORMER_OK;
    if (!strcmp(type_of(p), "TemplateProcessing")) return read_template(t, p, origin);
    if (!strcmp(type_of(p), "Sequence")) {
        size_t i;
        json_t *q;
        json_array_foreach(json_object_get(p, "processors"), i, q)
            CF_TRY(read_post_processor(t, q, origin));
        return CLFORMER_OK;
    }
    return cf_fail(CLFORMER_ERR_FORMAT, "%s: post_processor %s is not one clformer reads "
                   "(TemplateProcessing, ByteLevel, a Sequence of them, or none)", origin,
                   type_of(p));
}

/* model.merges as merges.txt's lines: "a b" strings, or [a, b] pairs. */
static clformer_status merges_text(json_t *merges, const char *origin, char **out, size_t *len)
{
    size_t cap = 1, n = 0, i;
    json_t *m;
    json_array_foreach(merges, i, m)
    {
        if (json_is_string(m))
            cap += json_string_length(m) + 1;
        else if (json_array_size(m) == 2 && json_is_string(json_array_get(m, 0)) &&
                 json_is_string(json_array_get(m, 1)))
            cap += json_string_length(json_array_get(m, 0)) +
                   json_string_length(json_array_get(m, 1)) + 2;
        else
            return cf_fail(CLFORMER_ERR_FORMAT, "%s: model.merges[%zu] is neither \"a b\" nor "
                           "[\"a\", \"b\"]", origin, i);
    }
    char *text = malloc(cap);
    if (!text) return oom();
    json_array_foreach(merges, i, m)
    {
        if (json_is_string(m)) {
            n += (size_t)sprintf(text + n, "%s\n", json_string_value(m));
        } else {
            n += (size_t)sprintf(text + n, "%s %s\n", json_string_value(json_array_get(m, 0)),
                                 json_string_value(json_array_get(m, 1)));
        }
    }
    *out = text;
    *len = n;
    return CLFORMER_OK;
}

static clformer_status read_model(cf_hf_tokenizer *t, json_t *model, const char *origin)
{
    json_t *vocab = json_object_get(model, "vocab"), *merges = json_object_get(model, "merges");
    const char *prefix = json_string_value(json_object_get(model, "continuing_subword_prefix")),
               *suffix = json_string_value(json_object_get(model, "end_of_word_suffix"));
    if (strcmp(type_of(model), "BPE") || !json_is_object(vocab) || !json_is_array(merges))
        return cf_fail(CLFORMER_ERR_FORMAT, "%s: model %s is not a BPE model with vocab and "
                       "merges; clformer reads byte-level BPE tokenizer.json files (for "
                       "SentencePiece models, the directory's tokenizer.model)", origin,
                       type_of(model));
    if ((prefix && *prefix) || (suffix && *suffix) || is_true(model, "byte_fallback"))
        return cf_fail(CLFORMER_ERR_FORMAT, "%s: a BPE model with a subword prefix, a word "
                       "suffix or byte_fallback is not byte-level; clformer does not read it",
                       origin);
    char *vocab_text = json_dumps(vocab, JSON_COMPACT), *merge_text = NULL;
    size_t merge_len = 0;
    clformer_status st = vocab_text ? merges_text(merges, origin, &merge_text, &merge_len) : oom();
    if (st == CLFORMER_OK)
        st = cf_bpe_load(vocab_text, strlen(vocab_text), origin, merge_text, merge_len, origin,
                         &t->bpe);
    free(vocab_text);
    free(merge_text);
    if (st == CLFORMER_OK) t->size = cf_bpe_vocab_size(t->bpe);
    return st;
}

static clformer_status read_added(cf_hf_tokenizer *t, json_t *added, const char *origin)
{
    size_t i;
    json_t *a;
    json_array_foreach(added, i, a)
    {
        const char *content = json_string_value(json_object_get(a, "content"));
        json_t *id = json_object_get(a, "id");
        if (!content || !*content || !json_is_integer(id) || json_integer_value(id) < 0 ||
            json_integer_value(id) >= INT32_MAX)
            return cf_fail(CLFORMER_ERR_FORMAT, "%s: added_tokens[%zu] needs a content and an "
                           "id >= 0", origin, i);
        if (is_true(a, "lstrip") || is_true(a, "rstrip") || is_true(a, "single_word"))
            return cf_fail(CLFORMER_ERR_FORMAT, "%s: added token \"%s\" has lstrip, rstrip or "
                           "single_word set, which clformer does not read", origin, content);
        const int32_t known = cf_bpe_token_id(t->bpe, content);
        if (known >= 0 && known != (int32_t)json_integer_value(id))
            return cf_fail(CLFORMER_ERR_FORMAT, "%s: added token \"%s\" has id %lld but the "
                           "vocabulary gives it %d", origin, content,
                           (long long)json_integer_value(id), known);
        CF_TRY(add_literal(t, content, (int32_t)json_integer_value(id), is_true(a, "special")));
    }
    return CLFORMER_OK;
}

clformer_status cf_hf_tokenizer_from_json(const char *json, size_t len, const char *origin,
                                          cf_hf_tokenizer **out)
{
    *out = NULL;
    json_error_t err;
    json_t *root = json_loadb(json, len, 0, &err);
    if (!root)
        return cf_fail(CLFORMER_ERR_FORMAT, "%s: line %d column %d: %s: not a tokenizer.json",
                       origin, err.line, err.column, err.text);
    cf_hf_tokenizer *t = calloc(1, sizeof *t);
    clformer_status st = t ? CLFORMER_OK : oom();
    json_t *normalizer = json_object_get(root, "normalizer");
    if (st == CLFORMER_OK && normalizer && !json_is_null(normalizer))
        st = cf_fail(CLFORMER_ERR_FORMAT, "%s: normalizer %s: clformer reads tokenizer.json "
                     "files without a normalizer (byte-level BPE as SmolLM and Llama 3 ship)",
                     origin, type_of(normalizer));
    if (st == CLFORMER_OK) st = read_model(t, json_object_get(root, "model"), origin);
    if (st == CLFORMER_OK) st = read_pre_tokenizer(t, json_object_get(root, "pre_tokenizer"), origin);
    if (st == CLFORMER_OK) st = read_added(t, json_object_get(root, "added_tokens"), origin);
    if (st == CLFORMER_OK)
        st = read_post_processor(t, json_object_get(root, "post_processor"), origin);
    for (size_t i = 0; st == CLFORMER_OK && i < t->n_prefix + t->n_suffix; i++) {
        const int32_t id = i < t->n_prefix ? t->prefix[i] : t->suffix[i - t->n_prefix];
        if (id < 0 || id >= t->size)
            st = cf_fail(CLFORMER_ERR_FORMAT, "%s: post_processor adds id %d, outside the "
                         "vocabulary of %d", origin, id, t->size);
    }
    json_decref(root);
    if (st != CLFORMER_OK) {
        cf_hf_tokenizer_free(t);
        return st;
    }
    read_bos_eos(t, NULL, 0);
    *out = t;
    return CLFORMER_OK;
}

/* ---- tokenizer.model ---- */

clformer_status cf_hf_tokenizer_from_spm(const void *model, size_t size, const char *origin,
                                         cf_hf_tokenizer **out)
{
    *out = NULL;
    cf_hf_tokenizer *t = calloc(1, sizeof *t);
    if (!t) return oom();
    clformer_status st = cf_spm_load(model, size, origin, &t->spm);
    int32_t special[4] = {-1, -1, -1, -1}; /* unk, bos, eos, pad */
    if (st == CLFORMER_OK) {
        t->size = cf_spm_native_size(t->spm);
        cf_spm_native_specials(t->spm, &special[0], &special[1], &special[2], &special[3]);
    }
    /* LlamaTokenizer's added tokens: unk, bos, eos (matched in the text) */
    for (int k = 0; k < 3 && st == CLFORMER_OK; k++)
        if (special[k] >= 0) st = add_literal(t, cf_spm_native_piece(t->spm, special[k]), special[k], true);
    if (st == CLFORMER_OK && special[1] >= 0) {
        t->prefix = malloc(sizeof *t->prefix);
        if (!t->prefix) st = oom();
        else t->prefix[0] = special[1], t->n_prefix = 1;
    }
    if (st != CLFORMER_OK) {
        cf_hf_tokenizer_free(t);
        return st;
    }
    read_bos_eos(t, NULL, 0);
    *out = t;
    return CLFORMER_OK;
}

clformer_status cf_hf_tokenizer_from_files(const char *const data[CF_HF_TOK_FILES],
                                           const size_t size[CF_HF_TOK_FILES], const char *dir,
                                           cf_hf_tokenizer **out)
{
    *out = NULL;
    char origin[4200];
    clformer_status st = CLFORMER_OK;
    if (data[CF_HF_TOK_JSON]) {
        snprintf(origin, sizeof origin, "%s/tokenizer.json", dir);
        st = cf_hf_tokenizer_from_json(data[CF_HF_TOK_JSON], size[CF_HF_TOK_JSON], origin, out);
        /* one clformer cannot read (Llama 2's): the SentencePiece model beside it */
        if (st == CLFORMER_ERR_FORMAT && data[CF_HF_TOK_MODEL]) st = CLFORMER_OK, *out = NULL;
    }
    if (st == CLFORMER_OK && !*out && data[CF_HF_TOK_MODEL]) {
        snprintf(origin, sizeof origin, "%s/tokenizer.model", dir);
        st = cf_hf_tokenizer_from_spm(data[CF_HF_TOK_MODEL], size[CF_HF_TOK_MODEL], origin, out);
    }
    if (st == CLFORMER_OK && !*out)
        st = cf_fail(CLFORMER_ERR_INVALID_ARGUMENT, "%s holds neither tokenizer.json nor "
                     "tokenizer.model: give a Hugging Face model directory with its tokenizer",
                     dir);
    if (st == CLFORMER_OK) read_bos_eos(*out, data[CF_HF_TOK_CONFIG], size[CF_HF_TOK_CONFIG]);
    return st;
}

clformer_status cf_hf_tokenizer_load_dir(const char *dir, cf_hf_tokenizer **out)
{
    *out = NULL;
    char *data[CF_HF_TOK_FILES] = {NULL};
    size_t size[CF_HF_TOK_FILES] = {0};
    clformer_status st = CLFORMER_OK;
    for (int i = 0; i < CF_HF_TOK_FILES && st == CLFORMER_OK; i++) {
        char path[4200];
        snprintf(path, sizeof path, "%s/%s", dir, cf_hf_tok_file_names[i]);
        if (access(path, R_OK) == 0) st = cf_read_file(path, &data[i], &size[i]);
    }
    if (st == CLFORMER_OK)
        st = cf_hf_tokenizer_from_files((const char *const *)data, size, dir, out);
    for (int i = 0; i < CF_HF_TOK_FILES; i++) free(data[i]);
    return st;
}

/* ---- encoding and decoding ---- */

int32_t cf_hf_tokenizer_size(const cf_hf_tokenizer *t) { return t->size; }

bool cf_hf_tokenizer_is_bpe(const cf_hf_tokenizer *t) { return t->bpe != NULL; }

int32_t cf_hf_tokenizer_bos(const cf_hf_tokenizer *t) { return t->bos; }

int32_t cf_hf_tokenizer_eos(const cf_hf_tokenizer *t) { return t->eos; }

const int32_t *cf_hf_tokenizer_specials(const cf_hf_tokenizer *t, bool after, size_t *n)
{
    *n = after ? t->n_suffix : t->n_prefix;
    return after ? t->suffix : t->prefix;
}

int32_t cf_hf_tokenizer_token_id(const cf_hf_tokenizer *t, const char *token)
{
    for (size_t i = 0; i < t->n_lit; i++)
        if (!strcmp(t->lit[i].content, token)) return t->lit[i].id;
    if (t->bpe) return cf_bpe_token_id(t->bpe, token);
    for (int32_t id = 0; id < t->size; id++)
        if (!strcmp(cf_spm_native_piece(t->spm, id), token)) return id;
    return -1;
}

/* The longest literal starting at text[i], or NULL. */
static const literal *literal_at(const cf_hf_tokenizer *t, const char *text, size_t len, size_t i)
{
    const literal *best = NULL;
    for (size_t k = 0; k < t->n_lit; k++) {
        const literal *l = &t->lit[k];
        if (l->len <= len - i && text[i] == l->content[0] &&
            !memcmp(text + i, l->content, l->len) && (!best || l->len > best->len))
            best = l;
    }
    return best;
}

typedef struct {
    int32_t *ids;
    size_t n, cap;
} id_list;

static clformer_status push(id_list *l, const int32_t *ids, size_t n)
{
    if (n == 0) return CLFORMER_OK; /* ids may be NULL then: memcpy must not see it */
    if (l->n + n > l->cap) {
        size_t cap = (l->n + n) * 2 + 16;
        int32_t *grown = realloc(l->ids, cap * sizeof *grown);
        if (!grown) return cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory encoding");
        l->ids = grown;
        l->cap = cap;
    }
    memcpy(l->ids + l->n, ids, n * sizeof *ids);
    l->n += n;
    return CLFORMER_OK;
}

static clformer_status encode_part(const cf_hf_tokenizer *t, const char *s, size_t len,
                                   id_list *out)
{
    if (len == 0) return CLFORMER_OK;
    int32_t *ids = NULL;
    size_t n = 0;
    CF_TRY(t->bpe ? cf_bpe_encode(t->bpe, s, len, &ids, &n)
                  : cf_spm_native_encode(t->spm, s, len, &ids, &n));
    clformer_status st = push(out, ids, n);
    free(ids);
    return st;
}

clformer_status cf_hf_tokenizer_encode(const cf_hf_tokenizer *t, const char *text, size_t len,
                                       bool add_special, int32_t **ids, size_t *n)
{
    *ids = NULL;
    *n = 0;
    id_list out = {0};
    clformer_status st = add_special ? push(&out, t->prefix, t->n_prefix) : CLFORMER_OK;
    size_t start = 0;
    for (size_t i = 0; st == CLFORMER_OK && i < len;) {
        const literal *l = literal_at(t, text, len, i);
        if (!l) {
            i++;
            continue;
        }
        st = encode_part(t, text + start, i - start, &out);
        if (st == CLFORMER_OK) st = push(&out, &l->id, 1);
        i += l->len;
        start = i;
    }
    if (st == CLFORMER_OK) st = encode_part(t, text + start, len - start, &out);
    if (st == CLFORMER_OK && add_special) st = push(&out, t->suffix, t->n_suffix);
    if (st == CLFORMER_OK && !out.ids && !(out.ids = malloc(sizeof *out.ids)))
        st = cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory encoding");
    if (st != CLFORMER_OK) {
        free(out.ids);
        return st;
    }
    *ids = out.ids;
    *n = out.n;
    return CLFORMER_OK;
}

static const literal *literal_of(const cf_hf_tokenizer *t, int32_t id)
{
    for (size_t k = 0; k < t->n_lit; k++)
        if (t->lit[k].id == id) return &t->lit[k];
    return NULL;
}

clformer_status cf_hf_tokenizer_decode(const cf_hf_tokenizer *t, const int32_t *ids, size_t n,
                                       bool skip_special, char **text, size_t *len)
{
    *text = NULL;
    *len = 0;
    for (size_t i = 0; i < n; i++)
        if (ids[i] < 0 || ids[i] >= t->size)
            return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT, "id %d (position %zu) is not in the "
                           "tokenizer's vocabulary of %d ids", ids[i], i, t->size);
    if (t->spm && !skip_special) return cf_spm_native_decode(t->spm, ids, n, text, len);
    if (t->spm) { /* <unk>, <s> and </s> (literals) left out */
        int32_t *kept = malloc((n ? n : 1) * sizeof *kept);
        if (!kept) return cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory decoding ids");
        size_t k = 0;
        for (size_t i = 0; i < n; i++)
            if (!literal_of(t, ids[i])) kept[k++] = ids[i];
        clformer_status st = cf_spm_native_decode(t->spm, kept, k, text, len);
        free(kept);
        return st;
    }
    size_t total = 1;
    for (size_t i = 0; i < n; i++) {
        const literal *l = literal_of(t, ids[i]);
        size_t bl = 0;
        if (l) total += l->len;
        else if (cf_bpe_token_bytes(t->bpe, ids[i], &bl)) total += bl;
    }
    char *out = malloc(total);
    if (!out) return cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory decoding ids");
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        const literal *l = literal_of(t, ids[i]);
        size_t bl = 0;
        const char *bytes = l ? l->content : cf_bpe_token_bytes(t->bpe, ids[i], &bl);
        if (l) bl = l->len;
        if (!bytes || (l && l->special && skip_special)) continue;
        memcpy(out + k, bytes, bl);
        k += bl;
    }
    out[k] = '\0';
    *text = out;
    *len = k;
    return CLFORMER_OK;
}
