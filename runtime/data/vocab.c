/*
 * Vocabulary: tokens in one character arena, looked up through an
 * open-addressing hash table (FNV-1a, linear probing) of ids.
 * The same table counts token frequencies while a vocabulary is built.
 */
#include "vocab.h"
#include "door.h"
#include "fileio.h"
#include "fnv1a.h"
#include "status.h"
#include "text.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

const char *const cf_special_tokens[CF_N_SPECIALS] = {"<pad>", "<sos>", "<eos>", "<unk>"};

struct clformer_vocab {
    char *chars;       /* every token, NUL-terminated, back to back */
    size_t chars_len, chars_cap;
    size_t *offset;    /* [cap] token id -> start in chars */
    uint32_t *length;  /* [cap] token id -> length in bytes */
    int32_t n, cap;
    int32_t *table;    /* [mask + 1] ids, -1 for an empty slot */
    size_t mask;
    const char **tokens; /* [n] into chars, once complete (cf_vocab_tokens) */
};

static cf_vocab *vocab_new(void)
{
    cf_vocab *v = calloc(1, sizeof *v);
    if (!v) return NULL;
    v->mask = 63;
    v->table = malloc((v->mask + 1) * sizeof *v->table);
    if (!v->table) {
        free(v);
        return NULL;
    }
    memset(v->table, 0xff, (v->mask + 1) * sizeof *v->table);
    return v;
}

clformer_status cf_vocab_build_joint(const char *const *src, const char *const *tgt, size_t n,
                                     int min_freq, int max_vocab, cf_vocab **out)
{
    *out = NULL;
    const char **both = malloc((n ? 2 * n : 1) * sizeof *both);
    if (!both) return cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory");
    if (n) {
        memcpy(both, src, n * sizeof *both);
        memcpy(both + n, tgt, n * sizeof *both);
    }
    clformer_status st = cf_vocab_build(both, 2 * n, min_freq, max_vocab, out);
    free(both);
    return st;
}

void cf_vocab_free(cf_vocab *v)
{
    if (!v) return;
    free(v->tokens);
    free(v->chars);
    free(v->offset);
    free(v->length);
    free(v->table);
    free(v);
}

/* The slot holding s[0..len), or the empty slot where it would go. */
static size_t vocab_slot(const cf_vocab *v, const char *s, size_t len)
{
    size_t i = (size_t)cf_fnv1a(CF_FNV1A_INIT, s, len) & v->mask;
    for (;;) {
        int32_t id = v->table[i];
        if (id < 0) return i;
        if (v->length[id] == len && memcmp(v->chars + v->offset[id], s, len) == 0) return i;
        i = (i + 1) & v->mask;
    }
}

static int32_t vocab_lookup(const cf_vocab *v, const char *s, size_t len)
{
    return v->table[vocab_slot(v, s, len)];
}

static bool grow_table(cf_vocab *v)
{
    size_t size = (v->mask + 1) * 2;
    int32_t *table = malloc(size * sizeof *table);
    if (!table) return false;
    memset(table, 0xff, size * sizeof *table);
    free(v->table);
    v->table = table;
    v->mask = size - 1;
    for (int32_t id = 0; id < v->n; id++)
        v->table[vocab_slot(v, v->chars + v->offset[id], v->length[id])] = id;
    return true;
}

/* Appends a token that is not yet present; returns its id or -1 (no memory). */
static int32_t vocab_append(cf_vocab *v, const char *s, size_t len)
{
    if (v->n == INT32_MAX || len > UINT32_MAX) return -1;
    if ((size_t)(v->n + 1) * 2 > v->mask + 1 && !grow_table(v)) return -1;
    if (v->n == v->cap) {
        int32_t cap = v->cap ? (v->cap > INT32_MAX / 2 ? INT32_MAX : v->cap * 2) : 64;
        size_t *offset = realloc(v->offset, (size_t)cap * sizeof *offset);
        if (!offset) return -1;
        v->offset = offset;
        uint32_t *length = realloc(v->length, (size_t)cap * sizeof *length);
        if (!length) return -1;
        v->length = length;
        v->cap = cap;
    }
    if (v->chars_len + len + 1 > v->chars_cap) {
        size_t cap = v->chars_cap ? v->chars_cap : 1024;
        while (v->chars_len + len + 1 > cap) cap *= 2;
        char *chars = realloc(v->chars, cap);
        if (!chars) return -1;
        v->chars = chars;
        v->chars_cap = cap;
    }
    int32_t id = v->n++;
    v->offset[id] = v->chars_len;
    v->length[id] = (uint32_t)len;
    memcpy(v->chars + v->chars_len, s, len);
    v->chars[v->chars_len + len] = '\0';
    v->chars_len += len + 1;
    v->table[vocab_slot(v, s, len)] = id;
    return id;
}

static clformer_status oom(void)
{
    return cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory building a vocabulary");
}

/* The vocabulary is complete (chars no longer moves): index its tokens. */
static bool finish(cf_vocab *v)
{
    v->tokens = malloc((v->n ? (size_t)v->n : 1) * sizeof *v->tokens);
    if (!v->tokens) return false;
    for (int32_t id = 0; id < v->n; id++) v->tokens[id] = v->chars + v->offset[id];
    return true;
}

const char *const *cf_vocab_tokens(const cf_vocab *v) { return v->tokens; }

static cf_vocab *vocab_with_specials(void)
{
    cf_vocab *v = vocab_new();
    if (!v) return NULL;
    for (int i = 0; i < CF_N_SPECIALS; i++) {
        if (vocab_append(v, cf_special_tokens[i], strlen(cf_special_tokens[i])) != i) {
            cf_vocab_free(v);
            return NULL;
        }
    }
    return v;
}

/* --- building -------------------------------------------------------------- */

typedef struct {
    size_t count;
    const char *s;
    uint32_t len;
} candidate;

/* Frequency descending, then bytes ascending (a prefix before its
 * extensions): a total order, so every qsort gives the same result. */
static int by_rank(const void *a, const void *b)
{
    const candidate *x = a, *y = b;
    if (x->count != y->count) return x->count > y->count ? -1 : 1;
    int c = memcmp(x->s, y->s, x->len < y->len ? x->len : y->len);
    if (c) return c;
    return x->len < y->len ? -1 : x->len > y->len ? 1 : 0;
}

clformer_status cf_vocab_build(const char *const *sentences, size_t n, int min_freq,
                               int max_vocab, cf_vocab **out)
{
    *out = NULL;
    if (min_freq < 1)
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                       "min_freq is %d; it must be at least 1 (1 keeps every token)", min_freq);
    if (max_vocab != 0 && max_vocab < CF_N_SPECIALS)
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                       "max_vocab is %d; it must be 0 (no limit) or at least %d (the special "
                       "tokens count)", max_vocab, CF_N_SPECIALS);

    /* Count. Specials are entered first so that their spellings in the text
     * are recognised and left out of the regular tokens. */
    cf_vocab *counted = vocab_with_specials();
    size_t *count = NULL, count_cap = 0;
    candidate *ranked = NULL;
    cf_vocab *v = NULL;
    if (!counted) goto no_memory;
    for (size_t s = 0; s < n; s++) {
        const char *line = sentences[s];
        size_t line_len = strlen(line), pos = 0, start, len;
        while (cf_next_token(line, line_len, &pos, &start, &len)) {
            int32_t id = vocab_lookup(counted, line + start, len);
            if (id < 0) {
                id = vocab_append(counted, line + start, len);
                if (id < 0) goto no_memory;
            }
            if ((size_t)id >= count_cap) {
                size_t cap = count_cap ? count_cap * 2 : 1024;
                size_t *grown = realloc(count, cap * sizeof *grown);
                if (!grown) goto no_memory;
                memset(grown + count_cap, 0, (cap - count_cap) * sizeof *grown);
                count = grown;
                count_cap = cap;
            }
            count[id]++;
        }
    }

    /* Rank the regular tokens that pass min_freq. */
    int32_t n_regular = 0;
    ranked = malloc((size_t)(counted->n > 0 ? counted->n : 1) * sizeof *ranked);
    if (!ranked) goto no_memory;
    for (int32_t id = CF_N_SPECIALS; id < counted->n; id++)
        if (count[id] >= (size_t)min_freq)
            ranked[n_regular++] = (candidate){count[id], counted->chars + counted->offset[id],
                                              counted->length[id]};
    qsort(ranked, (size_t)n_regular, sizeof *ranked, by_rank);
    if (max_vocab != 0 && n_regular > max_vocab - CF_N_SPECIALS)
        n_regular = max_vocab - CF_N_SPECIALS;

    v = vocab_with_specials();
    if (!v) goto no_memory;
    for (int32_t r = 0; r < n_regular; r++)
        if (vocab_append(v, ranked[r].s, ranked[r].len) < 0) goto no_memory;
    if (!finish(v)) goto no_memory;
    cf_vocab_free(counted);
    free(count);
    free(ranked);
    *out = v;
    return CLFORMER_OK;

no_memory:
    cf_vocab_free(counted);
    cf_vocab_free(v);
    free(count);
    free(ranked);
    return oom();
}

/* --- lookups ----------------------------------------------------------------- */

int32_t cf_vocab_size(const cf_vocab *v) { return v->n; }

int32_t cf_vocab_id(const cf_vocab *v, const char *s, size_t len)
{
    int32_t id = vocab_lookup(v, s, len);
    return id < 0 ? CF_UNK : id;
}

int32_t cf_vocab_find(const cf_vocab *v, const char *token)
{
    return vocab_lookup(v, token, strlen(token));
}

const char *cf_vocab_token(const cf_vocab *v, int32_t id)
{
    if (id < 0 || id >= v->n) return NULL;
    return v->chars + v->offset[id];
}

size_t cf_vocab_encode(const cf_vocab *v, const char *s, size_t len, bool specials,
                       int32_t *ids, size_t cap, size_t *n_unk)
{
    size_t count = 0, unk = 0, pos = 0, start, tok_len;
    if (specials) {
        if (count < cap) ids[count] = CF_SOS;
        count++;
    }
    while (cf_next_token(s, len, &pos, &start, &tok_len)) {
        int32_t id = vocab_lookup(v, s + start, tok_len);
        if (id < 0) {
            id = CF_UNK;
            unk++;
        }
        if (count < cap) ids[count] = id;
        count++;
    }
    if (specials) {
        if (count < cap) ids[count] = CF_EOS;
        count++;
    }
    if (n_unk) *n_unk = unk;
    return count;
}

clformer_status cf_vocab_decode(const cf_vocab *v, const int32_t *ids, size_t n, char **out)
{
    *out = NULL;
    size_t size = 1, end = n;
    for (size_t i = 0; i < n; i++) {
        if (ids[i] < 0 || ids[i] >= v->n)
            return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                           "cannot decode id %d at position %zu: the vocabulary has ids 0..%d",
                           ids[i], i, v->n - 1);
        if (ids[i] == CF_EOS) {
            end = i;
            break;
        }
        if (ids[i] != CF_PAD && ids[i] != CF_SOS) size += v->length[ids[i]] + 1;
    }
    char *text = malloc(size), *p = text;
    if (!text) return cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory decoding ids");
    for (size_t i = 0; i < end; i++) {
        if (ids[i] == CF_PAD || ids[i] == CF_SOS) continue;
        if (p != text) *p++ = ' ';
        memcpy(p, v->chars + v->offset[ids[i]], v->length[ids[i]]);
        p += v->length[ids[i]];
    }
    *p = '\0';
    *out = text;
    return CLFORMER_OK;
}

/* --- JSON ------------------------------------------------------------------- */

clformer_status cf_vocab_to_json(const cf_vocab *v, char **json)
{
    *json = NULL;
    json_t *array = json_array();
    if (!array) return oom();
    for (int32_t id = 0; id < v->n; id++) {
        json_t *tok = json_stringn(v->chars + v->offset[id], v->length[id]);
        if (!tok) { /* jansson checks UTF-8: only a vocabulary built from bad text fails */
            json_decref(array);
            return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT, "vocabulary token %d is not valid UTF-8",
                           id);
        }
        if (json_array_append_new(array, tok)) {
            json_decref(array);
            return oom();
        }
    }
    *json = json_dumps(array, JSON_COMPACT);
    json_decref(array);
    return *json ? CLFORMER_OK : oom();
}

static const char *json_kind(const json_t *j)
{
    switch (json_typeof(j)) {
    case JSON_OBJECT: return "an object";
    case JSON_ARRAY: return "an array";
    case JSON_STRING: return "a string";
    case JSON_INTEGER:
    case JSON_REAL: return "a number";
    case JSON_TRUE:
    case JSON_FALSE: return "a boolean";
    case JSON_NULL: return "null";
    }
    return "something else";
}

clformer_status cf_vocab_from_tokens(const char *const *tokens, size_t n, const char *origin,
                                     cf_vocab **out)
{
    *out = NULL;
    if (n < CF_N_SPECIALS)
        return cf_fail(CLFORMER_ERR_FORMAT, "%s: the vocabulary has %zu entries; it needs at least "
                       "the %d special tokens <pad>, <sos>, <eos>, <unk>", origin, n, CF_N_SPECIALS);
    if (n > INT32_MAX)
        return cf_fail(CLFORMER_ERR_FORMAT, "%s: the vocabulary has %zu entries; ids are int32",
                       origin, n);
    cf_vocab *v = vocab_new();
    if (!v) return oom();
    clformer_status st = CLFORMER_OK;
    for (size_t i = 0; i < n && st == CLFORMER_OK; i++) {
        const char *tok = tokens[i];
        size_t tok_len = tok ? strlen(tok) : 0;
        int32_t seen;
        if (!tok)
            st = cf_fail(CLFORMER_ERR_FORMAT, "%s: vocabulary entry %zu is not a token string",
                         origin, i);
        else if (i < CF_N_SPECIALS && strcmp(tok, cf_special_tokens[i]) != 0)
            st = cf_fail(CLFORMER_ERR_FORMAT, "%s: vocabulary entry %zu is \"%s\" but must be "
                         "\"%s\" (ids 0..3 are <pad>, <sos>, <eos>, <unk>)", origin, i, tok,
                         cf_special_tokens[i]);
        else if (tok_len == 0)
            st = cf_fail(CLFORMER_ERR_FORMAT, "%s: vocabulary entry %zu is an empty string",
                         origin, i);
        else if (!clformer_utf8_valid(tok, tok_len, NULL))
            st = cf_fail(CLFORMER_ERR_FORMAT, "%s: vocabulary entry %zu is not valid UTF-8 "
                         "(checkpoints store vocabularies as JSON text)", origin, i);
        else if (cf_has_whitespace(tok, tok_len))
            st = cf_fail(CLFORMER_ERR_FORMAT, "%s: vocabulary entry %zu \"%s\" contains "
                         "whitespace; tokens are whitespace-separated words", origin, i, tok);
        else if ((seen = vocab_lookup(v, tok, tok_len)) >= 0)
            st = cf_fail(CLFORMER_ERR_FORMAT, "%s: vocabulary entry %zu \"%s\" repeats entry %d",
                         origin, i, tok, seen);
        else if (vocab_append(v, tok, tok_len) < 0)
            st = oom();
    }
    if (st == CLFORMER_OK && !finish(v)) st = oom();
    if (st != CLFORMER_OK) {
        cf_vocab_free(v);
        return st;
    }
    *out = v;
    return CLFORMER_OK;
}

clformer_status cf_vocab_from_json(const char *json, size_t len, const char *origin,
                                   cf_vocab **out)
{
    *out = NULL;
    json_error_t jerr;
    json_t *root = json_loadb(json, len, JSON_DECODE_ANY, &jerr);
    if (!root)
        return cf_fail(CLFORMER_ERR_FORMAT, "%s: the vocabulary is not valid JSON: %s (line %d, "
                       "column %d)", origin, jerr.text, jerr.line, jerr.column);
    if (!json_is_array(root)) {
        clformer_status st = cf_fail(CLFORMER_ERR_FORMAT, "%s: a vocabulary is a JSON array of "
                                     "token strings in id order, but this is %s", origin,
                                     json_kind(root));
        json_decref(root);
        return st;
    }
    size_t n = json_array_size(root);
    const char **tokens = calloc(n ? n : 1, sizeof *tokens);
    clformer_status st = tokens ? CLFORMER_OK : oom();
    for (size_t i = 0; i < n && st == CLFORMER_OK; i++) {
        json_t *e = json_array_get(root, i);
        if (!json_is_string(e))
            st = cf_fail(CLFORMER_ERR_FORMAT, "%s: vocabulary entry %zu is %s; every entry must "
                         "be a token string", origin, i, json_kind(e));
        else if (strlen(json_string_value(e)) != json_string_length(e))
            st = cf_fail(CLFORMER_ERR_FORMAT, "%s: vocabulary entry %zu contains a NUL character",
                         origin, i);
        else
            tokens[i] = json_string_value(e);
    }
    if (st == CLFORMER_OK) st = cf_vocab_from_tokens(tokens, n, origin, out);
    free(tokens);
    json_decref(root);
    return st;
}

clformer_status cf_vocab_save(const cf_vocab *v, const char *path)
{
    char *json;
    CF_TRY(cf_vocab_to_json(v, &json));
    clformer_status st = cf_write_file_atomic(path, json, strlen(json));
    free(json);
    if (st != CLFORMER_OK) return cf_fail_prefix(st, "saving the vocabulary: ");
    return CLFORMER_OK;
}

clformer_status cf_vocab_load(const char *path, cf_vocab **out)
{
    *out = NULL;
    char *data;
    size_t size;
    CF_TRY(cf_read_file(path, &data, &size));
    clformer_status st = cf_vocab_from_json(data, size, path, out);
    free(data);
    return st;
}
